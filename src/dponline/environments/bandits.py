"""Multi-armed bandits: the learner plays an arm per replica and sees only its loss.

Regret against the best fixed arm in hindsight, exactly: for an oblivious loss matrix the
realised regret sum_s l_s(a_s) - min_i sum_s l_s(i); for a stochastic bandit the pseudo-regret
sum_s mu(a_s) - t min_i mu_i.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dponline.environments.oblivious import ObliviousLosses
from dponline.protocol import BanditFeedback, FeedbackKind
from dponline.rng import generator_from_state, generator_state

__all__ = ["BanditEnvironment", "StochasticBandit"]


def _arms(action: np.ndarray, k: int) -> np.ndarray:
    a = np.asarray(action)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer) or a.min() < 0 or a.max() >= k:
        raise ValueError(f"actions must be arm indices in [0, {k}) per replica, got {a!r}")
    return a


@dataclass
class BanditEnvironment(ObliviousLosses):
    """Adversarial (oblivious) bandit over a loss matrix ``losses`` (T, K) in [0, 1]."""

    losses: np.ndarray
    name: str = "bandit"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.BANDIT, init=False)
    setting: str = field(default="bandit", init=False)

    def __post_init__(self) -> None:
        self._validate_losses(0.0, 1.0)
        self._best = np.cumsum(self.losses, axis=0).min(axis=1)

    def round(self, t: int, action: np.ndarray) -> tuple[BanditFeedback, np.ndarray]:
        loss = self.losses[t, _arms(action, self.dim)]
        return BanditFeedback(loss), loss


@dataclass
class StochasticBandit:
    """Bernoulli arms with means ``means``; losses drawn per replica from ``rng``."""

    reveals_context: ClassVar[bool] = False
    means: np.ndarray
    horizon: int
    rng: np.random.Generator | int | None = 0
    name: str = "bernoulli bandit"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.BANDIT, init=False)
    setting: str = field(default="bandit", init=False)

    def __post_init__(self) -> None:
        self.means = np.asarray(self.means, dtype=float)
        if np.any((self.means < 0) | (self.means > 1)):
            raise ValueError(f"means must lie in [0, 1], got {self.means}")
        self._gen = np.random.default_rng(self.rng)

    @property
    def dim(self) -> int:
        return int(self.means.size)

    def round(self, t: int, action: np.ndarray) -> tuple[BanditFeedback, np.ndarray]:
        arms = _arms(action, self.dim)
        loss = (self._gen.random(arms.shape) < self.means[arms]).astype(float)
        # regret uses the expected loss of the arm played (pseudo-regret)
        return BanditFeedback(loss), self.means[arms]

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        t = np.arange(1, cumulative_loss.shape[-1] + 1) if rounds is None else np.asarray(rounds)
        return cumulative_loss - t * self.means.min()

    def state_dict(self) -> dict[str, Any]:
        return {"rng": generator_state(self._gen)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._gen = generator_from_state(state["rng"])
