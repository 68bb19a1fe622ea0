"""A smooth convex stream seen as samples: the rounds of a GLM stream f(<v_t, x>, y_t) over the
unit Euclidean ball (:class:`~dponline.environments.smooth_convex.SmoothConvexEnvironment`),
handed to a streaming optimiser as the samples (v_t, y_t) and scored by the stream's own losses.

Round t shows the sample (v_t, y_t) and charges each replica l_t(x) = f(<v_t, x>, y_t); regret
is the stream's, against the best fixed point of the ball in hindsight. An online learner that
observes the loss functions l_t and a streaming optimiser that observes the samples are so
scored alike on the same data (the side-by-side comparison,
:mod:`dponline.experiments.side_by_side`). Changing one round's (v_t, y_t) changes one loss
function and one sample, so the event-level guarantee of the one and the one-sample guarantee of
the other speak of the same neighbouring streams.

The samples' declared bounds are those of the stream's construction, not of its data: ||v_t||_2
<= 1 (:meth:`SmoothConvexSamples.x_bound` in any l_q norm) and |y_t| <= 1
(:func:`~dponline.environments.smooth_convex.smooth_convex` clips the labels of the squared and
Huber losses to [-1, 1]; logistic labels are +-1), checked on the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dponline.domains.lp_ball import LpBall
from dponline.environments.oblivious import Stateless
from dponline.environments.smooth_convex import SmoothConvexEnvironment, smooth_convex
from dponline.protocol import FeedbackKind, SampleFeedback

__all__ = ["SmoothConvexSamples", "smooth_convex_samples"]


@dataclass
class SmoothConvexSamples(Stateless):
    """The samples (v_t, y_t) of ``stream``, a GLM stream over the unit Euclidean ball, each
    round scored by the stream's loss (module docstring)."""

    stream: SmoothConvexEnvironment
    y_bound: float = 1.0
    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.SAMPLE
    setting: ClassVar[str] = "streaming optimisation scored by an online stream's losses"
    #: the geometry a sample learner over an l_p ball takes (the unit Euclidean ball)
    p: ClassVar[float] = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.stream, SmoothConvexEnvironment):
            raise TypeError(
                f"stream must be a SmoothConvexEnvironment, got {type(self.stream).__name__}"
            )
        domain = self.stream.domain
        if not (isinstance(domain, LpBall) and domain.p == 2.0 and domain.radius == 1.0):
            raise ValueError(f"the samples view needs the unit Euclidean ball, got {domain!r}")
        if not self.stream.is_glm:
            raise ValueError(
                f"a sample (v, y) carries a GLM loss only; the stream adds curvature "
                f"{self.stream.curvature!r}"
            )
        norms = np.linalg.norm(self.stream.v, axis=1)
        if norms.max() > 1.0 + 1e-12:
            raise ValueError(f"features must have ||v_t||_2 <= 1, got {float(norms.max())!r}")
        if not (math.isfinite(self.y_bound) and self.y_bound > 0):
            raise ValueError(f"y_bound must be finite and positive, got {self.y_bound!r}")
        top = float(np.abs(self.stream.y).max())
        if top > self.y_bound:
            raise ValueError(f"labels must have |y_t| <= {self.y_bound}, got {top!r}")
        self.name = f"{self.stream.name}:samples"

    @property
    def horizon(self) -> int:
        return self.stream.horizon

    @property
    def dim(self) -> int:
        return self.stream.dim

    def x_bound(self, q: float) -> float:
        """sup ||v||_q over ||v||_2 <= 1: d^(1/q - 1/2) for q < 2, else 1."""
        return 1.0 if q >= 2.0 else float(self.dim ** (1.0 / q - 0.5))

    def round(self, t: int, action: np.ndarray) -> tuple[SampleFeedback, np.ndarray]:
        """Round t (0-indexed): the sample (v_t, y_t) and each replica's loss l_t(x)."""
        _, loss = self.stream.round(t, action)
        return SampleFeedback(self.stream.v[t], self.stream.y[t]), loss

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        """The stream's regret: against the best fixed point of the ball in hindsight."""
        return self.stream.regret(cumulative_loss, rounds)


def smooth_convex_samples(
    horizon: int,
    rng: np.random.Generator,
    dim: int = 5,
    losses: str = "logistic",
    noise: float = 0.5,
    kind: str = "stochastic",
) -> SmoothConvexSamples:
    """The samples of :func:`~dponline.environments.smooth_convex.smooth_convex` over the unit
    Euclidean ball (no curvature): from the same ``rng`` and options, the same (v_t, y_t) as
    ``smooth_convex(horizon, rng, dim=dim, losses=losses, noise=noise, kind=kind)``."""
    return SmoothConvexSamples(
        smooth_convex(horizon, rng, dim=dim, losses=losses, noise=noise, kind=kind)
    )
