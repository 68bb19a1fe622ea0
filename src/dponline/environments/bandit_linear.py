"""Bandit linear optimisation: the learner plays a point y_t of a convex set K and sees only
<l_t, y_t>; regret against the best fixed point of K in hindsight, min_{x in K} <L_t, x>, exactly
(one call of the set's linear minimisation oracle per round: closed forms for the ball and the
box, a linear programme for a polytope)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dponline.domains.base import ConvexDomain
from dponline.environments.oblivious import ObliviousLosses
from dponline.privacy.bounds import InputBounds
from dponline.protocol import BanditFeedback, FeedbackKind

__all__ = ["BanditLinearEnvironment"]


@dataclass
class BanditLinearEnvironment(ObliviousLosses):
    """Oblivious loss vectors ``losses`` (T, N) over the decision set ``domain`` (a
    :class:`~dponline.domains.base.ConvexDomain`; SCRiBLe needs one with a barrier).

    ``loss_bounds`` is the loss set Y the losses are declared to lie in (checked here), which
    the learner factories read; None declares nothing. A played point outside the set (by more
    than ``domain.contains``' tolerance) is a ValueError.
    """

    losses: np.ndarray
    domain: ConvexDomain
    loss_bounds: InputBounds | None = None
    name: str = "bandit linear"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.BANDIT, init=False)
    setting: str = field(default="bandit linear optimisation", init=False)

    def __post_init__(self) -> None:
        self._linear_over(self.domain, self.loss_bounds)

    def round(self, t: int, action: np.ndarray) -> tuple[BanditFeedback, np.ndarray]:
        y = np.asarray(action, dtype=float)
        if not self.domain.contains(np.atleast_2d(y)).all():
            raise ValueError(f"round {t + 1}: a played point lies outside the decision set")
        value = y @ self.losses[t]
        return BanditFeedback(value), value
