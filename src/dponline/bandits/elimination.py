"""Successive elimination for stochastic K-armed bandits: the non-private algorithm of Even-Dar,
Mannor & Mansour (2006) and DP-SE, its private version with fresh data per epoch (Sajed &
Sheffet, ICML 2019, arXiv 1905.09383).

**Epochs, round robin** (both learners, :class:`RoundRobinEpochs`). A replica keeps a set S of
active arms. An epoch pulls every arm of S the same number r of times, round robin in the
order of the arms' indices (slot j of the epoch plays the (j mod |S|)-th active arm), and ends
with an elimination step that removes arms from S (the best one always stays). Once |S| = 1 the
last arm is played to the horizon. An epoch is |S| r rounds of one-round commitments when the
learner is played round by round; :meth:`RoundRobinEpochs.play_stochastic` jumps a whole epoch
(or what is left of it) per vectorised iteration against a stochastic environment, drawing the
reward sums of every arm's pulls at once (the same state and, for deterministic rewards, the
same numbers as round by round: the noise is drawn at an epoch's end, per replica, arm by arm).
Successive elimination's epochs are single sweeps; the fast path merges the sweeps whose
eliminations provably remove nothing whatever their rewards
(:meth:`SuccessiveElimination._quiet_epochs`, ours), so it too moves by large stretches.

**Successive elimination** (:class:`SuccessiveElimination`; Even-Dar, Mannor & Mansour 2006,
"Successive Elimination" with unknown biases). Epochs of one pull per active arm; after the
t-th epoch every active arm has t pulls and mu^_a is the mean of all of them. With
alpha_t = sqrt(log(c K t^2 / delta) / t), c = 4, the arms with
max_{b in S} mu^_b - mu^_a >= 2 alpha_t are eliminated. delta (the option ``beta`` here)
defaults to 1/T. Deterministic given the rewards; not private.

**DP-SE** (:class:`DPSE`; Sajed & Sheffet 2019). Epoch e = 1, 2, ... with Delta_e = 2^-e and
s = |S|:

    R_e = max(32 log(8 s e^2 / beta) / Delta_e^2, 8 log(4 s e^2 / beta) / (eps Delta_e)) + 1,

every arm of S pulled r = ceil(R_e) times, using only this epoch's rewards:
mu~_a = (mean of its r epoch rewards) + Lap(1 / (eps r)); with
h_e = sqrt(log(8 s e^2 / beta) / (2 R_e)) (Hoeffding) and c_e = log(4 s e^2 / beta) / (R_e eps)
(Laplace tail), every arm with max_{b in S} mu~_b - mu~_a > 2 h_e + 2 c_e is eliminated.
beta defaults to 1/T (the experiments of Azize & Basu 2022 and of the public implementations),
so DP-SE is not anytime. ``budget=None`` runs the same epochs without noise and with
R_e = 32 log(8 s e^2 / beta) / Delta_e^2 + 1, c_e = 0 (not registered: the registered
non-private reference is Even-Dar's algorithm).

**Privacy of DP-SE** (Sajed & Sheffet; the argument of Azize & Basu 2022, Lemma 1).
Neighbours: reward (loss) sequences that differ in one round j, the whole loss vector of that
round included (the learner reads only the reward of the arm it pulled). Condition on the
actions before round j: the arm pulled at j and its epoch are fixed, and round j's reward
enters exactly one released statistic, that arm's noisy mean of that epoch (a mean of r rewards
in [0, 1]: sensitivity 1/r, Laplace scale 1/(eps r)); an epoch cut by the horizon releases
nothing. Every other released mean holds only rewards equal in both sequences, so the privacy
loss of all releases is that of one Laplace mechanism: eps-DP. Epoch lengths (functions of e
and |S|, themselves functions of past releases), eliminations and actions are post-processing.
The Laplace mechanism is exact here, so ``paper`` and ``tight`` coincide
(:class:`~dponline.bandits.dp_phases.RewardSumCalibrator`).

**What was checked against what.** Sajed & Sheffet's body could not be reached; their abstract
(ICML 2019) was read: successive elimination with a private stopping rule, meeting the lower
bounds of Lai & Robbins and of Shariff & Sheffet (2018). The constants above (R_e, r = ceil(R_e),
the noise Lap(1/(eps r)) on fresh epoch means, h_e, c_e and the rule "> 2 h_e + 2 c_e") were read
in a public implementation (keirp/private-bandits, solvers/private/dp_successive_elimination.py,
commit 9777d4e), which agrees with a second one; the regret order
O(sum_a log T / Delta_a + K log T / eps) is quoted in Hu, Huang & Mehta (arXiv 2102.07929). With
these R_e, h_e <= Delta_e / 8 and c_e <= Delta_e / 8 (ours: from the two terms of the max).
Even-Dar et al.'s alpha_t (with c = 4) is as we recall their paper, not read here.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.dp_phases import calibrate_reward_sums
from dponline.bandits.k_armed import KArmedLearner, StochasticArms, StochasticRounds
from dponline.privacy.arguments import (
    ArgumentError,
    checked_int_array,
    checked_probability,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import FeedbackKind
from dponline.registry import AuditCase, LearnerEntry, LearnerTestCase, register_learner
from dponline.rng import RngLike

__all__ = [
    "DPSE",
    "EVEN_DAR_C",
    "RoundRobinEpochs",
    "SuccessiveElimination",
    "dp_se_constants",
    "edge_loss",
    "midpoint_loss",
]

#: the constant c of Even-Dar et al.'s alpha_t = sqrt(log(c K t^2 / delta) / t)
EVEN_DAR_C = 4.0


def dp_se_constants(
    epoch: Any, active: Any, beta: float, epsilon: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R_e, h_e, c_e) of DP-SE's epoch ``epoch`` (e >= 1) with ``active`` = |S| arms
    (module docstring); ``epsilon = inf`` gives the non-private epochs (no Laplace term in R_e,
    c_e = 0). Broadcast over ``epoch`` and ``active``."""
    e = np.asarray(epoch, dtype=float)
    s = np.asarray(active, dtype=float)
    gap = 2.0**-e
    log_h = np.log(8.0 * s * e * e / beta)
    log_c = np.log(4.0 * s * e * e / beta)
    hoeffding = 32.0 * log_h / (gap * gap)
    laplace = 8.0 * log_c / (epsilon * gap) if math.isfinite(epsilon) else 0.0 * hoeffding
    r_e = np.maximum(hoeffding, laplace) + 1.0
    h_e = np.sqrt(log_h / (2.0 * r_e))
    c_e = log_c / (r_e * epsilon) if math.isfinite(epsilon) else 0.0 * r_e
    return r_e, h_e, c_e


class RoundRobinEpochs(KArmedLearner):
    """Epochs of round-robin pulls of the active arms, each ended by an elimination step
    (module docstring). Subclasses give the pulls per arm of a new epoch
    (:meth:`_epoch_pulls`) and the elimination (:meth:`_eliminate`), and call
    :meth:`_start_epochs` on every replica at the end of their constructor."""

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        r, k = self.replicas, self.n_arms
        #: S: the active arms of each replica
        self.active = np.ones((r, k), dtype=bool)
        #: e: the current epoch (1-based)
        self.epoch = np.zeros(r, dtype=np.int64)
        #: r: the pulls of every active arm in the current epoch (0 once one arm is left)
        self.epoch_pulls = np.zeros(r, dtype=np.int64)
        #: rounds played in the current epoch
        self.position = np.zeros(r, dtype=np.int64)
        #: the reward sum of every arm in the current epoch
        self.epoch_sums = np.zeros((r, k))
        self._refresh_order(np.arange(r))

    def _refresh_order(self, rows: np.ndarray) -> None:
        """|S| and the active arms in index order (first |S| entries) of ``rows``, derived
        from ``active``."""
        if not hasattr(self, "_size"):
            self._size = np.zeros(self.replicas, dtype=np.int64)
            self._order = np.zeros((self.replicas, self.n_arms), dtype=np.int64)
        active = self.active[rows]
        self._size[rows] = active.sum(axis=1)
        # stable sort of "inactive" flags puts the active arms first, in index order
        self._order[rows] = np.argsort(~active, axis=1, kind="stable")

    # --- the hooks ------------------------------------------------------------------------------

    @abstractmethod
    def _epoch_pulls(self, rows: np.ndarray) -> np.ndarray:
        """The pulls per active arm of the epochs starting for ``rows`` (``self.epoch`` and
        ``self.active`` already set), ints >= 1 and at most the horizon."""

    @abstractmethod
    def _eliminate(self, rows: np.ndarray) -> None:
        """The epochs of ``rows`` are complete: update ``self.active[rows]``."""

    def _quiet_epochs(self, rows: np.ndarray) -> np.ndarray:
        """For ``rows`` at the start of an epoch, a number J >= 1 of epochs such that the
        eliminations at the ends of the next J - 1 epochs remove no arm whatever the rewards:
        the fast path then plays J epochs in one stretch (their reward sums drawn at once) and
        runs only the J-th elimination. Default 1 (every elimination runs); a subclass whose
        elimination reads ``epoch_sums`` must keep it."""
        return np.ones(rows.size, dtype=np.int64)

    # --- epochs ---------------------------------------------------------------------------------

    def _start_epochs(self, rows: np.ndarray) -> None:
        self._refresh_order(rows)
        self.epoch[rows] += 1
        self.position[rows] = 0
        self.epoch_sums[rows] = 0.0
        several = rows[self._size[rows] >= 2]
        self.epoch_pulls[rows] = 0
        if several.size:
            self.epoch_pulls[several] = self._epoch_pulls(several)

    def _end_epochs(self, rows: np.ndarray) -> None:
        self._eliminate(rows)
        self._start_epochs(rows)

    def _slot_arms(self, rows: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """The arm each replica of ``rows`` plays in slot ``slots`` of its epoch: the
        (slot mod |S|)-th active arm in index order."""
        return self._order[rows, slots % self._size[rows]]

    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The next slot of the epoch for one round, or the last arm to the horizon (for one
        round when asked at the horizon: ``act()`` after round T is post-processing)."""
        size = self._size[rows]
        arms = self._slot_arms(rows, self.position[rows])
        lengths = np.where(size == 1, np.maximum(self.horizon - t, 1), 1)
        return arms, lengths

    def _conclude(
        self,
        rows: np.ndarray,
        t: np.ndarray,
        arms: np.ndarray,
        sums: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        """A round of the epoch was played (nothing to do for the last arm's commitment)."""
        epoch = self._size[rows] >= 2
        if not epoch.all():
            rows, arms, sums, counts = rows[epoch], arms[epoch], sums[epoch], counts[epoch]
        if not rows.size:
            return
        self.epoch_sums[rows, arms] += sums
        self.position[rows] += counts
        done = rows[self.position[rows] == self.epoch_pulls[rows] * self._size[rows]]
        if done.size:
            self._end_epochs(done)

    # --- the fast path: whole epochs ------------------------------------------------------------

    def play_stochastic(self, env: StochasticArms, rounds: int) -> StochasticRounds:
        """Play ``rounds`` rounds of the stochastic environment ``env`` with every replica, a
        whole epoch (or what is left of it, or of a running commitment) per vectorised
        iteration: the pulls of each arm in the epoch's round robin are counted, and the
        environment draws the reward sum of each arm's pulls at once. Returns each replica's
        pseudo-regret and pulls over these rounds, as
        :meth:`~dponline.bandits.k_armed.KArmedLearner.play_stochastic` does, and like it,
        refuses to go on after a call that failed part of the way."""
        n, gap = self._stochastic_call(env, rounds)
        r, k = self.replicas, self.n_arms
        regret = np.zeros(r)
        pulls = np.zeros((r, k), dtype=np.int64)
        if n == 0:
            return StochasticRounds(regret, pulls)
        start = self.t
        played = np.zeros(r, dtype=np.int64)
        try:
            while True:
                live = played < n
                if not live.any():
                    break
                size = self._size
                last = np.flatnonzero(live & (self.left == 0) & (size == 1))
                if last.size:
                    self._start_commitments(last, start + played[last])
                held = np.flatnonzero(live & (self.left > 0))
                sweep = np.flatnonzero(live & (self.left == 0))
                counts = np.zeros((r, k), dtype=np.int64)
                held_n = np.minimum(self.left[held], n - played[held])
                counts[held, self.arm[held]] = held_n
                if sweep.size:
                    s = size[sweep].copy()
                    pos = self.position[sweep]
                    epoch_len = self.epoch_pulls[sweep] * s
                    m = np.minimum(epoch_len - pos, n - played[sweep])
                    # whole epochs whose eliminations are certified void, merged (ending at an
                    # epoch's end, whose elimination runs)
                    merged = np.ones(sweep.size, dtype=np.int64)
                    fresh = pos == 0
                    if fresh.any():
                        fits = (n - played[sweep[fresh]]) // epoch_len[fresh]
                        merged[fresh] = np.maximum(
                            np.minimum(self._quiet_epochs(sweep[fresh]), fits), 1
                        )
                        m = np.where(merged > 1, merged * epoch_len, m)
                    counts[sweep] = self._round_robin_counts(sweep, pos, m)
                sums = self._reward_sums(env, counts)
                self.pulls += counts
                self.sums += sums
                pulls += counts
                regret += counts @ gap
                if held.size:
                    held_sums = sums[held, self.arm[held]]
                    self.episode_sum[held] += held_sums
                    self.episode_count[held] += held_n
                    self.left[held] -= held_n
                    played[held] += held_n
                    ending = held[self.left[held] == 0]
                    if ending.size:
                        self._close(ending, start + played[ending])
                if sweep.size:
                    self.arm[sweep] = self._slot_arms(sweep, pos + m - 1)
                    self.epoch_sums[sweep] += sums[sweep]
                    self.position[sweep] += m
                    played[sweep] += m
                    skipped = merged > 1  # all but the last of the merged epochs end quietly
                    if skipped.any():
                        rows = sweep[skipped]
                        self.epoch[rows] += merged[skipped] - 1
                        self.position[rows] = epoch_len[skipped]
                    done = sweep[self.position[sweep] == epoch_len]
                    if done.size:
                        self._end_epochs(done)
        except BaseException as exc:
            self._refuse_to_go_on(exc)
            raise
        self._end_rounds(n)
        return StochasticRounds(regret, pulls)

    def _round_robin_counts(self, rows: np.ndarray, pos: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The pulls of each arm in slots pos .. pos + m - 1 of the epochs of ``rows``: the
        active arm of rank i is played in the slots j with j mod |S| = i, of which
        max(0, ceil((x - i) / |S|)) lie below x."""
        active = self.active[rows]
        rank = np.cumsum(active, axis=1) - 1
        size = active.sum(axis=1)[:, None]

        def below(x: np.ndarray) -> np.ndarray:
            return np.maximum(0, (x[:, None] - rank + size - 1) // size)

        return np.where(active, below(pos + m) - below(pos), 0)

    def _reward_sums(self, env: StochasticArms, counts: np.ndarray) -> np.ndarray:
        """The environment's reward sums of ``counts`` (replicas, K) pulls, one call per arm
        pulled, each checked to be finite and within [0, count]."""
        r, k = counts.shape
        sums = np.zeros((r, k))
        for a in np.flatnonzero(counts.any(axis=0)):
            col = counts[:, a]
            got = checked_real_array(
                "environment reward sums",
                env.reward_sums(np.full(r, a, dtype=np.int64), col.copy()),
                (r,),
            )
            if np.any((got < 0.0) | (got > col)):
                bad = int(np.flatnonzero((got < 0.0) | (got > col))[0])
                raise ValueError(
                    f"environment reward sum {got[bad]!r} of {col[bad]} pulls lies outside "
                    "[0, count]: rewards must lie in [0, 1]"
                )
            sums[:, a] = got
        return sums

    # --- state ----------------------------------------------------------------------------------

    def _extra_state(self) -> dict[str, Any]:
        return {
            "active": self.active.copy(),
            "epoch": self.epoch.copy(),
            "epoch_pulls": self.epoch_pulls.copy(),
            "position": self.position.copy(),
            "epoch_sums": self.epoch_sums.copy(),
        }

    def _prepare_extra(self, state: dict[str, Any]) -> Callable[[], None]:
        r, k = self.replicas, self.n_arms
        active = np.asarray(saved_field(state, "active"))
        if active.shape != (r, k) or active.dtype != bool:
            raise ArgumentError(f"saved active must be a boolean array of shape {(r, k)}")
        if np.any(active.sum(axis=1) < 1):
            raise ArgumentError("saved active leaves a replica without an arm")
        epoch = checked_int_array("saved epoch", saved_field(state, "epoch"), (r,), 1)
        pulls = checked_int_array(
            "saved epoch_pulls", saved_field(state, "epoch_pulls"), (r,), 0, self.horizon + 1
        )
        position = checked_int_array("saved position", saved_field(state, "position"), (r,), 0)
        sums = np.array(
            checked_real_array("saved epoch_sums", saved_field(state, "epoch_sums"), (r, k))
        )
        size = active.sum(axis=1)
        if np.any((size >= 2) != (pulls >= 1)):
            raise ArgumentError("saved epoch_pulls must be >= 1 exactly while two arms are active")
        if np.any(position >= np.maximum(pulls * size, 1)):
            raise ArgumentError("saved position lies past the end of its epoch")
        if np.any(sums < 0.0) or np.any(sums > position[:, None]) or np.any(sums[~active] != 0):
            raise ArgumentError("saved epoch_sums must lie in [0, position] on active arms")

        def install() -> None:
            self.active, self.epoch, self.epoch_pulls = active.copy(), epoch, pulls
            self.position, self.epoch_sums = position, sums
            self._refresh_order(np.arange(r))

        return install


class SuccessiveElimination(RoundRobinEpochs):
    """Successive elimination (Even-Dar, Mannor & Mansour 2006), non-private: one pull of
    every active arm per epoch, then the arms with max mu^ - mu^_a >= 2 alpha_t go (module
    docstring).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds.
    beta:
        The confidence of alpha_t, the paper's delta (default 1/T; 1/2 for T = 1). Named beta,
        as DP-SE's, because delta is the privacy budget's everywhere else: a ``delta=1e-6``
        meant for a sweep's private learners is refused here rather than taken as a confidence.
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner` (no randomness is drawn).
    """

    paper: ClassVar[str] = "Successive Elimination (Even-Dar, Mannor & Mansour 2006)"

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        beta: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        default = min(1.0 / self.horizon, 0.5)
        self.beta = default if beta is None else checked_probability("beta", beta)
        self._start_epochs(np.arange(self.replicas))

    def alpha_t(self, t: Any) -> np.ndarray:
        """alpha_t = sqrt(log(c K t^2 / beta) / t) after t pulls of every active arm (the
        paper's delta is beta here)."""
        t = np.asarray(t, dtype=float)
        return np.sqrt(np.log(EVEN_DAR_C * self.n_arms * t * t / self.beta) / t)

    def _epoch_pulls(self, rows: np.ndarray) -> np.ndarray:
        return np.ones(rows.size, dtype=np.int64)

    def _eliminate(self, rows: np.ndarray) -> None:
        active = self.active[rows]
        pulls = self.pulls[rows]
        mean = np.where(active, self.sums[rows] / np.maximum(pulls, 1), -np.inf)
        t = pulls[np.arange(rows.size), np.argmax(active, axis=1)]
        best = mean.max(axis=1, keepdims=True)
        keep = active & (best - mean < 2.0 * self.alpha_t(t)[:, None])
        self.active[rows] = keep

    def _quiet_epochs(self, rows: np.ndarray) -> np.ndarray:
        """The epochs (sweeps) whose eliminations cannot fire, from the current means (ours).
        After t sweeps every active arm has t pulls; with D the largest gap between active
        means, j more sweeps of rewards in [0, 1] leave every gap at most (D t + j) / (t + j),
        which grows with j, while alpha_(t+j) falls (log(c K t^2 / delta) > 2 here). So the
        eliminations after sweeps t + 1 .. t + J - 1 remove nothing when
        (D t + J - 1) / (t + J - 1) < 2 alpha_(t+J-1); J is the largest such (at most T),
        found by doubling and bisection."""
        active = self.active[rows]
        pulls = self.pulls[rows]
        t = pulls[np.arange(rows.size), np.argmax(active, axis=1)].astype(float)
        mean = self.sums[rows] / np.maximum(pulls, 1)
        gap = np.where(active, mean, -np.inf).max(axis=1) - np.where(active, mean, np.inf).min(
            axis=1
        )

        def quiet(j: np.ndarray) -> np.ndarray:
            u = t + j - 1.0
            with np.errstate(divide="ignore", invalid="ignore"):
                ok = (gap * t + j - 1.0) / u < 2.0 * self.alpha_t(u)
            return ok & (t >= 1.0)

        lo = np.ones(rows.size)
        hi = np.full(rows.size, 2.0)
        cap = float(self.horizon)
        grow = quiet(hi) & (hi <= cap)
        while grow.any():
            lo = np.where(grow, hi, lo)
            hi = np.where(grow, 2.0 * hi, hi)
            grow = grow & quiet(hi) & (hi <= cap)
        while np.any(hi - lo > 1.0):
            mid = np.floor((lo + hi) / 2.0)
            ok = quiet(mid) & (mid <= cap)
            lo = np.where(ok, mid, lo)
            hi = np.where(ok, hi, mid)
        return lo.astype(np.int64)

    def _extra_config(self) -> dict[str, Any]:
        return {"beta": self.beta}


class DPSE(RoundRobinEpochs):
    """DP-SE (Sajed & Sheffet 2019): epochs of ceil(R_e) pulls of every active arm, fresh
    epoch means with Lap(1/(eps r)), elimination beyond 2 h_e + 2 c_e (module docstring).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds.
    budget:
        A pure :class:`~dponline.privacy.budget.PrivacyBudget`; ``None`` runs the epochs
        without noise (module docstring).
    beta:
        The failure probability beta (default 1/T; 1/2 for T = 1).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    paper: ClassVar[str] = "DP-SE (Sajed & Sheffet 2019, private successive elimination)"

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        beta: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        default = min(1.0 / self.horizon, 0.5)
        self.beta = default if beta is None else checked_probability("beta", beta)
        calibrate_reward_sums(
            self,
            budget,
            "the reward sum of each arm's epoch (fresh rewards only)",
            "Sajed & Sheffet 2019; Azize & Basu 2022, Lemma 1",
        )
        self._start_epochs(np.arange(self.replicas))

    def constants(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(R_e, h_e, c_e) of the current epochs of ``rows``."""
        size = self.active[rows].sum(axis=1)
        return dp_se_constants(self.epoch[rows], size, self.beta, self.epsilon)

    def _epoch_pulls(self, rows: np.ndarray) -> np.ndarray:
        r_e, _, _ = self.constants(rows)
        return np.minimum(np.ceil(r_e), self.horizon).astype(np.int64)

    def _eliminate(self, rows: np.ndarray) -> None:
        active = self.active[rows]
        r = self.epoch_pulls[rows].astype(float)
        mean = self.epoch_sums[rows] / r[:, None]
        if self.unit_scale > 0.0:
            for a in range(self.n_arms):  # arm by arm: each replica's draws in arm order
                on = np.flatnonzero(active[:, a])
                if on.size:
                    mean[on, a] += self._noise(rows[on], self.unit_scale / r[on])
        _, h_e, c_e = self.constants(rows)
        mean = np.where(active, mean, -np.inf)
        best = mean.max(axis=1, keepdims=True)
        keep = active & (best - mean <= (2.0 * h_e + 2.0 * c_e)[:, None])
        self.active[rows] = keep

    def _extra_config(self) -> dict[str, Any]:
        return {
            "beta": self.beta,
            "calibration": self.calibration_name,
            "epsilon": self.epsilon,
            "unit_scale": self.unit_scale,
        }


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _arms_of(env: Any) -> int:
    return int(getattr(env, "n_arms", env.dim))


def _successive_elimination(env: Any, *, budget: None = None, **kw: Any) -> SuccessiveElimination:
    if budget is not None:
        raise ValueError(
            f"successive-elimination is not private: its budget must be None, got {budget!r}"
        )
    return SuccessiveElimination(_arms_of(env), env.horizon, **kw)


def _dp_se(env: Any, *, budget: PrivacyBudget | None, **kw: Any) -> DPSE:
    return DPSE(_arms_of(env), env.horizon, budget=budget, **kw)


def last_round_plays_arm_1(outputs: np.ndarray) -> np.ndarray:
    """1 where the last round played arm 1, outputs (n, T)."""
    return (np.asarray(outputs)[:, -1] == 1).astype(float)


#: the audit's beta: epoch 1 of two arms is then 2 x 445 rounds
_AUDIT_BETA = 0.5


def _first_epoch(arms: int, beta: float, epsilon: float) -> tuple[float, float]:
    """(r, 2 h_1 + 2 c_1): the first epoch's pulls per arm and elimination threshold."""
    r_e, h_e, c_e = dp_se_constants(1, arms, beta, epsilon)
    return float(np.ceil(r_e)), 2.0 * h_e + 2.0 * c_e


def midpoint_loss(arms: int = 2, beta: float = _AUDIT_BETA, epsilon: float = 1.0) -> float:
    """The loss, every round but one, of an arm whose first epoch DP-SE's elimination threshold
    2 h_1 + 2 c_1 (``arms`` active, ``beta``, ``epsilon``) cuts half way, against a reference
    arm of loss 0: with the one round's reward 1 and 0 the gap of the arm's epoch mean to the
    reference's is (1 - reward + (r - 1) rest) / r, so rest = (r threshold - 1/2) / (r - 1)
    puts the threshold at the mid point of the two gaps (the one-run audit's streams)."""
    r, threshold = _first_epoch(arms, beta, epsilon)
    return float((r * threshold - 0.5) / (r - 1.0))


def edge_loss(arms: int = 2, beta: float = _AUDIT_BETA, epsilon: float = 1.0) -> float:
    """As :func:`midpoint_loss`, but rest = r threshold / (r - 1) puts the threshold at the gap
    of the one round's reward 1 (the gap of reward 0 is 1 / r larger): the elimination is then
    a threshold at 0 or -1 / r on the two noises' difference, the edge of the change, where
    the many-run audit refutes half the noise (1.14 against 0.86 at the mid point)."""
    r, threshold = _first_epoch(arms, beta, epsilon)
    return float(r * threshold / (r - 1.0))


_SETTING = "stochastic K-armed bandit (rewards 1 - loss in [0, 1])"

_DP_SE_ENTRY = register_learner(
    LearnerEntry(
        "dp-se",
        _dp_se,
        paper="Sajed & Sheffet (2019), DP-SE: successive elimination on fresh epochs with "
        "Laplace noise on the epoch means (constants of the public implementations)",
        setting=_SETTING,
        guarantee=(
            "event-level epsilon-DP (Lap(1/(eps r)) on each arm's fresh epoch mean of r "
            "rewards, sensitivity 1/r; each reward in one released mean, parallel "
            "composition) over reward sequences differing in one round, rewards 1 - loss "
            "in [0, 1]"
        ),
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit",
                environment_options={"n_arms": 3},
                # its first epoch lasts longer than the case's 24 rounds: a round robin that
                # draws nothing yet, the same arms in every replica
                randomised=False,
                # two arms, the first epoch (445 pulls each at beta = 1/2) and the round after
                # it: round 1's loss of arm 0 is 0 or 1, its other losses the value that puts
                # the elimination threshold at the epoch mean of round 1's reward 1 (arm 1's
                # losses are 0); the last round plays arm 1 when arm 0 was eliminated
                audit=AuditCase(
                    horizon=891,
                    values=(0.0, 1.0),
                    rest=edge_loss(),
                    coordinates="first",
                    environment="bernoulli_bandit",
                    environment_options={"n_arms": 2},
                    learner_options={"beta": _AUDIT_BETA},
                    statistic=last_round_plays_arm_1,
                    # 891 rounds a run: fewer runs than the default, still far from the
                    # margin (a tenth of the noise decides the elimination almost surely)
                    trials=5_000,
                    pilot_trials=1_000,
                    seed=31,
                ),
            ),
        ),
        options={"beta": "failure probability beta (default 1/T)"},
        default_delta=0.0,
    )
)

register_learner(
    LearnerEntry(
        "successive-elimination",
        _successive_elimination,
        paper="Successive Elimination (Even-Dar, Mannor & Mansour 2006), unknown biases: "
        "alpha_t = sqrt(log(4 K t^2 / delta) / t)",
        setting=_SETTING,
        guarantee="none (non-private reference)",
        calibrations=(),
        private=False,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            # 24 rounds are too few for an elimination (alpha_t > 1/2): a round robin, the
            # same arms in every replica
            LearnerTestCase(
                "bernoulli_bandit", environment_options={"n_arms": 3}, randomised=False
            ),
        ),
        options={"beta": "the confidence of alpha_t, the paper's delta (default 1/T)"},
        counterpart_of=("dp-se",),
    )
)
