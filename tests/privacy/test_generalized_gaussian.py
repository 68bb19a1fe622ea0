"""Tests for :mod:`dponline.privacy.generalized_gaussian`.

Statistical tests use fixed seeds, so they are deterministic; each assertion states the
probability that it would fail for a *correct* sampler over a random seed (its false-failure
probability, alpha). Every p-value threshold is 1e-4 or smaller per assertion. Several tests also
check that the same statistic *rejects* a plausible wrong sampler (power checks), because the
authors' reference implementation of this distribution was wrong.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit, logsumexp
from scipy.special import gamma as gamma_fn

from dponline.privacy.generalized_gaussian import (
    GeneralizedGaussianNoise,
    LqRegularity,
    _direction_second_moment,
    _generalized_normal,
    exact_kappa,
    lq_regularity,
    lr_norm,
    paper_lq_constants,
)
from dponline.privacy.noise import NoiseDistribution

INF = math.inf
ALPHA = 1e-4  # false-failure probability of one statistical assertion
N = 20_000  # draws per statistical test


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _norm_independent(x: np.ndarray, r: float) -> np.ndarray:
    """A naive l_r norm, independent of the module's scaled implementation (moderate r only)."""
    a = np.abs(x)
    return a.max(axis=-1) if math.isinf(r) else (a**r).sum(axis=-1) ** (1.0 / r)


# ------------------------------------------------------------------------------------------
# basic structure
# ------------------------------------------------------------------------------------------


def test_is_a_frozen_noise_distribution() -> None:
    g = GeneralizedGaussianNoise(1.5, 3)
    assert isinstance(g, NoiseDistribution)
    assert g.sensitivity_norm == "lr"
    assert g.scale == 1.5 and g.sigma == 1.5 and g.r == 3.0
    assert isinstance(g.r, float)
    with pytest.raises(AttributeError):
        g.sigma = 2.0  # type: ignore[misc]
    assert GeneralizedGaussianNoise(1.5, INF).r == INF
    assert GeneralizedGaussianNoise(1.5, 3) == GeneralizedGaussianNoise(1.5, 3.0)


def test_shapes_vectorisation_and_empty_shapes() -> None:
    g = GeneralizedGaussianNoise(2.0, 3)
    a = g.sample(rng(0), (3, 4, 5))
    b = g.sample(rng(0), (12, 5))
    assert a.shape == (3, 4, 5) and a.dtype == np.float64
    # Leading axes only index independent draws: the same stream gives the same vectors.
    np.testing.assert_array_equal(a.reshape(12, 5), b)
    assert g.sample(rng(0), 7).shape == (7,)  # a bare int is a single d-vector
    assert g.sample(rng(0), (0, 5)).shape == (0, 5)
    assert g.sample(rng(0), (5, 0)).shape == (5, 0)
    assert g.sample_direction(rng(0), (0, 5)).shape == (0, 5)
    assert np.all(np.isfinite(g.sample(rng(1), (1000, 50))))


def test_sigma_zero_returns_zeros_without_consuming_the_generator() -> None:
    g = rng(5)
    out = GeneralizedGaussianNoise(0.0, 3).sample(g, (4, 3))
    np.testing.assert_array_equal(out, np.zeros((4, 3)))
    assert g.random() == rng(5).random()


def test_sample_is_radius_times_sample_direction() -> None:
    # sample() draws the direction first with the same calls as sample_direction().
    for r in (1.0, 2.5, INF):
        g = GeneralizedGaussianNoise(1.3, r)
        z = g.sample(rng(11), (500, 7))
        theta = g.sample_direction(rng(11), (500, 7))
        radius = g.norm(z)
        np.testing.assert_allclose(z / radius[:, None], theta, rtol=1e-13, atol=1e-15)


# ------------------------------------------------------------------------------------------
# the radius and the Gaussian special cases
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("r", [1.0, 1.5, 2.0, 3.0, INF])
@pytest.mark.parametrize("d", [1, 2, 5, 50])
def test_radius_is_sigma_times_chi_d(r: float, d: int) -> None:
    sigma = 1.7
    z = GeneralizedGaussianNoise(sigma, r).sample(rng(100 + d), (N, d))
    radius = _norm_independent(z, r) / sigma
    # False-failure probability ALPHA = 1e-4 (KS p-value under H0 is uniform).
    assert stats.kstest(radius, stats.chi(d).cdf).pvalue > ALPHA


def test_radius_test_rejects_product_form_sampler() -> None:
    # Power check: i.i.d. coordinates of density exp(-|z|^r) (the product-form mistake) have a
    # different radius law even after matching the median. Here r = 1, d = 5 (i.i.d. Laplace).
    z = rng(3).laplace(size=(N, 5))
    radius = np.abs(z).sum(axis=1)
    radius *= stats.chi(5).median() / np.median(radius)
    assert stats.kstest(radius, stats.chi(5).cdf).pvalue < 1e-20


def test_r2_is_isotropic_gaussian() -> None:
    sigma, d = 0.8, 5
    z = GeneralizedGaussianNoise(sigma, 2.0).sample(rng(21), (N, d))
    # Bonferroni over the d coordinates: each at ALPHA/d, total false-failure prob <= 1e-4.
    for i in range(d):
        assert stats.kstest(z[:, i], stats.norm(0, sigma).cdf).pvalue > ALPHA / d
    v = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
    gauss = rng(22).normal(0.0, sigma, size=(N, d))
    # Two-sample KS of a fixed projection vs independent Gaussians; false-failure prob 1e-4.
    assert stats.ks_2samp(z @ v, gauss @ v).pvalue > ALPHA
    # Coordinates are uncorrelated: |corr| < 4.5/sqrt(N) (normal approx., prob ~7e-6 each).
    corr = np.corrcoef(z.T)
    off = corr[~np.eye(d, dtype=bool)]
    assert np.max(np.abs(off)) < 4.5 / math.sqrt(N)


@pytest.mark.parametrize("r", [1.0, 1.5, 3.0, 10.0, 1e6, INF])
def test_one_dimension_is_gaussian_for_every_r(r: float) -> None:
    sigma = 2.5
    z = GeneralizedGaussianNoise(sigma, r).sample(rng(31), (N, 1))[:, 0]
    # In d = 1, |z|_r = |z|, so the law is N(0, sigma^2). False-failure prob 1e-4.
    assert stats.kstest(z, stats.norm(0, sigma).cdf).pvalue > ALPHA


# ------------------------------------------------------------------------------------------
# the direction (cone measure)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("r", [1.0, 1.5, 2.0, 3.0, 7.3, 50.0, 1000.0, 1e6, INF])
@pytest.mark.parametrize("d", [1, 2, 5, 1000])
def test_direction_has_unit_norm(r: float, d: int) -> None:
    theta = GeneralizedGaussianNoise(1.0, r).sample_direction(rng(41), (max(1, 20_000 // d), d))
    assert np.all(np.isfinite(theta))
    np.testing.assert_allclose(lr_norm(theta, r), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("r", [1.5, 3.0, 30.0])
def test_generalized_normal_coordinates(r: float) -> None:
    # Y_i has density exp(-|y|^r) / (2 Gamma(1 + 1/r)) = scipy's gennorm(beta=r).
    y = _generalized_normal(rng(51), (N,), r)
    # False-failure prob 1e-4 each.
    assert stats.kstest(y, stats.gennorm(r).cdf).pvalue > ALPHA
    # Equal in law to the textbook G^(1/r), G ~ Gamma(1/r), with a random sign (two-sample KS,
    # false-failure prob 1e-4).
    g = rng(52)
    textbook = g.standard_gamma(1.0 / r, size=N) ** (1.0 / r) * g.choice([-1.0, 1.0], size=N)
    assert stats.ks_2samp(y, textbook).pvalue > ALPHA


def test_generalized_normal_large_r_does_not_underflow() -> None:
    # A Gamma(1/r) draw underflows to 0 for huge r; the U * W^(1/r) form stays in (0, 1].
    y = _generalized_normal(rng(53), (N,), 1e6)
    assert np.all(np.abs(y) > 0) and np.all(np.abs(y) <= 1.0 + 1e-5)
    # ...and is close to the r = inf limit, uniform on [-1, 1] (false-failure prob 1e-4).
    assert stats.kstest(y, stats.uniform(-1, 2).cdf).pvalue > ALPHA


@pytest.mark.parametrize("r", [1.0, 3.0, INF])
def test_direction_sign_and_permutation_symmetry(r: float) -> None:
    theta = GeneralizedGaussianNoise(1.0, r).sample_direction(rng(61), (2 * N, 3))
    first, second = theta[:N], theta[N:]  # independent halves for two-sample tests
    # Three two-sample KS tests, each with false-failure prob 1e-4.
    assert stats.ks_2samp(first[:, 0], -second[:, 0]).pvalue > ALPHA
    assert stats.ks_2samp(first[:, 0], second[:, 1]).pvalue > ALPHA
    assert stats.ks_2samp(first[:, 1] * first[:, 2], -second[:, 1] * second[:, 2]).pvalue > ALPHA


def _logit_of_beta_cdf(t: np.ndarray, a: float, b: float) -> np.ndarray:
    """CDF of log(X / (1 - X)) for X ~ Beta(a, b), accurate in both tails (1 - X ~ Beta(b, a))."""
    t = np.asarray(t, dtype=float)
    lower = stats.beta(a, b).cdf(expit(np.minimum(t, 0.0)))
    upper = stats.beta(b, a).sf(expit(-np.maximum(t, 0.0)))
    return np.where(t <= 0, lower, upper)


def _logit_first_share(theta: np.ndarray, r: float) -> np.ndarray:
    """log(|theta_1|^r / sum_{j >= 2} |theta_j|^r), computed without cancellation."""
    logs = r * np.log(np.abs(theta))
    return logs[:, 0] - logsumexp(logs[:, 1:], axis=1)


@pytest.mark.parametrize("r", [1.0, 1.5, 2.0, 3.0, 10.0, 30.0])
@pytest.mark.parametrize("d", [2, 5, 50])
def test_direction_marginal_is_beta(r: float, d: int) -> None:
    # Schechtman-Zinn: (|theta_i|^r)_i = (G_i / sum_j G_j) with G_i ~ Gamma(1/r) i.i.d., a
    # Dirichlet(1/r, ..., 1/r) vector, so X = |theta_1|^r ~ Beta(1/r, (d - 1)/r). For r = 1 this
    # is the uniform law on the simplex, for r = 2 the uniform law on the sphere.
    # We test logit(X) = log(|theta_1|^r / sum_{j>=2} |theta_j|^r) rather than X itself: for
    # large r / small d, Beta(1/r, (d-1)/r) puts mass ~1% within 1e-16 of 1 (e.g. r = 10, d = 2),
    # where |theta_1|^r rounds to exactly 1.0 and the rounding (not the sampler) creates an
    # atom that a KS test detects. The logit is computed from logs without cancellation.
    theta = GeneralizedGaussianNoise(1.0, r).sample_direction(rng(71 + d), (N, d))
    a, b = 1 / r, (d - 1) / r
    # False-failure prob 1e-4 each.
    t = _logit_first_share(theta, r)
    assert stats.kstest(t, lambda v: _logit_of_beta_cdf(v, a, b)).pvalue > ALPHA
    if r <= 3:  # no mass near 1 at double precision: the direct statistic works too
        assert stats.kstest(np.abs(theta[:, 0]) ** r, stats.beta(a, b).cdf).pvalue > ALPHA


def test_direction_marginal_test_rejects_normalised_gaussian() -> None:
    # Power check: G / ||G||_1 for Gaussian G is not the cone measure of the l1 sphere.
    g = rng(72).normal(size=(N, 5))
    theta = g / np.abs(g).sum(axis=1, keepdims=True)
    assert stats.kstest(np.abs(theta[:, 0]), stats.beta(1, 4).cdf).pvalue < 1e-20


def test_cone_measure_of_l1_circle_is_uniform_in_x1() -> None:
    # On |x1| + |x2| = 1 every edge is at distance 1/sqrt(2) from 0, so the cone measure is
    # proportional to length: each edge has mass 1/4 and x1 is uniform on it, so x1 ~ U[-1, 1].
    theta = GeneralizedGaussianNoise(1.0, 1.0).sample_direction(rng(81), (N, 2))
    np.testing.assert_allclose(np.abs(theta).sum(axis=1), 1.0, rtol=0, atol=1e-15)
    # False-failure prob 1e-4 each.
    assert stats.kstest(theta[:, 0], stats.uniform(-1, 2).cdf).pvalue > ALPHA
    assert stats.kstest(theta[:, 1], stats.uniform(-1, 2).cdf).pvalue > ALPHA


def test_cone_measure_of_linf_square_is_uniform_on_each_face() -> None:
    theta = GeneralizedGaussianNoise(1.0, INF).sample_direction(rng(82), (N, 2))
    assert np.all(np.max(np.abs(theta), axis=1) == 1.0)  # on the boundary of the square
    on_vertical = np.abs(theta[:, 0]) == 1.0  # face x1 = +-1 (else x2 = +-1)
    assert not np.any(on_vertical & (np.abs(theta[:, 1]) == 1.0))  # vertices have measure 0
    faces = {
        "x1=+1": (on_vertical & (theta[:, 0] > 0), 1),
        "x1=-1": (on_vertical & (theta[:, 0] < 0), 1),
        "x2=+1": (~on_vertical & (theta[:, 1] > 0), 0),
        "x2=-1": (~on_vertical & (theta[:, 1] < 0), 0),
    }
    counts = [mask.sum() for mask, _ in faces.values()]
    # Each face has cone measure 1/4 (chi-square, 3 dof, false-failure prob 1e-4).
    assert stats.chisquare(counts).pvalue > ALPHA
    # The free coordinate is uniform on each face (4 KS tests, false-failure prob 1e-4 each).
    for mask, free in faces.values():
        assert stats.kstest(theta[mask, free], stats.uniform(-1, 2).cdf).pvalue > ALPHA


# ------------------------------------------------------------------------------------------
# the joint law in d = 2 against the density itself (no polar decomposition assumed)
# ------------------------------------------------------------------------------------------


def _density_grid(r: float, h: float = 0.02, half_width: float = 7.0):
    """Midpoint-rule grid of exp(-||z||_r^2 / 2) on [-L, L]^2 (sigma = 1), normalised."""
    c = np.arange(-half_width + h / 2, half_width, h)
    x, y = np.meshgrid(c, c, indexing="ij")
    ax, ay = np.abs(x), np.abs(y)
    if math.isinf(r):
        norm = np.maximum(ax, ay)
    else:
        norm = (ax**r + ay**r) ** (1.0 / r)
    f = np.exp(-(norm**2) / 2.0)
    return x, y, f / f.sum()


@pytest.mark.parametrize("r", [1.0, 1.5, 3.0, INF])
def test_two_dimensional_law_matches_the_density(r: float) -> None:
    sigma = 1.9
    x, y, w = _density_grid(r)
    # Cell edges (multiples of the grid step, in units of sigma); the box [-7, 7]^2 holds all
    # but < e^-24 of the mass because ||z||_r >= ||z||_inf.
    inner = np.array([-1.6, -1.0, -0.6, -0.3, 0.0, 0.3, 0.6, 1.0, 1.6])
    edges = np.concatenate([[-7.0], inner, [7.0]])
    expected, _, _ = np.histogram2d(x.ravel(), y.ravel(), bins=[edges, edges], weights=w.ravel())
    z = GeneralizedGaussianNoise(sigma, r).sample(rng(91), (2 * N, 2)) / sigma
    z = np.clip(z, -6.999, 6.999)
    observed, _, _ = np.histogram2d(z[:, 0], z[:, 1], bins=[edges, edges])
    expected = expected.ravel() * len(z)
    observed = observed.ravel()
    small = expected < 10  # pool sparse cells so the chi-square approximation holds
    exp_cells, obs_cells = expected[~small], observed[~small]
    if small.any():
        exp_cells = np.append(exp_cells, expected[small].sum())
        obs_cells = np.append(obs_cells, observed[small].sum())
    exp_cells *= obs_cells.sum() / exp_cells.sum()
    # Quadrature error is O(h^2) ~ 1e-5 relative, far below sampling noise. Chi-square
    # goodness of fit, false-failure prob 1e-4.
    assert stats.chisquare(obs_cells, exp_cells).pvalue > ALPHA


@pytest.mark.parametrize("r", [1.0, 1.5, 3.0, 7.0, INF])
def test_coordinate_variance_matches_quadrature_in_two_dimensions(r: float) -> None:
    x, _, w = _density_grid(r, h=0.01)
    # Midpoint rule on a density with kinks: relative error ~ h^2 = 1e-4 at most (observed
    # ~4e-6); this is an exact check of the formula, independent of the sampler.
    np.testing.assert_allclose(
        float((w * x**2).sum()), GeneralizedGaussianNoise(1.0, r).coordinate_variance(2), rtol=1e-4
    )


# ------------------------------------------------------------------------------------------
# scaling
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("r", [1.0, 2.0, 3.5, INF])
def test_scaling_with_the_same_seed(r: float) -> None:
    sigma = 1.3
    base = GeneralizedGaussianNoise(sigma, r).sample(rng(7), (50, 6))
    for c in (2.0, 0.5, 8.0, 2.0**-10):
        # Multiplication by a power of two is exact in floating point.
        out = GeneralizedGaussianNoise(c * sigma, r).sample(rng(7), (50, 6))
        np.testing.assert_array_equal(out, c * base)
        np.testing.assert_array_equal(
            GeneralizedGaussianNoise(sigma, r).scaled(c).sample(rng(7), (50, 6)), out
        )
    for c in (3.7, 1e-3, 123.456):
        # (c sigma) x vs c (sigma x): two roundings, relative error <= 2^-52.
        out = GeneralizedGaussianNoise(c * sigma, r).sample(rng(7), (50, 6))
        np.testing.assert_allclose(out, c * base, rtol=4.5e-16, atol=0)
    assert GeneralizedGaussianNoise(sigma, r).scaled(-2.0) == GeneralizedGaussianNoise(2 * sigma, r)
    assert GeneralizedGaussianNoise(sigma, r).scaled(0.0) == GeneralizedGaussianNoise(0.0, r)


@settings(max_examples=40, deadline=None)
@given(
    exponent=st.integers(-30, 30),
    seed=st.integers(0, 2**32 - 1),
    r=st.sampled_from([1.0, 1.25, 2.0, 4.0, 100.0, INF]),
    sigma=st.floats(1e-6, 1e6),
)
def test_scaling_is_exact_for_powers_of_two(
    exponent: int, seed: int, r: float, sigma: float
) -> None:
    c = 2.0**exponent
    base = GeneralizedGaussianNoise(sigma, r).sample(rng(seed), (3, 4))
    np.testing.assert_array_equal(
        GeneralizedGaussianNoise(sigma, r).scaled(c).sample(rng(seed), (3, 4)), c * base
    )
    assert GeneralizedGaussianNoise(sigma, r).scaled(c).coordinate_variance(4) == pytest.approx(
        c**2 * GeneralizedGaussianNoise(sigma, r).coordinate_variance(4), rel=1e-15
    )


# ------------------------------------------------------------------------------------------
# coordinate_variance
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("r", "d"),
    [(1.0, 2), (1.0, 10), (1.5, 5), (3.0, 5), (3.0, 50), (10.0, 20), (INF, 2), (INF, 10)],
)
def test_coordinate_variance_matches_monte_carlo(r: float, d: int) -> None:
    sigma = 0.7
    g = GeneralizedGaussianNoise(sigma, r)
    z = g.sample(rng(200 + d), (N, d))
    # Coordinates of one draw are dependent, so average within a draw first: s_j are i.i.d.
    s = (z**2).mean(axis=1)
    se = s.std(ddof=1) / math.sqrt(N)
    # |mean - truth| < 4.5 standard errors: two-sided normal tail (CLT) prob ~7e-6.
    assert abs(s.mean() - g.coordinate_variance(d)) < 4.5 * se
    # And the check has power: for r != 2 the variance is far from the Gaussian sigma^2.
    if r != 2.0:
        assert abs(g.coordinate_variance(d) - sigma**2) > 10 * se


def test_coordinate_variance_hand_values() -> None:
    s2 = 1.7**2
    for d in (1, 2, 3, 10, 1000):
        # r = 1: E theta_i^2 = Gamma(3)/Gamma(1) / (Gamma(d+2)/Gamma(d)) = 2 / (d (d+1)).
        assert GeneralizedGaussianNoise(1.7, 1).coordinate_variance(d) == pytest.approx(
            2 * s2 / (d + 1), rel=1e-14
        )
        # r = inf: E theta_i^2 = (1/3) (d+2)/d.
        assert GeneralizedGaussianNoise(1.7, INF).coordinate_variance(d) == pytest.approx(
            s2 * (d + 2) / 3, rel=1e-14
        )
    # r = 4, d = 2: 2 * [Gamma(3/4)/Gamma(1/4)] / [Gamma(1)/Gamma(1/2)].
    want = s2 * 2 * gamma_fn(0.75) / gamma_fn(0.25) * math.sqrt(math.pi)
    assert GeneralizedGaussianNoise(1.7, 4).coordinate_variance(2) == pytest.approx(want, rel=1e-14)


@settings(max_examples=100, deadline=None)
@given(d=st.integers(1, 10**9), sigma=st.floats(0, 1e6))
def test_coordinate_variance_is_sigma_squared_at_r2(d: int, sigma: float) -> None:
    assert GeneralizedGaussianNoise(sigma, 2.0).coordinate_variance(d) == sigma**2
    # The general formula (used for r != 2) also gives 1/d at r = 2, to full precision.
    assert _direction_second_moment(2.0, d) * d == pytest.approx(1.0, rel=1e-14)


@settings(max_examples=50, deadline=None)
@given(r=st.floats(1.0, 1e6), sigma=st.floats(0, 1e3))
def test_coordinate_variance_is_sigma_squared_in_one_dimension(r: float, sigma: float) -> None:
    assert GeneralizedGaussianNoise(sigma, r).coordinate_variance(1) == sigma**2
    assert _direction_second_moment(r, 1) == pytest.approx(1.0, rel=1e-13)


def test_coordinate_variance_is_continuous_in_r() -> None:
    for d in (2, 7, 100):
        at_inf = GeneralizedGaussianNoise(1.0, INF).coordinate_variance(d)
        assert GeneralizedGaussianNoise(1.0, 1e9).coordinate_variance(d) == pytest.approx(
            at_inf, rel=1e-6
        )
        near_two = GeneralizedGaussianNoise(1.0, 2.0 + 1e-9).coordinate_variance(d)
        assert near_two == pytest.approx(1.0, rel=1e-6)
        # Monotone: for fixed d the l_r ball grows with r, so does the spread.
        vals = [
            GeneralizedGaussianNoise(1.0, r).coordinate_variance(d) for r in (1, 1.5, 2, 4, 16, INF)
        ]
        assert all(a < b for a, b in itertools.pairwise(vals))


# ------------------------------------------------------------------------------------------
# lr_norm
# ------------------------------------------------------------------------------------------


def test_lr_norm() -> None:
    x = rng(300).normal(size=(50, 9))
    for r in (1.0, 1.5, 2.0, 3.0, 10.0, INF):
        want = np.array([np.linalg.norm(v, ord=r) for v in x])
        np.testing.assert_allclose(lr_norm(x, r), want, rtol=1e-13)
        np.testing.assert_allclose(GeneralizedGaussianNoise(1.0, r).norm(x), want, rtol=1e-13)
    assert lr_norm(np.zeros((2, 3)), 3.0).tolist() == [0.0, 0.0]
    assert lr_norm(np.array([3.0, -4.0]), 2) == 5.0
    # No overflow or underflow for large r or large entries.
    assert lr_norm(np.array([1e300, 1e300]), 1000.0) == pytest.approx(1e300 * 2 ** (1 / 1000))
    assert lr_norm(np.array([1e-300, 0.0]), 1000.0) == pytest.approx(1e-300)
    assert lr_norm(np.array([3e200, 4e200]), 2.0) == pytest.approx(5e200, rel=1e-15)
    assert lr_norm(np.array([3e-200, 4e-200]), 2.0) == pytest.approx(5e-200, rel=1e-15)


# ------------------------------------------------------------------------------------------
# lq_regularity
# ------------------------------------------------------------------------------------------

QS = [1.0, 1.25, 1.5, 2.0, 3.0, 10.0, INF]
DS = [2, 5, 10, 100, 1000]


def _test_vectors(d: int, seed: int) -> np.ndarray:
    g = rng(seed)
    parts = [
        g.normal(size=(200, d)),
        g.standard_cauchy(size=(100, d)),
        np.eye(d)[: min(d, 20)] * g.choice([-3.0, 0.1, 7.0], size=(min(d, 20), 1)),  # 1-sparse
        np.ones((1, d)),  # constant
        -2.5 * np.ones((1, d)),
        g.choice([-1.0, 1.0], size=(20, d)),  # constant modulus
    ]
    k_sparse = np.zeros((20, d))
    k_sparse[:, : max(1, d // 10)] = g.normal(size=(20, max(1, d // 10)))
    parts.append(k_sparse)
    return np.concatenate(parts)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("d", DS)
def test_lq_regularity_norm_equivalence(q: float, d: int) -> None:
    reg = lq_regularity(q, d)
    assert isinstance(reg, LqRegularity)
    assert reg.q == q and reg.d == d
    assert 2.0 <= reg.r < INF and reg.kappa_plus == pytest.approx(reg.r - 1.0, rel=1e-15)
    # kappa is the paper's constant raised to the exact equivalence constant where the paper's
    # is too small (Lemma 3.9 branch), or the exact constant itself (Lemma 3.10 / fallback)
    exact = exact_kappa(q, d, reg.r)
    if q >= 2 and math.log(d) >= 2 and reg.r < q:
        assert reg.kappa == pytest.approx(max(paper_lq_constants(q, d)[0], exact), rel=1e-12)
    else:
        assert reg.kappa == pytest.approx(exact, rel=1e-12)
    x = _test_vectors(d, seed=int(d + 10 * (q if q < INF else 99)))
    nq = lr_norm(x, q)
    nplus = reg.smooth_norm(x)
    tol = 1e-12
    assert np.all(nq**2 <= nplus**2 * (1 + tol))
    assert np.all(nplus**2 <= (reg.kappa / reg.kappa_plus) * nq**2 * (1 + tol))
    # The exact constant is attained: sparse vectors give equality on the left, constant
    # vectors (q >= 2) or sparse vectors (q < 2) give the ratio exact_kappa / kappa_plus.
    ratio = nplus**2 / nq**2
    assert ratio.min() == pytest.approx(1.0, rel=1e-12)
    assert ratio.max() == pytest.approx(exact_kappa(q, d, reg.r) / reg.kappa_plus, rel=1e-12)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("d", [2, 10, 1000])
def test_lq_regularity_smoothness(q: float, d: int) -> None:
    # f = ||.||_+^2 / 2 is kappa_plus-smooth w.r.t. ||.||_+:
    # f(y) <= f(x) + <grad f(x), y - x> + kappa_plus/2 ||y - x||_+^2, checked on random pairs.
    reg = lq_regularity(q, d)
    g = rng(400 + d)
    x, y = g.normal(size=(300, d)), g.normal(size=(300, d))
    r, c = reg.r, reg.norm_scale
    nx = lr_norm(x, r)
    grad = c**2 * nx[:, None] ** (2 - r) * np.sign(x) * np.abs(x) ** (r - 1)
    fx, fy = 0.5 * reg.smooth_norm(x) ** 2, 0.5 * reg.smooth_norm(y) ** 2
    bound = fx + ((y - x) * grad).sum(axis=1) + 0.5 * reg.kappa_plus * reg.smooth_norm(y - x) ** 2
    # For r = 2 the bound holds with equality, so allow rounding relative to the magnitudes.
    scale = fx + fy + reg.kappa_plus * reg.smooth_norm(y - x) ** 2
    assert np.all(fy <= bound + 1e-12 * scale)


def test_lq_regularity_hand_values() -> None:
    # Lemma 3.10, q = 1 (p = inf): kappa = d, smooth norm sqrt(d) ||.||_2.
    reg = lq_regularity(1, 100)
    assert (reg.kappa, reg.kappa_plus, reg.r) == (100.0, 1.0, 2.0)
    assert reg.norm_scale == pytest.approx(10.0)
    # q = 1.5 (p = 3), d = 64: kappa = 64^(1/3) = 4, scale = 64^(1/2 - 1/3) = 2.
    reg = lq_regularity(1.5, 64)
    assert reg.kappa == pytest.approx(4.0) and reg.norm_scale == pytest.approx(2.0)
    # q = 2 is Euclidean for every d.
    for d in (1, 2, 7, 8, 10**6):
        reg = lq_regularity(2, d)
        assert (reg.kappa, reg.kappa_plus, reg.r, reg.norm_scale) == (1.0, 1.0, 2.0, 1.0)
    # q = 3 <= ln 1000: the norm itself, kappa = kappa_+ = q - 1.
    reg = lq_regularity(3, 1000)
    assert (reg.kappa, reg.kappa_plus, reg.r) == pytest.approx((2.0, 2.0, 3.0))
    # q = inf, d = 1000: r = ln d, kappa_+ = ln d - 1, kappa = e^2 (ln d - 1).
    ln_d = math.log(1000)
    reg = lq_regularity(INF, 1000)
    assert reg.r == pytest.approx(ln_d)
    assert reg.kappa_plus == pytest.approx(ln_d - 1)
    assert reg.kappa == pytest.approx(math.e**2 * (ln_d - 1), rel=1e-14)
    # Fallback (ln d < 2, d <= 7): Euclidean, kappa = d^(1 - 2/q).
    reg = lq_regularity(INF, 5)
    assert (reg.kappa, reg.kappa_plus, reg.r, reg.norm_scale) == (5.0, 1.0, 2.0, 1.0)
    assert lq_regularity(4, 4).kappa == pytest.approx(2.0)
    assert lq_regularity(10, 1).kappa == 1.0
    # d = 8 is the first dimension where Lemma 3.9 applies (ln 8 = 2.08 >= 2).
    assert lq_regularity(INF, 8).r == pytest.approx(math.log(8))
    assert lq_regularity(INF, 7).r == 2.0


def test_paper_kappa_is_below_the_exact_constant_near_q_equal_ln_d() -> None:
    # Lemma 3.9 as printed gives kappa_q = min{q - 1, e^2 (ln d - 1)} with smooth norm l_r,
    # r = min{q, ln d}; for q slightly above ln d this is below the exact equivalence constant.
    for q, d, paper, exact in [
        (3, 10, 2.0, 2.0736),
        (10, 100, 9.0, 10.605),
        (10, 1000, 9.0, 10.965),
    ]:
        p_kappa, p_plus = paper_lq_constants(q, d)
        assert p_kappa == paper
        assert exact_kappa(q, d, p_plus + 1) == pytest.approx(exact, abs=1e-3)
        assert lq_regularity(q, d).kappa == pytest.approx(exact, abs=1e-3)  # the max is used


@pytest.mark.parametrize("q", [*QS, 2.5, 4.0, 6.0, 50.0])
@pytest.mark.parametrize("d", [*DS, 8, 20, 50, 10**4, 10**6])
def test_lq_regularity_kappa_is_never_below_exact(q: float, d: int) -> None:
    reg = lq_regularity(q, d)
    exact = exact_kappa(q, d, reg.r)
    assert reg.kappa >= exact
    if q >= 2 and math.log(d) >= 2:
        paper_kappa, paper_plus = paper_lq_constants(q, d)
        assert reg.kappa_plus == paper_plus
        assert reg.kappa == max(paper_kappa, exact)
        if q <= math.log(d) or q == INF:
            assert reg.kappa == pytest.approx(paper_kappa, rel=1e-14)  # no correction needed
    else:
        assert reg.kappa == pytest.approx(exact, rel=1e-14)  # Lemma 3.10 / fallback are exact


def test_paper_constants_are_meaningless_for_small_d() -> None:
    # Why the fallback exists: kappa_+ < 1 for d <= 7 and negative for d <= 2.
    assert paper_lq_constants(INF, 7)[1] < 1
    assert paper_lq_constants(INF, 2)[1] < 0 and paper_lq_constants(INF, 2)[0] < 0


def test_exact_kappa_values() -> None:
    assert exact_kappa(INF, 100, 2) == pytest.approx(100.0)
    assert exact_kappa(4, 16, 2) == pytest.approx(16**0.5)
    assert exact_kappa(1, 100, 2) == pytest.approx(100.0)  # r > q: scaled norm
    assert exact_kappa(3, 1000, 3) == pytest.approx(2.0)


# ------------------------------------------------------------------------------------------
# invalid inputs
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"sigma": -1.0, "r": 2}, ValueError, r"sigma .*got -1\.0"),
        ({"sigma": math.nan, "r": 2}, ValueError, "nan"),
        ({"sigma": INF, "r": 2}, ValueError, "inf"),
        ({"sigma": "big", "r": 2}, TypeError, "'big'"),
        ({"sigma": 1.0, "r": 0.5}, ValueError, r"r <= inf, got 0\.5"),
        ({"sigma": 1.0, "r": -INF}, ValueError, "-inf"),
        ({"sigma": 1.0, "r": math.nan}, ValueError, "nan"),
        ({"sigma": 1.0, "r": "2"}, TypeError, "'2'"),
        ({"sigma": 1.0, "r": True}, TypeError, "True"),
        ({"sigma": 1.0, "r": None}, TypeError, "None"),
    ],
)
def test_invalid_parameters(kwargs: dict, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        GeneralizedGaussianNoise(**kwargs)


def test_invalid_method_arguments() -> None:
    g = GeneralizedGaussianNoise(1.0, 3)
    with pytest.raises(ValueError, match=r"\(\)"):
        g.sample(rng(0), ())
    with pytest.raises(ValueError, match=r"got \(2, -1\)"):
        g.sample(rng(0), (2, -1))
    with pytest.raises(ValueError, match=r"got \(2, 2\.5\)"):
        g.sample(rng(0), (2, 2.5))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="None"):
        g.sample(rng(0), None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="got 0"):
        g.coordinate_variance(0)
    with pytest.raises(TypeError, match=r"got 2\.5"):
        g.coordinate_variance(2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="got nan"):
        g.scaled(math.nan)
    with pytest.raises(TypeError, match="'x'"):
        g.scaled("x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"got 0\.5"):
        lr_norm(np.ones(3), 0.5)
    with pytest.raises(ValueError, match="scalar"):
        lr_norm(np.float64(1.0), 2)
    with pytest.raises(ValueError, match=r"q <= inf, got 0\.5"):
        lq_regularity(0.5, 10)
    with pytest.raises(ValueError, match="got nan"):
        lq_regularity(math.nan, 10)
    with pytest.raises(ValueError, match="d must be a positive integer, got 0"):
        lq_regularity(2, 0)
    with pytest.raises(TypeError, match=r"got 2\.0"):
        lq_regularity(2, 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"got 1\.5"):
        exact_kappa(3, 10, 1.5)
    with pytest.raises(ValueError, match="got r=inf"):
        exact_kappa(3, 10, INF)
    with pytest.raises(ValueError, match="got 0"):
        paper_lq_constants(3, 0)
