"""The contract of a counter without a horizon (an *anytime* counter).

An anytime counter never refuses a step: its guarantee holds for every prefix of the stream,
whatever its length. It offers what learners use of a fixed-horizon
:class:`~dponline.continual.base.ContinualCounter` (``dim``, ``replicas``, ``t``, ``privacy``,
``noise``, ``name``, ``step``, ``step_block``, ``initial_release``, ``variance(t)`` for every
t >= 0, ``scale_noise`` before the first step, ``state_dict`` / ``load_state_dict`` /
``prepare_load``), with ``horizon = None``, and checks its inputs exactly as the fixed-horizon
counters do (the same checks, the same messages).

:class:`AnytimeCounter` is a :class:`~dponline.continual.base.StreamingCounter` (the input
checks, block releases, noise handle and saved state every counter shares) without a horizon;
a subclass implements ``_step``, ``_step_block`` (optional), ``variance`` and its state
(``_state_shapes(t)``: the arrays of a state at round t, whose shapes may grow with t;
``_arrays`` / ``_set_arrays``).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import StreamingCounter
from dponline.privacy.arguments import (
    checked_count,
    checked_nonnegative_int,
    saved_field,
)
from dponline.privacy.bounds import InputBounds
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.privacy.noise import GaussianNoise, NoiseDistribution
from dponline.rng import RngLike, as_generator

__all__ = ["AnytimeCounter"]


class AnytimeCounter(StreamingCounter):
    """Base class of the counters without a horizon (module docstring)."""

    #: An anytime counter has no horizon.
    horizon: None = None
    #: Whether the counter's proof covers Gaussian noise only (checked at construction).
    gaussian_only: ClassVar[bool] = False

    def __init__(
        self,
        dim: int,
        noise: NoiseDistribution,
        *,
        replicas: int = 1,
        rng: RngLike = None,
        bounds: InputBounds | None = None,
        clip: bool = False,
        privacy: PrivacyGuarantee | None = None,
    ) -> None:
        self.dim = checked_count("dim", dim)
        self.replicas = checked_count("replicas", replicas)
        if not isinstance(noise, NoiseDistribution):
            raise TypeError(f"noise must be a NoiseDistribution, got {type(noise).__name__}")
        if self.gaussian_only and not isinstance(noise, GaussianNoise):
            raise TypeError(
                f"{type(self).__name__} supports Gaussian noise only, got {type(noise).__name__}"
            )
        if bounds is not None and bounds.dim != self.dim:
            raise ValueError(f"bounds has dimension {bounds.dim}, counter has dim={self.dim}")
        self.noise = noise
        self.bounds = bounds
        self.clip = bool(clip)
        self.privacy = privacy
        self._rng = as_generator(rng)
        self.t = 0

    # ----------------------------------------------------------------- streaming
    def step(self, x: np.ndarray) -> np.ndarray:
        """Feed round ``t+1``'s value and return the private prefix sum, shape (replicas, dim);
        never refuses a step."""
        xv = self._prepare(x)
        self.t += 1
        return self._step(xv)

    def _check_room(self, steps: int) -> None:
        """Every number of further steps is covered: the guarantee holds at every t."""

    # ----------------------------------------------------------------- variances
    @abstractmethod
    def variance(self, t: int) -> float:
        """Exact variance of one coordinate of release ``t`` (any t >= 0)."""

    def variances(self, n: int) -> np.ndarray:
        """Exact per-coordinate variances of releases 1..n."""
        return np.array([self.variance(t) for t in range(1, checked_count("n", n) + 1)])

    def _check_t(self, t: int) -> int:
        t = checked_nonnegative_int("t", t)
        return t

    # ----------------------------------------------------------------- state
    def _saved_round(self, state: dict[str, Any]) -> int:
        return checked_nonnegative_int("saved round counter t", saved_field(state, "t"))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, replicas={self.replicas}, "
            f"noise={self.noise!r}, t={self.t})"
        )


def checked_prefix_gaussian(budget: Any, bounds: InputBounds, what: str, no_paper: str) -> float:
    """The checks of a Gaussian calibration for every prefix length (the anytime
    factorisations', the BLT without a horizon's): a ``tight`` budget with delta > 0 (``what``
    names the noise, ``no_paper`` says why there is no paper calibration) over inputs of
    nonzero l2 diameter, which it returns."""
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a PrivacyBudget, got {type(budget).__name__}")
    if budget.calibration != "tight":
        raise ValueError(f"{no_paper}; use calibration='tight'")
    budget.require_delta(what)
    diam = bounds.diameter(2)
    if diam == 0:
        raise ValueError(
            "the input set has zero diameter: every stream is the same, so there is nothing "
            "to protect; declare the set the inputs really range over"
        )
    return float(diam)
