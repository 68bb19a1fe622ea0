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
* :func:`checked_budget`: the budget of one run at one scale (``None``: no noise).

Their accounting (the subsampled Gaussian under replace-one neighbours) is in
:mod:`dponline.privacy.accounting`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dponline.privacy.bounds import check_finite, lp_norm
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee
from dponline.protocol import checked_budget as checked_learner_budget
from dponline.rng import RngLike, as_generator

__all__ = [
    "BaselineFit",
    "checked_budget",
    "checked_dataset",
    "checked_runs",
    "checked_scales",
    "run_generators",
]


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


def checked_budget(budget: PrivacyBudget | None) -> PrivacyBudget | None:
    """The budget of one run at one scale, over datasets that differ in one sample; ``None``
    runs without noise. The baselines give (epsilon, delta)-DP with delta > 0."""
    budget = checked_learner_budget(budget, Neighbouring.ONE_SAMPLE)
    if budget is not None:
        budget.require_delta("this baseline's Gaussian noise")
    return budget


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
