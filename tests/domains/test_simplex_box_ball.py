"""Simplices, boxes and l_p balls: projections against their optimality conditions, the exact
inscribed radii, the l_p ball as a ConvexDomain, barriers and argument errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.domains import (
    BoxBarrier,
    ConvexDomain,
    CornerSimplex,
    HasBarrier,
    PolytopeBarrier,
    Projectable,
    Simplex,
)
from dponline.domains.box import Box
from dponline.domains.lp_ball import LpBall
from dponline.domains.simplex import project_capped_simplex, project_simplex

vectors = st.lists(st.floats(-5, 5), min_size=1, max_size=7).map(np.array)


def _is_projection(y, p, vertices, atol=1e-9):
    """p is the projection of y onto conv(vertices) iff <y - p, v - p> <= 0 for every vertex."""
    return np.all((vertices - p) @ (y - p) <= atol)


@given(vectors)
@settings(max_examples=40, deadline=None)
def test_simplex_projection_is_optimal(y):
    n = y.size
    p = project_simplex(y)
    assert p.sum() == pytest.approx(1.0) and p.min() >= 0
    assert _is_projection(y, p, np.eye(n))
    corner = CornerSimplex(n).project(y)
    assert _is_projection(y, corner, np.vstack([np.zeros(n), np.eye(n)]))


@given(vectors, st.integers(0, 7))
@settings(max_examples=40, deadline=None)
def test_capped_simplex_projection_is_optimal(y, k):
    import itertools

    n = y.size
    k = min(k, n)
    p = project_capped_simplex(y, k)
    verts = np.array(
        [[1.0 if i in s else 0.0 for i in range(n)] for s in itertools.combinations(range(n), k)]
    )
    assert p.sum() == pytest.approx(k) and p.min() >= 0 and p.max() <= 1
    assert _is_projection(y, p, verts, atol=1e-8)


def _radius_is_largest(dom: ConvexDomain, candidates: np.ndarray) -> bool:
    """Some unit direction of the hull leaves the set at 1.01 times the inscribed radius."""
    q = dom.hull_basis()
    u = candidates @ q @ q.T
    u = u[np.linalg.norm(u, axis=1) > 1e-12]
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    pts = dom.interior_point() + 1.01 * dom.inscribed_radius * u
    return not dom.contains(pts).all()


@pytest.mark.parametrize(
    "dom",
    [Simplex(5), CornerSimplex(4), Box(3, [0.0, -1.0, 2.0], [1.0, 3.0, 2.5])]
    + [LpBall(4, p, 1.5) for p in (1.0, 1.5, 2.0, 3.0, math.inf)],
    ids=repr,
)
def test_closed_form_radii_are_exact(dom):
    n = dom.dim
    candidates = np.vstack([np.eye(n), -np.eye(n), np.ones((1, n)), -np.ones((1, n))])
    assert _radius_is_largest(dom, candidates)


@pytest.mark.parametrize("p", [1.0, 1.25, 2.0, 3.0, math.inf])
def test_lp_ball_is_a_domain(p):
    ball = LpBall(4, p, 2.0)
    assert isinstance(ball, ConvexDomain) and isinstance(ball, Projectable)
    assert ball.lp_diameter() == 4.0
    factor = 4 ** (0.5 - (0 if p == math.inf else 1 / p))
    assert ball.diameter == pytest.approx(4.0 * max(1.0, factor))
    assert ball.inscribed_radius == pytest.approx(2.0 * min(1.0, factor))
    # the diameter is attained: two antipodal boundary points at that distance
    x = ball.lmo(np.ones(4)) if p >= 2 else ball.lmo(np.eye(4)[0])
    assert np.linalg.norm(2 * x) == pytest.approx(ball.diameter)


@given(vectors, st.sampled_from([1.0, 1.3, 2.0, 2.5, 6.0, math.inf]))
@settings(max_examples=40, deadline=None)
def test_lp_ball_projection_is_optimal(y, p):
    ball = LpBall(y.size, p, 1.0)
    x = ball.project(y)
    assert ball.norm(x) <= 1.0 + 1e-9
    if ball.norm(y) <= 1.0:
        np.testing.assert_array_equal(x, y)
        return
    # optimality: y - x is a normal of the ball at x, i.e. x maximises <y - x, .> over it
    g = y - x
    support = -ball.min_linear(g)
    assert g @ x == pytest.approx(support, rel=1e-7, abs=1e-9)


def test_lp_ball_contains_uses_the_euclidean_distance():
    ball = LpBall(3, 3.0, 1.0)
    e = np.eye(3)[0]
    assert ball.contains(e) and not ball.contains(1.001 * e)
    assert ball.contains(1.001 * e, tol=1.1e-3)


def test_box_barrier_and_errors():
    assert isinstance(Box(2), HasBarrier)
    assert isinstance(Box(2, -2.0, 3.0).barrier, BoxBarrier)
    assert isinstance(Box(2, [0.0, 1.0], 2.0).barrier, PolytopeBarrier)
    with pytest.raises(ValueError, match=r"lo < hi .* lo\[1\]"):
        Box(2, [0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="length 3"):
        Box(3, [0.0, 1.0], 2.0)
    with pytest.raises(ValueError, match="finite"):
        Box(2, np.nan, 1.0)
    with pytest.raises(TypeError, match="dim"):
        Box(2.0)
    with pytest.raises(ValueError, match="dim"):
        Simplex(0)
    with pytest.raises(TypeError, match="p must be"):
        LpBall(3, "2")


def test_tie_rules():
    np.testing.assert_array_equal(Simplex(3).lmo(np.array([1.0, 0.0, 0.0])), [0, 1, 0])
    np.testing.assert_array_equal(CornerSimplex(3).lmo(np.zeros(3)), np.zeros(3))
    np.testing.assert_array_equal(
        CornerSimplex(3).lmo(np.array([0.0, -1.0, -1.0])), [0.0, 1.0, 0.0]
    )
    np.testing.assert_array_equal(Box(2, 0.0, 1.0).lmo(np.array([0.0, -1.0])), [0.0, 1.0])


@pytest.mark.parametrize("p", [1.5, 2.0, 4.0])
def test_smooth_balls_meet_the_contract(p):
    """The contract checks of test_contract.py for the balls that are not polytopes."""
    ball = LpBall(3, p, 2.0)
    rng = np.random.default_rng(5)
    d = np.vstack([rng.normal(size=(5, 3)), np.zeros((1, 3)), [[1.0, 1.0, -1.0]]])
    x = ball.lmo(d)
    np.testing.assert_array_equal(x, np.array([ball.lmo(row) for row in d]))
    np.testing.assert_allclose((x * d).sum(axis=1), ball.min_linear(d), atol=1e-12)
    assert ball.contains(x).all()
    np.testing.assert_allclose(ball.project(x), x, atol=1e-12)
    u = rng.normal(size=(20, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    assert ball.contains(ball.inscribed_radius * u).all()
    unit = d[:5] / np.linalg.norm(d[:5], axis=1, keepdims=True)
    assert not ball.contains(ball.lmo(unit) - 1e-3 * unit).any()
    with pytest.raises(ValueError, match="finite"):
        ball.lmo(np.array([np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="last axis"):
        ball.lmo(np.zeros(4))
