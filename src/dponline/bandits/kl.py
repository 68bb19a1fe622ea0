"""Bernoulli divergences and the confidence indices built on them, vectorised.

Every public function broadcasts its arguments (numpy rules), computes in float64, is exact at
the edges 0 and 1, emits no floating-point warning and refuses arguments outside its domain
(NaN included) with one :class:`~dponline.privacy.arguments.ArgumentError`:

* :func:`bernoulli_kl` kl(p, q) = p log(p/q) + (1-p) log((1-p)/(1-q)), with 0 log 0 = 0 and
  ``inf`` when q is 0 or 1 and p differs from it;
* :func:`kl_upper` / :func:`kl_lower`: max{q in [p, 1] : kl(p, q) <= level} and
  min{q in [0, p] : kl(p, q) <= level}, the KL-UCB index (Garivier & Cappé 2011; used by
  AdaP-KLUCB, Azize & Basu 2022, arXiv 2209.02570) and its lower counterpart, to about 1e-13
  absolute;
* :func:`d_eps`: the divergence of Azize, Wu, Honda, Orabona, Ito & Basu (arXiv 2505.05613),
  d_eps(x, y) = inf over z between x and y of eps |z - x| + kl(z, y), in closed form;
* :func:`d_eps_upper`: max{mu in [x, 1] : d_eps(x, mu) <= level}, the DP-KLUCB index of the
  same paper, in closed form but for one KL-UCB root.

The three solvers run every round of a simulation (replicas x arms entries), so they are
per-entry loops compiled with numba where it is installed (``dponline[fast]``, as in
:mod:`dponline.bandits.exp2_kernel`) and numpy expressions otherwise; both follow the same
formulas and stopping rule and agree to about 1e-15 (``tests/bandits/test_kl.py``).

**What was checked against what.** kl and its conventions are textbook. The definition
d_eps(x, y) = inf over z in [min(x, y), max(x, y)] of eps |z - x| + kl(z, y), the lower bound
sum_a Delta_a / d_eps(mu_a, mu*) (Theorem 1) and the DP-KLUCB index
max{mu : d_eps([mu~]_0^1, mu) <= log t / n} were read in a third-party summary of the NeurIPS
2025 version of arXiv 2505.05613, not in the paper's body (which could not be reached); the
paper's abstract, which was read, says that the quantity "smoothly interpolates between
Kullback-Leibler divergence and Total Variation distance, depending on the privacy budget",
which the definition does (limits below). Everything else here is ours and is checked
numerically in ``tests/bandits/test_kl.py``: the closed forms against brute-force minimisation
over fine grids of z and against bisection in high precision, and the limits eps -> inf (kl)
and eps -> 0 (eps |x - y|, i.e. eps times the TV distance of the two Bernoulli laws).

*Closed form of d_eps (ours).* For y in (0, 1), g(z) = eps |z - x| + kl(z, y) is convex in z.
For x < y (z in [x, y]), g'(z) = eps + logit(z) - logit(y) vanishes at
z0 = expit(logit(y) - eps), so the minimiser is max(x, z0): if z0 <= x, d_eps = kl(x, y);
otherwise, since logit(z0) = logit(y) - eps gives kl(z0, y) = -eps z0 - log(1 - y + y e^-eps),
d_eps(x, y) = -eps x - log(1 - y + y e^-eps) (the z0 terms cancel). For x > y the same steps
give z0 = expit(logit(y) + eps), d_eps = kl(x, y) when z0 >= x and otherwise
d_eps = -eps (1 - x) - log(y + (1 - y) e^-eps). At y = 1 (x < 1) only z = 1 has finite kl, so
d_eps = eps (1 - x); at y = 0, d_eps = eps x; both are the formulas' values there.

*DP-KLUCB index in closed form (ours).* For mu >= x, d_eps(x, mu) is continuous and strictly
increasing in mu (a larger mu adds values of z that each cost at least eps (mu - x) >=
d_eps(x, mu), and kl(z, mu) increases with mu for z < mu). The regime switches at
m1 = expit(logit(x) + eps): for mu <= m1, d_eps(x, mu) = kl(x, mu); for mu > m1,
d_eps(x, mu) = -eps x - log(1 - mu (1 - e^-eps)). At the switch, since
logit(m1) = logit(x) + eps, kl(x, m1) = log(1 - x + x e^eps) - eps x. Hence, for level >= 0,
max{mu : d_eps(x, mu) <= level} = kl_upper(x, level) if level <= kl(x, m1), and otherwise
(1 - e^-(level + eps x)) / (1 - e^-eps), which reaches 1 at level = eps (1 - x) = d_eps(x, 1).

*KL-UCB solver (ours).* The unknown is delta = log((1 - p) / (1 - q)) >= 0. Then
q - p = -(1 - p) expm1(-delta) and kl(p, q) = (1 - p) delta - p log1p((q - p) / p), both free
of cancellation near q = p and near q = 1. In delta, kl is increasing and convex, with first
derivative (q - p) / q and second derivative (1 - q) p / q^2. Halley's iteration starts from
the second-order root delta = sqrt(2 level p / (1 - p)) (a lower bound on the root, as the
second derivative decreases with delta) capped by three upper bounds on the root:
(level - p log p) / (1 - p) (from kl(p, q) >= -H(p) - (1 - p) log(1 - q)), Pinsker's
q <= p + sqrt(level / 2), and delta <= q_P sqrt(2 level / ((1 - q_P) p)) (from the second
derivative, q_P the Pinsker bound). It stops after at least _MIN_ITER steps once the last step
moved q by less than 1e-9 (convergence is cubic); the tests bound the error by 1e-13 on grids
spanning p in [1e-12, 1 - 1e-12] and level in [1e-20, 39]. Outside the solver: level >= 40
gives 1 (the root is above 1 - 1e-16, as kl(p, 1 - 1e-16) < 37 for every p); level <= 1e-26
gives p + sqrt(2 level p (1 - p)), which lies in [p, p + sqrt(level / 2)] as the root does
(Pinsker), so within 7.1e-14 of it; p <= 1e-200 gives the p = 0 value 1 - e^-level
(|kl(p, q) - kl(0, q)| < 1e-196 there, and dq / dkl <= 1 at the root).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import rel_entr

from dponline.privacy.arguments import ArgumentError, checked_real_array

__all__ = ["HAVE_NUMBA", "bernoulli_kl", "d_eps", "d_eps_upper", "kl_lower", "kl_upper"]

try:  # numba is an optional extra: dponline[fast]
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

HAVE_NUMBA = numba is not None

#: Halley's iteration stops once the last step moved q by less than this, after at least
#: _MIN_ITER steps (convergence is cubic, so the error left is of order the step's cube).
_STEP_TOL = 1e-9
_MIN_ITER = 2
#: Safety cap on the iterations (the worst case in tests/bandits/test_kl.py is 4).
_MAX_ITER = 60
#: From this level on the KL-UCB index is 1 to within 1e-16 (module docstring).
_LEVEL_ONE = 40.0
#: Up to this level the KL-UCB index is the second-order root, within 7.1e-14 (module docstring).
_LEVEL_TINY = 1e-26
#: Up to this p the KL-UCB index is that of p = 0 (module docstring).
_P_TINY = 1e-200


# ---------------------------------------------------------------------------------------------
# argument checks


def _unit(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array with every entry in [0, 1] (NaN refused)."""
    if type(value) is np.ndarray and value.dtype == np.float64:
        arr = value
    else:
        arr = checked_real_array(name, value, finite=False)
    if not ((arr >= 0.0) & (arr <= 1.0)).all():
        raise ArgumentError(f"{name} must lie in [0, 1], got {_show(arr)}")
    return arr


def _nonneg(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array with every entry in [0, inf] (NaN refused)."""
    if type(value) is np.ndarray and value.dtype == np.float64:
        arr = value
    else:
        arr = checked_real_array(name, value, finite=False)
    if not (arr >= 0.0).all():
        raise ArgumentError(f"{name} must be >= 0 (inf allowed, NaN not), got {_show(arr)}")
    return arr


def _show(arr: np.ndarray) -> str:
    flat = np.ravel(arr)
    return repr(flat.tolist()) if flat.size <= 8 else f"an array of shape {arr.shape}"


def _flat(*arrays: np.ndarray) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """The broadcast shape and each array broadcast to it, flat and contiguous."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return shape, [np.ascontiguousarray(np.broadcast_to(a, shape)).ravel() for a in arrays]


# ---------------------------------------------------------------------------------------------
# per-entry kernels (compiled with numba when installed)


def _kl_scalar(p: float, q: float) -> float:
    if p == q:
        return 0.0
    out = 0.0
    if p > 0.0:
        if q == 0.0:
            return math.inf
        out += p * (math.log(p) - math.log(q))
    if p < 1.0:
        if q == 1.0:
            return math.inf
        out += (1.0 - p) * (math.log1p(-p) - math.log1p(-q))
    return max(out, 0.0)


def _upper_scalar(p: float, level: float) -> float:
    if level == 0.0:
        return p
    if p == 1.0 or level >= _LEVEL_ONE:
        return 1.0
    if p <= _P_TINY:
        return -math.expm1(-level)
    if level <= _LEVEL_TINY:
        return min(p + math.sqrt(2.0 * level * p * (1.0 - p)), 1.0)
    one_p = 1.0 - p
    delta = min(math.sqrt(2.0 * level * p / one_p), (level - p * math.log(p)) / one_p)
    gap = math.sqrt(0.5 * level)
    if p + gap < 1.0:
        q_pinsker = p + gap
        delta = min(delta, -math.log1p(-gap / one_p))
        delta = min(delta, q_pinsker * math.sqrt(2.0 * level / ((1.0 - q_pinsker) * p)))
    for steps in range(1, _MAX_ITER + 1):
        e = math.expm1(-delta)
        d = -one_p * e
        q = p + d
        g = one_p * delta - p * math.log1p(d / p) - level
        d = max(d, 1e-300)  # guards an underflowed d from 0 / 0
        one_q = one_p * (1.0 + e)
        step = (g * q / d) / max(1.0 - g * one_q * p / (2.0 * d * d), 0.5)
        new = delta - step
        delta = new if new > 0.0 else 0.5 * delta
        if steps >= _MIN_ITER and abs(step) * one_q < _STEP_TOL:
            break
    return min(p - one_p * math.expm1(-delta), 1.0)


def _lower_scalar(p: float, level: float) -> float:
    if level == 0.0:
        return p
    if p == 1.0:
        return math.exp(-level)
    return max(1.0 - _upper_scalar(1.0 - p, level), 0.0)


def _log_mix(w1: float, log_w0: float, log_w1: float, eps: float) -> float:
    """log(w0 + w1 e^-eps) for weights w0 + w1 = 1, both > 0, given w1 and both logarithms
    (so that a weight below the rounding of 1 is not lost), eps in (0, inf): log1p for small
    eps, a log-sum-exp for large."""
    if eps < 1.0:
        return math.log1p(w1 * math.expm1(-eps))
    a = log_w0
    b = log_w1 - eps
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def _d_eps_scalar(x: float, y: float, eps: float) -> float:
    if x == y or eps == 0.0:
        return 0.0
    if eps == math.inf:
        return _kl_scalar(x, y)
    if x < y:
        if y == 1.0:
            return eps * (1.0 - x)
        # expit(logit(y) - eps); the cap keeps exp finite and moves z0 only where both
        # branches agree to rounding (z0 < 1e-288)
        z0 = y / (y + (1.0 - y) * math.exp(min(eps, 700.0)))
        if z0 <= x:
            return _kl_scalar(x, y)
        # the closed form subtracts numbers of size eps: clamp its rounding to the bounds
        # d_eps <= min(eps |x - y|, kl(x, y)) that hold exactly
        d = max(-eps * x - _log_mix(y, math.log1p(-y), math.log(y), eps), 0.0)
        return min(d, eps * (y - x), _kl_scalar(x, y))
    if y == 0.0:
        return eps * x
    z0 = y / (y + (1.0 - y) * math.exp(-eps))  # expit(logit(y) + eps)
    if z0 >= x:
        return _kl_scalar(x, y)
    d = max(-eps * (1.0 - x) - _log_mix(1.0 - y, math.log(y), math.log1p(-y), eps), 0.0)
    return min(d, eps * (x - y), _kl_scalar(x, y))


def _d_eps_upper_scalar(x: float, level: float, eps: float) -> float:
    if level == math.inf or eps == 0.0 or x == 1.0:
        return 1.0
    if eps == math.inf:
        return _upper_scalar(x, level)
    if level >= eps * (1.0 - x):
        return 1.0
    # kl(x, m1) at the regime switch m1 = expit(logit(x) + eps), in closed form (module
    # docstring): log(1 - x + x e^eps) - eps x (inf once e^eps overflows: regime A)
    if level <= math.log1p(x * math.expm1(eps)) - eps * x:
        return _upper_scalar(x, level)
    return min(math.expm1(-(level + eps * x)) / math.expm1(-eps), 1.0)


def _upper_loop(p: np.ndarray, level: np.ndarray, out: np.ndarray) -> None:
    for i in range(p.size):
        out[i] = _upper_scalar(p[i], level[i])


def _lower_loop(p: np.ndarray, level: np.ndarray, out: np.ndarray) -> None:
    for i in range(p.size):
        out[i] = _lower_scalar(p[i], level[i])


def _d_eps_loop(x: np.ndarray, y: np.ndarray, eps: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = _d_eps_scalar(x[i], y[i], eps[i])


def _d_eps_upper_loop(x: np.ndarray, level: np.ndarray, eps: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = _d_eps_upper_scalar(x[i], level[i], eps[i])


# ---------------------------------------------------------------------------------------------
# the same formulas as numpy expressions (used without numba; tested against the loops)


def _upper_numpy(p: np.ndarray, level: np.ndarray) -> np.ndarray:
    interior = (p > _P_TINY) & (p < 1.0) & (level > _LEVEL_TINY) & (level < _LEVEL_ONE)
    out = _halley_numpy(np.where(interior, p, 0.5), np.where(interior, level, 0.1))[0]
    lev = np.where(np.isfinite(level), level, 0.0)
    out = np.where(p <= _P_TINY, -np.expm1(-lev), out)
    second = np.minimum(p + np.sqrt(2.0 * np.minimum(lev, _LEVEL_TINY) * p * (1.0 - p)), 1.0)
    out = np.where(level <= _LEVEL_TINY, second, out)
    out = np.where(level == 0.0, p, out)
    return np.where((p == 1.0) | (level >= _LEVEL_ONE), 1.0, out)


def _halley_numpy(p: np.ndarray, level: np.ndarray) -> tuple[np.ndarray, int]:
    """The KL-UCB root for _P_TINY < p < 1, _LEVEL_TINY < level < _LEVEL_ONE, entrywise, and
    the number of steps taken (the largest over the entries)."""
    if p.size == 0:  # no entry: nothing to iterate (np.max of nothing is an error)
        return np.array(p, dtype=float, copy=True), 0
    one_p = 1.0 - p
    delta = np.minimum(np.sqrt(2.0 * level * p / one_p), (level - p * np.log(p)) / one_p)
    gap = np.sqrt(0.5 * level)
    inside = p + gap < 1.0
    gap = np.where(inside, gap, 0.0)
    q_pinsker = p + gap
    bounds = np.minimum(
        -np.log1p(-gap / one_p), q_pinsker * np.sqrt(2.0 * level / ((1.0 - q_pinsker) * p))
    )
    delta = np.where(inside, np.minimum(delta, bounds), delta)
    steps = 0
    for steps in range(1, _MAX_ITER + 1):
        e = np.expm1(-delta)
        d = -one_p * e
        q = p + d
        g = one_p * delta - p * np.log1p(d / p) - level
        d = np.maximum(d, 1e-300)
        one_q = one_p * (1.0 + e)
        step = (g * q / d) / np.maximum(1.0 - g * one_q * p / (2.0 * d * d), 0.5)
        new = delta - step
        delta = np.where(new > 0.0, new, 0.5 * delta)
        if steps >= _MIN_ITER and np.max(np.abs(step) * one_q) < _STEP_TOL:
            break
    return np.minimum(p - one_p * np.expm1(-delta), 1.0), steps


def _lower_numpy(p: np.ndarray, level: np.ndarray) -> np.ndarray:
    out = np.maximum(1.0 - _upper_numpy(1.0 - p, level), 0.0)
    out = np.where(p == 1.0, np.exp(-np.where(np.isfinite(level), level, np.inf)), out)
    return np.where(level == 0.0, p, out)


def _log_mix_numpy(
    w1: np.ndarray, log_w0: np.ndarray, log_w1: np.ndarray, eps: np.ndarray
) -> np.ndarray:
    small = eps < 1.0
    big = np.logaddexp(log_w0, log_w1 - eps)
    return np.where(small, np.log1p(w1 * np.expm1(-np.where(small, eps, 0.0))), big)


def _d_eps_numpy(x: np.ndarray, y: np.ndarray, eps: np.ndarray) -> np.ndarray:
    kl = _kl_numpy(x, y)
    finite = np.isfinite(eps)
    e = np.where(finite, eps, 0.0)
    inner = (y > 0.0) & (y < 1.0)
    yi = np.where(inner, y, 0.5)  # the edges y = 0, 1 are set apart below (z_hi was 0 / 0)
    z_lo = yi / (yi + (1.0 - yi) * np.exp(np.minimum(e, 700.0)))
    z_hi = yi / (yi + (1.0 - yi) * np.exp(-e))
    log_y, log_1y = np.log(yi), np.log1p(-yi)
    below = np.maximum(-e * x - _log_mix_numpy(yi, log_1y, log_y, e), 0.0)
    above = np.maximum(-e * (1.0 - x) - _log_mix_numpy(1.0 - yi, log_y, log_1y, e), 0.0)
    # the closed forms' rounding clamped to d_eps <= min(eps |x - y|, kl), exact bounds
    below = np.minimum(np.minimum(below, e * (y - x)), kl)
    above = np.minimum(np.minimum(above, e * (x - y)), kl)
    below = np.where(y == 1.0, e * (1.0 - x), below)
    above = np.where(y == 0.0, e * x, above)
    out = np.where(finite & (x < y) & ((y == 1.0) | (z_lo > x)), below, kl)
    out = np.where(finite & (x > y) & ((y == 0.0) | (z_hi < x)), above, out)
    return np.where((x == y) | (eps == 0.0), 0.0, out)


def _d_eps_upper_numpy(x: np.ndarray, level: np.ndarray, eps: np.ndarray) -> np.ndarray:
    finite = np.isfinite(eps)
    e = np.where(finite & (eps > 0.0), eps, 1.0)
    lev = np.where(np.isfinite(level), level, 0.0)
    with np.errstate(over="ignore"):  # e^eps = inf for eps > 709: kl(x, m1) = inf, regime A
        # (x = 0 apart: 0 x inf would be NaN where the switch is at 0)
        at_switch = np.log1p(np.where(x > 0.0, x, 1.0) * np.expm1(e)) - e * x
    at_switch = np.where(x > 0.0, at_switch, 0.0)
    regime_b = finite & (level > at_switch)
    out = np.where(
        regime_b, np.minimum(np.expm1(-(lev + e * x)) / np.expm1(-e), 1.0), _upper_numpy(x, level)
    )
    out = np.where(finite & (level >= e * (1.0 - x)), 1.0, out)
    return np.where(np.isinf(level) | (eps == 0.0) | (x == 1.0), 1.0, out)


def _kl_numpy(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.maximum(rel_entr(p, q) + rel_entr(1.0 - p, 1.0 - q), 0.0)


if HAVE_NUMBA:
    _jit = numba.njit(cache=True, nogil=True)
    _kl_scalar = _jit(_kl_scalar)
    _upper_scalar = _jit(_upper_scalar)
    _lower_scalar = _jit(_lower_scalar)
    _log_mix = _jit(_log_mix)
    _d_eps_scalar = _jit(_d_eps_scalar)
    _d_eps_upper_scalar = _jit(_d_eps_upper_scalar)
    _upper_loop = _jit(_upper_loop)
    _lower_loop = _jit(_lower_loop)
    _d_eps_loop = _jit(_d_eps_loop)
    _d_eps_upper_loop = _jit(_d_eps_upper_loop)


def _run(loop: Any, numpy_version: Any, *args: np.ndarray, compiled: bool | None) -> np.ndarray:
    """Apply a kernel to broadcast arguments: the compiled loop when numba is there (or
    ``compiled`` says so), the numpy version otherwise."""
    if compiled is None:
        compiled = HAVE_NUMBA
    if not compiled:
        shape = np.broadcast_shapes(*(a.shape for a in args))
        return np.asarray(numpy_version(*np.broadcast_arrays(*args)), dtype=float).reshape(shape)
    shape, flat = _flat(*args)
    out = np.empty(flat[0].size)
    loop(*flat, out)
    return out.reshape(shape)


# ---------------------------------------------------------------------------------------------
# public functions


def bernoulli_kl(p: Any, q: Any) -> np.ndarray:
    """kl(p, q) between Bernoulli(p) and Bernoulli(q), ``p`` and ``q`` in [0, 1], broadcast.

    Conventions: 0 log 0 = 0 (so kl(0, q) = -log(1 - q) and kl(1, q) = -log q), and ``inf``
    when q is 0 or 1 and p differs from q. Returns a float64 array (0-d for scalars)."""
    return _kl_numpy(_unit("p", p), _unit("q", q))


def kl_upper(p: Any, level: Any, *, compiled: bool | None = None) -> np.ndarray:
    """max{q in [p, 1] : kl(p, q) <= level}, the KL-UCB index, broadcast over p and level.

    ``p`` in [0, 1], ``level`` in [0, inf]. Exact at the edges (p for level 0; 1 for p = 1 or
    level = inf; 1 - e^-level for p = 0); elsewhere Halley's iteration in
    delta = log((1 - p) / (1 - q)), to about 1e-13 absolute (module docstring).
    ``compiled`` forces (True) or avoids (False) the numba kernel; None uses it if installed."""
    p = _unit("p", p)
    level = _nonneg("level", level)
    return _run(_upper_loop, _upper_numpy, p, level, compiled=compiled)


def kl_lower(p: Any, level: Any, *, compiled: bool | None = None) -> np.ndarray:
    """min{q in [0, p] : kl(p, q) <= level}, broadcast: 1 - kl_upper(1 - p, level), by the
    symmetry kl(p, q) = kl(1 - p, 1 - q). Exact at the edges (p for level 0; 0 for p = 0 or
    level = inf; e^-level for p = 1)."""
    p = _unit("p", p)
    level = _nonneg("level", level)
    return _run(_lower_loop, _lower_numpy, p, level, compiled=compiled)


def d_eps(x: Any, y: Any, eps: Any, *, compiled: bool | None = None) -> np.ndarray:
    """d_eps(x, y) = inf over z between x and y of eps |z - x| + kl(z, y), broadcast.

    The information quantity of the lower bound of Azize, Wu, Honda, Orabona, Ito & Basu,
    "Optimal Regret of Bernoulli Bandits under Global Differential Privacy" (arXiv 2505.05613,
    Theorem 1). ``x``, ``y`` in [0, 1], ``eps`` in [0, inf]: eps = inf gives kl(x, y), eps = 0
    gives 0, and d_eps <= min(kl(x, y), eps |x - y|) always (z = x and z = y). Closed form
    (module docstring, ours): kl(x, y) when the unconstrained minimiser z0 = expit(logit(y) -+
    eps) lies beyond x, else -eps x - log(1 - y + y e^-eps) (x < y) or
    -eps (1 - x) - log(y + (1 - y) e^-eps) (x > y).

    Source: the definition was read in a third-party summary of the paper, not in its body
    (module docstring); the closed form is ours and is tested against brute force."""
    x = _unit("x", x)
    y = _unit("y", y)
    eps = _nonneg("eps", eps)
    return _run(_d_eps_loop, _d_eps_numpy, x, y, eps, compiled=compiled)


def d_eps_upper(x: Any, level: Any, eps: Any, *, compiled: bool | None = None) -> np.ndarray:
    """max{mu in [x, 1] : d_eps(x, mu) <= level}, the DP-KLUCB index of Azize et al. (arXiv
    2505.05613), broadcast.

    ``x`` in [0, 1], ``level`` in [0, inf], ``eps`` in [0, inf]. Closed form (module
    docstring, ours): 1 when level >= eps (1 - x); else kl_upper(x, level) while
    level <= kl(x, m1) with m1 = expit(logit(x) + eps), and
    (1 - e^-(level + eps x)) / (1 - e^-eps) beyond. eps = inf gives kl_upper; eps = 0 gives 1
    (d_0 is 0)."""
    x = _unit("x", x)
    level = _nonneg("level", level)
    eps = _nonneg("eps", eps)
    return _run(_d_eps_upper_loop, _d_eps_upper_numpy, x, level, eps, compiled=compiled)
