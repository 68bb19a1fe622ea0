"""The Birkhoff polytope: n x n doubly stochastic matrices, flattened row-major to R^{n^2}
(coordinate i n + j is the entry (i, j))."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment

from dponline.domains.affine import AffineHull, sum_zero_basis
from dponline.domains.base import ConvexDomain
from dponline.domains.checks import SINGLETON_RADIUS, readonly
from dponline.domains.facets import Facets
from dponline.privacy.arguments import checked_count

__all__ = ["BirkhoffPolytope"]


class BirkhoffPolytope(ConvexDomain):
    """{X in R^{n x n} : X >= 0, X 1 = 1, X^T 1 = 1}, flattened row-major (Birkhoff-von Neumann:
    the convex hull of the n! permutation matrices).

    * LMO: the permutation matrix of a minimum-cost assignment for the cost matrix
      ``direction.reshape(n, n)``, by :func:`scipy.optimize.linear_sum_assignment` (one call per
      replica). Ties are broken as that solver breaks them; it is deterministic, so the same
      direction always gives the same vertex.
    * Diameter sqrt(2 n) for n >= 2 (exact: ||P - Q||^2 = 2 n - 2 <P, Q> <= 2 n, with equality
      for the identity and a cyclic shift), 0 for n = 1.
    * Affine hull {X 1 = 1, X^T 1 = 1}, dimension (n - 1)^2; its direction space, the matrices
      with zero row and column sums, has the orthonormal basis h_a h_b^T (a, b < n - 1) for an
      orthonormal basis (h_a) of {v : sum v = 0} (the Kronecker product of the two bases).
    * Interior point J / n. Inscribed radius 1 / (n - 1), exact: within the hull the facets are
      X_ij = 0; the projector onto the direction space is Pi (x) Pi with Pi = I - J/n, so the
      normal e_i e_j^T moves at rate ||Pi e_i|| ||Pi e_j|| = (n - 1)/n, and the slack at J/n is
      1/n.
    * Membership: certified distance bounds from these facets, Wolfe's minimum-norm point with
      this LMO for the undecided rows (:mod:`dponline.domains.min_norm_point`).
    """

    def __init__(self, n: int) -> None:
        self.n = n = checked_count("n", n)
        self.dim = n * n
        h = sum_zero_basis(n)
        self._basis = readonly(np.kron(h, h))
        self._centre = readonly(np.full(self.dim, 1.0 / n))
        hull = AffineHull(self._centre, self._basis)
        self._facets = Facets(-np.eye(self.dim), np.zeros(self.dim), hull)

    def __repr__(self) -> str:
        return f"BirkhoffPolytope(n={self.n})"

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        d = direction  # checked and scaled (base.py): every cost is at most 2 in size
        flat = d.reshape(-1, self.n, self.n)
        out = np.zeros(flat.shape)
        for k, cost in enumerate(flat):
            rows, cols = linear_sum_assignment(cost)
            out[k, rows, cols] = 1.0
        return out.reshape(d.shape)

    @property
    def diameter(self) -> float:
        return math.sqrt(2.0 * self.n) if self.n > 1 else 0.0

    @property
    def affine_dim(self) -> int:
        return (self.n - 1) ** 2

    def hull_basis(self) -> np.ndarray:
        return self._basis

    def interior_point(self) -> np.ndarray:
        return self._centre.copy()

    @property
    def inscribed_radius(self) -> float:
        return 1.0 / (self.n - 1) if self.n > 1 else SINGLETON_RADIUS

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return self._facets.contains(x, tol, self.lmo, self._centre, self.inscribed_radius)
