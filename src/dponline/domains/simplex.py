"""The probability simplex {x >= 0, sum x = 1}, the corner simplex {x >= 0, sum x <= 1}, and the
Euclidean projections onto simplices and capped simplices {0 <= x <= 1, sum x = s} that the
matroid polytopes reuse."""

from __future__ import annotations

import math

import numpy as np

from dponline.domains.affine import sum_zero_basis
from dponline.domains.base import ConvexDomain, FullDimensional
from dponline.domains.checks import (
    SINGLETON_RADIUS,
    as_points,
    contains_by_projection,
    readonly,
)
from dponline.privacy.arguments import checked_count

__all__ = ["CornerSimplex", "Simplex", "project_capped_simplex", "project_simplex"]


def project_simplex(y: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Euclidean projection of each row of ``y`` onto {x >= 0, sum x = total} (total > 0), by
    the sort-based algorithm (Held, Wolfe & Crowder 1974; Duchi et al. 2008): with u the row
    sorted decreasingly and rho the largest j with u_j > (sum_{i<=j} u_i - total) / j, the
    projection is max(y - theta, 0), theta = (sum_{i<=rho} u_i - total) / rho.

    Robust at every finite scale: the projection is unchanged by adding a constant to a row,
    and an entry y_i <= max(y) - total is 0 in it (theta >= max(y) - total, since the largest
    entry of the projection is at most total), so the algorithm runs on
    z = max(y - max(y), -total), whose entries lie in [-total, 0]. The entries that matter
    (within ``total`` of the largest) are subtracted exactly when the largest is large
    (Sterbenz), so the result is a member of the simplex even for rows of size 1e300."""
    y = np.asarray(y, dtype=float)
    n = y.shape[-1]
    with np.errstate(over="ignore"):  # a difference beyond the range is -inf, then clipped
        z = np.maximum(y - y.max(axis=-1, keepdims=True), -total)
    u = -np.sort(-z, axis=-1)
    css = np.cumsum(u, axis=-1) - total
    k = np.arange(1, n + 1)
    rho = np.count_nonzero(u - css / k > 0, axis=-1)
    rho = np.maximum(rho, 1)
    theta = np.take_along_axis(css, (rho - 1)[..., None], axis=-1) / rho[..., None]
    return np.maximum(z - theta, 0.0)


def project_capped_simplex(y: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of each row of ``y`` onto {0 <= x <= 1, sum x = total}
    (0 <= total <= n). The projection is clip(y - tau, 0, 1) with tau solving
    g(tau) = sum clip(y - tau, 0, 1) = total (KKT conditions; g is non-increasing and piecewise
    linear). tau is bracketed by bisection to rounding level, then solved exactly on the linear
    piece found: tau = (sum_free y + #ones - total) / #free.

    Robust at every finite scale: with c the m-th largest entry of the row, m = ceil(total),
    g(c) <= m - 1 < total and g(c - 1) >= m >= total, so a root tau lies in [c - 1, c); every
    entry >= c + 1 is then 1 and every entry <= c - 1 is 0 in the projection, and the
    algorithm runs on the shifted, clipped row z = clip(y - c, -1, 1) (the entries within 1
    of c are subtracted exactly when c is large, by Sterbenz's lemma)."""
    y = np.asarray(y, dtype=float)
    shape = y.shape
    n = shape[-1]
    if total <= 0:
        return np.zeros(shape)
    if total >= n:
        return np.ones(shape)
    m = math.ceil(total)
    raw = y.reshape(-1, n)
    c = -np.partition(-raw, m - 1, axis=1)[:, m - 1 : m]
    with np.errstate(over="ignore"):  # a difference beyond the range is +-inf, then clipped
        flat = np.clip(raw - c, -1.0, 1.0)
    lo = flat.min(axis=1) - 1.0  # g(lo) = n > total
    hi = flat.max(axis=1)  # g(hi) = 0 < total
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):
            break
        g = np.clip(flat - mid[:, None], 0.0, 1.0).sum(axis=1)
        above = g > total
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    tau = 0.5 * (lo + hi)
    z = flat - tau[:, None]
    free = (z > 0) & (z < 1)
    nfree = free.sum(axis=1)
    ones = (z >= 1).sum(axis=1)
    exact = (np.where(free, flat, 0.0).sum(axis=1) + ones - total) / np.maximum(nfree, 1)
    tau = np.where(nfree > 0, exact, tau)
    return np.clip(flat - tau[:, None], 0.0, 1.0).reshape(shape)


def _unit_vertex(d: np.ndarray, take: np.ndarray | None = None) -> np.ndarray:
    """e_i at i = argmin of each row (first index on ties); rows where ``take`` is False get 0."""
    out = np.zeros_like(d)
    idx = np.argmin(d, axis=-1)[..., None]
    val = np.ones(idx.shape) if take is None else take[..., None].astype(float)
    np.put_along_axis(out, idx, val, axis=-1)
    return out


class Simplex(ConvexDomain):
    """The probability simplex {x in R^n : x >= 0, sum x = 1}, vertices e_1, ..., e_n.

    * LMO: e_i for i = argmin_i d_i; ties go to the smallest index (so d = 0 gives e_1).
    * Diameter sqrt(2) (= ||e_i - e_j||, the largest distance between vertices; the diameter of
      a polytope is attained at vertices), 0 for n = 1.
    * Affine hull {sum x = 1}, dimension n - 1; interior point the barycentre 1/n.
    * Inscribed radius 1 / sqrt(n (n - 1)), exact: the facets within the hull are x_i = 0; from
      the barycentre, x_i falls fastest along the projection of -e_i onto {sum v = 0}, of norm
      ||e_i - 1/n|| = sqrt((n - 1) / n), so the distance to the facet is
      (1/n) / sqrt((n - 1)/n).
    * ``project``: the sort-based algorithm (:func:`project_simplex`); ``contains`` compares the
      distance to the projection with ``tol``.
    """

    def __init__(self, dim: int) -> None:
        self.dim = checked_count("dim", dim)
        self._basis: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"Simplex(dim={self.dim})"

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        return _unit_vertex(direction)

    @property
    def diameter(self) -> float:
        return math.sqrt(2.0) if self.dim > 1 else 0.0

    @property
    def affine_dim(self) -> int:
        return self.dim - 1

    def hull_basis(self) -> np.ndarray:
        if self._basis is None:
            self._basis = readonly(sum_zero_basis(self.dim))
        return self._basis

    def interior_point(self) -> np.ndarray:
        return np.full(self.dim, 1.0 / self.dim)

    @property
    def inscribed_radius(self) -> float:
        n = self.dim
        return 1.0 / math.sqrt(n * (n - 1)) if n > 1 else SINGLETON_RADIUS

    def project(self, x: np.ndarray) -> np.ndarray:
        return project_simplex(as_points(x, self.dim))

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return contains_by_projection(self.project, x, self.dim, tol)


class CornerSimplex(FullDimensional, ConvexDomain):
    """The corner simplex {x in R^n : x >= 0, sum x <= 1} = conv(0, e_1, ..., e_n).

    * LMO: e_i for i = argmin_i d_i if d_i < 0, else the origin; ties go to the smallest index,
      and a minimum of exactly 0 gives the origin.
    * Diameter sqrt(2) for n >= 2 (between e_i and e_j), 1 for n = 1.
    * Full-dimensional. Interior point and inscribed radius: the incentre t 1 with radius t,
      t = 1 / (n + sqrt(n)) (exact): the distances from t 1 to the facets x_i = 0 and
      sum x = 1 are t and (1 - n t) / sqrt(n); equating them gives t.
    * ``project``: clip at 0; if the sum exceeds 1, the simplex projection instead (KKT).
    """

    def __init__(self, dim: int) -> None:
        self.dim = checked_count("dim", dim)

    def __repr__(self) -> str:
        return f"CornerSimplex(dim={self.dim})"

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        return _unit_vertex(direction, direction.min(axis=-1) < 0)

    @property
    def diameter(self) -> float:
        return math.sqrt(2.0) if self.dim > 1 else 1.0

    def interior_point(self) -> np.ndarray:
        return np.full(self.dim, self.inscribed_radius)

    @property
    def inscribed_radius(self) -> float:
        return 1.0 / (self.dim + math.sqrt(self.dim))

    def project(self, x: np.ndarray) -> np.ndarray:
        y = as_points(x, self.dim)
        clipped = np.maximum(y, 0.0)
        with np.errstate(over="ignore"):  # a sum beyond the range is +inf, correctly > 1
            over = clipped.sum(axis=-1, keepdims=True) > 1.0
        return np.where(over, project_simplex(y), clipped)

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return contains_by_projection(self.project, x, self.dim, tol)
