"""Losses and their links, with the constants the learners' privacy and regret rest on.

One home for the losses every learner package takes (the learners import them from here; this
package imports no learner, environment or experiment):

* :mod:`dponline.losses.links`: GLM links f(z, y) (logistic, squared, Huber) with derivative
  bounds, and the canonical links' means zeta (one logistic function for everyone);
* :mod:`dponline.losses.smooth`: :class:`SmoothLoss`, a GLM term plus a convex quadratic with
  value, gradient, Hessian and its Lipschitz, smoothness and strong-convexity constants (CTRL,
  Agarwal, Kale, Singh & Thakurta 2023, Assumption 1 and Section 3.2);
* :mod:`dponline.losses.sums`: :class:`LossSum`, the running sum of smooth losses CTRL's Newton
  solves evaluate;
* :mod:`dponline.losses.glm`: the GLM and squared losses on samples (x, r) of the streaming
  learners and the GLM bandit, with their l_p constants (Han et al., Section 4, Assumption 4.5).
"""

from dponline.losses.glm import GLMLoss, SquaredLoss, checked_rewards, squared_loss_constants
from dponline.losses.links import (
    GLM_LINKS,
    LINKS,
    CanonicalLink,
    GLMLink,
    HuberLink,
    LogisticLink,
    SquaredLink,
    link_by_name,
)
from dponline.losses.smooth import SmoothLoss
from dponline.losses.sums import LossSum

__all__ = [
    "GLM_LINKS",
    "LINKS",
    "CanonicalLink",
    "GLMLink",
    "GLMLoss",
    "HuberLink",
    "LogisticLink",
    "LossSum",
    "SmoothLoss",
    "SquaredLink",
    "SquaredLoss",
    "checked_rewards",
    "link_by_name",
    "squared_loss_constants",
]
