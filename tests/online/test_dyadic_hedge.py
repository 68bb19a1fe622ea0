"""Theorem 14 (dponline.online.dyadic_hedge): the dyadic grid's parent map, M and M-dagger,
their norms against the paper's equations, and the learner's guarantee, bounds and regret."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.environments.lipschitz import NearestCentreLoss, lipschitz_low_dim
from dponline.online.dyadic_hedge import DyadicGrid, DyadicHedge, online_to_batch
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import LossFunctionFeedback


def test_parent_map_by_hand():
    # 1D, k = 2: points 0, 1/4, 1/2, 3/4, 1; p(1/4) = 0, p(1/2) = 0, p(3/4) = 1/2, p(1) = 0
    g = DyadicGrid(1, 2)
    assert g.points[:, 0].tolist() == [0, 0.25, 0.5, 0.75, 1]
    assert g.parent.tolist() == [0, 0, 0, 2, 0]
    assert g.depth.tolist() == [0, 1, 1, 2, 1]
    # 2D, k = 1: (1, 1/2) -> (1, 0) -> 0, a chain of k + 1 = 2 links
    g2 = DyadicGrid(2, 1)
    i = int(np.flatnonzero((g2.points == [1.0, 0.5]).all(axis=1))[0])
    j = g2.parent[i]
    assert g2.points[j].tolist() == [1.0, 0.0] and g2.parent[j] == 0
    assert g2.inverse_norm() == pytest.approx(math.sqrt(2))


@settings(max_examples=40, deadline=None)
@given(dim=st.sampled_from([1, 2]), k=st.integers(1, 6), seed=st.integers(0, 10**6))
def test_m_dagger_inverts_m_on_the_grid(dim, k, seed):
    # Eq. 4.1: M-dagger M l = l - l(0) for every l on the grid (exactly l when l(0) = 0)
    g = DyadicGrid(dim, k, lo=-1.0, hi=2.0)
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((3, g.size))
    back = g.inverse(g.transform(values))
    np.testing.assert_allclose(back, values - values[:, :1], atol=1e-12)
    values[:, 0] = 0.0
    np.testing.assert_allclose(g.inverse(g.transform(values)), values, atol=1e-12)
    # p reaches the origin: the depth counts the links, parents are one level up
    assert np.all(g.depth[g.parent[g.depth > 0]] == g.depth[g.depth > 0] - 1)
    # ||M-dagger||_{2->inf} = sqrt(max depth): the row of the deepest point is a chain indicator
    m_dagger = g.inverse(np.eye(g.size)).T  # row i of inverse(I) is M-dagger e_i, a column
    assert np.sqrt((m_dagger**2).sum(axis=1)).max() == pytest.approx(g.inverse_norm())


@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_parent_distances_against_eq_4_2(k):
    # 1D exactly D^2 (1 + (1 - 2^-k) / 2): the paper's "<= D^2" misses x = D, whose parent is 0
    g = DyadicGrid(1, k, 0.0, 3.0)
    assert g.parent_distance_sq() == pytest.approx(9.0 * (1 + (1 - 2.0**-k) / 2))
    assert g.inverse_norm() == pytest.approx(math.sqrt(k))
    # 2D grows like k (C_2 = O(log T)), and the depth is at most k + 1
    g2 = DyadicGrid(2, min(k, 6))
    assert g2.parent_distance_sq() <= 2 * (min(k, 6) + 2)
    assert g2.depth.max() <= min(k, 6) + 1


@settings(max_examples=30, deadline=None)
@given(dim=st.sampled_from([1, 2]), seed=st.integers(0, 10**6), g=st.floats(0.1, 10.0))
def test_every_lipschitz_loss_lies_in_the_counters_ball(dim, seed, g):
    # Eq. 4.2: ||M l|| <= G sqrt(sum ||x - p(x)||^2) for G-Lipschitz l
    grid = DyadicGrid(dim, 4)
    rng = np.random.default_rng(seed)
    loss = NearestCentreLoss(rng.uniform(0, 1, (3, dim)), g)
    assert np.linalg.norm(grid.transform(loss(grid.points))) <= grid.transform_radius(g) * (
        1 + 1e-12
    )


def _learner(budget=None, **kw):
    return DyadicHedge([0.0], [1.0], 64, lipschitz=1.0, budget=budget, replicas=4, rng=1, **kw)


def test_guarantee_is_the_counters_and_bounds_are_enforced():
    lr = _learner(PrivacyBudget(1.0, 1e-6))
    assert lr.privacy.epsilon <= 1.0 and lr.privacy.delta <= 1e-6
    assert lr.grid.levels == 6  # ceil(log2 64)
    lr.act()
    with pytest.raises(ValueError, match="declares Lipschitz constant 3"):
        lr.observe(LossFunctionFeedback(None, None, NearestCentreLoss(np.zeros((1, 1)), 3.0)))

    class Undeclared:  # a loss that hides its constant: the transform still catches it
        dim = 1

        def __call__(self, x):
            return 5.0 * x[..., 0]

    with pytest.raises(ValueError, match="not 1-Lipschitz"):
        lr.observe(LossFunctionFeedback(None, None, Undeclared()))
    lr.observe(LossFunctionFeedback(None, None, NearestCentreLoss(np.zeros((1, 1)), 1.0)))


def test_non_private_hedge_concentrates_on_the_best_grid_point():
    env = lipschitz_low_dim(2000, np.random.default_rng(3), kind="stochastic")
    lr = DyadicHedge(env.lo, env.hi, env.horizon, lipschitz=1.0, budget=None, rng=0, replicas=2)
    for t in range(env.horizon):
        fb, _ = env.round(t, lr.act())
        lr.observe(fb)
    w = lr.weights()[0]
    totals = env.all_losses_on(lr.grid.points).sum(axis=0)
    assert w[np.argmin(totals)] == w.max()


def test_regret_within_the_explicit_bound():
    # T = 256 on the stochastic 1D stream, padded tree (the bound's assumption), 32 replicas:
    # the mean regret against the grid is far inside the bound (Theorem 14's explicit form)
    env = lipschitz_low_dim(256, np.random.default_rng(4), kind="adversarial")
    lr = DyadicHedge(env.lo, env.hi, env.horizon, lipschitz=1.0, mechanism="padded_tree",
                     budget=PrivacyBudget(1.0, 1e-6), replicas=32, rng=5)  # fmt: skip
    total = np.zeros(32)
    for t in range(env.horizon):
        fb, loss = env.round(t, lr.act())
        total += loss
        lr.observe(fb)
    regret = float(env.regret(total.mean()[None], np.array([env.horizon]))[0])
    bound = lr.regret_bound(env.all_losses_on(lr.grid.points))
    assert 0 < regret < bound["explicit"]
    assert bound["noise_term"] > 0 and bound["discretisation"] > 0


def test_online_to_batch_returns_one_iterate_per_replica():
    env = lipschitz_low_dim(200, np.random.default_rng(6), dim=2)
    lr = DyadicHedge(env.lo, env.hi, 200, lipschitz=1.0, budget=PrivacyBudget(1.0, 1e-6),
                     levels=3, replicas=5, rng=7)  # fmt: skip
    out = online_to_batch(lr, (env.loss(t) for t in range(200)), rng=8)
    assert out.shape == (5, 2)
    assert np.all((out >= 0) & (out <= 1))
    assert np.all(np.isin(out, lr.grid.points[:, 0]))


def test_regret_bound_takes_the_losses_in_blocks():
    env = lipschitz_low_dim(300, np.random.default_rng(8))
    learner = DyadicHedge(env.lo, env.hi, 300, lipschitz=env.lipschitz, budget=None, levels=6)
    whole = learner.regret_bound(env.all_losses_on(learner.grid.points))
    blocks = (
        env.all_losses_on(learner.grid.points, s, min(s + 70, 300)) for s in range(0, 300, 70)
    )
    assert learner.regret_bound(blocks) == pytest.approx(whole, rel=1e-12)


def test_points_drawn_this_round_survive_a_checkpoint_taken_before_the_loss():
    """A state saved between act() and observe() holds the round's points: the resumed learner
    answers act() with them (no fresh draw), and a state with points that are not the grid's,
    or none for a round acted in, is refused."""
    lr = _learner(PrivacyBudget(1.0, 1e-6))
    loss = LossFunctionFeedback(None, None, NearestCentreLoss(np.zeros((1, 1)), 1.0))
    for _ in range(3):
        lr.act()
        lr.observe(loss)
    points = lr.act()
    state = lr.state_dict()
    twin = DyadicHedge(
        [0.0], [1.0], 64, lipschitz=1.0, budget=PrivacyBudget(1.0, 1e-6), replicas=4, rng=7
    )
    twin.load_state_dict(state)
    np.testing.assert_array_equal(twin.act(), points)
    twin.observe(loss)
    lr.observe(loss)
    np.testing.assert_array_equal(twin.act(), lr.act())
    for held, match in ((None, "holds no points"), (points + 0.3, "grid points")):
        with pytest.raises(ValueError, match=match):
            _learner(PrivacyBudget(1.0, 1e-6)).load_state_dict({**state, "held": held})


def test_a_state_of_another_box_is_refused():
    """A state of the dyadic Hedge over [0, 1] loaded into one over [1, 2] (the same grid
    size, so the same counter) continued on another grid without a word."""
    lr = _learner(PrivacyBudget(1.0, 1e-6))
    lr.act()
    shifted = DyadicHedge(
        [1.0], [2.0], 64, lipschitz=1.0, budget=PrivacyBudget(1.0, 1e-6), replicas=4, rng=1
    )
    with pytest.raises(ValueError, match="differs in grid"):
        shifted.load_state_dict(lr.state_dict())
    _learner(PrivacyBudget(1.0, 1e-6)).load_state_dict(lr.state_dict())
