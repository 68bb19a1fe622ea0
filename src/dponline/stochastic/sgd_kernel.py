"""The compiled inner loop of NoisySGD (:mod:`dponline.stochastic.noisy_sgd`), used when numba is
installed (``pip install dponline[fast]``); without numba the same steps run as numpy calls.

NoisySGD takes n^2 single-sample steps, each a handful of operations on a (runs, scales, d)
array: in numpy the per-call overhead dominates (about 9 s for n = 1000 with 10 runs and 8 step
scales, 35-48 s for n = 2000). The kernel runs one block of pre-drawn steps in compiled code; the
random draws (sample indices and Gaussian noise) stay in numpy, in the same order, so both paths
consume the same random stream and give the same iterates up to floating-point rounding (the
inner product's summation order; tests/stochastic/test_sgd_kernel.py).

Per step t, run k and scale s, with ``xe = 2 eta_s x_t`` and ``c = eta_s (2 y_t x_t - sigma z_t)``:

    theta <- clip(theta - <theta, x_t> xe + c, -r, r),     acc <- acc + theta.
"""

from __future__ import annotations

import numpy as np

__all__ = ["HAVE_NUMBA", "sgd_block"]

try:  # numba is an optional extra: dponline[fast]
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

#: whether the compiled kernel is available
HAVE_NUMBA = numba is not None


def _sgd_block_py(
    theta: np.ndarray,
    acc: np.ndarray,
    xs: np.ndarray,
    base: np.ndarray,
    etas: np.ndarray,
    radius: float,
) -> None:
    """Advance ``theta`` (runs, S, d) through the steps of ``xs`` and ``base`` (b, runs, d),
    adding every iterate to ``acc``; in place (the loop the compiler translates)."""
    steps, runs, d = xs.shape
    n_scales = etas.shape[0]
    for t in range(steps):
        for k in range(runs):
            for s in range(n_scales):
                inner = 0.0
                for j in range(d):
                    inner += theta[k, s, j] * xs[t, k, j]
                eta = etas[s]
                two_eta = 2.0 * eta
                for j in range(d):
                    v = theta[k, s, j] - inner * (xs[t, k, j] * two_eta) + base[t, k, j] * eta
                    if v > radius:
                        v = radius
                    elif v < -radius:
                        v = -radius
                    theta[k, s, j] = v
                    acc[k, s, j] += v


sgd_block = (
    numba.njit(cache=True, fastmath=False, nogil=True)(_sgd_block_py) if HAVE_NUMBA else None
)
