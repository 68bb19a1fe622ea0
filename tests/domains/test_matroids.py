"""Uniform, partition and graphic matroid polytopes: tie rules, projections, exact radii,
matroid components, graph input and argument errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.domains import (
    GraphicMatroidBasePolytope,
    GraphicMatroidIndependencePolytope,
    PartitionMatroidBasePolytope,
    PartitionMatroidIndependencePolytope,
    Projectable,
    UniformMatroidBasePolytope,
    UniformMatroidIndependencePolytope,
)
from tests.domains.catalogue import BOWTIE, K4, forests, partition_vertices


def test_uniform_tie_rules():
    bases = UniformMatroidBasePolytope(5, 2)
    np.testing.assert_array_equal(bases.lmo(np.zeros(5)), [1, 1, 0, 0, 0])
    np.testing.assert_array_equal(bases.lmo(np.array([2.0, 1.0, 1.0, 1.0, 0.0])), [0, 1, 0, 0, 1])
    ind = UniformMatroidIndependencePolytope(5, 2)
    np.testing.assert_array_equal(ind.lmo(np.zeros(5)), np.zeros(5))
    np.testing.assert_array_equal(ind.lmo(np.array([0.0, -1.0, -1.0, -1.0, 0.0])), [0, 1, 1, 0, 0])


@given(st.lists(st.floats(-3, 3), min_size=6, max_size=6).map(np.array))
@settings(max_examples=30, deadline=None)
def test_partition_projections_are_optimal(y):
    blocks, caps = [[0, 4], [1, 2, 5], [3]], [1, 2, 1]
    for cls, bases in (
        (PartitionMatroidBasePolytope, True),
        (PartitionMatroidIndependencePolytope, False),
    ):
        dom = cls(blocks, caps)
        assert isinstance(dom, Projectable)
        p = dom.project(y)
        verts = partition_vertices(blocks, caps, bases)
        assert np.all((verts - p) @ (y - p) <= 1e-8)


@pytest.mark.parametrize(
    "dom",
    [
        UniformMatroidBasePolytope(6, 2),
        UniformMatroidBasePolytope(4, 3),
        UniformMatroidIndependencePolytope(5, 2),
        UniformMatroidIndependencePolytope(3, 3),
        PartitionMatroidBasePolytope([[0, 1, 2], [3, 4]], [1, 1]),
        PartitionMatroidIndependencePolytope([[0, 1, 2], [3, 4]], [1, 2]),
    ],
    ids=repr,
)
def test_matroid_radii_are_exact(dom):
    n = dom.dim
    q = dom.hull_basis()
    cands = np.vstack([np.eye(n), -np.eye(n), np.ones((1, n)), -np.ones((1, n))]) @ q @ q.T
    cands = cands[np.linalg.norm(cands, axis=1) > 1e-12]
    cands /= np.linalg.norm(cands, axis=1, keepdims=True)
    assert dom.contains(dom.interior_point() + dom.inscribed_radius * cands).all()
    assert not dom.contains(dom.interior_point() + 1.01 * dom.inscribed_radius * cands).all()


def test_partition_errors():
    with pytest.raises(ValueError, match="partition"):
        PartitionMatroidBasePolytope([[0, 1], [1, 2]], [1, 1])
    with pytest.raises(ValueError, match="partition"):
        PartitionMatroidBasePolytope([[0, 2]], [1])
    with pytest.raises(ValueError, match=r"capacities\[1\] = 3 exceeds"):
        PartitionMatroidBasePolytope([[0], [1, 2]], [1, 3])
    with pytest.raises(ValueError, match="one capacity per block"):
        PartitionMatroidIndependencePolytope([[0], [1]], [1])
    with pytest.raises(ValueError, match="empty"):
        PartitionMatroidIndependencePolytope([[0], []], [1, 1])
    with pytest.raises(TypeError, match="integer"):
        PartitionMatroidIndependencePolytope([[0, 1.5]], [1])
    with pytest.raises(ValueError, match="non-negative"):
        UniformMatroidIndependencePolytope(3, -1)
    with pytest.raises(ValueError, match="at most n"):
        UniformMatroidBasePolytope(3, 4)
    # capacities above the block size are fine for independence: the block is a cube
    assert PartitionMatroidIndependencePolytope([[0, 1]], [5]).inscribed_radius == 0.5


def _biconnected_blocks(edges):
    """Matroid components by brute force: e ~ f iff some circuit (a minimal dependent set, here
    found among subsets of at most 5 edges) holds both."""
    m = len(edges)
    dep = forests(edges, False)
    indep = {tuple(row) for row in dep.astype(int)}
    parent = list(range(m))

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a

    for size in range(1, min(m, 5) + 1):
        for s in itertools.combinations(range(m), size):
            ind = tuple(1 if e in s else 0 for e in range(m))
            if ind in indep:
                continue
            minimal = all(
                tuple(1 if (e in s and e != f) else 0 for e in range(m)) in indep for f in s
            )
            if minimal:
                for f in s[1:]:
                    parent[find(f)] = find(s[0])
    groups = {}
    for e in range(m):
        groups.setdefault(find(e), []).append(e)
    return sorted(groups.values())


@pytest.mark.parametrize("edges", [K4, BOWTIE], ids=["K4", "bowtie"])
def test_graphic_components_are_the_biconnected_blocks(edges):
    dom = GraphicMatroidBasePolytope(edges)
    assert sorted(c.tolist() for c in dom.components) == _biconnected_blocks(edges)
    assert dom.affine_dim == dom.dim - len(dom.components)


def test_graphic_loops_bridges_and_ties():
    dom = GraphicMatroidBasePolytope(BOWTIE)
    x = dom.lmo(np.zeros(dom.dim))
    assert x[BOWTIE.index(("c", "d"))] == 1.0  # the bridge is in every spanning tree
    assert x[BOWTIE.index(("f", "f"))] == 0.0  # the loop in none
    # ties: Kruskal in edge order, so the first two triangle edges and not the third
    np.testing.assert_array_equal(x[:3], [1.0, 1.0, 0.0])
    ind = GraphicMatroidIndependencePolytope(BOWTIE)
    np.testing.assert_array_equal(ind.lmo(np.zeros(ind.dim)), np.zeros(ind.dim))
    assert ind.affine_dim == ind.dim - 1  # only the loop is fixed
    assert dom.rank == 5 and dom.diameter_is_exact


class _FakeNetworkxGraph:
    """What the graph polytopes read from a networkx graph: nodes, edges(), is_directed()."""

    def __init__(self, edges, directed=False):
        self._edges = list(edges)
        self.nodes = list(dict.fromkeys(v for e in edges for v in e))
        self._directed = directed

    def edges(self):
        return iter(self._edges)

    def is_directed(self):
        return self._directed


def test_graph_input_and_errors():
    a = GraphicMatroidBasePolytope(_FakeNetworkxGraph(K4))
    b = GraphicMatroidBasePolytope(K4)
    d = np.random.default_rng(0).normal(size=(4, 6))
    np.testing.assert_array_equal(a.lmo(d), b.lmo(d))
    assert a.edges == K4
    with pytest.raises(TypeError, match="undirected"):
        GraphicMatroidBasePolytope(_FakeNetworkxGraph(K4, directed=True))
    with pytest.raises(ValueError, match="no edges"):
        GraphicMatroidBasePolytope([])
    with pytest.raises(TypeError, match="pair"):
        GraphicMatroidBasePolytope([(0, 1, 2)])
    with pytest.raises(TypeError, match="networkx graph or a sequence"):
        GraphicMatroidBasePolytope(42)


def test_networkx_graph_when_installed():
    nx = pytest.importorskip("networkx")
    g = nx.petersen_graph()
    dom = GraphicMatroidBasePolytope(g)
    assert dom.dim == 15 and dom.rank == 9 and dom.affine_dim == 14
    w = np.random.default_rng(1).normal(size=15)
    tree = nx.minimum_spanning_tree(
        nx.Graph([(u, v, {"w": w[i]}) for i, (u, v) in enumerate(g.edges())]), weight="w"
    )
    assert dom.min_linear(w) == pytest.approx(tree.size(weight="w"))


@given(st.lists(st.integers(-2, 2), min_size=6, max_size=6).map(lambda v: np.array(v, float)))
@settings(max_examples=40, deadline=None)
def test_partition_lmo_ties_take_the_smaller_index(d):
    """Directions with many ties: the value is the brute-force minimum, and among the optimal
    vertices the oracle returns the lexicographically smallest index set (stable order)."""
    blocks, caps = [[0, 2, 4], [1, 3, 5]], [2, 1]
    for cls, bases in (
        (PartitionMatroidBasePolytope, True),
        (PartitionMatroidIndependencePolytope, False),
    ):
        dom = cls(blocks, caps)
        x = dom.lmo(d)
        verts = partition_vertices(blocks, caps, bases)
        assert x @ d == pytest.approx((verts @ d).min())
        for b, k in zip(blocks, caps, strict=True):
            order = sorted(b, key=lambda i: (d[i], i))
            chosen = [i for i in order[:k] if bases or d[i] < 0]
            np.testing.assert_array_equal(np.flatnonzero(x[b]), sorted(b.index(i) for i in chosen))
