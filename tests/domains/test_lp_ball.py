"""l_p-ball linear minimisation oracles against linprog, brute force and Hoelder."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dponline.domains.lp_ball import LpBall, dual_exponent


@pytest.mark.parametrize("seed", range(5))
def test_l1_and_linf_lmos_against_linprog(seed):
    c = np.random.default_rng(seed).normal(size=4)
    cube = LpBall(4, math.inf, radius=2.0)
    assert cube.lmo(c) @ c == pytest.approx(linprog(c, bounds=[(-2, 2)] * 4).fun)
    # l1 ball of radius 2 = convex hull of +-2 e_i: brute force over the vertices
    l1 = LpBall(4, 1.0, radius=2.0)
    vertices = np.r_[2 * np.eye(4), -2 * np.eye(4)]
    assert l1.lmo(c) @ c == pytest.approx((vertices @ c).min())
    assert l1.min_linear(c) == pytest.approx((vertices @ c).min())


@given(
    st.lists(st.floats(-10, 10), min_size=2, max_size=6),
    st.sampled_from([1.25, 1.5, 2.0, 3.0, 10.0]),
)
@settings(max_examples=80, deadline=None)
def test_lp_lmo_attains_hoelder(c, p):
    c = np.array(c)
    ball = LpBall(len(c), p, radius=1.5)
    v = ball.lmo(c)
    q = dual_exponent(p)
    if np.abs(c).max() == 0:
        assert np.all(v == 0)
        return
    assert ball.norm(v) == pytest.approx(1.5, rel=1e-9)
    assert v @ c == pytest.approx(-1.5 * np.linalg.norm(c, ord=q), rel=1e-9, abs=1e-12)
    # no random point of the ball does better
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, len(c)))
    z = 1.5 * z / np.linalg.norm(z, ord=p, axis=1, keepdims=True)
    assert (z @ c).min() >= v @ c - 1e-9


def test_batched_and_validation():
    ball = LpBall(3, 1.5)
    c = np.random.default_rng(1).normal(size=(5, 3))
    np.testing.assert_allclose(ball.lmo(c), np.array([ball.lmo(r) for r in c]))
    with pytest.raises(ValueError, match="p must be"):
        LpBall(3, 0.5)
    assert dual_exponent(1) == math.inf and dual_exponent(math.inf) == 1.0
