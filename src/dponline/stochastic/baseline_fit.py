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
* :func:`checked_sample_budget`: the budget of one run at one scale (``None``: no noise).
* :class:`BatchPlan`: what a baseline fixes before it sees any data (its schedule, its noise
  and the guarantee they prove: the calibrations are data-independent), and its ``fit`` on a
  dataset. The batch function (``noisy_sfw``, ...) and the batch-learner adapter
  (:class:`~dponline.stochastic.batch_learner.BatchLearner`) both build the plan and fit it, so
  they share one path to the guarantee and one stream of numbers: :func:`fit_plan`.
* ``noise_multiplier``: every noise scale a fit draws with is multiplied by it after
  calibration (for audits: a multiplier below 1 voids the guarantee,
  :func:`scaled_guarantee`, as :meth:`~dponline.protocol.NoiseHandle.scale_noise` does).

Their accounting (the subsampled Gaussian under replace-one neighbours) is in
:mod:`dponline.privacy.accounting`.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dponline.privacy.arguments import checked_count, checked_positive
from dponline.privacy.bounds import check_finite, lp_norm
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee, scaled_guarantee
from dponline.protocol import checked_budget
from dponline.rng import RngLike, as_generator

__all__ = [
    "CHUNK_FLOATS",
    "BaselineFit",
    "BatchPlan",
    "checked_dataset",
    "checked_exponent",
    "checked_noise_multiplier",
    "checked_plan_data",
    "checked_positive",
    "checked_runs",
    "checked_sample_budget",
    "checked_samples",
    "checked_scales",
    "fit_batch",
    "fit_plan",
    "run_chunks",
    "run_generators",
    "scaled_guarantee",
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
        The noise scales as calibrated, step sizes, batch sizes and step counts, for reports;
        with ``noise_scaling`` (present only when it is not 1) the factor every calibrated noise
        scale was multiplied by when drawing (``noise_multiplier`` of the batch function).
    """

    theta: np.ndarray
    privacy: PrivacyGuarantee | None
    parameters: dict[str, float] = field(default_factory=dict)


def checked_exponent(p: float, algorithm: str) -> float:
    """The l_p exponent of a baseline for 1 < p <= 2 (NoisySFW, LocalMD)."""
    v = float(p)
    if not (1.0 < v <= 2.0):
        raise ValueError(f"{algorithm} is for 1 < p <= 2, got p = {p!r}")
    return v


def checked_sample_budget(budget: PrivacyBudget | None) -> PrivacyBudget | None:
    """The budget of one run at one scale, over datasets that differ in one sample
    (:func:`~dponline.protocol.checked_budget` with that relation), with delta > 0: the
    baselines give (epsilon, delta)-DP. ``None`` runs without noise."""
    budget = checked_budget(budget, Neighbouring.ONE_SAMPLE)
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
    """The number of runs, a positive integer."""
    return checked_count("runs", runs)


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
    xb = checked_positive("x_bound", x_bound)
    yb = checked_positive("y_bound", y_bound)
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


def checked_samples(algorithm: str, samples: int, minimum: int) -> int:
    """The number n of samples a plan is built for: an integer >= ``minimum``."""
    if isinstance(samples, bool) or not isinstance(samples, numbers.Integral):
        raise TypeError(f"{algorithm}: the number of samples must be an integer, got {samples!r}")
    if samples < minimum:
        raise ValueError(f"{algorithm} needs at least {minimum} samples, got {samples!r}")
    return int(samples)


def checked_noise_multiplier(noise_multiplier: float) -> float:
    """The factor on every calibrated noise scale: a finite positive real number."""
    return checked_positive("noise_multiplier", noise_multiplier)


class BatchPlan(Protocol):
    """A batch baseline with everything fixed that does not depend on the data: the schedule,
    the calibrated noise and the guarantee it proves (the baselines' calibrations depend on n,
    d, the bounds and the budget only), and :meth:`fit`, the algorithm on a dataset.

    Attributes: ``paper`` (the algorithm, cited), ``samples`` (n), ``dim`` (d), ``q`` and
    ``x_bound``, ``y_bound`` (the input contract ``||x||_q <= x_bound``, ``|y| <= y_bound``),
    ``budget``, ``privacy`` (the guarantee of one run at one scale, ``None`` without noise),
    ``parameters`` (for reports) and ``step_scales`` (the learning-rate scale factors).
    """

    paper: str
    samples: int
    dim: int
    q: float
    x_bound: float
    y_bound: float
    budget: PrivacyBudget | None
    privacy: PrivacyGuarantee | None
    parameters: Mapping[str, float]
    step_scales: np.ndarray

    def start(self) -> np.ndarray:
        """The data-independent point the algorithm starts from, shape (d,)."""
        ...

    def fit(
        self,
        xs: np.ndarray,
        ys: np.ndarray,
        gens: Sequence[np.random.Generator],
        noise_multiplier: float = 1.0,
    ) -> np.ndarray:
        """The output of one run per generator on a validated dataset (n, d), (n,) at every
        step scale, shape (runs, n_scales, d); every noise scale times ``noise_multiplier``."""
        ...


def checked_plan_data(plan: BatchPlan, xs: np.ndarray, ys: np.ndarray) -> None:
    """``xs``, ``ys`` have the shapes ``plan`` was built for, (n, d) and (n,)."""
    shape = (plan.samples, plan.dim)
    if np.shape(xs) != shape or np.shape(ys) != (plan.samples,):
        raise ValueError(
            f"the plan is for x of shape {shape} and y of shape ({plan.samples},), got "
            f"{np.shape(xs)} and {np.shape(ys)}"
        )


def fit_plan(
    plan: BatchPlan,
    xs: np.ndarray,
    ys: np.ndarray,
    *,
    runs: int,
    rng: RngLike,
    noise_multiplier: float = 1.0,
) -> BaselineFit:
    """``plan`` fitted on the dataset ``xs``, ``ys`` with ``runs`` runs whose generators are
    spawned from ``rng`` (:func:`run_generators`): the batch functions' result, the guarantee
    scaled by ``noise_multiplier`` (:func:`scaled_guarantee`). The dataset must have the plan's
    shape and lie within its bounds (:func:`checked_dataset`; clip it there first): the plan's
    guarantee holds only inside them."""
    checked_plan_data(plan, xs, ys)
    xs, ys = checked_dataset(
        xs, ys, q=plan.q, x_bound=plan.x_bound, y_bound=plan.y_bound, clip=False
    )
    m = checked_noise_multiplier(noise_multiplier)
    theta = plan.fit(xs, ys, run_generators(rng, checked_runs(runs)), m)
    parameters = dict(plan.parameters)
    if m != 1.0:
        parameters["noise_scaling"] = m
    return BaselineFit(
        theta=theta, privacy=scaled_guarantee(plan.privacy, m), parameters=parameters
    )


def fit_batch(
    plan_class: Any,
    x: np.ndarray,
    y: np.ndarray,
    *,
    q: float,
    x_bound: float,
    y_bound: float,
    budget: PrivacyBudget | None,
    runs: int,
    rng: RngLike,
    clip: bool,
    noise_multiplier: float,
    min_samples: int = 1,
    **plan_options: Any,
) -> BaselineFit:
    """What every batch function does: check the budget, then the dataset against its bounds
    (``||x_i||_q <= x_bound``, ``|y_i| <= y_bound``; :func:`checked_dataset`), build the
    data-independent plan for the dataset's shape (``plan_class(n, d, x_bound=..., y_bound=...,
    budget=..., **plan_options)``) and fit it with ``runs`` runs (:func:`fit_plan`)."""
    budget = checked_sample_budget(budget)
    xs, ys = checked_dataset(
        x, y, q=q, x_bound=x_bound, y_bound=y_bound, clip=clip, min_samples=min_samples
    )
    n, d = xs.shape
    runs = checked_runs(runs)
    plan = plan_class(n, d, x_bound=x_bound, y_bound=y_bound, budget=budget, **plan_options)
    return fit_plan(plan, xs, ys, runs=runs, rng=rng, noise_multiplier=noise_multiplier)


#: The largest work buffer of one chunk of vectorised runs, in floats (16 MiB).
CHUNK_FLOATS = 2**21


def run_chunks(runs: int, per_run_floats: int) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` ranges covering ``range(runs)`` whose runs need at most
    :data:`CHUNK_FLOATS` floats together (``per_run_floats`` each; at least one run a chunk).
    The runs of a vectorised fit are independent, so chunking changes no number."""
    size = max(1, CHUNK_FLOATS // max(1, int(per_run_floats)))
    for lo in range(0, runs, size):
        yield lo, min(runs, lo + size)
