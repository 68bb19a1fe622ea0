"""What the batch baselines of Han et al. Appendix C return, and what they share.

The three baselines Han et al. ("Optimal Private Streaming SCO in l_p-geometry", ICML, Appendix C)
compare their private Frank-Wolfe with are *batch* algorithms: they see the whole dataset
``(x_i, y_i)_{i<=n}`` and return one parameter vector. Each of them

* runs ``runs`` independent replicas and a grid of learning-rate scale factors at once
  (:attr:`BaselineFit.theta` has shape ``(runs, n_scales, d)``);
* states the guarantee of ONE run at ONE scale over datasets that differ in one sample
  (:attr:`BaselineFit.privacy`, ``None`` for the non-private ``epsilon=None``).

Shared here:

* :func:`checked_dataset`: the input contract ``||x_i||_q <= X``, ``|y_i| <= Y`` the Lipschitz
  constants (and so every guarantee) rest on; out-of-bounds samples raise ``ValueError`` naming
  the value and the bound unless ``clip=True``; NaN and infinity are always rejected.
* :func:`run_generators`: one :class:`numpy.random.Generator` per run, spawned from ``rng``, so
  that run ``k`` draws the same numbers whatever ``runs`` and ``step_scales`` are (the scales of
  one run share its samples and noise: common random numbers).
* :func:`subsampled_gaussian_epsilon` and :func:`least_noise_multiplier`: Renyi-DP accounting
  (dp_accounting's ``RdpAccountant``) of ``steps`` adaptive Gaussian releases, each on a uniformly
  random subset of ``sample`` out of ``population`` records, under replace-one neighbours
  (Wang, Balle & Kasiviswanathan 2019, Theorem 27, as implemented for
  ``SampledWithoutReplacementDpEvent``). A full batch (``sample == population``) is accounted
  exactly instead: ``steps`` Gaussian releases of sensitivity ratio ``1/m`` are one Gaussian
  mechanism of ratio ``sqrt(steps)/m`` (Balle & Wang 2018; Dong, Roth & Su 2022).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import optimize

from dponline.privacy.accounting import gaussian_epsilon
from dponline.privacy.bounds import check_finite, lp_norm
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.rng import RngLike, as_generator

__all__ = [
    "RDP_ORDERS",
    "BaselineFit",
    "checked_budget",
    "checked_dataset",
    "checked_runs",
    "checked_scales",
    "least_noise_multiplier",
    "run_generators",
    "subsampled_gaussian_epsilon",
]

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


@dataclass(frozen=True)
class BaselineFit:
    """The output of a batch baseline.

    Attributes
    ----------
    theta:
        Shape ``(runs, n_scales, d)``: the algorithm's output for every run and learning-rate
        scale factor.
    privacy:
        The guarantee of ONE run at ONE scale (every scale proves at least this), over datasets
        that differ in one sample (:attr:`~dponline.privacy.guarantee.Neighbouring.ONE_SAMPLE`),
        with its derivation; ``None`` when the algorithm ran without noise (``epsilon=None``).
    parameters:
        The noise scales, step sizes, batch sizes and step counts used, for reports.
    """

    theta: np.ndarray
    privacy: PrivacyGuarantee | None
    parameters: dict[str, float] = field(default_factory=dict)


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and positive, got {value!r}")
    return v


def checked_budget(epsilon: float | None, delta: float, calibration: str) -> tuple[float, float]:
    """Validate ``(epsilon, delta, calibration)``; ``epsilon=None`` means no noise (returns
    ``(inf, delta)``)."""
    if calibration not in ("tight", "paper"):
        raise ValueError(f"calibration must be 'tight' or 'paper', got {calibration!r}")
    if epsilon is None:
        return math.inf, float(delta)
    eps = _positive("epsilon", epsilon)
    d = float(delta)
    if not (0.0 < d < 1.0):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return eps, d


def checked_scales(step_scales: Sequence[float]) -> np.ndarray:
    """The learning-rate scale factors as a 1-D float array (finite, positive, at least one)."""
    scales = np.atleast_1d(np.asarray(step_scales, dtype=float))
    if scales.ndim != 1 or scales.size == 0:
        raise ValueError(
            f"step_scales must be a non-empty sequence of numbers, got {step_scales!r}"
        )
    if not np.all(np.isfinite(scales) & (scales > 0)):
        raise ValueError(f"step_scales must be finite and positive, got {step_scales!r}")
    return scales


def checked_runs(runs: int) -> int:
    if isinstance(runs, bool) or not isinstance(runs, numbers.Integral) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    return int(runs)


def checked_dataset(
    x: np.ndarray,
    y: np.ndarray,
    *,
    q: float,
    x_bound: float,
    y_bound: float,
    clip: bool,
    min_samples: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a dataset against the contract ``||x_i||_q <= X``, ``|y_i| <= Y``.

    ``x`` has shape ``(n, d)`` and ``y`` shape ``(n,)``, both finite. A sample outside the bounds
    raises ``ValueError`` naming its index, value and the bound; with ``clip=True`` its ``x`` is
    rescaled radially into the l_q ball of radius X and its ``y`` clipped to ``[-Y, Y]``.
    Returns float copies.
    """
    xb = _positive("x_bound", x_bound)
    yb = _positive("y_bound", y_bound)
    xa = np.array(check_finite(x, "x"), dtype=float)
    ya = np.array(check_finite(y, "y"), dtype=float)
    if xa.ndim != 2 or ya.shape != (xa.shape[0],):
        raise ValueError(
            f"x must have shape (n, d) and y shape (n,), got {xa.shape} and {ya.shape}"
        )
    n = xa.shape[0]
    if n < min_samples or xa.shape[1] < 1:
        raise ValueError(f"need at least {min_samples} samples of dimension >= 1, got {xa.shape}")
    norms = lp_norm(xa, q)
    bad_x = norms > xb
    bad_y = np.abs(ya) > yb
    if not clip:
        if bad_x.any():
            i = int(np.argmax(bad_x))
            raise ValueError(
                f"sample {i} is outside the declared bounds: ||x||_{q:g} = {float(norms[i])!r} > "
                f"x_bound = {xb} (pass clip=True to rescale it)"
            )
        if bad_y.any():
            i = int(np.argmax(bad_y))
            raise ValueError(
                f"sample {i} is outside the declared bounds: |y| = {float(abs(ya[i]))!r} > "
                f"y_bound = {yb} (pass clip=True to clip it)"
            )
        return xa, ya
    if bad_x.any():
        xa[bad_x] *= (xb * (1 - 1e-12) / norms[bad_x])[:, None]
    np.clip(ya, -yb, yb, out=ya)
    return xa, ya


def run_generators(rng: RngLike, runs: int) -> list[np.random.Generator]:
    """One independent generator per run, spawned from ``rng``.

    Child ``k`` of an integer seed (or ``SeedSequence``) is the same whatever ``runs`` is, so
    run ``k`` of a vectorised call equals run ``k`` of any other call with the same seed.
    """
    return as_generator(rng).spawn(runs)


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

    nm = float(noise_multiplier)
    if not nm > 0:
        return math.inf
    if sample >= population:
        return gaussian_epsilon(delta, math.sqrt(steps) / nm)
    acc = rdp_privacy_accountant.RdpAccountant(
        orders=RDP_ORDERS, neighboring_relation=NeighboringRelation.REPLACE_ONE
    )
    event = dp_event.SampledWithoutReplacementDpEvent(
        int(population), int(sample), dp_event.GaussianDpEvent(nm)
    )
    acc.compose(dp_event.SelfComposedDpEvent(event, int(steps)))
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
