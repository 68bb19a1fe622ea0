"""Anytime factorisations (Jacobsen & Fawaz 2025, Algorithm 1; our tapered square root)."""

import math

import numpy as np
import pytest

from dponline.continual import power_series as ps
from dponline.continual.anytime_factorization import (
    AnytimeFactorizationCounter,
    JacobsenFawaz,
    TaperedSqrt,
    _jf_modulus_sq,
    _jf_series,
    calibrate_anytime,
    jf_sensitivity,
    make_anytime_counter,
    make_anytime_factorization,
)
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.privacy.accounting import gaussian_sigma
from dponline.privacy.arguments import ArgumentError
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.noise import GaussianNoise, LaplaceNoise

BUDGET = PrivacyBudget(1.0, 1e-6)


@pytest.mark.parametrize(
    "strategy", [JacobsenFawaz(-0.51, 0.0), JacobsenFawaz(-0.6, 0.72), TaperedSqrt()]
)
def test_l_times_r_is_the_prefix_sum_series(strategy):
    n = 4096
    prod = ps.multiply(strategy.l_coefficients(n), strategy.r_coefficients(n), n)
    assert np.allclose(prod, np.ones(n), rtol=0, atol=1e-10)


def test_jf_zero_parameters_give_the_square_root():
    n = 1000
    assert np.allclose(_jf_series(n, 0.0, 0.0), sqrt_coefficients(n), rtol=1e-12)
    # gamma = 1: (1 - z)^(-1/2) * lam(z), lam_m = 1/(m + 1)
    expected = np.convolve(sqrt_coefficients(n), 1.0 / np.arange(1, n + 1))[:n]
    assert np.allclose(_jf_series(n, 1.0, 0.0), expected, rtol=1e-11)


def test_jf_sensitivity_matches_a_converged_coefficient_sum():
    # gamma = -2: r_k^2 ~ 1/(pi k ln^4 k); the sum beyond 2^16 is below 1e-4 of the total
    r = _jf_series(2**16, -2.0, 0.0)
    partial = float(np.sum(r**2))
    total = jf_sensitivity(-2.0, 0.0) ** 2
    assert partial < total < partial * (1 + 1e-4)


@pytest.mark.parametrize(("gamma", "delta"), [(-0.51, 0.0), (-0.51, 0.612), (-1.0, 1.0)])
def test_parseval_form_matches_damped_coefficient_sums(gamma, delta):
    # sum_k r_k^2 rho^(2k) = (1/2 pi) int |f(rho e^{i theta})|^2: checks the modulus formula's
    # branches (delta != 0) against coefficients; rho^(2k) < e^-40 beyond k = 2^17
    n, rho = 2**17, 1 - 20 / 2**17
    r = _jf_series(n, gamma, delta)
    lhs = float(np.sum((r * rho ** np.arange(n)) ** 2))
    theta = np.concatenate([np.geomspace(1e-9, 1e-2, 200001), np.linspace(1e-2, np.pi, 200001)[1:]])
    z = rho * np.exp(1j * theta)
    lam = -np.log1p(-z) / z
    f = (1 - z) ** -0.5 * lam**gamma * (2 * np.log(lam) / z) ** delta
    rhs = float(np.trapezoid(np.abs(f) ** 2, theta)) / np.pi
    assert rhs == pytest.approx(lhs, rel=1e-6)
    # and the boundary modulus used by jf_sensitivity agrees with the direct evaluation
    th = np.array([1e-3, 0.5, 2.0, 3.0])
    zz = np.exp(1j * th)
    lz = -np.log1p(-zz) / zz
    direct = np.abs((1 - zz) ** -0.5 * lz**gamma * (2 * np.log(lz) / zz) ** delta) ** 2
    assert np.allclose(_jf_modulus_sq(th, gamma, delta), direct, rtol=1e-10)


def test_jf_sensitivity_counts_the_far_tail():
    # gamma = -0.51: sum_{k < 2^20} r_k^2 = 1.53, but the whole series sums to ~16.6; the tail
    # beyond 2^20 matches (1/pi) int_{ln 2^20}^inf u^(-1.02) du up to the lower-order terms
    total = jf_sensitivity(-0.51, 0.0) ** 2
    partial = float(np.sum(_jf_series(2**16, -0.51, 0.0) ** 2))
    assert partial == pytest.approx(1.4729, abs=1e-4)  # sum_{k < 2^16} r_k^2
    tail_estimate = 50 * math.log(2**16) ** -0.02 / math.pi
    assert total - partial == pytest.approx(tail_estimate, rel=0.05)


def test_tapered_sensitivity_bounds_are_tight():
    lo, hi = TaperedSqrt().sensitivity_bounds()
    assert lo < hi < lo * (1 + 1e-6)
    # the bounds on c_k^2 the proof uses (Wallis: 1/(pi(k+1/2)) <= c_k^2 <= 1/(pi(k+1/4)))
    k = np.arange(1, 10**6, dtype=float)
    c2 = sqrt_coefficients(10**6)[1:] ** 2
    assert np.all(c2 <= 1 / (np.pi * k)) and np.all(c2 >= 1 / (np.pi * (k + 0.5)))


def test_tapered_refuses_bad_parameters():
    with pytest.raises(ValueError, match="square-summable"):
        TaperedSqrt(q=0.0)
    with pytest.raises(ValueError, match="gamma"):
        JacobsenFawaz(-0.5, 0.0)


def test_calibration_is_the_analytic_gaussian_for_delta():
    bounds = Box(0, 1, dim=3)
    cal = calibrate_anytime(TaperedSqrt(), bounds, BUDGET)
    delta_ = TaperedSqrt().sensitivity()
    assert cal.noise.sigma == pytest.approx(gaussian_sigma(delta_ * math.sqrt(3), 1.0, 1e-6))
    assert cal.guarantee.epsilon <= 1.0 + 1e-9 and "every prefix length" in cal.guarantee.derivation
    with pytest.raises(ValueError, match="paper"):
        calibrate_anytime(TaperedSqrt(), bounds, PrivacyBudget(1.0, 1e-6, "paper"))
    with pytest.raises(ValueError, match="delta"):
        calibrate_anytime(TaperedSqrt(), bounds, PrivacyBudget(1.0))


def test_empirical_variance_matches_variance():
    # 4000 replicas: the sample variance of a Gaussian is within 10% with probability
    # 1 - 2e-6 per release (chi-square, 4000 dof); 3 releases checked
    c = make_anytime_counter(Box(0, 1, dim=1), BUDGET, replicas=4000, rng=3)
    out = c.step_block(np.zeros((40, 1)))
    for t in (1, 7, 40):
        assert out[t - 1].var() == pytest.approx(c.variance(t), rel=0.1)
    assert c.variance(0) == 0.0 and c.variance(40) > c.variance(7) > c.variance(1)


def test_block_equals_single_steps_and_resume_is_bit_exact():
    bounds = Box(0, 1, dim=2)
    xs = np.random.default_rng(1).uniform(size=(37, 2))
    a = make_anytime_factorization(bounds, BUDGET, replicas=3, rng=7, gamma=-0.6)
    b = make_anytime_factorization(bounds, BUDGET, replicas=3, rng=7, gamma=-0.6)
    single = np.array([a.step(x) for x in xs])
    block = np.concatenate([b.step_block(xs[:5]), b.step_block(xs[5:20]), b.step_block(xs[20:])])
    assert np.array_equal(single, block)
    state = a.state_dict()
    more = np.array([a.step(x) for x in xs[:30]])
    c = make_anytime_factorization(bounds, BUDGET, replicas=3, rng=99, gamma=-0.6)
    c.load_state_dict(state)
    assert c.t == 37 and np.array_equal(c.step_block(xs[:30]), more)


def test_state_checks_and_input_checks():
    bounds = Box(0, 1, dim=2)
    c = make_anytime_counter(bounds, BUDGET, rng=0)
    c.step([0.5, 0.5])
    c.step([0.5, 0.5])
    state = c.state_dict()
    bad = {**state, "t": 5}  # arrays of round 2, not 5
    fresh = make_anytime_counter(bounds, BUDGET, rng=0)
    with pytest.raises(ArgumentError):
        fresh.load_state_dict(bad)
    assert fresh.t == 0
    other = make_anytime_counter(bounds, PrivacyBudget(2.0, 1e-6), rng=0)
    with pytest.raises(ArgumentError, match="different"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match="step 3"):
        c.step([2.0, 0.5])
    with pytest.raises(ValueError):
        c.step([np.nan, 0.5])
    with pytest.raises(TypeError):
        c.step([1j, 0.5])
    assert c.t == 2
    clipped = make_anytime_counter(bounds, BUDGET, rng=0, clip=True)
    assert clipped.step([2.0, -1.0]).shape == (1, 2)


def test_scale_noise_before_first_step_only():
    c = make_anytime_counter(Box(0, 1, dim=1), BUDGET, rng=0)
    sigma = c.noise.sigma
    c.scale_noise(0.1)
    assert c.noise.sigma == pytest.approx(0.1 * sigma)
    c.step([0.0])
    with pytest.raises(ValueError, match="before the first step"):
        c.scale_noise(2.0)


def test_gaussian_only_and_horizon_none():
    with pytest.raises(TypeError, match="Gaussian"):
        AnytimeFactorizationCounter(1, LaplaceNoise(1.0))
    c = AnytimeFactorizationCounter(1, GaussianNoise(0.0))
    assert c.horizon is None
    assert np.allclose(c.step_block(np.ones((100, 1)))[:, 0, 0], np.arange(1, 101))


def test_causal_convolution_rows_equal_the_linear_convolution():
    from dponline.continual.anytime_factorization import causal_convolution

    rng = np.random.default_rng(5)
    for n_z, n_c, lo, hi in ((7, 7, 3, 7), (15, 15, 7, 15), (1, 1, 0, 1), (12, 20, 0, 12)):
        z = rng.standard_normal((n_z, 2, 3))
        c = rng.standard_normal(n_c)
        want = np.empty((hi - lo, 2, 3))
        for r in range(2):
            for d in range(3):
                want[:, r, d] = np.convolve(z[:, r, d], c)[lo:hi]
        np.testing.assert_allclose(causal_convolution(z, c, lo, hi), want, atol=1e-12)


def test_the_counter_says_once_when_its_noise_state_outgrows_the_memory_budget(monkeypatch):
    """Its state grows O(t d) for as long as the stream runs (the selection takes it by its size
    at 2^18 rounds): a deployment hears once when it passes the budget, with the way out."""
    import warnings

    from dponline.continual import make_counter, selection

    monkeypatch.setattr(selection, "MEMORY_BUDGET", 4096)  # bytes: passed at 2^6 rounds, d = 2
    counter = make_counter(
        horizon=None, bounds=Box(0, 1, dim=2), budget=PrivacyBudget(1.0, 1e-6), rng=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(200):
            counter.step([0.5, 0.5])
    said = [str(w.message) for w in caught]
    assert len(said) == 1, said
    assert "keeps every noise draw" in said[0] and "mechanism='anytime_blt'" in said[0]


def test_the_memory_model_is_the_counters_arrays_and_sets_the_dimension_rule():
    """The selection sized the tapered factorisation as a square root's state over t rounds,
    a third of what it keeps (two chunks' draws and the current chunk's correlated terms):
    20 coordinates held 120 MiB at 2^18 rounds under a 64 MiB rule. The model is exact
    at every t, and the rule's dimension follows from it."""
    from dponline.continual import make_counter
    from dponline.continual.factory import ANYTIME_MAX_DIM, ANYTIME_MEMORY_ROUNDS
    from dponline.continual.selection import MEMORY_BUDGET, state_bytes

    counter = make_counter(
        horizon=None, bounds=Box(0.0, 1.0, dim=3), budget=PrivacyBudget(1.0, 1e-6), rng=0
    )
    assert type(counter).__name__ == "AnytimeFactorizationCounter"
    for t in range(1, 140):
        counter.step([0.5, 0.5, 0.5])
        kept = counter._noise.nbytes + counter._correlated.nbytes + counter._prefix.nbytes
        assert state_bytes("anytime_factorization", t, 3) == kept, t
    per_coordinate = state_bytes("anytime_factorization", ANYTIME_MEMORY_ROUNDS, 1)
    assert per_coordinate == 3 * 2**18 * 8  # 6 MiB
    assert ANYTIME_MAX_DIM == MEMORY_BUDGET // per_coordinate == 10
