"""Submodular base polytopes, the permutahedron and the Birkhoff polytope: the greedy oracle
against linprog over all 2^n inequalities, the components of f, the permutahedron's projection
and radius, Birkhoff's radius, and argument errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dponline.domains import BirkhoffPolytope, Permutahedron, SubmodularBasePolytope
from tests.domains.catalogue import concave_card, cut_function, separable


def _all_subsets_hrep(n, f):
    rows, rhs = [], []
    for k in range(1, n):
        for s in itertools.combinations(range(n), k):
            rows.append([1.0 if i in s else 0.0 for i in range(n)])
            rhs.append(f(frozenset(s)))
    return np.array(rows), np.array(rhs), np.ones((1, n)), np.array([f(frozenset(range(n)))])


@pytest.mark.parametrize(
    "f",
    [cut_function(5, [(0, 1, 1.0), (1, 2, 2.0), (3, 4, 0.5), (0, 4, 1.0)]), concave_card(5)],
    ids=["cut", "concave"],
)
def test_greedy_against_linprog_on_all_subsets(f):
    dom = SubmodularBasePolytope(5, f)
    a, b, c, e = _all_subsets_hrep(5, f)
    rng = np.random.default_rng(0)
    for d in [*rng.normal(size=(5, 5)), np.zeros(5), np.array([1.0, 1.0, 0.0, 0.0, 1.0])]:
        res = linprog(d, a, b, c, e, bounds=(None, None), method="highs")
        assert dom.min_linear(d) == pytest.approx(res.fun, abs=1e-9)


def test_components_and_hull_of_a_separable_function():
    dom = SubmodularBasePolytope(4, separable)
    assert dom.components() == [[0, 1], [2], [3]]
    assert dom.affine_dim == 1
    x = dom.lmo(np.array([0.0, 1.0, 0.0, 0.0]))
    np.testing.assert_allclose(x, [2.0, 0.0, 1.5, -0.5])


def test_errors():
    with pytest.raises(ValueError, match="at most 16"):
        SubmodularBasePolytope(17, lambda s: float(len(s)))
    with pytest.raises(ValueError, match="not submodular"):
        SubmodularBasePolytope(3, lambda s: float(len(s) ** 2))
    with pytest.raises(ValueError, match="empty set"):
        SubmodularBasePolytope(2, lambda s: 1.0 + len(s))
    with pytest.raises(ValueError, match="finite real"):
        SubmodularBasePolytope(2, lambda s: math.nan if len(s) == 2 else 0.0)
    with pytest.raises(TypeError, match="callable"):
        SubmodularBasePolytope(2, [0.0, 1.0])
    # the check can be skipped (the caller vouches for submodularity)
    SubmodularBasePolytope(3, lambda s: float(len(s) ** 2), check_submodular=False)
    with pytest.raises(ValueError, match="length n = 3"):
        Permutahedron(3, [1.0, 2.0])


def test_permutahedron_is_the_base_polytope_of_its_function():
    perm = Permutahedron(5)
    sub = SubmodularBasePolytope(5, perm.submodular_function())
    d = np.random.default_rng(1).normal(size=(6, 5))
    np.testing.assert_array_equal(perm.lmo(d), sub.lmo(d))
    assert perm.affine_dim == sub.affine_dim == 4
    # the standard permutahedron: f(S) = sum_{i < |S|} (n - i)
    f = perm.submodular_function()
    assert f(frozenset({3, 4})) == 9.0
    assert perm.inscribed_radius == pytest.approx(math.sqrt(5 * 4) / 2)
    assert sub.inscribed_radius <= perm.inscribed_radius * (1 + 1e-6)


@given(st.lists(st.floats(-6, 6), min_size=4, max_size=4).map(np.array))
@settings(max_examples=40, deadline=None)
def test_permutahedron_projection_is_optimal(y):
    perm = Permutahedron(4, [0.0, 1.0, 1.0, 3.0])
    p = perm.project(y)
    verts = np.array(list(itertools.permutations([0.0, 1.0, 1.0, 3.0])))
    assert np.all((verts - p) @ (y - p) <= 1e-9)
    assert perm.contains(p)


def test_permutahedron_ties_and_radius_is_exact():
    perm = Permutahedron(4)
    np.testing.assert_array_equal(perm.lmo(np.zeros(4)), [4.0, 3.0, 2.0, 1.0])
    q, c, r = perm.hull_basis(), perm.interior_point(), perm.inscribed_radius
    u = -(q @ q.T)[0]
    u /= np.linalg.norm(u)
    assert perm.contains(c + r * u) and not perm.contains(c + 1.01 * r * u)
    single = Permutahedron(3, [2.0, 2.0, 2.0])
    assert single.affine_dim == 0 and single.diameter == 0.0


def test_birkhoff_radius_is_exact_and_n1():
    b = BirkhoffPolytope(4)
    q, c, r = b.hull_basis(), b.interior_point(), b.inscribed_radius
    assert r == pytest.approx(1.0 / 3.0)
    u = -(q @ q.T)[0]
    u /= np.linalg.norm(u)
    assert b.contains(c + r * u) and not b.contains(c + 1.01 * r * u)
    assert b.affine_dim == 9 and b.diameter == pytest.approx(math.sqrt(8))
    one = BirkhoffPolytope(1)
    assert one.affine_dim == 0 and one.contains(np.ones(1)) and not one.contains(np.zeros(1))
    # a cost matrix with a unique optimum: the anti-diagonal
    cost = np.ones((3, 3)) - np.fliplr(np.eye(3))
    z = b.lmo(np.zeros(16)).reshape(4, 4)
    assert set(z.ravel()) <= {0.0, 1.0} and (z.sum(axis=0) == 1).all() and (z.sum(1) == 1).all()
    np.testing.assert_array_equal(
        BirkhoffPolytope(3).lmo(cost.ravel()).reshape(3, 3), np.fliplr(np.eye(3))
    )
