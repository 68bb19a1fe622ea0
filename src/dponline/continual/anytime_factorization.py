"""Anytime (horizon-free) Toeplitz factorisations of the prefix-sum matrix, Gaussian noise.

Jacobsen & Fawaz (NeurIPS 2025, arXiv 2506.15018), Algorithm 1: with M the lower-triangular
all-ones matrix and LTToep(f) the lower-triangular Toeplitz matrix of f's Taylor coefficients,
choose a power series r(z) with r_0 = 1 and sum_k r_k^2 < infinity, and

    R = LTToep(r),   L = LTToep(l),   l(z) = 1 / ((1 - z) r(z)),

so that L R = M at *every* size n (the leading n x n blocks of lower-triangular Toeplitz
matrices multiply as the series do). The mechanism releases S_t + (L z)_t, z ~ N(0, s^2 I) per
coordinate: the first n releases are L_n (R_n x + z_n), a post-processing of the Gaussian
mechanism R_n x + z_n, whose l2 sensitivity to one round is at most

    Delta = (sum_{k >= 0} r_k^2)^(1/2)      (every column of R_n is a truncation of the first),

for every n at once. So s = Delta x (the input set's l2 diameter) / mu(epsilon, delta) gives
(epsilon, delta)-DP for every prefix length (Jacobsen & Fawaz, Theorem 1 and Corollary 1; the
analytic Gaussian mechanism, Balle & Wang 2018, for the least s; adaptively chosen inputs are
covered because a lower-triangular invertible factorisation with Gaussian noise is private
under adaptive continual release, Denisov et al. 2022, Theorem 2.1). The variance of release t
is s^2 sum_{k<t} l_k^2.

Streaming (Algorithm 1): at t = 2^m the counter draws z_{2^m} .. z_{2^(m+1)-1}, extends l to
2^(m+1) coefficients and computes that chunk of L z by one FFT convolution (O(t log t), so
O(log t) amortised per step); memory O(t d) per replica.

One person (a budget with ``participations`` k > 1, ``min_separation`` b): the first n releases
are the same post-processing, and R_n's sensitivity to k rounds at least b apart is bounded for
every n at once by :func:`person_sq_bounds` (ours; :class:`TaperedSqrt` only, whose
coefficients are non-negative and non-increasing with a proven tail).

Two choices of r (:class:`AnytimeStrategy`):

* :class:`JacobsenFawaz` (the paper's Equation 1): r(z) = f(z; gamma, delta),
  f(z; gamma, delta) = (1 - z)^(-1/2) lam(z)^gamma ((2/z) ln lam(z))^delta,
  lam(z) = (1/z) ln(1/(1 - z)), and l(z) = f(z; -gamma, -delta). Delta is finite iff
  gamma < -1/2; it is computed by Parseval from |f(e^{i theta})|^2 (:func:`jf_sensitivity`).
* :class:`TaperedSqrt` (ours): the square root's coefficients c_k = binom(2k, k)/4^k tapered
  by a weight, r_k = c_k w(ln(1 + k))^(1/2) with w = 1, then a/u, then a power tail in
  u = ln(1 + k) (see its docstring: the weight, the bound on Delta and its proof). Tuned so
  that its variance is within 1.4x of a square-root factorisation built for the true horizon
  at every t = 2^10 .. 2^20 (``dponline.experiments.anytime_table``).

Note (ours, checked in tests/continual/test_anytime_factorization.py): for gamma = -0.51,
delta = 0 the coefficients decay like r_k^2 ~ 1 / (pi k ln(k)^1.02), whose tail beyond k = 2^20
still holds about 15 of the total Delta^2 = 16.59 (Delta = 4.07); a quadrature of |f|^2 that
does not resolve theta down to exp(-exp(60)) misses it and reports Delta near 1.36.
"""

from __future__ import annotations

import functools
import itertools
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import fft as sp_fft
from scipy import integrate, special

from dponline.continual import power_series as ps
from dponline.continual.anytime import AnytimeCounter, checked_prefix_gaussian
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.privacy.accounting import gaussian_epsilon, gaussian_sigma, zcdp_rho
from dponline.privacy.arguments import checked_count
from dponline.privacy.bounds import InputBounds
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration
from dponline.privacy.guarantee import check_participation
from dponline.privacy.noise import GaussianNoise, NoiseDistribution
from dponline.rng import RngLike
from dponline.warn import warn_caller

__all__ = [
    "AnytimeFactorizationCounter",
    "AnytimeParticipation",
    "AnytimeStrategy",
    "JacobsenFawaz",
    "TaperedSqrt",
    "calibrate_anytime",
    "jf_sensitivity",
    "make_anytime_counter",
    "make_anytime_factorization",
    "person_sq_bounds",
]


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class AnytimeStrategy(ABC):
    """A series r(z) (r_0 = 1, square-summable) and its companion l(z) = 1/((1 - z) r(z)).

    Coefficients are computed for the next power of two and cached, so the streaming counter
    extends them in O(n log n) per doubling.
    """

    #: short name of the family
    family: ClassVar[str]

    def __init__(self) -> None:
        self._l = np.zeros(0)
        self._cum_l2 = np.zeros(0)

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """The parameters (part of a counter's saved configuration)."""

    @abstractmethod
    def _r_series(self, n: int) -> np.ndarray:
        """r_0..r_{n-1}."""

    def _l_series(self, n: int) -> np.ndarray:
        """l_0..l_{n-1} (default: the inverse of r, summed)."""
        return np.cumsum(ps.inverse(self._r_series(n), n))

    @abstractmethod
    def sensitivity(self) -> float:
        """An upper bound (exact up to the stated relative error) on (sum_k r_k^2)^(1/2)."""

    def participation(self, participations: int, min_separation: int) -> AnytimeParticipation:
        """Bounds on the sensitivity to one person's rounds at every prefix length; refused
        unless a strategy proves them (:class:`TaperedSqrt` does)."""
        raise ValueError(
            f"{type(self).__name__} has no proven sensitivity to one person's several rounds "
            "(the bound in dponline needs non-negative, non-increasing coefficients with a "
            "proven tail); use TaperedSqrt, or an event-level budget of epsilon / k for k "
            "rounds by group privacy"
        )

    def r_coefficients(self, n: int) -> np.ndarray:
        return self._r_series(checked_count("n", n))

    def l_coefficients(self, n: int) -> np.ndarray:
        """l_0..l_{n-1}, cached."""
        n = checked_count("n", n)
        if self._l.size < n:
            m = _pow2_at_least(n)
            self._l = self._l_series(m)
            self._cum_l2 = np.cumsum(self._l**2)
        return self._l[:n]

    def release_factors(self, n: int) -> np.ndarray:
        """sum_{k<t} l_k^2 for t = 1..n (Var(release t) / s^2)."""
        self.l_coefficients(n)
        return self._cum_l2[:n]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items() if k != "family")
        return f"{type(self).__name__}({args})"


# --------------------------------------------------------------------------- Jacobsen & Fawaz
def _jf_log_terms(n: int) -> tuple[np.ndarray, np.ndarray]:
    """log lam(z) and log((2/z) log lam(z)) to n terms, lam(z) = sum_m z^m / (m + 1)."""
    lam = 1.0 / np.arange(1, n + 2, dtype=float)
    log_lam = ps.log(lam, n + 1)  # constant term 0, z-coefficient 1/2
    q = 2.0 * log_lam[1:]  # (2/z) log lam(z), q_0 = 1
    return log_lam[:n], ps.log(q, n)


def _jf_series(n: int, gamma: float, delta: float) -> np.ndarray:
    """Coefficients of f(z; gamma, delta) (module docstring) to n terms."""
    log_lam, log_q = _jf_log_terms(n)
    exponent = gamma * log_lam + delta * log_q
    return ps.multiply(sqrt_coefficients(n), ps.exp(exponent, n), n)


def _jf_modulus_sq(theta: np.ndarray | float, gamma: float, delta: float) -> np.ndarray:
    """|f(e^{i theta}; gamma, delta)|^2 for 0 < theta <= pi, in a form without cancellation:
    1 - e^{i theta} = 2 sin(theta/2) e^{i (theta - pi)/2}, so ln(1/(1 - z)) = L with
    L = -ln(2 sin(theta/2)) + i (pi - theta)/2, lam = L e^{-i theta}, |lam| = |L| and
    ln lam = ln|L| + i (arg L - theta) (Re lam > 0 on the disc: lam(z) = int_0^1 dt/(1 - t z))."""
    th = np.asarray(theta, dtype=float)
    two_sin = 2.0 * np.sin(th / 2.0)
    re, im = -np.log(two_sin), (np.pi - th) / 2.0
    abs_l2 = re * re + im * im
    out = abs_l2**gamma / two_sin
    if delta != 0.0:
        arg = np.arctan2(im, re) - th
        log_abs = 0.5 * np.log(abs_l2)
        out = out * (4.0 * (log_abs**2 + arg**2)) ** delta
    return out


def _jf_tail_integrand(s: np.ndarray | float, gamma: float, delta: float) -> np.ndarray:
    """|f|^2 dtheta written in s = ln ln(1/theta) (theta = exp(-e^s)), for e^s >= 700: there
    theta < 1e-304 and theta / (2 sin(theta/2)) = 1, ln(1/(2 sin(theta/2))) = v, arg terms of
    order theta vanish in float64, so the integrand is v |v + i pi/2|^(2 gamma)
    |2 ln(v + i pi/2)|^(2 delta) with v = e^s, computed without forming v where it overflows."""
    s = np.asarray(s, dtype=float)
    eps = np.exp(-s)  # pi / (2 v) below is (pi/2) eps
    log_abs = 0.5 * np.log1p((np.pi / 2.0 * eps) ** 2)  # ln|1 + i pi/(2v)|
    out = np.exp((1.0 + 2.0 * gamma) * s + 2.0 * gamma * log_abs)
    if delta != 0.0:
        # ln(v + i pi/2) = s + ln|1 + i pi/(2v)| + i atan(pi/(2v))
        re = s + log_abs
        im = np.arctan(np.pi / 2.0 * eps)
        out = out * (4.0 * (re * re + im * im)) ** delta
    return out


@functools.lru_cache(maxsize=32)
def jf_sensitivity(gamma: float, delta: float) -> float:
    """Delta = (sum_k [z^k] f(z; gamma, delta)^2)^(1/2) for gamma < -1/2 (Parseval):

        Delta^2 = (1/pi) int_0^pi |f(e^{i theta})|^2 dtheta.

    The integrand behaves like 1 / (theta ln(1/theta)^(-2 gamma)) at 0, so most of the mass can
    sit at astronomically small theta; the integral is split as theta in [e^{-1}, pi] (direct),
    theta = exp(-e^s) for s in [0, ln 700] (exact integrand times theta e^s), and s >= ln 700
    (:func:`_jf_tail_integrand`, to s = 60 by quadrature, then
    int e^{(1 + 2 gamma) s} (2 s)^(2 delta) ds, whose neglected factors differ from 1 by less
    than 1e-25). Checked against the coefficient sums (damped and undamped) in the tests.
    """
    g, d = float(gamma), float(delta)
    if not g < -0.5:
        raise ValueError(f"the series is square-summable only for gamma < -1/2, got {gamma!r}")
    opts = {"limit": 500, "epsabs": 0.0, "epsrel": 1e-12}
    part1, _ = integrate.quad(
        lambda th: float(_jf_modulus_sq(th, g, d)), math.exp(-1.0), math.pi, **opts
    )

    def mid(s: float) -> float:
        v = math.exp(s)
        th = math.exp(-v)
        return float(_jf_modulus_sq(th, g, d)) * th * v

    s1 = math.log(700.0)
    part2, _ = integrate.quad(mid, 0.0, s1, **opts)
    s2 = 60.0
    a = -(1.0 + 2.0 * g)
    breaks = [s1, *[x for x in (5.0, 10.0, 20.0, 40.0) if s1 < x < s2], s2]
    part3 = sum(
        integrate.quad(lambda s: float(_jf_tail_integrand(s, g, d)), lo, hi, **opts)[0]
        for lo, hi in itertools.pairwise(breaks)
    )
    # beyond s2 the factors dropped from the tail integrand are 1 + O(e^{-2 s2}):
    # int_{s2}^inf e^{-a s} (2 s)^(2d) ds, in closed form for d = 0
    if d == 0.0:
        part4 = math.exp(-a * s2) / a
    else:
        part4, _ = integrate.quad(
            lambda s: math.exp(-a * s) * (2.0 * s) ** (2.0 * d), s2, math.inf, **opts
        )
    return math.sqrt((part1 + part2 + part3 + part4) / math.pi)


class JacobsenFawaz(AnytimeStrategy):
    """r = f(z; gamma, delta), l = f(z; -gamma, -delta): Jacobsen & Fawaz (2025), Equation 1
    and Algorithm 1. ``gamma = -1/2 - a`` with a > 0 (the paper recommends a = 0.01); ``delta``
    in {0, -gamma, -6 gamma / 5} in the paper's experiments."""

    family: ClassVar[str] = "jacobsen_fawaz"

    def __init__(self, gamma: float = -0.51, delta: float = 0.0) -> None:
        super().__init__()
        g, d = float(gamma), float(delta)
        if not (math.isfinite(g) and math.isfinite(d)):
            raise ValueError(f"gamma and delta must be finite, got {gamma!r}, {delta!r}")
        if not g < -0.5:
            raise ValueError(f"gamma must be < -1/2 for a finite sensitivity, got {gamma!r}")
        self.gamma, self.delta = g, d

    def config(self) -> dict[str, Any]:
        return {"family": self.family, "gamma": self.gamma, "delta": self.delta}

    def _r_series(self, n: int) -> np.ndarray:
        return _jf_series(n, self.gamma, self.delta)

    def _l_series(self, n: int) -> np.ndarray:
        return _jf_series(n, -self.gamma, -self.delta)

    def sensitivity(self) -> float:
        """The quadrature value of :func:`jf_sensitivity` (relative tolerance 1e-12), raised
        by a relative margin of 1e-9 so that it bounds the exact norm from above."""
        return jf_sensitivity(self.gamma, self.delta) * (1.0 + 1e-9)


# --------------------------------------------------------------------------- tapered sqrt
#: at least this many coefficients are summed exactly before the tail bound takes over
TAPER_EXACT_TERMS = 2**20


#: the methods that define the taper's coefficients (a subclass changing one must prove its tail)
_COEFFICIENT_METHODS = ("weight", "_r_series", "r_at", "r_window")


class TaperedSqrt(AnytimeStrategy):
    """r_k = c_k w(ln(1 + k))^(1/2), c_k = binom(2k, k)/4^k, with the weight (ours)

        w(u) = 1                         for u <= a,
               (a/u)^p                   for a <= u <= b,
               (a/b)^p (b/u)^(1 + q)     for u >= b,

    and l = cumsum of 1/r (l(z) = 1/((1 - z) r(z)), by Newton's inversion).

    Why this shape (ours, heuristic): where w varies slowly, r_k^2 ~ w/(pi k) and
    l_k^2 ~ 1/(w pi k), so Delta^2 ~ (1/pi) int w du and Var(t)/s^2 ~ (1/pi) int_0^{ln t} du/w,
    while the square root built for horizon t has (ln(t)/pi + 1.07)^2. Making the ratio
    Delta^2 Var(t) / (sum_{k<t} c_k^2)^2 equal on a range of t leads to w constant, then
    proportional to 1/u, then as small as the tail allows; q sets the tail: Var(t) grows like
    ln(t)^(2 + q) beyond e^b. The defaults (a, p, b, q) = (4.69, 1.007, 9.565, 2) minimise the
    largest ratio over t = 2^10, 2^12, ..., 2^20 (1.40; ``dponline.experiments.anytime_table``).

    Sensitivity (ours, proved here). Let K >= max(2^20, e^b) and V = ln(1 + K) >= b. Then

        S_K + W / pi  <=  sum_k r_k^2  <=  S_K + f(K) + (1 + 1/K) W / pi,

    with S_K = sum_{k<K} r_k^2 (summed exactly), f(x) = w(ln(1 + x)) / (pi x), and
    W = int_V^inf w(v) dv = (a/b)^p b^(1+q) V^(-q) / q. Proof: for k >= 1,
    1/(pi (k + 1/2)) <= c_k^2 <= 1/(pi (k + 1/4)) (Wallis' bounds on the central binomial
    coefficient), so c_k^2 <= 1/(pi k) and f is decreasing (w is non-increasing): the sum over
    k >= K of f(k) is at most f(K) + int_K^inf f(x) dx. Substituting v = ln(1 + x),
    int_K^inf f dx = (1/pi) int_V^inf w(v) e^v / (e^v - 1) dv <= (1 + 1/K) W / pi. For the lower
    bound, c_k^2 >= 1/(pi (k + 1/2)) >= 1/(pi (k + 1)) and w(ln(1 + x))/(x + 1) is decreasing,
    so the sum is at least int_K^inf w(ln(1+x))/(pi (1 + x)) dx = W / pi. The counter is
    calibrated to the upper bound, raised by :data:`FLOAT_MARGIN` for rounding (the gap is below
    1e-6 relative; the tests check it). A subclass that changes the coefficients must prove its
    own tail (override :meth:`tail_sq_bounds`); this one refuses to bound it.
    """

    family: ClassVar[str] = "tapered_sqrt"

    def __init__(self, a: float = 4.69, p: float = 1.007, b: float = 9.565, q: float = 2.0) -> None:
        super().__init__()
        vals = [float(v) for v in (a, p, b, q)]
        if not all(math.isfinite(v) for v in vals):
            raise ValueError(f"a, p, b, q must be finite, got {(a, p, b, q)!r}")
        a, p, b, q = vals
        if not (0.0 < a <= b <= 16.0 and p >= 0.0 and q > 0.0):
            raise ValueError(
                f"need 0 < a <= b <= 16, p >= 0 and q > 0 (a square-summable tail), got "
                f"a={a!r}, p={p!r}, b={b!r}, q={q!r}"
            )
        self.a, self.p, self.b, self.q = a, p, b, q

    def config(self) -> dict[str, Any]:
        return {"family": self.family, "a": self.a, "p": self.p, "b": self.b, "q": self.q}

    def weight(self, u: np.ndarray) -> np.ndarray:
        """w(u) (class docstring)."""
        u = np.asarray(u, dtype=float)
        safe = np.maximum(u, self.a)
        mid = (self.a / safe) ** self.p
        tail = (self.a / self.b) ** self.p * (self.b / np.maximum(u, self.b)) ** (1.0 + self.q)
        return np.where(u <= self.a, 1.0, np.where(u <= self.b, mid, tail))

    def _r_series(self, n: int) -> np.ndarray:
        u = np.log1p(np.arange(n, dtype=float))
        return sqrt_coefficients(n) * np.sqrt(self.weight(u))

    def r_at(self, k: np.ndarray) -> np.ndarray:
        """r_k at any indices: c_k = Gamma(k + 1/2) / (sqrt(pi) Gamma(k + 1)) by scipy's
        Pochhammer symbol (accurate to a few ulps at k = 1e12)."""
        k = np.asarray(k, dtype=float)
        c = special.poch(k + 1.0, -0.5) / math.sqrt(math.pi)
        return c * np.sqrt(self.weight(np.log1p(k)))

    def r_window(self, lo: int, hi: int) -> np.ndarray:
        """r_lo .. r_{hi-1} without the coefficients before them: c_lo by the Pochhammer symbol
        (as :meth:`r_at`), then the ratio recurrence of :func:`sqrt_coefficients` (off by at
        most 2 (hi - lo) 2^-53 relative)."""
        lo, hi = int(lo), int(hi)
        k = np.arange(lo + 1, hi, dtype=float)
        first = special.poch(lo + 1.0, -0.5) / math.sqrt(math.pi)
        c = np.concatenate([[first], first * np.cumprod((2.0 * k - 1.0) / (2.0 * k))])
        return c[: hi - lo] * np.sqrt(self.weight(np.log1p(np.arange(lo, hi, dtype=float))))

    def tail_start(self) -> int:
        """The least index from which :meth:`tail_sq_bounds` holds: ceil(e^b), so that
        ln(1 + k) >= b and the weight is the power tail there."""
        return max(1, math.ceil(math.exp(self.b)))

    def tail_sq_bounds(self, start: int) -> tuple[float, float]:
        """(lower, upper) bounds on sum_{k >= start} r_k^2, for start >= :meth:`tail_start`:
        W / pi and f(start) + (1 + 1/start) W / pi with V = ln(1 + start) (class docstring)."""
        changed = [
            m for m in _COEFFICIENT_METHODS if getattr(type(self), m) is not getattr(TaperedSqrt, m)
        ]
        if changed:
            raise TypeError(
                f"{type(self).__name__} changes the taper's coefficients ({', '.join(changed)}): "
                "the tail bound is proved for TaperedSqrt's weight; override tail_sq_bounds "
                "with a proof for yours"
            )
        start = checked_count("start", start)
        if start < self.tail_start():
            raise ValueError(
                f"the tail bound holds from k = {self.tail_start()} (ln(1 + k) >= b), got {start}"
            )
        v = math.log1p(start)
        w_tail = (self.a / self.b) ** self.p * self.b ** (1.0 + self.q) * v ** (-self.q) / self.q
        f_k = float(self.weight(np.array([v]))[0]) / (math.pi * start)
        return w_tail / math.pi, f_k + (1.0 + 1.0 / start) * w_tail / math.pi

    def sensitivity_bounds(self) -> tuple[float, float]:
        """(lower, upper) bounds on sum_k r_k^2 (class docstring)."""
        k_exact = max(TAPER_EXACT_TERMS, self.tail_start())
        s_k = float(np.sum(self._r_series(k_exact) ** 2))
        lower, upper = self.tail_sq_bounds(k_exact)
        return s_k + lower, (s_k + upper) * (1.0 + FLOAT_MARGIN)

    def sensitivity(self) -> float:
        return math.sqrt(self.sensitivity_bounds()[1])

    def participation(self, participations: int, min_separation: int) -> AnytimeParticipation:
        """Bounds on the squared l2 sensitivity of R (every prefix length at once) to one
        person's at most k rounds, any two at least b apart (ours; proof in
        :func:`person_sq_bounds`): r is non-negative and non-increasing (c_k decreases and
        w does not increase), which is what the proof needs."""
        return person_sq_bounds(self, participations, min_separation)


# --------------------------------------------------------------------------- one person
#: relative margin added to the upper bounds on sums of squared and lagged coefficients for
#: their floating-point error: the coefficients come from ratio recurrences over at most
#: K = max(2^20, e^16) terms (b <= 16), each off by at most 2 K 2^-53 < 2e-9 relative, and the
#: sums of non-negative terms add less than that again
FLOAT_MARGIN = 1e-8
#: lags d up to this have their head products sum_{j<K} r_j r_{j+d} computed exactly: by one
#: FFT over K + d coefficients, or window by window when there are at most PERSON_WINDOWS
PERSON_FFT_LAGS = 2**22
PERSON_WINDOWS = 8
#: longer lags bound the head chunk by chunk (r non-increasing): the two bounds lie within
#: 0.3% of each other at d = 2^22, closer beyond
PERSON_CHUNKS = 64


@dataclass(frozen=True)
class AnytimeParticipation:
    """Bounds on sup_n max_P ||sum_{i in P} R_n e_i||^2 for one person's pattern P (at most
    ``participations`` rounds, any two at least ``min_separation`` apart), over every prefix
    length n: ``upper`` calibrates the noise (its square root is the l2 factor, to be
    multiplied by the input set's l2 diameter), ``lower`` shows how close it is."""

    participations: int
    min_separation: int
    lower: float
    upper: float

    @property
    def factor(self) -> float:
        """The l2 factor: sqrt(upper)."""
        return math.sqrt(self.upper)

    def describe(self) -> str:
        return (
            f"one person's at most {self.participations} rounds at least "
            f"{self.min_separation} apart, at every prefix length: l2 factor {self.factor:.8g} "
            f"(its square between {self.lower:.8g} and {self.upper:.8g}; ours, "
            "dponline.continual.anytime_factorization.person_sq_bounds)"
        )


def person_sq_bounds(
    strategy: TaperedSqrt, participations: int, min_separation: int
) -> AnytimeParticipation:
    """The tapered factorisation's sensitivity to one person at every prefix length (ours).

    Let r be non-negative and non-increasing (the taper's r is), k the participations, b the
    separation, R_n the n x n lower-triangular Toeplitz matrix of r, so X = R_n^T R_n >= 0
    elementwise and the l2 sensitivity to the person is the input set's diameter times
    sqrt(max_P ||sum_{i in P} R_n e_i||^2) (:mod:`dponline.continual.participation`).

    1. For each n the maximum is attained by k rounds exactly b apart from round 1 (Kalinin &
       Lampert 2024, Theorem 2: the Toeplitz rule; directly, X_ij shrinks as the gap between
       i and j grows and as the later of them moves later), and equals sum_{i < n} s_i^2 with
       s_i = sum_{m < k, m b <= i} r_{i - m b} (fewer rounds where they do not fit in n).
    2. The terms are non-negative, so the value increases with n and its supremum is the
       series sum_{i >= 0} s_i^2. Expanded (non-negative terms, any order; k pairs at
       distance 0, 2 (k - g) ordered pairs at distance g b):
       sum_i s_i^2 = k A(0) + 2 sum_{g=1}^{k-1} (k - g) A(g b), A(d) = sum_{j >= 0} r_j r_{j+d}.
    3. A(0) = sum_j r_j^2 lies within :meth:`TaperedSqrt.sensitivity_bounds`. For d > 0,
       A(d) = H(d) + sum_{j >= K} r_j r_{j+d} with the head H(d) = sum_{j<K} r_j r_{j+d}
       (K = max(2^20, ceil(e^b)), b the taper's). The rest is at most
       sqrt(tail(K) tail(K + d)) (Cauchy-Schwarz) and at least tail(K + d) (r_j >= r_{j+d}),
       tail(m) = sum_{j >= m} r_j^2 bounded by :meth:`TaperedSqrt.tail_sq_bounds`. The head is
       summed exactly for lags up to :data:`PERSON_FFT_LAGS`; past them the head is cut into
       :data:`PERSON_CHUNKS` chunks [lo, hi) and r_{d+hi-1} <= r_{j+d} <= r_{d+lo} (r is
       non-increasing) bounds each chunk's part by the chunk's sum of r_j times r_{d+lo}
       (above) and r_{d+hi-1} (below).

    ``upper`` takes every upper bound (the sums' rounding covered by :data:`FLOAT_MARGIN`),
    ``lower`` every lower bound. The tests compare ``upper`` with brute force over every
    allowed pattern on small prefixes and both with the series summed far out. Cost: at most
    about a second (one FFT over up to 5.2e6 coefficients), cached by (strategy, k, b).
    """
    if not isinstance(strategy, TaperedSqrt):
        raise TypeError(f"strategy must be a TaperedSqrt, got {type(strategy).__name__}")
    k, b = check_participation(participations, min_separation)
    return _cached(strategy, ("person", k, b), lambda: _person_sq_bounds(strategy, k, b))


def _person_sq_bounds(strategy: TaperedSqrt, k: int, b: int) -> AnytimeParticipation:
    start = max(TAPER_EXACT_TERMS, strategy.tail_start())
    s_lower, s_upper = strategy.sensitivity_bounds()
    lower, upper = k * s_lower, k * s_upper
    if k == 1:
        return AnytimeParticipation(k, b, lower, upper)
    head = strategy.r_coefficients(start)
    lags = np.arange(1, k, dtype=np.int64) * b
    h_lower, h_upper = _head_products(strategy, head, lags)
    tail_k = strategy.tail_sq_bounds(start)[1]
    weights = 2.0 * (k - np.arange(1, k, dtype=float))
    for i, d in enumerate(lags.tolist()):
        far_lower, far_upper = strategy.tail_sq_bounds(start + d)
        lower += weights[i] * (h_lower[i] + far_lower)
        upper += weights[i] * (h_upper[i] + math.sqrt(tail_k * far_upper))
    return AnytimeParticipation(k, b, lower, upper * (1.0 + FLOAT_MARGIN))


def _head_products(
    strategy: TaperedSqrt, head: np.ndarray, lags: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds on H(d) = sum_{j < K} r_j r_{j+d} for each lag d, K = len(head)
    (:func:`person_sq_bounds`, step 3)."""
    big_k = head.size
    h_lower, h_upper = np.empty(lags.size), np.empty(lags.size)
    near = np.flatnonzero(lags <= PERSON_FFT_LAGS)
    if near.size > PERSON_WINDOWS:
        r = strategy.r_coefficients(big_k + int(lags[near[-1]]))
        n = sp_fft.next_fast_len(r.size, real=True)
        # circular correlation; j + d <= K - 1 + the longest lag < n, so nothing wraps
        corr = sp_fft.irfft(sp_fft.rfft(r, n) * np.conj(sp_fft.rfft(head, n)), n)
        h_lower[near] = h_upper[near] = corr[lags[near]]
    else:
        for i in near.tolist():
            d = int(lags[i])
            h_lower[i] = h_upper[i] = float(np.dot(head, strategy.r_window(d, d + big_k)))
    far = np.flatnonzero(lags > PERSON_FFT_LAGS)
    if far.size:
        # the head in PERSON_CHUNKS chunks [lo, hi): r_{d+hi-1} <= r_{j+d} <= r_{d+lo} there
        width = -(-big_k // PERSON_CHUNKS)
        lo = np.arange(0, big_k, width)
        hi = np.minimum(lo + width, big_k)
        sums = np.add.reduceat(head, lo)
        for part in np.array_split(far, -(-far.size // 4096)):
            d = lags[part].astype(float)[:, None]
            h_upper[part] = strategy.r_at(d + lo) @ sums
            h_lower[part] = strategy.r_at(d + hi - 1) @ sums
    return h_lower, h_upper


#: results of the strategies' costly bounds, by (class, parameters, question)
_CACHE: dict[tuple, Any] = {}


def _cached(strategy: AnytimeStrategy, question: tuple, compute: Any) -> Any:
    """``compute()``, remembered by the strategy's class and parameters (a subclass is never
    answered with its parent's value) and ``question``."""
    key = (type(strategy), tuple(sorted(strategy.config().items())), question)
    if key not in _CACHE:
        if len(_CACHE) >= 64:
            _CACHE.clear()
        _CACHE[key] = compute()
    return _CACHE[key]


def strategy_sensitivity(strategy: AnytimeStrategy) -> float:
    """The strategy's Delta, cached by its class and parameters."""
    return _cached(strategy, ("sensitivity",), strategy.sensitivity)


# --------------------------------------------------------------------------- the counter
def causal_convolution(z: np.ndarray, coef: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Rows ``lo .. hi - 1`` of the linear convolution of ``z`` (along its first axis) with
    ``coef``: (L z)_s = sum_j coef_(s-j) z_j. One real FFT of length n >= len(z) + len(coef) -
    1 - lo suffices: the circular convolution's row k then adds only the linear row k + n,
    which lies past the last linear row for every k >= lo, so the rows asked for are exact."""
    n = sp_fft.next_fast_len(z.shape[0] + coef.size - 1 - lo, real=True)
    spectrum = sp_fft.rfft(z, n=n, axis=0)
    spectrum *= sp_fft.rfft(coef, n=n).reshape((-1,) + (1,) * (z.ndim - 1))
    return sp_fft.irfft(spectrum, n=n, axis=0)[lo:hi].copy()


class AnytimeFactorizationCounter(AnytimeCounter):
    """Prefix sums over an unknown horizon by an anytime factorisation L R = M, released as
    S_t + (L z)_t with z drawn in doubling chunks (module docstring; Jacobsen & Fawaz 2025,
    Algorithm 1). ``strategy`` chooses r (default :class:`TaperedSqrt`)."""

    name: ClassVar[str] = "anytime_factorization"
    gaussian_only: ClassVar[bool] = True
    summary: ClassVar[str] = "anytime Toeplitz factorisation L R = M, no horizon (Gaussian)"

    def __init__(
        self,
        dim: int,
        noise: NoiseDistribution,
        *,
        strategy: AnytimeStrategy | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(dim, noise, **kwargs)
        self.strategy = strategy if strategy is not None else TaperedSqrt()
        if not isinstance(self.strategy, AnytimeStrategy):
            raise TypeError(f"strategy must be an AnytimeStrategy, got {self.strategy!r}")
        shape = (self.replicas, self.dim)
        self._prefix = np.zeros(shape)
        self._noise = np.zeros((0, *shape))  # z_1 .. z_drawn
        self._correlated = np.zeros((0, *shape))  # (L z)_s for s in the current chunk

    # ---- chunks: after t >= 1 steps, z_1..z_{2^(m+1)-1} are drawn, m = floor(log2 t), and the
    # current chunk is s = 2^m .. 2^(m+1) - 1
    @staticmethod
    def _drawn_for(t: int) -> int:
        return 0 if t == 0 else 2 ** (int(t).bit_length()) - 1

    def _extend(self) -> None:
        """Draw the next chunk z_{2^m} .. z_{2^(m+1)-1} and its part of L z (Algorithm 1)."""
        start = self._noise.shape[0] + 1  # 2^m
        end = 2 * start - 1
        z = self._noise_draw(start)
        self._noise = np.concatenate([self._noise, z], axis=0)
        l_coef = self.strategy.l_coefficients(end)
        self._correlated = causal_convolution(self._noise, l_coef, start - 1, end)
        self._say_when_state_outgrows_the_budget()

    def _say_when_state_outgrows_the_budget(self) -> None:
        """Warn once when the noise kept (every z drawn, O(t d)) first passes the memory budget
        the counter selection uses: it keeps growing for as long as the stream runs, which a
        deployment without a horizon must know (the BLT without a horizon keeps O(d))."""
        from dponline.continual.selection import MEMORY_BUDGET

        kept = self._noise.nbytes + self._correlated.nbytes
        if kept <= MEMORY_BUDGET or getattr(self, "_said_state", False):
            return
        self._said_state = True
        warn_caller(
            f"the tapered factorisation without a horizon keeps every noise draw: "
            f"{kept / 2**20:.0f} MiB after {self.t} rounds ({self.replicas} replica(s) x "
            f"{self.dim} coordinates), doubling with each doubling of the rounds and saved in "
            "every checkpoint; for a stream that runs on, mechanism='anytime_blt' (tight "
            "Gaussian noise) keeps O(d) numbers",
            UserWarning,
        )

    def _noise_draw(self, count: int) -> np.ndarray:
        return self.noise.sample(self._rng, (count, self.replicas, self.dim))

    def _step(self, x: np.ndarray) -> np.ndarray:
        if self.t > self._noise.shape[0]:
            self._extend()
        self._prefix = self._prefix + x
        chunk_start = (self._noise.shape[0] + 1) // 2
        return self._prefix + self._correlated[self.t - chunk_start]

    def _step_block(self, xs: np.ndarray, out: np.ndarray) -> None:
        """Chunk by chunk: the draws happen at the same rounds as for single steps, and the
        running sums are accumulated in the same order, so the releases are bit-identical."""
        pos, b = 0, xs.shape[0]
        while pos < b:
            if self.t + 1 > self._noise.shape[0]:
                self._extend()
            chunk_start = (self._noise.shape[0] + 1) // 2
            take = min(b - pos, self._noise.shape[0] - self.t)
            rows = xs[pos : pos + take]
            rows = np.broadcast_to(
                rows if rows.ndim == 3 else rows[:, None], (take, self.replicas, self.dim)
            )
            sums = np.cumsum(np.concatenate([self._prefix[None], rows], axis=0), axis=0)[1:]
            first = self.t + 1 - chunk_start
            np.add(sums, self._correlated[first : first + take], out=out[pos : pos + take])
            self._prefix = sums[-1].copy()
            self.t += take
            pos += take

    # ---- variances
    @property
    def sensitivity_factor(self) -> float:
        """Delta: the l2 norm of R's column (all of its infinitely many coefficients)."""
        return strategy_sensitivity(self.strategy)

    def variance(self, t: int) -> float:
        t = self._check_t(t)
        if t == 0:
            return 0.0
        return float(self.strategy.release_factors(t)[-1]) * self.noise.coordinate_variance(
            self.dim
        )

    def variances(self, n: int) -> np.ndarray:
        return self.strategy.release_factors(checked_count("n", n)) * (
            self.noise.coordinate_variance(self.dim)
        )

    # ---- state
    def _config(self) -> dict[str, Any]:
        return {**super()._config(), "strategy": self.strategy.config()}

    def _state_shapes(self, t: int) -> dict[str, tuple[int, ...]]:
        shape = (self.replicas, self.dim)
        drawn = self._drawn_for(t)
        return {
            "prefix": shape,
            "noise": (drawn, *shape),
            "correlated": ((drawn + 1) // 2, *shape),
        }

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"prefix": self._prefix, "noise": self._noise, "correlated": self._correlated}

    def _set_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self._prefix = arrays["prefix"]
        self._noise = arrays["noise"]
        self._correlated = arrays["correlated"]


# --------------------------------------------------------------------------- calibration
def calibrate_anytime(
    strategy: AnytimeStrategy, bounds: InputBounds, budget: PrivacyBudget
) -> Calibration:
    """The least Gaussian sigma for which every prefix of the anytime counter is
    (epsilon, delta)-DP for inputs in ``bounds`` (``tight`` only: the paper states its noise
    as O(sqrt(log(1/delta))/epsilon) Delta, not as a formula to reproduce).

    The first n releases are a post-processing of R_n x + z_n, a Gaussian mechanism of l2
    sensitivity at most Delta x diam_2 for every n (module docstring), so the analytic Gaussian
    mechanism's sigma for that sensitivity holds at every prefix length at once. A budget over
    one person (``participations`` k > 1) takes the strategy's bound on the sensitivity to the
    person's rounds at every prefix length instead (:meth:`AnytimeStrategy.participation`;
    ours, proved in :func:`person_sq_bounds` for :class:`TaperedSqrt`; other strategies refuse).
    """
    diam = checked_prefix_gaussian(
        budget,
        bounds,
        "the anytime factorisation's Gaussian noise",
        "calibration='paper' is not defined for the anytime factorisation (the paper gives its "
        "noise up to constants)",
    )
    if budget.is_user_level:
        person = strategy.participation(budget.participations, budget.min_separation)
        factor = person.factor
        sensitivity = (
            f"at most {factor:.8g} for one person's at most {person.participations} rounds at "
            f"least {person.min_separation} apart, at every n (ours: the Toeplitz rule and the "
            "taper's tail bound, dponline.continual.anytime_factorization.person_sq_bounds; "
            f"its square lies in [{person.lower:.8g}, {person.upper:.8g}])"
        )
    else:
        factor = strategy_sensitivity(strategy)
        sensitivity = f"at most Delta = {factor:.8g} (the norm of all of R's coefficients)"
    total = factor * diam
    sigma = gaussian_sigma(total, budget.epsilon, budget.delta)
    how = (
        f"anytime factorisation L R = M ({strategy!r}; Jacobsen & Fawaz 2025, Algorithm 1): "
        "for every prefix length n the releases are L_n (R_n x + z_n), a post-processing of "
        f"one Gaussian mechanism whose l2 sensitivity is {sensitivity} x l2 diameter "
        f"{diam:.6g}; least sigma {sigma:.6g} by the analytic Gaussian mechanism (Balle & Wang "
        "2018); the guarantee holds for every prefix length at once"
    )
    g = budget.prove(
        gaussian_epsilon(budget.delta, total / sigma),
        budget.delta,
        how,
        rho=zcdp_rho(total, sigma),
        per_person=budget.is_user_level,
    )
    return Calibration(GaussianNoise(sigma), g, "tight", AnytimeFactorizationCounter.name)


def make_anytime_counter(
    bounds: InputBounds,
    budget: PrivacyBudget,
    *,
    strategy: AnytimeStrategy | None = None,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
) -> AnytimeFactorizationCounter:
    """An anytime factorisation counter for inputs in ``bounds``, calibrated to ``budget``
    (:func:`calibrate_anytime`); ``strategy`` defaults to :class:`TaperedSqrt`."""
    strategy = strategy if strategy is not None else TaperedSqrt()
    cal = calibrate_anytime(strategy, bounds, budget)
    return AnytimeFactorizationCounter(
        bounds.dim,
        cal.noise,
        strategy=strategy,
        replicas=replicas,
        rng=rng,
        bounds=bounds,
        clip=clip,
        privacy=cal.guarantee,
    )


def make_anytime_factorization(
    bounds: InputBounds,
    budget: PrivacyBudget,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
    gamma: float = -0.51,
    delta: float = 0.0,
) -> AnytimeFactorizationCounter:
    """Jacobsen & Fawaz's Algorithm 1 with f(z; gamma, delta), calibrated to ``budget``."""
    return make_anytime_counter(
        bounds,
        budget,
        strategy=JacobsenFawaz(gamma, delta),
        replicas=replicas,
        rng=rng,
        clip=clip,
    )
