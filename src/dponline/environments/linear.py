"""Online linear optimisation over a ball or a cube: loss <x_t, l_t>, exact regret.

The best fixed decision in hindsight has a closed form: over the Euclidean ball of radius r,
min_x <x, L_t> = -r ||L_t||_2; over the cube [-1, 1]^d, -||L_t||_1 (Agarwal & Singh 2017,
Corollary 3.2, the sphere and cube cases).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dponline.environments.oblivious import ObliviousLosses
from dponline.protocol import FeedbackKind, LossVectorFeedback

__all__ = ["LinearLossEnvironment"]


@dataclass
class LinearLossEnvironment(ObliviousLosses):
    """Oblivious loss vectors ``losses`` (T, d) against decisions in ``domain``."""

    losses: np.ndarray
    domain: str = "ball"
    radius: float = 1.0
    name: str = "linear losses"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.LOSS_VECTOR, init=False)
    setting: str = field(default="online linear optimisation", init=False)

    def __post_init__(self) -> None:
        self._validate_losses()
        cum = np.cumsum(self.losses, axis=0)
        if self.domain == "ball":
            self._best = -self.radius * np.linalg.norm(cum, axis=1)
        elif self.domain == "cube":
            self._best = -np.abs(cum).sum(axis=1)
        else:
            raise ValueError(f"domain must be 'ball' or 'cube', got {self.domain!r}")

    def round(self, t: int, action: np.ndarray) -> tuple[LossVectorFeedback, np.ndarray]:
        loss = self.losses[t]
        return LossVectorFeedback(loss), np.asarray(action) @ loss
