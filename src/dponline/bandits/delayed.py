"""Allocations whose rewards arrive later: a K-armed learner behind a queue of rewards per arm
(the black-box reduction QPM-D of Joulani, Gyorgy & Szepesvari, "Online Learning under Delayed
Feedback", ICML 2013, for stochastic bandits).

A trial allocates the next participant before the last one's outcome is in; a recommender
shows the next item before the last click is logged. :class:`~dponline.bandits.river_style.
RiverPolicy` takes one pull and its reward as a round, so its second pull before the update
returns the same arm and no reward can be recorded for it. :class:`DelayedPolicy` offers the
same ``pull(arm_ids)`` / ``update(arm_id, reward)`` with any number of pulls waiting:

* the learner's request for an arm is answered from that arm's queue of rewards received and
  not yet used, oldest first, for as long as the queue holds one (each answer is a round of
  the learner); the first request its arm's queue cannot answer is the arm pulled, and it is
  pulled again at every ``pull()`` until a reward of that arm arrives;
* ``update(arm_id, reward)`` gives the reward of one of the arm's pulls still waiting (any:
  the rewards of one arm are exchangeable in a stochastic bandit) and queues it;
  ``cancel(arm_id)`` says one of them will never come (a participant lost to follow-up).

Regret: the learner sees each arm's rewards as it would without delays, only later, while the
allocations made in the meantime repeat the arm it asked for. For stochastic rewards Joulani
et al. show that delay then adds to the regret rather than multiplying it (their abstract; we
have not read the bound's terms, so none is quoted here: docs/private-bandits.md measures
it). Against an adversary the reduction has no such guarantee: it is for stochastic arms.

Privacy (ours, for the learner's own guarantee). A reward's value reaches the learner once, as
the input of the round in which a request for its arm is answered from the queue (or never);
which queued reward answers which round, and which arm is pulled for the next allocation,
depend on the learner's past decisions and on the times the rewards arrive, not on their
values. So two reward tables that differ in one allocation's reward give the learner input
streams that differ in one round, the streams chosen adaptively from its past releases as a
bandit's always are (its proof covers that: each release's noise hides the one reward it
reads given the releases before), and every allocation is post-processing of its releases and
of the arrival times: the learner's guarantee holds for the allocations. A person's k rewards
may reach the learner in any k of its rounds, adjacent ones included, so a person's guarantee
must hold for any k rounds (``min_separation`` 1); one that needs its rounds b > 1 apart is
refused. **Not covered**: which pulls get an outcome, and when. Outcomes that arrive sooner or
later by their value (a success reported the same day, a failure a week later), or that never
arrive by their value (a failure lost to follow-up: :meth:`DelayedPolicy.cancel` is an outcome
that never arrives), leak through the allocations: cancelling participant 1's failure and
recording a success makes DP-IMED's second allocation tell the two apart every time (epsilon
infinite; a review's check). The guarantee assumes both the delays and the cancellations are
independent of the rewards. Audited on a small case (``tests/bandits/test_delayed.py``:
DP-IMED with delays, not refuted at its claim, refuted at a tenth of its noise: an audit that
catches an error of about ten times the noise, not two).

Only the stochastic suite's learners (:class:`~dponline.bandits.k_armed.KArmedLearner`) are
taken, fresh: the reduction is for stochastic arms, and a saved request is checked against the
learner's own decision, which their states record.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from dponline.bandits.river_style import RiverPolicy, checked_reward, released_means_by_arm
from dponline.privacy.arguments import (
    ArgumentError,
    checked_int_array,
    checked_nonnegative_int,
    checked_real_array,
    saved_field,
)
from dponline.protocol import BanditFeedback, Learner, past_horizon_error

__all__ = ["DelayedPolicy"]

#: what the guarantee's derivation gains behind the queues
DELAYED_DERIVATION = (
    "; behind DelayedPolicy's queues (rewards arriving later, ours: each reward is one round's "
    "input of the learner, its rounds chosen from the past releases and the arrival times; "
    "which rewards arrive, and when, is not protected and is assumed independent of the "
    "rewards: a cancellation or a delay chosen by the outcome leaks it)"
)


class DelayedPolicy:
    """``pull`` / ``update`` around ``learner`` for rewards that arrive later, any number of
    pulls waiting (module docstring).

    ``arm_ids``: the arms' identifiers, in the order of the learner's arm indices; ``build``: a
    function returning a fresh learner of the same configuration, for :meth:`clone`
    (:meth:`from_registry` sets it).
    """

    def __init__(
        self,
        learner: Learner,
        arm_ids: Sequence[Hashable],
        *,
        build: Callable[[], Learner] | None = None,
    ) -> None:
        from dponline.bandits.k_armed import KArmedLearner

        # the checks of a river-style policy (a learner that plays arms, one replica, one arm
        # index per identifier)
        RiverPolicy(learner, arm_ids)
        if not isinstance(learner, KArmedLearner):
            raise TypeError(
                "DelayedPolicy runs a learner of the stochastic K-armed suite (KArmedLearner: "
                f"dp-imed, dp-klucb, adap-ucb, ...), got {type(learner).__name__}: the queues "
                "reorder each arm's rewards, which only stochastic arms allow"
            )
        if learner.t > 0 or getattr(learner, "_acted", False):
            raise ValueError(
                f"DelayedPolicy needs a fresh learner, got one in round {learner.t + 1}: "
                "continue a saved policy with load_state_dict"
            )
        privacy = learner.privacy
        if privacy is not None and privacy.min_separation > 1:
            raise ArgumentError(
                f"the learner protects {privacy.unit}, but behind the queues a person's rewards "
                "may reach it in any rounds, adjacent ones included: build it with "
                "min_separation=1 (a person's guarantee for any of its rounds)"
            )
        self.learner = learner
        self._ids = list(arm_ids)
        self._index = {a: i for i, a in enumerate(self._ids)}
        self._build = build
        k = len(self._ids)
        self._queues: list[deque[float]] = [deque() for _ in range(k)]
        self._pending = np.zeros(k, dtype=np.int64)
        self._counts = np.zeros(k, dtype=np.int64)
        #: the arm the learner has asked for and not yet been answered (None between rounds)
        self._requested: int | None = None
        self._n = 0

    @classmethod
    def from_registry(
        cls, name: str, arm_ids: Sequence[Hashable], horizon: int | None, **kwargs: Any
    ) -> DelayedPolicy:
        """The registered learner ``name`` built as
        :meth:`RiverPolicy.from_registry <dponline.bandits.river_style.RiverPolicy.from_registry>`
        builds it (``horizon``: the rewards it learns from; ``None``, its anytime version;
        ``epsilon``, ``calibration``, ``seed`` and the learner's options)."""
        river = RiverPolicy.from_registry(name, arm_ids, horizon, **kwargs)
        return cls(river.learner, arm_ids, build=river._build)

    # --- the policy ---------------------------------------------------------------------------

    def pull(self, arm_ids: Iterable[Hashable]) -> Hashable:
        """The arm of the next allocation; it waits for its reward (:meth:`update`) or its
        cancellation (:meth:`cancel`). ``arm_ids`` must be the policy's arms (in any order)."""
        offered = list(arm_ids)
        if len(offered) != len(self._ids) or set(offered) != set(self._ids):
            raise ValueError(
                f"this policy plays the arms {self._ids!r}; pull() was offered {offered!r}"
            )
        while True:
            if self._requested is None:
                horizon = getattr(self.learner, "horizon", None)
                if horizon is not None and self.learner.t >= horizon:
                    error = past_horizon_error(type(self.learner).__name__, horizon, self.learner.t)
                    raise type(error)(
                        f"{error}: it has learned from {horizon} rewards; a stream without a "
                        "known end needs a policy built with horizon=None"
                    )
                arm = int(np.asarray(self.learner.act()).reshape(-1)[0])
                if not 0 <= arm < len(self._ids):
                    raise RuntimeError(
                        f"the learner played arm index {arm}, outside its {len(self._ids)}"
                    )
                self._requested = arm
            arm = self._requested
            if not self._queues[arm]:
                break
            reward = self._queues[arm].popleft()  # a round of the learner, from the queue
            self.learner.observe(BanditFeedback(np.array([1.0 - reward])))
            self._requested = None
            self._n += 1
        self._pending[arm] += 1
        self._counts[arm] += 1
        return self._ids[arm]

    def update(self, arm_id: Hashable, reward: Any) -> None:
        """The reward (in [0, 1]; a boolean is a click) of one of ``arm_id``'s pulls still
        waiting; the learner reads it when it next asks for that arm."""
        arm = self._waiting(arm_id, "update")
        value = checked_reward(reward, self.learner)
        self._queues[arm].append(value)
        self._pending[arm] -= 1

    def cancel(self, arm_id: Hashable) -> None:
        """One of ``arm_id``'s pulls waiting will have no reward (a participant lost to
        follow-up): it stops waiting and the learner never reads it."""
        self._pending[self._waiting(arm_id, "cancel")] -= 1

    def _waiting(self, arm_id: Hashable, what: str) -> int:
        if arm_id not in self._index:
            raise ValueError(f"{what}() for arm {arm_id!r}, not one of {self._ids!r}")
        arm = self._index[arm_id]
        if self._pending[arm] == 0:
            raise ValueError(
                f"{what}() for arm {arm_id!r}, but none of its pulls waits for a reward"
            )
        return arm

    # --- what it tells -------------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Rewards the learner has learned from so far (river reads ``_n``)."""
        return self._n

    @property
    def pending(self) -> dict[Hashable, int]:
        """Pulls of each arm waiting for their rewards."""
        return {a: int(self._pending[i]) for i, a in enumerate(self._ids)}

    @property
    def queued(self) -> int:
        """Rewards received and not yet read by the learner."""
        return sum(len(q) for q in self._queues)

    @property
    def ranking(self) -> list[Hashable]:
        """The arms, most pulled first (ties in the order of ``arm_ids``): a function of the
        policy's private decisions and the arrival times only."""
        order = sorted(range(len(self._ids)), key=lambda i: (-self._counts[i], i))
        return [self._ids[i] for i in order]

    def released_means(self) -> dict[Hashable, float]:
        """Each arm's mean as the learner last released it under its guarantee (NaN before
        any): publishable at no further cost (a non-private learner's exact means)."""
        return released_means_by_arm(self.learner, self._ids)

    @property
    def privacy(self) -> Any:
        """The learner's guarantee, its derivation saying what the queues add (``None`` for a
        non-private learner)."""
        privacy = self.learner.privacy
        if privacy is None:
            return None
        return dataclasses.replace(privacy, derivation=privacy.derivation + DELAYED_DERIVATION)

    # --- saved state ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The learner's saved state with the policy's: the rewards queued (as secret as the
        data), the pulls waiting and made per arm, the arm asked for and ``n``."""
        return {
            "learner": self.learner.state_dict(),
            "queues": [list(q) for q in self._queues],
            "pending": self._pending.copy(),
            "counts": self._counts.copy(),
            "requested": self._requested,
            "n": self._n,
        }

    def load_state_dict(self, state: Any) -> None:
        """Continue from a :meth:`state_dict` of a policy over the same arms with an identically
        built learner. Everything is checked before anything changes: the learner's part by the
        learner, the rewards in [0, 1], each arm's pulls at least those waiting and queued,
        ``n`` the learner's rounds, and an arm asked for exactly when the learner has acted
        (the arm it chose, where its state says)."""
        k = len(self._ids)
        saved_learner = saved_field(state, "learner")
        install = self.learner.prepare_load(saved_learner)
        queues_raw = saved_field(state, "queues")
        if not isinstance(queues_raw, (list, tuple)) or len(queues_raw) != k:
            raise ArgumentError(f"saved queues must be {k} lists of rewards, got {queues_raw!r}")
        queues = []
        for i, q in enumerate(queues_raw):
            values = checked_real_array(f"saved queue {i}", np.asarray(q, dtype=float))
            if values.ndim != 1 or np.any((values < 0.0) | (values > 1.0)):
                raise ArgumentError(f"saved queue {i} must hold rewards in [0, 1], got {q!r}")
            queues.append(deque(float(v) for v in values))
        pending = checked_int_array("saved pending", saved_field(state, "pending"), (k,), 0)
        counts = checked_int_array("saved counts", saved_field(state, "counts"), (k,), 0)
        n = checked_nonnegative_int("saved n", saved_field(state, "n"))
        lengths = np.array([len(q) for q in queues])
        if np.any(counts < pending + lengths):
            raise ArgumentError(
                "saved counts must be at least each arm's pulls waiting plus its rewards queued"
            )
        if n != int(saved_learner["t"]):
            raise ArgumentError(f"saved n = {n} is not the learner's rounds {saved_learner['t']}")
        requested = saved_field(state, "requested")
        if requested is not None:
            requested = int(checked_int_array("saved requested", np.asarray(requested), (), 0, k))
        if (requested is not None) != bool(saved_learner["acted"]):
            raise ArgumentError(
                "saved requested arm and the learner's decision disagree: an arm is asked for "
                "exactly when the learner has acted this round"
            )
        if requested is not None:  # a K-armed learner's state records its decision
            decided = int(np.asarray(saved_field(saved_learner, "arm")).reshape(-1)[0])
            if decided != requested:
                raise ArgumentError(
                    f"saved requested arm {requested} is not the learner's decision {decided}"
                )
        install()
        self._queues = queues
        self._pending = pending.copy()
        self._counts = counts.copy()
        self._requested = requested
        self._n = n

    def clone(self) -> DelayedPolicy:
        """A fresh policy of the same configuration."""
        if self._build is None:
            raise TypeError(
                "clone() needs the recipe of the learner: build the policy with "
                "DelayedPolicy.from_registry(...) or pass build= to the constructor"
            )
        return DelayedPolicy(self._build(), self._ids, build=self._build)

    def __repr__(self) -> str:
        waiting = int(self._pending.sum())
        return (
            f"DelayedPolicy({type(self.learner).__name__}, arms={self._ids!r}, n={self._n}, "
            f"waiting={waiting}, queued={self.queued})"
        )
