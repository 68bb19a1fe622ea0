"""Bandit convex environments: the comparator in hindsight against brute force and closed forms,
declared bounds enforced, and the real-data problems (NYSE k-baskets, DJIA spanning trees)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dponline.domains.base import ConvexDomain
from dponline.domains.box import Box
from dponline.domains.matroids import UniformMatroidBasePolytope
from dponline.environments.bandit_convex import (
    BanditConvexEnvironment,
    LevelLosses,
    LinearLosses,
    QuadraticLosses,
    _weighted_median_minima,
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


# --- non-smooth level losses: the comparator is exact at every round ----------------------------


@settings(max_examples=200, deadline=None)
@given(
    levels=st.lists(st.integers(-6, 6), min_size=1, max_size=25),
    data=st.data(),
    lo=st.integers(-8, 3),
    width=st.integers(0, 10),
)
def test_running_weighted_median_minimises_every_prefix(levels, data, lo, width):
    # brute force: a convex piecewise-linear function of one variable on [lo, hi] is smallest
    # at an end or at a breakpoint; integer levels make ties common, zero weights allowed
    n = len(levels)
    weights = st.lists(st.sampled_from([0.0, 0.25, 1.0, 2.5]), min_size=n, max_size=n)
    over, under = np.array(data.draw(weights)), np.array(data.draw(weights))
    b = np.array(levels, dtype=float)
    hi = lo + width
    got = _weighted_median_minima(b, over, under, float(lo), float(hi))
    for t in range(n):
        z = np.concatenate([[lo, hi], np.clip(b[: t + 1], lo, hi)])[:, None]
        g = over[: t + 1] * np.maximum(z - b[: t + 1], 0) + under[: t + 1] * np.maximum(
            b[: t + 1] - z, 0
        )
        assert got[t] == pytest.approx(g.sum(axis=1).min(), abs=1e-9)


def _level_minimum_by_linprog(losses: LevelLosses, t: int, a_ub, b_ub, a_eq, b_eq, bounds):
    """min over the set of sum_{s<=t} f_s(x) as a linear program in (x, u, v) with
    u_s - v_s = <a, x> - b_s, u, v >= 0 (independent of the one-direction reduction)."""
    n, m = losses.direction.size, t + 1
    cost = np.concatenate([np.zeros(n), losses.over[:m], losses.under[:m]])
    eq_rows = np.hstack([np.tile(losses.direction, (m, 1)), -np.eye(m), np.eye(m)])
    eq_rhs = losses.levels[:m]
    if a_eq is not None:
        eq_rows = np.vstack([eq_rows, np.hstack([a_eq, np.zeros((len(a_eq), 2 * m))])])
        eq_rhs = np.concatenate([eq_rhs, b_eq])
    ub = None if a_ub is None else np.hstack([a_ub, np.zeros((len(a_ub), 2 * m))])
    res = linprog(
        cost, A_ub=ub, b_ub=b_ub, A_eq=eq_rows, b_eq=eq_rhs,
        bounds=list(bounds) + [(0, None)] * (2 * m), method="highs",
    )  # fmt: skip
    assert res.status == 0
    zc = float(losses.center @ losses.direction)
    gap = zc - losses.levels[:m]
    at_c = losses.over[:m] @ np.maximum(gap, 0) + losses.under[:m] @ np.maximum(-gap, 0)
    return res.fun - at_c


@pytest.mark.parametrize("family", ["absolute", "hinge", "pinball"])
@pytest.mark.parametrize("domain", ["box", "simplex"])
def test_level_comparator_equals_a_linear_program(family, domain):
    rng = np.random.default_rng(7)
    n, horizon = 4, 30
    a = rng.standard_normal(n)
    a /= np.linalg.norm(a)
    levels = rng.normal(0.2, 0.6, horizon)
    d = Box(n) if domain == "box" else make_domain("simplex", n)
    c = np.asarray(d.interior_point())
    if family == "absolute":
        losses = LevelLosses.absolute(a, levels, c)
    elif family == "hinge":
        losses = LevelLosses.hinge(a, levels, rng.choice([-1.0, 1.0], horizon), c)
    else:
        losses = LevelLosses(a, levels, c, np.full(horizon, 0.8), np.full(horizon, 0.2))
    env = BanditConvexEnvironment(d, losses)
    best = env.best_cumulative_loss()
    if domain == "box":
        lp = (None, None, None, None, [(-1, 1)] * n)
    else:
        lp = (None, None, np.ones((1, n)), np.ones(1), [(0, None)] * n)
    for t in (0, 1, 5, 17, horizon - 1):
        assert best[t] == pytest.approx(_level_minimum_by_linprog(losses, t, *lp), abs=1e-8)
    assert env.comparator_error == 0.0
    # every loss vanishes at the centre and is ||a||-Lipschitz
    x = c + 0.3 * rng.standard_normal((5, n))
    y = c + 0.3 * rng.standard_normal((5, n))
    for t in range(horizon):
        np.testing.assert_allclose(losses.value(t, c[None, :]), 0.0, atol=1e-12)
        diff = np.abs(losses.value(t, x) - losses.value(t, y))
        assert np.all(diff <= np.linalg.norm(x - y, axis=1) * losses.bound + 1e-12)


def test_level_losses_refuse_bad_inputs():
    a, c = np.array([0.6, 0.8]), np.zeros(2)
    with pytest.raises(ValueError, match="exceeds the declared bound"):
        LevelLosses.absolute(2 * a, np.zeros(3), c)
    with pytest.raises(ValueError, match="non-negative"):
        LevelLosses(a, np.zeros(3), c, np.ones(3), -np.ones(3))
    with pytest.raises(ValueError, match="signs"):
        LevelLosses.hinge(a, np.zeros(2), np.array([1.0, 0.0]), c)
    with pytest.raises(ValueError, match="finite"):
        LevelLosses.absolute(a, np.array([np.inf]), c)
    with pytest.raises(ValueError, match="one length"):
        LevelLosses.absolute(np.ones(3), np.zeros(2), c)


@pytest.mark.parametrize("losses", ["absolute", "hinge"])
def test_level_families_in_the_catalogue(losses):
    env = build_environment(
        "bandit_convex", 200, np.random.default_rng(0), domain="k_subsets", dim=5, losses=losses
    )
    assert env.losses.kind == "level" and env.lipschitz() == 1.0
    best = env.best_cumulative_loss()
    # the best fixed point beats the centre (which scores 0) once the levels have accumulated
    assert best[-1] < -1.0
