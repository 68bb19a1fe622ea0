"""Continual counting when the horizon is not known in advance (Chan, Shi & Song 2011).

:class:`DoublingCounter` runs fresh fixed-horizon counters over consecutive blocks of lengths
1, 2, 4, 8, ... (block k covers rounds 2^k .. 2^{k+1} - 1). The release at t is the sum of the
final releases of the finished blocks plus the current block's release. Each round lies in exactly
one block, and each block is a counter calibrated for its own length at the full budget, so the
whole stream has the same event-level guarantee as one block (parallel composition over disjoint
rounds; later inputs may depend on earlier releases, which the per-block guarantees allow). The
noise grows with log t instead of being fixed in advance; Var(release t) is the sum of the final
variances of the finished blocks and the current block's variance at its own step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_generator,
    checked_nonnegative,
    checked_nonnegative_int,
    checked_positive,
    checked_real_array,
    checked_round,
    saved_field,
)
from dponline.privacy.bounds import InputBounds, check_finite
from dponline.privacy.guarantee import PrivacyGuarantee, proves_less, scaled_guarantee
from dponline.privacy.noise import NoiseDistribution
from dponline.rng import RngLike, as_generator, generator_state

__all__ = ["BlockCalibration", "DoublingCounter"]


#: relative slack of the block check (the analytic Gaussian's root finding)
_SLACK = 1e-9


class BlockCalibration(NamedTuple):
    """One block of a doubling counter: the mechanism, its noise per draw and the guarantee it
    proves for the block (``None`` for a block without privacy)."""

    mechanism: type[ContinualCounter]
    noise: NoiseDistribution
    guarantee: PrivacyGuarantee | None


class DoublingCounter:
    """A counter without a horizon: blocks of doubling length (see the module docstring),
    with the counter interface the learners use: ``bounds``, ``noise`` (the current block's),
    :meth:`step` that checks its input before anything changes, :meth:`step_block` and
    :meth:`scale_noise` (the audit's handle, before the first step).

    ``block(length)`` gives the :class:`BlockCalibration` of a block of that length. Build it
    with :func:`dponline.continual.factory.doubling_counter` (or ``make_counter(...,
    horizon=None)``), which also states the stream's guarantee.
    """

    horizon: None = None

    def __init__(
        self,
        block: Callable[[int], BlockCalibration],
        dim: int,
        *,
        bounds: InputBounds | None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
        privacy: PrivacyGuarantee | None = None,
        name: str = "doubling",
    ) -> None:
        self._calibrated = block
        self.bounds = bounds
        self.clip = bool(clip)
        self.noise_multiplier = 1.0
        self.dim = int(dim)
        self.replicas = int(replicas)
        self.privacy = privacy
        self.name = f"doubling({name})"
        self._rng = as_generator(rng)
        self.t = 0
        self._block_index = -1
        self._block: ContinualCounter | None = None
        self._carried = np.zeros((self.replicas, self.dim))  # sum of finished blocks' releases
        self._carried_var = 0.0
        self._last = np.zeros((self.replicas, self.dim))
        self._variance_cache: dict[int, np.ndarray] = {}

    def _block_noise(self, length: int) -> NoiseDistribution:
        noise = self._calibrated(length).noise
        return noise if self.noise_multiplier == 1.0 else noise.scaled(self.noise_multiplier)

    def _build_block(self, length: int, gen: np.random.Generator) -> ContinualCounter:
        b = self._calibrated(length)
        self._check_block(length, b.guarantee)
        return b.mechanism(
            length,
            self.dim,
            self._block_noise(length),
            replicas=self.replicas,
            rng=gen,
            bounds=self.bounds,
            clip=self.clip,
            privacy=b.guarantee,
        )

    def _check_block(self, length: int, g: PrivacyGuarantee | None) -> None:
        """A block proves at least the stream's stated guarantee (epsilon, delta and rho where
        stated) before it releases anything: the statement is built from the first block's
        (``tight``) or from lengths 2^0 .. 2^62 (``paper``), and a block calibrator that
        proves less at another length would leave it overstated."""
        stated = self.privacy
        if stated is None or not math.isfinite(stated.epsilon):  # non-private, or voided
            return
        if proves_less(g, stated, _SLACK):
            shown = "nothing" if g is None else f"epsilon={g.epsilon:.6g}, rho={g.rho}"
            raise RuntimeError(
                f"{self.name}: the block of {length} rounds proves {shown}, less than the "
                f"stream's stated epsilon={stated.epsilon:.6g}, rho={stated.rho}: its block "
                "calibration proves different guarantees at different lengths (a bug in the "
                "caller's block function); no block of it is released"
            )

    def _block_release_variances(self, length: int) -> np.ndarray:
        cls = self._calibrated(length).mechanism
        return cls.release_variances(length, self._block_noise(length), self.dim)  # type: ignore[attr-defined]

    @property
    def noise(self) -> NoiseDistribution:
        """The noise per draw of the current block (of the first block before the first
        step)."""
        length = 1 if self._block is None else self._block.horizon
        return self._block_noise(length)

    def _checked(self, xs: Any, block: bool) -> np.ndarray:
        """The inputs of the next step (``block=False``, shape (dim,) or (replicas, dim)) or
        block of steps ((b, dim) or (b, replicas, dim)), checked as a whole before anything
        changes: real, finite, the right shape, inside ``bounds`` (or clipped)."""
        first = self.t + 1
        if np.iscomplexobj(xs):
            raise TypeError(f"step {first} input must be real, got complex values")
        arr = checked_real_array(f"step {first} input", xs, finite=False)
        lead = arr.shape[:1] if block else ()
        shapes = ((self.dim,), (self.replicas, self.dim))
        if (block and arr.ndim not in (2, 3)) or arr.shape[len(lead) :] not in shapes:
            d, r = self.dim, self.replicas
            want = f"(b, {d}) or (b, {r}, {d})" if block else f"({d},) or ({r}, {d})"
            raise ValueError(f"input must have shape {want}, got {arr.shape}")
        what = (
            f"steps {first}.. input (index 0 is step {first})" if block else f"step {first} input"
        )
        if not np.isfinite(arr).all():
            check_finite(arr, what)
        if self.bounds is not None and not self.bounds.contains(arr):
            arr = self.bounds.check(arr, clip=self.clip, what=what)
        return arr

    def step(self, x: np.ndarray) -> np.ndarray:
        """Feed round t+1's value (checked before a new block is opened) and return the noisy
        prefix sum, shape (replicas, dim); never refuses a step for being late."""
        xv = self._checked(x, block=False)
        if self._block is None or self._block.t == self._block.horizon:
            if self._block is not None:
                self._carried = self._carried + self._last
            self._next_block()
        assert self._block is not None
        release = self._block.step(xv)
        self._last = release
        self.t += 1
        return self._carried + release

    def step_block(self, xs: np.ndarray) -> np.ndarray:
        """Feed rounds t+1 .. t+b at once (checked as a whole first) and return their releases,
        shape (b, replicas, dim): the same distribution and state as b calls of :meth:`step`;
        each block's part goes through that block's own ``step_block``."""
        arr = self._checked(xs, block=True)
        b = arr.shape[0]
        out = np.empty((b, self.replicas, self.dim))
        i = 0
        while i < b:
            if self._block is None or self._block.t == self._block.horizon:
                if self._block is not None:
                    self._carried = self._carried + self._last
                self._next_block()
            assert self._block is not None
            n = min(b - i, self._block.horizon - self._block.t)
            releases = self._block.step_block(arr[i : i + n])
            np.add(self._carried, releases, out=out[i : i + n])
            self._last = releases[-1].copy()
            self.t += n
            i += n
        return out

    def scale_noise(self, factor: float) -> None:
        """Multiply every block's noise by ``factor`` before the first step (an audit's
        handle); below 1 in all, the stated guarantee is voided (epsilon = inf)."""
        f = checked_positive("factor", factor)
        if self.t != 0:
            raise ValueError(
                f"scale the noise before the first step (this counter is at step {self.t})"
            )
        self.noise_multiplier *= f
        self._variance_cache.clear()
        if self.noise_multiplier < 1.0:
            self.privacy = scaled_guarantee(self.privacy, self.noise_multiplier)

    def state_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.name,
            "t": self.t,
            "block_index": self._block_index,
            "rng": generator_state(self._rng),
            "carried": self._carried.copy(),
            "carried_var": self._carried_var,
            "last": None if self._block is None else self._last.copy(),
            "block": None if self._block is None else self._block.state_dict(),
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
            "noise_multiplier": self.noise_multiplier,
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole of ``state`` (the noise multiplier: noise drawn at another scale is
        refused; the guarantee; its current block's state, and that the block's step agrees
        with the stream's t) and return the function that installs it, which cannot fail."""
        saved = saved_field(state, "noise_multiplier")
        if saved != self.noise_multiplier:
            raise ArgumentError(
                f"state was saved from a counter whose noise was multiplied by {saved!r}, this "
                f"one by {self.noise_multiplier!r}: it cannot continue this one"
            )
        if saved_field(state, "mechanism") != self.name:
            raise ArgumentError(f"state is for {state.get('mechanism')!r}, this is {self.name!r}")
        mine = None if self.privacy is None else self.privacy.to_dict()
        if saved_field(state, "privacy") != mine:
            raise ArgumentError(
                "state was saved from a counter with a different guarantee: its "
                "noise was calibrated for another budget or input set"
            )
        t = checked_nonnegative_int("saved round counter t", saved_field(state, "t"))
        index = saved_field(state, "block_index")
        if isinstance(index, bool) or not isinstance(index, int | np.integer) or index < -1:
            raise ArgumentError(f"saved block_index must be an integer >= -1, got {index!r}")
        index = int(index)
        rng = checked_generator("saved rng", saved_field(state, "rng"))
        shape = (self.replicas, self.dim)
        carried = np.array(
            checked_real_array("saved carried", saved_field(state, "carried"), shape)
        )
        carried_var = checked_nonnegative("saved carried_var", saved_field(state, "carried_var"))
        saved_block = saved_field(state, "block")
        if saved_block is None:
            if t != 0 or index != -1:
                raise ArgumentError(
                    f"saved state has no block at round {t} (block_index {index}): a stream "
                    "that has started has one"
                )

            def install_empty() -> None:
                self.t, self._block_index, self._rng = t, index, rng
                self._carried, self._carried_var = carried, carried_var
                self._block = None

            return install_empty
        if index < 0:
            raise ArgumentError(f"saved block_index must be >= 0 with a block, got {index}")
        last = np.array(checked_real_array("saved last", saved_field(state, "last"), shape))
        if not 2**index <= t + 1 < 2 ** (index + 1) + 1:  # before building a block that long
            raise ArgumentError(f"saved block_index {index} does not hold round {t}")
        block_t = checked_round(saved_field(saved_block, "t"), 2**index)
        if t != 2**index - 1 + block_t:
            raise ArgumentError(
                f"saved round counter t={t} disagrees with block {index} at its step {block_t} "
                f"(rounds before the block: {2**index - 1})"
            )
        block = self._build_block(2**index, rng)
        install_block = block.prepare_load(saved_block)

        def install() -> None:
            install_block()
            self.t, self._block_index = t, index
            self._carried, self._carried_var = carried, carried_var
            self._block = block
            # the block shares our generator: after restoring it, keep one stream
            self._rng = block._rng
            self._last = last

        return install

    def initial_release(self) -> np.ndarray:
        return np.zeros((self.replicas, self.dim))

    def _next_block(self) -> None:
        if self._block is not None:
            self._carried_var += self._block.variance(self._block.horizon)
        self._block_index += 1
        self._block = self._build_block(2**self._block_index, self._rng)

    def variance(self, t: int) -> float:
        """Exact per-coordinate variance of release t (depends only on t and the calibration)."""
        if t < 0:
            raise ValueError(f"t must be non-negative, got {t}")
        if t == 0:
            return 0.0
        k = int(t).bit_length() - 1  # block of round t
        total = sum(float(self._block_variances(j)[-1]) for j in range(k))
        return total + float(self._block_variances(k)[t - 2**k])

    def variances(self, n: int) -> np.ndarray:
        """The variances of releases 1..n (an anytime counter has no T to stop at), as the
        anytime factorisation's ``variances(n)``."""
        n = checked_count("n", n)
        out = np.empty(n)
        carried = 0.0
        for k in range(n.bit_length()):  # blocks 2^k .. 2^(k+1) - 1 meet the rounds 1..n
            block = self._block_variances(k)
            first, last = 2**k, min(2 ** (k + 1) - 1, n)
            out[first - 1 : last] = carried + block[: last - first + 1]
            carried += float(block[-1])
        return out

    def _block_variances(self, k: int) -> np.ndarray:
        if k not in self._variance_cache:
            self._variance_cache[k] = self._block_release_variances(2**k)
        return self._variance_cache[k]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict`; a corrupt state raises and leaves the
        counter as it was (:meth:`prepare_load`)."""
        self.prepare_load(state)()
