"""Bandit convex environments: the comparator in hindsight against brute force and closed forms,
declared bounds enforced, and the real-data problems (NYSE k-baskets, DJIA spanning trees)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dponline.domains.base import ConvexDomain
from dponline.domains.box import Box
from dponline.domains.matroids import UniformMatroidBasePolytope
from dponline.environments.bandit_convex import (
    BanditConvexEnvironment,
    LinearLosses,
    QuadraticLosses,
    bandit_convex,
    grid_dag,
    make_domain,
)
from dponline.environments.catalogue import build_environment
from dponline.environments.real import stock_basket, stock_tree


def test_linear_comparator_equals_brute_force_over_vertices():
    d = UniformMatroidBasePolytope(5, 2)
    vertices = []
    for s in itertools.combinations(range(5), 2):
        v = np.zeros(5)
        v[list(s)] = 1.0
        vertices.append(v)
    vertices = np.array(vertices)
    rng = np.random.default_rng(0)
    theta = rng.uniform(-0.4, 0.4, size=(30, 5))
    c = np.asarray(d.interior_point())
    env = BanditConvexEnvironment(d, LinearLosses(theta, c, bound=1.0))
    cum = np.cumsum(theta, axis=0)
    brute = (cum @ vertices.T).min(axis=1) - cum @ c
    np.testing.assert_allclose(env.best_cumulative_loss(), brute, atol=1e-12)
    # a fixed vertex's regret is its cumulative loss minus the best, never negative
    fixed = np.cumsum((vertices[0] - c) @ theta.T)
    assert np.all(env.regret(fixed[None, :]) >= -1e-12)


def test_quadratic_comparator_on_the_box_is_the_clipped_mean_target():
    d = Box(3)
    rng = np.random.default_rng(1)
    targets = rng.uniform(-1.8, 1.8, size=(40, 3))
    c = np.zeros(3)
    losses = QuadraticLosses(targets, c, radius=4.0, tolerance=1e-12)
    env = BanditConvexEnvironment(d, losses)
    best = env.best_cumulative_loss()
    n = np.arange(1, 41)[:, None]
    x = np.clip(np.cumsum(targets, axis=0) / n, -1, 1)
    exact = np.array(
        [sum(losses.value(s, x[t][None, :])[0] for s in range(t + 1)) for t in range(40)]
    )
    np.testing.assert_allclose(best, exact, atol=1e-9)
    assert env.comparator_error == 0.0  # the box has an exact projection


def test_quadratic_comparator_by_conditional_gradient_is_certified():
    # the k-subset polytope through its oracle only: the answer is within the stated error
    d = UniformMatroidBasePolytope(4, 2)

    class OracleOnly(ConvexDomain):
        """d through its oracle only (no projection)."""

        dim, diameter, affine_dim, inscribed_radius = d.dim, d.diameter, d.affine_dim, 0.5

        def lmo(self, direction):
            return d.lmo(direction)

        def hull_basis(self):
            return d.hull_basis()

        def interior_point(self):
            return d.interior_point()

        def contains(self, x, tol=1e-9):
            return d.contains(x, tol)

    oracle = OracleOnly()
    rng = np.random.default_rng(3)
    c = np.asarray(d.interior_point())
    targets = c + rng.uniform(-0.5, 0.5, size=(25, 4))
    exact = BanditConvexEnvironment(d, QuadraticLosses(targets, c, radius=1.0))
    approx = BanditConvexEnvironment(oracle, QuadraticLosses(targets, c, radius=1.0))
    gap = approx.best_cumulative_loss() - exact.best_cumulative_loss()
    assert exact.comparator_error == 0.0
    assert np.all(gap >= -1e-9) and np.all(gap <= approx.comparator_error + 1e-9)


def test_declared_bounds_are_enforced():
    c = np.zeros(2)
    with pytest.raises(ValueError, match="exceeds the declared bound"):
        LinearLosses(np.array([[3.0, 4.0]]), c, bound=1.0)
    with pytest.raises(ValueError, match="exceeds the declared bound"):
        QuadraticLosses(np.array([[0.0, 2.0]]), c, radius=1.0)
    with pytest.raises(ValueError, match="finite"):
        LinearLosses(np.array([[np.nan, 0.0]]), c)
    with pytest.raises(ValueError, match=r"\(T, 2\)"):
        LinearLosses(np.zeros((3, 3)), c)


@pytest.mark.parametrize("domain", ["simplex", "box", "ball", "k_subsets", "grid_paths"])
def test_synthetic_environment_builds_and_plays(domain):
    env = bandit_convex(20, np.random.default_rng(2), domain=domain, dim=4)
    x = np.broadcast_to(env.domain.interior_point(), (3, env.dim))
    fb, loss = env.round(0, x)
    np.testing.assert_allclose(loss, 0.0, atol=1e-12)  # every loss vanishes at the centre
    np.testing.assert_array_equal(fb.loss, loss)
    assert env.best_cumulative_loss().shape == (20,)
    assert env.lipschitz() == 1.0


def test_grid_dag_and_make_domain():
    assert len(grid_dag(8, 8)) == 112
    assert make_domain("grid_paths", 8).dim == 112
    with pytest.raises(ValueError, match="domain must be one of"):
        make_domain("torus", 3)


def test_real_data_problems():
    basket = stock_basket(horizon=200, k=5)
    assert basket.dim == 36 and basket.horizon == 200
    tree = stock_tree(horizon=100)
    assert tree.dim == 105 and tree.domain.affine_dim == 104
    for env in (basket, tree):
        best = env.best_cumulative_loss()
        assert np.all(np.diff(best) <= env.losses.bound * 10)  # finite, computed per round
        # the comparator is the best fixed vertex: no vertex beats it
        v = env.domain.lmo(np.cumsum(env.losses.vectors, axis=0)[-1])
        cum = float(np.sum((v - env.losses.center) @ env.losses.vectors.T))
        assert cum == pytest.approx(best[-1])
    built = build_environment("stock_tree", 50, np.random.default_rng(0), stocks=6)
    assert built.dim == 15
