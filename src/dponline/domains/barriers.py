"""Self-concordant barriers of the convex sets SCRiBLe plays on (Abernethy, Hazan & Rakhlin
2012; Nesterov & Nemirovski 1994), vectorised over a leading replicas axis.

* :class:`BallBarrier`: the Euclidean ball ||x|| <= r, R(x) = -log(r^2 - ||x||^2), nu = 1;
* :class:`BoxBarrier`: the box lo <= x <= hi, R(x) = -sum log(x_i - lo_i) - sum log(hi_i - x_i),
  nu = 2N;
* :class:`PolytopeBarrier`: {x : A x <= b}, the log barrier R(x) = -sum_j log(b_j - a_j^T x),
  nu = m (the number of constraints).

Each offers ``value``, ``gradient``, ``hessian`` (shapes (R,), (R, N), (R, N, N)), ``contains``,
the self-concordance parameter ``nu``, ``analytic_center`` (the minimiser of R, SCRiBLe's
first point), ``max_norm`` (sup ||x||_2 over the set) and ``max_abs_linear(l)`` (sup |<l, x>|).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog

__all__ = ["BallBarrier", "BoxBarrier", "PolytopeBarrier", "SelfConcordantBarrier"]


class SelfConcordantBarrier(ABC):
    """A nu-self-concordant barrier of a compact convex set with non-empty interior."""

    dim: int
    nu: float

    @abstractmethod
    def slack(self, x: np.ndarray) -> np.ndarray:
        """Positive on the interior, for every replica: shape (R, m)."""

    def contains(self, x: np.ndarray) -> np.ndarray:
        """Strict interior membership per replica."""
        return np.all(self.slack(np.atleast_2d(x)) > 0, axis=-1)

    @abstractmethod
    def value(self, x: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def gradient(self, x: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def hessian(self, x: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def analytic_center(self) -> np.ndarray: ...

    @abstractmethod
    def max_norm(self) -> float:
        """sup_{x in K} ||x||_2."""

    @abstractmethod
    def min_linear(self, c: np.ndarray) -> float:
        """min_{x in K} <c, x> (the best fixed decision's loss in hindsight)."""

    def max_abs_linear(self, loss: np.ndarray) -> float:
        """sup_{x in K} |<l, x>|."""
        return max(abs(self.min_linear(loss)), abs(self.min_linear(-loss)))


@dataclass(frozen=True)
class BallBarrier(SelfConcordantBarrier):
    dim: int
    radius: float = 1.0
    nu: float = field(default=1.0, init=False)

    def slack(self, x: np.ndarray) -> np.ndarray:
        return (self.radius**2 - (x * x).sum(axis=-1))[..., None]

    def value(self, x: np.ndarray) -> np.ndarray:
        return -np.log(self.slack(x)[..., 0])

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return 2.0 * x / self.slack(x)

    def hessian(self, x: np.ndarray) -> np.ndarray:
        s = self.slack(x)[..., None]
        eye = np.eye(self.dim)
        return 2.0 * eye / s + 4.0 * x[..., :, None] * x[..., None, :] / s**2

    def analytic_center(self) -> np.ndarray:
        return np.zeros(self.dim)

    def max_norm(self) -> float:
        return float(self.radius)

    def min_linear(self, c: np.ndarray) -> float:
        return float(-self.radius * np.linalg.norm(c))


@dataclass(frozen=True)
class BoxBarrier(SelfConcordantBarrier):
    dim: int
    low: float = -1.0
    high: float = 1.0

    @property
    def nu(self) -> float:  # type: ignore[override]
        return 2.0 * self.dim

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"BoxBarrier needs low < high, got [{self.low}, {self.high}]")

    def slack(self, x: np.ndarray) -> np.ndarray:
        return np.concatenate([x - self.low, self.high - x], axis=-1)

    def value(self, x: np.ndarray) -> np.ndarray:
        return -np.log(x - self.low).sum(axis=-1) - np.log(self.high - x).sum(axis=-1)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return -1.0 / (x - self.low) + 1.0 / (self.high - x)

    def hessian(self, x: np.ndarray) -> np.ndarray:
        d = 1.0 / (x - self.low) ** 2 + 1.0 / (self.high - x) ** 2
        return d[..., :, None] * np.eye(self.dim)

    def analytic_center(self) -> np.ndarray:
        return np.full(self.dim, (self.low + self.high) / 2.0)

    def max_norm(self) -> float:
        return float(math.sqrt(self.dim) * max(abs(self.low), abs(self.high)))

    def min_linear(self, c: np.ndarray) -> float:
        return float(np.where(c > 0, self.low, self.high) @ c)


class PolytopeBarrier(SelfConcordantBarrier):
    """The log barrier of {x : A x <= b} (bounded, with non-empty interior)."""

    def __init__(self, a: np.ndarray, b: np.ndarray) -> None:
        self.a = np.asarray(a, dtype=float)
        self.b = np.asarray(b, dtype=float)
        if self.a.ndim != 2 or self.b.shape != (self.a.shape[0],):
            raise ValueError(f"need A (m, N) and b (m,), got {self.a.shape} and {self.b.shape}")
        self.dim = self.a.shape[1]
        self.nu = float(self.a.shape[0])
        self._center = self._compute_center()

    def __repr__(self) -> str:
        return f"PolytopeBarrier(a={self.a.tolist()!r}, b={self.b.tolist()!r})"

    def slack(self, x: np.ndarray) -> np.ndarray:
        return self.b - x @ self.a.T

    def value(self, x: np.ndarray) -> np.ndarray:
        return -np.log(self.slack(x)).sum(axis=-1)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return (1.0 / self.slack(x)) @ self.a

    def hessian(self, x: np.ndarray) -> np.ndarray:
        w = 1.0 / self.slack(x) ** 2  # (..., m)
        return np.einsum("...j,jp,jq->...pq", w, self.a, self.a)

    def _compute_center(self) -> np.ndarray:
        # a strictly interior start: the Chebyshev centre (an LP), then damped Newton on R
        norms = np.linalg.norm(self.a, axis=1)
        res = linprog(
            np.r_[np.zeros(self.dim), -1.0],
            A_ub=np.c_[self.a, norms],
            b_ub=self.b,
            bounds=[(None, None)] * self.dim + [(0, None)],
        )
        if res.status != 0 or res.x[-1] <= 0:
            raise ValueError("the polytope {A x <= b} must be bounded with non-empty interior")
        x = res.x[:-1][None, :]
        for _ in range(100):
            g, h = self.gradient(x), self.hessian(x)
            step = np.linalg.solve(h, g[..., None])[..., 0]
            dec = float(np.sqrt((g * step).sum()))
            x = x - step / (1.0 + dec)
            if dec < 1e-12:
                break
        return x[0]

    def analytic_center(self) -> np.ndarray:
        return self._center.copy()

    def _extreme(self, c: np.ndarray) -> float:
        res = linprog(c, A_ub=self.a, b_ub=self.b, bounds=[(None, None)] * self.dim)
        if res.status != 0:
            raise ValueError("the polytope must be bounded")
        return float(res.fun)

    def max_norm(self) -> float:
        # ||x||_2 is convex: its max over a polytope is at a vertex; bound it by the box
        # [min x_i, max x_i] (exact for boxes, an upper bound otherwise)
        lo = np.array([self._extreme(e) for e in np.eye(self.dim)])
        hi = np.array([-self._extreme(-e) for e in np.eye(self.dim)])
        return float(np.linalg.norm(np.maximum(np.abs(lo), np.abs(hi))))

    def min_linear(self, c: np.ndarray) -> float:
        return self._extreme(np.asarray(c, dtype=float))
