"""Online linear optimisation over a decision set: loss <x_t, l_t>, exact regret.

The decision set is a :class:`~dponline.domains.base.ConvexDomain`; the best fixed decision in
hindsight is one oracle call per round, min_x <x, L_t> = ``domain.min_linear(L_t)``: over the
Euclidean ball of radius r, -r ||L_t||_2; over the cube [-1, 1]^d, -||L_t||_1 (Agarwal & Singh
2017, Corollary 3.2, the sphere and cube cases).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dponline.domains.base import ConvexDomain
from dponline.environments.oblivious import LinearFullInformation
from dponline.privacy.bounds import InputBounds
from dponline.protocol import FeedbackKind

__all__ = ["LinearLossEnvironment", "drifting_losses"]


@dataclass
class LinearLossEnvironment(LinearFullInformation):
    """Oblivious loss vectors ``losses`` (T, d) against decisions in ``domain``.

    ``loss_bounds`` is the loss set Y the losses are declared to lie in (checked here), which
    the learner factories read (with ``domain``) to build a learner for this environment; None
    declares nothing.
    """

    losses: np.ndarray
    domain: ConvexDomain
    loss_bounds: InputBounds | None = None
    name: str = "linear losses"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.LOSS_VECTOR, init=False)
    setting: str = field(default="online linear optimisation", init=False)

    def __post_init__(self) -> None:
        self._linear_over(self.domain, self.loss_bounds)


def drifting_losses(
    horizon: int, dim: int, domain: str, drift: float, rng: np.random.Generator
) -> np.ndarray:
    """Gaussian vectors around a fixed drift, rescaled into the unit l2 (``domain="ball"``) or
    l1 (``"cube"``) ball, so that they meet the loss sets of Agarwal & Singh (2017) Corollary
    3.2 that DP-FTRL and DP-FTPL declare (and the unit l2 ball of DP-SCRiBLe, Theorem 4.5)."""
    if domain not in ("ball", "cube"):
        raise ValueError(f"domain must be 'ball' or 'cube', got {domain!r}")
    direction = np.ones(dim) / np.sqrt(dim)
    raw = drift * direction + rng.normal(size=(horizon, dim)) / np.sqrt(dim)
    p = 2 if domain == "ball" else 1
    norms = np.linalg.norm(raw, ord=p, axis=1, keepdims=True)
    return raw / np.maximum(norms * (1.0 + 1e-12), 1.0)  # strictly inside despite rounding
