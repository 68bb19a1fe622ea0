"""Self-concordant barriers: gradient and Hessian against finite differences, centres, LPs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from dponline.domains import BallBarrier, BoxBarrier, PolytopeBarrier

TRIANGLE = PolytopeBarrier(
    np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 1.0]]), np.array([0.0, 0.0, 1.0])
)
BARRIERS = {
    "ball": BallBarrier(3, radius=2.0),
    "box": BoxBarrier(3, low=-1.0, high=2.0),
    "polytope": PolytopeBarrier(
        np.r_[np.eye(3), -np.eye(3), np.ones((1, 3))], np.r_[np.ones(3), np.ones(3), [1.5]]
    ),
}


def _interior_points(barrier, n=5, seed=0):
    rng = np.random.default_rng(seed)
    c = barrier.analytic_center()
    pts = []
    while len(pts) < n:
        p = c + rng.normal(scale=0.3, size=barrier.dim)
        if barrier.contains(p)[0]:
            pts.append(p)
    return np.array(pts)


@pytest.mark.parametrize("name", BARRIERS)
def test_gradient_and_hessian_against_finite_differences(name):
    barrier = BARRIERS[name]
    x = _interior_points(barrier)
    h = 1e-6
    g, hess = barrier.gradient(x), barrier.hessian(x)
    for k in range(barrier.dim):
        e = np.zeros(barrier.dim)
        e[k] = h
        fd_g = (barrier.value(x + e) - barrier.value(x - e)) / (2 * h)
        np.testing.assert_allclose(g[:, k], fd_g, rtol=1e-5, atol=1e-6)
        fd_h = (barrier.gradient(x + e) - barrier.gradient(x - e)) / (2 * h)
        np.testing.assert_allclose(hess[:, :, k], fd_h, rtol=1e-5, atol=1e-5)
    assert np.all(np.linalg.eigvalsh(hess) > 0)


@pytest.mark.parametrize("name", BARRIERS)
def test_analytic_center_minimises_the_barrier(name):
    barrier = BARRIERS[name]
    c = barrier.analytic_center()
    np.testing.assert_allclose(barrier.gradient(c[None])[0], 0.0, atol=1e-8)


def test_self_concordance_parameters_and_membership():
    assert BallBarrier(4).nu == 1.0
    assert BoxBarrier(4).nu == 8.0
    assert TRIANGLE.nu == 3.0
    np.testing.assert_allclose(TRIANGLE.analytic_center(), [1 / 3, 1 / 3], atol=1e-9)
    assert not BallBarrier(2).contains(np.array([1.0, 0.0]))[0]
    assert BoxBarrier(2).contains(np.array([[0.0, 0.99], [0.0, 1.0]])).tolist() == [True, False]
    with pytest.raises(ValueError, match="bounded"):
        PolytopeBarrier(np.array([[1.0, 0.0]]), np.array([1.0]))


@pytest.mark.parametrize("seed", range(4))
def test_min_linear_against_linprog(seed):
    c = np.random.default_rng(seed).normal(size=3)
    box = BARRIERS["box"]
    assert box.min_linear(c) == pytest.approx(linprog(c, bounds=[(-1, 2)] * 3).fun)
    poly = BARRIERS["polytope"]
    lp = linprog(c, A_ub=poly.a, b_ub=poly.b, bounds=[(None, None)] * 3)
    assert poly.min_linear(c) == pytest.approx(lp.fun)
    assert BARRIERS["ball"].min_linear(c) == pytest.approx(-2.0 * np.linalg.norm(c))
    assert box.max_abs_linear(c) >= abs(box.min_linear(c))
