"""The l_p ball {||x||_p <= r} and its linear minimisation oracle, for 1 <= p <= inf.

By Hoelder's inequality, with q = p / (p - 1) the dual exponent,

    argmin_{||v||_p <= r} <c, v> = -r sign(c) |c|^{q-1} / ||c||_q^{q-1}   (1 < p < inf),

a signed vertex -r sign(c_i) e_i at the largest |c_i| for p = 1, and -r sign(c) for p = inf;
the minimum value is -r ||c||_q. Vectorised over a leading replicas axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["LpBall", "dual_exponent"]


def dual_exponent(p: float) -> float:
    """q with 1/p + 1/q = 1 (q = inf for p = 1, q = 1 for p = inf)."""
    if p == 1:
        return math.inf
    if p == math.inf:
        return 1.0
    return p / (p - 1.0)


@dataclass(frozen=True)
class LpBall:
    """The l_p ball of radius ``radius`` in R^dim."""

    dim: int
    p: float
    radius: float = 1.0

    def __post_init__(self) -> None:
        if not (self.p >= 1):
            raise ValueError(f"p must be >= 1 (or inf), got {self.p!r}")
        if not (self.radius > 0 and math.isfinite(self.radius)):
            raise ValueError(f"radius must be finite and positive, got {self.radius!r}")

    @property
    def q(self) -> float:
        return dual_exponent(self.p)

    def norm(self, x: np.ndarray) -> np.ndarray:
        a = np.abs(x)
        if self.p == math.inf:
            return a.max(axis=-1)
        return (a**self.p).sum(axis=-1) ** (1.0 / self.p)

    def lmo(self, c: np.ndarray) -> np.ndarray:
        """argmin_{||v||_p <= r} <c, v>, row by row (c = 0 gives 0)."""
        c = np.asarray(c, dtype=float)
        if self.p == math.inf:
            return -self.radius * np.sign(c)
        if self.p == 1:
            out = np.zeros_like(c)
            idx = np.argmax(np.abs(c), axis=-1)
            np.put_along_axis(
                out,
                idx[..., None],
                -self.radius * np.sign(np.take_along_axis(c, idx[..., None], -1)),
                axis=-1,
            )
            return out
        q = self.q
        a = np.abs(c)
        scale = a.max(axis=-1, keepdims=True)  # for stability with large q
        safe = np.where(scale > 0, scale, 1.0)
        w = (a / safe) ** (q - 1.0)
        nq = ((a / safe) ** q).sum(axis=-1, keepdims=True) ** ((q - 1.0) / q)
        v = -self.radius * np.sign(c) * w / np.where(nq > 0, nq, 1.0)
        return np.where(scale > 0, v, 0.0)

    def min_linear(self, c: np.ndarray) -> np.ndarray:
        """min_{||v||_p <= r} <c, v> = -r ||c||_q."""
        a = np.abs(np.asarray(c, dtype=float))
        q = self.q
        nq = a.max(axis=-1) if q == math.inf else (a**q).sum(axis=-1) ** (1.0 / q)
        return -self.radius * nq

    def diameter(self) -> float:
        """The l_p diameter 2r."""
        return 2.0 * self.radius
