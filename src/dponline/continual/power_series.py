"""Truncated formal power series with real float64 coefficients.

A series is the array ``a`` of its first coefficients, ``a[k] = [z^k] a(z)``; every function
returns the first ``n`` coefficients of its result. Products are FFT convolutions (O(n log n));
the inverse, the logarithm, the exponential and real powers use Newton's iteration, doubling
the number of correct coefficients per pass (Brent & Kung 1978, "Fast algorithms for
manipulating formal power series", J. ACM 25(4); the costs quoted by Hanrot & Zimmermann), so
each costs a constant number of products of length n:

* ``inverse``: b <- b (2 - a b)                                  (needs a_0 != 0);
* ``log``:     log a = log a_0 + integral of a' / a              (needs a_0 > 0);
* ``exp``:     g <- g (1 - log g + a)                             (exp(a_0) exp(a - a_0));
* ``power``:   a^p = a_0^p exp(p log(a / a_0))                    (needs a_0 > 0).

Float64 FFT products have an absolute error of a few units of 1e-16 times the norms of their
factors, so the coefficients that decay like k^(-1/2) (the counters' factorisations) keep a
relative error near 1e-12 up to n = 2^22; tests/continual/test_power_series.py checks every
function against closed forms.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft

__all__ = ["derivative", "exp", "integral", "inverse", "log", "multiply", "power"]


def _series(a: np.ndarray | list[float], name: str = "a") -> np.ndarray:
    arr = np.asarray(a, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array of coefficients, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has non-finite coefficients")
    return arr


def _count(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return int(n)


def _padded(a: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n)
    m = min(n, a.size)
    out[:m] = a[:m]
    return out


def multiply(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` coefficients of a(z) b(z)."""
    a, b, n = _series(a)[:n], _series(b, "b")[:n], _count(n)
    if min(a.size, b.size) <= 32:
        return _padded(np.convolve(a, b), n)
    size = fft.next_fast_len(a.size + b.size - 1, real=True)
    prod = fft.irfft(fft.rfft(a, size) * fft.rfft(b, size), size)
    return _padded(prod, n)


def derivative(a: np.ndarray) -> np.ndarray:
    """a'(z): coefficients (k + 1) a_{k+1} (one fewer; a constant gives [0])."""
    a = _series(a)
    if a.size == 1:
        return np.zeros(1)
    return a[1:] * np.arange(1, a.size, dtype=float)


def integral(a: np.ndarray, constant: float = 0.0) -> np.ndarray:
    """The antiderivative with the given constant term: coefficients a_{k-1} / k (one more)."""
    a = _series(a)
    return np.concatenate([[float(constant)], a / np.arange(1, a.size + 1, dtype=float)])


def inverse(a: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` coefficients of 1 / a(z) (Newton: b <- b (2 - a b))."""
    a, n = _series(a), _count(n)
    if a[0] == 0:
        raise ValueError("a series with a_0 = 0 has no inverse")
    return _newton_inverse(a, np.array([1.0 / a[0]]), n)


def _newton_inverse(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Newton's iteration for 1 / a from ``b``, correct to its length, up to ``n`` terms."""
    m = b.size
    while m < n:
        m = min(2 * m, n)
        e = multiply(a[:m], b, m)  # a b = 1 + O(z^{m/2})
        e[0] -= 1.0
        b = _padded(b, m) - multiply(b, e, m)
    return b[:n]


def log(a: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` coefficients of log a(z), for a_0 > 0."""
    a, n = _series(a), _count(n)
    if not a[0] > 0:
        raise ValueError(f"log needs a_0 > 0, got a_0 = {a[0]!r}")
    if n == 1:
        return np.array([math.log(a[0])])
    a = _padded(a, n)
    q = multiply(derivative(a), inverse(a, n - 1), n - 1)
    return integral(q, math.log(a[0]))


def exp(a: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` coefficients of exp a(z) (Newton: g <- g (1 - log g + a))."""
    a, n = _series(a), _count(n)
    a = _padded(a, n)
    a0 = a[0]
    a = a.copy()
    a[0] = 0.0
    g = np.array([1.0])
    inv = np.array([1.0])  # 1 / g of the previous pass (carried as Newton's start)
    m = 1
    while m < n:
        # g holds its final first m terms; the previous pass's 1/g (of a g exact to m/2
        # terms) is 1/g to m/2 terms: Newton from there to 2m terms
        start = inv[: max(1, m // 2)]
        m = min(2 * m, n)
        inv = _newton_inverse(_padded(g, m), start, m)
        log_g = integral(multiply(derivative(_padded(g, m)), inv, m - 1))
        h = a[:m] - log_g
        h[0] += 1.0
        g = multiply(g, h, m)
    return math.exp(a0) * g[:n]


def power(a: np.ndarray, p: float, n: int) -> np.ndarray:
    """The first ``n`` coefficients of a(z)^p for real p, for a_0 > 0."""
    a, n = _series(a), _count(n)
    p = float(p)
    if not math.isfinite(p):
        raise ValueError(f"p must be finite, got {p!r}")
    if not a[0] > 0:
        raise ValueError(f"a real power needs a_0 > 0, got a_0 = {a[0]!r}")
    if p == 0:
        return _padded(np.array([1.0]), n)
    if p == 1:
        return _padded(a, n)
    a0 = a[0]
    return a0**p * exp(p * log(a / a0, n), n)
