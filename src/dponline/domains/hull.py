"""The convex hull of finitely many given points."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from dponline.domains.affine import AffineHull, StoredGeometry, orthonormal_span
from dponline.domains.base import ConvexDomain, scale_rows
from dponline.domains.checks import (
    SINGLETON_RADIUS,
    as_points,
    checked_finite_array,
    checked_tol,
    readonly,
)
from dponline.domains.facets import Facets
from dponline.domains.min_norm_point import contains_rows

__all__ = ["QHULL_MAX_DIM", "VertexHull"]

#: largest affine dimension for which the facets are enumerated with Qhull
QHULL_MAX_DIM = 8


class VertexHull(StoredGeometry, ConvexDomain):
    """conv(vertices) for ``vertices`` of shape (k, n) (repeated or non-extreme points allowed).

    * LMO: the given point with the smallest <d, v>; ties go to the first such row of
      ``vertices``. The scores are computed with :func:`numpy.einsum` (no BLAS), so every
      replica's scores are rounded the same way, from the direction scaled by the base class
      and the points scaled once by the power of two that puts their largest absolute
      coordinate in [1, 2): exact scalings, so the scores are the plain ones times a power of
      two (the same argmin) wherever those neither overflow nor underflow, and they never
      overflow (each is at most 4 n in size).
    * Diameter: the largest pairwise distance of the points, exact.
    * Affine hull: the mean of the points plus the span of their deviations (an SVD,
      made canonical by :func:`~dponline.domains.affine.orthonormal_span`).
    * Facets: for affine dimension 2..:data:`QHULL_MAX_DIM`, Qhull
      (:class:`scipy.spatial.ConvexHull`) in coordinates of the hull gives the complete
      H-representation; in dimension 1 the two end points do. The interior point and the
      inscribed radius are then the Chebyshev centre within the hull (an LP,
      :mod:`dponline.domains.facets`), exact up to Qhull's rounding. In higher dimension (or if
      Qhull fails) a simplex of d + 1 affinely independent points is chosen greedily (each new
      point the furthest from the affine span of those chosen), and its Chebyshev centre and
      radius are reported: the simplex lies in the hull and has its dimension, so this is a
      proven lower bound.
    * Membership: with facets, their certified distance bounds, then Wolfe's minimum-norm point
      over the points (exact) for the undecided rows; without facets, Wolfe after the distance
      to the affine hull.
    """

    def __init__(self, vertices: Any) -> None:
        v = checked_finite_array("vertices", vertices, ndim=2)
        if v.shape[0] < 1 or v.shape[1] < 1:
            raise ValueError(f"vertices must have shape (k, n) with k, n >= 1, got {v.shape}")
        self.vertices = readonly(v)
        self.dim = v.shape[1]
        self._scaled_vertices = readonly(scale_rows(v.reshape(1, -1))[0].reshape(v.shape))
        mean = v.mean(axis=0)
        self._hull = AffineHull(readonly(mean), readonly(orthonormal_span(v - mean, self.dim)))
        self._facets, self._facets_complete = self._build_facets()
        self._diameter: float | None = None
        if self.affine_dim == 0:
            self._centre_r = (self._hull.point, SINGLETON_RADIUS)
        else:
            c, r = self._facets.chebyshev_centre()
            self._centre_r = (readonly(c), r)

    def __repr__(self) -> str:
        return f"VertexHull(points={self.vertices.shape[0]}, dim={self.dim})"

    def _build_facets(self) -> tuple[Facets, bool]:
        q, m = self._hull.basis, self._hull.point
        d = q.shape[1]
        z = (self.vertices - m) @ q
        if d == 0:
            return Facets(np.zeros((0, self.dim)), np.zeros(0), self._hull), True
        if d == 1:
            g = np.array([[1.0], [-1.0]])
            off = np.array([-z[:, 0].max(), z[:, 0].min()])
            return self._to_x(g, off), True
        if d <= QHULL_MAX_DIM:
            try:
                qh = ConvexHull(z)
            except QhullError:
                pass
            else:
                return self._to_x(qh.equations[:, :-1], qh.equations[:, -1]), True
        return self._simplex_facets(z), False

    def _to_x(self, normals: np.ndarray, offsets: np.ndarray) -> Facets:
        """Facets normal . z + offset <= 0 in hull coordinates z = Q^T (x - m), as g x <= h."""
        q, m = self._hull.basis, self._hull.point
        g = normals @ q.T
        return Facets(g, g @ m - offsets, self._hull)

    def _simplex_facets(self, z: np.ndarray) -> Facets:
        """The facets of a greedily chosen full-dimensional simplex of the points."""
        d = z.shape[1]
        chosen = [int(np.argmax(np.linalg.norm(z, axis=1)))]
        span = np.zeros((d, 0))
        for _ in range(d):
            dev = z - z[chosen[0]]
            resid = dev - (dev @ span) @ span.T
            j = int(np.argmax(np.linalg.norm(resid, axis=1)))
            chosen.append(j)
            span = np.column_stack([span, resid[j] / np.linalg.norm(resid[j])])
        s = z[chosen]  # (d + 1, d)
        # barycentric coordinates lambda = M^{-1} [z; 1] >= 0
        minv = np.linalg.inv(np.vstack([s.T, np.ones(d + 1)]))
        normals = -minv[:, :d]  # lambda_i >= 0  <=>  -a_i . z - b_i <= 0
        offsets = -minv[:, d]
        return self._to_x(normals, offsets)

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        scores = np.einsum("...n,kn->...k", direction, self._scaled_vertices)
        return self.vertices[np.argmin(scores, axis=-1)]

    @property
    def diameter(self) -> float:
        if self._diameter is None:
            v = self.vertices - self._hull.point
            sq = (v * v).sum(axis=1)
            best = 0.0
            for start in range(0, v.shape[0], 1024):
                block = v[start : start + 1024]
                d2 = sq[start : start + 1024, None] + sq[None, :] - 2.0 * (block @ v.T)
                best = max(best, float(d2.max()))
            self._diameter = float(np.sqrt(max(best, 0.0)))
        return self._diameter

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        t = checked_tol(tol)
        pts = as_points(x, self.dim)
        c, r = self._centre_r

        def bounds(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            if self._facets_complete:
                return self._facets.distance_bounds(rows, c, r)
            return self._hull.distance(rows), np.full(rows.shape[0], np.inf)

        return contains_rows(pts, t, self.lmo, c, bounds)
