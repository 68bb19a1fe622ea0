"""Prediction with expert advice: an oblivious loss matrix and the exact regret.

The learner plays a distribution p_t over N experts and suffers <p_t, l_t>; after T rounds its
regret against the best fixed expert in hindsight is

    Regret_t = sum_{s<=t} <p_s, l_s> - min_i sum_{s<=t} l_s(i),

computed exactly for every t (the best expert may change with t).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dponline.environments.oblivious import LinearFullInformation
from dponline.protocol import FeedbackKind

__all__ = [
    "ExpertsEnvironment",
    "alternating_losses",
    "stochastic_losses",
    "switching_best_losses",
]


@dataclass
class ExpertsEnvironment(LinearFullInformation):
    """Full-information experts over a fixed (oblivious) loss matrix ``losses`` (T, N)."""

    losses: np.ndarray
    name: str = "experts"
    low: float = 0.0
    high: float = 1.0
    feedback_kind: FeedbackKind = field(default=FeedbackKind.LOSS_VECTOR, init=False)
    setting: str = field(default="experts", init=False)

    def __post_init__(self) -> None:
        self._validate_losses(self.low, self.high)
        self._best = np.cumsum(self.losses, axis=0).min(axis=1)


def alternating_losses(horizon: int, n_experts: int) -> np.ndarray:
    """The adversary that defeats Follow-the-Leader: expert 0 and 1 alternate losses 0/1 after a
    half-loss first round; the other experts always lose 1."""
    losses = np.ones((horizon, n_experts))
    losses[0, :2] = [0.5, 0.0]
    for t in range(1, horizon):
        losses[t, 0], losses[t, 1] = (0.0, 1.0) if t % 2 == 1 else (1.0, 0.0)
    return losses


def switching_best_losses(
    horizon: int,
    n_experts: int,
    switches: int = 4,
    gap: float = 0.2,
    rng: np.random.Generator | int | None = 0,
) -> np.ndarray:
    """Bernoulli losses whose best expert changes ``switches`` times (means 0.5 and 0.5 - gap)."""
    gen = np.random.default_rng(rng)
    means = np.full((horizon, n_experts), 0.5)
    bounds = np.linspace(0, horizon, switches + 2).astype(int)
    for k in range(switches + 1):
        means[bounds[k] : bounds[k + 1], k % n_experts] = 0.5 - gap
    return (gen.random((horizon, n_experts)) < means).astype(float)


def stochastic_losses(
    horizon: int, means: np.ndarray, rng: np.random.Generator | int | None = 0
) -> np.ndarray:
    """I.i.d. Bernoulli(means[i]) losses for each expert i."""
    m = np.asarray(means, dtype=float)
    if np.any((m < 0) | (m > 1)):
        raise ValueError(f"means must lie in [0, 1], got {m}")
    return (np.random.default_rng(rng).random((horizon, m.size)) < m).astype(float)
