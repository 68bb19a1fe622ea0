"""Polytopes of uniform and partition matroids: base polytopes (convex hulls of the indicator
vectors of bases) and independence polytopes (of independent sets).

A partition matroid splits the ground set {0, ..., n-1} into blocks B_1, ..., B_m with
capacities k_j; a set is independent iff it meets each block B_j in at most k_j elements, and a
basis iff in exactly k_j (for the base polytope 0 <= k_j <= |B_j|). Its polytopes are products
over the blocks of uniform-matroid polytopes (Edmonds; both systems are totally unimodular):

    bases:        {x : 0 <= x <= 1, x(B_j) = k_j for all j}
    independence: {x : 0 <= x <= 1, x(B_j) <= k_j for all j}

The uniform matroid U(n, k) is the single block {0, ..., n-1}.

Geometry of one block of size m and capacity k (the product's diameter is the root of the sum of
the squared block diameters, its hull the product of the hulls, its inscribed radius the smallest
block radius, since a ball of radius r in the product projects into a ball of radius <= r in
each block):

* base polytope: vertices are k-subsets; two differ in at most 2 min(k, m - k) elements, so the
  diameter is sqrt(2 min(k, m - k)) (exact, attained). The hull is {x(B) = k}, of dimension
  m - 1 when 0 < k < m and 0 otherwise; centre k/m 1. Within the hull the facets are x_i = 0
  and x_i = 1, and x_i moves at rate ||e_i - 1/m|| = sqrt((m-1)/m) per unit step, so the
  inscribed radius at the centre is min(k, m - k) / sqrt(m (m - 1)) (exact).
* independence polytope: two independent sets differ in at most min(m, 2k) elements, so the
  diameter is sqrt(min(m, 2k)) (exact). Full-dimensional when k >= 1 (fixed at 0 when k = 0).
  The ball of radius t around t 1, t = min(1/2, k / (m + sqrt(m))), lies inside: its
  distances to x_i = 0, x_i = 1 and x(B) = k are t, 1 - t >= t and (k - m t)/sqrt(m) >= t
  (exact Chebyshev radius, by symmetry the centre lies on the diagonal).

LMO: within each block, the elements are ordered by the direction (a stable sort, so ties go
to the smaller index); the base polytope takes the first k_j of each block, the independence
polytope the first k_j that have a strictly negative direction. ``project`` is exact (the
capped-simplex projection per block, :func:`~dponline.domains.simplex.project_capped_simplex`),
and ``contains`` compares the distance to the projection with ``tol``.
"""

from __future__ import annotations

import math
import numbers
from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from dponline.domains.affine import sum_zero_basis
from dponline.domains.base import ConvexDomain
from dponline.domains.checks import (
    SINGLETON_RADIUS,
    as_points,
    checked_nonnegative_int,
    contains_by_projection,
    readonly,
)
from dponline.domains.simplex import project_capped_simplex
from dponline.privacy.arguments import checked_count

__all__ = [
    "PartitionMatroidBasePolytope",
    "PartitionMatroidIndependencePolytope",
    "UniformMatroidBasePolytope",
    "UniformMatroidIndependencePolytope",
]


def _checked_blocks(
    blocks: Sequence[Sequence[int]], capacities: Sequence[int]
) -> tuple[list[np.ndarray], list[int]]:
    if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Sequence):
        raise TypeError(f"blocks must be a sequence of index sequences, got {blocks!r}")
    if isinstance(capacities, (str, bytes)) or not isinstance(capacities, Sequence):
        raise TypeError(f"capacities must be a sequence of integers, got {capacities!r}")
    if len(blocks) == 0:
        raise ValueError("blocks must be non-empty")
    if len(capacities) != len(blocks):
        raise ValueError(
            f"need one capacity per block: {len(blocks)} blocks, {len(capacities)} capacities"
        )
    out = []
    for j, b in enumerate(blocks):
        if isinstance(b, (str, bytes)) or not isinstance(b, (Sequence, np.ndarray, range)):
            raise TypeError(f"block {j} must be a sequence of element indices, got {b!r}")
        if len(b) == 0:
            raise ValueError(f"block {j} is empty")
        for e in b:
            if isinstance(e, bool) or not isinstance(e, numbers.Integral):
                raise TypeError(f"block {j} must hold integer indices, got {e!r}")
        out.append(np.array([int(e) for e in b], dtype=np.intp))
    allidx = np.concatenate(out)
    n = allidx.size
    if not np.array_equal(np.sort(allidx), np.arange(n)):
        raise ValueError(
            f"blocks must partition {{0, ..., {n - 1}}} (each index exactly once), got "
            f"{[b.tolist() for b in out]}"
        )
    caps = [checked_nonnegative_int(f"capacities[{j}]", k) for j, k in enumerate(capacities)]
    return out, caps


class _PartitionMatroidPolytope(ConvexDomain):
    """Shared machinery of the partition-matroid polytopes (see the module docstring)."""

    _bases: bool

    def __init__(self, blocks: Sequence[Sequence[int]], capacities: Sequence[int]) -> None:
        self.blocks, self.capacities = _checked_blocks(blocks, capacities)
        self.dim = n = sum(b.size for b in self.blocks)
        if self._bases:
            for j, (b, k) in enumerate(zip(self.blocks, self.capacities, strict=True)):
                if k > b.size:
                    raise ValueError(
                        f"capacities[{j}] = {k} exceeds the size {b.size} of block {j}: the "
                        "matroid has no basis"
                    )
        block_of = np.empty(n, dtype=np.intp)
        for j, b in enumerate(self.blocks):
            block_of[b] = j
        self._block_of = block_of
        sizes = np.array([b.size for b in self.blocks])
        caps = np.array(self.capacities)
        sorted_block = np.sort(block_of, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        rank_in_block = np.arange(n) - starts[sorted_block]
        # in the order (block, direction, index), position i is chosen iff its rank in its block
        # is below the block's capacity
        self._chosen_sorted = rank_in_block < caps[sorted_block]
        self._basis: np.ndarray | None = None

    def __repr__(self) -> str:
        blocks = [b.tolist() for b in self.blocks]
        return f"{type(self).__name__}(blocks={blocks}, capacities={self.capacities})"

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        d = direction
        keys = np.broadcast_to(self._block_of, d.shape)
        order = np.lexsort((d, keys), axis=-1)
        take = np.broadcast_to(self._chosen_sorted, d.shape)
        if not self._bases:
            take = take & (np.take_along_axis(d, order, axis=-1) < 0)
        out = np.zeros(d.shape)
        np.put_along_axis(out, order, take.astype(float), axis=-1)
        return out

    @abstractmethod
    def _block_sq_diameter(self, m: int, k: int) -> int:
        """The squared diameter of one block's polytope (size m, capacity k)."""

    @property
    def diameter(self) -> float:
        return math.sqrt(
            sum(
                self._block_sq_diameter(b.size, k)
                for b, k in zip(self.blocks, self.capacities, strict=True)
            )
        )

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return contains_by_projection(self.project, x, self.dim, tol)


class PartitionMatroidBasePolytope(_PartitionMatroidPolytope):
    """Base polytope of the partition matroid with ``blocks`` (a partition of {0..n-1}) and
    ``capacities`` (0 <= k_j <= |B_j|): {0 <= x <= 1, x(B_j) = k_j}. See the module docstring
    for the LMO, its tie-breaking, the diameter, hull and inscribed radius."""

    _bases = True

    def _block_sq_diameter(self, m: int, k: int) -> int:
        return 2 * min(k, m - k)

    def _moving(self) -> list[bool]:
        return [0 < k < b.size for b, k in zip(self.blocks, self.capacities, strict=True)]

    @property
    def affine_dim(self) -> int:
        return sum(b.size - 1 for b, mv in zip(self.blocks, self._moving(), strict=True) if mv)

    def hull_basis(self) -> np.ndarray:
        if self._basis is None:
            basis = np.zeros((self.dim, 0))
            for b, mv in zip(self.blocks, self._moving(), strict=True):
                if not mv:
                    continue
                local = sum_zero_basis(b.size)
                cols = np.zeros((self.dim, local.shape[1]))
                cols[b] = local
                basis = np.column_stack([basis, cols])
            self._basis = readonly(basis)
        return self._basis

    def interior_point(self) -> np.ndarray:
        x = np.empty(self.dim)
        for b, k in zip(self.blocks, self.capacities, strict=True):
            x[b] = k / b.size
        return x

    @property
    def inscribed_radius(self) -> float:
        radii = [
            min(k, b.size - k) / math.sqrt(b.size * (b.size - 1))
            for b, k, mv in zip(self.blocks, self.capacities, self._moving(), strict=True)
            if mv
        ]
        return min(radii) if radii else SINGLETON_RADIUS

    def project(self, x: np.ndarray) -> np.ndarray:
        """The exact Euclidean projection (capped-simplex projection per block)."""
        y = as_points(x, self.dim)
        out = np.empty(y.shape)
        for b, k in zip(self.blocks, self.capacities, strict=True):
            out[..., b] = project_capped_simplex(y[..., b], k)
        return out


class PartitionMatroidIndependencePolytope(_PartitionMatroidPolytope):
    """Independence polytope of the partition matroid with ``blocks`` (a partition of
    {0..n-1}) and ``capacities`` (k_j >= 0): {0 <= x <= 1, x(B_j) <= k_j}. See the module
    docstring for the LMO, its tie-breaking, the diameter, hull and inscribed radius."""

    _bases = False

    def _block_sq_diameter(self, m: int, k: int) -> int:
        return min(m, 2 * k)

    @property
    def affine_dim(self) -> int:
        return sum(b.size for b, k in zip(self.blocks, self.capacities, strict=True) if k > 0)

    def hull_basis(self) -> np.ndarray:
        if self._basis is None:
            cols = [b for b, k in zip(self.blocks, self.capacities, strict=True) if k > 0]
            idx = np.sort(np.concatenate(cols)) if cols else np.zeros(0, dtype=np.intp)
            self._basis = readonly(np.eye(self.dim)[:, idx])
        return self._basis

    def _block_t(self, m: int, k: int) -> float:
        return min(0.5, k / (m + math.sqrt(m)))

    def interior_point(self) -> np.ndarray:
        x = np.empty(self.dim)
        for b, k in zip(self.blocks, self.capacities, strict=True):
            x[b] = self._block_t(b.size, k)
        return x

    @property
    def inscribed_radius(self) -> float:
        radii = [
            self._block_t(b.size, k)
            for b, k in zip(self.blocks, self.capacities, strict=True)
            if k > 0
        ]
        return min(radii) if radii else SINGLETON_RADIUS

    def project(self, x: np.ndarray) -> np.ndarray:
        """The exact Euclidean projection: per block, clip to [0, 1], and if the block sum
        exceeds k_j the capped-simplex projection onto x(B_j) = k_j instead (KKT)."""
        y = as_points(x, self.dim)
        out = np.empty(y.shape)
        for b, k in zip(self.blocks, self.capacities, strict=True):
            sub = y[..., b]
            clipped = np.clip(sub, 0.0, 1.0)
            over = clipped.sum(axis=-1, keepdims=True) > k
            out[..., b] = np.where(over, project_capped_simplex(sub, k), clipped)
        return out


class UniformMatroidBasePolytope(PartitionMatroidBasePolytope):
    """Base polytope of the uniform matroid U(n, k), 0 <= k <= n:
    {0 <= x <= 1, sum x = k} = conv of the indicators of the k-subsets. LMO: the k smallest
    entries of the direction (ties to the smaller index)."""

    def __init__(self, n: int, k: int) -> None:
        n = checked_count("n", n)
        k = checked_nonnegative_int("k", k)
        if k > n:
            raise ValueError(f"k must be at most n = {n} for the base polytope, got k = {k}")
        self.n, self.k = n, k
        super().__init__([range(n)], [k])

    def __repr__(self) -> str:
        return f"UniformMatroidBasePolytope(n={self.n}, k={self.k})"


class UniformMatroidIndependencePolytope(PartitionMatroidIndependencePolytope):
    """Independence polytope of the uniform matroid U(n, k), k >= 0:
    {0 <= x <= 1, sum x <= k} = conv of the indicators of the sets of at most k elements. LMO:
    the (at most k) smallest strictly negative entries of the direction (ties to the smaller
    index)."""

    def __init__(self, n: int, k: int) -> None:
        n = checked_count("n", n)
        k = checked_nonnegative_int("k", k)
        self.n, self.k = n, k
        super().__init__([range(n)], [k])

    def __repr__(self) -> str:
        return f"UniformMatroidIndependencePolytope(n={self.n}, k={self.k})"
