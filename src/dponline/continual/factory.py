"""Build a continual counter in one call.

* :func:`build_counter`: the counter of a learner: the mechanism chosen for the run
  (:func:`~dponline.continual.selection.choose_mechanism`: the padded tree for ``paper``, the
  lowest-variance counter whose state for one run fits 64 MiB for ``tight``; never a function of
  the number of replicas) and calibrated to the budget, or, for ``budget=None`` (a private
  learner's non-private counterpart), exact prefix sums with the same input contract.
* :func:`make_counter`: a named mechanism calibrated to a budget, over a known horizon or an
  unknown one (doubling blocks).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.continual.calibration import CounterCalibrator, calibrate_counter
from dponline.continual.registry import get_mechanism
from dponline.continual.selection import choose_mechanism
from dponline.continual.unknown_horizon import DoublingCounter
from dponline.privacy.bounds import InputBounds
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibrator, calibrate
from dponline.privacy.guarantee import PrivacyGuarantee, PrivacyWarning
from dponline.privacy.noise import GaussianNoise
from dponline.rng import RngLike, as_generator

__all__ = ["build_counter", "make_counter"]


def build_counter(
    budget: PrivacyBudget | None,
    *,
    horizon: int,
    dim: int | None = None,
    bounds: InputBounds | None = None,
    noise: str = "gaussian",
    mechanism: str | None = None,
    regular_norm: float | None = None,
    calibrator: Calibrator | None = None,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
) -> ContinualCounter:
    """The continual counter of a learner that sums ``horizon`` inputs in ``bounds`` (``dim``
    coordinates: the bounds', when given).

    * ``budget=None``: exact prefix sums (the non-private counterpart of a private learner): a
      binary tree that draws no noise (every release is the sum of the inputs so far), checking
      inputs against ``bounds`` (or clipping them) as the private counter does. ``mechanism``,
      ``noise`` and ``calibrator`` are not used.
    * otherwise: ``calibrate(calibrator, budget)``, by default the counter calibration
      (:class:`~dponline.continual.calibration.CounterCalibrator`) of ``mechanism`` for inputs in
      ``bounds`` with ``noise``; ``mechanism`` defaults to
      :func:`~dponline.continual.selection.choose_mechanism` (the padded tree for ``paper``,
      :func:`~dponline.continual.selection.best_mechanism` of the horizon, dimension and noise
      for ``tight``: the same mechanism whatever the number of replicas). A learner with its own
      calibration passes ``calibrator``, whose answer names the mechanism. The counter is the
      mechanism the calibration names, with its noise; its ``privacy`` is the calibration's
      guarantee, proven once.

    >>> from dponline.privacy.bounds import Box
    >>> c = build_counter(None, horizon=4, bounds=Box(0, 1, dim=2), rng=0)
    >>> [c.step([1.0, 0.5]).tolist() for _ in range(3)]
    [[[1.0, 0.5]], [[2.0, 1.0]], [[3.0, 1.5]]]
    >>> build_counter(PrivacyBudget(1.0, 1e-6), horizon=64, bounds=Box(0, 1, dim=64)).name
    'sqrt_factorization'
    """
    if bounds is not None:
        if dim is not None and dim != bounds.dim:
            raise ValueError(f"dim is {dim!r} but bounds has dimension {bounds.dim}")
        dim = bounds.dim
    if dim is None:
        raise ValueError("build_counter needs dim or bounds (the inputs' dimension)")
    if budget is None:
        return BinaryTreeCounter(
            horizon, dim, GaussianNoise(0.0), replicas=replicas, rng=rng, bounds=bounds, clip=clip
        )
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a PrivacyBudget or None, got {type(budget).__name__}")
    if calibrator is None:
        if bounds is None:
            raise ValueError(
                "a private counter's noise is calibrated to its input set: give bounds (or a "
                "calibrator)"
            )
        name = mechanism or choose_mechanism(budget.calibration, horizon, dim, noise)
        calibrator = CounterCalibrator(get_mechanism(name), horizon, bounds, noise, regular_norm)
    elif mechanism is not None:
        raise ValueError(
            f"give mechanism or calibrator, not both: the calibrator names its mechanism (got "
            f"mechanism={mechanism!r})"
        )
    cal = calibrate(calibrator, budget)
    return get_mechanism(cal.mechanism)(
        horizon,
        dim,
        cal.noise,
        replicas=replicas,
        rng=rng,
        bounds=bounds,
        clip=clip,
        privacy=cal.guarantee,
    )


def make_counter(
    mechanism: str,
    *,
    horizon: int | None,
    bounds: InputBounds,
    budget: PrivacyBudget,
    noise: str = "gaussian",
    regular_norm: float | None = None,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
) -> ContinualCounter | DoublingCounter:
    """A continual counter for inputs in ``bounds``, calibrated to ``budget``
    (:mod:`dponline.continual.calibration`).

    The counter's ``privacy`` states the guarantee (event-level DP over streams that differ in
    one round), and every input is checked against ``bounds`` (or clipped with ``clip=True``).
    With ``horizon=None`` the counter runs doubling blocks (:class:`DoublingCounter`) and never
    refuses a step; each block is calibrated for its own length at the full budget.

    >>> from dponline.privacy.bounds import Box
    >>> from dponline.privacy.budget import PrivacyBudget
    >>> c = make_counter("binary_tree", horizon=8, bounds=Box(0, 1, dim=2),
    ...                  budget=PrivacyBudget(1.0), noise="laplace", rng=0)
    >>> c.privacy.epsilon, c.noise.b   # 4 levels x l1 diameter 2 / epsilon
    (1.0, 8.0)
    """
    cls = get_mechanism(mechanism)
    if horizon is not None:
        if not isinstance(budget, PrivacyBudget):
            raise TypeError(f"budget must be a PrivacyBudget, got {type(budget).__name__}")
        return build_counter(
            budget,
            horizon=horizon,
            bounds=bounds,
            noise=noise,
            mechanism=cls.name,
            regular_norm=regular_norm,
            replicas=replicas,
            rng=rng,
            clip=clip,
        )
    kwargs = dict(
        bounds=bounds,
        budget=budget,
        noise=noise,
        regular_norm=regular_norm,
    )

    # Unknown horizon: one calibration per block length, at the full budget each. The stream's
    # guarantee (checked against the budget once, below) is the weakest block's.
    privacy = _doubling_guarantee(cls, kwargs)
    block_kwargs = {**kwargs, "budget": replace(budget, allow_weaker=True)}
    cache: dict[int, object] = {}

    def calibration_for(length: int):  # type: ignore[no-untyped-def]
        if length not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)  # reported once, below
                cache[length] = calibrate_counter(cls, horizon=length, **block_kwargs)  # type: ignore[arg-type]
        return cache[length]

    def make_block(length: int, gen: np.random.Generator) -> ContinualCounter:
        cal = calibration_for(length)
        return cls(
            length,
            bounds.dim,
            cal.noise,
            replicas=replicas,
            rng=gen,  # type: ignore[attr-defined]
            bounds=bounds,
            clip=clip,
            privacy=cal.guarantee,  # type: ignore[attr-defined]
        )

    def block_variances(length: int) -> np.ndarray:
        return cls.release_variances(length, calibration_for(length).noise, bounds.dim)  # type: ignore[attr-defined]

    return DoublingCounter(
        make_block,
        block_variances,
        bounds.dim,
        replicas=replicas,
        rng=as_generator(rng),
        privacy=privacy,
        name=cls.name,
    )


def _doubling_guarantee(cls: type[ContinualCounter], kwargs: dict) -> PrivacyGuarantee:
    """The stream's guarantee: the weakest block's (parallel composition over disjoint rounds).

    ``tight`` blocks each meet the request exactly. ``paper`` blocks prove different epsilons
    per length; we take the largest over lengths 2^0 .. 2^62 (any stream a machine can run) and
    check it against the budget once.
    """
    budget: PrivacyBudget = kwargs["budget"]
    lenient = {**kwargs, "budget": replace(budget, allow_weaker=True)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        lengths = range(63) if budget.calibration == "paper" else range(1)
        blocks = [calibrate_counter(cls, horizon=2**k, **lenient).guarantee for k in lengths]
    worst = max(blocks, key=lambda b: b.epsilon)
    derivation = (
        f"unknown horizon: doubling blocks of lengths 1, 2, 4, ..., each a {cls.name} "
        "calibrated for its own length at the full budget; every round lies in one block, "
        "so the stream has the weakest block's guarantee (parallel composition). "
        f"Per block: {worst.derivation}"
    )
    return budget.prove(worst.epsilon, worst.delta, derivation, rho=worst.rho, stacklevel=4)
