"""Exact Gaussian accounting against dp_accounting and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.privacy.accounting import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu_for,
    gaussian_sigma,
    laplace_epsilon,
    pld_gaussian_epsilon,
    zcdp_rho,
    zcdp_sigma,
)


@pytest.mark.parametrize("mu", [0.05, 0.2, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
def test_closed_form_matches_dp_accounting_pld(mu, delta):
    exact = gaussian_epsilon(delta, mu)
    pld = pld_gaussian_epsilon(1.0 / mu, delta)
    # PLD discretisation is pessimistic by at most ~1e-3 here
    assert exact <= pld + 1e-9
    assert pld - exact < 2e-3 + 1e-3 * exact


def test_composition_of_gaussians_is_one_gaussian_with_summed_squared_sensitivity():
    """The tree argument: L Gaussian releases with multiplier m = one with m / sqrt(L)."""
    L, m, delta = 14, 40.0, 1e-6
    composed = pld_gaussian_epsilon(m, delta, count=L)
    single = gaussian_epsilon(delta, math.sqrt(L) / m)
    assert single <= composed + 1e-9 and composed - single < 2e-3


@given(eps=st.floats(0.05, 8.0), delta=st.floats(1e-10, 1e-2))
@settings(max_examples=60, deadline=None)
def test_mu_for_is_the_largest_valid_mu(eps, delta):
    mu = gaussian_mu_for(eps, delta)
    assert gaussian_delta(eps, mu) <= delta
    assert gaussian_delta(eps, mu * (1 + 1e-5)) > delta  # tight up to the 1e-6 delta margin
    assert gaussian_epsilon(delta, mu) <= eps * (1 + 1e-9)


@given(eps=st.floats(0.01, 0.99), delta=st.floats(1e-12, 1e-2))
@settings(max_examples=60, deadline=None)
def test_analytic_sigma_beats_classical_gaussian_mechanism(eps, delta):
    # Dwork & Roth (2014) Theorem A.1: sigma = sqrt(2 ln(1.25/delta)) / eps suffices for eps < 1.
    classical = math.sqrt(2 * math.log(1.25 / delta)) / eps
    assert gaussian_sigma(1.0, eps, delta) <= classical
    assert gaussian_epsilon(delta, 1.0 / classical) <= eps


def test_known_value():
    # (1, 1e-6): sigma / Delta = 4.2247 (analytic Gaussian mechanism, Balle & Wang 2018)
    assert gaussian_sigma(1.0, 1.0, 1e-6) == pytest.approx(4.22468, abs=1e-4)
    assert gaussian_sigma(3.0, 1.0, 1e-6) == pytest.approx(3 * 4.22468, abs=3e-4)


def test_zcdp_and_laplace():
    assert zcdp_rho(2.0, 2.0) == 0.5
    assert zcdp_sigma(math.sqrt(11), 0.5) == pytest.approx(math.sqrt(11))
    assert laplace_epsilon(14 * 10, 140.0) == 1.0
    with pytest.raises(ValueError, match="rho"):
        zcdp_sigma(1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        gaussian_sigma(1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_sigma(1.0, -1.0, 1e-5)


def _delta_to_400_digits(eps: float, mu: float) -> float:
    """Balle & Wang's delta(epsilon) for the Gaussian mechanism, computed independently of the
    library in 400-digit arithmetic."""
    import mpmath

    with mpmath.workdps(400):
        e, m = mpmath.mpf(eps), mpmath.mpf(mu)
        return float(mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2))


@pytest.mark.parametrize(
    ("eps", "delta"),
    [
        (1e-6, 1e-12),
        (1e-3, 1e-30),
        (20.0, 1e-12),
        (1.0, 0.999),
        # tiny epsilon and delta: the closed form's two terms cancel to 1e-20 and beyond (in
        # double precision the returned mu gave a delta 1.00004x the request at (1e-8, 1e-20)
        # and 1.02x at (1e-8, 5.75e-297))
        (1e-8, 1e-20),
        (1e-8, 5.75e-297),
        (1e-7, 1e-100),
        (1e-4, 1e-250),
    ],
)
def test_extreme_parameters_never_overstate_privacy(eps, delta):
    """At the returned mu the true delta at epsilon (400 digits, independent of the library)
    does not exceed the request, and the reported epsilon is never below the true one."""
    mu = gaussian_mu_for(eps, delta)
    assert _delta_to_400_digits(eps, mu) <= delta
    assert _delta_to_400_digits(eps, mu * 1.001) > delta  # and mu is not needlessly small
    e = gaussian_epsilon(delta, mu)
    assert _delta_to_400_digits(e, mu) <= delta


def test_the_accounting_refuses_what_it_used_to_convert():
    """Strings, bools and out-of-range values are refused, not converted (from a review:
    gaussian_sigma(1, '1', '1e-6') gave 4.22, laplace_epsilon(-1, 1) gave -1, a sample larger
    than its population was taken as the whole population, PrivacyGuarantee(True, 0) held True)."""
    from dponline.privacy.accounting import laplace_epsilon, subsampled_gaussian_epsilon
    from dponline.privacy.arguments import ArgumentError
    from dponline.privacy.guarantee import PrivacyGuarantee

    for call in (
        lambda: gaussian_sigma(1.0, "1", 1e-6),
        lambda: gaussian_sigma(1.0, 1.0, "1e-6"),
        lambda: gaussian_sigma(True, 1.0, 1e-6),
        lambda: laplace_epsilon(-1.0, 1.0),
        lambda: laplace_epsilon(1.0, "2"),
        lambda: subsampled_gaussian_epsilon(1.0, population=10, sample=20, steps=1, delta=1e-6),
        lambda: subsampled_gaussian_epsilon(1.0, population=10, sample=5, steps=0, delta=1e-6),
        lambda: PrivacyGuarantee(True, 0.0),
        lambda: PrivacyGuarantee(1.0, 1.0),
        lambda: PrivacyGuarantee(1.0, 0.0, rho=-1.0),
    ):
        with pytest.raises(ArgumentError):
            call()
    assert laplace_epsilon(2.0, 0.0) == math.inf and laplace_epsilon(0.0, 0.0) == 0.0
    assert PrivacyGuarantee(np.float32(1.0), 0.0).epsilon == 1.0  # numpy numbers are numbers
    assert PrivacyGuarantee(math.inf, 0.0).epsilon == math.inf  # a voided guarantee


def test_zcdp_epsilon_is_valid_and_looser_than_the_renyi_conversion():
    """Bun & Steinke's rho + 2 sqrt(rho log(1/delta)) lies above Canonne, Kamath & Steinke's
    conversion (dp_accounting's RDP accountant on the Gaussian's alpha * rho curve): valid, and
    as loose as its docstring says; bad arguments are refused."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant

    from dponline.privacy.accounting import zcdp_epsilon
    from dponline.privacy.arguments import ArgumentError

    for rho, delta, quoted in ((0.01, 1e-6, 0.6217), (2.0, 1e-8, 13.386)):
        acc = rdp_privacy_accountant.RdpAccountant(orders=[1 + x / 100 for x in range(1, 5000)])
        acc.compose(dp_event.GaussianDpEvent(1 / math.sqrt(2 * rho)))  # rho = 1 / (2 nm^2)
        renyi = acc.get_epsilon(delta)
        assert renyi == pytest.approx(quoted, abs=2e-3)
        assert zcdp_epsilon(rho, delta) > renyi
    for bad in ((1.0, 0.0), (math.nan, 1e-6), ("1", 1e-6), (-1.0, 1e-6)):
        with pytest.raises(ArgumentError):
            zcdp_epsilon(*bad)


def test_zcdp_renyi_epsilon_is_the_renyi_conversion_and_between_its_neighbours():
    """The Renyi conversion of rho-zCDP: the values quoted in zcdp_epsilon's docstring (an
    independent route: dp_accounting's accountant on a Gaussian of the same rho, its own
    orders), never above Bun & Steinke's bound, and never below the exact epsilon of the
    Gaussian mechanism with that rho (which is exactly rho-zCDP, so no valid conversion can
    give less)."""
    from dponline.privacy.accounting import gaussian_epsilon, zcdp_epsilon, zcdp_renyi_epsilon

    assert zcdp_renyi_epsilon(0.01, 1e-6) == pytest.approx(0.6217, abs=2e-4)
    assert zcdp_renyi_epsilon(2.0, 1e-8) == pytest.approx(13.386, abs=2e-3)
    assert zcdp_renyi_epsilon(0.0, 1e-6) == 0.0
    for rho in (1e-6, 1e-3, 0.05, 0.5, 5.0, 50.0):
        for delta in (1e-12, 1e-6, 1e-2):
            renyi = zcdp_renyi_epsilon(rho, delta)
            assert renyi <= zcdp_epsilon(rho, delta)
            # the Gaussian of sensitivity 1 and sigma 1 / sqrt(2 rho): mu = sqrt(2 rho)
            assert renyi >= gaussian_epsilon(delta, math.sqrt(2.0 * rho)) - 1e-9


@settings(max_examples=60, deadline=None)
@given(log_epsilon=st.floats(-8.0, 1.5), log_delta=st.floats(-30.0, -1.0))
def test_zcdp_rho_for_inverts_the_renyi_conversion(log_epsilon, log_delta):
    """The returned rho's conversion never exceeds epsilon (a review found the unchecked start
    above it by up to 7.7e-7 relative at epsilon <= 1e-2 and tiny delta, where the start's
    difference of square roots cancelled), and rho is the largest to 1e-9."""
    from dponline.privacy.accounting import zcdp_renyi_epsilon, zcdp_rho_for

    epsilon, delta = 10.0**log_epsilon, 10.0**log_delta
    rho = zcdp_rho_for(epsilon, delta)
    assert zcdp_renyi_epsilon(rho, delta) <= epsilon
    assert zcdp_renyi_epsilon(rho * (1 + 1e-9), delta) > epsilon * (1 - 1e-9)
    ln_d = math.log(1 / delta)
    bun_steinke = epsilon**2 / (math.sqrt(ln_d + epsilon) + math.sqrt(ln_d)) ** 2
    assert rho >= bun_steinke * (1 - 1e-12)


def test_zcdp_rho_for_at_tiny_epsilon_ends_and_stays_valid():
    """Where epsilon is ~1e-16 log(1/delta) or below, the search once never ended (its start
    was 0): it now returns a rho whose conversion still meets epsilon (here through the
    conversion's total-variation branch, epsilon 0 when sqrt(1 - e^-rho) < delta), or refuses
    when no positive rho does."""
    from dponline.privacy.accounting import zcdp_renyi_epsilon, zcdp_rho_for

    for epsilon, delta in ((1e-17, 1e-6), (1e-20, 0.5), (1e-170, 1e-6), (1e-8, 1e-15)):
        rho = zcdp_rho_for(epsilon, delta)
        assert rho > 0 and zcdp_renyi_epsilon(rho, delta) <= epsilon
    with pytest.raises(ValueError, match="too small"):
        zcdp_rho_for(1e-300, 1e-200)
