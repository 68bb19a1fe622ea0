"""Buffered linear Toeplitz counting (:mod:`dponline.continual.blt`) against its matrices."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dponline.continual.blt import BLTCounter, BLTParameters, optimise_blt
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.privacy.noise import GaussianNoise

PARAMS = BLTParameters(np.array([0.3, 0.8, 0.97]), np.array([0.2, 0.15, 0.05]))


def _toeplitz(coefficients: np.ndarray) -> np.ndarray:
    n = len(coefficients)
    i, j = np.indices((n, n))
    return np.where(i >= j, coefficients[np.abs(i - j)], 0.0)


def test_coefficients_and_inverse_match_the_definition():
    n = 30
    k = np.arange(1, n)
    by_hand = np.r_[1.0, (PARAMS.omega[None, :] * PARAMS.theta[None, :] ** (k[:, None] - 1)).sum(1)]
    np.testing.assert_allclose(PARAMS.coefficients(n), by_hand, rtol=1e-12)
    c = _toeplitz(PARAMS.coefficients(n))
    np.testing.assert_allclose(_toeplitz(PARAMS.inverse_coefficients(n)), np.linalg.inv(c),
                               atol=1e-10)  # fmt: skip
    assert PARAMS.sensitivity(n) == pytest.approx(np.linalg.norm(c, axis=0).max(), rel=1e-12)


def test_streaming_noise_is_the_prefix_sum_of_c_inverse_z():
    # the release minus the prefix sum is A C^{-1} z for the draws z, step by step
    n, dim = 25, 2
    counter = BLTCounter(n, dim, GaussianNoise(1.3), parameters=PARAMS, replicas=3, rng=11)
    gen = np.random.default_rng(11)
    z = np.stack([GaussianNoise(1.3).sample(gen, (3, dim)) for _ in range(n)])  # (T, R, d)
    b = _toeplitz(np.cumsum(PARAMS.inverse_coefficients(n)))  # A C^{-1}
    expected = np.einsum("ts,srd->trd", b, z)
    xs = np.random.default_rng(0).uniform(size=(n, dim))
    for t in range(n):
        release = counter.step(xs[t])
        np.testing.assert_allclose(release - xs[: t + 1].sum(0), expected[t], atol=1e-10)


def test_exact_variances_are_the_rows_of_a_c_inverse():
    n = 40
    counter = BLTCounter(n, 1, GaussianNoise(2.0), parameters=PARAMS)
    b = _toeplitz(np.cumsum(PARAMS.inverse_coefficients(n)))
    np.testing.assert_allclose(counter.variances(), 4.0 * (b**2).sum(axis=1), rtol=1e-10)
    assert counter.variance(17) == pytest.approx(4.0 * (b[16] ** 2).sum(), rel=1e-10)
    assert counter.variance(0) == 0.0


def test_measured_variance_matches_the_exact_one():
    # 40,000 replicas: the sample variance of the last release against its exact value by a
    # two-sided chi-square test at level 1e-4 (the chance of a false failure)
    n, r = 64, 40_000
    counter = BLTCounter(n, 1, GaussianNoise(1.0), replicas=r, rng=3)
    for _ in range(n):
        out = counter.step(np.zeros(1))
    stat = (r - 1) * out[:, 0].var(ddof=1) / counter.variance(n)
    lo, hi = stats.chi2.ppf([0.5e-4, 1 - 0.5e-4], r - 1)
    assert lo < stat < hi


@pytest.mark.parametrize("horizon", [16, 1024])
def test_optimised_blt_is_within_1_1x_of_the_square_root(horizon):
    p = optimise_blt(horizon)
    c = sqrt_coefficients(horizon)
    assert p.is_invertible() and p.buffers == 4
    assert p.max_variance(horizon) <= 1.1 * float((c**2).sum()) ** 2
    assert optimise_blt(horizon) is p  # cached: one optimisation per horizon


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="theta"):
        BLTParameters(np.array([1.2]), np.array([0.1]))
    with pytest.raises(ValueError, match="one length"):
        BLTParameters(np.array([0.5, 0.6]), np.array([0.1]))
    unstable = BLTParameters(np.array([0.5]), np.array([-3.0]))  # c(z) has a zero inside
    assert not unstable.is_invertible()
    with pytest.raises(ValueError, match="unstable"):
        BLTCounter(8, 1, GaussianNoise(1.0), parameters=unstable)


def _recursion_sums(params: BLTParameters, n: int) -> tuple[float, float, float]:
    """(sum |c_k|, sum c_k^2, sum beta_m^2) by running the counter's recursion on an impulse
    step by step (u_t = z_t - omega . h, h <- theta h + u_t) and c_k from its definition."""
    h = np.zeros(params.buffers)
    b = np.empty(n)
    for t in range(n):
        b[t] = (1.0 if t == 0 else 0.0) - params.omega @ h
        h = params.theta * h + b[t]
    beta = np.cumsum(b)
    k = np.arange(1, n)
    c = np.r_[1.0, (params.omega[None, :] * params.theta[None, :] ** (k[:, None] - 1)).sum(1)]
    return float(np.abs(c).sum()), float((c * c).sum()), float((beta * beta).sum())


@pytest.mark.parametrize("horizon", [1, 2, 9, 1024, 2**14, 2**17])
def test_closed_forms_match_the_recursion_at_long_horizons(horizon):
    """The geometric-series sums agree with the recursion run step by step; the polynomial
    expansion this module filtered through before was 1.2e-4 low in sum c_k^2 at 2^18 rounds
    (the optimised thetas crowd near 1), noise short of the sensitivity."""
    params = optimise_blt(horizon)
    got = params.closed_form_sums(horizon)
    want = _recursion_sums(params, horizon)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert params.sensitivity(horizon) ** 2 == pytest.approx(want[1], rel=1e-10)
    assert params.max_variance(horizon) == pytest.approx(want[1] * want[2], rel=1e-10)
    assert params.release_factors(horizon)[-1] == pytest.approx(want[2], rel=1e-10)
    l1, l2 = BLTCounter.sensitivity_factors(horizon)
    assert (l1, l2**2) == (pytest.approx(want[0], rel=1e-10), pytest.approx(want[1], rel=1e-10))


def test_long_horizons_optimise_without_materialising_the_horizon():
    """Past the fit's horizon the optimisation reads a log-spaced subset of the square root's
    coefficients and closed forms: a BLT for 10^9 rounds is found (it ran out of memory), and
    its largest variance grows like the square root's, log^2 T."""
    params = optimise_blt(10**9)
    assert params.is_invertible()
    assert 40 < params.max_variance(10**9) < 100
    assert params.max_variance(10**9) > optimise_blt(10**6).max_variance(10**6)


def test_closed_forms_survive_an_underflowed_theta():
    """A theta so small its square underflows to 0 (the optimiser's logit can reach it): the
    sums stay finite and equal the recursion's, at one round too (log 0 gave nan there)."""
    params = BLTParameters(np.array([1e-200, 0.5, 0.999]), np.array([0.1, 0.2, 0.3]))
    for n in (1, 2, 50):
        np.testing.assert_allclose(
            params.closed_form_sums(n), _recursion_sums(params, n), rtol=1e-10
        )


def test_pattern_sums_match_the_toeplitz_rule_on_the_coefficients():
    """The closed-form person sums (k_eff rounds exactly b apart from round 1) equal the
    Toeplitz rule run on the materialised coefficients and the best separated column l1 sum,
    on random BLTs with non-increasing coefficients; None when c_1 = sum omega > 1."""
    from dponline.continual.participation import effective_participations, toeplitz_participation_sq

    rng = np.random.default_rng(11)
    for _ in range(200):
        n_buffers = int(rng.integers(1, 5))
        theta = rng.uniform(0.05, 0.9999, n_buffers)
        omega = rng.dirichlet(np.ones(n_buffers)) * rng.uniform(0.05, 1.0)
        params = BLTParameters(theta, omega)
        t, k, b = int(rng.integers(1, 300)), int(rng.integers(1, 12)), int(rng.integers(1, 60))
        l1, sq = params.pattern_sums(t, k, b)
        c = params.coefficients(t)
        want_sq, exact = toeplitz_participation_sq(c, k, b)
        keff = effective_participations(t, k, b)
        want_l1 = np.cumsum(c)[::-1][np.arange(keff) * b].sum()
        assert exact and sq == pytest.approx(want_sq, rel=1e-12)
        assert l1 == pytest.approx(want_l1, rel=1e-12)
    assert BLTParameters(np.array([0.5, 0.9]), np.array([0.7, 0.6])).pattern_sums(10, 2, 1) is None


def test_weights_of_both_signs_leave_the_closed_forms_that_assume_positive_coefficients():
    """A negative omega (parameters given by hand) can make some c_k negative: sum |c_k| then
    comes from the coefficients and the person rule declines (the O(T) path bounds it)."""
    params = BLTParameters(np.array([0.9, 0.5]), np.array([0.3, -0.6]))
    c = params.coefficients(40)
    assert (c < 0).any()
    assert params.closed_form_sums(40)[0] == pytest.approx(np.abs(c).sum(), rel=1e-12)
    assert params.closed_form_sums(40)[1] == pytest.approx((c * c).sum(), rel=1e-12)
    assert params.pattern_sums(40, 2, 3) is None


@pytest.mark.parametrize(("horizon", "k", "b"), [(64, 1, 1), (5000, 16, 1), (100_000, 4, 1000)])
def test_a_release_variance_is_the_closed_form_of_the_prefix_sum(horizon, k, b):
    """variance(t) reads sum_{m<t} beta_m^2 in closed form (DP-UCB asks it every round: the
    O(t) sum made its 1e5 rounds quadratic), equal to the explicit sum to 1e-12."""
    from dponline.continual.blt import DEFAULT_BUFFERS, BLTCounter, optimise_blt
    from dponline.privacy.noise import GaussianNoise

    params = optimise_blt(horizon, DEFAULT_BUFFERS, k, b)
    counter = BLTCounter(horizon, 2, GaussianNoise(3.0), parameters=params, rng=0)
    explicit = params.release_factors(horizon) * 9.0
    for t in (1, 2, 3, 17, horizon // 2, horizon):
        assert counter.variance(t) == pytest.approx(explicit[t - 1], rel=1e-12)
    assert counter.variance(0) == 0.0
