"""Vertex hulls, H-polytopes and Wolfe's minimum-norm point: Qhull facets and the simplex
fallback, boundedness and emptiness checks, implicit equalities, the diameter bound, and the
minimum-norm point against exact projections."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.domains import Polytope, Simplex, VertexHull, min_norm_point
from dponline.domains.min_norm_point import lmo_contains
from dponline.domains.simplex import project_simplex


def test_high_dimensional_hull_uses_a_simplex_bound():
    pts = np.random.default_rng(0).normal(size=(14, 10))
    hull = VertexHull(pts)
    assert hull.affine_dim == 10 and not hull._facets_complete
    r, c = hull.inscribed_radius, hull.interior_point()
    assert r > 0
    u = np.random.default_rng(1).normal(size=(5, 10))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    assert hull.contains(c + r * u).all()
    d = np.random.default_rng(2).normal(size=(4, 10))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    assert not hull.contains(hull.lmo(d) - 1e-3 * d).any()


def test_hull_tie_rule_and_duplicates():
    hull = VertexHull([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(hull.lmo(np.zeros(2)), [1.0, 0.0])  # the first row
    np.testing.assert_array_equal(hull.lmo(np.array([1.0, 0.0])), [0.0, 1.0])
    assert hull.diameter == pytest.approx(np.sqrt(2.0))
    assert hull.inscribed_radius == pytest.approx(0.5)  # exact for the unit square
    point = VertexHull([[2.0, 3.0]])
    assert point.affine_dim == 0 and point.contains(np.array([2.0, 3.0]))
    with pytest.raises(ValueError, match="finite"):
        VertexHull([[0.0, np.nan]])
    with pytest.raises(ValueError, match="2 axes"):
        VertexHull([0.0, 1.0])


def test_polytope_checks_at_construction():
    with pytest.raises(ValueError, match="unbounded"):
        Polytope(np.array([[-1.0, 0.0], [0.0, -1.0]]), np.zeros(2))
    with pytest.raises(ValueError, match="empty"):
        Polytope(np.array([[1.0], [-1.0]]), np.array([0.0, -1.0]))
    with pytest.raises(ValueError, match="empty"):
        Polytope(np.array([[0.0, 0.0]]), np.array([-1.0]))
    with pytest.raises(ValueError, match=r"A \(m, n\) and b \(m,\)"):
        Polytope(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="both C and e"):
        Polytope(np.eye(2), np.ones(2), c=np.ones((1, 2)))
    with pytest.raises(ValueError, match="finite"):
        Polytope(np.array([[np.inf, 0.0], [0.0, 1.0]]), np.ones(2))


def test_implicit_equalities_and_diameter_bound():
    # the unit square in the plane z = 1, z fixed by two opposite inequalities
    a = np.array(
        [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1.0]], dtype=float
    )
    b = np.array([1.0, 0.0, 1.0, 0.0, 1.0, -1.0])
    poly = Polytope(a, b)
    np.testing.assert_array_equal(poly.implicit, [False, False, False, False, True, True])
    assert poly.affine_dim == 2
    np.testing.assert_allclose(poly.interior_point(), [0.5, 0.5, 1.0], atol=1e-9)
    assert poly.inscribed_radius == pytest.approx(0.5, rel=1e-6)
    assert not poly.diameter_is_exact and poly.diameter >= np.sqrt(2.0) - 1e-12
    point = Polytope(np.vstack([np.eye(2), -np.eye(2)]), np.array([1.0, 2.0, -1.0, -2.0]))
    assert point.affine_dim == 0 and point.contains(np.array([1.0, 2.0]))


@given(st.lists(st.floats(-3, 3), min_size=5, max_size=5).map(np.array))
@settings(max_examples=25, deadline=None)
def test_min_norm_point_is_the_projection(y):
    """Wolfe's algorithm over the simplex's LMO lands on the sort-based projection."""
    simplex = Simplex(5)
    res = min_norm_point(simplex.lmo, y, simplex.lmo(-y))
    assert res.converged
    np.testing.assert_allclose(res.point, project_simplex(y), atol=1e-8)
    true = float(np.linalg.norm(y - project_simplex(y)))
    assert res.lower - 1e-9 <= true <= res.upper + 1e-9
    assert lmo_contains(simplex.lmo, y, simplex.lmo(-y), true + 1e-6)
    if true > 1e-6:
        assert not lmo_contains(simplex.lmo, y, simplex.lmo(-y), true - 1e-7)
