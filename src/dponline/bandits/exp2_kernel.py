"""EXP2's per-round arithmetic on a few arms, compiled with numba where it is installed
(``pip install dponline[fast]``): the exploration-mixed exponential weights with their running
sums, and the sampling of an arm from those sums.

On ten arms a round of EXP2 is a dozen numpy calls on ten numbers each, and the calls' overhead
is the cost (about 20 us a round for one replica, twice a plain loop that skips the input
checks). One compiled call replaces each group. Without numba the same functions run as numpy
calls. Both compute p = (1 - gamma) q + gamma mu with q proportional to exp(log q - max log q);
they agree to rounding (the order of the normalising sum differs), not bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["HAVE_NUMBA", "charge", "pick", "weights"]

try:  # numba is an optional extra: dponline[fast]
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

HAVE_NUMBA = numba is not None


def _weights_loop(
    log_q: np.ndarray, gamma: float, explore: np.ndarray, p: np.ndarray, cdf: np.ndarray
) -> None:
    replicas, arms = log_q.shape
    for r in range(replicas):
        top = log_q[r, 0]
        for k in range(1, arms):
            top = max(top, log_q[r, k])
        total = 0.0
        for k in range(arms):
            e = math.exp(log_q[r, k] - top)
            p[r, k] = e
            total += e
        scale = (1.0 - gamma) / total
        running = 0.0
        for k in range(arms):
            v = p[r, k] * scale + explore[k]
            p[r, k] = v
            running += v
            cdf[r, k] = running


def _pick_loop(cdf: np.ndarray, u: np.ndarray, chosen: np.ndarray) -> None:
    replicas, arms = cdf.shape
    for r in range(replicas):
        k = 0
        while k < arms - 1 and u[r] > cdf[r, k]:
            k += 1
        chosen[r] = k


def _charge_loop(
    log_q: np.ndarray, p: np.ndarray, chosen: np.ndarray, values: np.ndarray, eta: float
) -> None:
    for r in range(log_q.shape[0]):
        k = chosen[r]
        log_q[r, k] -= eta * (values[r] / p[r, k])


def _weights_numpy(
    log_q: np.ndarray, gamma: float, explore: np.ndarray, p: np.ndarray, cdf: np.ndarray
) -> None:
    np.subtract(log_q, np.maximum.reduce(log_q, axis=1, keepdims=True), out=p)
    np.exp(p, out=p)
    p *= np.divide(1.0 - gamma, np.add.reduce(p, axis=1, keepdims=True))
    p += explore
    np.add.accumulate(p, axis=1, out=cdf)


def _pick_numpy(cdf: np.ndarray, u: np.ndarray, chosen: np.ndarray) -> None:
    np.minimum((u[:, None] > cdf).sum(axis=1), cdf.shape[1] - 1, out=chosen)


def _charge_numpy(
    log_q: np.ndarray, p: np.ndarray, chosen: np.ndarray, values: np.ndarray, eta: float
) -> None:
    rows = np.arange(log_q.shape[0])
    log_q[rows, chosen] -= eta * (values / p[rows, chosen])


if HAVE_NUMBA:
    _jit = numba.njit(cache=True, nogil=True)
    weights, pick, charge = _jit(_weights_loop), _jit(_pick_loop), _jit(_charge_loop)
else:  # pragma: no cover - exercised where numba is absent
    weights, pick, charge = _weights_numpy, _pick_numpy, _charge_numpy

weights.__doc__ = """Fill ``p`` (replicas, K) with (1 - gamma) q + ``explore`` for q the softmax of
each row of ``log_q``, and ``cdf`` with its running sums along the arms."""
charge.__doc__ = """log q_{t+1}(k_t) = log q_t(k_t) - eta v_t / p_t(k_t) for each replica's arm
k_t = ``chosen`` and noisy value v_t: the exponential-weights step on the one-hot
importance-weighted estimate (the other arms' estimates are zero)."""
pick.__doc__ = """Fill ``chosen`` (replicas,) with the first arm whose running sum reaches ``u``
(uniform draws), the last arm at most: an arm drawn from p."""
