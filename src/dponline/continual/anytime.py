"""The contract of a counter without a horizon (an *anytime* counter).

An anytime counter never refuses a step: its guarantee holds for every prefix of the stream,
whatever its length. It offers what learners use of a fixed-horizon
:class:`~dponline.continual.base.ContinualCounter` (``dim``, ``replicas``, ``t``, ``privacy``,
``noise``, ``name``, ``step``, ``step_block``, ``initial_release``, ``variance(t)`` for every
t >= 0, ``scale_noise`` before the first step, ``state_dict`` / ``load_state_dict`` /
``prepare_load``), with ``horizon = None``, and checks its inputs exactly as the fixed-horizon
counters do (the same checks, the same messages).

:class:`AnytimeCounter` holds that shared part; a subclass implements ``_step``,
``_step_block`` (optional), ``variance`` and its state (``_state_shapes(t)``: the arrays of a
state at round t, whose shapes may grow with t).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_generator,
    checked_nonnegative_int,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import InputBounds, check_finite
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.privacy.noise import NoiseDistribution
from dponline.rng import RngLike, as_generator, generator_state

__all__ = ["AnytimeCounter"]


class AnytimeCounter(ABC):
    """Base class of the counters without a horizon (module docstring)."""

    #: Registry-style name, e.g. "anytime_factorization".
    name: ClassVar[str]
    #: One line for listings.
    summary: ClassVar[str] = ""
    #: An anytime counter has no horizon.
    horizon: None = None

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
        if bounds is not None and bounds.dim != self.dim:
            raise ValueError(f"bounds has dimension {bounds.dim}, counter has dim={self.dim}")
        self.noise = noise
        self.bounds = bounds
        self.clip = bool(clip)
        self.privacy = privacy
        self._rng = as_generator(rng)
        self.t = 0

    # ----------------------------------------------------------------- streaming
    # the fixed-horizon counters' input check (shape, NaN/inf/complex, bounds or clip), shared
    _prepare = ContinualCounter._prepare

    def initial_release(self) -> np.ndarray:
        """The release for t = 0 (an empty prefix sum): zeros."""
        return np.zeros((self.replicas, self.dim))

    def step(self, x: np.ndarray) -> np.ndarray:
        """Feed round ``t+1``'s value and return the private prefix sum, shape (replicas, dim);
        never refuses a step."""
        xv = self._prepare(x)
        self.t += 1
        return self._step(xv)

    @abstractmethod
    def _step(self, x: np.ndarray) -> np.ndarray:
        """Advance with a validated (replicas, dim) input; ``self.t`` is already the new t."""

    def step_block(self, xs: np.ndarray) -> np.ndarray:
        """Feed rounds ``t+1 .. t+b`` at once; releases of shape (b, replicas, dim), with the
        distribution and the state of ``b`` calls of :meth:`step` (see
        :meth:`ContinualCounter.step_block`)."""
        xs = self._prepare_block(xs)
        out = np.empty((xs.shape[0], self.replicas, self.dim))
        if xs.shape[0]:
            self._step_block(xs, out)
        return out

    def _prepare_block(self, xs: np.ndarray) -> np.ndarray:
        if np.iscomplexobj(xs):
            raise TypeError(f"steps {self.t + 1}.. input must be real, got complex values")
        arr = np.asarray(xs, dtype=float)
        if arr.ndim not in (2, 3) or arr.shape[1:] not in (
            (self.dim,),
            (self.replicas, self.dim),
        ):
            raise ValueError(
                f"a block of inputs must have shape (b, {self.dim}) or "
                f"(b, {self.replicas}, {self.dim}), got {arr.shape}"
            )
        b = arr.shape[0]
        what = f"steps {self.t + 1}..{self.t + b} input (index 0 is step {self.t + 1})"
        if not np.isfinite(arr).all():
            check_finite(arr, what)
        if self.bounds is not None and not self.bounds.contains(arr):
            arr = self.bounds.check(arr, clip=self.clip, what=what)
        return arr

    def _step_block(self, xs: np.ndarray, out: np.ndarray) -> None:
        """Default: one round at a time."""
        for k, x in enumerate(xs):
            self.t += 1
            out[k] = self._step(np.broadcast_to(x, (self.replicas, self.dim)))

    def scale_noise(self, factor: float) -> None:
        """Multiply the noise by ``factor`` before the first step (an audit's handle)."""
        f = checked_positive("factor", factor)
        if self.t != 0:
            raise ValueError(
                f"scale the noise before the first step (this counter is at step {self.t})"
            )
        self.noise = self.noise.scaled(f)
        self._scale_drawn_noise(f)

    def _scale_drawn_noise(self, factor: float) -> None:  # noqa: B027 (a hook, no-op by default)
        """Scale noise drawn before the first step (none by default)."""

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
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume bit for bit, RNG state included."""
        return {
            "mechanism": self.name,
            "horizon": None,
            "dim": self.dim,
            "replicas": self.replicas,
            "t": self.t,
            "rng": generator_state(self._rng),
            "arrays": {k: np.array(v, copy=True) for k, v in self._arrays().items()},
            "config": self._config(),
        }

    def _config(self) -> dict[str, Any]:
        """What the saved noise was calibrated for: a state only loads into an identical one."""
        return {
            "noise": repr(self.noise),
            "bounds": repr(self.bounds),
            "clip": self.clip,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict`; a corrupt state raises and leaves the
        counter as it was (:meth:`prepare_load`)."""
        self.prepare_load(state)()

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole of ``state`` and return the function that installs it, which cannot
        fail (see :meth:`ContinualCounter.prepare_load`)."""
        for key in ("mechanism", "horizon", "dim", "replicas"):
            mine = self.name if key == "mechanism" else getattr(self, key)
            if saved_field(state, key) != mine:
                raise ArgumentError(
                    f"state was saved from a counter with {key}={state.get(key)!r}, "
                    f"this one has {key}={mine!r}"
                )
        saved, mine = saved_field(state, "config"), self._config()
        if saved != mine:
            diff = sorted(k for k in mine if (saved or {}).get(k) != mine[k])
            raise ArgumentError(
                f"state was saved from a counter with a different {', '.join(diff)}: its noise "
                "was calibrated for another guarantee, so it cannot continue this one"
            )
        t = checked_nonnegative_int("saved round counter t", saved_field(state, "t"))
        arrays = saved_field(state, "arrays")
        expected = self._state_shapes(t)
        if not isinstance(arrays, dict) or set(arrays) != set(expected):
            found = sorted(arrays) if isinstance(arrays, dict) else type(arrays).__name__
            raise ArgumentError(f"saved arrays {found} do not match {sorted(expected)}")
        checked = {
            k: np.array(checked_real_array(f"saved array {k!r}", arrays[k], shape))
            for k, shape in expected.items()
        }
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self.t = t
            self._rng = rng
            self._set_arrays(checked)

        return install

    @abstractmethod
    def _state_shapes(self, t: int) -> dict[str, tuple[int, ...]]:
        """The arrays of a state at round ``t`` and their shapes."""

    @abstractmethod
    def _arrays(self) -> dict[str, np.ndarray]:
        """The state's arrays (live references)."""

    @abstractmethod
    def _set_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Install checked arrays."""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, replicas={self.replicas}, "
            f"noise={self.noise!r}, t={self.t})"
        )
