"""Build a calibrated continual counter in one call: :func:`make_counter`."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.calibration import calibrate_counter
from dponline.continual.registry import get_mechanism
from dponline.continual.unknown_horizon import DoublingCounter
from dponline.privacy.bounds import InputBounds
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyGuarantee, PrivacyWarning
from dponline.rng import RngLike, as_generator

__all__ = ["make_counter"]


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
    kwargs = dict(
        bounds=bounds,
        budget=budget,
        noise=noise,
        regular_norm=regular_norm,
    )
    if horizon is not None:
        cal = calibrate_counter(cls, horizon=horizon, **kwargs)  # type: ignore[arg-type]
        return cls(
            horizon,
            bounds.dim,
            cal.noise,
            replicas=replicas,
            rng=rng,
            bounds=bounds,
            clip=clip,
            privacy=cal.guarantee,
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
