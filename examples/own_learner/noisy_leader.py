"""A private lazy follow-the-leader for prediction with expert advice: the second worked example
of docs/extending.md, a full-information learner written on the protocol's two mixins
(:class:`~dponline.protocol.RoundDiscipline` and :class:`~dponline.protocol.NoiseHandle`)
rather than on a base class of the library.

**The algorithm.** N experts, T rounds, blocks of k rounds. In the first block the learner
plays the uniform distribution. After rounds k, 2k, ... before the last round (m = (T - 1) // k
times) it releases the noisy leader

    i_j = argmin_i ( L_i + Z_{j,i} ),   Z_{j,i} ~ Laplace(2 m / epsilon) independent,

L the exact cumulative loss vector so far, and plays the vertex e_{i_j} for the next block.

**The guarantee (ours, proved here; not a paper's).** Neighbouring loss sequences differ in
one round's loss vector, every loss vector in [0, 1]^N, so every cumulative vector moves by at
most 1 in each coordinate.

(a) One release is (epsilon / m)-DP: report noisy min with Laplace(2 / epsilon') noise and l_inf
sensitivity 1 is epsilon'-DP. Fix i and the other coordinates' noise. The release is i iff
Z_i < M - L_i, M = min_{j != i} (L_j + Z_j). On the neighbour M' >= M - 1 and L'_i <= L_i + 1,
so the threshold drops by at most 2; the log of Laplace(b)'s CDF is (1/b)-Lipschitz, so with
b = 2 m / epsilon the probability of i falls by at most the factor e^(-epsilon/m); integrate over
the other coordinates' noise, and exchange the two sequences.

(b) The m releases draw independent noise: by basic composition (which holds adaptively) the m
releases together are epsilon-DP, with delta = 0.

(c) Every decision is a function of the releases (the first block's of nothing; block j + 1
plays e_{i_j}): post-processing. Ties go to the lowest index, still a function of the noisy
vector. So the sequence of decisions is event-level epsilon-DP. With m = 0 (T <= k) nothing that
depends on the losses is released.

Losses outside [0, 1]^N are refused, or clipped into it with ``clip=True``; either way every
vector the learner adds lies in [0, 1]^N, so the proof holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_generators,
    checked_int_array,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.noise import LaplaceNoise
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    LossVectorFeedback,
    NoiseHandle,
    RoundDiscipline,
    checked_budget,
    checked_config,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import generator_state, replica_generators


class NoisyMinCalibrator:
    """Laplace(2 m / epsilon) on each coordinate of m report-noisy-min releases of cumulative
    loss vectors in [0, 1]^N: each release (epsilon / m)-DP, basic composition over the m
    (the module docstring). No paper fixes a formula: ``paper`` is ``tight``."""

    def __init__(self, releases: int) -> None:
        self.releases = releases

    def tight(self, budget: PrivacyBudget) -> Calibration:
        m = self.releases
        how = (
            f"report noisy min every k rounds: {m} releases of argmin_i (L_i + Lap(2 m / eps)), "
            "L a cumulative loss vector in [0, 1]^N per round (l_inf sensitivity 1), each "
            "(eps / m)-DP, basic composition over the m; decisions are post-processing (ours: "
            "the docstring of examples/own_learner/noisy_leader.py)"
        )
        guarantee = budget.prove(budget.epsilon, 0.0, how)
        scale = 2.0 * m / budget.epsilon if m > 0 else 1.0  # m = 0: nothing is ever drawn
        return Calibration(LaplaceNoise(scale), guarantee, "tight", "report noisy min")

    paper = tight


class NoisyLeader(NoiseHandle, RoundDiscipline):
    """Lazy follow-the-leader by report noisy min every ``block`` rounds (module docstring).

    Parameters
    ----------
    dim, horizon:
        N experts and T rounds.
    budget:
        A :class:`~dponline.privacy.budget.PrivacyBudget`, or ``None`` for the same blocks
        without noise (lazy follow-the-leader, ties to the lowest index).
    block:
        k, the rounds between two releases (default ceil(T^(2/3))).
    replicas, rng, clip:
        Independent copies; the seed of their generators (one per replica); clip losses into
        [0, 1] instead of refusing them.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR

    def __init__(
        self,
        dim: int,
        horizon: int,
        *,
        budget: Any,
        block: int | None = None,
        replicas: int = 1,
        rng: Any = None,
        clip: bool = False,
    ) -> None:
        self.dim = checked_count("dim", dim)
        self._start_rounds(horizon)  # the round counter t, the horizon, round T+1 refused
        self.replicas = checked_count("replicas", replicas)
        if block is None:
            block = math.ceil(self.horizon ** (2 / 3))
        self.block = checked_count("block", block)
        self.releases = (self.horizon - 1) // self.block  # m
        self.clip = bool(clip)
        self.bounds = Box(0.0, 1.0, dim=self.dim)  # the inputs the guarantee covers
        budget = checked_budget(budget)
        if budget is None:
            self.privacy, self.scale = None, 0.0
        else:
            calibration = calibrate(NoisyMinCalibrator(self.releases), budget)
            self.privacy, self.scale = calibration.guarantee, float(calibration.noise.scale)
        self._generators = replica_generators(rng, self.replicas)
        #: the exact cumulative losses (replicas, N): they reach a decision only through noise
        self.cumulative = np.zeros((self.replicas, self.dim))
        #: each replica's released leader, -1 before the first release (uniform play)
        self.leader = np.full(self.replicas, -1, dtype=np.int64)

    def act(self) -> np.ndarray:
        """(replicas, N) points of the simplex: uniform in the first block, then the vertex of
        the released leader."""
        self._acted = True
        out = np.zeros((self.replicas, self.dim))
        first = self.leader < 0
        out[first] = 1.0 / self.dim
        rows = np.flatnonzero(~first)
        out[rows, self.leader[rows]] = 1.0
        return out

    def observe(self, feedback: Feedback) -> None:
        if not isinstance(feedback, LossVectorFeedback):
            raise TypeError(
                f"{type(self).__name__} observes LossVectorFeedback, got {type(feedback).__name__}"
            )
        self._check_round()  # after act(), once per round, never past the horizon
        loss = checked_real_array("loss", feedback.loss, (self.dim,), (self.replicas, self.dim))
        loss = self.bounds.check(loss, clip=self.clip, what="loss")  # refused or clipped
        self.cumulative = self.cumulative + loss  # a new array: a refusal above changed nothing
        self._end_round()
        if self.t % self.block == 0 and self.t < self.horizon:
            self._release()

    def _release(self) -> None:
        """Report noisy min of the cumulative losses, each replica from its own generator."""
        noisy = self.cumulative.copy()
        if self.scale > 0:
            b = self.scale * self.noise_multiplier  # the audits scale the noise through this
            for r, generator in enumerate(self._generators):
                noisy[r] += generator.laplace(0.0, b, size=self.dim)
        self.leader = np.argmin(noisy, axis=1).astype(np.int64)

    def _scale_noise(self, factor: float) -> None:
        """Nothing to rescale: every draw is multiplied by ``noise_multiplier``."""

    # --- the state: everything to resume, checked whole before anything changes -------------

    def _config(self) -> dict[str, Any]:
        return {
            "learner": type(self).__name__,
            "dim": self.dim,
            "horizon": self.horizon,
            "replicas": self.replicas,
            "block": self.block,
            "scale": self.scale,
            "noise_multiplier": self.noise_multiplier,
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "acted": self._acted,
            "noise_multiplier": self.noise_multiplier,
            "generators": [generator_state(g) for g in self._generators],
            "cumulative": self.cumulative.copy(),
            "leader": self.leader.copy(),
        }

    def prepare_load(self, state: Any) -> Callable[[], None]:
        who = type(self).__name__
        checked_config(
            saved_field(state, "config"), self._config(), who, "dimension, horizon, block or noise"
        )
        t, acted = self._checked_rounds(state)
        multiplier = self._saved_multiplier(state)
        r, n = self.replicas, self.dim
        generators = checked_generators("saved generators", saved_field(state, "generators"), r)
        cumulative = np.array(
            checked_real_array("saved cumulative", saved_field(state, "cumulative"), (r, n))
        )
        if np.any(cumulative < 0.0) or np.any(cumulative > t):
            raise ArgumentError(f"saved cumulative losses must lie in [0, t = {t}]")
        leader = checked_int_array("saved leader", saved_field(state, "leader"), (r,), -1, n)
        released = t >= self.block and self.block < self.horizon  # m = 0: never
        if np.any((leader < 0) == released):
            raise ArgumentError(
                f"saved leader must be -1 before the first release (after round {self.block}, "
                f"if it is before round {self.horizon}) and an expert after it; t = {t}"
            )

        def install() -> None:
            self._set_rounds(t, acted)
            self.noise_multiplier = multiplier
            self._generators = generators
            self.cumulative, self.leader = cumulative, leader

        return install


def _build(env: Any, *, budget: Any, **options: Any) -> NoisyLeader:
    """The registry's factory: N experts and T from the environment."""
    return NoisyLeader(env.dim, env.horizon, budget=budget, **options)


def weight_on_expert_0(outputs: np.ndarray) -> np.ndarray:
    """The audit's score: the weight the last round puts on expert 0 (outputs (n, T, N))."""
    return outputs[:, -1, 0]


_OPTIONS = {"block": "k, the rounds between two releases (default ceil(T^(2/3)))"}

_ENTRY = register_learner(
    LearnerEntry(
        "dp-noisy-leader",
        _build,
        paper="lazy follow-the-leader by report noisy min every k rounds (docs/extending.md's "
        "second example)",
        setting="experts (full information)",
        guarantee="event-level epsilon-DP over loss sequences differing in one round (losses in "
        "[0, 1]^N): m = (T - 1) // k releases with Laplace(2 m / epsilon), l_inf sensitivity 1, "
        "basic composition; the plays are post-processing (ours: this module's docstring)",
        calibrations=("tight",),
        private=True,
        feedback_kind=FeedbackKind.LOSS_VECTOR,
        action_space="simplex",
        test_cases=(
            LearnerTestCase(
                "stochastic",
                environment_options={"n_experts": 6},
                learner_options={"block": 2},
                # two experts, one release after round 5, played in round 6: expert 0 loses
                # 1/4 in rounds 1-4, and round 5's losses are (0, 1) or (1, 0), so the
                # cumulative losses are (1, 1) or (2, 0): the two coordinates move in opposite
                # directions, as far as the l_inf bound allows, from a tie (where a tenth of
                # the noise still picks expert 0 half the time on one input, almost never on
                # the other)
                audit=AuditCase(
                    horizon=6,
                    values=(0.0, 1.0),
                    rest=0.25,
                    changed_round=4,
                    coordinates="opposite",
                    environment_options={"n_experts": 2},
                    learner_options={"block": 5},
                    statistic=weight_on_expert_0,
                ),
            ),
        ),
        options=_OPTIONS,
        default_delta=0.0,
    )
)

register_learner(
    non_private_entry(
        _ENTRY,
        "noisy-leader",
        paper="lazy follow-the-leader every k rounds without noise (dp-noisy-leader's "
        "non-private counterpart)",
        test_cases=(
            LearnerTestCase(
                "stochastic", environment_options={"n_experts": 6}, learner_options={"block": 2}
            ),
        ),
        options=_OPTIONS,
    )
)
