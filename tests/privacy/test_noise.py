"""Laplace and Gaussian noise: shapes, variances, sums, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dponline.privacy.noise import GaussianNoise, LaplaceNoise


@pytest.mark.parametrize("noise", [GaussianNoise(1.5), LaplaceNoise(0.7)])
def test_sample_sum_has_the_law_of_a_sum_of_draws(noise):
    rng = np.random.default_rng(0)
    summed = noise.sample_sum(rng, 5, (20_000, 3))
    direct = noise.sample(rng, (5, 20_000, 3)).sum(axis=0)
    # two-sample KS at 1e-4: false failure probability 1e-4
    assert stats.ks_2samp(summed[:, 0], direct[:, 0]).pvalue > 1e-4
    assert noise.sample_sum(rng, 0, (2, 3)).shape == (2, 3)


@pytest.mark.parametrize("noise", [GaussianNoise(1.5), LaplaceNoise(0.7)])
def test_coordinate_variance_matches_samples(noise):
    x = noise.sample(np.random.default_rng(1), (200_000,))
    # relative sd of a variance estimate <= sqrt(5/n) (Laplace kurtosis 6) ~ 0.005; 6 sd margin
    assert x.var() == pytest.approx(noise.coordinate_variance(1), rel=6 * math.sqrt(5 / 2e5))


def test_scaling_and_zero_noise():
    assert GaussianNoise(2.0).scaled(0.5) == GaussianNoise(1.0)
    assert LaplaceNoise(2.0).scaled(-3) == LaplaceNoise(6.0)
    assert np.all(GaussianNoise(0.0).sample(np.random.default_rng(0), (3,)) == 0)


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_invalid_scales(bad):
    with pytest.raises(ValueError, match="finite and non-negative"):
        GaussianNoise(bad)
    with pytest.raises(ValueError, match="finite and non-negative"):
        LaplaceNoise(bad)
    # strings and bools are refused, not converted (GaussianNoise("1.5") and GaussianNoise(True)
    # once gave sigma 1.5 and 1.0)
    for wrong in ("x", "1.5", True):
        with pytest.raises(TypeError, match="finite and non-negative, got"):
            LaplaceNoise(wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="finite and non-negative, got"):
            GaussianNoise(wrong)  # type: ignore[arg-type]


def test_each_noise_knows_its_calibration():
    from dponline.privacy.accounting import gaussian_epsilon
    from dponline.privacy.generalized_gaussian import GeneralizedGaussianNoise, lq_regularity

    assert LaplaceNoise.calibrated(3.0, 0.5) == LaplaceNoise(6.0)
    assert LaplaceNoise(1.0).sensitivity_norm == "l1"
    g = GaussianNoise.calibrated(2.0, 1.0, 1e-6)
    assert g.sensitivity_norm == "l2"
    assert gaussian_epsilon(1e-6, 2.0 / g.sigma) == pytest.approx(1.0)
    reg = lq_regularity(2.0, 10)
    gg = GeneralizedGaussianNoise.calibrated(1.0, 1.0, 1e-6, reg)
    assert gg.sensitivity_norm == "lr" and gg.r == 2.0
    assert gg.sigma == pytest.approx(math.sqrt(2 * math.log(1e6)))
    with pytest.raises(ValueError, match="positive"):
        LaplaceNoise.calibrated(1.0, 0.0)


def test_laplace_sampler_has_the_laplace_law():
    x = LaplaceNoise(0.7).sample(np.random.default_rng(5), (100_000,))
    # KS against scipy's Laplace(0, 0.7): false failure probability 1e-4
    assert stats.kstest(x, stats.laplace(scale=0.7).cdf).pvalue > 1e-4


def test_laplace_draws_are_independent_across_positions():
    # signs come 64 to a raw draw: neighbouring coordinates must still be independent, and the
    # sign independent of the magnitude. For 200,000 draws each statistic below is a mean of
    # +-1 or centred terms with standard error <= 0.0023 (<= 0.0032 for the sign pairs); at
    # 6 standard errors a false failure has probability < 1e-8 each.
    x = LaplaceNoise(1.3).sample(np.random.default_rng(11), (2_000, 100))
    s = np.sign(x).ravel()
    assert abs(s.mean()) < 6 * 0.0023
    assert abs((s[1:] * s[:-1]).mean()) < 6 * 0.0023
    assert abs((s[64:] * s[:-64]).mean()) < 6 * 0.0023
    assert abs(np.corrcoef(s, np.abs(x).ravel())[0, 1]) < 6 * 0.0023
    assert abs(np.corrcoef(x[:, 0], x[:, 1])[0, 1]) < 6 * 0.023  # 2,000 rows


def test_few_laplace_draws_have_the_laplace_law_too():
    # fewer than 64 draws a call take the inversion sampler: 20,000 calls of 3 draws, KS at
    # false failure probability 1e-4
    gen = np.random.default_rng(6)
    x = np.concatenate([LaplaceNoise(0.7).sample(gen, (3,)) for _ in range(20_000)])
    assert stats.kstest(x, stats.laplace(scale=0.7).cdf).pvalue > 1e-4
