"""Affine hulls: orthonormal bases of their direction spaces, the distance to them, and the
search for affinely independent vertices of a set known only through its linear oracle.

An :class:`AffineHull` is ``point + span(basis)`` with ``basis`` orthonormal, shape
``(dim, affine_dim)``. The bases are computed by singular value decompositions
(:func:`orthonormal_null_space` and :func:`orthonormal_span`) and then made canonical
(:func:`canonical_basis`: a function of the subspace alone, so that a LAPACK build, which may
return any basis of a space whose singular values repeat, cannot change it), or in closed form
(:func:`sum_zero_basis`, the Helmert basis of the hyperplane sum v = 0 that simplices,
matroids and the Birkhoff polytope use).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import null_space

__all__ = [
    "AffineHull",
    "CentreByMethod",
    "StoredGeometry",
    "affinely_independent_vertices",
    "blocks_sum_zero_basis",
    "canonical_basis",
    "discover_affine_hull",
    "orthonormal_null_space",
    "orthonormal_span",
    "sum_zero_basis",
]

#: relative singular-value cut-off used to decide ranks
RANK_RTOL = 1e-10

#: :func:`canonical_basis` takes the first coordinate whose remaining squared norm is at least
#: this fraction of the largest; irrational, so that no rational subspace puts a coordinate
#: exactly on the threshold (where rounding would decide)
_PIVOT_FRACTION = float(np.exp(-1.0))


def canonical_basis(basis: np.ndarray) -> np.ndarray:
    """The orthonormal basis of span(``basis``) that depends on the subspace alone.

    ``basis`` is orthonormal, shape (n, k). A decomposition returns *some* orthonormal basis of
    a subspace: where singular values repeat (always, for a null space of dimension 2 or more)
    which one depends on the LAPACK build, and with it every number a learner computes in the
    hull's coordinates under a fixed seed. This one is Gram-Schmidt on the columns P e_i of the
    projector P = B B^T (a function of the subspace only), taken in coordinate order, the
    first column whose remaining squared norm is at least 1/e of the largest remaining one
    each time: each kept direction has squared norm at least 1/e (k - j) / n before it is
    normalised (so rounding moves it by about machine precision, never more), and its own
    coordinate is positive (<r, e_i> = ||r||^2). Two bases of one subspace give the same
    result to rounding; the cost is O(n^2 k)."""
    b = np.asarray(basis, dtype=float)
    n, k = b.shape
    if k == 0 or k == n:
        return np.eye(n) if k == n else b.copy()
    rest = b @ b.T  # columns: what remains of each P e_i outside the directions kept
    out = np.zeros((n, k))
    for j in range(k):
        mass = np.einsum("ij,ij->j", rest, rest)
        i = int(np.flatnonzero(mass >= _PIVOT_FRACTION * mass.max())[0])
        u = rest[:, i] / math.sqrt(mass[i])
        u -= out[:, :j] @ (out[:, :j].T @ u)  # once more against rounding
        u /= np.linalg.norm(u)
        out[:, j] = u
        rest -= np.outer(u, u @ rest)
    return out


def orthonormal_null_space(constraints: np.ndarray, dim: int) -> np.ndarray:
    """Orthonormal basis (dim, k) of {v : constraints @ v = 0}, canonical
    (:func:`canonical_basis`); the identity for no rows."""
    m = np.asarray(constraints, dtype=float).reshape(-1, dim)
    if m.shape[0] == 0 or not np.any(m):
        return np.eye(dim)
    scale = float(np.abs(m).max())
    return canonical_basis(null_space(m / scale, rcond=RANK_RTOL))


def sum_zero_basis(n: int) -> np.ndarray:
    """The Helmert basis of {v in R^n : sum v = 0}, shape (n, n - 1): column k - 1 is
    (1, ..., 1, -k, 0, ..., 0) / sqrt(k (k + 1)) with k ones, k = 1..n-1 (orthonormal by
    construction, no decomposition needed)."""
    basis = np.zeros((n, max(n - 1, 0)))
    for k in range(1, n):
        basis[:k, k - 1] = 1.0
        basis[k, k - 1] = -float(k)
        basis[:, k - 1] /= np.sqrt(k * (k + 1.0))
    return basis


def blocks_sum_zero_basis(dim: int, blocks: Any) -> np.ndarray:
    """Orthonormal basis, shape (dim, k), of {y in R^dim : sum_{e in B} y_e = 0 for every
    block B, y_e = 0 off the blocks}: the direction space of a polytope fixed to a constant sum
    on each block (a matroid base polytope: one block per connected component; blocks of one
    element are fixed)."""
    cols = []
    for c in blocks:
        c = np.asarray(c, dtype=np.intp)
        if c.size < 2:
            continue
        block = np.zeros((dim, c.size - 1))
        block[c] = sum_zero_basis(c.size)
        cols.append(block)
    return np.column_stack(cols) if cols else np.zeros((dim, 0))


def orthonormal_span(vectors: np.ndarray, dim: int) -> np.ndarray:
    """Orthonormal basis (dim, k) of the span of the rows of ``vectors`` (k its rank),
    canonical (:func:`canonical_basis`)."""
    v = np.asarray(vectors, dtype=float).reshape(-1, dim)
    if v.shape[0] == 0:
        return np.zeros((dim, 0))
    return canonical_basis(_row_space(v))


def _row_space(v: np.ndarray) -> np.ndarray:
    """Some orthonormal basis (n, rank) of the row space of v (m, n), from its SVD."""
    _, s, vt = np.linalg.svd(v, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        return np.zeros((v.shape[1], 0))
    rank = int(np.sum(s > RANK_RTOL * s[0] * max(v.shape)))
    return vt[:rank].T


@dataclass(frozen=True)
class AffineHull:
    """The affine set ``point + span(basis)``, ``basis`` orthonormal of shape (dim, k)."""

    point: np.ndarray
    basis: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.point.shape[0])

    @property
    def affine_dim(self) -> int:
        return int(self.basis.shape[1])

    def project(self, x: np.ndarray) -> np.ndarray:
        """The orthogonal projection of each row onto the affine set."""
        y = x - self.point
        return self.point + (y @ self.basis) @ self.basis.T

    def distance(self, x: np.ndarray) -> np.ndarray:
        """Euclidean distance of each row to the affine set."""
        return np.linalg.norm(x - self.project(x), axis=-1)

    def hull_norms(self, rows: np.ndarray) -> np.ndarray:
        """``||P a||`` for each row a, P the projector onto the direction space: the rate at
        which <a, x> can change per unit step inside the hull."""
        return np.linalg.norm(rows @ self.basis, axis=-1)


def _flat_threshold(scale: float) -> float:
    return 1e-9 * (1.0 + scale)


def affinely_independent_vertices(
    lmo: Callable[[np.ndarray], np.ndarray], basis: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """``affine_dim + 1`` affinely independent vertices of a polytope P whose direction space is
    span(``basis``), found with 2 oracle calls per dimension: for a unit u in the direction
    space orthogonal to the directions found so far, P is not flat along u (u is in its
    direction space), so LMO(u) or LMO(-u) leaves the hyperplane <u, x> = <u, start>.

    Raises RuntimeError if P turns out flat along some u, i.e. ``basis`` is not the direction
    space of P (a bug in the caller's affine hull)."""
    n, d = basis.shape
    verts = [np.asarray(start, dtype=float)]
    found = np.zeros((n, 0))
    scale = float(np.abs(start).max()) + 1.0
    for _ in range(d):
        rest = basis - found @ (found.T @ basis)
        j = int(np.argmax(np.linalg.norm(rest, axis=0)))
        u = rest[:, j] / np.linalg.norm(rest[:, j])
        best, gain = None, 0.0
        for v in (lmo(u), lmo(-u)):
            g = abs(float(u @ (v - start)))
            if g > gain:
                best, gain = v, g
        if best is None or gain <= _flat_threshold(scale):
            raise RuntimeError(
                "the set is flat along a direction of its claimed affine hull: the hull basis "
                "is wrong"
            )
        w = best - start
        w = w - found @ (found.T @ w)
        found = np.column_stack([found, w / np.linalg.norm(w)])
        verts.append(np.asarray(best, dtype=float))
    return np.array(verts)


def discover_affine_hull(
    lmo: Callable[[np.ndarray], np.ndarray], dim: int
) -> tuple[np.ndarray, np.ndarray]:
    """The affine hull of a polytope known only through its oracle: returns ``(vertices,
    basis)``, ``affine_dim + 1`` affinely independent vertices and an orthonormal basis of the
    direction space L. Each of the ``dim`` steps takes a unit u orthogonal to the directions
    already classified and asks LMO(u), LMO(-u): if <u, x> is not constant on the set, a vertex
    off the current hull is found (its difference to the first vertex lies in L); if it is
    constant, u is orthogonal to L. Constancy is decided with a threshold of 1e-9 (relative to
    the vertices' size), which is exact for sets whose vertices have well-separated
    coordinates (integral vertices, say)."""
    v0 = np.asarray(lmo(np.zeros(dim)), dtype=float)
    scale = float(np.abs(v0).max()) + 1.0
    verts = [v0]
    found = np.zeros((dim, 0))
    flat = np.zeros((dim, 0))
    for _ in range(dim):
        both = np.column_stack([found, flat])
        rest = np.eye(dim) - both @ both.T
        j = int(np.argmax(np.linalg.norm(rest, axis=0)))
        u = rest[:, j] / np.linalg.norm(rest[:, j])
        best, gain = None, 0.0
        for v in (lmo(u), lmo(-u)):
            v = np.asarray(v, dtype=float)
            g = abs(float(u @ (v - v0)))
            scale = max(scale, float(np.abs(v).max()) + 1.0)
            if g > gain:
                best, gain = v, g
        if best is None or gain <= _flat_threshold(scale):
            flat = np.column_stack([flat, u])
            continue
        w = best - v0
        w = w - found @ (found.T @ w)
        w = w - flat @ (flat.T @ w)
        found = np.column_stack([found, w / np.linalg.norm(w)])
        verts.append(best)
    return np.array(verts), found


class CentreByMethod(ABC):
    """Mixin: the contract's ``interior_point`` and ``inscribed_radius`` from the domain's
    ``_centre()``, a (centre, radius) pair it computes once and caches. List it before
    :class:`~dponline.domains.base.ConvexDomain` among the bases."""

    @abstractmethod
    def _centre(self) -> tuple[np.ndarray, float]:
        """The interior point and the inscribed radius (cached by the domain)."""

    def interior_point(self) -> np.ndarray:
        return self._centre()[0].copy()

    @property
    def inscribed_radius(self) -> float:
        return self._centre()[1]


class StoredGeometry(CentreByMethod):
    """Mixin for a domain that keeps its affine hull in ``self._hull`` (:class:`AffineHull`)
    and its interior point and inscribed radius in ``self._centre_r`` (a pair): the contract's
    ``affine_dim``, ``hull_basis``, ``interior_point`` and ``inscribed_radius`` read them. List
    it before :class:`~dponline.domains.base.ConvexDomain` among the bases."""

    _hull: AffineHull
    _centre_r: tuple[np.ndarray, float]

    @property
    def affine_dim(self) -> int:
        return self._hull.affine_dim

    def hull_basis(self) -> np.ndarray:
        return self._hull.basis

    def _centre(self) -> tuple[np.ndarray, float]:
        return self._centre_r
