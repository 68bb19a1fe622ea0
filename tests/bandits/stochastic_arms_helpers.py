"""Helpers of the stochastic K-armed learner tests: rounds with given rewards, and states
compared exactly."""

from __future__ import annotations

from typing import Any

import numpy as np

from dponline.protocol import BanditFeedback


def play_rounds(
    learner: Any, means: np.ndarray | None, rounds: int, rewards: Any = None
) -> np.ndarray:
    """Play ``rounds`` rounds round by round; each replica's reward is the mean of the arm it
    played (``means``, deterministic when they lie in {0, 1}) or, with ``rewards``, the
    ``rewards[t]`` of round t for every replica. Returns the arms, shape (rounds, replicas)."""
    out = []
    for t in range(rounds):
        arm = learner.act()
        out.append(arm)
        if rewards is not None:
            reward = np.full(arm.shape, float(rewards[t]))
        else:
            reward = np.asarray(means, dtype=float)[arm]
        learner.observe(BanditFeedback(1.0 - reward))
    return np.array(out)


def same_state(a: Any, b: Any) -> bool:
    """Whether two saved states are equal: the same keys, arrays of the same shape, dtype and
    values (NaN equal to NaN), everything else equal."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_state(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class ExactRewards:
    """A stochastic K-armed environment whose every reward is its arm's mean (any value in
    [0, 1]): ``reward_sums(arms, counts)`` is counts x means[arms], exactly what round-by-round
    play with those rewards gives."""

    rewards_in_unit_interval = True  # StochasticArms: every reward in [0, 1]

    def __init__(self, means: Any) -> None:
        self.means = np.asarray(means, dtype=float)

    def reward_sums(self, arms: Any, counts: Any, rng: Any = None) -> np.ndarray:
        return np.asarray(counts, dtype=float) * self.means[np.asarray(arms)]


def assert_every_state_of_a_run_loads(make: Any, loss: Any) -> None:
    """The states of one run of ``make()`` saved before and after every ``act()``, at the
    horizon and after acting past it, each load into a fresh ``make()`` as they were;
    ``loss(t, arms)`` is round t's loss of each replica."""
    learner = make()
    states = []
    for t in range(learner.horizon):
        states.append(learner.state_dict())
        arms = learner.act()
        states.append(learner.state_dict())
        learner.observe(BanditFeedback(np.asarray(loss(t, arms), dtype=float).reshape(-1)))
    states.append(learner.state_dict())
    learner.act()
    states.append(learner.state_dict())
    for state in states:
        fresh = make()
        fresh.load_state_dict(state)
        assert same_state(fresh.state_dict(), state)
