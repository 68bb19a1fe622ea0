"""Polytopes of the graphic matroid of an undirected (multi)graph: the forest polytope
(independence polytope: convex hull of the indicators of forests) and the spanning-tree polytope
(base polytope: of maximal spanning forests, the spanning trees when the graph is connected).
Coordinates are the edges, in the graph's order (:mod:`dponline.domains.graphs`); parallel edges
and self-loops are allowed (a loop is in no forest, so its coordinate is fixed at 0).

**LMO** (Kruskal / the matroid greedy algorithm): the edges are scanned in increasing order of
the direction (a stable sort: ties go to the smaller edge index) and an edge is taken when it
closes no cycle with those already taken; the base polytope takes every such edge, the forest
polytope only those with a strictly negative direction. One Python pass per replica.

**Affine hull.** Two edges are in the same *matroid component* iff they lie on a common cycle;
the components are found by merging the fundamental circuits of a spanning forest (a theorem of
matroid theory: the fundamental circuits of any basis connect each component), so they are the
biconnected blocks of the graph, each loop and each bridge being its own component. The base
polytope's hull is {x(C) = rank(C) for every component C} (a bridge is a coloop fixed at 1, a
loop fixed at 0), of dimension m - (number of components); the forest polytope is
full-dimensional in the non-loop coordinates.

**Interior point and inscribed radius.** The interior point is the average c of N = d + 1
affinely independent vertices (d the affine dimension; found by
:func:`~dponline.domains.affine.affinely_independent_vertices`). Both polytopes are
{x >= 0, x(F) <= rank(F) for all F} (within the hull, Edmonds), with integral right-hand sides;
N c(F) is an integer, so every inequality that is not tight on the whole polytope (hence not
tight at all N vertices, since they span the hull) has slack at least 1/N at c. Its normal
moves at rate ||P 1_F|| <= sqrt(m_free) inside the hull (P the projector onto the hull's
direction space, m_free the number of coordinates that move in it), so

    inscribed_radius = 1 / (N sqrt(m_free))

is a proven, and conservative, lower bound (the nonnegativity facets have slack >= 1/N and rate
<= 1).

**Diameter.** For bases A, B, ||1_A - 1_B||^2 = 2 (r - |A n B|); for the forest polytope the
largest ||1_A - 1_B||^2 over forests is max |A u B| over bases = 2 r - min |A n B|. Within a
component C, two bases meet in at least max(0, 2 r(C) - |C|) edges; summing gives a lower bound
mu on min |A n B| and so an upper bound on the diameter. A few deterministic alternating
searches (B the base avoiding A most, by Kruskal on the weights 1_A, then A avoiding B, ...)
look for two bases meeting in exactly mu edges; if found, the bound is attained and
``diameter_is_exact`` is True, otherwise the bound is returned with ``diameter_is_exact``
False.

**Membership**: the exact Euclidean distance by Wolfe's minimum-norm point with the Kruskal
oracle (:mod:`dponline.domains.min_norm_point`), after cheap certified rejections (a coordinate
outside [0, 1], the distance to the affine hull, a component above its rank).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from dponline.domains.affine import (
    AffineHull,
    CentreByMethod,
    affinely_independent_vertices,
    blocks_sum_zero_basis,
)
from dponline.domains.base import ConvexDomain
from dponline.domains.checks import SINGLETON_RADIUS, as_points, checked_tol, readonly
from dponline.domains.graphs import UnionFind, as_edge_list
from dponline.domains.min_norm_point import contains_rows

__all__ = ["GraphicMatroidBasePolytope", "GraphicMatroidIndependencePolytope"]

#: alternating searches tried for a pair of bases certifying the diameter
_DIAMETER_TRIALS = 8


class _GraphicMatroidPolytope(CentreByMethod, ConvexDomain):
    """Shared machinery (see the module docstring)."""

    _bases: bool

    def __init__(self, graph: Any) -> None:
        el = as_edge_list(graph, directed=False)
        self.graph_nodes = list(el.labels)
        self._tail = el.tail.tolist()
        self._head = el.head.tolist()
        self._num_nodes = el.num_nodes
        self.dim = m = el.num_edges
        self.loops = el.tail == el.head
        self.loops.setflags(write=False)
        # a spanning forest in edge order, and the matroid rank
        uf = UnionFind(self._num_nodes)
        tree = [uf.union(a, b) for a, b in zip(self._tail, self._head, strict=True)]
        self.rank = int(sum(tree))
        self.components = self._components(tree)
        self._comp_rank = [self._rank_of(c) for c in self.components]
        self._comp_of = np.empty(m, dtype=np.intp)
        for j, c in enumerate(self.components):
            self._comp_of[c] = j
        self._cache: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(nodes={self._num_nodes}, edges={self.dim})"

    @property
    def edges(self) -> list[tuple[Any, Any]]:
        """The edges as (u, v) pairs of the original node labels, in coordinate order."""
        lab = self.graph_nodes
        return [(lab[a], lab[b]) for a, b in zip(self._tail, self._head, strict=True)]

    # --- structure -------------------------------------------------------------------------

    def _components(self, tree: list[bool]) -> list[np.ndarray]:
        """Matroid components: merge every fundamental circuit of the spanning forest."""
        m = self.dim
        adj: list[list[tuple[int, int]]] = [[] for _ in range(self._num_nodes)]
        for e, (a, b) in enumerate(zip(self._tail, self._head, strict=True)):
            if tree[e]:
                adj[a].append((b, e))
                adj[b].append((a, e))
        parent = [-1] * self._num_nodes
        parent_edge = [-1] * self._num_nodes
        depth = [-1] * self._num_nodes
        for root in range(self._num_nodes):
            if depth[root] >= 0:
                continue
            depth[root] = 0
            queue = deque([root])
            while queue:
                a = queue.popleft()
                for b, e in adj[a]:
                    if depth[b] < 0:
                        depth[b], parent[b], parent_edge[b] = depth[a] + 1, a, e
                        queue.append(b)
        uf = UnionFind(m)
        for e, (a, b) in enumerate(zip(self._tail, self._head, strict=True)):
            if tree[e] or a == b:
                continue
            while a != b:
                if depth[a] < depth[b]:
                    a, b = b, a
                uf.union(e, parent_edge[a])
                a = parent[a]
        groups: dict[int, list[int]] = {}
        for e in range(m):
            groups.setdefault(uf.find(e), []).append(e)
        return [np.array(g, dtype=np.intp) for g in sorted(groups.values(), key=min)]

    def _rank_of(self, edges: np.ndarray) -> int:
        uf = UnionFind(self._num_nodes)
        return sum(uf.union(self._tail[e], self._head[e]) for e in edges.tolist())

    # --- oracle ----------------------------------------------------------------------------

    def _kruskal(self, d: np.ndarray, only_negative: bool) -> np.ndarray:
        order = np.argsort(d, kind="stable").tolist()
        dl = d.tolist()
        uf = UnionFind(self._num_nodes)
        x = np.zeros(self.dim)
        taken, tail, head, rank = 0, self._tail, self._head, self.rank
        for e in order:
            if taken == rank or (only_negative and dl[e] >= 0):
                break
            if uf.union(tail[e], head[e]):
                x[e] = 1.0
                taken += 1
        return x

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        flat = direction.reshape(-1, self.dim)
        neg = not self._bases
        out = np.array([self._kruskal(row, neg) for row in flat])
        return out.reshape(direction.shape)

    # --- diameter --------------------------------------------------------------------------

    def _min_intersection(self) -> tuple[int, bool]:
        """(mu, exact): mu a lower bound on min |A n B| over pairs of bases, exact when a pair
        attaining it was found."""
        if "mu" in self._cache:
            return self._cache["mu"]
        mu_lb = sum(
            max(0, 2 * r - c.size) for c, r in zip(self.components, self._comp_rank, strict=True)
        )
        best = self.rank
        rng = np.random.default_rng(0)
        for trial in range(_DIAMETER_TRIALS):
            tie = np.arange(self.dim) if trial == 0 else rng.permutation(self.dim)
            tie = tie / (2.0 * self.dim)  # a tie-breaking perturbation below 1/2
            a = self._kruskal(tie, False)
            for _ in range(2 * self.dim):
                b = self._kruskal(a + tie, False)
                meet = int(a @ b)
                best = min(best, meet)
                if best == mu_lb:
                    break
                a2 = self._kruskal(b + tie[::-1], False)
                if int(a2 @ b) >= meet:
                    break
                a = a2
            if best == mu_lb:
                break
        result = (mu_lb, best == mu_lb)
        self._cache["mu"] = result
        return result

    @property
    def diameter_is_exact(self) -> bool:
        return self._min_intersection()[1]

    # --- hull, centre, radius --------------------------------------------------------------

    def _moving(self) -> np.ndarray:
        """Mask of the coordinates that move within the affine hull."""
        return np.any(np.abs(self.hull_basis()) > 0, axis=1)

    def _centre(self) -> tuple[np.ndarray, float]:
        if "centre" not in self._cache:
            basis = self.hull_basis()
            d = basis.shape[1]
            start = self.lmo(np.zeros(self.dim))
            if d == 0:
                self._cache["centre"] = (start, SINGLETON_RADIUS)
            else:
                verts = affinely_independent_vertices(self.lmo, basis, start)
                m_free = int(self._moving().sum())
                radius = 1.0 / (verts.shape[0] * math.sqrt(m_free))
                self._cache["centre"] = (readonly(verts.mean(axis=0)), radius)
        return self._cache["centre"]

    @property
    def affine_dim(self) -> int:
        return int(self.hull_basis().shape[1])

    def _hull(self) -> AffineHull:
        if "hull" not in self._cache:
            self._cache["hull"] = AffineHull(self.interior_point(), self.hull_basis())
        return self._cache["hull"]

    def _lower_bounds(self, x: np.ndarray) -> np.ndarray:
        """Certified lower bounds on the distance (each a distance to a valid halfspace or to
        the affine hull)."""
        lower = np.maximum(np.maximum(-x, x - 1.0).max(axis=1), self._hull().distance(x))
        for c, r in zip(self.components, self._comp_rank, strict=True):
            over = (x[:, c].sum(axis=1) - r) / math.sqrt(c.size)
            lower = np.maximum(lower, over)
        return np.maximum(lower, 0.0)

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        t = checked_tol(tol)
        pts = as_points(x, self.dim)

        def bounds(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return self._lower_bounds(rows), np.full(rows.shape[0], np.inf)

        return contains_rows(pts, t, self.lmo, self.interior_point(), bounds)


class GraphicMatroidIndependencePolytope(_GraphicMatroidPolytope):
    """The forest polytope of an undirected graph: conv of the indicators of its forests,
    {x >= 0, x(E[S]) <= |S| - 1 for all non-empty node sets S}. ``graph``: a networkx graph or a
    sequence of (u, v) edges. See the module docstring for the LMO, ties, diameter, hull,
    inscribed radius and membership."""

    _bases = False

    def hull_basis(self) -> np.ndarray:
        if "basis" not in self._cache:
            idx = np.flatnonzero(~self.loops)
            self._cache["basis"] = readonly(np.eye(self.dim)[:, idx])
        return self._cache["basis"]

    @property
    def diameter(self) -> float:
        mu, _ = self._min_intersection()
        return math.sqrt(2 * self.rank - mu)


class GraphicMatroidBasePolytope(_GraphicMatroidPolytope):
    """The spanning-tree polytope of an undirected graph (maximal spanning forests if it is
    disconnected): the base polytope of its graphic matroid. ``graph``: a networkx graph or a
    sequence of (u, v) edges. See the module docstring for the LMO, ties, diameter, hull,
    inscribed radius and membership."""

    _bases = True

    def hull_basis(self) -> np.ndarray:
        if "basis" not in self._cache:
            basis = blocks_sum_zero_basis(self.dim, self.components)
            self._cache["basis"] = readonly(basis)
        return self._cache["basis"]

    @property
    def diameter(self) -> float:
        mu, _ = self._min_intersection()
        return math.sqrt(2 * (self.rank - mu))
