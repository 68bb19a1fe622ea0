"""Private stochastic bandits with per-arm geometric phases and no forgetting: DP-KLUCB and
DP-IMED (Azize, Wu, Honda, Orabona, Ito & Basu, "Optimal Regret of Bernoulli Bandits under
Global Differential Privacy", arXiv 2505.05613, NeurIPS 2025).

**Phases.** Each arm's pulls are cut into phases whose ends grow geometrically with a ratio
alpha > 1: the first phase holds the arm's first n_1 pulls and phase m + 1 ends at pull
n_{m+1} = max(n_m + 1, ceil(alpha n_m)) (:func:`next_phase_end`). Every arm plays its first
phase (arm 0, 1, ..., K-1, n_1 pulls each); then, at the start of a round tau (1-based) where no
arm is committed, the arm of the best index is chosen and pulled until its current phase ends
(a commitment of n_{m+1} - n_m rounds, so
:meth:`~dponline.bandits.k_armed.KArmedLearner.play_stochastic` jumps whole phases).

**The first phase (ours).** n_1 = ceil(c / eps) pulls with c = :data:`FIRST_PHASE_CONSTANT`
= 10 (:func:`first_phase_length`; n_1 = 1 without noise, the limit eps -> infinity, so the
non-private counterparts are unchanged; the option ``first_phase`` sets n_1 directly). The rule:

* *What it fixes.* With n_1 = 1 the first release is one reward plus Lap(1/eps): at eps = 1
  the first private mean leaves [0, 1] with probability (e^(r-1) + e^(-r)) / 2 for a reward
  r, 0.68 for a 0/1 reward. A best arm whose early Laplace terms are very negative has an
  index far below its worth, and in the linear (total
  variation) regime of d_eps its deficit costs n d_eps ~ eps x (the Laplace deficit x of its
  sum) whatever n is, so it waits about e^(eps x) rounds (DP-KLUCB: log tau must reach it;
  DP-IMED: the leader's log n must) before it is pulled again: a tail P(wait > w) of order 1/w
  on the best arm, the heavy tail measured at n_1 = 1 (replicas of DP-IMED that had not found
  the best arm at T = 1e5). With n_1 = c / eps the first private mean carries Lap(1/c), whatever
  eps: it leaves [mu - 1/2, mu + 1/2] with probability e^(-c/2) < 1%, and its deviations fall
  in the quadratic (kl) regime of d_eps, whose tails are light.
* *What it costs.* At most n_1 Delta_i = c Delta_i / eps more regret on arm i, a fraction at most
  c d_eps(mu_i, mu^*) / (eps log T) <= c Delta_i / log T of that arm's term
  Delta_i log T / d_eps(mu_i, mu^*) in the lower bound (d_eps(x, y) <= eps |x - y|), so it
  vanishes as T grows and the asymptotic bound below is unchanged. No horizon enters (anytime).
* *The constant.* The form c / eps follows from the two points above; c = 10 was chosen by a
  measurement, not by a proof: c in {0, 2, 3, 4, 6, 8, 10, 12, 16} on three instances
  (``two_level``, ``unequal_gaps``, ``azize_basu`` of the ``k_armed`` environment) at eps = 1
  and eps = 0.1, T = 1e4 and 1e5, 500 replicas each; c = 10 was no worse than n_1 = 1 on any of
  them for either learner, and it removed DP-IMED's heavy tail where c <= 8 did not (the
  numbers are in docs/private-bandits.md).

**Noise, without forgetting.** When a phase of arm i ends, the sum of its rewards gets a fresh
Lap(1/eps) and is added to the arm's private cumulative sum S~_i: after m phases S~_i is the sum
of *all* of arm i's n_m rewards plus m independent Laplace terms (no reward is ever dropped).
The private mean is mu~_i = S~_i / n_{m_i} and [x] is its clipping to [0, 1]. Decisions use
only completed phases.

**Indices** (d_eps of :func:`~dponline.bandits.kl.d_eps`, the paper's divergence
d_eps(x, y) = inf over z between x and y of eps |z - x| + kl(z, y)), at the start of round tau:

* DP-KLUCB: U_i = max{mu in [[mu~_i], 1] : d_eps([mu~_i], mu) <= log(tau) / n_{m_i}}
  (:func:`~dponline.bandits.kl.d_eps_upper`); play the argmax;
* DP-IMED: I_i = n_{m_i} d_eps([mu~_i], [mu~^*]) + log n_{m_i}, mu~^* = max_j mu~_j; play the
  argmin.

Ties go to the lowest arm. ``budget=None`` runs the non-private counterparts: the same phases,
no noise, and kl in place of d_eps (the limit eps -> infinity).

**Privacy** (the paper's Proposition 2; the argument is the one of Azize & Basu 2022, Lemma 1).
Neighbours: reward (loss) sequences that differ in one round j, the whole loss vector of that
round included (the learner reads only the reward of the arm it pulls). Condition on the
actions before round j: the arm pulled at j and the phase holding round j are then fixed, and
round j's reward enters exactly one released statistic, that phase's noisy sum (a sum of rewards
in [0, 1]: sensitivity 1; a phase cut by the horizon is never released). Every other noisy
phase sum is computed from rewards equal in both sequences, so given the past releases its
law is the same under both. The privacy loss of all releases is that of one Laplace mechanism
of sensitivity 1 and scale 1/eps: eps-DP. The cumulative sums, the means, the indices, the phase
schedule (a function of past actions) and the actions are post-processing. The Laplace mechanism
is exact for a sum of rewards in [0, 1], so the ``paper`` and ``tight`` calibrations draw the
same noise (:class:`RewardSumCalibrator`).

**What was checked against what.** The abstract of arXiv 2505.05613 (v1 and the NeurIPS 2025
version) was read: a lower bound with a quantity that interpolates between KL and TV, DP-KLUCB
and DP-IMED built from "arm-dependent phases" and "Laplace noise", regrets matching the bound
"up to a constant arbitrary close to 1" for Bernoulli rewards, and "forgetting is not
necessary". The body could not be reached: the definition of d_eps, the two indices (with the
clipping [.] to [0, 1]), the fresh Laplace noise added to the cumulative sum at each phase end,
privacy by parallel composition and post-processing (Proposition 2), and the regret bound were
read in a third-party summary of the paper only (likely, not certain). **Ours** (not read
anywhere): the phase schedule n_{m+1} = max(n_m + 1, ceil(alpha n_m)), the first phase n_1, the
commitment to the chosen arm until its phase ends (the episode structure of Azize & Basu 2022,
from which the "arm-dependent phases" are taken; for DP-IMED, whose index does not depend on
the round, it is the same as choosing every round, up to ties), the round tau in log(tau), and
the default alpha.

**Regret** (the summary's Theorem 2, not enforced): for Bernoulli rewards both satisfy
Reg_T <= sum_{i: Delta_i > 0} alpha Delta_i log T / d_eps(mu_i, mu^*) + o(log T); the lower bound
is the same sum with alpha = 1 (:func:`~dponline.bandits.lower_bounds.azize_2025_coefficient`).
A first phase of fixed length n_1 adds at most n_1 sum Delta_i, O(1) in T.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.k_armed import KArmedLearner, arms_of, horizon_for
from dponline.bandits.kl import d_eps, d_eps_upper
from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_int_array,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.noise import LaplaceNoise
from dponline.protocol import FeedbackKind, checked_budget
from dponline.registry import AuditCase, LearnerEntry, LearnerTestCase, register_learner
from dponline.rng import RngLike
from dponline.warn import warn_caller

__all__ = [
    "DEFAULT_RATIO",
    "DPIMED",
    "DPKLUCB",
    "FIRST_PHASE_CONSTANT",
    "GeometricPhases",
    "RewardSumCalibrator",
    "calibrate_reward_sums",
    "first_phase_length",
    "next_phase_end",
]

#: the default phase ratio alpha (ours, not tuned: doubling, as the episodes of Azize & Basu
#: 2022 and the epochs of Lazy-DP-TS; the bound's factor alpha favours alpha near 1, the noise,
#: one Laplace term per phase, favours fewer phases)
DEFAULT_RATIO = 2.0

#: c of the default first phase n_1 = ceil(c / eps) (ours; the module docstring gives the rule
#: and how c was chosen): the first private mean of an arm carries Lap(1/c) whatever eps
FIRST_PHASE_CONSTANT = 10.0


#: the longest phase end (pulls): far past any horizon, and clear of int64's overflow
MAX_PHASE_END = 2**62


def _ceil_of_rounded(v: Any) -> np.ndarray:
    """ceil(v), except that a v within min(1e-9 v, 1e-6) of an integer is that integer (an
    alpha n or c / eps that is an integer up to rounding, 1.1 x 10 or 10 / 0.1, is not pushed
    one up; the absolute cap keeps large values from being pulled one down), capped at
    :data:`MAX_PHASE_END`."""
    v = np.minimum(np.asarray(v, dtype=float), float(MAX_PHASE_END))
    r = np.round(v)
    near = np.abs(v - r) <= np.minimum(1e-9 * v, 1e-6)
    return np.where(near, r, np.ceil(v)).astype(np.int64)


def first_phase_length(epsilon: float) -> int:
    """The default first phase n_1 = ceil(c / eps), c = :data:`FIRST_PHASE_CONSTANT` (ours,
    module docstring), with the rounding tolerance of :func:`_ceil_of_rounded` (c / eps =
    10 / 0.1 gives 100, not 101), at most 2^62; 1 for eps = inf (no noise)."""
    if math.isinf(epsilon):
        return 1
    return max(1, int(_ceil_of_rounded(FIRST_PHASE_CONSTANT / float(epsilon))))


def next_phase_end(n: Any, alpha: float) -> np.ndarray:
    """The pull at which the phase after the one ending at pull ``n`` (>= 1) ends:
    max(n + 1, ceil(alpha n)), with the rounding tolerance of :func:`_ceil_of_rounded`, at most
    2^62 (a phase that long outlasts every horizon)."""
    n = np.asarray(n, dtype=np.int64)
    end = np.maximum(n + 1, _ceil_of_rounded(float(alpha) * n))
    return np.minimum(end, MAX_PHASE_END)


@dataclass(frozen=True)
class RewardSumCalibrator:
    """Lap(1/eps) on a released sum of rewards in [0, 1] that holds each reward it covers
    once, no reward lying in two released sums: eps-DP by the Laplace mechanism (sensitivity
    1) and parallel composition. The Laplace mechanism is exact here, so ``paper`` and
    ``tight`` coincide. ``what`` names the released sums and ``source`` the statement that
    each reward enters one of them (a paper's lemma, or for a learner of your own where its
    sums come from: "one release of the K sums"), for the derivation. A mean of r such
    rewards gets the same noise divided by r (scale 1/(eps r), sensitivity 1/r)."""

    what: str
    source: str

    def _calibrate(self, budget: PrivacyBudget, calibration: str) -> Calibration:
        how = (
            f"Laplace mechanism: Lap(1/eps) on {self.what} (a sum of rewards in [0, 1], "
            "sensitivity 1; a mean of r of them gets Lap(1/(eps r)), sensitivity 1/r); "
            "each reward enters one released sum and the others do not depend on it given the "
            f"past releases (parallel composition, {self.source}); decisions are "
            "post-processing; no horizon enters the noise, so this holds at every round t "
            "(anytime)"
        )
        g = budget.prove(budget.epsilon, 0.0, how)
        return Calibration(LaplaceNoise(1.0 / budget.epsilon), g, calibration, "laplace sums")

    def paper(self, budget: PrivacyBudget) -> Calibration:
        return self._calibrate(budget, "paper")

    def tight(self, budget: PrivacyBudget) -> Calibration:
        return self._calibrate(budget, "tight")


def calibrate_reward_sums(learner: KArmedLearner, budget: Any, what: str, source: str) -> None:
    """Calibrate ``learner`` (a K-armed learner releasing Laplace-noised reward sums) from
    ``budget`` through :class:`RewardSumCalibrator`: sets its ``privacy``, ``epsilon`` (one
    round's, which the noise is calibrated for: for a person's budget of k rounds, by group
    privacy, the budget's epsilon / k; ``privacy.epsilon`` is the person's), ``unit_scale``
    (the Laplace scale of a released sum) and ``calibration_name``; ``None`` runs the
    non-private counterpart (no noise, epsilon = inf)."""
    budget = checked_budget(budget)
    if budget is None:
        learner.privacy = None
        learner.epsilon, learner.unit_scale, learner.calibration_name = math.inf, 0.0, "none"
        return
    cal = calibrate(RewardSumCalibrator(what, source), budget)
    learner.privacy = cal.guarantee
    learner.epsilon = budget.epsilon
    learner.unit_scale = float(cal.noise.scale)
    learner.calibration_name = cal.calibration


class GeometricPhases(KArmedLearner):
    """Per-arm geometric phases with a fresh Laplace term per phase sum and no forgetting
    (module docstring). Subclasses give the choice (:meth:`_choose`).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds.
    budget:
        A pure :class:`~dponline.privacy.budget.PrivacyBudget` (:class:`RewardSumCalibrator`);
        ``None`` runs the non-private counterpart (no noise, kl in place of d_eps).
    alpha:
        The phase ratio alpha > 1 (default :data:`DEFAULT_RATIO`).
    first_phase:
        n_1, the pulls of each arm's first phase (an int >= 1); ``None`` (the default) takes
        :func:`first_phase_length` of the budget's epsilon (1 without noise). Any n_1 keeps the
        guarantee: the phases only decide which rewards share a released sum.
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    anytime_capable: ClassVar[bool] = True

    def __init__(
        self,
        n_arms: int,
        horizon: int | None,
        *,
        budget: PrivacyBudget | None,
        alpha: float = DEFAULT_RATIO,
        first_phase: int | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        a = checked_positive("alpha", alpha)
        if not a > 1.0:
            raise ArgumentError(f"alpha (the phase ratio) must be greater than 1, got {alpha!r}")
        self.alpha = a
        calibrate_reward_sums(
            self,
            budget,
            "the reward sum of each phase of each arm",
            "Azize et al. 2025, Proposition 2",
        )
        #: n_1, the pulls of each arm's first phase (module docstring)
        self.first_phase = (
            first_phase_length(self.epsilon)
            if first_phase is None
            else checked_count("first_phase", first_phase)
        )
        if self.first_phase > MAX_PHASE_END:
            raise ArgumentError(f"first_phase must be at most 2^62, got {first_phase!r}")
        if self.horizon is not None and self.n_arms * self.first_phase >= self.horizon:
            warn_caller(
                f"{type(self).__name__}: the first phases ({self.n_arms} arms x "
                f"{self.first_phase} pulls) fill the horizon T = {self.horizon}, so every round "
                "explores; a longer horizon, a larger epsilon or a smaller first_phase lets "
                "it exploit",
                UserWarning,
            )
        r, k = self.replicas, self.n_arms
        #: S~_i: every reward of the completed phases plus one Laplace term per phase
        self.noisy_sum = np.zeros((r, k))
        #: n_{m_i}: the pull at which arm i's last completed phase ended (0 before any)
        self.phase_end = np.zeros((r, k), dtype=np.int64)
        #: m_i: the number of completed phases (Laplace terms in S~_i)
        self.phases = np.zeros((r, k), dtype=np.int64)

    # --- the algorithm --------------------------------------------------------------------------

    def private_means(self, rows: np.ndarray) -> np.ndarray:
        """[mu~_i] = clip(S~_i / n_{m_i}, 0, 1) of the replicas ``rows``, shape (rows, K);
        every arm has a completed phase."""
        return np.clip(self.noisy_sum[rows] / self.phase_end[rows], 0.0, 1.0)

    def _released_means(self) -> np.ndarray:
        """S~_i / n_{m_i}: each arm's noisy sum of its completed phases over their pulls."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.phases > 0, self.noisy_sum / self.phase_end, np.nan)

    @abstractmethod
    def index(self, rows: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """The indices of the replicas ``rows`` at the start of rounds ``tau`` (1-based),
        shape (rows, K)."""

    @abstractmethod
    def _choose(self, index: np.ndarray) -> np.ndarray:
        """The arm each row of ``index`` plays (the best index)."""

    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each arm's first phase (n_1 pulls), then the best index until its phase ends."""
        arms = self._first_unpulled(rows)
        lengths = np.full(rows.size, self.first_phase, dtype=np.int64)
        ready = arms < 0
        if ready.any():
            sub = rows[ready]
            chosen = self._choose(self.index(sub, t[ready] + 1))
            n = self.phase_end[sub, chosen]
            arms[ready] = chosen
            lengths[ready] = next_phase_end(n, self.alpha) - n
        return arms, lengths

    def _conclude(
        self,
        rows: np.ndarray,
        t: np.ndarray,
        arms: np.ndarray,
        sums: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        """A phase ended: its reward sum plus a fresh Lap(1/eps) joins the arm's S~."""
        released = sums
        if self.unit_scale > 0.0:
            released = sums + self._noise(rows, self.unit_scale)
        self.noisy_sum[rows, arms] += released
        self.phase_end[rows, arms] = self.pulls[rows, arms]
        self.phases[rows, arms] += 1

    # --- state ----------------------------------------------------------------------------------

    def _extra_config(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "first_phase": self.first_phase,
            "calibration": self.calibration_name,
            "epsilon": self.epsilon,
            "unit_scale": self.unit_scale,
        }

    def _extra_state(self) -> dict[str, Any]:
        return {
            "noisy_sum": self.noisy_sum.copy(),
            "phase_end": self.phase_end.copy(),
            "phases": self.phases.copy(),
        }

    def _prepare_extra(self, state: dict[str, Any]) -> Callable[[], None]:
        shape = (self.replicas, self.n_arms)
        noisy = np.array(
            checked_real_array("saved noisy_sum", saved_field(state, "noisy_sum"), shape)
        )
        end = checked_int_array("saved phase_end", saved_field(state, "phase_end"), shape, 0)
        phases = checked_int_array("saved phases", saved_field(state, "phases"), shape, 0)
        # the schedule: an arm's concluded pulls are its last phase's end; a running phase
        # has n_1 rounds (the arm's first) or next_phase_end(n) - n
        done, running, length = self._saved_schedule(state)
        if np.any(end != done):
            raise ArgumentError("saved phase_end is not the pulls of the arm's concluded phases")
        arm = np.asarray(saved_field(state, "arm"), dtype=np.int64)
        n = done[running, arm[running]]
        expected = np.where(
            n == 0, self.first_phase, next_phase_end(np.maximum(n, 1), self.alpha) - n
        )
        if np.any(length != expected):
            raise ArgumentError("saved running phase is not the length its arm's phases give")
        if np.any(phases > end) or np.any((phases == 0) != (end == 0)):
            raise ArgumentError("saved phases must number between 1 and phase_end (0 for none)")
        if np.any((end > 0) & (end < self.first_phase)):
            raise ArgumentError(
                f"saved phase_end must be 0 or at least the first phase ({self.first_phase})"
            )
        if self.unit_scale == 0.0 and (np.any(noisy < 0.0) or np.any(noisy > end)):
            raise ArgumentError("saved noisy_sum of a noiseless learner must lie in [0, phase_end]")

        def install() -> None:
            self.noisy_sum, self.phase_end, self.phases = noisy, end, phases

        return install


class DPKLUCB(GeometricPhases):
    """DP-KLUCB (Azize et al. 2025): geometric phases, argmax of
    max{mu >= [mu~_i] : d_eps([mu~_i], mu) <= log(tau) / n_{m_i}} (module docstring).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds (``None``: no horizon, the anytime learner).
    budget:
        A pure :class:`~dponline.privacy.budget.PrivacyBudget` (delta = 0): epsilon-DP over
        reward sequences that differ in one round (``privacy`` states it with its derivation);
        ``None`` runs the non-private counterpart (kl in place of d_eps).
    alpha, first_phase:
        The phase ratio (> 1) and the first phase's pulls per arm (default from epsilon).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    paper: ClassVar[str] = "DP-KLUCB (Azize, Wu, Honda, Orabona, Ito & Basu 2025)"

    def index(self, rows: np.ndarray, tau: np.ndarray) -> np.ndarray:
        level = np.log(tau.astype(float))[:, None] / self.phase_end[rows]
        return d_eps_upper(self.private_means(rows), level, self.epsilon)

    def _choose(self, index: np.ndarray) -> np.ndarray:
        return np.argmax(index, axis=1)


class DPIMED(GeometricPhases):
    """DP-IMED (Azize et al. 2025): geometric phases, argmin of
    n_{m_i} d_eps([mu~_i], [mu~^*]) + log n_{m_i} (module docstring).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds (``None``: no horizon, the anytime learner).
    budget:
        A pure :class:`~dponline.privacy.budget.PrivacyBudget` (delta = 0): epsilon-DP over
        reward sequences that differ in one round (``privacy`` states it with its derivation);
        ``None`` runs the non-private counterpart (kl in place of d_eps).
    alpha, first_phase:
        The phase ratio (> 1) and the first phase's pulls per arm (default from epsilon).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.

    Examples
    --------
    >>> from dponline.privacy import PrivacyBudget
    >>> from dponline.environments.k_armed import KArmedBandit
    >>> learner = DPIMED(3, 1000, budget=PrivacyBudget(1.0), rng=0)
    >>> learner.privacy.epsilon, learner.privacy.delta
    (1.0, 0.0)
    >>> run = learner.play_stochastic(KArmedBandit([0.2, 0.5, 0.9], horizon=1000, rng=1), 1000)
    >>> run.pulls.shape, int(run.pulls.sum())  # pulls per replica and arm
    ((1, 3), 1000)

    Round by round: ``arm = learner.act()`` (shape (replicas,)), then
    ``learner.observe(BanditFeedback(1 - reward))``.
    """

    paper: ClassVar[str] = "DP-IMED (Azize, Wu, Honda, Orabona, Ito & Basu 2025)"

    def index(self, rows: np.ndarray, tau: np.ndarray) -> np.ndarray:
        mu = self.private_means(rows)
        best = mu.max(axis=1, keepdims=True)
        n = self.phase_end[rows].astype(float)
        # eps = inf (the non-private counterpart) gives kl, inf where mu^* = 1 > mu_i
        return n * d_eps(mu, best, self.epsilon) + np.log(n)

    def _choose(self, index: np.ndarray) -> np.ndarray:
        return np.argmin(index, axis=1)


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _factory(cls: type[GeometricPhases]) -> Callable[..., GeometricPhases]:
    def build(
        env: Any, *, budget: PrivacyBudget | None, anytime: bool = False, **kw: Any
    ) -> GeometricPhases:
        return cls(arms_of(env), horizon_for(env, anytime), budget=budget, **kw)

    build.__name__ = f"_{cls.__name__.lower()}"
    return build


def last_round_plays_arm_0(outputs: np.ndarray) -> np.ndarray:
    """1 where the last round played arm 0, outputs (n, T)."""
    return (np.asarray(outputs)[:, -1] == 0).astype(float)


_SETTING = "stochastic K-armed bandit (rewards 1 - loss in [0, 1]; bounds for Bernoulli)"
_GUARANTEE = (
    "event-level epsilon-DP (Lap(1/eps) on each phase's reward sum, sensitivity 1; each reward "
    "in one released sum, parallel composition and post-processing: Azize et al. 2025, "
    "Proposition 2) over reward sequences differing in one round, rewards 1 - loss in [0, 1]"
)
_OPTIONS = {
    "alpha": f"phase ratio alpha > 1 (default {DEFAULT_RATIO})",
    "first_phase": "pulls of each arm's first phase (default ceil(10 / epsilon); 1 if non-private)",
}
#: the audits' horizon: both arms' first phases (n_1 = 10 at eps = 1), then one decision
_AUDIT_HORIZON = 2 * first_phase_length(1.0) + 1
# the battery's case plays n_1 = 2 (many decisions in 48 rounds, so that replicas differ); the
# audits play the default n_1 (their ``first_phase=None``)
_CASE = {"environment_options": {"n_arms": 3}, "horizon": 48, "learner_options": {"first_phase": 2}}
_DEFAULT_FIRST_PHASE = {"first_phase": None}


def _entry(
    name: str, cls: type[GeometricPhases], label: str, index: str, seed: int, rest: float
) -> None:
    """Register DP-KLUCB or DP-IMED (``label``, its ``index``) with its test case and audit.

    The audit: two arms, eps = 1; each arm's first phase (10 pulls, one Laplace term each),
    then in round 21 the arm of the better index, which moves with arm 0's private mean
    (DP-KLUCB: the larger index, clipped means at 0.7 or more tie at 1; DP-IMED: the argmin of
    n d_eps + log n at n = 10 for both, the larger clipped private mean; ties play arm 0):
    round 1's loss 0 or 1 moves arm 0's sum by 1. Every other loss is ``rest``, 0 or 1, so
    that arm 1's sum equals one of arm 0's two (9 or 10 against 10 at loss 0; 0 or 1 against 0
    at loss 1): the decision's threshold sits at the edge of the change, where at loss 1/2 it
    sat in the middle, and half the noise is refuted (DP-IMED at loss 0: 1.36 against 0.91;
    DP-KLUCB at loss 1, where its indices do not clip to 1: 1.08 against 0.91)."""
    register_learner(
        LearnerEntry(
            name,
            _factory(cls),
            paper=f"Azize, Wu, Honda, Orabona, Ito & Basu (2025), {label}: geometric per-arm "
            f"phases, Laplace on each phase sum, no forgetting, d_eps {index} index",
            setting=_SETTING,
            guarantee=_GUARANTEE,
            calibrations=("paper", "tight"),
            private=True,
            anytime=True,
            feedback_kind=FeedbackKind.BANDIT,
            action_space="arms",
            test_cases=(
                LearnerTestCase(
                    "bernoulli_bandit",
                    **_CASE,
                    audit=AuditCase(
                        horizon=_AUDIT_HORIZON,
                        values=(0.0, 1.0),
                        rest=rest,
                        coordinates="all",
                        environment="bernoulli_bandit",
                        environment_options={"n_arms": 2},
                        statistic=last_round_plays_arm_0,
                        learner_options=_DEFAULT_FIRST_PHASE,
                        seed=seed,
                    ),
                ),
            ),
            options=_OPTIONS,
            default_delta=0.0,
        )
    )


_entry("dp-klucb", DPKLUCB, "DP-KLUCB", "KL-UCB", seed=21, rest=1.0)
_entry("dp-imed", DPIMED, "DP-IMED", "IMED", seed=22, rest=0.0)
