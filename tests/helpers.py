"""Test helpers: deterministic 'noise' that makes a mechanism's structure visible."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dponline.privacy.noise import NoiseDistribution


@dataclass(frozen=True)
class ConstantNoise(NoiseDistribution):
    """Every draw is the constant ``value`` (variance reported as value^2 for bookkeeping)."""

    value: float = 1.0
    sensitivity_norm: str = "l2"

    @property
    def scale(self) -> float:
        return self.value

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return np.full(shape, self.value)

    def coordinate_variance(self, dim: int) -> float:
        return self.value**2

    def scaled(self, factor: float) -> ConstantNoise:
        return ConstantNoise(self.value * factor)


@dataclass(frozen=True)
class CountingNoise(NoiseDistribution):
    """Draws ones and counts how many scalars it has drawn (to count noise draws)."""

    counter: list  # one-element list, mutated
    sensitivity_norm: str = "l2"

    @property
    def scale(self) -> float:
        return 1.0

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        self.counter[0] += int(np.prod(shape))
        return np.ones(shape)

    def coordinate_variance(self, dim: int) -> float:
        return 1.0

    def scaled(self, factor: float) -> CountingNoise:
        return self
