"""The box [lo, hi] = {x : lo_i <= x_i <= hi_i} (scalar bounds are broadcast)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dponline.domains.barriers import BoxBarrier, PolytopeBarrier, SelfConcordantBarrier
from dponline.domains.base import ConvexDomain, FullDimensional
from dponline.domains.checks import (
    as_points,
    checked_finite_array,
    contains_by_projection,
    readonly,
)
from dponline.privacy.arguments import checked_count

__all__ = ["Box"]


class Box(FullDimensional, ConvexDomain):
    """The box [lo, hi] in R^dim, lo < hi coordinatewise (full-dimensional).

    * LMO: coordinatewise, hi_i where d_i < 0 and lo_i where d_i >= 0 (a zero coordinate of
      the direction, a tie, takes lo_i).
    * Diameter ||hi - lo||_2 (between opposite corners), exact.
    * Interior point the centre (lo + hi) / 2; inscribed radius min_i (hi_i - lo_i) / 2, exact
      (the distance from the centre to the nearest facet x_i = lo_i or hi_i).
    * ``project`` = clip; ``contains`` = ||x - clip(x)|| <= tol, the exact distance.
    * ``barrier``: the log barrier (:class:`BoxBarrier` for scalar bounds, a
      :class:`PolytopeBarrier` otherwise).
    """

    def __init__(self, dim: int, lo: Any = -1.0, hi: Any = 1.0) -> None:
        self.dim = n = checked_count("dim", dim)
        low = checked_finite_array("lo", lo)
        high = checked_finite_array("hi", hi)
        try:
            low, high = np.broadcast_to(low, (n,)), np.broadcast_to(high, (n,))
        except ValueError as err:
            raise ValueError(
                f"lo and hi must be scalars or of length {n}, got shapes {np.shape(lo)} and "
                f"{np.shape(hi)}"
            ) from err
        if not np.all(low < high):
            bad = int(np.flatnonzero(~(low < high))[0])
            raise ValueError(
                f"Box needs lo < hi in every coordinate, got lo[{bad}] = {low[bad]!r} and "
                f"hi[{bad}] = {high[bad]!r}"
            )
        self.lo, self.hi = readonly(low), readonly(high)

    def __repr__(self) -> str:
        return f"Box(dim={self.dim}, lo={self.lo.tolist()}, hi={self.hi.tolist()})"

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        return np.where(direction < 0, self.hi, self.lo)

    @property
    def diameter(self) -> float:
        return float(np.linalg.norm(self.hi - self.lo))

    def interior_point(self) -> np.ndarray:
        return (self.lo + self.hi) / 2.0

    @property
    def inscribed_radius(self) -> float:
        return float((self.hi - self.lo).min() / 2.0)

    def project(self, x: np.ndarray) -> np.ndarray:
        return np.clip(as_points(x, self.dim), self.lo, self.hi)

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return contains_by_projection(self.project, x, self.dim, tol)

    @property
    def barrier(self) -> SelfConcordantBarrier:
        if np.all(self.lo == self.lo[0]) and np.all(self.hi == self.hi[0]):
            return BoxBarrier(self.dim, float(self.lo[0]), float(self.hi[0]))
        eye = np.eye(self.dim)
        return PolytopeBarrier(np.r_[eye, -eye], np.r_[self.hi, -self.lo])
