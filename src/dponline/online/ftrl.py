"""Differentially private Follow-the-Regularized-Leader: Agarwal & Singh (2017), Algorithm 1.

Each round the learner plays

    x_t = argmin_{x in X}  eta <x, L~_{t-1}> + R(x),

where L~_{t-1} is a private estimate of the prefix sum of the loss vectors released by a
continual counter (Algorithm 2, TreeBasedAgg, in the paper's calibration; any mechanism of
:mod:`dponline.continual` in the tight one). The decisions are post-processing of the counter's
releases, so the learner has the counter's guarantee: event-level DP over loss sequences that
differ in one round (Definition 2.1), for losses inside the declared bounds.

Regularisers with closed-form argmins (Corollary 3.2):

* :class:`EntropicSimplex`: prediction with expert advice, R(x) = sum x_i log x_i, x = softmax;
* :class:`EuclideanBall`: OLO over the ball, R(x) = ||x||^2, x = projection of -eta L / 2;
* :class:`EuclideanCube`: OLO over the cube [-1, 1]^N, R(x) = ||x||^2, x = clip(-eta L / 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.continual import BinaryTreeCounter, ContinualCounter, make_counter
from dponline.privacy.bounds import Box, InputBounds
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.privacy.noise import GaussianNoise
from dponline.protocol import Feedback, FeedbackKind, LossVectorFeedback
from dponline.rng import RngLike

__all__ = ["DPFTRL", "EntropicSimplex", "EuclideanBall", "EuclideanCube"]


@dataclass(frozen=True)
class EntropicSimplex:
    """The probability simplex with the negative-entropy regulariser (experts)."""

    name: ClassVar[str] = "simplex"

    def argmin(self, eta: float, cumulative: np.ndarray) -> np.ndarray:
        """softmax(-eta L) along the last axis, computed stably."""
        z = -eta * cumulative
        z = z - z.max(axis=-1, keepdims=True)
        w = np.exp(z)
        return w / w.sum(axis=-1, keepdims=True)

    def range_of_regulariser(self, dim: int) -> float:
        """D_R = max R - min R = log N."""
        return math.log(dim)


@dataclass(frozen=True)
class EuclideanBall:
    """The Euclidean ball of radius ``radius`` with R(x) = ||x||^2."""

    radius: float = 1.0
    name: ClassVar[str] = "ball"

    def argmin(self, eta: float, cumulative: np.ndarray) -> np.ndarray:
        x = -eta * cumulative / 2.0
        n = np.linalg.norm(x, axis=-1, keepdims=True)
        return x * np.minimum(1.0, self.radius / np.where(n > 0, n, 1.0))

    def range_of_regulariser(self, dim: int) -> float:
        return self.radius**2


@dataclass(frozen=True)
class EuclideanCube:
    """The cube [-1, 1]^N with R(x) = ||x||^2."""

    name: ClassVar[str] = "cube"

    def argmin(self, eta: float, cumulative: np.ndarray) -> np.ndarray:
        return np.clip(-eta * cumulative / 2.0, -1.0, 1.0)

    def range_of_regulariser(self, dim: int) -> float:
        return float(dim)


class DPFTRL:
    """Private FTRL (Agarwal & Singh 2017, Algorithm 1) on a continual counter.

    Parameters
    ----------
    dim, horizon:
        Number of experts / coordinates N and rounds T.
    epsilon, delta:
        The budget; ``epsilon=None`` runs the non-private FTRL it privatises (exact sums).
    noise:
        "laplace" (pure DP, Theorem 3.1) or "gaussian" (Theorem A.1).
    calibration:
        "paper" (the paper's noise on the tree of Algorithm 2) or "tight" (least provable noise
        on ``mechanism``).
    mechanism:
        Continual counter; defaults to "padded_tree" for "paper" and "honaker" for "tight".
    domain:
        :class:`EntropicSimplex` (default), :class:`EuclideanBall` or :class:`EuclideanCube`.
    loss_bounds:
        The declared loss set Y (default [0, 1]^N); inputs outside raise unless ``clip``.
    eta:
        Learning rate; defaults to sqrt(D_R / T) for losses of sup-norm at most 1.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR
    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 1 (with Algorithm 2)"

    def __init__(
        self,
        dim: int,
        horizon: int,
        *,
        epsilon: float | None = 1.0,
        delta: float = 0.0,
        noise: str = "laplace",
        calibration: str = "tight",
        mechanism: str | None = None,
        domain: EntropicSimplex | EuclideanBall | EuclideanCube | None = None,
        loss_bounds: InputBounds | None = None,
        eta: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self.dim = int(dim)
        self.horizon = int(horizon)
        self.replicas = int(replicas)
        self.domain = domain if domain is not None else EntropicSimplex()
        self.bounds = loss_bounds if loss_bounds is not None else Box(0.0, 1.0, dim=self.dim)
        if self.bounds.dim != self.dim:
            raise ValueError(f"loss_bounds has dimension {self.bounds.dim}, expected {self.dim}")
        if eta is None:
            eta = math.sqrt(max(self.domain.range_of_regulariser(self.dim), 1e-12) / self.horizon)
        if not (eta > 0 and math.isfinite(eta)):
            raise ValueError(f"eta must be a finite positive number, got {eta!r}")
        self.eta = float(eta)
        self.epsilon = epsilon
        self.t = 0
        if epsilon is None:
            # the non-private FTRL: exact prefix sums, same input contract
            self.counter: ContinualCounter = BinaryTreeCounter(
                self.horizon,
                self.dim,
                GaussianNoise(0.0),
                replicas=self.replicas,
                rng=rng,
                bounds=self.bounds,
                clip=clip,
            )
            self.privacy: PrivacyGuarantee | None = None
        else:
            if mechanism is None:
                mechanism = "padded_tree" if calibration == "paper" else "honaker"
            counter = make_counter(
                mechanism,
                horizon=self.horizon,
                bounds=self.bounds,
                epsilon=epsilon,
                delta=delta,
                noise=noise,
                calibration=calibration,
                replicas=self.replicas,
                rng=rng,
                clip=clip,
            )
            assert isinstance(counter, ContinualCounter)
            self.counter = counter
            self.privacy = counter.privacy
        self._cumulative = self.counter.initial_release()

    def act(self) -> np.ndarray:
        """x_t = argmin eta <x, L~_{t-1}> + R(x), shape (replicas, dim)."""
        return self.domain.argmin(self.eta, self._cumulative)

    def observe(self, feedback: Feedback) -> None:
        if not isinstance(feedback, LossVectorFeedback):
            raise TypeError(f"DPFTRL observes LossVectorFeedback, got {type(feedback).__name__}")
        self._cumulative = self.counter.step(feedback.loss)
        self.t += 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "cumulative": self._cumulative.copy(),
            "counter": self.counter.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.counter.load_state_dict(state["counter"])
        self._cumulative = np.array(state["cumulative"], dtype=float)
        self.t = int(state["t"])
