"""A diagonally rescaled square-root factorisation of the prefix-sum matrix (Gaussian noise only).

With S the square root of the prefix-sum matrix M (lower-triangular Toeplitz, coefficients
c_k = binom(2k, k) / 4^k, :mod:`dponline.continual.matrix_factorization`) and D a positive
diagonal matrix, M = B C with

    B = S D,    C = D^{-1} S,

for every D. The mechanism releases B (C x + z) = M x + S D z with z ~ N(0, s^2 I) per
coordinate. One round's value enters a column of C; column j has squared l2 norm
sum_{i >= j} c_{i-j}^2 / D_i^2, and row t of B has squared norm sum_{i <= t} c_{t-i}^2 D_i^2, so
with u_i = D_i^2 and K the lower-triangular Toeplitz matrix of the c_k^2,

    l2 sensitivity factor^2 = max_j (K^T u^{-1})_j,    Var(release t) = s^2 (K u)_t.

D = I is the square root itself. Henzinger, Kalinin & Upadhyay (arXiv 2509.14334, "normalized
square root") show that a rescaled square root brings the factorisation norm from
ln(T)/pi + 1.066 down to at most ln(T)/pi + 0.846 + o(1); their D was not available to us, so
ours is found numerically (our construction and derivation):

*The problem is convex* (ours). With u = exp(w), the largest variance at unit sensitivity,
max_t (K e^w)_t x max_j (K^T e^{-w})_j, has a logarithm that is a sum of two maxima of
log-sum-exps of affine functions of w, hence convex in w: a local optimum is global. Optimising
all T coordinates (smoothed maxima, L-BFGS; :func:`optimal_log_scaling`) at T = 2^6 .. 2^16 gives
log D_i = -(a/2) g(i / T) with one shape g, increasing from g(0) = 0 to g(1) = 1 and
antisymmetric, g(1 - x) = 1 - g(x), and an amplitude a that falls slowly with T (0.21 at 2^6,
0.148 at 2^10, 0.103 at 2^16). :data:`PROFILE` tabulates g (computed at T = 4096, smoothed),
and :func:`scaled_sqrt_diagonal` minimises the exact objective over the amplitude alone
(bounded scalar search, about 25 evaluations of two FFT convolutions): at T = 1024 it gives
9.4995 at rho = 1/2 (sigma^2 = sensitivity^2) against 9.4985 for the full optimisation and
10.71 for the square root; 19.33 against 21.13 at T = 2^16. The result is never worse than the
square root (D = I is kept when it is not beaten), deterministic and cached per horizon. Above
:data:`OPTIMISED_UP_TO` rounds (where the search takes about 2 s) the amplitude found there is
used unchanged, checked against D = I by two evaluations, so that building a counter costs
O(T log T) at any horizon: it loses 0.1% at T = 2^18 (23.41 against 23.38 for the best
amplitude) and 0.3% at 2^20 (27.90 against 27.83; the square root: 25.38, 30.02).

Streaming: the T noise vectors are drawn when the counter is built and correlated once,
w = S (D z) by FFT convolution, as in :class:`SqrtFactorizationCounter`; a step costs O(d) and
the state is O(T d) per replica. Laplace noise is not offered (the l1 column norm grows like
sqrt(T)).
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import numpy as np
from scipy import optimize, signal
from scipy.fft import irfft, next_fast_len, rfft

from dponline.continual.base import ContinualCounter
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.continual.participation import (
    ParticipationSensitivity,
    best_separated_sum,
    check_pattern,
    effective_participations,
    weighted_toeplitz_participation_sq,
)
from dponline.privacy.noise import NoiseDistribution

__all__ = [
    "EXACT_L1_UP_TO",
    "OPTIMISED_UP_TO",
    "PROFILE",
    "ScaledSqrtCounter",
    "optimal_log_scaling",
    "scaled_sqrt_diagonal",
    "scaled_sqrt_objective",
]

#: g(x) at x = 0, 1/40, ..., 1/2 (the rest by g(1 - x) = 1 - g(x)); module docstring
_HALF_PROFILE = (
    0.0, 0.0153, 0.0330, 0.0512, 0.0700, 0.0894, 0.1095, 0.1302, 0.1517, 0.1739, 0.1971,
    0.2212, 0.2463, 0.2725, 0.2999, 0.3286, 0.3588, 0.3908, 0.4246, 0.4607, 0.5,
)  # fmt: skip
#: the shape g of log D on x = 0, 1/40, ..., 1 (module docstring)
PROFILE = np.concatenate([_HALF_PROFILE, 1.0 - np.array(_HALF_PROFILE[-2::-1])])
#: the largest horizon whose amplitude is optimised (about 2 s there); above it, reused
OPTIMISED_UP_TO = 2**16
_AMPLITUDE_BOUNDS = (0.0, 0.8)
#: the longest horizon whose l1 factor for one person is searched exactly (about 0.2 s there)
EXACT_L1_UP_TO = 2**16


class _ToeplitzSquares:
    """Products with K (lower-triangular Toeplitz, entries c_{t-i}^2) and its transpose by FFT,
    the kernel transformed once."""

    def __init__(self, horizon: int) -> None:
        self.n = int(horizon)
        self.size = next_fast_len(2 * self.n - 1, real=True)
        self.kernel = rfft(sqrt_coefficients(self.n) ** 2, self.size)

    def lower(self, u: np.ndarray) -> np.ndarray:
        """(K u)_t = sum_{i <= t} c_{t-i}^2 u_i."""
        return irfft(rfft(u, self.size) * self.kernel, self.size)[: self.n]

    def upper(self, v: np.ndarray) -> np.ndarray:
        """(K^T v)_i = sum_{t >= i} c_{t-i}^2 v_t."""
        return self.lower(v[::-1])[::-1]


def scaled_sqrt_objective(diagonal: np.ndarray) -> float:
    """The largest release variance at unit l2 sensitivity (rho = 1/2) of B = S D, C = D^-1 S:
    max_t (K u)_t x max_j (K^T u^-1)_j with u = D^2 (module docstring)."""
    u = np.asarray(diagonal, dtype=float) ** 2
    k = _ToeplitzSquares(u.size)
    return float(k.lower(u).max() * k.upper(1.0 / u).max())


def _profile(horizon: int) -> np.ndarray:
    x = (np.arange(int(horizon)) + 0.5) / int(horizon)
    return np.interp(x, np.linspace(0.0, 1.0, PROFILE.size), PROFILE)


@functools.lru_cache(maxsize=32)
def _best_amplitude(horizon: int) -> float:
    k = _ToeplitzSquares(horizon)
    g = _profile(horizon)

    def value(a: float) -> float:
        u = np.exp(-a * g)
        return float(k.lower(u).max() * k.upper(1.0 / u).max())

    found = optimize.minimize_scalar(
        value, bounds=_AMPLITUDE_BOUNDS, method="bounded", options={"xatol": 1e-5}
    )
    # keep the square root unless it is beaten beyond rounding (at T = 1 every D is optimal)
    return float(found.x) if found.fun < value(0.0) * (1.0 - 1e-9) else 0.0


@functools.lru_cache(maxsize=32)
def scaled_sqrt_diagonal(horizon: int) -> np.ndarray:
    """D_1 .. D_T of :class:`ScaledSqrtCounter` over ``horizon`` rounds: exp(-(a/2) g(i/T))
    with the amplitude a of least largest variance (module docstring). Read-only."""
    n = int(horizon)
    if n < 1:
        raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
    if n <= OPTIMISED_UP_TO:
        amplitude = _best_amplitude(n)
    else:
        amplitude = _best_amplitude(OPTIMISED_UP_TO)
    diagonal = np.exp(-0.5 * amplitude * _profile(n))
    if n > OPTIMISED_UP_TO:
        # D = I's objective is (sum_k c_k^2)^2: K 1 and K^T 1 are partial sums of the c_k^2,
        # largest over the whole horizon (no convolution needed)
        root = float(np.sum(sqrt_coefficients(n) ** 2)) ** 2
        if scaled_sqrt_objective(diagonal) > root:
            diagonal = np.ones(n)
    diagonal.setflags(write=False)
    return diagonal


@functools.lru_cache(maxsize=32)
def _variance_factors(horizon: int) -> np.ndarray:
    """(K u)_t = Var(release t) / s^2 for t = 1..T (read-only, cached: a learner asks every
    round)."""
    factors = _ToeplitzSquares(horizon).lower(scaled_sqrt_diagonal(horizon) ** 2)
    factors.setflags(write=False)
    return factors


def optimal_log_scaling(
    horizon: int, sharpness: tuple[float, ...] = (10, 30, 100, 300, 1e3, 3e3, 1e4, 3e4, 1e5)
) -> np.ndarray:
    """log D over all T coordinates (the convex problem of the module docstring), the maxima
    smoothed as log-sum-exps of growing ``sharpness``, each solved by L-BFGS from the last. How
    :data:`PROFILE` was computed (at T = 4096) and the reference the tests compare against;
    costs seconds at T = 2^12, a minute at 2^16."""
    k = _ToeplitzSquares(int(horizon))
    w = np.zeros(int(horizon))
    for beta in sharpness:

        def smoothed(w: np.ndarray, beta: float = beta) -> tuple[float, np.ndarray]:
            u = np.exp(w)
            a, b = k.lower(u), k.upper(1.0 / u)
            la, lb = np.log(a), np.log(b)
            ea, eb = np.exp(beta * (la - la.max())), np.exp(beta * (lb - lb.max()))
            value = la.max() + lb.max() + (math.log(ea.sum()) + math.log(eb.sum())) / beta
            grad = u * k.upper(ea / ea.sum() / a) - k.lower(eb / eb.sum() / b) / u
            return value, grad

        found = optimize.minimize(smoothed, w, jac=True, method="L-BFGS-B")
        w = found.x - found.x[0]
    return 0.5 * w


@functools.lru_cache(maxsize=32)
def _sensitivity_factors(n: int) -> tuple[float, float]:
    """(l1, l2) of C = D^-1 S's largest columns (cached: a calibration asks twice, and each
    costs FFTs over the horizon, 3.3 s at 4 x 10^6 rounds)."""
    c = sqrt_coefficients(n)
    inverse = 1.0 / scaled_sqrt_diagonal(n)
    l2 = math.sqrt(float(_ToeplitzSquares(n).upper(inverse**2).max()))
    l1 = float(signal.fftconvolve(inverse[::-1], c)[:n].max())
    return l1, l2


class ScaledSqrtCounter(ContinualCounter):
    """Prefix sums through the rescaled square root M = (S D)(D^-1 S) (module docstring)."""

    name: ClassVar[str] = "scaled_sqrt"
    summary: ClassVar[str] = "diagonally rescaled square root (after Henzinger et al. 2025)"
    state_arrays: ClassVar[tuple[str, ...]] = ("correlated", "prefix")
    supported_noise: ClassVar[frozenset[str]] = frozenset({"gaussian"})

    def __init__(self, horizon: int, dim: int, noise: NoiseDistribution, **kwargs: Any) -> None:
        super().__init__(horizon, dim, noise, **kwargs)
        diagonal = scaled_sqrt_diagonal(self.horizon)
        z = self._draw(self.horizon)  # z_1..z_T, shape (T, replicas, dim)
        z *= diagonal[:, None, None]
        kernel = sqrt_coefficients(self.horizon)[:, None, None]
        full = signal.fftconvolve(z, kernel, mode="full", axes=0)
        self._correlated = full[: self.horizon].copy()  # (S D z)_t
        del full, z
        self._prefix = np.zeros((self.replicas, self.dim))

    def _scale_drawn_noise(self, factor: float) -> None:
        self._correlated *= factor  # S D z is linear in the draws z

    @classmethod
    def sensitivity_factors(cls, horizon: int) -> tuple[float, float]:
        return _sensitivity_factors(int(horizon))

    @classmethod
    def participation_sensitivity_factors(
        cls, horizon: int, participations: int, min_separation: int
    ) -> ParticipationSensitivity:
        """One person's factors without materialising C = D^-1 S (so at every horizon): l2 by
        the row-weighted Toeplitz bound with w = D^-2 (:func:`~dponline.continual.
        participation.weighted_toeplitz_participation_sq`, ours), flagged exact only where it
        meets the value of a pattern or one round counts; l1 the best separated sum of column
        l1 norms (exact, C >= 0) up to :data:`EXACT_L1_UP_TO` rounds, k_eff times the largest
        past it (this counter takes Gaussian noise only, so l1 is informational)."""
        t, k, b = check_pattern(horizon, participations, min_separation)
        keff = effective_participations(t, k, b)
        c = sqrt_coefficients(t)
        inverse = 1.0 / scaled_sqrt_diagonal(t)
        upper, lower = weighted_toeplitz_participation_sq(c, inverse**2, keff, b)
        if keff == 1:  # one round: its largest column, exact (the bound's crude path, taken
            # when k_eff T passes 2^25, overstates it)
            upper = lower = cls.sensitivity_factors(t)[1] ** 2
        exact = upper <= lower * (1.0 + 1e-8)
        col_l1 = signal.fftconvolve(inverse[::-1], c)[:t][::-1]  # sum_q c_q / D_{j+q}
        if t <= EXACT_L1_UP_TO or keff == 1:
            l1, l1_exact = float(best_separated_sum(col_l1, keff, b)), True
        else:
            l1, l1_exact = keff * float(col_l1.max()), False
        how = (
            "rescaled Toeplitz rule: each term of C^T C at its pattern's least gap, its "
            f"largest over later rounds (ours; a pattern b apart reaches {lower:.6g} of "
            f"{upper:.6g} squared)"
        )
        return ParticipationSensitivity(
            t, k, b, keff, l1, math.sqrt(upper), l1_exact, bool(exact), how
        )

    @classmethod
    def draws_per_step(cls, horizon: int) -> int:
        return int(horizon)

    @classmethod
    def strategy_matrix(cls, horizon: int) -> np.ndarray:
        """C = D^-1 S: row i is draw i, column j round j."""
        n = int(horizon)
        c = sqrt_coefficients(n)
        lags = np.subtract.outer(np.arange(n), np.arange(n))
        root = np.where(lags >= 0, c[np.clip(lags, 0, None)], 0.0)
        return root / scaled_sqrt_diagonal(n)[:, None]

    @classmethod
    def _variance_factors(cls, horizon: int) -> np.ndarray:
        return _variance_factors(int(horizon))

    def variance(self, t: int) -> float:
        t = self._check_t(t)
        if t == 0:
            return 0.0
        return float(self._variance_factors(self.horizon)[t - 1]) * self.noise.coordinate_variance(
            self.dim
        )

    @classmethod
    def release_variances(cls, horizon: int, noise: NoiseDistribution, dim: int) -> np.ndarray:
        return cls._variance_factors(horizon) * noise.coordinate_variance(dim)

    def _step(self, x: np.ndarray) -> np.ndarray:
        self._prefix += x
        return self._prefix + self._correlated[self.t - 1]

    def _step_block(self, xs: np.ndarray, out: np.ndarray) -> None:
        """The correlated noise is drawn ahead: a block adds its slice to the running sums."""
        b = xs.shape[0]
        sums = self._prefix + np.cumsum(xs if xs.ndim == 3 else xs[:, None], axis=0)
        np.add(sums, self._correlated[self.t : self.t + b], out=out)
        self._prefix = sums[-1].copy()
        self.t += b
