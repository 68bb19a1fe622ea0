"""Calibrations: the papers' formulas by hand, the tight ones against exact accounting,
and honest guarantees when a paper's formula proves less than it claims."""

from __future__ import annotations

import math
import warnings

import pytest

from dponline.bandits.ene_noise import ene_gaussian_sigma, ene_laplace_scale
from dponline.continual import make_counter
from dponline.continual.calibration import (
    agarwal_singh_gaussian_sigma,
    agarwal_singh_laplace_scale,
    calibrate_counter,
)
from dponline.privacy.accounting import gaussian_epsilon
from dponline.privacy.bounds import Box, NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyWarning
from dponline.stochastic.private_frank_wolfe import han_sigma_plus
from tests.helpers import maybe_budget


def test_agarwal_singh_formulas_by_hand():
    # Theorem 3.1 / Corollary 3.2 (experts, N = 10, T = 1024): lambda = N log T / eps
    assert agarwal_singh_laplace_scale(10, 1024, 0.5) == pytest.approx(10 * 10 / 0.5)
    # Theorem A.1 at (1, 1e-6), T = 1e4, ||Y||_2 = sqrt(10)
    lt = math.log2(1e4)
    expected = math.sqrt(10) * lt * math.log(lt / 1e-6)
    assert agarwal_singh_gaussian_sigma(math.sqrt(10), 10_000, 1.0, 1e-6) == pytest.approx(expected)
    assert expected == pytest.approx(689.2175, abs=1e-3)


def test_ene_formulas_by_hand():
    T, n, L, eps, delta = 10_000, 5, 2.0, 0.5, 1e-6
    assert ene_laplace_scale(T, n, L, eps) == pytest.approx(100 * 5 * 2 * math.log2(T) / 0.5)
    lg = math.log((n + T) / delta)
    expected = (
        T**0.25
        * math.sqrt(n)
        * L
        * math.log2(T)
        * math.log(T / delta)
        / eps
        * (lg + math.sqrt((1 + 100 / n) * lg))
    )
    assert ene_gaussian_sigma(T, n, L, eps, delta) == pytest.approx(expected)


def test_han_sigma_plus_by_hand():
    # n = 2000: ceil(log2 n) + 1 = 12; kappa = 1, beta D + L = 2
    got = han_sigma_plus(2000, 1.0, 1.0, 1.0, 1.0, 1.0, 1 / 2000)
    assert got**2 == pytest.approx(8 * 144 * math.log(12 * 2000) * 4)


def test_tight_gaussian_tree_is_at_most_a_fifth_of_theorem_A1():
    """Issue must-show: (1, 1e-6), T = 1e4, d = 10, per-coordinate noise of the tree."""
    tight, paper = (
        calibrate_counter(
            "binary_tree",
            horizon=10_000,
            bounds=Box(0, 1, dim=10),
            budget=PrivacyBudget(1.0, 1e-6, c),
            noise="gaussian",
        )
        for c in ("tight", "paper")
    )
    ratio = tight.noise.scale / paper.noise.scale
    assert ratio <= 0.2
    assert ratio == pytest.approx(49.987 / 689.2175, rel=1e-3)
    # the tight sigma is exactly (1, 1e-6)-DP for sqrt(14) * sqrt(10) sensitivity
    assert gaussian_epsilon(1e-6, math.sqrt(14 * 10) / tight.noise.scale) == pytest.approx(1.0)
    # Theorem A.1 is valid (very conservative): the proven epsilon is far below 1
    assert paper.guarantee.epsilon < 0.1 and paper.guarantee.meets_request


def test_tight_laplace_uses_exact_l1_diameter_and_levels():
    cal = calibrate_counter(
        "binary_tree",
        horizon=8,
        bounds=Box(-1, 1, dim=3),
        budget=PrivacyBudget(2.0),
        noise="laplace",
    )
    assert cal.noise.scale == 4 * 6 / 2.0  # 4 levels x l1 diameter 6 / eps
    assert cal.guarantee.epsilon == 2.0 and cal.guarantee.delta == 0.0


def test_paper_laplace_reports_its_real_epsilon_and_warns():
    # [-1, 1]^N: ||Y||_1 = N but neighbouring losses differ by up to 2N in l1;
    # T = 1024 has 11 levels while the formula uses log2 T = 10.
    with pytest.warns(PrivacyWarning, match="proves only"):
        cal = calibrate_counter(
            "padded_tree",
            horizon=1024,
            bounds=Box(-1, 1, dim=5),
            budget=PrivacyBudget(1.0, 0.0, "paper", allow_weaker=True),
            noise="laplace",
        )
    assert cal.guarantee.epsilon == pytest.approx(2 * 11 / 10)
    assert not cal.guarantee.meets_request
    # [0, 1]^N with T = 1023: 10 levels vs log2(1023) = 9.9986: epsilon 1.00014
    with pytest.warns(PrivacyWarning):
        cal = calibrate_counter(
            "padded_tree",
            horizon=1023,
            bounds=Box(0, 1, dim=5),
            budget=PrivacyBudget(1.0, 0.0, "paper", allow_weaker=True),
            noise="laplace",
        )
    assert cal.guarantee.epsilon == pytest.approx(10 / math.log2(1023))


def test_tight_is_never_noisier_than_paper():
    for T in (2, 10, 1000, 10**5):
        for bounds in (Box(0, 1, dim=4), NormBall(1.0, 2, dim=4)):

            def cal(epsilon, calibration, T=T, bounds=bounds):
                return calibrate_counter(
                    "binary_tree",
                    horizon=T,
                    bounds=bounds,
                    budget=maybe_budget(epsilon, 1e-6, calibration),
                )

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                p = cal(1.0, "paper")
            assert cal(1.0, "tight").guarantee.meets_request
            # at the budget the paper *proves*, tight needs no more noise than the paper used
            t_same = cal(p.guarantee.epsilon, "tight")
            assert t_same.noise.scale <= p.noise.scale * (1 + 1e-6)  # up to the delta margin


def test_errors_name_what_is_wrong():
    b = Box(0, 1, dim=2)
    # Laplace noise meets a request with delta > 0 by pure DP
    pure = calibrate_counter(
        "binary_tree", horizon=8, bounds=b, budget=PrivacyBudget(1.0, 1e-5), noise="laplace"
    )
    assert pure.guarantee.delta == 0.0 and pure.guarantee.meets_request
    with pytest.raises(ValueError, match="only for the tree mechanisms"):
        calibrate_counter(
            "honaker",
            horizon=8,
            bounds=b,
            budget=PrivacyBudget(1.0, 1e-5, "paper", allow_weaker=True),
        )
    with pytest.raises(ValueError, match="supports noise"):
        calibrate_counter(
            "sqrt_factorization", horizon=8, bounds=b, budget=PrivacyBudget(1.0), noise="laplace"
        )
    with pytest.raises(ValueError, match="unknown mechanism"):
        calibrate_counter("tree", horizon=8, bounds=b, budget=PrivacyBudget(1.0, 1e-5))
    with pytest.raises(ValueError, match="calibration must be one of"):
        calibrate_counter(
            "binary_tree",
            horizon=8,
            bounds=b,
            budget=PrivacyBudget(1.0, 1e-5, "best"),
        )
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_counter("binary_tree", horizon=8, bounds=b, budget=PrivacyBudget(0.0, 1e-5))


def test_counter_carries_guarantee_and_bounds():
    c = make_counter(
        "sqrt_factorization", horizon=1024, bounds=Box(0, 1, dim=1), budget=PrivacyBudget(1.0, 1e-6)
    )
    assert c.privacy.epsilon == pytest.approx(1.0)
    assert c.privacy.rho is not None
    assert "analytic Gaussian" in c.privacy.derivation
    assert c.privacy.to_dict()["notion"].startswith("event-level")


def test_lemma_2_7_at_r_2_is_a_valid_gaussian_mechanism_for_epsilon_at_most_1():
    """At r = 2 the generalized Gaussian is N(0, sigma^2 I): exact accounting checks Lemma 2.7."""
    from dponline.privacy.generalized_gaussian import generalized_gaussian_sigma

    for eps in (0.01, 0.1, 0.5, 1.0):
        for delta in (1e-3, 1e-6, 1e-10):
            sigma = generalized_gaussian_sigma(1.0, eps, delta, kappa=1.0)
            assert gaussian_epsilon(delta, 1.0 / sigma) <= eps
    # ... and fails for large epsilon, which is why it is refused there
    sigma10 = math.sqrt(2 * math.log(1e6)) / 10
    assert gaussian_epsilon(1e-6, 1.0 / sigma10) > 10
    with pytest.raises(ValueError, match="epsilon <= 1"):
        generalized_gaussian_sigma(1.0, 2.0, 1e-6, kappa=1.0)


def test_generalized_gaussian_counter_calibration_by_hand():
    """Han et al. Thm 3.1 shape: per node Lemma 2.7 at (eps/k, delta/k), k = ceil(log2 n) + 1."""
    from dponline.privacy.generalized_gaussian import lq_regularity

    n, d, eps, delta = 1000, 50, 1.0, 1e-6
    bounds = Box(-0.5, 0.5, dim=d)
    reg = lq_regularity(math.inf, d)
    cal = calibrate_counter(
        "binary_tree",
        horizon=n,
        bounds=bounds,
        budget=maybe_budget(eps, delta, "paper"),
        noise="generalized_gaussian",
        regular_norm=math.inf,
    )
    k = math.ceil(math.log2(n)) + 1
    expected = math.sqrt(2 * reg.kappa * math.log(k / delta)) * 1.0 * k / eps  # l_inf diam 1
    assert cal.noise.scale == pytest.approx(expected / reg.norm_scale)
    assert cal.noise.r == pytest.approx(reg.r)
    assert cal.guarantee.epsilon == eps and cal.guarantee.meets_request
    # Eq. (2) of Theorem 3.1 is this with sensitivity 2 (beta D + L)
    from dponline.privacy.generalized_gaussian import generalized_gaussian_sigma
    from dponline.stochastic.private_frank_wolfe import han_sigma_plus

    assert han_sigma_plus(n, reg.kappa, 1.0, 1.0, 1.0, eps, delta) == pytest.approx(
        generalized_gaussian_sigma(2 * 2.0, eps / k, delta / k, reg.kappa)
    )
    with pytest.raises(ValueError, match="regular_norm"):
        calibrate_counter(
            "binary_tree",
            horizon=n,
            bounds=bounds,
            budget=maybe_budget(eps, delta),
            noise="generalized_gaussian",
        )


def test_generalized_gaussian_refuses_large_delta():
    from dponline.privacy.generalized_gaussian import generalized_gaussian_sigma

    with pytest.raises(ValueError, match=r"delta <= 0\.5"):
        generalized_gaussian_sigma(1.0, 1.0, 0.99, kappa=1.0)
