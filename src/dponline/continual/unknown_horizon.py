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

from collections.abc import Callable
from typing import Any

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.rng import RngLike, as_generator, generator_from_state, generator_state

__all__ = ["DoublingCounter"]

BlockFactory = Callable[[int, np.random.Generator], ContinualCounter]


class DoublingCounter:
    """A counter without a horizon: blocks of doubling length (see the module docstring).

    ``make_block(length, rng)`` builds the fixed-horizon counter for one block; use
    :func:`dponline.continual.make_counter` with ``horizon=None`` rather than building this by hand.
    """

    horizon: None = None

    def __init__(
        self,
        make_block: BlockFactory,
        block_variances: Callable[[int], np.ndarray],
        dim: int,
        *,
        replicas: int = 1,
        rng: RngLike = None,
        privacy: PrivacyGuarantee | None = None,
        name: str = "doubling",
    ) -> None:
        self._make_block = make_block
        self._block_variance_formula = block_variances
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

    def initial_release(self) -> np.ndarray:
        return np.zeros((self.replicas, self.dim))

    def _next_block(self) -> None:
        if self._block is not None:
            self._carried_var += self._block.variance(self._block.horizon)
        self._block_index += 1
        self._block = self._make_block(2**self._block_index, self._rng)

    def step(self, x: np.ndarray) -> np.ndarray:
        """Feed round t+1's value; never refuses a step."""
        if self._block is None or self._block.t == self._block.horizon:
            if self._block is not None:
                self._carried = self._carried + self._last
            self._next_block()
        assert self._block is not None
        release = self._block.step(x)
        self._last = release
        self.t += 1
        return self._carried + release

    def variance(self, t: int) -> float:
        """Exact per-coordinate variance of release t (depends only on t and the calibration)."""
        if t < 0:
            raise ValueError(f"t must be non-negative, got {t}")
        if t == 0:
            return 0.0
        k = int(t).bit_length() - 1  # block of round t
        total = sum(float(self._block_variances(j)[-1]) for j in range(k))
        return total + float(self._block_variances(k)[t - 2**k])

    def _block_variances(self, k: int) -> np.ndarray:
        if k not in self._variance_cache:
            self._variance_cache[k] = self._block_variance_formula(2**k)
        return self._variance_cache[k]

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
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("mechanism") != self.name:
            raise ValueError(f"state is for {state.get('mechanism')!r}, this is {self.name!r}")
        mine = None if self.privacy is None else self.privacy.to_dict()
        if state.get("privacy") != mine:
            raise ValueError(
                "state was saved from a counter with a different guarantee: its "
                "noise was calibrated for another budget or input set"
            )
        self.t = int(state["t"])
        self._block_index = int(state["block_index"])
        self._rng = generator_from_state(state["rng"])
        self._carried = np.array(state["carried"], dtype=float)
        self._carried_var = float(state["carried_var"])
        if state["block"] is None:
            self._block = None
        else:
            self._block = self._make_block(2**self._block_index, self._rng)
            self._block.load_state_dict(state["block"])
            # the block shares our generator: after restoring it, keep one stream
            self._rng = self._block._rng
            self._last = np.array(state["last"], dtype=float)
