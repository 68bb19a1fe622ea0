"""The s-t path polytope of a DAG: the vectorised dynamic programme against brute force on
random DAGs, its tie rule, the exact diameter, the hull of the usable edges, errors, and a
loose speed check on a layered grid."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.domains import PathPolytope
from tests.domains.catalogue import DAG, dag_paths


def grid_dag(k: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    edges = []
    for i in range(k):
        for j in range(k):
            if i + 1 < k:
                edges.append(((i, j), (i + 1, j)))
            if j + 1 < k:
                edges.append(((i, j), (i, j + 1)))
    return edges


@st.composite
def random_dags(draw):
    n = draw(st.integers(3, 7))
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=14))
    edges = [*chosen, (0, n - 1)]  # keep the target reachable; duplicates are parallel edges
    return edges, n


@given(random_dags(), st.integers(0, 2**31 - 1))
@settings(max_examples=30, deadline=None)
def test_random_dags_against_brute_force(dag, seed):
    edges, n = dag
    dom = PathPolytope(edges, 0, n - 1)
    paths = dag_paths(edges, 0, n - 1)
    rng = np.random.default_rng(seed)
    d = np.vstack([rng.normal(size=(4, len(edges))), rng.integers(-1, 2, size=(4, len(edges)))])
    x = dom.lmo(d)
    np.testing.assert_allclose((x * d).sum(axis=1), (d @ paths.T).min(axis=1), atol=1e-12)
    # the single-direction path (plain Python) and the batched one (numpy) agree exactly
    np.testing.assert_array_equal(x, np.array([dom.lmo(row) for row in d]))
    true = np.sqrt(((paths[:, None] - paths[None]) ** 2).sum(axis=-1).max())
    assert dom.diameter == pytest.approx(true) and dom.diameter_is_exact
    assert dom.affine_dim == np.linalg.matrix_rank(paths - paths[0])


def test_tie_rule_smallest_edge_index():
    # two parallel routes of equal length: 0 -> 1 -> 3 (edges 0, 2) and 0 -> 2 -> 3 (edges 1, 3)
    edges = [(0, 1), (0, 2), (1, 3), (2, 3)]
    dom = PathPolytope(edges, 0, 3)
    np.testing.assert_array_equal(dom.lmo(np.zeros(4)), [1, 0, 1, 0])
    np.testing.assert_array_equal(dom.lmo(np.zeros((3, 4))), np.tile([1, 0, 1, 0], (3, 1)))
    # parallel edges: the smaller index wins a tie
    par = PathPolytope([(0, 1), (0, 1)], 0, 1)
    np.testing.assert_array_equal(par.lmo(np.array([[0.5, 0.5], [0.5, -0.5]])), [[1, 0], [0, 1]])


def test_unusable_edges_are_fixed_at_zero():
    dom = PathPolytope(DAG, (0, 0), (2, 2))
    unusable = [i for i, (a, b) in enumerate(DAG) if "dead" in (a, b) or "pre" in (a, b)]
    unusable += [i for i, (a, b) in enumerate(DAG) if b == "post"]
    assert not dom.usable_edges[unusable].any() and dom.usable_edges.sum() == len(DAG) - 3
    np.testing.assert_allclose(dom.hull_basis()[unusable], 0.0)
    assert np.all(dom.interior_point()[unusable] == 0)
    assert np.all(dom.lmo(-np.ones(len(DAG)))[unusable] == 0)


def test_errors():
    with pytest.raises(ValueError, match="directed cycle"):
        PathPolytope([(0, 1), (1, 2), (2, 0), (2, 3)], 0, 3)
    with pytest.raises(ValueError, match="not reachable"):
        PathPolytope([(0, 1), (2, 1)], 0, 2)
    with pytest.raises(ValueError, match="not a node"):
        PathPolytope([(0, 1)], 0, 5)
    with pytest.raises(ValueError, match="must differ"):
        PathPolytope([(0, 1)], 0, 0)


def test_networkx_digraph_when_installed():
    nx = pytest.importorskip("networkx")
    g = nx.DiGraph(grid_dag(4))
    dom = PathPolytope(g, (0, 0), (3, 3))
    w = np.random.default_rng(2).normal(size=dom.dim) + 3.0
    for (u, v), wi in zip(g.edges(), w, strict=True):
        g[u][v]["w"] = wi
    best = nx.shortest_path_length(g, (0, 0), (3, 3), weight="w")
    assert dom.min_linear(w) == pytest.approx(best)
    with pytest.raises(TypeError, match="directed"):
        PathPolytope(nx.Graph(grid_dag(3)), (0, 0), (2, 2))


def test_layered_grid_lmo_is_fast():
    """The benchmark's workload: 100 replicas on a DAG with >= 100 edges. Loose bound (a slow
    or loaded machine must not fail it): well under 5 ms per call."""
    dom = PathPolytope(grid_dag(10), (0, 0), (9, 9))
    assert dom.dim == 180 and dom.diameter == pytest.approx(np.sqrt(36.0))
    d = np.random.default_rng(3).normal(size=(100, dom.dim))
    dom.lmo(d)
    start = time.perf_counter()
    for _ in range(50):
        dom.lmo(d)
    assert (time.perf_counter() - start) / 50 < 5e-3
