"""1-2D Lipschitz streams (dponline.environments.lipschitz): the declared constants against
finite differences, the portfolio by hand, the comparator against brute force."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.environments.lipschitz import (
    NearestCentreLoss,
    PortfolioLoss,
    lipschitz_low_dim,
    stock_portfolio_low_dim,
)


@settings(max_examples=50, deadline=None)
@given(dim=st.sampled_from([1, 2]), seed=st.integers(0, 10**6))
def test_declared_lipschitz_constants_hold(dim, seed):
    rng = np.random.default_rng(seed)
    losses = [
        NearestCentreLoss(rng.uniform(0, 1, (3, dim)), float(rng.uniform(0.1, 5))),
        PortfolioLoss(rng.uniform(0.7, 1.4, dim + 1)),
    ]
    x, y = rng.uniform(0, 1, (2, 500, dim))
    dist = np.linalg.norm(x - y, axis=1)
    for loss in losses:
        assert np.all(np.abs(loss(x) - loss(y)) <= loss.lipschitz * dist * (1 + 1e-9) + 1e-12)


def test_portfolio_by_hand():
    r = np.array([1.1, 0.9, 1.3])
    # 2D: w = (0.5, 0.5 * 0.25, 0.5 * 0.75)
    assert PortfolioLoss(r)(np.array([0.5, 0.25])) == pytest.approx(
        -math.log(0.5 * 1.1 + 0.125 * 0.9 + 0.375 * 1.3)
    )
    assert PortfolioLoss(r[:2])(np.array([0.3])) == pytest.approx(-math.log(0.3 * 1.1 + 0.7 * 0.9))
    # its constant: sqrt(2) (1.3 - 0.9) / 0.9
    assert PortfolioLoss(r).lipschitz == pytest.approx(math.sqrt(2) * 0.4 / 0.9)


@pytest.mark.parametrize("dim", [1, 2])
def test_comparator_is_the_grids_brute_force_minimum(dim):
    env = lipschitz_low_dim(60, np.random.default_rng(1), dim=dim, kind="adversarial")
    env.comparator_level = 3 if dim == 2 else 5
    env.__post_init__()  # rebuild the comparator grid at the chosen level
    side = np.linspace(0, 1, 2**env.comparator_level + 1)
    grid = np.stack(np.meshgrid(*[side] * dim, indexing="ij"), -1).reshape(-1, dim)
    values = np.array([env.loss(t)(grid) for t in range(60)])
    rounds = np.array([1, 17, 60])
    expected = [values[:r].sum(axis=0).min() for r in rounds]
    np.testing.assert_allclose(env.best_cumulative_loss(rounds), expected, rtol=1e-12)
    np.testing.assert_allclose(env.regret(np.array(expected) + 1.0, rounds), 1.0)
    # the true best point can beat the grid by at most the stated error
    fine = np.stack(np.meshgrid(*[np.linspace(0, 1, 129)] * dim, indexing="ij"), -1)
    best_fine = np.array([env.loss(t)(fine.reshape(-1, dim)) for t in range(60)]).sum(0).min()
    assert expected[-1] - best_fine <= env.comparator_error(60) + 1e-12


def test_round_checks_actions_and_factories_are_deterministic():
    env = lipschitz_low_dim(10, np.random.default_rng(2), dim=2)
    with pytest.raises(ValueError, match="outside the box"):
        env.round(0, np.array([[0.5, 1.5]]))
    fb, loss = env.round(0, np.array([[0.5, 0.5], [0.1, 0.9]]))
    assert loss.shape == (2,) and fb.loss is not None
    again = lipschitz_low_dim(10, np.random.default_rng(2), dim=2)
    np.testing.assert_array_equal(env.params, again.params)
    stocks = stock_portfolio_low_dim(30, dim=2, start=100)
    assert stocks.params.shape == (30, 3) and stocks.lipschitz > 0
    with pytest.raises(ValueError, match="exceed the 5651 days"):
        stock_portfolio_low_dim(100, start=5600)
    assert stock_portfolio_low_dim(None, start=5600).params.shape == (51, 2)  # every day left


def test_long_one_dimensional_regret_runs():
    env = lipschitz_low_dim(20_000, np.random.default_rng(3))
    best = env.best_cumulative_loss(np.array([1_000, 20_000]))
    assert best[0] < best[1]
