"""Exact privacy accounting for the mechanisms dponline uses.

* Gaussian: a mechanism that adds N(0, sigma^2 I) to a query of l2 sensitivity Delta has privacy
  profile delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2) with
  mu = Delta / sigma (Balle & Wang 2018, Theorem 8: the analytic Gaussian mechanism). It is exact:
  no smaller sigma is (epsilon, delta)-DP for every query of that sensitivity. Any composition of
  Gaussian mechanisms whose squared sensitivities add up to Delta^2, adaptive or not, has the same
  profile (it is mu-GDP, Dong, Roth & Su 2022), so a tree or matrix mechanism with Gaussian noise
  is accounted as one Gaussian mechanism with the total l2 sensitivity of one round's value.
  :func:`pld_gaussian_epsilon` cross-checks this with dp_accounting's privacy loss distributions.
* zCDP: rho = Delta^2 / (2 sigma^2) (Bun & Steinke 2016, Proposition 1.6).
* Laplace: pure epsilon = Delta_1 / b, tight for the worst pair of inputs.
* zCDP to (epsilon, delta): rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016, Prop. 1.3).
* The subsampled Gaussian (:func:`subsampled_gaussian_epsilon`, :func:`least_noise_multiplier`):
  Renyi-DP accounting (dp_accounting's ``RdpAccountant``) of ``steps`` adaptive Gaussian
  releases, each on a uniformly random subset of ``sample`` out of ``population`` records,
  under replace-one neighbours (Wang, Balle & Kasiviswanathan 2019, Theorem 27, as implemented
  for ``SampledWithoutReplacementDpEvent``). A full batch (``sample == population``) is
  accounted exactly instead: ``steps`` Gaussian releases of sensitivity ratio ``1/m`` are one
  Gaussian mechanism of ratio ``sqrt(steps)/m`` (Balle & Wang 2018; Dong, Roth & Su 2022).
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache

from scipy import optimize, special

from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_nonnegative,
    checked_positive,
    checked_probability,
)

__all__ = [
    "RDP_ORDERS",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu_for",
    "gaussian_sigma",
    "laplace_epsilon",
    "least_noise_multiplier",
    "pld_gaussian_epsilon",
    "subsampled_gaussian_epsilon",
    "zcdp_epsilon",
    "zcdp_renyi_epsilon",
    "zcdp_rho",
    "zcdp_rho_for",
    "zcdp_sigma",
]


def _check_eps(epsilon: float) -> float:
    return checked_positive("epsilon", epsilon)


def _check_delta(delta: float, *, allow_zero: bool = False) -> float:
    d = checked_probability("delta", delta, closed=allow_zero)
    if d == 1.0:
        raise ArgumentError(f"delta must lie in [0, 1), got {delta!r}")
    return d


def gaussian_delta(epsilon: float, mu: float) -> float:
    """Exact delta(epsilon) of a Gaussian mechanism with sensitivity/sigma ratio ``mu``.

    Balle & Wang (2018), Theorem 8; computed in log space so that it stays accurate when the
    two terms nearly cancel.
    """
    mu = checked_nonnegative("mu", mu)
    if mu == 0:
        return 0.0
    eps = float(epsilon)
    a = special.log_ndtr(-eps / mu + mu / 2)
    b = eps + special.log_ndtr(-eps / mu - mu / 2)
    if a < _LOG_TINY:  # delta < e^a, below the least positive double: report that bound
        return _TINY
    # delta = e^a (1 - e^(b - a)): the rounding error of a and b (about _ROUNDING of their
    # size) is an error of that size in b - a, and a relative error of about that over the gap
    # in delta; where it could exceed 1e-9 (tiny epsilon and delta: the two terms nearly
    # cancel) delta is computed again in high precision
    if _ROUNDING * (abs(a) + abs(b) + 1.0) <= 1e-9 * min(a - b, 1.0):
        return float(math.exp(a) * -math.expm1(b - a))
    return _gaussian_delta_high_precision(eps, mu)


#: the absolute rounding error of log_ndtr relative to its value, with a safety factor of 4
_ROUNDING = 4.5e-16
#: the least positive double and its logarithm
_TINY = math.ulp(0.0)
_LOG_TINY = math.log(_TINY)


def _gaussian_delta_high_precision(epsilon: float, mu: float) -> float:
    """Balle & Wang's delta(epsilon) in arbitrary precision (mpmath): digits are doubled until
    the difference of the two terms is resolved; past 4,000 digits, the first term alone (an
    upper bound on delta, so never an overstatement of privacy)."""
    import mpmath  # needed only in this corner

    digits = 40
    while True:
        with mpmath.workdps(digits):
            e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
            first = mpmath.ncdf(-e / m + m / 2)
            gap = first - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
            # delta > 0 for every mu > 0; a gap within the working precision is not resolved
            if gap > first * mpmath.mpf(10) ** (20 - digits):
                return float(gap)
            if digits >= 4000:
                return float(first)
        digits *= 2


def gaussian_epsilon(delta: float, mu: float) -> float:
    """The least epsilon with gaussian_delta(epsilon, mu) <= delta."""
    delta = _check_delta(delta)
    if mu == 0:
        return 0.0
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, mu) > delta:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(f"no finite epsilon reaches delta={delta} at mu={mu}")
    eps = optimize.brentq(lambda e: gaussian_delta(e, mu) - delta, 0.0, hi, xtol=1e-13, rtol=1e-13)
    # report the upper side of the root (never under-report epsilon)
    while gaussian_delta(eps, mu) > delta:
        eps = eps * (1 + 1e-12) + 1e-15
    return float(eps)


def gaussian_mu_for(epsilon: float, delta: float) -> float:
    """The largest mu = Delta / sigma for which the Gaussian mechanism is (epsilon, delta)-DP."""
    epsilon = _check_eps(epsilon)
    delta = _check_delta(delta)
    hi = 1.0
    while gaussian_delta(epsilon, hi) < delta:
        hi *= 2.0
    mu = optimize.brentq(
        lambda m: gaussian_delta(epsilon, m) - delta, 1e-12, hi, xtol=1e-14, rtol=1e-14
    )
    # The closed form loses a little relative precision where its two terms nearly cancel
    # (tiny epsilon, tiny delta), and brentq may land a hair above the root: keep a relative
    # margin of 1e-6 on delta.
    while gaussian_delta(epsilon, mu) > delta * (1 - 1e-6):
        mu *= 1 - 1e-9
    return float(mu)


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Least sigma making N(0, sigma^2 I) noise (epsilon, delta)-DP for l2 sensitivity Delta.

    The analytic Gaussian mechanism (Balle & Wang 2018, Algorithm 1).
    """
    s = checked_nonnegative("sensitivity", sensitivity)
    return s / gaussian_mu_for(epsilon, delta)


def zcdp_rho(sensitivity: float, sigma: float) -> float:
    """rho of the Gaussian mechanism: Delta^2 / (2 sigma^2) (Bun & Steinke 2016, Prop. 1.6)."""
    if sigma <= 0:
        return math.inf if sensitivity > 0 else 0.0
    return float(sensitivity) ** 2 / (2.0 * float(sigma) ** 2)


def zcdp_sigma(sensitivity: float, rho: float) -> float:
    """sigma giving rho-zCDP for l2 sensitivity Delta: Delta / sqrt(2 rho)."""
    if not (rho > 0 and math.isfinite(rho)):
        raise ValueError(f"rho must be a finite positive number, got {rho!r}")
    return float(sensitivity) / math.sqrt(2.0 * rho)


def laplace_epsilon(l1_sensitivity: float, b: float) -> float:
    """Pure epsilon of Laplace(b) noise on a query of l1 sensitivity Delta_1: Delta_1 / b (no
    noise, b = 0: infinite unless nothing can change)."""
    sensitivity = checked_nonnegative("l1_sensitivity", l1_sensitivity)
    scale = checked_nonnegative("b", b)
    if scale == 0:
        return math.inf if sensitivity > 0 else 0.0
    return sensitivity / scale


def pld_gaussian_epsilon(
    noise_multiplier: float, delta: float, count: int = 1, value_discretization: float = 1e-4
) -> float:
    """epsilon(delta) of ``count`` composed Gaussian mechanisms, by dp_accounting's PLD.

    ``noise_multiplier`` is sigma / Delta of each mechanism. Used to cross-check the closed form.
    """
    from dp_accounting import dp_event, pld

    acc = pld.PLDAccountant(value_discretization_interval=value_discretization)
    acc.compose(dp_event.GaussianDpEvent(noise_multiplier), int(count))
    return float(acc.get_epsilon(delta))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """epsilon of rho-zCDP at delta: rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke, Prop 1.3).

    Valid, not the tightest: :func:`zcdp_renyi_epsilon` (Canonne, Kamath & Steinke 2020)
    gives less (0.622 against 0.753 at rho = 0.01, delta = 1e-6; 13.39 against 14.14 at
    rho = 2, delta = 1e-8); the calibrations use that one."""
    r = checked_nonnegative("rho", rho)
    d = _check_delta(delta)
    return r + 2.0 * math.sqrt(r * math.log(1.0 / d))


#: Renyi orders of the zCDP conversion: 1.01 to 1e5, geometric in alpha - 1 (every order gives
#: a valid bound; the optimum, near 1 + sqrt(log(1/delta) / rho), lies inside for rho >= 1e-7
#: at any delta >= 1e-300)
ZCDP_ORDERS: tuple[float, ...] = tuple(1.0 + 0.01 * 1.01**i for i in range(1622))


def zcdp_renyi_epsilon(rho: float, delta: float) -> float:
    """epsilon of rho-zCDP at delta through Renyi DP: rho-zCDP is (alpha, alpha rho)-RDP for
    every alpha > 1 (Bun & Steinke 2016, Definition 1.1), and (alpha, tau)-RDP implies
    (tau + log(1 - 1/alpha) - log(delta alpha) / (alpha - 1), delta)-DP (Canonne, Kamath &
    Steinke 2020, Proposition 12), minimised over :data:`ZCDP_ORDERS` by dp_accounting's
    ``compute_epsilon``. Never above :func:`zcdp_epsilon`'s bound (the tests check both, and
    that it is at least the exact epsilon of a Gaussian mechanism of the same rho)."""
    from dp_accounting.rdp import rdp_privacy_accountant

    r = checked_nonnegative("rho", rho)
    d = _check_delta(delta)
    if r == 0.0:
        return 0.0
    eps, _ = rdp_privacy_accountant.compute_epsilon(ZCDP_ORDERS, [a * r for a in ZCDP_ORDERS], d)
    return min(float(eps), r + 2.0 * math.sqrt(r * math.log(1.0 / d)))


@lru_cache(maxsize=128)
def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """The largest rho (to 1e-12 relative, from below) whose :func:`zcdp_renyi_epsilon` at
    ``delta`` is at most ``epsilon``: bisection (the conversion does not decrease with rho),
    started from Bun & Steinke's rho, e^2 / (sqrt(log(1/delta) + e) + sqrt(log(1/delta)))^2
    (that form has no cancellation), checked and halved until it qualifies. An epsilon so small
    that no positive rho qualifies in floating point is refused."""
    e = _check_eps(epsilon)
    d = _check_delta(delta)
    ln_d = math.log(1.0 / d)
    lo = e * e / (math.sqrt(ln_d + e) + math.sqrt(ln_d)) ** 2  # zcdp_epsilon(lo, d) = e
    lo = max(lo, sys.float_info.min)  # e^2 may underflow where the conversion still allows rho
    while lo > 0.0 and zcdp_renyi_epsilon(lo, d) > e:
        lo /= 2.0
    if not lo > 0.0:
        raise ValueError(
            f"epsilon = {e!r} is too small to be met by any zCDP bound at delta = {d!r} in "
            "floating point"
        )
    hi = 2.0 * lo
    while zcdp_renyi_epsilon(hi, d) <= e:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12 * lo:
        mid = 0.5 * (lo + hi)
        if zcdp_renyi_epsilon(mid, d) <= e:
            lo = mid
        else:
            hi = mid
    return lo


#: Renyi orders of the accountant. Fractional orders are interpolated by dp_accounting from the
#: neighbouring integers (Wang et al. Corollary 10); every order gives a valid bound, so the set
#: only trades tightness for speed. Integer orders 129..511 are left out: the exact bound costs
#: O(alpha^2) there and the optimal order of the settings we run is below 20.
RDP_ORDERS: tuple[float, ...] = (
    1.25,
    1.5,
    1.75,
    2.0,
    2.25,
    2.5,
    2.75,
    3.0,
    3.5,
    4.0,
    4.5,
    5.0,
    5.5,
    *[float(a) for a in range(6, 21)],
    24.0,
    28.0,
    32.0,
    40.0,
    48.0,
    56.0,
    64.0,
    80.0,
    96.0,
    128.0,
    512.0,
    1024.0,
)


@lru_cache(maxsize=512)
def subsampled_gaussian_epsilon(
    noise_multiplier: float, *, population: int, sample: int, steps: int, delta: float
) -> float:
    """epsilon at ``delta`` of ``steps`` adaptive Gaussian releases, each of a query computed on
    a uniformly random subset of ``sample`` out of ``population`` records, with noise standard
    deviation ``noise_multiplier`` times the query's replace-one l2 sensitivity.

    ``sample < population``: Renyi DP of the subsampled Gaussian without replacement under
    replace-one neighbours (Wang, Balle & Kasiviswanathan 2019, Theorem 27; dp_accounting's
    ``SampledWithoutReplacementDpEvent`` with ``NeighboringRelation.REPLACE_ONE``), composed over
    the steps and converted to (epsilon, delta) with the improved conversion of Canonne, Kamath &
    Steinke (2020) at the orders :data:`RDP_ORDERS`. Drawing one index uniformly with replacement
    (``sample == 1``) is the same as a subset of size one.

    ``sample == population``: the exact analytic Gaussian profile of the composition.
    """
    from dp_accounting import dp_event
    from dp_accounting.privacy_accountant import NeighboringRelation
    from dp_accounting.rdp import rdp_privacy_accountant

    nm = checked_nonnegative("noise_multiplier", noise_multiplier)
    population = checked_count("population", population)
    sample = checked_count("sample", sample)
    steps = checked_count("steps", steps)
    if sample > population:
        raise ArgumentError(
            f"sample ({sample}) must be at most population ({population}): a subset of it"
        )
    delta = _check_delta(delta)
    if nm == 0:
        return math.inf
    if sample == population:
        return gaussian_epsilon(delta, math.sqrt(steps) / nm)
    acc = rdp_privacy_accountant.RdpAccountant(
        orders=RDP_ORDERS, neighboring_relation=NeighboringRelation.REPLACE_ONE
    )
    event = dp_event.SampledWithoutReplacementDpEvent(
        population, sample, dp_event.GaussianDpEvent(nm)
    )
    acc.compose(dp_event.SelfComposedDpEvent(event, steps))
    return float(acc.get_epsilon(delta))


@lru_cache(maxsize=128)
def least_noise_multiplier(
    epsilon: float, *, population: int, sample: int, steps: int, delta: float
) -> float:
    """The least noise multiplier (up to a relative 1e-4) whose
    :func:`subsampled_gaussian_epsilon` is at most ``epsilon``; the accounted epsilon of the
    returned value lies in ``[epsilon - 2e-4, epsilon]``."""
    kw = dict(population=population, sample=sample, steps=steps, delta=delta)
    target = float(epsilon)

    def excess(log_nm: float) -> float:
        return min(subsampled_gaussian_epsilon(math.exp(log_nm), **kw), 1e6) - (target - 1e-4)

    lo, hi = -1.0, 1.0
    while excess(hi) > 0:
        lo, hi = hi, hi + 2.0
    while excess(lo) <= 0:
        lo, hi = lo - 2.0, lo
    root = optimize.brentq(excess, lo, hi, xtol=1e-6)
    nm = math.exp(root)
    while subsampled_gaussian_epsilon(nm, **kw) > target:
        nm *= 1 + 1e-6
    return nm
