"""The continual-counting protocol: private prefix sums released one step at a time.

A counter is built for a horizon T and a dimension d (and ``replicas`` independent copies along a
leading axis, so that R seeds cost one vectorised step). Each call ``step(x_t)`` takes the round's
value, shape ``(d,)`` (shared by every replica) or ``(replicas, d)``, and returns the release
``S_t + Z_t`` of the prefix sum ``S_t = x_1 + ... + x_t``, shape ``(replicas, d)``.

Every counter reports the exact per-coordinate variance of every release (``variance(t)``), and
the factors by which one round's sensitivity is multiplied in l1 and l2 over everything the
mechanism releases (``sensitivity_factors``), from which :mod:`dponline.privacy.calibration`
derives its noise. A fixed-horizon counter refuses step T+1.

User-level privacy (one person, at most k rounds at least b apart): a counter states its
*strategy matrix* (``strategy_matrix(horizon)``, shape (noise draws per coordinate, T): column j
is what round j's value enters before noise, the mechanism releasing B (C x + z) with B C the
prefix-sum matrix), and ``participation_sensitivity_factors(horizon, k, b)`` gives its l1 and l2
factors under the pattern (:mod:`dponline.continual.participation`): from the strategy matrix by
default, by a formula of the structure where a class has one (the trees, Toeplitz strategies).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.continual.participation import (
    STRATEGY_LIMIT,
    ParticipationSensitivity,
    check_pattern,
    strategy_participation,
    triangle_bound,
)
from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_generator,
    checked_positive,
    checked_real_array,
    checked_round,
    saved_field,
)
from dponline.privacy.bounds import InputBounds, check_finite
from dponline.privacy.guarantee import PrivacyGuarantee, scaled_guarantee
from dponline.privacy.noise import NoiseDistribution
from dponline.rng import RngLike, as_generator, generator_state

__all__ = ["ContinualCounter", "HorizonExceededError", "StreamingCounter"]


class HorizonExceededError(ValueError):
    """A fixed-horizon counter was asked for step T+1."""


class StreamingCounter(ABC):
    """What every counter shares, with a horizon (:class:`ContinualCounter`) or without one
    (:class:`~dponline.continual.anytime.AnytimeCounter`): the input checks, block releases,
    the audit's noise handle and the saved state. A subclass sets ``horizon`` (an int, or
    ``None``), ``dim``, ``replicas``, ``noise``, ``bounds``, ``clip``, ``privacy``, ``_rng`` and
    ``t``, and implements ``_step``, :meth:`_check_room` (whether b more steps are allowed),
    :meth:`_saved_round` and :meth:`_state_shapes` (what a saved state at round t holds) and
    ``_arrays`` / ``_set_arrays``."""

    #: Registry name, e.g. "binary_tree".
    name: ClassVar[str]
    #: One line for listings.
    summary: ClassVar[str] = ""
    horizon: int | None
    dim: int
    replicas: int
    noise: NoiseDistribution
    bounds: InputBounds | None
    clip: bool
    privacy: PrivacyGuarantee | None
    t: int
    _rng: np.random.Generator

    # ----------------------------------------------------------------- streaming
    def initial_release(self) -> np.ndarray:
        """The release for t = 0 (an empty prefix sum): zeros unless the mechanism pads it."""
        return np.zeros((self.replicas, self.dim))

    def _prepare(self, x: np.ndarray) -> np.ndarray:
        if np.iscomplexobj(x):
            raise TypeError(f"step {self.t + 1} input must be real, got complex values")
        arr = checked_real_array(f"step {self.t + 1} input", x, finite=False)
        if not np.isfinite(arr).all():
            check_finite(arr, f"step {self.t + 1} input")  # raises with the offending value
        if arr.ndim == 0 and self.dim == 1:  # one coordinate: a plain number too
            arr = arr.reshape(1)
        if arr.shape == (self.dim,):
            # check the shared input once, before broadcasting it to every replica
            if self.bounds is not None and not self.bounds.contains(arr):
                arr = self.bounds.check(arr, clip=self.clip, what=f"step {self.t + 1} input")
            return np.broadcast_to(arr, (self.replicas, self.dim))
        if arr.shape != (self.replicas, self.dim):
            raise ValueError(
                f"input must have shape ({self.dim},) or ({self.replicas}, {self.dim}), "
                f"got {arr.shape}"
            )
        if self.bounds is not None and not self.bounds.contains(arr):
            arr = self.bounds.check(arr, clip=self.clip, what=f"step {self.t + 1} input")
        return arr

    @abstractmethod
    def _step(self, x: np.ndarray) -> np.ndarray:
        """Advance with a validated (replicas, dim) input; ``self.t`` is already the new t."""

    def step_block(self, xs: np.ndarray) -> np.ndarray:
        """Feed rounds ``t+1 .. t+b`` at once and return their releases, shape
        (b, replicas, dim): the same distribution as ``b`` calls of :meth:`step`, and the same
        state after them (so stepping on, saving and resuming work as after single steps).

        ``xs`` has shape (b, dim) (shared by every replica) or (b, replicas, dim) and is
        checked as a whole (bounds, NaN); a block that would pass the horizon is refused
        before anything is released. Mechanisms whose noise does not depend on the data
        compute the block's noise vectorised over time (the trees by levels, the BLT as block
        matrices, the square root from its noise drawn ahead); the others step one round at a
        time. This is the fast path of oblivious streams, whose losses are fixed before the
        first round.
        """
        xs = self._prepare_block(xs)
        b = xs.shape[0]
        out = np.empty((b, self.replicas, self.dim))
        if b:
            self._step_block(xs, out)
        return out

    def _prepare_block(self, xs: np.ndarray) -> np.ndarray:
        if np.iscomplexobj(xs):
            raise TypeError(f"steps {self.t + 1}.. input must be real, got complex values")
        arr = checked_real_array(f"steps {self.t + 1}.. input", xs, finite=False)
        if arr.ndim not in (2, 3) or arr.shape[1:] not in (
            (self.dim,),
            (self.replicas, self.dim),
        ):
            raise ValueError(
                f"a block of inputs must have shape (b, {self.dim}) or "
                f"(b, {self.replicas}, {self.dim}), got {arr.shape}"
            )
        b = arr.shape[0]
        self._check_room(b)
        what = f"steps {self.t + 1}..{self.t + b} input (index 0 is step {self.t + 1})"
        if not np.isfinite(arr).all():
            check_finite(arr, what)
        if self.bounds is not None and not self.bounds.contains(arr):
            arr = self.bounds.check(arr, clip=self.clip, what=what)
        return arr

    def _step_block(self, xs: np.ndarray, out: np.ndarray) -> None:
        """Write the releases of the validated block ``xs`` into ``out`` and advance ``self.t``
        by its length. The default steps one round at a time."""
        for k, x in enumerate(xs):
            self.t += 1
            out[k] = self._step(np.broadcast_to(x, (self.replicas, self.dim)))

    def _noiseless(self) -> bool:
        """Whether every draw is exactly zero (a non-private learner's exact counter)."""
        return self.noise.scale == 0

    def scale_noise(self, factor: float) -> None:
        """Multiply the noise by ``factor`` before the first step (an audit's handle): the
        distribution of later draws and every draw already made at construction (a mechanism
        that draws ahead scales them in :meth:`_scale_drawn_noise`). Laplace and Gaussian
        draws are their scale times a standard draw, so this is the counter built with the
        scaled noise, drawing the same randomness. A factor below 1 voids the calibrated
        guarantee, as a learner's does: ``privacy`` then says so (epsilon = inf,
        :func:`~dponline.privacy.guarantee.scaled_guarantee`)."""
        f = checked_positive("factor", factor)
        if self.t != 0:
            raise ValueError(
                f"scale the noise before the first step (this counter is at step {self.t})"
            )
        self.noise = self.noise.scaled(f)
        self._scale_drawn_noise(f)
        self.privacy = scaled_guarantee(self.privacy, f)

    def _scale_drawn_noise(self, factor: float) -> None:  # noqa: B027 (a hook, no-op by default)
        """Scale the noise drawn at construction (none by default: draws happen per step)."""

    def _draw(self, count: int | None = None) -> np.ndarray:
        shape = (self.replicas, self.dim) if count is None else (count, self.replicas, self.dim)
        return self.noise.sample(self._rng, shape)

    # ----------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume bit for bit, RNG state included."""
        return {
            "mechanism": self.name,
            "horizon": self.horizon,
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
        """Restore a state saved by :meth:`state_dict` of an identically built counter; a
        corrupt state raises and leaves the counter as it was (:meth:`prepare_load`)."""
        self.prepare_load(state)()

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole of ``state`` (mechanism, shape, calibration, the step counter, every
        array's shape and finiteness, the RNG state) and return the function that installs it,
        which cannot fail: a learner checks its whole state, its counter's included, before it
        changes anything."""
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
                "was calibrated for another guarantee, so it cannot continue this one "
                f"(saved { ({k: (saved or {}).get(k) for k in diff})!r})"
            )
        t = self._saved_round(state)
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
    def _check_room(self, steps: int) -> None:
        """Raise if ``steps`` more steps would pass what the guarantee covers."""

    @abstractmethod
    def _saved_round(self, state: dict[str, Any]) -> int:
        """The saved step counter, checked."""

    @abstractmethod
    def _state_shapes(self, t: int) -> dict[str, tuple[int, ...]]:
        """The arrays of a state saved at step ``t`` and their shapes."""

    @abstractmethod
    def _arrays(self) -> dict[str, np.ndarray]:
        """The state's arrays (live references)."""

    @abstractmethod
    def _set_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Install checked arrays."""


class ContinualCounter(StreamingCounter):
    """Base class of the continual-counting mechanisms (see the module docstring).

    Parameters
    ----------
    horizon:
        The number of steps T the counter is built for.
    dim:
        The dimension d of each step's value.
    noise:
        The noise distribution of one noise draw (a tree node, a factorisation coordinate).
    replicas:
        Independent copies run side by side (leading axis of every release).
    rng:
        Seed or Generator for the noise (never a global RNG).
    bounds:
        The per-step input contract; when given, every input is checked against it.
    clip:
        Map out-of-bounds inputs into ``bounds`` instead of raising.
    privacy:
        The guarantee this counter gives for inputs within ``bounds`` (set by
        :func:`dponline.continual.make_counter`); ``None`` for a counter built by hand.
    """

    #: Noise families this mechanism is valid for ("laplace", "gaussian", "generalized_gaussian").
    supported_noise: ClassVar[frozenset[str]] = frozenset(
        {"laplace", "gaussian", "generalized_gaussian"}
    )
    #: Names of the array attributes (stored as ``self._<name>``) that make up the state.
    state_arrays: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        horizon: int,
        dim: int,
        noise: NoiseDistribution,
        *,
        replicas: int = 1,
        rng: RngLike = None,
        bounds: InputBounds | None = None,
        clip: bool = False,
        privacy: PrivacyGuarantee | None = None,
    ) -> None:
        self.horizon = checked_count("horizon", horizon)
        self.dim = checked_count("dim", dim)
        self.replicas = checked_count("replicas", replicas)
        if not isinstance(noise, NoiseDistribution):
            raise TypeError(f"noise must be a NoiseDistribution, got {type(noise).__name__}")
        family = _noise_family(noise)
        if family is not None and family not in self.supported_noise:
            raise TypeError(
                f"{type(self).__name__} supports {sorted(self.supported_noise)} noise, "
                f"got {type(noise).__name__}"
            )
        if bounds is not None and bounds.dim != self.dim:
            raise ValueError(f"bounds has dimension {bounds.dim}, counter has dim={self.dim}")
        self.noise = noise
        self.bounds = bounds
        self.clip = bool(clip)
        self.privacy = privacy
        self._rng = as_generator(rng)
        self.t = 0

    # ----------------------------------------------------------------- structure
    @classmethod
    @abstractmethod
    def sensitivity_factors(cls, horizon: int) -> tuple[float, float]:
        """(l1, l2) norms of the largest column of the mechanism's strategy matrix.

        One round's value moving by a vector v moves everything the mechanism releases
        (its noisy nodes or coordinates) by at most ``l1 * ||v||_1`` in l1 and
        ``l2 * ||v||_2`` in l2; calibrations multiply the input set's diameter by these.
        """

    @classmethod
    def draws_per_step(cls, horizon: int) -> int:
        """How many noise draws one step's value enters (for per-draw composition)."""
        l1, _ = cls.sensitivity_factors(horizon)
        return round(l1)

    @classmethod
    @abstractmethod
    def strategy_matrix(cls, horizon: int) -> np.ndarray:
        """The strategy matrix C, shape (noise draws per coordinate, horizon): column j is what
        step j's value (a scalar of sensitivity 1) enters before noise; the mechanism releases
        B (C x + z) with B C the prefix-sum matrix. Every counter states it: user-level
        sensitivities (:mod:`dponline.continual.participation`) are computed from it."""

    @classmethod
    def participation_strategy_matrix(
        cls, horizon: int, participations: int, min_separation: int
    ) -> np.ndarray:
        """The strategy matrix of the counter built for the pattern: :meth:`strategy_matrix`,
        unless the mechanism chooses its structure for the pattern (the BLT)."""
        return cls.strategy_matrix(horizon)

    @classmethod
    def participation_sensitivity_factors(
        cls, horizon: int, participations: int, min_separation: int
    ) -> ParticipationSensitivity:
        """The (l1, l2) factors when one person contributes to at most ``participations``
        steps, any two at least ``min_separation`` apart (|i - j| >= b; b = 1 allows
        consecutive steps), with exactness flags and the method
        (:class:`~dponline.continual.participation.ParticipationSensitivity`). By default from
        :meth:`strategy_matrix` (:func:`~dponline.continual.participation.
        strategy_participation`; past ``STRATEGY_LIMIT`` rounds k_eff times one round's
        factors, flagged as an upper bound); ValueError if the class states no strategy
        matrix."""
        return _participation_from_strategy(cls, int(horizon), participations, min_separation)

    @classmethod
    def participation_release_variances(
        cls,
        horizon: int,
        noise: NoiseDistribution,
        dim: int,
        participations: int,
        min_separation: int,
    ) -> np.ndarray:
        """:meth:`release_variances` of the counter built for the pattern (the same, unless the
        mechanism chooses its structure for the pattern, as the BLT does)."""
        return cls.release_variances(horizon, noise, dim)

    @classmethod
    def participation_max_variance(
        cls,
        horizon: int,
        noise: NoiseDistribution,
        dim: int,
        participations: int,
        min_separation: int,
    ) -> float:
        """The largest of :meth:`participation_release_variances` (a mechanism with a closed
        form for it, the BLT, answers without the T variances)."""
        return float(
            cls.participation_release_variances(
                horizon, noise, dim, participations, min_separation
            ).max()
        )

    @abstractmethod
    def variance(self, t: int) -> float:
        """Exact variance of one coordinate of release ``t`` (0 <= t <= horizon)."""

    def _check_t(self, t: int) -> int:
        if not 0 <= t <= self.horizon:
            raise ValueError(f"t must lie in [0, {self.horizon}], got {t}")
        return int(t)

    @classmethod
    @abstractmethod
    def release_variances(cls, horizon: int, noise: NoiseDistribution, dim: int) -> np.ndarray:
        """Exact per-coordinate variances of releases 1..T for a counter of this class built
        with ``noise`` (no counter, no noise draws needed)."""

    def variances(self) -> np.ndarray:
        """Exact per-coordinate variances of releases 1..T."""
        return type(self).release_variances(self.horizon, self.noise, self.dim)

    @property
    def max_variance(self) -> float:
        return float(self.variances().max())

    @property
    def mean_variance(self) -> float:
        return float(self.variances().mean())

    def step(self, x: np.ndarray) -> np.ndarray:
        """Feed round ``t+1``'s value and return the private prefix sum, shape (replicas, dim)."""
        if self.t >= self.horizon:
            raise HorizonExceededError(
                f"{type(self).__name__} was built for horizon T={self.horizon} and has released "
                f"all {self.horizon} steps; step {self.t + 1} would void its privacy guarantee. "
                "Build it with a larger horizon, or with horizon=None through make_counter "
                "for an unknown horizon."
            )
        xv = self._prepare(x)
        self.t += 1
        return self._step(xv)

    def _check_room(self, steps: int) -> None:
        if self.t + steps > self.horizon:
            raise HorizonExceededError(
                f"{type(self).__name__} was built for horizon T={self.horizon} and is at step "
                f"{self.t}; a block of {steps} steps would pass it and void its privacy guarantee"
            )

    def _saved_round(self, state: dict[str, Any]) -> int:
        return checked_round(saved_field(state, "t"), self.horizon)

    def _state_shapes(self, t: int) -> dict[str, tuple[int, ...]]:
        return {k: np.shape(v) for k, v in self._arrays().items()}

    def _arrays(self) -> dict[str, np.ndarray]:
        """The mechanism's internal arrays (live references), named by ``state_arrays``."""
        return {name: getattr(self, f"_{name}") for name in self.state_arrays}

    def _set_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Install arrays saved by :meth:`_arrays`."""
        for name in self.state_arrays:
            setattr(self, f"_{name}", arrays[name])

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(horizon={self.horizon}, dim={self.dim}, "
            f"replicas={self.replicas}, noise={self.noise!r}, t={self.t})"
        )


@functools.lru_cache(maxsize=128)
def _participation_from_strategy(
    cls: type[ContinualCounter], horizon: int, participations: int, min_separation: int
) -> ParticipationSensitivity:
    t, k, b = check_pattern(horizon, participations, min_separation)
    if cls.strategy_matrix.__func__ is ContinualCounter.strategy_matrix.__func__:  # type: ignore[attr-defined]
        raise ValueError(
            f"{cls.__name__} states no strategy_matrix(horizon): its sensitivity when one "
            "person contributes to several steps is unknown"
        )
    if t > STRATEGY_LIMIT:
        return triangle_bound(cls.sensitivity_factors(t), t, k, b)
    return strategy_participation(cls.participation_strategy_matrix(t, k, b), k, b)


def _noise_family(noise: NoiseDistribution) -> str | None:
    from dponline.privacy.noise import GaussianNoise, LaplaceNoise

    if isinstance(noise, LaplaceNoise):
        return "laplace"
    if isinstance(noise, GaussianNoise):
        return "gaussian"
    if type(noise).__name__ == "GeneralizedGaussianNoise":
        return "generalized_gaussian"
    return None
