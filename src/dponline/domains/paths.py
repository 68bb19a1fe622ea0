"""The s-t path polytope of a directed acyclic graph: the convex hull of the indicator vectors
(over the edges, in the graph's order: :mod:`dponline.domains.graphs`) of the directed paths
from ``source`` to ``target``.

**H-representation.** An s-t path is a unit s-t flow; since the graph is acyclic every unit
flow decomposes into s-t paths, and the flow polytope is integral (its constraint matrix is a
network matrix), so

    P = {x >= 0 : sum_in x - sum_out x = 0 at every node but s and t, sum_out(s) - sum_in(s) = 1}

and x <= 1 follows. An edge on no s-t path (its tail unreachable from s or its head not reaching
t) carries no flow: it is fixed at 0. The affine hull is the flow-conservation system on the
*usable* edges (with the others at 0); its direction space is the cycle space of the usable
subgraph (the null space of its incidence matrix), of dimension
(usable edges) - (usable nodes) + 1, with the signed fundamental cycles of a spanning tree as a
basis, orthonormalised by a QR decomposition. Within the hull the only facets are x_e >= 0.

**LMO**: the shortest path by dynamic programming in topological order, vectorised over the
replicas axis. The usable nodes are grouped into levels (longest distance from s; no edge joins
two nodes of a level), and a whole level is relaxed at once: the in-edges of its nodes are
padded to the level's largest in-degree (padding reads a row of +inf), and the slots are
combined with ``numpy.minimum``, in node-major arrays (nodes, replicas) so that every gather
copies contiguous rows. The Python loop runs over levels, never over replicas or edges; the
path is then read back from t, one vectorised step per level. A single direction (a 1-d
array) takes the same programme in plain Python floats, which is faster at that size. Ties:
each node keeps, among its in-edges attaining the minimum of ``dist(tail) + d(edge)``
(computed with the same IEEE additions for every replica and in both code paths), the one of
smallest edge index.

**Interior point and inscribed radius**: the Chebyshev centre within the hull, by a sparse LP
in edge coordinates (max r subject to flow conservation and x_e >= r ||P e_e||, P the projector
onto the direction space, ||P e_e|| the row norm of the basis), projected back onto the hull;
its radius is re-evaluated exactly there as min_e c_e / ||P e_e|| (times 1 - 1e-9).

**Diameter**: exact, by a dynamic programme over pairs of nodes that walks two paths together
(always advancing the one at the earlier node, so a shared edge is taken by both at once) and
maximises |A xor B|; for more than :data:`PAIR_DP_MAX_NODES` usable nodes the bound
sqrt(min(2 L, m_usable)) (L the longest path length) is returned with ``diameter_is_exact``
False.

**Membership**: certified distance bounds from the facets, then Wolfe's minimum-norm point
(with this LMO) for the undecided rows.

The geometry (hull basis, centre, diameter) is computed on first use and cached; the oracle
needs none of it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from dponline.domains.affine import AffineHull, CentreByMethod
from dponline.domains.base import ConvexDomain
from dponline.domains.checks import SINGLETON_RADIUS, readonly
from dponline.domains.facets import Facets
from dponline.domains.graphs import as_edge_list

__all__ = ["PAIR_DP_MAX_NODES", "PathPolytope"]

#: largest number of usable nodes for which the exact pair dynamic programme of the diameter runs
PAIR_DP_MAX_NODES = 2000


class PathPolytope(CentreByMethod, ConvexDomain):
    """Convex hull of the ``source``-``target`` paths of a DAG ``graph`` (a networkx DiGraph
    or a sequence of directed (u, v) edges), one coordinate per edge. See the module
    docstring for the LMO, its ties, the hull, radius, diameter and membership."""

    def __init__(self, graph: Any, source: Hashable, target: Hashable) -> None:
        el = as_edge_list(graph, directed=True)
        for name, node in (("source", source), ("target", target)):
            if node not in el.index:
                raise ValueError(f"{name} {node!r} is not a node of the graph")
        if source == target:
            raise ValueError(f"source and target must differ, got {source!r} for both")
        self.source, self.target = source, target
        self.graph_nodes = list(el.labels)
        self.dim = m = el.num_edges
        n = el.num_nodes
        tail, head = el.tail, el.head
        s, t = el.index[source], el.index[target]
        self._edges = (tail.copy(), head.copy())
        topo = _topological_order(n, tail, head, el.labels)
        fwd = _reach(n, tail, head, s)
        bwd = _reach(n, head, tail, t)
        if not fwd[t]:
            raise ValueError(f"target {target!r} is not reachable from source {source!r}")
        usable = fwd[tail] & bwd[head]
        self.usable_edges = usable.copy()
        self.usable_edges.setflags(write=False)
        node_ok = fwd & bwd
        # levels: longest distance from s within the usable subgraph
        level = np.full(n, -1, dtype=np.intp)
        level[s] = 0
        in_edges: list[list[int]] = [[] for _ in range(n)]
        for e in np.flatnonzero(usable).tolist():
            in_edges[int(head[e])].append(e)
        for v in topo:
            if node_ok[v] and v != s:
                level[v] = 1 + max(int(level[tail[e]]) for e in in_edges[v])
        nodes = [v for v in topo if node_ok[v]]
        topo_pos = {v: i for i, v in enumerate(topo)}
        nodes.sort(key=lambda v: (int(level[v]), topo_pos[v]))
        new_id = np.full(n, -1, dtype=np.intp)
        new_id[nodes] = np.arange(len(nodes))
        k = len(nodes)
        self._s_new, self._t_new = int(new_id[s]), int(new_id[t])
        # usable edges sorted by (new head id, edge index): each node's in-edges contiguous
        ue = np.flatnonzero(usable)
        order = np.lexsort((ue, new_id[head[ue]]))
        self._e_sorted = ue[order]
        self._tail_new = new_id[tail[self._e_sorted]]
        self._head_new = new_id[head[self._e_sorted]]
        self._num_usable_nodes = k
        self._depth = int(level[t])
        self._compile_levels(k, level[nodes], m)
        self._cache: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (
            f"PathPolytope(edges={self.dim}, usable={int(self.usable_edges.sum())}, "
            f"source={self.source!r}, target={self.target!r})"
        )

    # --- oracle ----------------------------------------------------------------------------

    def _compile_levels(self, k: int, lev: np.ndarray, m: int) -> None:
        """Tables for the level-by-level relaxation. For level L (nodes lo..hi-1) and slot j,
        ``tails`` holds the tail (a row of ``dist``) of each node's j-th in-edge in edge-index
        order, ``edges`` its edge index (a column of the direction) as a column vector; nodes
        with fewer in-edges are padded with the row k of ``dist``, which holds +inf."""
        in_lists: list[list[int]] = [[] for _ in range(k)]
        for pos, h in enumerate(self._head_new.tolist()):
            in_lists[h].append(pos)
        levels = []
        pad_edges: list[np.ndarray] = []
        offset = 0
        for value in range(1, int(lev.max()) + 1):
            lo, hi = (int(i) for i in np.searchsorted(lev, [value, value + 1]))
            width = max(len(in_lists[v]) for v in range(lo, hi))
            tails_l, edges_l = [], []
            for j in range(width):
                pos = [in_lists[v][j] if j < len(in_lists[v]) else -1 for v in range(lo, hi)]
                pos_a = np.array(pos)
                real = pos_a >= 0
                tails_l.append(np.where(real, self._tail_new[np.maximum(pos_a, 0)], k))
                edges = np.where(real, self._e_sorted[np.maximum(pos_a, 0)], 0)
                edges_l.append(edges[:, None].astype(np.intp))
                pad_edges.append(edges)
            size = width * (hi - lo)
            tails = np.concatenate(tails_l).astype(np.intp)
            levels.append((lo, hi, offset, offset + size, tails, edges_l))
            offset += size
        self._levels = levels
        self._pad_edges = np.concatenate(pad_edges).astype(np.intp)
        # for reading the path back: the tail (new id) of each edge, and a sentinel edge m at s
        tail_of = np.full(m + 1, self._s_new, dtype=np.intp)
        tail_of[self._e_sorted] = self._tail_new
        self._tail_of_edge = tail_of
        self._in_lists = [[int(self._e_sorted[p]) for p in lst] for lst in in_lists]
        self._tail_list = tail_of.tolist()

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        d = direction  # checked and scaled (base.py): path lengths are at most 2 m
        if d.ndim == 1:
            return self._lmo_single(d)
        flat = d.reshape(-1, self.dim)
        if flat.shape[0] == 1:  # one replica: the plain-Python programme is faster
            return self._lmo_single(flat[0]).reshape(d.shape)
        r, k, m = flat.shape[0], self._num_usable_nodes, self.dim
        # node-major layout (nodes or slots, replicas): the gathers copy contiguous rows
        ddp = flat.T[self._pad_edges]
        dist = np.empty((k + 1, r))
        dist[0] = 0.0
        dist[k] = np.inf
        pred = np.empty((k, r), dtype=np.intp)
        pred[0] = m  # the sentinel edge at s
        for lo, hi, a, b, tails, edges in self._levels:
            # all slots of the level at once: rows j*n .. (j+1)*n - 1 hold slot j
            cand = np.take(dist, tails, axis=0)
            cand += ddp[a:b]
            n = hi - lo
            best = dist[lo:hi]
            if len(edges) == 1:
                best[...] = cand
                pred[lo:hi] = edges[0]
                continue
            np.minimum(cand[:n], cand[n : 2 * n], out=best)
            arg = np.where(cand[n : 2 * n] < cand[:n], edges[1], edges[0])
            for j in range(2, len(edges)):
                cj = cand[j * n : (j + 1) * n]
                better = cj < best  # strict: the smaller edge index keeps a tie
                np.minimum(best, cj, out=best)
                arg = np.where(better, edges[j], arg)
            pred[lo:hi] = arg
        rows = np.arange(r)
        cur = np.full(r, self._t_new)
        taken = []
        for _ in range(self._depth):
            e = pred[cur, rows]
            taken.append(e)
            cur = self._tail_of_edge[e]
        x = np.zeros((r, m + 1))
        x[np.tile(rows, len(taken)), np.concatenate(taken)] = 1.0
        return x[:, :m].reshape(d.shape)

    def _lmo_single(self, d: np.ndarray) -> np.ndarray:
        """The same dynamic programme for one direction in plain Python floats (the same IEEE
        additions and comparisons, so the same ties), faster than numpy at this size."""
        dl = d.tolist()
        k = self._num_usable_nodes
        tail_of = self._tail_list
        dist = [0.0] * k
        pred = [self.dim] * k
        for v in range(1, k):
            best = float("inf")
            arg = -1
            for e in self._in_lists[v]:
                c = dist[tail_of[e]] + dl[e]
                if c < best:
                    best, arg = c, e
            dist[v], pred[v] = best, arg
        x = np.zeros(self.dim)
        v = self._t_new
        while v != self._s_new:
            e = pred[v]
            x[e] = 1.0
            v = tail_of[e]
        return x

    # --- hull, centre, radius --------------------------------------------------------------

    def hull_basis(self) -> np.ndarray:
        if "basis" not in self._cache:
            cycles = self._fundamental_cycles()
            local = np.linalg.qr(cycles)[0] if cycles.shape[1] else cycles
            basis = np.zeros((self.dim, local.shape[1]))
            basis[self._e_sorted] = local
            self._cache["basis"] = readonly(basis)
        return self._cache["basis"]

    def _fundamental_cycles(self) -> np.ndarray:
        """The signed fundamental cycles (columns) of the usable subgraph, in the sorted-edge
        coordinates, for a BFS spanning tree from s that ignores directions: a basis of the
        cycle space, the null space of the incidence matrix (the usable subgraph is connected,
        so there are mu - k + 1 of them)."""
        k, mu = self._num_usable_nodes, self._e_sorted.size
        tails, heads = self._tail_new.tolist(), self._head_new.tolist()
        adj: list[list[tuple[int, int]]] = [[] for _ in range(k)]
        for e in range(mu):
            adj[tails[e]].append((heads[e], e))
            adj[heads[e]].append((tails[e], e))
        parent, parent_edge, depth = [-1] * k, [-1] * k, [-1] * k
        depth[0] = 0
        queue = deque([0])
        tree = np.zeros(mu, dtype=bool)
        while queue:
            v = queue.popleft()
            for w, e in adj[v]:
                if depth[w] < 0:
                    depth[w], parent[w], parent_edge[w] = depth[v] + 1, v, e
                    tree[e] = True
                    queue.append(w)
        cols = []
        for e in np.flatnonzero(~tree).tolist():
            z = np.zeros(mu)
            z[e] = 1.0  # walk tail -> head along e, then back from head to tail in the tree
            a, b = heads[e], tails[e]
            down = []
            while a != b:
                if depth[a] >= depth[b]:
                    f = parent_edge[a]  # step a -> parent[a]
                    z[f] += 1.0 if tails[f] == a else -1.0
                    a = parent[a]
                else:
                    down.append(b)
                    b = parent[b]
            for v in down:  # then from the meeting point down to the tail: parent[v] -> v
                f = parent_edge[v]
                z[f] += 1.0 if heads[f] == v else -1.0
            cols.append(z)
        return np.column_stack(cols) if cols else np.zeros((mu, 0))

    @property
    def affine_dim(self) -> int:
        return self._e_sorted.size - self._num_usable_nodes + 1

    def _path_through_each_edge(self) -> np.ndarray:
        """The average over usable edges e of one s-t path through e (BFS trees from s and to
        t): positive on every usable edge, so in the relative interior."""
        tail, head = self._edges
        n = len(self.graph_nodes)
        ue = np.flatnonzero(self.usable_edges)
        s = self.graph_nodes.index(self.source)
        t = self.graph_nodes.index(self.target)
        to_s = _bfs_tree(n, tail[ue], head[ue], ue, s)  # edge into v on a path from s
        from_t = _bfs_tree(n, head[ue], tail[ue], ue, t)  # edge out of v towards t
        total = np.zeros(self.dim)
        for e in ue.tolist():
            x = np.zeros(self.dim)
            x[e] = 1.0
            v = int(tail[e])
            while v != s:
                f = to_s[v]
                x[f] = 1.0
                v = int(tail[f])
            v = int(head[e])
            while v != t:
                f = from_t[v]
                x[f] = 1.0
                v = int(head[f])
            total += x
        return total / ue.size

    def _facets(self) -> Facets:
        if "facets" not in self._cache:
            basis = self.hull_basis()
            hull = AffineHull(readonly(self._path_through_each_edge()), basis)
            norms = np.linalg.norm(basis, axis=1)  # ||P e_e||: the row norms of the basis
            self._cache["facets"] = Facets(-np.eye(self.dim), np.zeros(self.dim), hull, norms)
        return self._cache["facets"]

    def _centre(self) -> tuple[np.ndarray, float]:
        """The Chebyshev centre, by a sparse LP in edge coordinates: max r subject to flow
        conservation and x_e >= r ||P e_e|| on the usable edges that move in the hull."""
        if "centre" not in self._cache:
            facets = self._facets()
            if self.affine_dim == 0:
                self._cache["centre"] = (facets.hull.point, SINGLETON_RADIUS)
                return self._cache["centre"]
            k, mu = self._num_usable_nodes, self._e_sorted.size
            norms = np.linalg.norm(self.hull_basis()[self._e_sorted], axis=1)
            moving = np.flatnonzero(norms > 1e-12)
            cols = np.arange(mu)
            inc = sparse.coo_matrix(
                (
                    np.r_[-np.ones(mu), np.ones(mu)],
                    (np.r_[self._tail_new, self._head_new], np.r_[cols, cols]),
                ),
                shape=(k, mu),
            ).tocsr()
            a_eq = sparse.hstack([inc, sparse.csr_matrix((k, 1))]).tocsr()
            b_eq = np.zeros(k)
            b_eq[self._s_new], b_eq[self._t_new] = -1.0, 1.0
            a_ub = sparse.coo_matrix(
                (
                    np.r_[-np.ones(moving.size), norms[moving]],
                    (
                        np.r_[np.arange(moving.size), np.arange(moving.size)],
                        np.r_[moving, np.full(moving.size, mu)],
                    ),
                ),
                shape=(moving.size, mu + 1),
            ).tocsr()
            cost = np.zeros(mu + 1)
            cost[-1] = -1.0
            res = linprog(
                cost,
                A_ub=a_ub,
                b_ub=np.zeros(moving.size),
                A_eq=a_eq,
                b_eq=b_eq,
                bounds=[(0.0, 1.0)] * mu + [(0.0, None)],
                method="highs",
            )
            if res.status != 0:
                raise RuntimeError(f"the Chebyshev-centre LP failed: {res.message}")
            x = np.zeros(self.dim)
            x[self._e_sorted] = res.x[:mu]
            c = facets.hull.project(x)  # remove the LP's rounding off the hull
            self._cache["centre"] = (readonly(c), facets.radius_at(c) * (1.0 - 1e-9))
        return self._cache["centre"]

    # --- diameter --------------------------------------------------------------------------

    def _sq_diameter(self) -> tuple[int, bool]:
        if "diam" in self._cache:
            return self._cache["diam"]
        k, mu = self._num_usable_nodes, self._e_sorted.size
        if k > PAIR_DP_MAX_NODES:
            res = (min(2 * self._depth, mu), False)
        else:
            res = (_pair_dp(k, self._tail_new, self._head_new, self._t_new), True)
        self._cache["diam"] = res
        return res

    @property
    def diameter(self) -> float:
        return math.sqrt(self._sq_diameter()[0])

    @property
    def diameter_is_exact(self) -> bool:
        return self._sq_diameter()[1]

    # --- membership ------------------------------------------------------------------------

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        c, r = self._centre()
        return self._facets().contains(x, tol, self.lmo, c, r)


def _topological_order(n: int, tail: np.ndarray, head: np.ndarray, labels: list) -> list[int]:
    """Kahn's algorithm (nodes released in index order); ValueError on a directed cycle."""
    indeg = np.bincount(head, minlength=n).tolist()
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(tail.tolist(), head.tolist(), strict=True):
        out[a].append(b)
    queue = deque(v for v in range(n) if indeg[v] == 0)
    order = []
    while queue:
        v = queue.popleft()
        order.append(v)
        for w in out[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                queue.append(w)
    if len(order) < n:
        stuck = [labels[v] for v in range(n) if indeg[v] > 0][:5]
        raise ValueError(f"the graph has a directed cycle (through nodes such as {stuck})")
    return order


def _reach(n: int, tail: np.ndarray, head: np.ndarray, start: int) -> np.ndarray:
    """Nodes reachable from ``start`` along edges tail -> head."""
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(tail.tolist(), head.tolist(), strict=True):
        out[a].append(b)
    seen = np.zeros(n, dtype=bool)
    seen[start] = True
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in out[v]:
            if not seen[w]:
                seen[w] = True
                queue.append(w)
    return seen


def _bfs_tree(n: int, tail: np.ndarray, head: np.ndarray, ids: np.ndarray, root: int) -> dict:
    """For each node reached from ``root`` along tail -> head, the id of the edge it was first
    reached by (smallest edge id first)."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for a, b, e in zip(tail.tolist(), head.tolist(), ids.tolist(), strict=True):
        out[a].append((b, e))
    via: dict[int, int] = {}
    seen = {root}
    queue = deque([root])
    while queue:
        v = queue.popleft()
        for w, e in sorted(out[v], key=lambda p: p[1]):
            if w not in seen:
                seen.add(w)
                via[w] = e
                queue.append(w)
    return via


def _pair_dp(k: int, tail: np.ndarray, head: np.ndarray, t: int) -> int:
    """max |A xor B| over pairs of paths from node 0 to ``t`` in a DAG whose node ids increase
    along edges (see the module docstring). V[a, b] is the best value from the pair state
    (a, b), computed for decreasing min(a, b)."""
    outs: list[list[int]] = [[] for _ in range(k)]
    for a, b in zip(tail.tolist(), head.tolist(), strict=True):
        outs[a].append(b)
    neg = -(10**9)
    val = np.full((k, k), neg, dtype=np.int64)
    val[t, t] = 0
    for a in range(k - 1, -1, -1):
        heads = outs[a]
        if a != t:
            # a < b: advance a by one edge (weight 1)
            if a + 1 < k and heads:
                best = np.full(k - a - 1, neg, dtype=np.int64)
                for h in heads:
                    best = np.maximum(best, val[h, a + 1 :] + 1)
                val[a, a + 1 :] = best
                val[a + 1 :, a] = best
            # a == b: both take the same edge (0) or two different edges (2)
            same = max((int(val[h, h]) for h in heads), default=neg)
            diff = max(
                (int(val[h1, h2]) + 2 for i, h1 in enumerate(heads) for h2 in heads[i + 1 :]),
                default=neg,
            )
            val[a, a] = max(same, diff)
    return int(val[0, 0])
