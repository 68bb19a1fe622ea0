"""The rescaled square root (:mod:`dponline.continual.scaled_sqrt`): the factorisation, its
sensitivity and variances against materialised matrices, the diagonal's optimality, the
streaming counter."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from dponline.continual import ScaledSqrtCounter, SqrtFactorizationCounter, make_counter
from dponline.continual import scaled_sqrt as module
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.continual.scaled_sqrt import (
    PROFILE,
    optimal_log_scaling,
    scaled_sqrt_diagonal,
    scaled_sqrt_objective,
)
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.noise import GaussianNoise, LaplaceNoise


def _root(T):
    c = sqrt_coefficients(T)
    lag = np.subtract.outer(np.arange(T), np.arange(T))
    return np.where(lag >= 0, c[np.clip(lag, 0, None)], 0.0)


def _max_variance(cls, T):
    _, l2 = cls.sensitivity_factors(T)  # sigma = the l2 factor: rho = 1/2 at unit sensitivity
    return float(cls.release_variances(T, GaussianNoise(l2), 1).max())


@pytest.mark.parametrize("T", [1, 2, 5, 17, 64])
def test_the_factorisation_is_exact_and_states_its_norms(T):
    D = scaled_sqrt_diagonal(T)
    S = _root(T)
    B, C = S * D[None, :], S / D[:, None]
    np.testing.assert_allclose(B @ C, np.tril(np.ones((T, T))), atol=1e-12)
    np.testing.assert_allclose(ScaledSqrtCounter.strategy_matrix(T), C, rtol=1e-15)
    l1, l2 = ScaledSqrtCounter.sensitivity_factors(T)
    assert l2 == pytest.approx(np.sqrt((C**2).sum(axis=0)).max(), rel=1e-12)
    assert l1 == pytest.approx(np.abs(C).sum(axis=0).max(), rel=1e-12)
    counter = ScaledSqrtCounter(T, 2, GaussianNoise(1.5))
    np.testing.assert_allclose(counter.variances(), 2.25 * (B**2).sum(axis=1), rtol=1e-12)
    assert counter.variance(0) == 0.0
    assert counter.variance(T) == pytest.approx(2.25 * (B[-1] ** 2).sum(), rel=1e-12)
    assert scaled_sqrt_objective(D) == pytest.approx(_max_variance(ScaledSqrtCounter, T))


def test_the_issue_target_at_T_1024():
    ours, root = (_max_variance(c, 1024) for c in (ScaledSqrtCounter, SqrtFactorizationCounter))
    assert root == pytest.approx(10.7096, abs=1e-4)
    assert ours <= 9.5  # 9.4995; the issue asks <= 9.6
    assert ours == pytest.approx(9.4995, abs=1e-3)
    # between the lower bound (0.701 + ln(T)/pi)^2 of Henzinger et al. on every factorisation
    # and the square root's (1.066 + ln(T)/pi)^2
    assert (0.701 + math.log(1024) / math.pi) ** 2 < ours < root


@pytest.mark.parametrize("T", [1, 2, 3, 10, 100, 333, 4096])
def test_never_worse_than_the_square_root(T):
    assert _max_variance(ScaledSqrtCounter, T) <= _max_variance(SqrtFactorizationCounter, T)
    if T >= 2:
        assert _max_variance(ScaledSqrtCounter, T) < 0.9 * _max_variance(
            SqrtFactorizationCounter, T
        )
    assert np.array_equal(scaled_sqrt_diagonal(1), [1.0])  # at T = 1 every D is optimal


def test_the_one_parameter_diagonal_is_as_good_as_the_full_optimisation():
    # the problem is convex in log D: the full optimisation finds the best diagonal
    T = 48
    full = scaled_sqrt_objective(np.exp(optimal_log_scaling(T)))
    ours = scaled_sqrt_objective(scaled_sqrt_diagonal(T))
    assert ours <= 1.002 * full
    assert full < scaled_sqrt_objective(np.ones(T))


def test_the_profile_is_increasing_and_antisymmetric():
    assert PROFILE[0] == 0.0 and PROFILE[-1] == 1.0 and PROFILE.size == 41
    assert np.all(np.diff(PROFILE) > 0)
    np.testing.assert_allclose(PROFILE + PROFILE[::-1], 1.0, atol=1e-15)
    D = scaled_sqrt_diagonal(1024)
    assert np.all(np.diff(D) < 0) and D[0] < 1.0 and D[-1] > 0.9
    with pytest.raises(ValueError):
        D[0] = 2.0  # read-only: the cache is shared


def test_above_the_optimised_horizons_the_amplitude_is_reused(monkeypatch):
    monkeypatch.setattr(module, "OPTIMISED_UP_TO", 64)
    scaled_sqrt_diagonal.cache_clear()
    try:
        reused = scaled_sqrt_diagonal(300)
        amplitude = module._best_amplitude(64)
        np.testing.assert_allclose(reused, np.exp(-0.5 * amplitude * module._profile(300)))
        assert scaled_sqrt_objective(reused) < scaled_sqrt_objective(np.ones(300))
    finally:
        scaled_sqrt_diagonal.cache_clear()


@pytest.mark.parametrize("T", [1, 2, 5, 64, 1000])
def test_the_square_roots_objective_is_its_squared_coefficient_sum_squared(T):
    # D = I: K 1 and K^T 1 are the partial sums of the c_k^2, both largest at the full sum
    assert scaled_sqrt_objective(np.ones(T)) == pytest.approx(
        float(np.sum(sqrt_coefficients(T) ** 2)) ** 2, rel=1e-13
    )


def test_streaming_blocks_resume_and_scale():
    xs = np.random.default_rng(4).uniform(size=(150, 2))
    exact = ScaledSqrtCounter(150, 2, GaussianNoise(0.0), replicas=2)
    np.testing.assert_allclose(
        exact.step_block(xs), np.cumsum(xs, axis=0)[:, None].repeat(2, 1), atol=1e-12
    )
    a = ScaledSqrtCounter(150, 2, GaussianNoise(1.5), replicas=3, rng=7)
    b = ScaledSqrtCounter(150, 2, GaussianNoise(1.5), replicas=3, rng=7)
    stepped = np.stack([a.step(x) for x in xs])
    blocked = np.concatenate([b.step(xs[0])[None], b.step_block(xs[1:120]), b.step_block(xs[120:])])
    np.testing.assert_allclose(blocked, stepped, rtol=0, atol=1e-10)
    part = ScaledSqrtCounter(150, 2, GaussianNoise(1.5), replicas=3, rng=7)
    part.step_block(xs[:41])
    resumed = ScaledSqrtCounter(150, 2, GaussianNoise(1.5), replicas=3, rng=99)
    resumed.load_state_dict(pickle.loads(pickle.dumps(part.state_dict())))
    np.testing.assert_array_equal(resumed.step_block(xs[41:]), part.step_block(xs[41:]))
    scaled = ScaledSqrtCounter(16, 3, GaussianNoise(2.0), replicas=4, rng=7)
    scaled.scale_noise(0.1)
    built = ScaledSqrtCounter(16, 3, GaussianNoise(0.2), replicas=4, rng=7)
    for x in xs[:16, :1].repeat(3, 1):
        np.testing.assert_allclose(scaled.step(x), built.step(x), rtol=1e-12, atol=1e-12)


def test_releases_have_the_stated_variances():
    # 20,000 Gaussian replicas: the sample variance has relative standard error sqrt(2 / R) =
    # 1%; 6 standard errors over 30 rounds fail by chance with probability < 1e-7. Noise drawn
    # without the diagonal (the plain square root) has up to 23% more variance (round 30).
    T, R = 30, 20_000
    counter = ScaledSqrtCounter(T, 1, GaussianNoise(1.0), replicas=R, rng=3)
    noise = counter.step_block(np.zeros((T, 1)))[..., 0]
    rel = noise.var(axis=1) / counter.variances() - 1.0
    assert np.abs(rel).max() < 6 * math.sqrt(2.0 / R)
    assert np.abs(noise.mean(axis=1) / np.sqrt(counter.variances() / R)).max() < 6


def test_gaussian_only_and_calibrated_to_its_column_norm():
    with pytest.raises(TypeError, match="supports"):
        ScaledSqrtCounter(4, 1, LaplaceNoise(1.0))
    counter = make_counter(
        "scaled_sqrt", horizon=1024, bounds=Box(0, 1, dim=1), budget=PrivacyBudget(1.0, 1e-6)
    )
    root = make_counter(
        "sqrt_factorization",
        horizon=1024,
        bounds=Box(0, 1, dim=1),
        budget=PrivacyBudget(1.0, 1e-6),
    )
    ratio = (
        ScaledSqrtCounter.sensitivity_factors(1024)[1]
        / (SqrtFactorizationCounter.sensitivity_factors(1024)[1])
    )
    assert counter.noise.sigma == pytest.approx(ratio * root.noise.sigma, rel=1e-9)
    assert counter.max_variance < 0.9 * root.max_variance


def test_one_round_is_exact_on_the_crude_path_too(monkeypatch):
    """With k_eff = 1 the person is one round, whose factor is the largest column: exact, also
    where the row-weighted bound takes its cruder max(w) path (k_eff T past 2^25), which
    overstates it (24% at T = 14) and was flagged exact."""
    import functools

    import dponline.continual.scaled_sqrt as ss
    from dponline.continual import participation

    crude = functools.partial(participation.weighted_toeplitz_participation_sq, fft_limit=0)
    monkeypatch.setattr(ss, "weighted_toeplitz_participation_sq", crude)
    for t, k, b in [(14, 1, 1), (14, 3, 14), (100, 2, 100)]:
        got = ss.ScaledSqrtCounter.participation_sensitivity_factors(t, k, b)
        assert got.l2_exact
        assert got.l2 == pytest.approx(ss.ScaledSqrtCounter.sensitivity_factors(t)[1], rel=1e-12)
    two = ss.ScaledSqrtCounter.participation_sensitivity_factors(14, 2, 1)
    assert not two.l2_exact
