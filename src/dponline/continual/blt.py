"""Buffered linear Toeplitz (BLT) factorisations of the prefix-sum matrix (Gaussian noise only).

A BLT (Dvijotham, McMahan, Pillutla, Steinke & Thakurta 2024) is a lower-triangular Toeplitz
matrix C whose coefficients are a short sum of geometric sequences:

    c_0 = 1,   c_k = sum_{i=1}^{n} omega_i theta_i^(k-1)   (k >= 1),

so that its generating function c(z) = 1 + sum_i omega_i z / (1 - theta_i z) is rational of
degree n. The mechanism factorises the prefix-sum matrix A = B C with B = A C^{-1} and releases

    B (C x + z) = A x + A C^{-1} z,      z ~ N(0, s^2 I) per coordinate,

the noise of a release being the running sum of u = C^{-1} z. Since C u = z,

    u_t = z_t - sum_i omega_i h_i(t),   h_i(t + 1) = theta_i h_i(t) + u_t,   h_i(1) = 0,

so a step costs O(n d) and the state is n buffers of d numbers (plus the running sums): the
memory does not grow with T, where the square-root factorisation holds T noise vectors.

Privacy: one round's value enters the column of C (everything else is post-processing), of l2
norm sqrt(sum_{k<T} c_k^2) (the first column is the longest), which is the l2 sensitivity
factor. Variance: with b the coefficients of 1 / c(z) and beta_m = b_0 + ... + b_m,

    Var(release t) = s^2 sum_{m<t} beta_m^2,

exactly. Both sums come from geometric series, in O(n^3) operations whatever T
(:meth:`BLTParameters.closed_form_sums`): sum_{k<T} c_k^2 = 1 + sum_{i,j} omega_i omega_j
(1 - (theta_i theta_j)^(T-1)) / (1 - theta_i theta_j); and u = C^{-1} z runs the recursion above,
h(t + 1) = A h(t) + z_t 1 with A = diag(theta) - 1 omega^T, so b_0 = 1 and b_t = sum_i w_i
rho_i^(t-1) with rho_i the eigenvalues of A (the reciprocals of c's zeros, complex in conjugate
pairs) and w_i = -(omega^T V)_i (V^{-1} 1)_i, V its eigenvectors; then beta_m = G - sum_i a_i
rho_i^m with a_i = w_i / (1 - rho_i) and G = 1 + sum_i a_i, whose squares sum to T G^2 - 2 G
sum_i a_i (1 - rho_i^T) / (1 - rho_i) + sum_{i,j} a_i a_j (1 - (rho_i rho_j)^T) / (1 - rho_i
rho_j). The coefficients themselves are computed from the same sums of powers. Expanding c(z)
into polynomial coefficients and filtering, as this module did before, lost accuracy at long
horizons when the theta_i crowd near 1 (the sum of c_k^2 was 1.2e-4 low at 2^18 rounds: noise
7e-5 short of the sensitivity, relative); the sums of powers agree with the recursion run step
by step to 1e-11 (tests/continual/test_blt.py).

Parameters: :func:`optimise_blt` chooses (theta, omega) for a horizon by minimising the largest
release variance at unit sensitivity, (sum_{k<T} c_k^2)(sum_{m<T} beta_m^2), starting from a
sum-of-exponentials fit of the square root's coefficients c_k = binom(2k, k) / 4^k. The result is
cached per (horizon, buffers).

User level (one person, at most k rounds at least b apart; :mod:`dponline.continual.
participation`): C is Toeplitz, so its l2 sensitivity under the pattern is the Toeplitz rule's
(k_eff participations exactly b apart from round 1) when the coefficients c_k are nonnegative and
non-increasing, checked for every parameter set; otherwise the rule on the reverse running
maximum of |c|, an upper bound, which the sensitivity then says. ``optimise_blt(horizon,
buffers, participations, min_separation)`` minimises the largest release variance at unit
sensitivity *under the pattern*, (sens_pattern^2)(sum_{m<T} beta_m^2), starting from the single
participation optimum; for one participation (k_eff = 1) it is exactly the single-participation
optimisation. A counter whose ``privacy`` states a user-level unit is built with the parameters
optimised for that unit, and its calibration (``participation_sensitivity_factors``) measures
the same parameters.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import optimize, special

from dponline.continual.base import ContinualCounter
from dponline.continual.matrix_factorization import (
    sqrt_coefficients,
    toeplitz_matrix,
    toeplitz_participation,
)
from dponline.continual.participation import (
    ParticipationSensitivity,
    check_pattern,
    effective_participations,
    toeplitz_participation_sq,
)
from dponline.privacy.noise import NoiseDistribution
from dponline.threads import blas_limit

__all__ = ["BLTCounter", "BLTParameters", "BLTStream", "optimise_blt"]

#: buffers used by default: enough to come within a few per cent of the best Toeplitz strategy
#: at the horizons we measured (1e2 to 1e6; ``dponline mechanisms``)
DEFAULT_BUFFERS = 4
#: steps per block of :meth:`BLTCounter.step_block` (the block maps are BLOCK_STEPS^2 numbers)
BLOCK_STEPS = 32
#: past this horizon the square root's fit (the optimisation's start) reads a log-spaced subset
#: of FIT_POINTS of its coefficients: its T x n basis ran out of memory at 10^9 rounds
FIT_HORIZON = 2**22
FIT_POINTS = 4096


@dataclass(frozen=True, eq=False)
class BLTParameters:
    """theta (decays in (0, 1)) and omega (weights) of a BLT with c_0 = 1 (module docstring)."""

    theta: np.ndarray
    omega: np.ndarray

    def __post_init__(self) -> None:
        theta = np.asarray(self.theta, dtype=float).ravel()
        omega = np.asarray(self.omega, dtype=float).ravel()
        if theta.shape != omega.shape or theta.size == 0:
            raise ValueError(
                f"theta and omega must be non-empty and of one length, got {theta.shape} and "
                f"{omega.shape}"
            )
        if not (np.all(np.isfinite(theta)) and np.all((theta > 0) & (theta < 1))):
            raise ValueError(f"every theta must lie in (0, 1), got {theta}")
        if not np.all(np.isfinite(omega)):
            raise ValueError(f"omega must be finite, got {omega}")
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "omega", omega)

    @property
    def buffers(self) -> int:
        return int(self.theta.size)

    def filters(self) -> tuple[np.ndarray, np.ndarray]:
        """(numerator, denominator) of c(z) in ascending powers of the delay z."""
        den = np.array([1.0])
        for th in self.theta:
            den = np.convolve(den, [1.0, -th])
        num = den.copy()
        for i in range(self.buffers):
            part = np.array([1.0])
            for j, th in enumerate(self.theta):
                if j != i:
                    part = np.convolve(part, [1.0, -th])
            num[1:] += self.omega[i] * part  # omega_i z prod_{j != i} (1 - theta_j z)
        return num, den

    def block_maps(self, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The recursion of :class:`BLTCounter` over ``length`` steps as four matrices:
        with h the buffers before the block and z its draws (rows = steps),

            noise_sum increments  = A z + B h      (A: length x length, B: length x n),
            buffers after         = Q z + P h      (Q: n x length,      P: n x n).

        Built by running the step's own recursion on unit inputs (each draw alone, each
        buffer alone), so the block path is the step path's arithmetic regrouped."""
        n = self.buffers
        inputs = np.zeros((length, length + n))
        inputs[:, :length] = np.eye(length)
        h = np.zeros((n, length + n))
        h[:, length:] = np.eye(n)
        u = np.empty((length, length + n))
        for k in range(length):
            u[k] = inputs[k] - self.omega @ h
            h = self.theta[:, None] * h + u[k]
        inc = np.cumsum(u, axis=0)
        return inc[:, :length], inc[:, length:], h[:, :length], h[:, length:]

    def is_invertible(self) -> bool:
        """Whether 1 / c(z) is a stable filter (every zero of c outside the unit disc, i.e.
        every eigenvalue of A inside it, module docstring), so that the noise u = C^{-1} z stays
        bounded at every horizon."""
        return bool(np.all(np.abs(self._inverse_modes()[0]) < 1.0 / (1.0 + 1e-9)))

    def _inverse_modes(self) -> tuple[np.ndarray, np.ndarray]:
        """(rho, w): b_t = sum_i w_i rho_i^(t-1) for t >= 1 (module docstring); computed once
        per parameter set (read-only: a counter without a horizon asks every round)."""
        modes = self.__dict__.get("_modes")
        if modes is None:
            th, om = self.theta, self.omega
            rho, vecs = np.linalg.eig(np.diag(th) - np.outer(np.ones_like(th), om))
            w = -(om @ vecs) * np.linalg.solve(vecs, np.ones_like(th))
            rho.setflags(write=False)
            w.setflags(write=False)
            modes = (rho, w)
            object.__setattr__(self, "_modes", modes)  # a cache on a frozen value
        return modes

    def coefficients(self, n: int) -> np.ndarray:
        """c_0..c_{n-1}: 1, then sum_i omega_i theta_i^(k-1)."""
        k = np.arange(max(int(n) - 1, 0), dtype=float)
        c = np.zeros(int(n))
        c[0] = 1.0
        for th, om in zip(self.theta, self.omega, strict=True):
            c[1:] += om * th**k
        return c

    def inverse_coefficients(self, n: int) -> np.ndarray:
        """b_0..b_{n-1}, the coefficients of 1 / c(z) (the Toeplitz matrix C^{-1})."""
        rho, w = self._inverse_modes()
        k = np.arange(max(int(n) - 1, 0), dtype=float)
        b = np.zeros(int(n), dtype=complex)
        b[0] = 1.0
        for r, wi in zip(rho, w, strict=True):
            b[1:] += wi * r**k
        return b.real.copy()

    def closed_form_sums(self, n: int) -> tuple[float, float, float]:
        """(sum_{k<n} |c_k|, sum_{k<n} c_k^2, sum_{m<n} beta_m^2) from geometric series (module
        docstring), in O(buffers^3) whatever n (the first from the coefficients, O(n), when
        some omega is negative: the c_k may then change sign)."""
        n = int(n)
        th, om = self.theta, self.omega
        if np.all(om >= 0):  # c_k > 0 for k >= 1: sum |c_k| is a geometric series
            l1 = 1.0 + float(om @ (_one_minus_power(th, n - 1) / (1.0 - th)))
        else:  # weights of both signs (parameters given by hand): from the coefficients
            l1 = float(np.abs(self.coefficients(n)).sum())
        # (1 - q^(n-1)) / (1 - q), q = theta_i theta_l, both from log q = log theta_i + log
        # theta_l: 1 - q from the rounded product lost 3e-12 (relative) of the sum at thetas
        # 1.7e-6 below 1 (an independent review), 4e-10 at thetas of 2^28 rounds
        with np.errstate(divide="ignore"):  # an underflowed theta: log 0 = -inf, q = 0
            log_q = np.log(th)[:, None] + np.log(th)[None, :]
        head = -np.expm1(np.maximum((n - 1) * log_q, -745.0)) if n > 1 else np.zeros_like(log_q)
        sc = 1.0 + float(om @ (head / -np.expm1(log_q)) @ om)
        rho, w = self._inverse_modes()
        a = w / (1.0 - rho)
        g = 1.0 + a.sum()
        pq = rho[:, None] * rho[None, :]
        sb = (
            n * g * g
            - 2.0 * g * (a * (1.0 - rho**n) / (1.0 - rho)).sum()
            + ((a[:, None] * a[None, :]) * (1.0 - pq**n) / (1.0 - pq)).sum()
        )
        return l1, sc, float(sb.real)

    def sensitivity(self, n: int) -> float:
        """sqrt(sum_{k<n} c_k^2): the l2 norm of C's longest column at horizon n."""
        return math.sqrt(self.closed_form_sums(n)[1])

    def release_factors(self, n: int) -> np.ndarray:
        """sum_{m<t} beta_m^2 for t = 1..n (Var(release t) / s^2)."""
        beta = np.cumsum(self.inverse_coefficients(n))
        return np.cumsum(beta * beta)

    def max_variance(self, n: int) -> float:
        """The largest release variance at unit sensitivity, (sum c_k^2)(sum beta_m^2): the
        release variances grow with t."""
        _, sc, sb = self.closed_form_sums(n)
        return sc * sb

    def participation_sensitivity_sq(
        self, n: int, participations: int, min_separation: int
    ) -> tuple[float, bool]:
        """(sens^2, exact) of C over horizon n under the pattern (module docstring): in closed
        form when the coefficients are non-increasing (sum omega <= 1), else the Toeplitz rule
        on the coefficients (O(n))."""
        closed = self.pattern_sums(n, participations, min_separation)
        if closed is not None:
            return closed[1], True
        return toeplitz_participation_sq(self.coefficients(n), participations, min_separation)

    def pattern_sums(
        self, n: int, participations: int, min_separation: int
    ) -> tuple[float, float] | None:
        """(l1, l2^2) of k_eff rounds exactly b apart from round 1, the worst pattern of a
        Toeplitz C with nonnegative non-increasing coefficients (Kalinin & Lampert 2024,
        Theorem 2), in O(k_eff buffers^2) operations; None when the coefficients increase
        (c_1 = sum omega > 1 = c_0) or may change sign (a negative omega): the rule does not
        apply.

        With S_i = sum_{m < K, m b <= i} c_{i - m b} (K = k_eff), l2^2 = sum_{i < n} S_i^2 and l1
        = sum_{m < K} sum_{d < n - m b} c_d. Split S_i = D_i + G_i: D_i = 1 at i = m b (the c_0
        terms) and, for i in segment j (j b < i <= (j + 1) b, and one last segment past
        (K - 1) b) where M = min(K, j + 1) earlier rounds contribute, G_i = sum_l a_l theta_l^e
        with e = i - 1 - (M - 1) b >= 0 and a_l = omega_l (1 - theta_l^(M b)) / (1 - theta_l^b).
        Each segment's sum of G_i^2 is a geometric series in theta_l theta_l'; each D_i = 1
        (at the right end of segments 0 .. K - 2, where e = b - 1) adds 1 + 2 G_i."""
        t = int(n)
        b = int(min_separation)
        k = effective_participations(t, participations, b)
        th, om = self.theta, self.omega
        if float(om.sum()) > 1.0 or np.any(om < 0):  # c_1 > c_0, or c of either sign
            return None
        log_t = np.log(th)
        log_q = log_t[:, None] + log_t[None, :]
        one_minus_q = -np.expm1(log_q)
        # segments j = 0 .. K - 2 (M = j + 1, e = 0 .. len_j - 1) and the last (M = K)
        j = np.arange(k, dtype=float)
        lengths = np.minimum(b, t - 1 - j * b)  # rounds j b + 1 .. min((j + 1) b, t - 1)
        lengths[-1] = t - 1 - (k - 1) * b  # the last segment runs to the horizon
        counts = np.minimum(j + 1, k)
        a = om[None, :] * (-np.expm1(counts[:, None] * b * log_t)) / (-np.expm1(b * log_t))
        geo = -np.expm1(lengths[:, None, None] * log_q) / one_minus_q  # sum_e q^e, e < len
        sq = 1.0 + float(np.einsum("jl,jm,jlm->", a, a, geo))  # S_0 = c_0 = 1
        # D_i = 1 at i = (j + 1) b for j <= K - 2 within the horizon, where e = b - 1
        ends = (np.arange(k - 1) + 1) * b <= t - 1
        g_end = (a[: k - 1] * np.exp((b - 1) * log_t)[None, :]).sum(axis=1)
        sq += float(np.sum(ends * (1.0 + 2.0 * g_end)))
        # l1: column j = m b holds c_0 .. c_{n - 1 - m b}: 1 + sum_l omega_l (1 - theta_l^(len
        # - 1)) / (1 - theta_l) with len = n - m b
        rest = (t - np.arange(k) * b - 1).astype(float)
        l1 = float(k + np.sum(om[None, :] * -np.expm1(rest[:, None] * log_t) / -np.expm1(log_t)))
        return l1, sq

    def participation_max_variance(self, n: int, participations: int, min_separation: int) -> float:
        """The largest release variance at unit sensitivity under the pattern."""
        sq, _ = self.participation_sensitivity_sq(n, participations, min_separation)
        return sq * self.closed_form_sums(n)[2]


def _one_minus_power(x: np.ndarray, m: int) -> np.ndarray:
    """1 - x^m for x in [0, 1) and an integer m >= 0, accurate when x is near 1 (expm1 of
    m log x); x = 0 (an underflowed product of thetas) gives 1, or 0 when m = 0."""
    positive = x > 0.0
    logs = np.log(np.where(positive, x, 1.0))
    return np.where(positive, -np.expm1(m * logs), 1.0 if m > 0 else 0.0)


def _sqrt_fit(horizon: int, buffers: int) -> tuple[np.ndarray, np.ndarray]:
    """theta log-spaced in time scale from 1 to T, omega by non-negative least squares on the
    square root's coefficients c_1..c_{T-1} (relative error)."""
    if horizon > FIT_HORIZON:  # a log-spaced subset of c_1..c_{T-1}
        k = np.unique(np.geomspace(1.0, horizon - 1.0, FIT_POINTS).round())
        # c_k = binom(2k, k) / 4^k through the log-gamma function, exact to rounding
        target = np.exp(special.gammaln(2 * k + 1) - 2 * special.gammaln(k + 1) - k * np.log(4))
    else:
        k = np.arange(1, horizon, dtype=float)
        target = sqrt_coefficients(horizon)[1:]
    scales = np.geomspace(1.0, max(float(horizon), 2.0), buffers)
    theta = np.exp(-1.0 / scales)
    basis = theta[None, :] ** (k[:, None] - 1.0)
    omega, _ = optimize.nnls(basis / target[:, None], np.ones_like(target))
    return theta, np.maximum(omega, 1e-6)


def _unpack(x: np.ndarray) -> BLTParameters:
    n = x.size // 2
    return BLTParameters(1.0 / (1.0 + np.exp(-x[:n])), np.exp(x[n:]))


def optimise_blt(
    horizon: int,
    buffers: int = DEFAULT_BUFFERS,
    participations: int = 1,
    min_separation: int = 1,
) -> BLTParameters:
    """A BLT for ``horizon`` minimising its largest release variance at unit sensitivity, the
    sensitivity of one round (``participations=1``, the default) or of one person's at most k
    rounds at least b apart (module docstring). Deterministic and cached."""
    t = int(horizon)
    if t < 1 or buffers < 1:
        raise ValueError(f"horizon and buffers must be positive, got {horizon!r}, {buffers!r}")
    _, k, b = check_pattern(t, participations, min_separation)
    keff = effective_participations(t, k, b)
    if keff == 1:
        return _optimise_single(t, int(buffers))
    return _optimise_pattern(t, int(buffers), keff, b)


@functools.lru_cache(maxsize=64)
def _optimise_pattern(t: int, buffers: int, keff: int, b: int) -> BLTParameters:
    """Nelder-Mead on (logit theta, log omega) from the single-participation optimum, scoring
    the largest release variance at unit sensitivity under the pattern; the start is kept unless
    the result is invertible and better."""
    start = _optimise_single(t, buffers)
    x0 = np.concatenate([np.log(start.theta / (1.0 - start.theta)), np.log(start.omega)])

    def loss(x: np.ndarray) -> float:
        try:
            p = _unpack(x)
        except ValueError:
            return math.inf
        if not p.is_invertible():
            return 1e300
        value = p.participation_max_variance(t, keff, b)
        return math.log(value) if value > 0 and math.isfinite(value) else 1e300

    # from the single optimum 50 iterations per parameter come within 0.1% of 400 (T = 8 to
    # 1024, k_eff 2 to 8) at an eighth of the cost
    options = {"maxiter": 50 * x0.size, "xatol": 1e-6, "fatol": 1e-7}
    best = optimize.minimize(loss, x0, method="Nelder-Mead", options=options)
    result = _unpack(best.x)
    if not (
        result.is_invertible()
        and result.participation_max_variance(t, keff, b)
        <= start.participation_max_variance(t, keff, b)
    ):
        result = start
    return result


@functools.lru_cache(maxsize=64)
def _optimise_single(t: int, buffers: int) -> BLTParameters:
    """The single-participation optimum (module docstring), by Nelder-Mead on (logit theta,
    log omega) from the square root's fit; only invertible candidates count (an unstable
    inverse scores +inf)."""
    theta, omega = _sqrt_fit(max(t, 2), buffers)
    x0 = np.concatenate([np.log(theta / (1.0 - theta)), np.log(omega)])

    def loss(x: np.ndarray) -> float:
        try:
            p = _unpack(x)
        except ValueError:
            return math.inf
        if not p.is_invertible():
            return 1e300
        value = p.max_variance(t)
        return math.log(value) if value > 0 and math.isfinite(value) else 1e300

    start = _unpack(x0)
    # a loss evaluation costs O(buffers^3) at every horizon (the closed forms)
    options = {"maxiter": 400 * x0.size, "xatol": 1e-6, "fatol": 1e-9}
    best = optimize.minimize(loss, x0, method="Nelder-Mead", options=options)
    result = _unpack(best.x)
    if not (result.is_invertible() and result.max_variance(t) <= start.max_variance(t)):
        result = start
    return result


class BLTStream:
    """The BLT's noise stream (module docstring): n buffers, the running sums, a step in O(n d)
    and blocks of steps as matrices. Shared by :class:`BLTCounter` and the counter without a
    horizon (:class:`~dponline.continual.anytime_blt.AnytimeBLTCounter`); the host is a
    streaming counter (``replicas``, ``dim``, ``t``, ``_draw``)."""

    parameters: BLTParameters
    replicas: int
    dim: int
    t: int
    _draw: Any

    def _start_stream(self, parameters: BLTParameters) -> None:
        self.parameters = parameters
        if not self.parameters.is_invertible():
            raise ValueError("the BLT's inverse is unstable: its noise would grow without bound")
        self._buffers = np.zeros((self.parameters.buffers, self.replicas, self.dim))
        self._prefix = np.zeros((self.replicas, self.dim))
        self._noise_sum = np.zeros((self.replicas, self.dim))
        self._theta = self.parameters.theta[:, None, None]
        self._omega = self.parameters.omega[:, None, None]
        self._block_maps: dict[int, tuple[np.ndarray, ...]] = {}  # by block length

    def _step(self, x: np.ndarray) -> np.ndarray:
        z = self._draw()  # z_t, shape (replicas, dim)
        u = z - np.sum(self._omega * self._buffers, axis=0)
        self._buffers *= self._theta
        self._buffers += u
        self._noise_sum += u
        self._prefix += x
        return self._prefix + self._noise_sum

    def _step_block(self, xs: np.ndarray, out: np.ndarray) -> None:
        """Blocks of :data:`BLOCK_STEPS` rounds through the step's linear recursion as
        matrices (:meth:`BLTParameters.block_maps`): the same draws, in the same order, as
        single steps, and the same releases up to rounding."""
        r, d, n = self.replicas, self.dim, self.parameters.buffers
        # small products, many of them: extra BLAS threads only contend (dponline.threads)
        with blas_limit():
            pos = 0
            while pos < xs.shape[0]:
                b = min(BLOCK_STEPS, xs.shape[0] - pos)
                if b not in self._block_maps:
                    self._block_maps[b] = self.parameters.block_maps(b)
                a_z, b_h, q_z, p_h = self._block_maps[b]
                z = self._draw(b).reshape(b, r * d)
                h = self._buffers.reshape(n, r * d)
                noise_sums = self._noise_sum + (a_z @ z + b_h @ h).reshape(b, r, d)
                self._buffers = (q_z @ z + p_h @ h).reshape(n, r, d)
                rows = xs[pos : pos + b]
                sums = self._prefix + np.cumsum(rows if rows.ndim == 3 else rows[:, None], axis=0)
                np.add(sums, noise_sums, out=out[pos : pos + b])
                self._prefix, self._noise_sum = sums[-1].copy(), noise_sums[-1].copy()
                self.t += b
                pos += b


class BLTCounter(BLTStream, ContinualCounter):
    """Prefix sums released through a BLT factorisation (module docstring); ``parameters``
    default to :func:`optimise_blt` for the horizon and the unit of the ``privacy`` given (one
    round without it). Noise calibrated for a person's pattern fits the parameters optimised
    for that pattern: build the counter with that calibration's ``privacy`` (as
    :func:`~dponline.continual.factory.build_counter` does) or with its ``parameters``; built
    from the noise alone it runs the one-round BLT, whose sensitivity to the person can be
    larger (2.3x in squared l2 at T = 3, three rounds 1 apart)."""

    name: ClassVar[str] = "blt"
    summary: ClassVar[str] = "buffered linear Toeplitz factorisation, O(buffers x d) memory"
    state_arrays: ClassVar[tuple[str, ...]] = ("buffers", "prefix", "noise_sum")
    supported_noise: ClassVar[frozenset[str]] = frozenset({"gaussian"})

    def __init__(
        self,
        horizon: int,
        dim: int,
        noise: NoiseDistribution,
        *,
        parameters: BLTParameters | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(horizon, dim, noise, **kwargs)
        if parameters is None:
            # the parameters optimised for the unit its calibration measured
            # (participation_sensitivity_factors): one round unless the guarantee says one
            # person; a person by group privacy was calibrated for one round (its one_input)
            measured = self.privacy
            if measured is not None and measured.one_input is not None:
                measured = measured.one_input
            k = 1 if measured is None else measured.participations
            b = 1 if measured is None else measured.min_separation
            parameters = optimise_blt(self.horizon, DEFAULT_BUFFERS, k, b)
        self._start_stream(parameters)

    @classmethod
    def sensitivity_factors(cls, horizon: int) -> tuple[float, float]:
        l1, sc, _ = optimise_blt(int(horizon)).closed_form_sums(int(horizon))
        return l1, math.sqrt(sc)

    @classmethod
    def draws_per_step(cls, horizon: int) -> int:
        return int(horizon)

    @classmethod
    def strategy_matrix(cls, horizon: int) -> np.ndarray:
        """C, lower-triangular Toeplitz of the default (single-participation) BLT's
        coefficients."""
        return toeplitz_matrix(optimise_blt(int(horizon)).coefficients(int(horizon)))

    @classmethod
    def participation_strategy_matrix(
        cls, horizon: int, participations: int, min_separation: int
    ) -> np.ndarray:
        """C of the BLT optimised for the pattern."""
        t = int(horizon)
        params = optimise_blt(t, DEFAULT_BUFFERS, participations, min_separation)
        return toeplitz_matrix(params.coefficients(t))

    @classmethod
    def participation_sensitivity_factors(
        cls, horizon: int, participations: int, min_separation: int
    ) -> ParticipationSensitivity:
        """Of the BLT optimised for the pattern (the one a counter with that unit builds): the
        Toeplitz rule, exact when its coefficients are nonnegative and non-increasing (checked),
        else an upper bound, flagged (module docstring)."""
        t, k, b = check_pattern(horizon, participations, min_separation)
        params = optimise_blt(t, DEFAULT_BUFFERS, k, b)
        closed = params.pattern_sums(t, k, b)
        if closed is None:  # coefficients that increase somewhere: the O(T) upper bound
            return toeplitz_participation(
                params.coefficients, t, k, b, what="BLT optimised for the pattern; "
            )
        how = (
            "BLT optimised for the pattern; Toeplitz rule, participations exactly b apart from "
            "round 1 (Kalinin & Lampert 2024, Thm 2), in closed form"
        )
        keff = effective_participations(t, k, b)
        l1, sq = closed
        return ParticipationSensitivity(t, k, b, keff, l1, math.sqrt(sq), True, True, how)

    @classmethod
    def participation_release_variances(
        cls,
        horizon: int,
        noise: NoiseDistribution,
        dim: int,
        participations: int,
        min_separation: int,
    ) -> np.ndarray:
        t = int(horizon)
        params = optimise_blt(t, DEFAULT_BUFFERS, participations, min_separation)
        return params.release_factors(t) * noise.coordinate_variance(dim)

    @classmethod
    def participation_max_variance(
        cls,
        horizon: int,
        noise: NoiseDistribution,
        dim: int,
        participations: int,
        min_separation: int,
    ) -> float:
        """The last release's variance (the largest), from the closed form of its sum."""
        t = int(horizon)
        params = optimise_blt(t, DEFAULT_BUFFERS, participations, min_separation)
        return params.closed_form_sums(t)[2] * noise.coordinate_variance(dim)

    def _config(self) -> dict[str, Any]:
        return {
            **super()._config(),
            "theta": self.parameters.theta.tolist(),
            "omega": self.parameters.omega.tolist(),
        }

    def variance(self, t: int) -> float:
        """Release t's variance from the closed form of sum_{m<t} beta_m^2, O(buffers^2)
        whatever t (the O(t) sum cost DP-UCB, which reads it every round, O(T^2) in all)."""
        t = self._check_t(t)
        if t == 0:
            return 0.0
        return self.parameters.closed_form_sums(t)[2] * self.noise.coordinate_variance(self.dim)

    @classmethod
    def release_variances(cls, horizon: int, noise: NoiseDistribution, dim: int) -> np.ndarray:
        return optimise_blt(int(horizon)).release_factors(int(horizon)) * (
            noise.coordinate_variance(dim)
        )

    def variances(self) -> np.ndarray:
        return self.parameters.release_factors(self.horizon) * self.noise.coordinate_variance(
            self.dim
        )
