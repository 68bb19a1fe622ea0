"""A river-style interface for the library's K-armed bandit learners: ``pull(arm_ids)`` and
``update(arm_id, reward)``.

river's bandit policies (``river.bandit``) choose an arm with ``pull(arm_ids)`` and learn from
``update(arm_id, reward)``; its evaluators (``river.bandit.evaluate_offline``, the replay method
of Li et al. 2011, and ``river.bandit.evaluate`` on gym environments) call only those two, read
the number of updates from ``_n`` and copy a fresh policy with ``clone()``. :class:`RiverPolicy`
offers the same calls around any learner of the library that plays arms
(``FeedbackKind.BANDIT``), so a river pipeline swaps one of river's policies for a private one.
river itself is not needed.

What stays the library's, because the guarantee needs it:

* **Rewards lie in [0, 1]** (the learners' input bound): a reward outside, NaN or a
  non-number is refused with the learner's state untouched; a boolean (a click, as river's
  own examples give it) counts as 1 or 0. The learner receives the loss 1 - reward (the
  library's bandit feedback carries losses).
* **One update per pull, for the arm pulled.** A round of the learner is a pull and its reward;
  ``update`` for another arm, or a second ``update`` for one pull, is refused. A pull without an
  update (replay drops the rounds where the logged arm differs) is not a round: the next pull
  returns the arm already pulled in that round (the learner is asked once a round; every
  learner of the library also answers a repeated ``act()`` with the round's action, a check
  of the battery).
* **The horizon**: the learner was built for T rounds; the pull of round T + 1 is refused
  (before an item is shown, since its update could not follow). A replay, whose kept rounds
  are not known in advance, and a stream without a known end run an anytime learner
  (``horizon=None``) or one built for the log's length.
* ``ranking`` orders the arms by how often the policy pulled them, a function of its private
  decisions alone; river's ranking by empirical means would publish the rewards' means without
  noise.

``RiverPolicy.from_registry(name, arm_ids, horizon, epsilon=...)`` builds a registered learner
for ``len(arm_ids)`` arms (one replica) and keeps the recipe for ``clone()``. A non-private
learner (``ucb1``, ``thompson``, ``exp3``, ...) takes no epsilon (one given is refused): its
``privacy`` is ``None``, which a deployment should check; ``epsilon`` defaults to 1 for a private
learner, ``epsilon=NON_PRIVATE`` (:data:`dponline.registry.NON_PRIVATE`) builds its
non-private counterpart, and ``epsilon=None`` is refused for it (a setting that was not there
must not turn the noise off). ``state_dict()`` /
``load_state_dict()`` save and resume the whole policy (the learner's state with the pulls,
``n`` and a pull waiting for its reward).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_int_array,
    checked_nonnegative_int,
    saved_field,
)
from dponline.protocol import BanditFeedback, FeedbackKind, Learner, past_horizon_error

__all__ = ["ArmSpace", "RegistryRecipe", "RiverPolicy"]


@dataclass(frozen=True)
class ArmSpace:
    """What a K-armed learner's registry factory reads of its environment: the number of arms
    (``dim``) and the horizon. :meth:`RiverPolicy.from_registry` builds learners on it, where
    no environment of the library is at hand (the data arrive through ``update``)."""

    dim: int
    horizon: int
    reward_range: tuple[float, float] = (0.0, 1.0)


class _Default:
    """The type of :data:`_DEFAULT`: ``epsilon`` not given to :meth:`RiverPolicy.from_registry`."""

    def __repr__(self) -> str:
        return "1.0 for a private learner"


_DEFAULT = _Default()


def checked_reward(reward: Any, learner: Learner) -> float:
    """A reward in [0, 1] as a float: a boolean (a click) is 1 or 0, a learner built with
    ``clip=True`` clips a finite number into [0, 1]; anything else outside it, NaN or not a
    number is refused."""
    if isinstance(reward, np.ndarray) and reward.ndim == 0:  # a numpy scalar in an array
        reward = reward[()]
    if isinstance(reward, (bool, np.bool_)):  # a click
        reward = float(reward)
    if (
        isinstance(reward, (int, float, np.integer, np.floating))
        and math.isfinite(float(reward))
        and getattr(learner, "clip", False) is True
    ):  # a learner built with clip=True clips its losses: the policy passes rewards on
        reward = min(max(float(reward), 0.0), 1.0)
    if (
        not isinstance(reward, (int, float, np.integer, np.floating))
        or not math.isfinite(float(reward))
        or not 0.0 <= float(reward) <= 1.0
    ):
        raise ValueError(
            f"reward must be a number in [0, 1], got {reward!r}: rescale the rewards with "
            "bounds fixed in advance, (r - low) / (high - low), clipped to [0, 1] (bounds "
            "read from the data would leak it)"
        )
    return float(reward)


def check_offered(ids: Sequence[Hashable], arm_ids: Iterable[Hashable]) -> None:
    """A policy's ``pull(arm_ids)`` must be offered its own arms (in any order): the learner's
    guarantee and its statistics are for that fixed set."""
    offered = list(arm_ids)
    if len(offered) != len(ids) or set(offered) != set(ids):
        raise ValueError(
            f"this policy plays the arms {list(ids)!r}; pull() was offered {offered!r}"
        )


def ask_arm(learner: Learner, arms: int, past_horizon: str) -> int:
    """The arm index the learner plays next (its ``act()``, one replica), refused past its
    horizon with ``past_horizon`` (``{horizon}`` filled in) added to the error."""
    horizon = getattr(learner, "horizon", None)
    if horizon is not None and learner.t >= horizon:
        error = past_horizon_error(type(learner).__name__, horizon, learner.t)
        raise type(error)(f"{error}{past_horizon.format(horizon=horizon)}")
    arm = int(np.asarray(learner.act()).reshape(-1)[0])
    if not 0 <= arm < arms:
        raise RuntimeError(f"the learner played arm index {arm}, outside its {arms}")
    return arm


def checked_decision(
    what: str, saved: Any, saved_learner: Any, arms: int, *, recorded: bool = False
) -> int | None:
    """A policy's saved arm waiting on the learner (``what``: "pulled", "requested"): an arm
    index present exactly when the learner's saved state has acted, and the arm it chose where
    that state records it (``recorded``: it must)."""
    arm = None
    if saved is not None:
        arm = int(checked_int_array(f"saved {what}", np.asarray(saved), (), 0, arms))
    if (arm is not None) != bool(saved_learner["acted"]):
        raise ArgumentError(
            f"saved {what} arm and the learner's decision disagree: a policy's arm waits on the "
            "learner exactly when it has acted this round"
        )
    if arm is not None and (recorded or "arm" in saved_learner):
        decided = int(np.asarray(saved_field(saved_learner, "arm")).reshape(-1)[0])
        if decided != arm:
            raise ArgumentError(f"saved {what} arm {arm} is not the learner's decision {decided}")
    return arm


@dataclass(frozen=True)
class RegistryRecipe:
    """A registered learner's configuration, called to build it afresh (``clone()``'s recipe
    for :meth:`RiverPolicy.from_registry`; a class, not a closure, so that a policy pickles
    like river's own). ``epsilon`` None builds the non-private counterpart."""

    name: str
    space: ArmSpace
    epsilon: float | None
    calibration: str
    seed: int | None
    options: dict[str, Any]

    def __call__(self) -> Learner:
        from dponline.registry import NON_PRIVATE, build_learner, learners

        eps = NON_PRIVATE if self.epsilon is None else self.epsilon
        return build_learner(
            learners()[self.name],
            self.space,
            epsilon=eps,
            calibration=self.calibration,
            rng=self.seed,
            **self.options,
        )


def _plain(value: Any) -> Any:
    """An arm id as a JSON checkpoint gives it back: tuples as lists, numpy scalars as Python."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def check_saved_arms(saved: Any, ids: Sequence[Hashable]) -> None:
    """A policy's state must come from a policy over the same arms in the same order (the
    learner's statistics are by arm index: another order would give each arm another's);
    a JSON round trip's lists for tuples are the same ids."""
    if not isinstance(saved, (list, tuple)) or [_plain(a) for a in saved] != [
        _plain(a) for a in ids
    ]:
        raise ArgumentError(f"state was saved over the arms {saved!r}, this policy plays {ids!r}")


def released_means_by_arm(learner: Learner, arm_ids: Sequence[Hashable]) -> dict[Hashable, float]:
    """The learner's :meth:`~dponline.bandits.k_armed.KArmedLearner.released_means` of its one
    replica, by arm identifier (NaN for an arm with nothing released yet)."""
    get = getattr(learner, "released_means", None)
    if get is None:
        raise TypeError(
            f"{type(learner).__name__} keeps no per-arm means (a K-armed learner of the "
            "library's stochastic suite does)"
        )
    row = np.asarray(get(), dtype=float).reshape(-1)
    return {a: float(row[i]) for i, a in enumerate(arm_ids)}


class RiverPolicy:
    """river's ``pull`` / ``update`` around ``learner`` (module docstring).

    ``arm_ids``: the arms' identifiers, in the order of the learner's arm indices (any hashable
    values, as river's); ``build``: a function returning a fresh learner of the same
    configuration, for :meth:`clone` (:meth:`from_registry` sets it).
    """

    def __init__(
        self,
        learner: Learner,
        arm_ids: Sequence[Hashable],
        *,
        build: Callable[[], Learner] | None = None,
    ) -> None:
        if getattr(learner, "feedback_kind", None) is not FeedbackKind.BANDIT:
            raise TypeError(
                "a river-style policy needs a learner that plays arms and observes bandit "
                f"feedback, got {type(learner).__name__}"
            )
        if getattr(learner, "replicas", None) != 1:
            raise ValueError(
                "a river-style policy runs one copy of the learner (replicas = 1), got "
                f"replicas = {getattr(learner, 'replicas', None)!r}"
            )
        ids = list(arm_ids)
        if len(ids) < 2 or len(set(ids)) != len(ids):
            raise ValueError(f"arm_ids must name at least two distinct arms, got {ids!r}")
        n_arms = getattr(learner, "n_arms", None)
        if n_arms != len(ids):
            raise ValueError(
                f"a river-style policy over {len(ids)} arms needs a learner that plays one of "
                f"{len(ids)} arms, got {type(learner).__name__} with n_arms = {n_arms!r}"
            )
        self.learner = learner
        self._ids = ids
        self._index = {a: i for i, a in enumerate(ids)}
        self._build = build
        self._pulled: Hashable | None = None
        self._counts = np.zeros(len(ids), dtype=np.int64)
        self._n = 0

    @classmethod
    def from_registry(
        cls,
        name: str,
        arm_ids: Sequence[Hashable],
        horizon: int | None,
        *,
        epsilon: Any = _DEFAULT,
        calibration: str = "tight",
        seed: int | None = None,
        **options: Any,
    ) -> RiverPolicy:
        """The registered learner ``name`` for ``len(arm_ids)`` arms and ``horizon`` rounds
        (``None``: its anytime version, for learners that have one, ``dponline list``), at
        ``epsilon`` (``NON_PRIVATE``: its non-private counterpart; ``None`` is refused for a
        private learner) and ``calibration``, seeded with
        ``seed``; ``options`` are the learner's (``dponline list``). ``clone()`` builds the same
        configuration again with the same seed (river's convention): with an integer seed every
        clone draws the same noise, so episodes of an evaluation share it; ``seed=None`` (a
        deployment's choice, ``dponline.rng``) gives each clone fresh entropy."""
        from dponline.registry import NON_PRIVATE, learners, resolved_epsilon

        entry = learners().get(name)
        if entry is None or entry.feedback_kind is not FeedbackKind.BANDIT:
            arms_learners = sorted(
                n for n, e in learners().items() if e.feedback_kind is FeedbackKind.BANDIT
            )
            raise ValueError(
                f"{name!r} is not a registered bandit learner; expected one of {arms_learners}"
            )
        if "arms" not in entry.action_spaces:
            raise ValueError(f"{name!r} plays {entry.action_space!r}, not arms")
        if isinstance(epsilon, _Default):
            epsilon = 1.0 if entry.private else None
        elif epsilon is not None and epsilon is not NON_PRIVATE and not entry.private:
            private = sorted(
                n
                for n, e in learners().items()
                if e.private
                and e.feedback_kind is FeedbackKind.BANDIT
                and "arms" in e.action_spaces
            )
            raise ValueError(
                f"{name!r} is not private and takes no epsilon (got {epsilon!r}): leave it "
                f"out to run it, or choose a private learner: {private}"
            )
        epsilon = resolved_epsilon(entry, epsilon)
        if "rng" in options:
            raise ValueError(
                "from_registry seeds the learner with seed= (an int, or None for fresh entropy): "
                "clone() builds the same configuration again from it, which a Generator (rng=) "
                "cannot give"
            )
        ids = list(arm_ids)
        if "anytime" in options:
            raise ValueError(
                "pass horizon=None for a learner without a horizon (its anytime version), "
                "not the option anytime"
            )
        if horizon is None:
            if not entry.anytime:
                raise ValueError(f"{name!r} needs a horizon: it has no anytime version")
            options["anytime"] = True
            space = ArmSpace(len(ids), 1)  # the anytime factory reads no horizon
        else:
            space = ArmSpace(len(ids), checked_count("horizon", horizon))

        build = RegistryRecipe(name, space, epsilon, calibration, seed, dict(options))
        return cls(build(), ids, build=build)

    # --- river's interface ----------------------------------------------------------------

    def pull(self, arm_ids: Iterable[Hashable]) -> Hashable:
        """The arm to pull this round. ``arm_ids`` must be the policy's arms (in any order):
        the learner's guarantee and its statistics are for that fixed set."""
        check_offered(self._ids, arm_ids)
        if self._pulled is not None:  # asked again in the same round: the same arm
            return self._pulled
        # refused past the horizon before an item is shown: its update() would be refused
        arm = ask_arm(
            self.learner,
            len(self._ids),
            "; a stream without a known end needs a policy built with horizon=None, from a "
            "learner that has an anytime version (`dponline list`)",
        )
        self._pulled = self._ids[arm]
        return self._pulled

    def update(self, arm_id: Hashable, *reward_args: Any, **reward_kwargs: Any) -> None:
        """The reward (in [0, 1]; clipped to it when the learner was built with
        ``clip=True``) of the arm just pulled."""
        if reward_kwargs or len(reward_args) != 1:
            raise TypeError(
                "update(arm_id, reward) takes one reward value (a number in [0, 1]); got "
                f"{len(reward_args)} positional and {sorted(reward_kwargs)} keyword values"
            )
        if self._pulled is None:
            raise ValueError("update() must follow pull(): no arm is waiting for its reward")
        if arm_id != self._pulled:
            raise ValueError(
                f"update() for arm {arm_id!r}, but the arm pulled is {self._pulled!r}: a "
                "private learner learns only from the arms it plays"
            )
        reward = checked_reward(reward_args[0], self.learner)
        self.learner.observe(BanditFeedback(np.array([1.0 - reward])))
        self._counts[self._index[arm_id]] += 1
        self._pulled = None
        self._n += 1

    # --- saved state ----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The learner's saved state with the policy's own: each arm's pulls (``ranking``), the
        rewards learned from (``n``) and the arm pulled and waiting for its reward (its index,
        ``None`` between rounds). As sensitive as the learner's state (:mod:`dponline.rng`)."""
        return {
            "learner": self.learner.state_dict(),
            "arm_ids": list(self._ids),
            "counts": self._counts.copy(),
            "n": self._n,
            "pulled": None if self._pulled is None else self._index[self._pulled],
        }

    def load_state_dict(self, state: Any) -> None:
        """Continue from a :meth:`state_dict` of a policy over the same arms (in the same order)
        with an identically built learner. Everything is checked before anything changes (a
        refused state leaves the policy as it was): the learner's part by the learner, the arm
        ids, the pulls adding up to ``n`` and at most the learner's rounds, and an arm waiting
        for its reward exactly when the learner has decided its round (and, where its state
        says which arm, that one)."""
        k = len(self._ids)
        saved_learner = saved_field(state, "learner")
        install = self.learner.prepare_load(saved_learner)
        check_saved_arms(saved_field(state, "arm_ids"), self._ids)
        counts = checked_int_array("saved counts", saved_field(state, "counts"), (k,), 0)
        n = checked_nonnegative_int("saved n", saved_field(state, "n"))
        if int(counts.sum()) != n:
            raise ArgumentError(f"saved counts add up to {int(counts.sum())}, not n = {n}")
        if n > int(saved_learner["t"]):
            raise ArgumentError(f"saved n = {n} exceeds the learner's rounds {saved_learner['t']}")
        pulled = checked_decision("pulled", saved_field(state, "pulled"), saved_learner, k)
        install()
        self._counts = counts.copy()
        self._n = n
        self._pulled = None if pulled is None else self._ids[pulled]

    @property
    def n(self) -> int:
        """Rewards learned from so far (river reads ``_n``)."""
        return self._n

    @property
    def ranking(self) -> list[Hashable]:
        """The arms, most pulled first (ties in the order of ``arm_ids``): a function of the
        policy's private decisions only."""
        order = sorted(range(len(self._ids)), key=lambda i: (-self._counts[i], i))
        return [self._ids[i] for i in order]

    @property
    def privacy(self) -> Any:
        """The learner's guarantee (``None`` for a non-private learner)."""
        return self.learner.privacy

    def released_means(self) -> dict[Hashable, float]:
        """Each arm's mean as the learner last released it under its guarantee (NaN before
        any): publishable at no further cost (a non-private learner's exact means)."""
        return released_means_by_arm(self.learner, self._ids)

    def clone(self) -> RiverPolicy:
        """A fresh policy of the same configuration (river's evaluators start each episode
        from one)."""
        if self._build is None:
            raise TypeError(
                "clone() needs the recipe of the learner: build the policy with "
                "RiverPolicy.from_registry(...) or pass build= to the constructor"
            )
        return RiverPolicy(self._build(), self._ids, build=self._build)

    def __repr__(self) -> str:
        return f"RiverPolicy({type(self.learner).__name__}, arms={self._ids!r}, n={self._n})"
