"""The synthetic regression of Han et al. App. C (``lp_regression``): the stated norms, fresh and
deterministic held-out sets, SubOpt's fixed points, and the environment protocols."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.domains.lp_ball import LpBall
from dponline.environments.base import Environment, HeldOutEvaluation
from dponline.environments.catalogue import build_environment
from dponline.environments.lp_regression import LpRegressionStream, Risk, subopt


def _env(p=1.5, d=5, T=300, seed=3, **kw):
    return LpRegressionStream(d, T, p, np.random.default_rng(seed), **kw)


@pytest.mark.parametrize("p", [1.5, math.inf])
@pytest.mark.parametrize("d", [5, 10])
def test_data_have_the_stated_norms(p, d):
    env = _env(p, d, n_validation=400, n_test=500)
    q = 3.0 if p == 1.5 else 1.0
    assert env.q == q and env.x_bound(q) == 1.0
    np.testing.assert_allclose(LpBall(d, p).norm(env.theta_star), 1.0, rtol=1e-12)
    np.testing.assert_allclose(env.theta_star, env.theta_star[0])  # ones, normalised
    assert env.x.shape == (300, d)
    np.testing.assert_allclose(LpBall(d, q).norm(env.x), 1.0, rtol=1e-12)
    assert env.validation.size == 400 and env.test.size == 500
    # y = <x, theta*> + N(0, 0.05^2): the residual sd of 300 draws is within 20% of 0.05 except
    # with probability < 1e-6
    assert (env.y - env.x @ env.theta_star).std() == pytest.approx(0.05, rel=0.2)


def test_x_bound_in_other_norms_holds_for_every_sample():
    env = _env(1.5, 6, T=500)
    for q in (1.0, 2.0, 3.0, 7.0, math.inf):
        assert np.all(LpBall(6, q).norm(env.x) <= env.x_bound(q) * (1 + 1e-12))
    assert env.x_bound(1.0) == pytest.approx(6 ** (1 - 1 / 3))  # d^(1/q' - 1/q), q' < q


def test_subopt_is_zero_at_theta_star_and_one_at_zero_on_both_held_out_sets():
    env = _env()
    for loss in (env.test_loss, env.validation_loss):
        np.testing.assert_allclose(
            loss(np.stack([env.theta_star, np.zeros(5)])), [0.0, 1.0], atol=1e-12
        )


def test_held_out_sets_are_fresh_draws_and_deterministic_in_the_seed():
    a, b, c = _env(seed=1), _env(seed=1), _env(seed=2)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.test.gram, b.test.gram)
    assert not np.allclose(a.x, c.x)
    assert not np.allclose(a.validation.gram, a.test.gram)


def test_rounds_score_by_test_subopt_and_hand_out_the_stream():
    env = _env(T=4)
    theta = np.stack([env.theta_star, 0.5 * env.theta_star])
    feedback, loss = env.round(2, theta)
    np.testing.assert_array_equal(feedback.x, env.x[2])
    assert feedback.y == env.y[2]
    np.testing.assert_allclose(loss, env.test_loss(theta))
    np.testing.assert_allclose(env.regret(np.array([[0.1, 0.3]])), [[0.1, 0.3]])
    with pytest.raises(ValueError, match=r"round must lie in \[0, 4\)"):
        env.round(4, theta)


def test_risk_is_the_mean_squared_loss():
    rng = np.random.default_rng(0)
    x, y, theta = rng.normal(size=(50, 3)), rng.normal(size=50), rng.normal(size=(4, 3))
    direct = ((theta @ x.T - y) ** 2).mean(axis=1)
    np.testing.assert_allclose(Risk.from_samples(x, y)(theta), direct, rtol=1e-12)
    np.testing.assert_allclose(subopt(np.zeros(3), Risk.from_samples(x, y), theta[0]), 1.0)


def test_catalogue_builds_it_and_it_meets_both_protocols():
    env = build_environment("lp_regression", 50, np.random.default_rng(0), p=math.inf, dim=3)
    assert isinstance(env, Environment) and isinstance(env, HeldOutEvaluation)
    assert env.p == math.inf and env.horizon == 50 and env.y_bound == pytest.approx(1.25)
    assert env.clipped_labels == int(np.count_nonzero(np.abs(env.y) > 1.25))
    stream = build_environment("regression_stream", 50, np.random.default_rng(0))
    assert not isinstance(stream, HeldOutEvaluation) and stream.p is None


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"p": 1.0}, "p must lie in"),
        ({"n_test": 1}, "n_test must be at least 2"),
        ({"noise_sd": 0.0}, "noise_sd must be finite and positive"),
    ],
)
def test_bad_options_are_refused(kw, match):
    args = {"p": 1.5, **kw}
    p = args.pop("p")
    with pytest.raises(ValueError, match=match):
        _env(p=p, **args)
