"""Asi, Raman & Talwar (2025): any bandit algorithm made private by batching and Laplace noise on
the batch's loss (the generic conversion of "Faster Rates for Private Adversarial Bandits").

**The conversion.** Split the T rounds into batches of tau rounds (the last batch holds the
m = T - tau floor((T - 1) / tau) rounds left, m <= tau). At the start of each batch the base
algorithm B acts once; its action is played in every round of the batch; at the batch's end B
receives

    v_b = (the sum of the losses observed in batch b) / tau + Z_b,    Z_b ~ Laplace(b_noise),

and learns from it as from one round of its own. B therefore plays n = ceil(T / tau) rounds.
The base is any :class:`~dponline.bandits.private_reduction.BanditAlgorithm` (its ``act()``
and ``learn(values)``): robust EXP3 (:class:`BatchedEXP3`, :mod:`dponline.bandits.exp3`),
HTINF, the paper's own base (:class:`BatchedHTINF`, :mod:`dponline.bandits.htinf`), EXP2 over
the library's finite action sets (:class:`BatchedEXP2`), or EXP3 over experts whose advice
picks the arm played (:class:`~dponline.bandits.exp4.BatchedEXP4`).

**Privacy** (the paper's Theorem 1, privacy part; the derivation, written for this code).
Neighbouring loss sequences differ in one round s, which lies in exactly one batch b(s). Given
the arms played in that batch, the batch's sum divided by tau moves by at most ``width`` / tau
(``width``: the width of the interval of one observed loss, 1 for losses in [0, 1]), so v_b(s)
with Laplace(b_noise) noise is (width / (tau b_noise))-DP (the Laplace mechanism); no other
batch value reads round s. Every action is a function of the earlier batch values and of the
learner's own randomness (post-processing), so the whole sequence of actions is
(width / (tau b_noise))-DP: an adaptive composition in which a single mechanism reads the
differing round, parallel composition over the batches. The calibrations take
b_noise = width / (epsilon tau), exactly epsilon-DP, event-level over loss sequences that differ
in one round, for every tau.

*The last, partial batch* (m < tau rounds) is divided by tau as well, not by m: its value still
moves by at most width / tau, so the same noise keeps it epsilon-DP (dividing by m would need
tau / m times more noise). The base sees (m / tau) times the batch's average loss, still in
[0, 1], so its analysis holds for that round too, and the regret identity below is exact.
Within the horizon no action follows the last batch; ``act()`` after round T is
post-processing of all T rounds' values.

**Regret** (the paper's Theorem 1, utility part, in the form this code meets exactly). For an
oblivious sequence, the learner's regret against arm j over the T rounds equals tau times B's
regret over its n rounds on the loss sequence lbar_b(i) = (sum of l_t(i) over batch b) / tau,
which is fixed in advance and lies in [0, 1]; B sees it through values corrupted by
Laplace(b_noise). With robust EXP3 as B (second moment sigma^2 = 1 + 2 b_noise^2, our bound,
:func:`~dponline.bandits.exp3.robust_exp3_regret_bound`):

    R(T) <= tau * 2 sqrt(n K sigma^2 h(c) log K),   n = ceil(T / tau),

which at tau = ceil(1 / epsilon) (the paper's Corollary 2 choice: b_noise <= 1, sigma^2 <= 3)
is O(sqrt(K T log K / epsilon)); the paper's HTINF base drops the log K.

**Sources.** The paper's abstract (its rates: O(sqrt(K T) / sqrt(epsilon)) for adversarial
bandits, and the three rates for expert advice) was read in the paper's own text; the
conversion's steps, Theorem 1, Corollary 2's tau = ceil(1 / epsilon) and its HTINF base come
from a secondary account of the paper. The privacy derivation and the regret bound above do not
depend on them: both are proven here.

**Calibrations.** Both draw b_noise = width / (epsilon tau) (the exact sensitivity; nothing is
looser to tighten). ``paper``: tau = ceil(1 / epsilon) (Corollary 2), capped at T. ``tight``:
the tau in 1..min(T, ceil(16 / epsilon) + 16) that minimises the proven regret bound of the whole
run (the base family's bound times tau, at the step sizes the run will use: the user's eta (and
gamma) where given; the least such tau on ties). For robust EXP3 at epsilon = 1 that is tau = 1,
the paper's; EXP2's bound, with its log(NT) factors, prefers longer batches (tau = 27 for N = 10,
T = 1e5). Where the run's step sizes leave no tau with a proven bound (an eta and gamma given to
EXP2 that violate its proof's condition), or the base has no proven bound (HTINF), ``tight``
takes the paper's tau and its derivation says so instead of citing a bound. A ``batch`` option
fixes tau for both.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.exp2 import EXP2, exp2_proof_parameters, exp2_proven_regret_bound
from dponline.bandits.exp3 import (
    DEFAULT_THRESHOLD,
    EXP3,
    exp3_parameters,
    laplace_second_moment,
    robust_exp3_parameters,
    robust_exp3_regret_bound,
)
from dponline.bandits.htinf import HTINF, SKIP_CONSTANT
from dponline.bandits.private_reduction import (
    BanditAlgorithm,
    saved_learned_rounds,
    snapped,
    value_range,
)
from dponline.privacy.arguments import (
    ArgumentError,
    checked_int_array,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import Box, check_finite
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.privacy.noise import LaplaceNoise
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    NoiseHandle,
    RoundDiscipline,
    checked_bandit_loss,
    checked_budget,
    checked_config,
    checked_count,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike, as_generator

__all__ = [
    "BatchCalibrator",
    "BatchedEXP2",
    "BatchedEXP3",
    "BatchedHTINF",
    "BatchedPrivateBandit",
    "batched_exp3_regret_bound",
    "paper_batch",
    "same_arm_after",
]

#: tight searches tau in 1..min(T, ceil(SEARCH / epsilon) + SEARCH)
SEARCH = 16


def paper_batch(epsilon: float, horizon: int) -> int:
    """tau = ceil(1 / epsilon), the batch length of the paper's Corollary 2, capped at T."""
    return max(1, min(int(horizon), math.ceil(1.0 / float(epsilon) - 1e-12)))


def batched_exp3_regret_bound(
    n_arms: int,
    horizon: int,
    batch: int,
    laplace_scale: float,
    threshold: float = DEFAULT_THRESHOLD,
    eta: float | None = None,
) -> float:
    """tau * (robust EXP3's bound over n = ceil(T / tau) rounds with second moment
    1 + 2 b^2): the batched conversion's proven regret with robust EXP3 at learning rate
    ``eta`` (default: the bound's minimiser for those n rounds; ours, the module docstring)."""
    tau = checked_count("batch", batch)
    n = -(-checked_count("horizon", horizon) // tau)
    s2 = laplace_second_moment(laplace_scale)
    return tau * robust_exp3_regret_bound(n_arms, n, s2, threshold, eta=eta)


@dataclass(frozen=True)
class BatchCalibrator:
    """The batch length tau and the Laplace scale of the batch value (module docstring).

    ``width``: how far one round's observed loss can move (the sensitivity of the batch sum);
    ``bound(tau, b)``: the proven regret of the run with batches of tau rounds and Laplace(b)
    on the batch value, at the step sizes the run will use, which ``tight`` minimises over tau
    (``None``, or ``inf`` for every tau searched: no proven bound, and ``tight`` takes the
    paper's tau and says so); ``batch``: a fixed tau."""

    horizon: int
    width: float
    bound: Callable[[int, float], float] | None = None
    batch: int | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.width) and self.width > 0):
            raise ValueError(
                f"the loss values' width must be finite and positive, got {self.width!r}"
            )
        if self.batch is not None and checked_count("batch", self.batch) > self.horizon:
            raise ValueError(f"batch must lie in [1, {self.horizon}], got {self.batch!r}")

    def _answer(self, budget: PrivacyBudget, tau: int, how: str) -> Calibration:
        b = self.width / (budget.epsilon * tau)
        derivation = (
            f"{how}: batches of tau = {tau} rounds, each round in one batch; the batch value "
            f"(sum of its losses) / tau moves by at most {self.width:.6g} / tau between loss "
            f"sequences differing in one round; Laplace({b:.6g}) on it (Laplace mechanism), "
            "actions are post-processing, one batch value reads the differing round "
            "(Asi, Raman & Talwar 2025, Theorem 1)"
        )
        g = budget.prove(self.width / (tau * b), 0.0, derivation)
        return Calibration(
            LaplaceNoise(b), g, budget.calibration, "batched Laplace", (("batch", tau),)
        )

    def paper(self, budget: PrivacyBudget) -> Calibration:
        if self.batch is not None:
            return self._answer(budget, self.batch, "tau as given")
        tau = paper_batch(budget.epsilon, self.horizon)
        return self._answer(budget, tau, "tau = ceil(1 / epsilon) (Corollary 2)")

    def tight(self, budget: PrivacyBudget) -> Calibration:
        if self.batch is not None:
            return self._answer(budget, self.batch, "tau as given")
        if self.bound is None:
            tau = paper_batch(budget.epsilon, self.horizon)
            return self._answer(budget, tau, "tau = ceil(1 / epsilon) (no proven bound to tune)")
        top = min(self.horizon, math.ceil(SEARCH / budget.epsilon) + SEARCH)
        eps = budget.epsilon
        bounds = [self.bound(tau, self.width / (eps * tau)) for tau in range(1, top + 1)]
        tau = int(np.argmin(bounds)) + 1
        if not math.isfinite(bounds[tau - 1]):  # the run's step sizes void the proof for all
            tau = paper_batch(budget.epsilon, self.horizon)
            how = (
                "tau = ceil(1 / epsilon) (no proven regret bound at the run's step sizes for "
                f"any tau in 1..{top} to tune)"
            )
            return self._answer(budget, tau, how)
        how = f"tau minimising the proven regret bound ({bounds[tau - 1]:.4g})"
        return self._answer(budget, tau, how)


class BatchedPrivateBandit(NoiseHandle, RoundDiscipline):
    """The batched conversion (module docstring) around any bandit algorithm.

    Parameters
    ----------
    make_algorithm:
        ``make_algorithm(b, n, generator)``: the base algorithm for n = ceil(T / tau) rounds of
        its own, told the calibrated Laplace scale b of its values (0 without privacy), which
        its step sizes may depend on, and the generator it draws from (shared with the noise,
        so that one state resumes both).
    horizon:
        T; round T+1 is refused.
    budget:
        Pure-DP budget; ``None`` runs the base on the exact batch values (tau = ``batch`` or 1).
    width:
        How far one round's observed loss can move (1 for losses in [0, 1]).
    bound:
        ``bound(tau, b)``: the run's proven regret, for the ``tight`` choice of tau
        (:class:`BatchCalibrator`).
    batch:
        A fixed tau (default: the calibration's).
    clip:
        Clip observed losses into their interval instead of refusing them.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.BANDIT
    paper: ClassVar[str] = "Asi, Raman & Talwar (2025), the batched conversion (Theorem 1)"

    def __init__(
        self,
        make_algorithm: Callable[[float, int, np.random.Generator], BanditAlgorithm],
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        width: float = 1.0,
        bound: Callable[[int, float], float] | None = None,
        batch: int | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self._start_rounds(horizon)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget)
        self.clip = bool(clip)
        if batch is not None:
            batch = checked_count("batch", batch)
        self.calibrator = BatchCalibrator(self.horizon, float(width), bound, batch)
        self.privacy: PrivacyGuarantee | None = None
        if self.budget is None:
            self.batch, b = batch or 1, 0.0
        else:
            cal = calibrate(self.calibrator, self.budget)
            self.batch, b, self.privacy = dict(cal.details)["batch"], cal.noise.b, cal.guarantee
        self.calibrated_scale = b  # b as calibrated (scale_noise moves self.noise only)
        self.noise = LaplaceNoise(b)
        self.rounds = -(-self.horizon // self.batch)  # n, the base algorithm's rounds
        self.algorithm = make_algorithm(b, self.rounds, as_generator(rng))
        if self.algorithm.replicas != self.replicas:
            raise ValueError(
                f"the base algorithm has {self.algorithm.replicas} replicas, expected "
                f"{self.replicas}"
            )
        self._sum = np.zeros(self.replicas)  # this batch's observed losses so far
        self._choice: np.ndarray | None = None  # the base's action for this batch
        self._arm: np.ndarray | None = None  # the arm played this round

    @property
    def laplace_scale(self) -> float:
        """b, the Laplace scale of the batch value (0 without privacy)."""
        return self.noise.b

    @property
    def eta(self) -> float:
        """The base algorithm's learning rate."""
        return self.algorithm.eta

    @property
    def _rng(self) -> np.random.Generator:
        return self.algorithm.rng  # type: ignore[attr-defined, no-any-return]

    def _scale_noise(self, factor: float) -> None:
        self.noise = self.noise.scaled(factor)

    def batch_end(self, t: int) -> bool:
        """Whether round t (0-indexed) is the last of its batch."""
        return (t + 1) % self.batch == 0 or t + 1 == self.horizon

    def probabilities(self) -> np.ndarray:
        """The base's distribution over the arms this batch, shape (replicas, K) (a base that
        draws its arms from one: EXP3, HTINF, EXP2)."""
        return self.algorithm.probabilities()  # type: ignore[attr-defined, no-any-return]

    def _set_arms(self, n_arms: int) -> int:
        """K >= 2 arms, the action dimension too."""
        k = checked_count("n_arms", n_arms)
        if k < 2:
            raise ValueError(f"n_arms must be at least 2, got {n_arms!r}")
        self.n_arms = self.dim = k
        return k

    # --- hooks of the base's action space ---------------------------------------------------

    def _play(self, choice: np.ndarray, t: int) -> np.ndarray:
        """The arms played in round t given the base's action for the batch (default: the
        action itself, an arm index)."""
        return choice.copy()

    def _bounds(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The interval of the observed loss of each replica's arm (default [0, 1])."""
        return np.zeros(self.replicas), np.ones(self.replicas)

    # --- the protocol ----------------------------------------------------------------------

    def act(self) -> np.ndarray:
        """This round's arm for every replica (the base acts at the start of each batch)."""
        if self._arm is None:
            if self._choice is None:
                self._choice = np.asarray(self.algorithm.act(), dtype=np.int64)
            self._arm = np.asarray(self._play(self._choice, self.t), dtype=np.int64)
        self._acted = True
        return self._arm.copy()

    def observe(self, feedback: Feedback) -> None:
        """Check the loss of the arm played against its interval and add it to the batch; at
        the batch's end hand the base (batch sum) / tau + Laplace noise."""
        value = checked_bandit_loss(self, feedback, acted=self._acted, finite=False)
        assert self._arm is not None  # acted
        low, high = self._bounds(self._arm)
        value = snapped(value, low, high)  # rounding past a computed interval is clipped
        inside = (value >= low) & (value <= high)
        if not inside.all():
            check_finite(value, "bandit loss")  # NaN and infinity are never accepted
            if not self.clip:
                j = int(np.argmin(inside))
                raise ValueError(
                    f"bandit loss {float(value[j])!r} of replica {j} is outside the declared "
                    f"bounds [{low[j]:.6g}, {high[j]:.6g}] of the arm played"
                )
            value = np.clip(value, low, high)
        self._sum += value
        if self.batch_end(self.t):
            noise = self.noise.sample(self._rng, (self.replicas,))
            self.algorithm.learn(self._sum / self.batch + noise)
            self._sum = np.zeros(self.replicas)
            self._choice = None
        self._arm = None
        self._end_round()

    def _config(self) -> dict[str, Any]:
        return {
            "noise": repr(self.noise),
            "batch": self.batch,
            "clip": self.clip,
            "horizon": self.horizon,
            "replicas": self.replicas,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "acted": self._acted,
            "sum": self._sum.copy(),
            "choice": None if self._choice is None else self._choice.copy(),
            "arm": None if self._arm is None else self._arm.copy(),
            "algorithm": self.algorithm.state_dict(),
        }

    def _checked_choice(self, value: Any) -> np.ndarray | None:
        """A saved base action (an index per replica), or None; the base's actions are the
        arms unless a subclass says otherwise (EXP2 over an action set, EXP4's experts)."""
        if value is None:
            return None
        return checked_int_array("saved choice", value, (self.replicas,), 0, self.n_arms)

    def _checked_arm(self, arm: np.ndarray, choice: np.ndarray) -> None:
        """Refuse a saved arm that the batch's action cannot have played (default: the arm is
        the action itself, :meth:`_play`)."""
        if not np.array_equal(arm, choice):
            raise ArgumentError(
                f"saved arm {arm.tolist()} is not the batch's action {choice.tolist()} (saved "
                "choice): every round of a batch plays the base's action"
            )

    def _choice_bounds(self, choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The interval of one round's observed loss in a batch whose base action is
        ``choice`` (default: :meth:`_bounds` of the action, the arm every round plays)."""
        return self._bounds(choice)

    def batch_position(self, t: int) -> tuple[int, int]:
        """(the batch values the base has learned from, the rounds of the batch under way
        already observed) after t rounds: a batch ends after its tau-th round or at round T
        (:meth:`batch_end`), so (floor(t / tau), t mod tau) before the horizon and (n, 0) at
        it."""
        if t == self.horizon:
            return self.rounds, 0
        return t // self.batch, t % self.batch

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the configuration, the round counter, the batch's running sum, the batch's
        and the round's actions and the base's whole state, and that they agree with each
        other as :meth:`act` and :meth:`observe` keep them; then return the function that
        installs them. After t rounds with r = :meth:`batch_position` (t)[1] rounds of the
        batch under way observed:

        * ``choice`` (the base's action for the batch) is present exactly when r > 0 or the
          state has acted this round (the base acts at a batch's first ``act()``; the batch's
          end clears it), and then equals the action the base's state says it drew (its
          ``chosen``, which the bases here keep); ``arm`` is present exactly when the state
          has acted, and is one the batch's action plays (:meth:`_checked_arm`);
        * ``sum`` is 0 when r = 0 (a batch's end resets it) and else the sum of r losses of
          the batch's action, in [r low, r high] for its interval [low, high] (up to the
          rounding of r additions);
        * a base that counts the values it learned from (HTINF's round,
          :func:`~dponline.bandits.private_reduction.saved_learned_rounds`) has learned from
          the :meth:`batch_position` (t)[0] batches that have ended."""
        checked_config(
            saved_field(state, "config"),
            self._config(),
            type(self).__name__,
            "noise, batch length, horizon or guarantee",
        )
        t, acted = self._checked_rounds(state)
        total = np.array(
            checked_real_array("saved sum", saved_field(state, "sum"), (self.replicas,))
        )
        choice = self._checked_choice(saved_field(state, "choice"))
        arm = saved_field(state, "arm")
        if arm is not None:
            arm = checked_int_array("saved arm", arm, (self.replicas,), 0, self.n_arms)
        if acted and (arm is None or choice is None):
            raise ArgumentError("saved state has acted this round but holds no arm or action")
        if arm is not None and not acted:
            raise ArgumentError(
                "saved arm is present but the state has not acted this round (observing a "
                "round clears the round's arm)"
            )
        learned, into = self.batch_position(t)
        if (choice is not None) != (into > 0 or acted):
            where = (
                f"{into} round(s) into a batch of tau = {self.batch}" if into else "between batches"
            )
            raise ArgumentError(
                f"saved choice is {'missing' if choice is None else 'present'} at round "
                f"t = {t}, {where}, {'after' if acted else 'before'} act(): the batch's "
                "action is held exactly while a batch is under way (from its first act() to "
                "its last observe)"
            )
        if choice is not None and arm is not None:
            self._checked_arm(arm, choice)
        if into == 0:
            if np.any(total != 0.0):
                raise ArgumentError(
                    f"saved sum must be 0 at round t = {t}, between batches (a batch's end "
                    f"resets it), got {total.tolist()}"
                )
        else:
            assert choice is not None  # a batch is under way
            low, high = self._choice_bounds(choice)
            slack = into * into * np.finfo(float).eps * np.maximum(np.abs(low), np.abs(high))
            outside = (total < into * low - slack) | (total > into * high + slack)
            if outside.any():
                j = int(np.argmax(outside))
                raise ArgumentError(
                    f"saved sum {float(total[j])!r} of replica {j} is not a sum of the {into} "
                    f"loss(es) of the batch so far: it must lie in [{into} x {float(low[j]):.6g}, "
                    f"{into} x {float(high[j]):.6g}]"
                )
        saved_algorithm = saved_field(state, "algorithm")
        install_algorithm = self.algorithm.prepare_load(saved_algorithm)
        base_learned = saved_learned_rounds(self.algorithm, saved_algorithm)
        if base_learned is not None and base_learned != learned:
            raise ArgumentError(
                f"saved algorithm has learned from {base_learned} batch values, but t = {t} "
                f"rounds in batches of tau = {self.batch} have ended {learned} batches"
            )
        if choice is not None and "chosen" in saved_algorithm:  # EXP3, HTINF, EXP2 keep it
            drawn = np.asarray(saved_algorithm["chosen"])
            if not np.array_equal(drawn, choice):
                raise ArgumentError(
                    f"saved choice {choice.tolist()} is not the action the base algorithm drew "
                    f"for the batch (its saved chosen {drawn.tolist()}): the batch value would "
                    "be credited to an action not played"
                )

        def install() -> None:
            install_algorithm()
            self._set_rounds(t, acted)
            self._sum, self._choice, self._arm = total, choice, arm

        return install


class BatchedEXP3(BatchedPrivateBandit):
    """The batched conversion around robust EXP3 on K arms (module docstring; the base is
    :class:`~dponline.bandits.exp3.EXP3` with the two-sided skipping rule, whose bound is ours).

    Parameters
    ----------
    n_arms, horizon:
        K and T; losses in [0, 1].
    budget:
        Pure-DP budget; ``None`` runs plain EXP3 (tau = ``batch`` or 1, no skipping,
        eta = sqrt(2 log K / (n K))).
    batch:
        A fixed tau (default: ``paper`` ceil(1 / epsilon), ``tight`` the bound's minimiser).
    eta, threshold:
        Override the base's learning rate (default :func:`~dponline.bandits.exp3.
        robust_exp3_parameters` at sigma^2 = 1 + 2 b^2) and skipping threshold c (default
        1.6; without privacy no skipping).
    """

    paper: ClassVar[str] = "Asi, Raman & Talwar (2025), batched conversion around EXP3"

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        batch: int | None = None,
        eta: float | None = None,
        threshold: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        k = self._set_arms(n_arms)
        t = checked_count("horizon", horizon)
        c = DEFAULT_THRESHOLD if threshold is None else float(threshold)

        def bound(tau: int, b: float) -> float:  # at the rate the run will use
            return batched_exp3_regret_bound(k, t, tau, b, c, eta=eta)

        def make(b: float, n: int, gen: np.random.Generator) -> EXP3:
            if b == 0.0:  # exact values in [0, 1]: plain EXP3 (Theorem 11.2)
                return EXP3(
                    k,
                    eta=exp3_parameters(k, n) if eta is None else eta,
                    replicas=replicas,
                    rng=gen,
                    threshold=threshold,
                )
            s2 = laplace_second_moment(b)
            return EXP3(
                k,
                eta=robust_exp3_parameters(k, n, s2, c) if eta is None else eta,
                replicas=replicas,
                rng=gen,
                threshold=c,
            )

        super().__init__(
            make,
            t,
            budget=budget,
            width=1.0,
            bound=bound,
            batch=batch,
            replicas=replicas,
            rng=rng,
            clip=clip,
        )

    def regret_bound(self) -> float:
        """tau times the base's proven regret over its n rounds at its learning rate: robust
        EXP3's log K / eta + n eta K sigma^2 h(c) (ours) with privacy, EXP3's
        log K / eta + eta n K / 2 (Lattimore & Szepesvari 2020, proof of Theorem 11.2)
        without (for the calibrated noise, not a scaled one)."""
        k, n, eta = self.n_arms, self.rounds, self.eta
        c = self.algorithm.threshold  # type: ignore[attr-defined]
        if self.calibrated_scale == 0.0 and c is None:
            return self.batch * (math.log(k) / eta + eta * n * k / 2.0)
        s2 = laplace_second_moment(self.calibrated_scale)
        return self.batch * robust_exp3_regret_bound(k, n, s2, c, eta=eta)


class BatchedHTINF(BatchedPrivateBandit):
    """The batched conversion around HTINF (:mod:`dponline.bandits.htinf`), the base of the
    paper's Corollary 2: tau = ceil(1 / epsilon) in both calibrations (no proven bound with
    HTINF's constants here to tune it), sigma = sqrt(1 + 2 b^2), a bound on the second moment
    of a batch value (a batch mean in [0, 1] plus Laplace(b)).

    Parameters
    ----------
    n_arms, horizon:
        K and T; losses in [0, 1].
    budget:
        Pure-DP budget; ``None`` runs HTINF on the exact losses (tau = ``batch`` or 1,
        sigma = 1).
    batch:
        A fixed tau.
    sigma, theta:
        Override HTINF's sigma (its learning rate 1 / (sigma sqrt(t))) and skipping constant.
    """

    paper: ClassVar[str] = "Asi, Raman & Talwar (2025), batched conversion around HTINF"

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        batch: int | None = None,
        sigma: float | None = None,
        theta: float | None = SKIP_CONSTANT,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        k = self._set_arms(n_arms)

        def make(b: float, n: int, gen: np.random.Generator) -> HTINF:
            s = math.sqrt(laplace_second_moment(b)) if sigma is None else sigma
            return HTINF(k, sigma=s, replicas=replicas, rng=gen, theta=theta)

        super().__init__(
            make,
            checked_count("horizon", horizon),
            budget=budget,
            width=1.0,
            bound=None,
            batch=batch,
            replicas=replicas,
            rng=rng,
            clip=clip,
        )


class BatchedEXP2(BatchedPrivateBandit):
    """The batched conversion around EXP2 (Agarwal & Singh 2017, Algorithm 5) over the
    multi-armed bandit or a finite action set (module docstring).

    EXP2's step sizes are those its proof supports for the batch values' Laplace scale and its
    n rounds (:func:`~dponline.bandits.exp2.exp2_proof_parameters` with lambda = b and horizon
    n) unless ``eta`` or ``gamma`` is given. ``tight`` chooses tau by
    :func:`~dponline.bandits.exp2.exp2_proven_regret_bound` (times tau) at the (eta, gamma) the
    run will use (gamma capped at 1, as EXP2 caps it), over the taus where they meet the
    proof's condition eta N (1 + 4 b log(N n)) <= gamma <= 1; where they meet it for no tau,
    there is no proven bound, and ``tight`` takes the paper's tau and says so in its
    derivation. A general action set (``actions``, (K, N), losses in [0, 1]^N) needs ``eta``
    and ``gamma`` (as DP-EXP2 does); the width of one value is then the largest width of
    <l, a_k> over the loss box, and ``tight`` takes the paper's tau.
    """

    paper: ClassVar[str] = "Asi, Raman & Talwar (2025), batched conversion around EXP2"

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        batch: int | None = None,
        eta: float | None = None,
        gamma: float | None = None,
        actions: np.ndarray | None = None,
        exploration: np.ndarray | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        n_dim = checked_count("n_arms", n_arms)
        t = checked_count("horizon", horizon)
        # checked before the calibration reads them (tight's bound is at the run's step sizes)
        eta = None if eta is None else checked_positive("eta", eta)
        gamma = None if gamma is None else checked_positive("gamma", gamma)
        self.dim = n_dim
        self._value_low: np.ndarray | None = None
        self._value_high: np.ndarray | None = None
        bound: Callable[[int, float], float] | None
        if actions is None:
            if n_dim < 2:
                raise ValueError(f"n_arms must be at least 2, got {n_arms!r}")
            self.n_arms, width = n_dim, 1.0

            def bound(tau: int, b: float) -> float:  # at the step sizes the run will use
                n = -(-t // tau)
                default_eta, default_gamma = exp2_proof_parameters(n_dim, n, b, 1.0)
                run_eta = default_eta if eta is None else eta
                run_gamma = min(1.0, default_gamma if gamma is None else gamma)
                try:
                    return tau * exp2_proven_regret_bound(
                        n_dim, n, b, 1.0, eta=run_eta, gamma=run_gamma
                    )
                except ValueError:  # the proof's condition fails at them: no proven bound
                    return math.inf

        else:
            a = check_finite(actions, "actions")
            if a.ndim != 2 or a.shape[1] != n_dim or len(a) < 2:
                raise ValueError(
                    f"actions must have shape (K, n_arms) = (K, {n_dim}) with K >= 2, got {a.shape}"
                )
            if eta is None or gamma is None:
                raise ValueError(
                    "EXP2's proven step sizes are for the multi-armed bandit: give eta and "
                    "gamma for a general action set"
                )
            self.n_arms = len(a)
            self._value_low, self._value_high = value_range(Box(0.0, 1.0, dim=n_dim), a)
            width, bound = float((self._value_high - self._value_low).max()), None

        def make(b: float, n: int, gen: np.random.Generator) -> EXP2:
            default_eta, default_gamma = (
                exp2_proof_parameters(n_dim, n, b, 1.0) if actions is None else (eta, gamma)
            )
            return EXP2(
                eta=default_eta if eta is None else float(eta),
                gamma=default_gamma if gamma is None else float(gamma),
                replicas=replicas,
                rng=gen,
                n_arms=n_dim if actions is None else None,
                actions=actions,
                exploration=exploration,
            )

        super().__init__(
            make,
            t,
            budget=budget,
            width=width,
            bound=bound,
            batch=batch,
            replicas=replicas,
            rng=rng,
            clip=clip,
        )

    @property
    def gamma(self) -> float:
        return self.algorithm.gamma  # type: ignore[attr-defined, no-any-return]

    def probabilities(self) -> np.ndarray:
        """EXP2's p_t = (1 - gamma) q_t + gamma mu, shape (replicas, K)."""
        return self.algorithm.probabilities()  # type: ignore[attr-defined, no-any-return]

    def _bounds(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._value_low is None or self._value_high is None:
            return super()._bounds(arms)
        return self._value_low[arms], self._value_high[arms]

    def _checked_choice(self, value: Any) -> np.ndarray | None:
        if value is None:
            return None
        return checked_int_array("saved choice", value, (self.replicas,), 0, self.n_arms)


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _batched_exp3(env: Any, *, budget: PrivacyBudget | None, **kw: Any) -> BatchedEXP3:
    """The batched conversion around robust EXP3 over ``env``'s arms and horizon."""
    return BatchedEXP3(env.dim, env.horizon, budget=budget, **kw)


def _batched_htinf(env: Any, *, budget: PrivacyBudget | None, **kw: Any) -> BatchedHTINF:
    """The batched conversion around HTINF over ``env``'s arms and horizon."""
    return BatchedHTINF(env.dim, env.horizon, budget=budget, **kw)


def _batched_exp2(env: Any, *, budget: PrivacyBudget | None, **kw: Any) -> BatchedEXP2:
    """The batched conversion around EXP2 over ``env``'s arms and horizon."""
    return BatchedEXP2(env.dim, env.horizon, budget=budget, **kw)


def same_arm_after(first: int, then: int) -> Callable[[np.ndarray], np.ndarray]:
    """The statistic 1{arm of round ``then`` == arm of round ``first``} (1-based rounds), of
    outputs (n, T): whether the batch that holds the changed round kept the next batch on its
    arm (a low batch loss keeps it, a high one moves away)."""

    def statistic(outputs: np.ndarray) -> np.ndarray:
        return (outputs[:, first - 1] == outputs[:, then - 1]).astype(float)

    statistic.__name__ = f"same_arm_rounds_{first}_{then}"
    return statistic


_SETTING = "multi-armed bandit"
_GUARANTEE = (
    "event-level epsilon-DP over loss sequences differing in one round (losses in [0, 1]): "
    "Laplace(1 / (epsilon tau)) on each batch's loss sum / tau, each round in one batch"
)
#: the audits' options of EXP3 and EXP4 bases (one round per batch, a large step, no skipping)
SHARP_EXP3_OPTIONS = {"batch": 1, "eta": 20.0, "threshold": 1e4}
#: their one-run audits' (thousands of rounds, where the large step would lock the run onto an
#: arm that no later canary could move)
MODERATE_EXP3_OPTIONS = {"eta": 1.5, "threshold": 5.0}
_BATCH_OPTION = "batch length tau (default: paper ceil(1 / epsilon), tight the bound's minimiser)"

# the audit's two rounds: round 1's loss is 0 or 1 for both arms, round 2's 1/2; one round per
# batch and a threshold no value reaches (|y| > 250 at p = 1/2). The step is so large that the
# second arm is all but a threshold on the noisy batch value y (the same arm iff y < 0, about):
# the event then sees the whole Laplace ratio, so that half the noise is refuted (1.93 against
# 0.94 at eta = 1.5, threshold 5) and the full noise's bound is 0.93 of the claimed 1
_EXP3_AUDIT = AuditCase(
    horizon=2,
    values=(0.0, 1.0),
    rest=0.5,
    coordinates="all",
    environment="bernoulli_bandit",
    environment_options={"n_arms": 2},
    learner_options=SHARP_EXP3_OPTIONS,
    one_run_options=MODERATE_EXP3_OPTIONS,
    statistic=same_arm_after(1, 2),
    trials=40_000,
    pilot_trials=10_000,
    seed=5,
)

_BATCHED_EXP3_ENTRY = register_learner(
    LearnerEntry(
        "batched-exp3",
        _batched_exp3,
        paper="Asi, Raman & Talwar (2025), the batched conversion (Theorem 1, tau of Corollary "
        "2) around EXP3 with a skipping rule for heavy-tailed losses (bound ours)",
        setting=_SETTING,
        guarantee=_GUARANTEE,
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase("bernoulli_bandit", audit=_EXP3_AUDIT),
            LearnerTestCase(
                "stock_bandit",
                environment_options={"dataset": "djia"},
                learner_options={"batch": 5},
                epsilon=0.2,
                label="partial batch",
                audit=AuditCase(
                    # batch 1 = rounds 1-5 (round 1 changed: its batch value moves by 1/5),
                    # batch 2 = round 6; epsilon 0.2 gives Laplace(1) on the batch value
                    horizon=6,
                    values=(0.0, 1.0),
                    rest=0.5,
                    coordinates="all",
                    environment="bernoulli_bandit",
                    environment_options={"n_arms": 2},
                    learner_options={"batch": 5, "eta": 3.0, "threshold": 10.0},
                    statistic=same_arm_after(1, 6),
                    trials=60_000,
                    pilot_trials=15_000,
                    seed=6,
                ),
            ),
        ),
        options={
            "batch": _BATCH_OPTION,
            "eta": "base learning rate (default: robust EXP3's, ours)",
            "threshold": "skipping threshold c (default 1.6)",
        },
        default_delta=0.0,
    )
)

register_learner(
    non_private_entry(
        _BATCHED_EXP3_ENTRY,
        "exp3",
        paper="EXP3 (Auer et al. 2002; Lattimore & Szepesvari 2020, Theorem 11.2); the "
        "non-private counterpart of batched-exp3",
        test_cases=(
            LearnerTestCase(
                "stock_bandit", environment_options={"dataset": "djia"}, randomised=True
            ),
        ),
        options={"batch": "batch length (default 1)", "eta": "learning rate"},
    )
)

_BATCHED_HTINF_ENTRY = register_learner(
    LearnerEntry(
        "batched-htinf",
        _batched_htinf,
        paper="Asi, Raman & Talwar (2025), the batched conversion (Theorem 1) with tau = "
        "ceil(1 / epsilon) around HTINF (Corollary 2; HTINF's constants from a third-party "
        "reading, not the paper's text)",
        setting=_SETTING,
        guarantee=_GUARANTEE,
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit",
                # the audit's two rounds as batched EXP3's: a small sigma (a large first step)
                # and no skipping, so that one batch value visibly moves the next arm
                audit=dataclasses.replace(
                    _EXP3_AUDIT,
                    learner_options={"batch": 1, "sigma": 0.25, "theta": None},
                    one_run_options={},
                ),
            ),
        ),
        options={
            "batch": "batch length tau (default ceil(1 / epsilon))",
            "sigma": "HTINF's sigma (default sqrt(1 + 2 b^2))",
            "theta": f"skipping constant (default 1 - 2^(-1/3) = {SKIP_CONSTANT:.4f})",
        },
        default_delta=0.0,
    )
)

register_learner(
    non_private_entry(
        _BATCHED_HTINF_ENTRY,
        "htinf",
        paper="HTINF (Huang, Dai & Huang 2022) with alpha = 2 on losses in [0, 1]; the "
        "non-private counterpart of batched-htinf",
        test_cases=(
            LearnerTestCase(
                "stock_bandit", environment_options={"dataset": "djia"}, randomised=True
            ),
        ),
        options={
            "batch": "batch length (default 1)",
            "sigma": "sigma (default 1)",
            "theta": f"skipping constant (default 1 - 2^(-1/3) = {SKIP_CONSTANT:.4f})",
        },
    )
)

register_learner(
    LearnerEntry(
        "batched-exp2",
        _batched_exp2,
        paper="Asi, Raman & Talwar (2025), the batched conversion (Theorem 1, tau of Corollary "
        "2) around EXP2 (Agarwal & Singh 2017, Algorithm 5) with its proof's step sizes",
        setting=_SETTING,
        guarantee=_GUARANTEE,
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "stock_bandit",
                environment_options={"dataset": "djia"},
                audit=AuditCase(
                    horizon=2,
                    values=(0.0, 1.0),
                    rest=0.5,
                    coordinates="all",
                    environment="bernoulli_bandit",
                    environment_options={"n_arms": 2},
                    learner_options={"batch": 1, "eta": 3.0, "gamma": 0.2},
                    statistic=same_arm_after(1, 2),
                    trials=60_000,
                    pilot_trials=15_000,
                    seed=4,
                ),
            ),
        ),
        options={
            "batch": _BATCH_OPTION,
            "eta": "learning rate (default: the proof's, Agarwal & Singh Theorem 4.1)",
            "gamma": "exploration (default: the proof's)",
        },
        default_delta=0.0,
    )
)
