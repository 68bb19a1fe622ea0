"""The GLM losses of Han et al. Section 4 (dponline.losses.glm): gradients against central
differences of f, the Lipschitz and smoothness constants of Assumption 4.5 attained and not
exceeded, and the reward contract."""

import numpy as np
import pytest

from dponline.losses import GLMLoss


def _loss_value(link, theta, x, y):
    z = theta @ x
    b = z**2 / 2 if link == "linear" else np.logaddexp(0.0, z)
    return b - y * z


@pytest.mark.parametrize("link", ["linear", "logistic"])
def test_glm_gradient_and_constants(link):
    loss = GLMLoss.named(link, (-1.5, 1.5) if link == "linear" else (0.0, 1.0))
    rng = np.random.default_rng(0)
    d, radius = 4, 1.0
    theta = rng.normal(size=(50, d))
    theta /= np.maximum(np.abs(theta).sum(axis=1, keepdims=True), 1.0) / radius
    x = rng.uniform(-1, 1, size=d)
    y = np.full(50, loss.reward_range[1])
    g = loss.gradient(theta, x, y)
    h = 1e-6
    for k in range(3):  # central differences of f
        e = np.eye(d)[k] * h
        fd = [
            (_loss_value(link, th + e, x, yy) - _loss_value(link, th - e, x, yy)) / (2 * h)
            for th, yy in zip(theta[:5], y[:5], strict=True)
        ]
        np.testing.assert_allclose(g[:5, k], fd, rtol=1e-5, atol=1e-7)
    lip, beta = loss.constants(1.0, radius)
    # L: attained at x = +-1, theta a vertex, y at the far end of the range
    xs = rng.choice([-1.0, 1.0], size=(2000, d))
    ths = np.eye(d)[rng.integers(d, size=2000)] * rng.choice([-1.0, 1.0], size=(2000, 1))
    ys = rng.choice(loss.reward_range, size=2000)
    gs = loss.gradient(ths, xs, ys)
    assert np.abs(gs).max() <= lip + 1e-12
    assert np.abs(gs).max() >= 0.99 * lip
    # beta: ||grad(theta) - grad(theta')||_inf <= beta ||theta - theta'||_1
    ths2 = ths * rng.uniform(-1, 1, size=(2000, 1))
    ratio = np.abs(loss.gradient(ths, xs, ys) - loss.gradient(ths2, xs, ys)).max(axis=1) / (
        np.abs(ths - ths2).sum(axis=1) + 1e-300
    )
    assert ratio.max() <= beta + 1e-12
    assert (lip, beta) == ((2.5, 1.0) if link == "linear" else (0.5 * (1 + np.tanh(0.5)), 0.25))
    # the synthetic sample (0, zeta(0)) has zero gradient everywhere
    zero = loss.gradient(theta, np.zeros(d), np.full(50, float(loss.link(0.0))))
    assert not zero.any()


def test_glm_loss_contract():
    with pytest.raises(ValueError, match="zeta"):
        GLMLoss.named("logistic", (0.6, 1.0))  # zeta(0) = 1/2 outside
    with pytest.raises(ValueError, match="link"):
        GLMLoss.named("probit", (0.0, 1.0))
    loss = GLMLoss.named("logistic", (0.0, 1.0))
    with pytest.raises(ValueError, match="outside"):
        loss.check_reward(np.array([0.5, 1.2]), clip=False)
    np.testing.assert_array_equal(loss.check_reward(np.array([0.5, 1.2]), clip=True), [0.5, 1.0])
    with pytest.raises(ValueError, match="finite"):
        loss.check_reward(np.array([np.nan]), clip=True)


def test_negative_bounds_and_radii_are_refused():
    """A negative bound gave a Lipschitz constant of -0.0 (and NoisyMinFrankWolfe with
    x_bound = -1 and clip claimed epsilon 1 for noise that proves 2.26 at the true constant)."""
    from dponline.losses import squared_loss_constants
    from dponline.privacy.budget import PrivacyBudget
    from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe

    linear = GLMLoss.named("linear", (-1.0, 1.0))
    assert linear.constants(1.0, 0.0)[0] > 0
    for args in ((-1.0, 1.0), (1.0, -1.0), (float("nan"), 1.0)):
        with pytest.raises(ValueError, match="non-negative"):
            linear.constants(*args)
    for args in ((-1.0, 1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 1.0, -1.0)):
        with pytest.raises(ValueError, match="non-negative"):
            squared_loss_constants(*args)
    for bad in ({"x_bound": -1.0}, {"y_bound": -1.0}, {"x_bound": 0.0}):
        with pytest.raises(ValueError, match="positive"):
            NoisyMinFrankWolfe(2, 10, budget=PrivacyBudget(1.0, 1e-3), clip=True, **bad)
