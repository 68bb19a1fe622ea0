"""Streaming samples for stochastic optimisation: i.i.d. (x, y) from a known model, so that the
excess population risk of any iterate is computed exactly.

:class:`LinearRegressionStream`: x is uniform on [-1, 1]^d (bounded, covariance I/3) and
y = <x, theta*> + e with e uniform on [-s, s]. For the square loss
f(theta; x, y) = (y - <x, theta>)^2 / 2 the population risk is

    F(theta) = ||theta - theta*||^2 / 6 + s^2 / 6,

so the excess risk F(theta) - F(theta*) = ||theta - theta*||^2 / 6 exactly. The learner plays
theta_t (one per replica) and each round's "loss" is its excess risk; the regret against the best
fixed decision theta* is the cumulative excess risk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dponline.protocol import FeedbackKind, SampleFeedback
from dponline.rng import generator_from_state, generator_state

__all__ = ["LinearRegressionStream"]


@dataclass
class LinearRegressionStream:
    """i.i.d. samples x ~ U[-1, 1]^d, y = <x, theta*> + U[-s, s] (see the module docstring)."""

    reveals_context: ClassVar[bool] = False
    theta_star: np.ndarray
    horizon: int
    noise: float = 0.1
    rng: np.random.Generator | int | None = 0
    name: str = "linear regression stream"
    #: The l_p geometry the experiment is set in (learners over an l_p ball take it as their p);
    #: ``None``: the samples fit every l_p ball's bounds (:meth:`x_bound`), the learner chooses.
    p: float | None = field(default=None, init=False)
    feedback_kind: FeedbackKind = field(default=FeedbackKind.SAMPLE, init=False)
    setting: str = field(default="stochastic optimisation", init=False)

    def __post_init__(self) -> None:
        self.theta_star = np.asarray(self.theta_star, dtype=float)
        if self.theta_star.ndim != 1 or not np.all(np.isfinite(self.theta_star)):
            raise ValueError(f"theta_star must be a finite vector, got {self.theta_star!r}")
        if not self.noise >= 0:
            raise ValueError(f"noise must be non-negative, got {self.noise!r}")
        self._gen = np.random.default_rng(self.rng)

    @property
    def dim(self) -> int:
        return int(self.theta_star.size)

    def x_bound(self, q: float) -> float:
        """sup ||x||_q over the cube [-1, 1]^d: d^(1/q) (1 for q = inf)."""
        return 1.0 if q == np.inf else float(self.dim ** (1.0 / q))

    @property
    def y_bound(self) -> float:
        """sup |y| = ||theta*||_1 + s."""
        return float(np.abs(self.theta_star).sum() + self.noise)

    def sample(self, n: int = 1) -> tuple[np.ndarray, np.ndarray]:
        x = self._gen.uniform(-1.0, 1.0, size=(n, self.dim))
        y = x @ self.theta_star + self._gen.uniform(-self.noise, self.noise, size=n)
        return x, y

    def excess_risk(self, theta: np.ndarray) -> np.ndarray:
        """F(theta) - F(theta*) = ||theta - theta*||^2 / 6, per replica."""
        diff = np.asarray(theta) - self.theta_star
        return (diff * diff).sum(axis=-1) / 6.0

    def round(self, t: int, action: np.ndarray) -> tuple[SampleFeedback, np.ndarray]:
        """Round t: the learner's iterates (replicas, d) are scored, then a fresh sample."""
        risk = self.excess_risk(action)
        x, y = self.sample(1)
        return SampleFeedback(x[0], y[0]), risk

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        """Cumulative excess risk (the best fixed decision theta* has none)."""
        return cumulative_loss

    def state_dict(self) -> dict[str, Any]:
        return {"rng": generator_state(self._gen)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._gen = generator_from_state(state["rng"])
