"""Private stochastic bandits with adaptive episodes and forgetting: AdaP-UCB and AdaP-KLUCB
(Azize & Basu, NeurIPS 2022, arXiv 2209.02570, Algorithm 1 with the indices of its Eq. 7), and
AdaC-UCB, their zero-concentrated-DP sibling with Gaussian noise (Azize & Basu, arXiv
2309.00557).

**Algorithm 1** (every learner here). Pull each arm once. Then, episode after episode: at the
episode's first round t_l (1-based), play A_l = argmax_a I_a(t_l - 1, alpha) until its pull
count doubles, N_{A_l}(t) = 2 N_{A_l}(t_l - 1) (per-arm doubling). Arm a's index uses only the
rewards of its *last* episode (forgetting): their mean, released once, with noise, when the
episode ends, and reused until the arm's next episode ends. With doubling, the last episode of
an arm pulled N >= 2 times holds N/2 rewards; after the initial pull it holds 1.

**Indices.** n is the number of rewards behind arm a's released mean mu~_a and alpha > 3 (3.1
in the paper's experiments, the default here):

* AdaP-UCB (Eq. 7): I_a = mu~_a + sqrt(alpha log(2 t_l) / (2 n)) + alpha log(t_l) / (eps n);
* AdaP-KLUCB (Eq. 7): I_a = max{q in [0, 1] : kl(mu_breve_a, q) <= alpha log(t_l) / n} with
  mu_breve_a = clip_[0, 1](mu~_a + alpha log(t_l) / (eps n)) (:func:`~dponline.bandits.kl.
  kl_upper`);
* AdaC-UCB (ours, see below): I_a = mu~_a + sqrt(alpha log(t_l) / (2 n)) + sqrt(alpha log(t_l)
  / rho) / n.

Ties go to the lowest arm.

**Noise.** AdaP: mu~_a = mu^_a + Lap(1 / (eps n)), the Laplace mechanism on a mean of n
rewards in [0, 1] (sensitivity 1/n). AdaC: mu~_a = mu^_a + N(0, sigma_n^2), sigma_n =
1 / (n sqrt(2 rho)), the Gaussian mechanism, rho-zCDP for sensitivity 1/n (Bun & Steinke 2016,
Proposition 1.6). The noise of an episode is drawn once, when it ends, from the replica's own
generator (:class:`~dponline.bandits.k_armed.KArmedLearner`).

**Privacy** (Azize & Basu 2022, Lemma 1 and Theorem 6; the same argument for AdaC). Neighbours:
reward (loss) sequences that differ in one round j, the whole loss vector of that round included
(the learner reads only the reward of the arm it pulled). Condition on the actions before round
j: the arm pulled at j and the episode containing j are then fixed, and the reward of round j
enters exactly one released mean, that of this episode (an episode cut by the horizon is never
released). Every other released mean is computed from rewards that are equal in both
sequences, so conditionally on the past releases its distribution is the same under both. The
privacy loss of the whole sequence of releases is therefore that of the one mechanism holding
round j: Laplace with scale 1/(eps n) on a mean of sensitivity 1/n, eps-DP; Gaussian with
sensitivity-to-sigma ratio (1/n) / sigma_n = sqrt(2 rho), the same for every n, so the whole
algorithm has exactly the privacy profile of one Gaussian mechanism of that ratio (rho-zCDP, and
(eps, delta)-DP by the analytic Gaussian mechanism, Balle & Wang 2018, Theorem 8). This last
step is ours: the hockey-stick divergence of the two output laws is the expectation, over the
outputs before the episode holding round j (which fix that episode), of the hockey-stick
divergence of its one Gaussian release, each at most the profile of ratio sqrt(2 rho); the
factors of all other releases are equal under both sequences and integrate out. Indices,
episode lengths (functions of the pull counts, themselves functions of past actions) and actions
are post-processing.

**Calibrations** (:class:`EpisodeCalibrator`).

* AdaP ``paper``: Section 4's noise Lap(2 / (eps N_a(t_l - 1))) and n = N_a(t_l - 1) / 2 in the
  index, literally: after the initial pull (N = 1) that is Lap(2 / eps) on one reward and
  n = 1/2, elsewhere exactly Lap(1 / (eps n)). It proves eps (the initial releases alone eps/2).
* AdaP ``tight``: Lap(1 / (eps n)) with n the true count (1 after the initial pull), the least
  Laplace noise the argument supports (the Laplace mechanism is exact for a mean of rewards in
  [0, 1]); the index with the same n. The paper's noise is already exact after the first
  episode of each arm: the two calibrations differ only there. The index constants are the
  paper's (log(2 t_l) in the Hoeffding term, as printed) in both.
* AdaC ``paper``: the budget's (eps, delta) turned into rho by the conversion rho-zCDP =>
  (rho + 2 sqrt(rho log(1/delta)), delta)-DP (Bun & Steinke 2016, Proposition 1.3):
  rho = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2, sigma_n = 1 / (n sqrt(2 rho)).
  The paper's own conversion could not be read (below); this is the standard one for a
  rho-zCDP algorithm, and n is the true count.
* AdaC ``tight``: the largest rho whose Gaussian mechanism is (eps, delta)-DP exactly:
  sqrt(2 rho) = mu, the analytic Gaussian ratio for (eps, delta)
  (:func:`~dponline.privacy.accounting.gaussian_mu_for`). Both state the epsilon their rho
  proves by the exact profile (the paper calibration's is below the request) and rho.

**What was checked against the papers.** Algorithm 1, Eq. 7 (both indices, with log(2 t_l) in
the Hoeffding term of AdaP-UCB and the clipped mu_breve of AdaP-KLUCB), the noise
Lap(2 / (eps N_a(t_l - 1))), Lemma 1, Theorem 6 and the regret bound of Theorem 7 were read in
the text of the NeurIPS 2022 submission of arXiv 2209.02570 (the camera-ready constants may
differ). Of arXiv 2309.00557 only the abstract could be read (rho-zCDP algorithms built from
"the Gaussian mechanism and adaptive episodes"): the AdaC-UCB index above is **ours**, built as
AdaP-UCB's with the Gaussian tail in place of the Laplace one: P(mu^ - mu <= -sqrt(alpha log t /
(2 n))) <= t^-alpha (Hoeffding) and P(Z >= sigma_n sqrt(2 alpha log t)) <= t^-alpha for
Z ~ N(0, sigma_n^2) (Chernoff), with sigma_n sqrt(2 alpha log t) = sqrt(alpha log t / rho) / n.
No regret bound is claimed for it here.

**Regret** (not enforced, for reports): Theorem 7, for rewards in [0, 1] and alpha > 3,
Reg_T(AdaP-UCB) <= sum_{a: Delta_a > 0} (16 alpha / min(Delta_a, eps) log T + alpha / (alpha -
3)) (:func:`adap_ucb_regret_bound`); Theorem 8 bounds AdaP-KLUCB for Bernoulli rewards with
constants C1(alpha), C2 the paper does not give.

``budget=None`` runs the non-private counterpart: the same episodes and forgetting, no noise and
no privacy term in the index. Every learner here commits to an arm for an episode, so
:meth:`~dponline.bandits.k_armed.KArmedLearner.play_stochastic` jumps whole episodes.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.k_armed import KArmedLearner, arms_of, horizon_for
from dponline.bandits.kl import kl_upper
from dponline.privacy.accounting import gaussian_epsilon, gaussian_mu_for, laplace_epsilon
from dponline.privacy.arguments import (
    ArgumentError,
    checked_int_array,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.noise import GaussianNoise, LaplaceNoise
from dponline.protocol import FeedbackKind, checked_budget
from dponline.registry import AuditCase, LearnerEntry, LearnerTestCase, register_learner
from dponline.rng import RngLike

__all__ = [
    "AdaCUCB",
    "AdaPKLUCB",
    "AdaPUCB",
    "AdaptiveEpisodes",
    "EpisodeCalibrator",
    "adap_ucb_regret_bound",
    "bun_steinke_rho",
    "last_arm_is_first",
]

#: alpha of the paper's experiments (its theorems need alpha > 3)
DEFAULT_ALPHA = 3.1


def bun_steinke_rho(epsilon: float, delta: float) -> float:
    """The rho whose zCDP converts to exactly (epsilon, delta)-DP by Bun & Steinke (2016),
    Proposition 1.3 (epsilon = rho + 2 sqrt(rho log(1/delta))):
    rho = (sqrt(log(1/delta) + epsilon) - sqrt(log(1/delta)))^2."""
    log_inv = math.log(1.0 / delta)
    return (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2


def adap_ucb_regret_bound(gaps: Any, horizon: int, epsilon: float, alpha: float = 3.1) -> float:
    """Theorem 7 of Azize & Basu (2022) for AdaP-UCB, rewards in [0, 1], alpha > 3: the sum
    over the arms with Delta_a > 0 of 16 alpha log T / min(Delta_a, eps) + alpha / (alpha - 3)."""
    if not alpha > 3:
        raise ValueError(f"Theorem 7 needs alpha > 3, got {alpha!r}")
    d = np.asarray(gaps, dtype=float)
    d = d[d > 0]
    per_arm = 16.0 * alpha * math.log(horizon) / np.minimum(d, epsilon) + alpha / (alpha - 3.0)
    return float(per_arm.sum())


@dataclass(frozen=True)
class EpisodeCalibrator:
    """The noise of one released episode mean, for AdaP (``mechanism="laplace"``) or AdaC
    (``"gaussian"``): the calibration's ``noise`` is the scale of a mean of ONE reward (Laplace
    b_1 or Gaussian sigma_1); a mean of n rewards gets b_1 / n or sigma_1 / n (the module
    docstring's calibrations and proofs)."""

    mechanism: str

    def __post_init__(self) -> None:
        if self.mechanism not in ("laplace", "gaussian"):
            raise ValueError(f"mechanism must be 'laplace' or 'gaussian', got {self.mechanism!r}")

    def _laplace(self, budget: PrivacyBudget, calibration: str) -> Calibration:
        eps = budget.epsilon
        b1 = 1.0 / eps
        if calibration == "paper":
            how = (
                "Azize & Basu (2022) Lemma 1 / Theorem 6: Lap(2 / (eps N_a)) on the mean of the "
                "N_a / 2 rewards of arm a's last episode (Lap(2 / eps) on the single reward "
                "after the initial pull, which proves eps / 2 there); each reward enters one "
                "released mean (parallel composition), actions are post-processing"
                "; no horizon enters the noise, so this holds at every round t (anytime)"
            )
            # a mean of n >= 2 rewards: sensitivity 1/n, scale 2 b_1 / (2 n); the initial
            # release: one reward (sensitivity 1) at scale 2 b_1
            first, later = laplace_epsilon(1.0, 2.0 * b1), laplace_epsilon(0.5, b1 / 2.0)
            proven = max(first, later)
        else:
            how = (
                "Laplace mechanism with the exact sensitivity 1/n of a mean of n rewards in "
                "[0, 1]: Lap(1 / (eps n)) on each episode's mean; each reward enters one "
                "released mean (Azize & Basu 2022, Lemma 1 / Theorem 6: parallel composition), "
                "actions are post-processing"
                "; no horizon enters the noise, so this holds at every round t (anytime)"
            )
            proven = laplace_epsilon(1.0, b1)
        g = budget.prove(proven, 0.0, how)
        return Calibration(LaplaceNoise(b1), g, calibration, "adaptive episodes (Laplace)")

    def _gaussian(self, budget: PrivacyBudget, calibration: str) -> Calibration:
        budget.require_delta("the Gaussian mechanism of AdaC")
        eps, delta = budget.epsilon, budget.delta
        if calibration == "paper":
            rho = bun_steinke_rho(eps, delta)
            source = (
                f"rho = {rho:.6g} from the budget by Bun & Steinke (2016) Prop. 1.3 "
                "(eps = rho + 2 sqrt(rho log(1/delta)))"
            )
        else:
            mu = gaussian_mu_for(eps, delta)
            rho = mu * mu / 2.0
            source = (
                f"rho = {rho:.6g}, the largest whose Gaussian mechanism is (eps, delta)-DP "
                "exactly (analytic Gaussian mechanism, Balle & Wang 2018)"
            )
        ratio = math.sqrt(2.0 * rho)
        how = (
            f"{source}; N(0, 1 / (2 rho n^2)) on the mean of the n rewards of an arm's last "
            "episode (sensitivity 1/n, rho-zCDP); each reward enters one released mean and the "
            "sensitivity-to-sigma ratio sqrt(2 rho) is the same for every episode, so the whole "
            "run has the privacy profile of one Gaussian mechanism of that ratio (epsilon "
            "accounted exactly at delta); actions are post-processing"
            "; no horizon enters the noise, so this holds at every round t (anytime)"
        )
        g = budget.prove(gaussian_epsilon(delta, ratio), delta, how, rho=rho)
        noise = GaussianNoise(1.0 / ratio)
        return Calibration(noise, g, calibration, "adaptive episodes (Gaussian)", (("rho", rho),))

    def paper(self, budget: PrivacyBudget) -> Calibration:
        if self.mechanism == "laplace":
            return self._laplace(budget, "paper")
        return self._gaussian(budget, "paper")

    def tight(self, budget: PrivacyBudget) -> Calibration:
        if self.mechanism == "laplace":
            return self._laplace(budget, "tight")
        return self._gaussian(budget, "tight")


class AdaptiveEpisodes(KArmedLearner):
    """Algorithm 1 of Azize & Basu (2022): per-arm doubling episodes, forgetting, one noisy
    mean per episode (module docstring). Subclasses give the index (:meth:`index`).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds.
    budget:
        A :class:`~dponline.privacy.budget.PrivacyBudget` (pure for AdaP, delta > 0 for
        AdaC), calibrated by :class:`EpisodeCalibrator`; ``None`` runs the non-private
        counterpart (no noise, no privacy term in the index).
    alpha:
        The confidence exponent alpha (default 3.1; the paper's theorems need alpha > 3).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    anytime_capable: ClassVar[bool] = True

    #: the noise of the released means: "laplace" (AdaP) or "gaussian" (AdaC)
    mechanism: ClassVar[str] = "laplace"

    def __init__(
        self,
        n_arms: int,
        horizon: int | None,
        *,
        budget: PrivacyBudget | None,
        alpha: float = DEFAULT_ALPHA,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        self.alpha = checked_positive("alpha", alpha)
        budget = checked_budget(budget)
        self.calibration = (
            None if budget is None else calibrate(EpisodeCalibrator(self.mechanism), budget)
        )
        if self.calibration is None:
            self.privacy = None
            self.epsilon, self.rho, self.unit_scale = math.inf, math.inf, 0.0
            self.calibration_name = "none"
        else:
            assert budget is not None
            self.privacy = self.calibration.guarantee
            self.epsilon = budget.epsilon
            self.rho = dict(self.calibration.details).get("rho", math.inf)
            self.unit_scale = float(self.calibration.noise.scale)
            self.calibration_name = self.calibration.calibration
        #: the paper's n = N_a / 2 (AdaP's ``paper`` calibration) instead of the true count
        self.halved_pulls = self.mechanism == "laplace" and self.calibration_name == "paper"
        r, k = self.replicas, self.n_arms
        self.private_mean = np.zeros((r, k))
        self.last_count = np.zeros((r, k), dtype=np.int64)

    # --- Algorithm 1 ----------------------------------------------------------------------------

    def _effective_n(self, pulls: np.ndarray, last_count: np.ndarray) -> np.ndarray:
        """The n of the index and the noise: N_a / 2 (AdaP paper) or the true count."""
        if self.halved_pulls:
            return pulls / 2.0
        return last_count.astype(float)

    def index(self, rows: np.ndarray, t_l: np.ndarray) -> np.ndarray:
        """I_a(t_l - 1, alpha) of the replicas ``rows`` for episodes starting at rounds
        ``t_l`` (1-based), shape (rows, K); every arm pulled at least once."""
        n = self._effective_n(self.pulls[rows], self.last_count[rows])
        log_t = np.log(t_l.astype(float))[:, None]
        return self._index(self.private_mean[rows], n, log_t, t_l.astype(float)[:, None])

    def _released_means(self) -> np.ndarray:
        """Each arm's noisy mean of its last episode (the statistic its index reads)."""
        return np.where(self.last_count > 0, self.private_mean, np.nan)

    @abstractmethod
    def _index(
        self, mean: np.ndarray, n: np.ndarray, log_t: np.ndarray, t_l: np.ndarray
    ) -> np.ndarray:
        """The index of each arm from its private mean, its episode's samples ``n``, log t_l
        and t_l (eq. 7 of the paper, per learner)."""

    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The initial pull of every arm (one round each), then argmax of the index for an
        episode that doubles the arm's pulls."""
        arms = self._first_unpulled(rows)
        lengths = np.ones(rows.size, dtype=np.int64)
        ready = arms < 0
        if ready.any():
            sub = rows[ready]
            chosen = np.argmax(self.index(sub, t[ready] + 1), axis=1)
            arms[ready] = chosen
            lengths[ready] = self.pulls[sub, chosen]
        return arms, lengths

    def _conclude(
        self,
        rows: np.ndarray,
        t: np.ndarray,
        arms: np.ndarray,
        sums: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        """Release the episode's noisy mean (one draw per replica, its own generator)."""
        mean = sums / counts
        if self.unit_scale > 0.0:
            # the paper's N_a / 2 equals the episode's count after the first pull (0.5 there);
            # never more than the count, whatever state the learner was resumed from
            n = np.minimum(self._effective_n(self.pulls[rows, arms], counts), counts)
            mean = mean + self._noise(rows, self.unit_scale / n, self.mechanism)
        self.private_mean[rows, arms] = mean
        self.last_count[rows, arms] = counts

    # --- state ----------------------------------------------------------------------------------

    def _extra_config(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "calibration": self.calibration_name,
            "epsilon": self.epsilon,
            "rho": self.rho,
            "unit_scale": self.unit_scale,
        }

    def _extra_state(self) -> dict[str, Any]:
        return {"private_mean": self.private_mean.copy(), "last_count": self.last_count.copy()}

    def _prepare_extra(self, state: dict[str, Any]) -> Callable[[], None]:
        shape = (self.replicas, self.n_arms)
        mean = np.array(
            checked_real_array("saved private_mean", saved_field(state, "private_mean"), shape)
        )
        count = checked_int_array("saved last_count", saved_field(state, "last_count"), shape, 0)
        # the doubling schedule: an arm's concluded pulls c are 0, 1, 2, 4, ...; its last
        # episode held c / 2 of them (the first pull: 1); a running episode has max(c, 1) rounds
        done, running, length = self._saved_schedule(state)
        power = (done >= 1) & ((done & (done - 1)) == 0)
        if np.any((done > 0) & ~power):
            raise ArgumentError("saved pulls do not follow the doubling episodes")
        if np.any(count != np.where(done >= 2, done // 2, done)):
            raise ArgumentError("saved last_count is not the last episode's length of its arm")
        arm = np.asarray(saved_field(state, "arm"), dtype=np.int64)
        if np.any(length != np.maximum(done[running, arm[running]], 1)):
            raise ArgumentError("saved running episode is not the length its arm's pulls give")
        if self.unit_scale == 0.0 and (np.any(mean < 0.0) or np.any(mean > 1.0)):
            raise ArgumentError("saved private_mean of a noiseless learner must lie in [0, 1]")

        def install() -> None:
            self.private_mean, self.last_count = mean, count

        return install


class AdaPUCB(AdaptiveEpisodes):
    """AdaP-UCB (Azize & Basu 2022, Algorithm 1 with the UCB index of Eq. 7): module
    docstring.

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds (``None``: no horizon, the anytime learner).
    budget:
        A pure :class:`~dponline.privacy.budget.PrivacyBudget` (delta = 0): epsilon-DP over
        reward sequences that differ in one round (``privacy`` states it with its
        derivation); ``None`` runs the non-private counterpart.
    alpha:
        The confidence exponent (default 3.1).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.

    Examples
    --------
    >>> from dponline.privacy import PrivacyBudget
    >>> from dponline.environments.k_armed import KArmedBandit
    >>> learner = AdaPUCB(3, 1000, budget=PrivacyBudget(0.5), replicas=4, rng=0)
    >>> str(learner.privacy).split(";")[0]
    '0.5-DP (pure)'
    >>> run = learner.play_stochastic(KArmedBandit([0.2, 0.5, 0.9], horizon=1000, rng=1), 1000)
    >>> run.pulls.shape
    (4, 3)
    """

    paper: ClassVar[str] = "AdaP-UCB (Azize & Basu 2022, Algorithm 1, Eq. 7)"

    def _index(
        self, mean: np.ndarray, n: np.ndarray, log_t: np.ndarray, t_l: np.ndarray
    ) -> np.ndarray:
        out = mean + np.sqrt(self.alpha * np.log(2.0 * t_l) / (2.0 * n))
        if self.unit_scale > 0.0:
            out = out + self.alpha * log_t / (self.epsilon * n)
        return out


class AdaPKLUCB(AdaptiveEpisodes):
    """AdaP-KLUCB (Azize & Basu 2022, Algorithm 1 with the KL-UCB index of Eq. 7): module
    docstring.

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds (``None``: no horizon, the anytime learner).
    budget:
        A pure :class:`~dponline.privacy.budget.PrivacyBudget` (delta = 0): epsilon-DP over
        reward sequences that differ in one round (``privacy`` states it with its
        derivation); ``None`` runs the non-private counterpart.
    alpha:
        The confidence exponent (default 3.1).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    paper: ClassVar[str] = "AdaP-KLUCB (Azize & Basu 2022, Algorithm 1, Eq. 7)"

    def _index(
        self, mean: np.ndarray, n: np.ndarray, log_t: np.ndarray, t_l: np.ndarray
    ) -> np.ndarray:
        shifted = mean
        if self.unit_scale > 0.0:
            shifted = mean + self.alpha * log_t / (self.epsilon * n)
        return kl_upper(np.clip(shifted, 0.0, 1.0), self.alpha * log_t / n)


class AdaCUCB(AdaptiveEpisodes):
    """AdaC-UCB: Algorithm 1 with Gaussian noise, rho-zCDP (Azize & Basu, arXiv 2309.00557;
    the index is ours, module docstring).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds (``None``: no horizon, the anytime learner).
    budget:
        A :class:`~dponline.privacy.budget.PrivacyBudget` with delta in (0, 1): rho-zCDP,
        stated with the (epsilon, delta) asked, over reward sequences that differ in one
        round (``privacy`` states it with its derivation); ``None`` runs the non-private
        counterpart.
    alpha:
        The confidence exponent (default 3.1).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.

    Examples
    --------
    >>> from dponline.privacy import PrivacyBudget
    >>> learner = AdaCUCB(3, 1000, budget=PrivacyBudget(1.0, 1e-6), rng=0)
    >>> learner.privacy.delta
    1e-06
    """

    paper: ClassVar[str] = "AdaC-UCB (Azize & Basu, arXiv 2309.00557), index ours"
    mechanism: ClassVar[str] = "gaussian"

    def _index(
        self, mean: np.ndarray, n: np.ndarray, log_t: np.ndarray, t_l: np.ndarray
    ) -> np.ndarray:
        out = mean + np.sqrt(self.alpha * log_t / (2.0 * n))
        if self.unit_scale > 0.0:
            out = out + np.sqrt(self.alpha * log_t / self.rho) / n
        return out


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _factory(cls: type[AdaptiveEpisodes]) -> Callable[..., AdaptiveEpisodes]:
    def build(
        env: Any, *, budget: PrivacyBudget | None, anytime: bool = False, **kw: Any
    ) -> AdaptiveEpisodes:
        return cls(arms_of(env), horizon_for(env, anytime), budget=budget, **kw)

    build.__name__ = f"_{cls.__name__.lower()}"
    return build


def last_arm_is_first(outputs: np.ndarray) -> np.ndarray:
    """1 where the last round played arm 0, outputs (n, T): after the initial pulls, the first
    index decision, which arm 0's first reward (the changed round) moves."""
    return (np.asarray(outputs)[:, -1] == 0).astype(float)


def _audit(seed: int, **learner_options: Any) -> AuditCase:
    """Eight arms, nine rounds: each arm pulled once, then the argmax of the indices, in which
    only the arms' released means differ (the same n and t). Round 1's loss (arm 0's only
    reward) is 0 or 1, the others 0 (reward 1): arm 0 wins when its noise beats the largest of
    seven others by 0 or by 1, the widest spread rewards in [0, 1] allow, and the largest of
    seven noises puts that threshold in arm 0's tail, where a Laplace noise shows its whole
    ratio. Half the noise is refuted (at half the noise: AdaP-UCB 1.73, AdaP-KLUCB 1.79,
    AdaC-UCB's rho 0.040 against 0.028; with two arms at the loss 1/2 they were 0.93, 1.14 and
    0.024)."""
    return AuditCase(
        horizon=9,
        values=(0.0, 1.0),
        rest=0.0,
        coordinates="all",
        environment="bernoulli_bandit",
        environment_options={"n_arms": 8},
        learner_options=learner_options,
        statistic=last_arm_is_first,
        trials=20_000,
        pilot_trials=5_000,
        seed=seed,
    )


_SETTING = "stochastic K-armed bandit (rewards 1 - loss in [0, 1])"
_GUARANTEE = (
    "event-level epsilon-DP (Lap(1/(eps n)) on the mean of each episode's n rewards, "
    "sensitivity 1/n; the paper calibration's first pull of an arm Lap(2/eps), n = N_a / 2; "
    "each reward in one released mean: Azize & Basu 2022 Lemma 1, Theorem 6) "
    "over reward sequences differing in one round, rewards 1 - loss in [0, 1]"
)
_OPTIONS = {"alpha": "confidence exponent alpha (default 3.1; the theorems need alpha > 3)"}

register_learner(
    LearnerEntry(
        "adap-ucb",
        _factory(AdaPUCB),
        paper="Azize & Basu (2022), Algorithm 1 with the AdaP-UCB index (Eq. 7)",
        setting=_SETTING,
        guarantee=_GUARANTEE,
        calibrations=("paper", "tight"),
        private=True,
        anytime=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit", environment_options={"n_arms": 3}, audit=_audit(11)
            ),
        ),
        options=_OPTIONS,
        default_delta=0.0,
    )
)

register_learner(
    LearnerEntry(
        "adap-klucb",
        _factory(AdaPKLUCB),
        paper="Azize & Basu (2022), Algorithm 1 with the AdaP-KLUCB index (Eq. 7)",
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
                horizon=48,
                environment_options={"n_arms": 3},
                # 48 rounds and a small alpha: at alpha = 3.1, eps = 1 and a few dozen rounds
                # the shifted means of every arm clip to 1, the indices tie and every replica
                # plays arm 0 (the lowest of the tied), so the run would show nothing of the
                # noise (and 24 rounds leave two of the four replicas on the same arms)
                learner_options={"alpha": 0.5},
                audit=_audit(12, alpha=0.1),
            ),
        ),
        options=_OPTIONS,
        default_delta=0.0,
    )
)

register_learner(
    LearnerEntry(
        "adac-ucb",
        _factory(AdaCUCB),
        paper="Azize & Basu (arXiv 2309.00557), AdaC-UCB: Algorithm 1 with Gaussian noise "
        "(rho-zCDP); its index here is ours",
        setting=_SETTING,
        guarantee=(
            "event-level rho-zCDP and (epsilon, delta)-DP (Gaussian on each episode's mean, "
            "sensitivity 1/n, the same sensitivity-to-sigma ratio every episode: one Gaussian "
            "mechanism's profile) over reward sequences differing in one round, rewards in [0, 1]"
        ),
        calibrations=("paper", "tight"),
        private=True,
        anytime=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit", environment_options={"n_arms": 3}, audit=_audit(13)
            ),
        ),
        options=_OPTIONS,
        default_delta=1e-6,
    )
)
