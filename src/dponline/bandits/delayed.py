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
* every pull gets a ticket (:attr:`DelayedPolicy.last_ticket`, the allocation's index);
  ``update(arm_id, reward, ticket=...)`` records that pull's reward, once (a duplicate log is
  refused), and without a ticket the reward of the arm's oldest pull still waiting (the
  rewards of one arm are exchangeable in a stochastic bandit); ``cancel(arm_id, ticket=...)``
  says it will never come (a participant lost to follow-up);
* ``hold=D`` makes the timing independent of the outcomes: a pull's reward reaches the queue
  exactly D allocations after the pull, however early it was recorded, and a reward not
  recorded by then is dropped (counted in :attr:`DelayedPolicy.late`; refused if it comes
  later); updates and cancellations then name their pull's ticket (the order outcomes are
  recorded in would otherwise decide the order the learner reads them in). With D beyond the
  longest time an outcome takes to be known (a non-click's time-out), what the learner reads
  and when no longer depends on the outcomes.

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
that never arrives), leak through the allocations: for DP-IMED over two arms with
``first_phase=1``, cancelling participant 1's outcome or recording a success makes the next
three allocations AAA or BBB, every one of 30 seeds (epsilon infinite; a review's check).
The guarantee assumes both the delays and the cancellations are independent of the rewards,
and says so in its ``assumes`` (printed with it); with ``hold=D`` it assumes only that whether
an outcome is later than D allocations, or cancelled, does not depend on it. Audited on a
small case (``tests/bandits/test_delayed.py``: DP-IMED with delays, not refuted at its claim,
refuted at a tenth of its noise: an audit that catches an error of about ten times the noise,
not two).

Only the stochastic suite's learners (:class:`~dponline.bandits.k_armed.KArmedLearner`) are
taken, fresh: the reduction is for stochastic arms, and a saved request is checked against the
learner's own decision, which their states record.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from dponline.bandits.river_style import (
    RiverPolicy,
    ask_arm,
    check_offered,
    check_saved_arms,
    checked_decision,
    checked_reward,
    released_means_by_arm,
)
from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_int_array,
    checked_nonnegative_int,
    saved_field,
)
from dponline.protocol import BanditFeedback, Learner

__all__ = ["DelayedPolicy"]

#: what the guarantee's derivation gains behind the queues
DELAYED_DERIVATION = (
    "; behind DelayedPolicy's queues (rewards arriving later, ours: each reward is one round's "
    "input of the learner, its rounds chosen from the past releases and the times rewards "
    "reach the queues)"
)

#: what the guarantee assumes behind the queues, without a hold and with one
ASSUMES_ANY = (
    "each outcome is recorded, late or never (cancelled), independently of its value "
    "(DelayedPolicy; hold=D removes the timing from this)"
)
ASSUMES_HOLD = (
    "whether an outcome is recorded within {hold} allocations of its pull, or cancelled, does "
    "not depend on its value (DelayedPolicy, hold={hold})"
)


class DelayedPolicy:
    """``pull`` / ``update`` around ``learner`` for rewards that arrive later, any number of
    pulls waiting (module docstring).

    ``arm_ids``: the arms' identifiers, in the order of the learner's arm indices; ``hold``:
    rewards reach the learner's queues exactly ``hold`` allocations after their pulls (a
    reward not recorded by then is dropped), or as soon as they are recorded (``None``, the
    default); ``build``: a function returning a fresh learner of the same configuration, for
    :meth:`clone` (:meth:`from_registry` sets it).
    """

    def __init__(
        self,
        learner: Learner,
        arm_ids: Sequence[Hashable],
        *,
        hold: int | None = None,
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
        if hold is not None and (isinstance(hold, bool) or not isinstance(hold, (int, np.integer))):
            raise ArgumentError(f"hold must be a whole number of allocations, got {hold!r}")
        self.hold = None if hold is None else checked_count("hold", hold)
        self._ids = list(arm_ids)
        self._index = {a: i for i, a in enumerate(self._ids)}
        self._build = build
        k = len(self._ids)
        self._queues: list[deque[float]] = [deque() for _ in range(k)]
        #: ticket -> arm of the pulls whose rewards have not reached the queues
        self._waiting: dict[int, int] = {}
        #: ticket -> reward recorded and held until its pull is ``hold`` allocations old
        self._held: dict[int, float] = {}
        self._counts = np.zeros(k, dtype=np.int64)
        #: the arm the learner has asked for and not yet been answered (None between rounds)
        self._requested: int | None = None
        self._n = 0
        self._allocations = 0
        self._late = 0

    @classmethod
    def from_registry(
        cls,
        name: str,
        arm_ids: Sequence[Hashable],
        horizon: int | None,
        *,
        hold: int | None = None,
        **kwargs: Any,
    ) -> DelayedPolicy:
        """The registered learner ``name`` built as
        :meth:`RiverPolicy.from_registry <dponline.bandits.river_style.RiverPolicy.from_registry>`
        builds it (``horizon``: the rewards it learns from; ``None``, its anytime version;
        ``epsilon``, ``calibration``, ``seed`` and the learner's options), behind queues with
        ``hold``."""
        river = RiverPolicy.from_registry(name, arm_ids, horizon, **kwargs)
        return cls(river.learner, arm_ids, hold=hold, build=river._build)

    # --- the policy ---------------------------------------------------------------------------

    def pull(self, arm_ids: Iterable[Hashable]) -> Hashable:
        """The arm of the next allocation (its ticket: :attr:`last_ticket`); it waits for its
        reward (:meth:`update`) or its cancellation (:meth:`cancel`). ``arm_ids`` must be the
        policy's arms (in any order)."""
        check_offered(self._ids, arm_ids)
        if self.hold is not None:
            self._release_held()
        while True:
            if self._requested is None:
                self._requested = ask_arm(
                    self.learner,
                    len(self._ids),
                    ": it has learned from {horizon} rewards; a stream without a known end needs "
                    "a policy built with horizon=None",
                )
            arm = self._requested
            if not self._queues[arm]:
                break
            reward = self._queues[arm][0]  # a round of the learner, from the queue
            self.learner.observe(BanditFeedback(np.array([1.0 - reward])))
            self._queues[arm].popleft()  # read: gone (kept if observe refused it)
            self._requested = None
            self._n += 1
        self._waiting[self._allocations] = arm
        self._allocations += 1
        self._counts[arm] += 1
        return self._ids[arm]

    def _release_held(self) -> None:
        """Every pull ``hold`` allocations old: its reward into its arm's queue, or, not
        recorded, dropped (late); in the order of the pulls."""
        assert self.hold is not None
        due = self._allocations - self.hold
        dropped = 0
        for ticket in sorted(t for t in self._waiting if t <= due):
            arm = self._waiting.pop(ticket)
            if ticket in self._held:
                self._queues[arm].append(self._held.pop(ticket))
            else:
                dropped += 1
        if dropped:
            if self._late == 0:
                warnings.warn(
                    f"DelayedPolicy: {dropped} outcome(s) not recorded within hold={self.hold} "
                    "allocations of their pulls were dropped (counted in .late); the guarantee "
                    "assumes lateness does not depend on the outcome: a hold beyond the longest "
                    "reporting time keeps it so",
                    UserWarning,
                    stacklevel=3,
                )
            self._late += dropped

    def update(self, arm_id: Hashable, reward: Any, *, ticket: int | None = None) -> None:
        """The reward (in [0, 1]; a boolean is a click) of the pull ``ticket`` of ``arm_id``
        (:attr:`last_ticket` at its pull), once; without a ticket (refused with ``hold``), of
        the arm's oldest pull still waiting. The learner reads it when it next asks for that
        arm (with ``hold``, not before the pull is ``hold`` allocations old)."""
        ticket = self._ticket(arm_id, ticket, "update")
        value = checked_reward(reward, self.learner)
        if self.hold is None:
            self._queues[self._waiting.pop(ticket)].append(value)
        else:
            self._held[ticket] = value

    def cancel(self, arm_id: Hashable, *, ticket: int | None = None) -> None:
        """The pull ``ticket`` of ``arm_id`` (without one, refused with ``hold``, the arm's
        oldest still waiting) will have no reward (a participant lost to follow-up): the
        learner never reads one."""
        self._waiting.pop(self._ticket(arm_id, ticket, "cancel"))

    def _ticket(self, arm_id: Hashable, ticket: int | None, what: str) -> int:
        """The pull an update or a cancellation is for, checked: waiting, of ``arm_id``, its
        reward not recorded yet."""
        if arm_id not in self._index:
            raise ValueError(f"{what}() for arm {arm_id!r}, not one of {self._ids!r}")
        arm = self._index[arm_id]
        if ticket is None and self.hold is not None:
            # the arm's oldest open pull would depend on the order outcomes are recorded in,
            # and with it the order the learner reads them: the hold would hide nothing
            raise ValueError(
                f"{what}() with hold={self.hold} names its pull: ticket=t (policy.last_ticket "
                "at the pull); without one the order outcomes are recorded in, which may "
                "depend on them, would decide the order the learner reads them in"
            )
        if ticket is None:
            open_ = [t for t, a in self._waiting.items() if a == arm and t not in self._held]
            if not open_:
                raise ValueError(
                    f"{what}() for arm {arm_id!r}, but none of its pulls waits for a reward"
                )
            return min(open_)
        if isinstance(ticket, bool) or not isinstance(ticket, (int, np.integer)):
            raise ValueError(f"ticket must be a pull's ticket (an int), got {ticket!r}")
        ticket = int(ticket)
        if ticket in self._held:
            raise ValueError(f"{what}() for ticket {ticket}: its reward is already recorded")
        if ticket not in self._waiting and 0 <= ticket < self._allocations:
            raise ValueError(
                f"{what}() for ticket {ticket}: it no longer waits (its reward was recorded or "
                "cancelled: a duplicate log?"
                + (
                    f"; or it was dropped, not recorded within hold={self.hold}"
                    if self.hold
                    else ""
                )
                + ")"
            )
        if ticket not in self._waiting:
            raise ValueError(
                f"{what}() for ticket {ticket}, but no pull has it ({self._allocations} so far)"
            )
        if self._waiting[ticket] != arm:
            raise ValueError(
                f"{what}() for arm {arm_id!r} with ticket {ticket}, the pull of arm "
                f"{self._ids[self._waiting[ticket]]!r}"
            )
        return ticket

    # --- what it tells -------------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Rewards the learner has learned from so far (river reads ``_n``)."""
        return self._n

    @property
    def last_ticket(self) -> int:
        """The ticket of the last pull (its allocation's index, from 0)."""
        if self._allocations == 0:
            raise ValueError("no pull yet: a ticket is given by pull()")
        return self._allocations - 1

    @property
    def pending(self) -> dict[Hashable, int]:
        """Pulls of each arm waiting for their rewards (recorded and held ones included)."""
        counts = np.bincount(
            np.fromiter(self._waiting.values(), dtype=np.int64), minlength=len(self._ids)
        )
        return {a: int(counts[i]) for i, a in enumerate(self._ids)}

    @property
    def queued(self) -> int:
        """Rewards in the queues, not yet read by the learner."""
        return sum(len(q) for q in self._queues)

    @property
    def late(self) -> int:
        """Rewards dropped for not being recorded within ``hold`` allocations of their pulls."""
        return self._late

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
        """The learner's guarantee, its derivation saying what the queues add and its
        ``assumes`` what they need (``None`` for a non-private learner)."""
        privacy = self.learner.privacy
        if privacy is None:
            return None
        assumes = ASSUMES_ANY if self.hold is None else ASSUMES_HOLD.format(hold=self.hold)
        return dataclasses.replace(
            privacy,
            derivation=privacy.derivation + DELAYED_DERIVATION,
            assumes="; ".join(a for a in (privacy.assumes, assumes) if a),
        )

    # --- saved state ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The learner's saved state with the policy's: the rewards queued and held (as secret
        as the data), the pulls waiting by ticket, the pulls made per arm, the arm asked for,
        ``n``, the allocations and the late rewards. Resume a state once: two policies loaded
        from it replay the same noise on different data (:mod:`dponline.rng`); save before
        each allocation is shown."""
        return {
            "learner": self.learner.state_dict(),
            "arm_ids": list(self._ids),
            "hold": self.hold,
            "queues": [list(q) for q in self._queues],
            "waiting": [[t, a] for t, a in self._waiting.items()],
            "held": [[t, r] for t, r in self._held.items()],
            "counts": self._counts.copy(),
            "requested": self._requested,
            "n": self._n,
            "allocations": self._allocations,
            "late": self._late,
        }

    def load_state_dict(self, state: Any) -> None:
        """Continue from a :meth:`state_dict` of a policy over the same arms with the same
        ``hold`` and an identically built learner. Everything is checked before anything
        changes: the learner's part by the learner, the rewards in [0, 1], the tickets waiting
        and held among the allocations made, each arm's pulls at least those waiting and
        queued, ``n`` the learner's rounds, and an arm asked for exactly when the learner has
        acted, the arm it chose."""
        k = len(self._ids)
        saved_learner = saved_field(state, "learner")
        install = self.learner.prepare_load(saved_learner)
        check_saved_arms(saved_field(state, "arm_ids"), self._ids)
        if saved_field(state, "hold") != self.hold:
            raise ArgumentError(
                f"state was saved with hold={saved_field(state, 'hold')!r}, this policy has "
                f"hold={self.hold!r}"
            )
        queues_raw = saved_field(state, "queues")
        if not isinstance(queues_raw, (list, tuple)) or len(queues_raw) != k:
            raise ArgumentError(f"saved queues must be {k} lists of rewards, got {queues_raw!r}")
        queues = []
        for i, q in enumerate(queues_raw):
            if not isinstance(q, (list, tuple)) or not all(_is_reward(v) for v in q):
                raise ArgumentError(
                    f"saved queue {i} must be a list of rewards in [0, 1], got {q!r}"
                )
            queues.append(deque(float(v) for v in q))
        allocations = checked_nonnegative_int(
            "saved allocations", saved_field(state, "allocations")
        )
        waiting = {
            int(t): int(a)
            for t, a in _pairs(saved_field(state, "waiting"), "waiting", (0, allocations), (0, k))
        }
        held = {
            int(t): float(r)
            for t, r in _pairs(saved_field(state, "held"), "held", (0, allocations), (0.0, 1.0))
        }
        if not set(held) <= set(waiting) or (self.hold is None and held):
            raise ArgumentError("saved held rewards must be of pulls still waiting, with a hold")
        counts = checked_int_array("saved counts", saved_field(state, "counts"), (k,), 0)
        n = checked_nonnegative_int("saved n", saved_field(state, "n"))
        late = checked_nonnegative_int("saved late", saved_field(state, "late"))
        lengths = np.array([len(q) for q in queues])
        per_arm = np.bincount(np.fromiter(waiting.values(), dtype=np.int64), minlength=k)
        if np.any(counts < per_arm + lengths) or int(counts.sum()) != allocations:
            raise ArgumentError(
                "saved counts must add up to the allocations, each arm's at least its pulls "
                "waiting plus its rewards queued"
            )
        if n != int(saved_learner["t"]):
            raise ArgumentError(f"saved n = {n} is not the learner's rounds {saved_learner['t']}")
        read = np.asarray(saved_field(saved_learner, "pulls"), dtype=np.int64).reshape(-1)
        if read.shape != (k,) or np.any(counts < read + per_arm + lengths):
            raise ArgumentError(
                "saved counts must be at least each arm's rewards read, queued and waiting"
            )
        if n + int(lengths.sum()) + len(waiting) + late > allocations or (
            self.hold is None and late
        ):
            raise ArgumentError(
                "saved late rewards, with those read, queued and waiting, exceed the allocations "
                "(or are counted without a hold)"
            )
        if self.hold is not None and waiting and min(waiting) < allocations - self.hold:
            raise ArgumentError(
                f"saved waiting ticket {min(waiting)} is more than hold={self.hold} allocations "
                "old: it would have been released"
            )
        requested = checked_decision(
            "requested", saved_field(state, "requested"), saved_learner, k, recorded=True
        )
        install()
        self._queues = queues
        self._waiting = dict(sorted(waiting.items()))
        self._held = held
        self._counts = counts.copy()
        self._requested = requested
        self._n = n
        self._allocations = allocations
        self._late = late

    def clone(self) -> DelayedPolicy:
        """A fresh policy of the same configuration."""
        if self._build is None:
            raise TypeError(
                "clone() needs the recipe of the learner: build the policy with "
                "DelayedPolicy.from_registry(...) or pass build= to the constructor"
            )
        return DelayedPolicy(self._build(), self._ids, hold=self.hold, build=self._build)

    def __repr__(self) -> str:
        return (
            f"DelayedPolicy({type(self.learner).__name__}, arms={self._ids!r}, n={self._n}, "
            f"waiting={len(self._waiting)}, queued={self.queued}, hold={self.hold})"
        )


def _pairs(
    raw: Any, what: str, first: tuple[float, float], second: tuple[float, float]
) -> list[tuple[float, float]]:
    """A saved list of [a, b] pairs, a in [first) (an int range) and b in ``second`` (an int
    range [lo, hi) for int bounds, a closed interval for float ones); tickets distinct."""
    if not isinstance(raw, (list, tuple)):
        raise ArgumentError(f"saved {what} must be a list of pairs, got {raw!r}")
    out = []
    for pair in raw:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ArgumentError(f"saved {what} must be a list of pairs, got {pair!r}")
        a, b = pair
        ints = isinstance(second[0], int)
        ok_a = _is_int(a) and first[0] <= a < first[1]
        if ints:
            ok_b = _is_int(b) and second[0] <= b < second[1]
        else:
            ok_b = _is_reward(b)
        if not (ok_a and ok_b):
            raise ArgumentError(f"saved {what} holds an invalid pair {pair!r}")
        out.append((a, b))
    if len({a for a, _ in out}) != len(out):
        raise ArgumentError(f"saved {what} names a ticket twice")
    return out


def _is_int(value: Any) -> bool:
    """An integer, not a boolean."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_reward(value: Any) -> bool:
    """A real number in [0, 1], not a boolean nor a string."""
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and 0.0 <= float(value) <= 1.0
    )
