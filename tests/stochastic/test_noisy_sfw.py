"""NoisySFW (Bassily, Guzman & Nandi 2021, Algorithm 3), the 1 < p <= 2 baseline of Han et al.
App. C. Every random test uses fixed seeds, so none of them can fail by chance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.domains.lp_ball import LpBall
from dponline.privacy.accounting import gaussian_epsilon, gaussian_sigma
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.generalized_gaussian import (
    GeneralizedGaussianNoise,
    generalized_gaussian_sigma,
    lq_regularity,
)
from dponline.privacy.guarantee import Neighbouring, PrivacyWarning
from dponline.stochastic import noisy_sfw
from dponline.stochastic.noisy_sfw import sfw_schedule
from tests.helpers import maybe_budget


def basis_data(n: int, d: int, theta: np.ndarray, seed: int, noise: float = 0.01):
    """x a random signed basis vector (||x||_q = 1 for every q), y = <x, theta> + noise."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, d))
    x[np.arange(n), rng.integers(0, d, n)] = rng.choice([-1.0, 1.0], n)
    return x, x @ theta + noise * rng.standard_normal(n)


def sphere_data(n: int, d: int, q: float, seed: int):
    """Han et al.'s design: Gaussian x rescaled to unit l_q norm, theta* = ones / ||ones||_p."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 0.05, (n, d))
    x /= np.linalg.norm(x, q, axis=1, keepdims=True) * (1 + 1e-12)
    theta = np.ones(d) / np.linalg.norm(np.ones(d), q / (q - 1))
    return x, np.clip(x @ theta + rng.normal(0, 0.05, n), -1.5, 1.5)


def reference(x, y, p, gen, eta, family, r_noise, sigma0, sigma_b):
    """A plain statement of Algorithm 3 drawing the same numbers in the same order."""
    n, d = x.shape
    n0, b, batches = math.ceil(n / 2), math.ceil(math.sqrt(n) / 2), 0
    batches = (n - n0) // b
    order = gen.permutation(n)
    if family == "gg":
        unit = GeneralizedGaussianNoise(1.0, r_noise).sample(gen, (batches + 1, d))
    else:
        unit = gen.standard_normal((batches + 1, d))
    ball = LpBall(d, p)

    def grad(theta, i):
        return 2.0 * (x[i] @ theta - y[i]) * x[i]

    before = np.zeros(d)
    estimate = np.mean([grad(before, i) for i in order[:n0]], axis=0) + sigma0 * unit[0]
    now = before + eta * (ball.lmo(estimate) - before)
    for t in range(1, batches + 1):
        batch = order[n0 + (t - 1) * b : n0 + t * b]
        estimate = estimate + np.mean([grad(now, i) - grad(before, i) for i in batch], axis=0)
        estimate = estimate + sigma_b * unit[t]
        before, now = now, now + eta * (ball.lmo(estimate) - now)
    return now


def test_schedule_by_hand():
    assert sfw_schedule(10) == (5, 2, 2, pytest.approx(math.log(10) / (2 * math.sqrt(10))))
    assert sfw_schedule(2000)[:3] == (1000, 23, 43)  # b = ceil(22.36), 1000 // 23 = 43
    x, y = basis_data(11, 2, np.array([0.3, 0.1]), 0)
    fit = noisy_sfw(x, y, p=1.5, x_bound=1.0, y_bound=1.0, budget=None)
    assert fit.parameters["initial_samples"] == 6.0  # ceil(11/2)
    assert fit.parameters["batch_size"] == 2.0  # ceil(sqrt(11)/2) = ceil(1.66)
    assert fit.parameters["batches"] == 2.0 and fit.parameters["unused_samples"] == 1.0


def test_without_noise_it_converges():
    theta = np.array([0.5, -0.3, 0.2])
    theta *= 0.8 / np.linalg.norm(theta, 1.5)
    x, y = basis_data(2000, 3, theta, 0)
    fit = noisy_sfw(
        x,
        y,
        p=1.5,
        x_bound=1.0,
        y_bound=2.0,
        budget=None,
        step_scales=(0.5,),
        runs=5,
        rng=0,
    )
    assert fit.privacy is None and fit.theta.shape == (5, 1, 3)
    rel = ((fit.theta - theta) ** 2).sum(-1) / (theta**2).sum()
    assert rel.max() < 0.05


@pytest.mark.parametrize(("d", "calibration"), [(3, "tight"), (10, "tight"), (10, "paper")])
def test_matches_a_plain_statement_with_the_same_draws(d, calibration):
    x, y = sphere_data(60, d, 3.0, 1)
    fit = noisy_sfw(
        x,
        y,
        p=1.5,
        x_bound=1.0,
        y_bound=1.5,
        budget=PrivacyBudget(1.0, 0.01, calibration),
        step_scales=(1.0, 3.0),
        runs=2,
        rng=5,
    )
    family = "gaussian" if fit.parameters["noise_r"] == 2.0 else "gg"
    for k, gen in enumerate(np.random.default_rng(5).spawn(2)):
        state = gen.bit_generator.state
        for j, s in enumerate((1.0, 3.0)):
            gen.bit_generator.state = state
            want = reference(
                x,
                y,
                1.5,
                gen,
                fit.parameters[f"eta@{s:g}"],
                family,
                fit.parameters["noise_r"],
                fit.parameters["sigma_initial"],
                fit.parameters[f"sigma_batch@{s:g}"],
            )
            np.testing.assert_allclose(fit.theta[k, j], want, rtol=1e-9, atol=1e-12)


def test_vectorised_runs_and_scales_equal_separate_calls():
    x, y = sphere_data(50, 4, 3.0, 2)
    kw = dict(p=1.5, x_bound=1.0, y_bound=1.5, budget=PrivacyBudget(1.0, 0.01), rng=9)
    both = noisy_sfw(x, y, step_scales=(0.5, 2.0), runs=3, **kw)
    for j, s in enumerate((0.5, 2.0)):
        alone = noisy_sfw(x, y, step_scales=(s,), runs=3, **kw)
        np.testing.assert_allclose(both.theta[:, j], alone.theta[:, 0], rtol=1e-12, atol=1e-14)
    first = noisy_sfw(x, y, step_scales=(0.5, 2.0), runs=1, **kw)
    np.testing.assert_allclose(both.theta[:1], first.theta, rtol=1e-12, atol=1e-14)


def test_paper_sigmas_are_lemma_2_7_at_the_notes_sensitivities():
    n, d, delta = 2000, 10, 1 / 2000
    x, y = sphere_data(n, d, 3.0, 3)
    fit = noisy_sfw(
        x,
        y,
        p=1.5,
        x_bound=1.0,
        y_bound=1.5,
        budget=PrivacyBudget(1.0, delta, "paper", allow_weaker=True),
    )
    kappa = lq_regularity(3.0, d).kappa
    lipschitz, beta, diameter = 2 * (1 + 1.5), 2.0, 2.0
    eta = math.log(n) / (2 * math.sqrt(n))
    assert fit.parameters["sigma_initial"] == pytest.approx(
        generalized_gaussian_sigma(4 * lipschitz / n, 1.0, delta, kappa)
    )
    assert fit.parameters["sigma_batch@1"] == pytest.approx(
        generalized_gaussian_sigma(4 * beta * eta * diameter / math.sqrt(n), 1.0, delta, kappa)
    )
    # n_0 = n/2 exactly: the initial release is proven at exactly epsilon = 1 by Lemma 2.7, the
    # batches (23 >= sqrt(n)/2 samples) at less
    assert fit.privacy.epsilon == pytest.approx(1.0, abs=1e-9) and fit.privacy.meets_request
    assert fit.privacy.neighbouring is Neighbouring.ONE_SAMPLE


def test_paper_noise_in_l2_is_accounted_exactly_and_tight_is_smaller():
    n, d, delta = 1000, 5, 1 / 1000  # ln 5 < 2: the smooth norm of l_3 is l_2, the noise Gaussian
    x, y = sphere_data(n, d, 3.0, 4)
    kw = dict(p=1.5, x_bound=1.0, y_bound=1.5)
    paper = noisy_sfw(x, y, budget=PrivacyBudget(1.0, delta, "paper"), **kw)
    tight = noisy_sfw(x, y, budget=PrivacyBudget(1.0, delta), **kw)
    assert paper.parameters["noise_r"] == 2.0
    assert paper.privacy.epsilon < 0.9  # the formula over-noises in this case
    # the initial release, recomputed from the noise used: its l_2 sensitivity is
    # d^(1/2 - 1/q) 2 L / n_0 with L = 2 (X r + Y) X = 5; it proves at most 1, and 2% less
    # noise proves more (the calibration is the least noise, not just some)
    sens2 = d ** (0.5 - 1 / 3) * 2 * 5.0 / math.ceil(n / 2)
    sigma0 = tight.parameters["sigma_initial"]
    assert gaussian_epsilon(delta, sens2 / sigma0) <= 1.0
    assert gaussian_epsilon(delta, sens2 / (0.98 * sigma0)) > 1.0
    # the run's epsilon is the largest over its releases (rounding aside)
    assert gaussian_epsilon(delta, sens2 / sigma0) * (1 - 1e-9) <= tight.privacy.epsilon <= 1.0
    assert tight.parameters["sigma_initial"] < paper.parameters["sigma_initial"]
    assert tight.parameters["sigma_batch@1"] < paper.parameters["sigma_batch@1"]


@pytest.mark.parametrize("epsilon", [0.5, 3.0])
def test_tight_is_exact_gaussian_at_any_epsilon(epsilon):
    x, y = sphere_data(400, 10, 3.0, 5)
    fit = noisy_sfw(x, y, p=1.5, x_bound=1.0, y_bound=1.5, budget=maybe_budget(epsilon, 1e-3))
    assert fit.parameters["noise_r"] == 2.0
    assert epsilon - 1e-3 <= fit.privacy.epsilon <= epsilon
    # the l_2 sensitivity of the initial mean: 2 L0 d^(1/2 - 1/q) / n_0
    sens = 2 * (2 * (1 + 1.5)) * 10 ** (0.5 - 1 / 3) / 200
    assert fit.parameters["sigma_initial"] == pytest.approx(gaussian_sigma(sens, epsilon, 1e-3))


def test_paper_without_a_proof_says_so():
    x, y = sphere_data(100, 10, 3.0, 6)
    with pytest.warns(PrivacyWarning):
        fit = noisy_sfw(
            x,
            y,
            p=1.5,
            x_bound=1.0,
            y_bound=1.5,
            budget=PrivacyBudget(2.0, 0.01, "paper", allow_weaker=True),
        )
    assert math.isinf(fit.privacy.epsilon)  # Lemma 2.7 is used only up to epsilon 1


def test_iterates_stay_in_the_ball():
    x, y = sphere_data(100, 4, 3.0, 7)
    fit = noisy_sfw(
        x,
        y,
        p=1.5,
        radius=0.3,
        x_bound=1.0,
        y_bound=1.5,
        budget=PrivacyBudget(0.5, 0.01),
        step_scales=(0.1, 1.0, 100.0),
    )
    assert fit.parameters["eta@100"] == 1.0  # capped
    assert LpBall(4, 1.5).norm(fit.theta).max() <= 0.3 * (1 + 1e-12)


def test_inputs_are_checked():
    x, y = basis_data(10, 3, np.array([0.3, 0.1, 0.0]), 8)
    kw = dict(p=1.5, x_bound=1.0, y_bound=1.0, budget=maybe_budget(None, 0.1))
    bad = x.copy()
    bad[4] = [1.0, 1.0, 0.0]  # l_3 norm 2^(1/3)
    with pytest.raises(ValueError, match=r"sample 4 .*\|\|x\|\|_3 = 1\.259.* > x_bound = 1\.0"):
        noisy_sfw(bad, y, **kw)
    assert noisy_sfw(bad, y, clip=True, **kw).theta.shape == (1, 1, 3)
    for p in (1.0, 2.5, math.inf):
        with pytest.raises(ValueError, match="1 < p <= 2"):
            noisy_sfw(x, y, **{**kw, "p": p})
    nan = x.copy()
    nan[1, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        noisy_sfw(nan, y, clip=True, **kw)
    with pytest.raises(ValueError, match="at least 2 samples"):
        noisy_sfw(x[:1], y[:1], **kw)
