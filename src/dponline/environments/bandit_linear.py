"""Bandit linear optimisation: the learner plays a point y_t of a convex set K and sees only
<l_t, y_t>; regret against the best fixed point of K in hindsight, min_{x in K} <L_t, x>, exactly
(closed forms for the ball and the box, a linear programme per round for a polytope)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dponline.domains.barriers import SelfConcordantBarrier
from dponline.environments.oblivious import ObliviousLosses
from dponline.protocol import BanditFeedback, FeedbackKind

__all__ = ["BanditLinearEnvironment"]


@dataclass
class BanditLinearEnvironment(ObliviousLosses):
    """Oblivious loss vectors ``losses`` (T, N) over the set of ``barrier``."""

    losses: np.ndarray
    barrier: SelfConcordantBarrier
    name: str = "bandit linear"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.BANDIT, init=False)
    setting: str = field(default="bandit linear optimisation", init=False)

    def __post_init__(self) -> None:
        self._validate_losses(dim=self.barrier.dim)
        cum = np.cumsum(self.losses, axis=0)
        self._best = np.array([self.barrier.min_linear(c) for c in cum])

    def round(self, t: int, action: np.ndarray) -> tuple[BanditFeedback, np.ndarray]:
        y = np.asarray(action, dtype=float)
        if not self.barrier.contains(y).all():
            raise ValueError(f"round {t + 1}: a played point lies outside the decision set")
        value = y @ self.losses[t]
        return BanditFeedback(value), value
