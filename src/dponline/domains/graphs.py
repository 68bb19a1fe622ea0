"""Graphs as the decision sets see them: an edge list over nodes numbered 0..N-1, read from a
networkx graph (any object with ``nodes`` and ``edges``: no import of networkx is needed) or
from a sequence of (u, v) pairs; and a union-find structure for Kruskal's algorithm.

Coordinate i of a graph polytope is the i-th edge of ``list(graph.edges())`` (networkx's
iteration order: insertion order) or the i-th pair of the sequence. A networkx multigraph
gives one coordinate per parallel edge.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

__all__ = ["EdgeList", "UnionFind", "as_edge_list"]


class EdgeList:
    """Edges (tail[i], head[i]) over nodes 0..num_nodes-1; ``labels`` the original nodes."""

    def __init__(self, tail: np.ndarray, head: np.ndarray, labels: list[Hashable]) -> None:
        self.tail = tail
        self.head = head
        self.labels = labels
        self.index = {lab: i for i, lab in enumerate(labels)}

    @property
    def num_nodes(self) -> int:
        return len(self.labels)

    @property
    def num_edges(self) -> int:
        return int(self.tail.size)


def as_edge_list(graph: Any, *, directed: bool) -> EdgeList:
    """Read ``graph``: a networkx graph (directed graphs required iff ``directed``) or a
    sequence of 2-tuples of hashable nodes. Raises TypeError for anything else and ValueError
    for a graph without edges."""
    has_nx_shape = hasattr(graph, "edges") and hasattr(graph, "nodes")
    if has_nx_shape:
        is_dir = bool(graph.is_directed()) if hasattr(graph, "is_directed") else directed
        if is_dir != directed:
            want = "a directed graph (networkx.DiGraph)" if directed else "an undirected graph"
            raise TypeError(f"need {want}, got {type(graph).__name__}")
        labels = list(graph.nodes)
        pairs = [(e[0], e[1]) for e in graph.edges()]
    elif isinstance(graph, (Sequence, np.ndarray)) and not isinstance(graph, (str, bytes)):
        pairs = []
        for e in graph:
            if isinstance(e, (str, bytes)) or len(e) != 2:
                raise TypeError(f"each edge must be a pair (u, v), got {e!r}")
            pairs.append((_hashable(e[0]), _hashable(e[1])))
        labels = []
        seen: set[Hashable] = set()
        for u, v in pairs:
            for w in (u, v):
                if w not in seen:
                    seen.add(w)
                    labels.append(w)
    else:
        raise TypeError(
            "graph must be a networkx graph or a sequence of (u, v) edges, got "
            f"{type(graph).__name__}"
        )
    if not pairs:
        raise ValueError("the graph has no edges: the polytope would live in R^0")
    index = {lab: i for i, lab in enumerate(labels)}
    tail = np.array([index[u] for u, _ in pairs], dtype=np.intp)
    head = np.array([index[v] for _, v in pairs], dtype=np.intp)
    return EdgeList(tail, head, labels)


def _hashable(node: Any) -> Hashable:
    if isinstance(node, np.generic):
        node = node.item()
    try:
        hash(node)
    except TypeError as err:
        raise TypeError(f"graph nodes must be hashable, got {node!r}") from err
    return node


class UnionFind:
    """Disjoint sets over 0..n-1 with path halving and union by size."""

    __slots__ = ("parent", "size")

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, a: int) -> int:
        parent = self.parent
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(self, a: int, b: int) -> bool:
        """Merge the sets of a and b; False if they were already one set."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True
