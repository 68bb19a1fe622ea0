"""Thompson sampling with Beta priors for stochastic K-armed bandits (Agrawal & Goyal, COLT
2012), and Lazy-DP-TS, its private version with lazy, forgetting epochs (Hu & Hegde, UAI 2022;
Hu, Huang, Mehta & Hegde, arXiv 2102.07929 v3).

**Thompson sampling** (:class:`ThompsonSampling`; Agrawal & Goyal 2012, Algorithm 2). Every arm
starts from a Beta(1, 1) prior with S_a = F_a = 0. Each round every replica draws
theta_a ~ Beta(S_a + 1, F_a + 1) for each arm, plays argmax theta_a (ties to the lowest arm),
observes the reward r in [0, 1] and performs a Bernoulli trial of success probability r (for
r in {0, 1} the trial's outcome is r, no draw): S_a += 1 on success, F_a += 1 on failure. For
Bernoulli rewards this is their Algorithm 1. Not private.

**The draws.** Every replica's Beta variables come from its own generator, for all replicas
in one vectorised call (:class:`~dponline.bandits.replica_draws.ReplicaDraws`: Marsaglia &
Tsang's Gamma method on blocks of each replica's normal and uniform numbers), so replica j's run
does not depend on how many replicas there are.

**Lazy-DP-TS** (:class:`LazyDPTS`; Hu & Hegde 2022, Algorithm 2). Each arm j collects its
rewards in epochs of doubling size 1, 2, 4, ...; when the current epoch holds 2^(r_j) fresh
rewards, its sum gets one fresh Lap(1/eps), the private mean becomes
mu~_j = (sum + Lap(1/eps)) / 2^(r_j) with O_j = 2^(r_j) observations behind it, and the epoch's
rewards are dropped (the private mean always holds exactly one noise variable). Arms with no
private mean yet are pulled first (arm 0, 1, ...: each one's first epoch is its first pull).
Then, each round tau (1-based), every replica draws

    theta_j ~ Beta(mu_j O_j + 1, (1 - mu_j) O_j + 1),
    mu_j = clip(mu~_j + c log(tau) / (eps O_j), 0, 1),

with c = 3 (the paper's optimistic shift), and plays argmax theta_j. ``budget=None`` runs the
same lazy epochs without noise and without the shift (not registered: the registered
non-private reference is Thompson sampling above). The constant ``c`` is an option: the shift is
post-processing, so the guarantee holds for every c (the audit runs c = 0, where one round's
reward visibly moves the draws; at c = 3 and a few rounds every mu_j clips to 1).

**Privacy of Lazy-DP-TS** (Hu & Hegde, Theorem 3; the argument of Azize & Basu 2022, Lemma 1).
Neighbours: reward (loss) sequences that differ in one round j, the whole loss vector of that
round included (the learner reads only the reward of the arm it pulled). Condition on the
actions before round j: the arm pulled at j and its epoch are fixed, and round j's reward
enters exactly one released statistic, that epoch's noisy sum (sensitivity 1 for rewards in
[0, 1]; an epoch cut by the horizon releases nothing). Every other release holds only rewards
equal in both sequences, so given the past releases its law is the same under both: the privacy
loss of all releases is that of one Laplace mechanism of scale 1/eps, eps-DP. The Beta draws use
only the releases and fresh randomness independent of the rewards: post-processing. The Laplace
mechanism is exact, so ``paper`` and ``tight`` coincide
(:class:`~dponline.bandits.dp_phases.RewardSumCalibrator`).

**What was checked against what.** Agrawal & Goyal's algorithms are textbook (the Beta(1, 1)
prior and the Bernoulli trial for rewards in [0, 1]; not re-read here). For Lazy-DP-TS the
abstract of the UAI 2022 paper (PMLR 180, Hu & Hegde) and of arXiv 2102.07929 v3 were read
(regret O(sum_j log T / min(eps, Delta_j)), "dropping observations"); the epochs, the single
Lap(1/eps) on each epoch's sum, the shift 3 log t / (eps O_j), the clipping and the Beta
parameters were read in third-party summaries of the paper only (likely, not certain). Ours:
the reading of t as the round being played, the initial pull of every arm (the first epoch of
each), and ties to the lowest arm.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.dp_phases import calibrate_reward_sums
from dponline.bandits.k_armed import KArmedLearner, arms_of, horizon_for
from dponline.bandits.replica_draws import ReplicaDraws
from dponline.privacy.arguments import (
    ArgumentError,
    checked_int_array,
    checked_nonnegative,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import FeedbackKind
from dponline.registry import AuditCase, LearnerEntry, LearnerTestCase, register_learner
from dponline.rng import RngLike

__all__ = ["DEFAULT_SHIFT", "LazyDPTS", "ThompsonSampling", "arm_1_plays"]

#: c of Lazy-DP-TS's optimistic shift c log(tau) / (eps O_j) (the paper's 3)
DEFAULT_SHIFT = 3.0


class _PosteriorDraws(KArmedLearner):
    """One-round commitments to the argmax of per-replica Beta draws, drawn for every replica
    at once from blocks of each replica's own numbers (:class:`~dponline.bandits.replica_draws.
    ReplicaDraws`, part of the saved state)."""

    anytime_capable: ClassVar[bool] = True

    @property
    def _draws(self) -> ReplicaDraws:
        """The replicas' blocks of numbers (made at the first draw or load)."""
        draws = self.__dict__.get("_replica_draws")
        if draws is None:
            draws = self._replica_draws = ReplicaDraws(self.replicas, 2 * self.n_arms)
        return draws

    @abstractmethod
    def _beta_params(self, rows: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Beta parameters (a, b) of each arm for the replicas ``rows`` at rounds ``tau``."""

    def _draw_argmax(self, rows: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """argmax_a theta_a, theta_a ~ Beta(a_a, b_a), each replica from its own generator."""
        a, b = self._beta_params(rows, tau)
        return np.argmax(self._draws.beta(self._generators, rows, a, b), axis=1)

    @abstractmethod
    def _posterior_state(self) -> dict[str, Any]:
        """The subclass's arrays of the saved state."""

    @abstractmethod
    def _prepare_posterior(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the subclass's part of a saved state; return the function that installs it."""

    def _extra_state(self) -> dict[str, Any]:
        return {**self._draws.state(), **self._posterior_state()}

    def _prepare_extra(self, state: dict[str, Any]) -> Callable[[], None]:
        install_draws = self._draws.prepare_load(state)
        install_posterior = self._prepare_posterior(state)

        def install() -> None:
            install_draws()
            install_posterior()

        return install


class ThompsonSampling(_PosteriorDraws):
    """Thompson sampling with Beta(1, 1) priors (Agrawal & Goyal 2012, Algorithm 2; module
    docstring). Not private.

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds.
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    paper: ClassVar[str] = "Thompson sampling (Agrawal & Goyal 2012, Algorithm 2)"

    def __init__(
        self,
        n_arms: int,
        horizon: int | None,
        *,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        #: S_a, F_a: the successes and failures of the Bernoulli trials of arm a
        self.successes = np.zeros((self.replicas, self.n_arms), dtype=np.int64)
        self.failures = np.zeros((self.replicas, self.n_arms), dtype=np.int64)

    def _beta_params(self, rows: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.successes[rows] + 1.0, self.failures[rows] + 1.0

    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._draw_argmax(rows, t + 1), np.ones(rows.size, dtype=np.int64)

    def _conclude(
        self,
        rows: np.ndarray,
        t: np.ndarray,
        arms: np.ndarray,
        sums: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        """The Bernoulli trial of each replica's reward (one uniform draw where 0 < r < 1)."""
        success = sums >= 1.0
        inside = np.flatnonzero((sums > 0.0) & (sums < 1.0))
        if inside.size:
            gens = self._generators
            u = np.array([gens[i].random() for i in rows[inside].tolist()])
            success[inside] = u < sums[inside]
        self.successes[rows, arms] += success
        self.failures[rows, arms] += ~success

    def _posterior_state(self) -> dict[str, Any]:
        return {"successes": self.successes.copy(), "failures": self.failures.copy()}

    def _prepare_posterior(self, state: dict[str, Any]) -> Callable[[], None]:
        shape = (self.replicas, self.n_arms)
        s = checked_int_array("saved successes", saved_field(state, "successes"), shape, 0)
        f = checked_int_array("saved failures", saved_field(state, "failures"), shape, 0)
        pulls = np.asarray(saved_field(state, "pulls"))
        if pulls.shape == shape and not np.array_equal(s + f, pulls):
            raise ArgumentError("saved successes and failures must add up to the pulls")

        def install() -> None:
            self.successes, self.failures = s, f

        return install


class LazyDPTS(_PosteriorDraws):
    """Lazy-DP-TS (Hu & Hegde 2022, Algorithm 2): doubling epochs of fresh rewards, one
    Lap(1/eps) per epoch sum, Beta draws around the shifted private means (module docstring).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds.
    budget:
        A pure :class:`~dponline.privacy.budget.PrivacyBudget`; ``None`` runs the lazy epochs
        without noise or shift.
    c:
        The constant of the optimistic shift c log(tau) / (eps O_j) (default 3, the paper's).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    paper: ClassVar[str] = "Lazy-DP-TS (Hu & Hegde 2022, Algorithm 2)"

    def __init__(
        self,
        n_arms: int,
        horizon: int | None,
        *,
        budget: PrivacyBudget | None,
        c: float = DEFAULT_SHIFT,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        self.c = checked_nonnegative("c", c)
        calibrate_reward_sums(
            self,
            budget,
            "the reward sum of each arm's lazy epoch (fresh rewards, then dropped)",
            "Hu & Hegde 2022, Theorem 3",
        )
        r, k = self.replicas, self.n_arms
        #: the fresh rewards of the current epoch: their sum and number
        self.buffer_sum = np.zeros((r, k))
        self.buffer_count = np.zeros((r, k), dtype=np.int64)
        #: the size 2^(r_j) the current epoch ends at
        self.epoch_size = np.ones((r, k), dtype=np.int64)
        #: mu~_j and O_j, the last release (O_j = 0 before the first)
        self.private_mean = np.zeros((r, k))
        self.observed = np.zeros((r, k), dtype=np.int64)

    def _released_means(self) -> np.ndarray:
        """mu~_j: each arm's noisy mean of its last epoch (before the shift the draws add)."""
        return np.where(self.observed > 0, self.private_mean, np.nan)

    def shifted_means(self, rows: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """mu_j = clip(mu~_j + c log(tau) / (eps O_j), 0, 1) of the replicas ``rows`` at
        rounds ``tau`` (1-based), shape (rows, K); every arm has a release."""
        o = self.observed[rows].astype(float)
        shift = 0.0
        if math.isfinite(self.epsilon):
            shift = self.c * np.log(tau.astype(float))[:, None] / (self.epsilon * o)
        return np.clip(self.private_mean[rows] + shift, 0.0, 1.0)

    def _beta_params(self, rows: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mu = self.shifted_means(rows, tau)
        o = self.observed[rows]
        return mu * o + 1.0, (1.0 - mu) * o + 1.0

    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """An arm without a release first (its first epoch), else the argmax of the draws."""
        missing = self.observed[rows] == 0
        arms = np.where(missing.any(axis=1), np.argmax(missing, axis=1), -1)
        ready = arms < 0
        if ready.any():
            arms[ready] = self._draw_argmax(rows[ready], t[ready] + 1)
        return arms, np.ones(rows.size, dtype=np.int64)

    def _conclude(
        self,
        rows: np.ndarray,
        t: np.ndarray,
        arms: np.ndarray,
        sums: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        """Add the reward to its epoch; a full epoch is released with one Laplace draw and
        dropped, and the next epoch is twice as long."""
        self.buffer_sum[rows, arms] += sums
        self.buffer_count[rows, arms] += counts
        full = self.buffer_count[rows, arms] == self.epoch_size[rows, arms]
        if not full.any():
            return
        rows, arms = rows[full], arms[full]
        size = self.epoch_size[rows, arms]
        total = self.buffer_sum[rows, arms]
        if self.unit_scale > 0.0:
            total = total + self._noise(rows, self.unit_scale)
        self.private_mean[rows, arms] = total / size
        self.observed[rows, arms] = size
        self.buffer_sum[rows, arms] = 0.0
        self.buffer_count[rows, arms] = 0
        self.epoch_size[rows, arms] = 2 * size

    def _extra_config(self) -> dict[str, Any]:
        return {
            "c": self.c,
            "calibration": self.calibration_name,
            "epsilon": self.epsilon,
            "unit_scale": self.unit_scale,
        }

    def _posterior_state(self) -> dict[str, Any]:
        return {
            "buffer_sum": self.buffer_sum.copy(),
            "buffer_count": self.buffer_count.copy(),
            "epoch_size": self.epoch_size.copy(),
            "private_mean": self.private_mean.copy(),
            "observed": self.observed.copy(),
        }

    def _prepare_posterior(self, state: dict[str, Any]) -> Callable[[], None]:
        shape = (self.replicas, self.n_arms)
        bsum = np.array(
            checked_real_array("saved buffer_sum", saved_field(state, "buffer_sum"), shape)
        )
        bcount = checked_int_array(
            "saved buffer_count", saved_field(state, "buffer_count"), shape, 0
        )
        size = checked_int_array("saved epoch_size", saved_field(state, "epoch_size"), shape, 1)
        mean = np.array(
            checked_real_array("saved private_mean", saved_field(state, "private_mean"), shape)
        )
        observed = checked_int_array("saved observed", saved_field(state, "observed"), shape, 0)
        if np.any(size & (size - 1)) or np.any(bcount >= size):
            raise ArgumentError("saved epoch sizes must be powers of two above buffer_count")
        if np.any(np.where(observed > 0, size != 2 * observed, size != 1)):
            raise ArgumentError("saved observed must be half the epoch size (0 before a release)")
        if np.any(bsum < 0.0) or np.any(bsum > bcount):
            raise ArgumentError("saved buffer_sum must lie in [0, buffer_count]")
        if self.unit_scale == 0.0 and (np.any(mean < 0.0) or np.any(mean > 1.0)):
            raise ArgumentError("saved private_mean of a noiseless learner must lie in [0, 1]")

        def install() -> None:
            self.buffer_sum, self.buffer_count, self.epoch_size = bsum, bcount, size
            self.private_mean, self.observed = mean, observed

        return install


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _thompson(
    env: Any, *, budget: None = None, anytime: bool = False, **kw: Any
) -> ThompsonSampling:
    if budget is not None:
        raise ValueError(f"thompson is not private: its budget must be None, got {budget!r}")
    return ThompsonSampling(arms_of(env), horizon_for(env, anytime), **kw)


def _lazy_dp_ts(
    env: Any, *, budget: PrivacyBudget | None, anytime: bool = False, **kw: Any
) -> LazyDPTS:
    return LazyDPTS(arms_of(env), horizon_for(env, anytime), budget=budget, **kw)


def arm_1_plays(outputs: np.ndarray) -> np.ndarray:
    """How many rounds after the first two played arm 1, outputs (n, T)."""
    return (np.asarray(outputs)[:, 2:] == 1).sum(axis=1).astype(float)


_SETTING = "stochastic K-armed bandit (rewards 1 - loss in [0, 1])"

register_learner(
    LearnerEntry(
        "lazy-dp-ts",
        _lazy_dp_ts,
        paper="Hu & Hegde (2022), Lazy-DP-TS: Thompson sampling on lazy doubling epochs "
        "with one Laplace draw per epoch sum and an optimistic shift",
        setting=_SETTING,
        guarantee=(
            "event-level epsilon-DP (Lap(1/eps) on each arm's epoch sum of fresh rewards, "
            "sensitivity 1; each reward in one released sum; Beta draws are post-processing: "
            "Hu & Hegde 2022, Theorem 3) over reward sequences differing in one round, "
            "rewards 1 - loss in [0, 1]"
        ),
        calibrations=("paper", "tight"),
        private=True,
        anytime=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit",
                environment_options={"n_arms": 3},
                # two arms, eight rounds, no shift (c = 0; the guarantee holds for every c):
                # arm 0's first reward (round 1: loss 0 or 1, the others 1/2) is its private
                # mean until its next epoch of two pulls, and tilts the Beta draws of the
                # rounds after; the statistic counts the rounds that play arm 1
                audit=AuditCase(
                    horizon=8,
                    values=(0.0, 1.0),
                    rest=0.5,
                    coordinates="all",
                    environment="bernoulli_bandit",
                    environment_options={"n_arms": 2},
                    learner_options={"c": 0.0},
                    statistic=arm_1_plays,
                    # the Beta draws are per replica: fewer runs than the default, with a
                    # tenth of the noise still refuted by a wide margin (epsilon_lb ~ 2.8)
                    trials=6_000,
                    pilot_trials=1_500,
                    seed=51,
                ),
            ),
        ),
        options={
            "c": f"constant of the optimistic shift c log t / (eps O) (default {DEFAULT_SHIFT:g})"
        },
        default_delta=0.0,
    )
)

register_learner(
    LearnerEntry(
        "thompson",
        _thompson,
        paper="Thompson sampling with Beta(1, 1) priors (Agrawal & Goyal 2012, Algorithm 2: a "
        "Bernoulli trial of each reward in [0, 1])",
        setting=_SETTING,
        guarantee="none (non-private reference)",
        calibrations=(),
        private=False,
        anytime=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase("bernoulli_bandit", environment_options={"n_arms": 3}, randomised=True),
        ),
        counterpart_of=("lazy-dp-ts",),
    )
)
