"""Noise distributions for additive mechanisms.

Each distribution draws vectors (the last axis is the dimension the noise protects), knows which
sensitivity norm it is calibrated against, and reports the exact per-coordinate variance of one
draw, so that continual-counting mechanisms can report the exact variance of every release.

* :class:`LaplaceNoise`: i.i.d. Laplace coordinates, pure DP against l1 sensitivity.
* :class:`GaussianNoise`: i.i.d. Gaussian coordinates, (epsilon, delta)-DP / zCDP against l2.
* :class:`~dponline.privacy.generalized_gaussian.GeneralizedGaussianNoise`: the generalized
  Gaussian of Han et al. Lemma 2.7 for an l_r norm.

Calibration (how large the scale must be) lives in :mod:`dponline.privacy.calibration`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from dponline.privacy.arguments import checked_nonnegative

__all__ = ["GaussianNoise", "LaplaceNoise", "NoiseDistribution", "validate_scale"]


def validate_scale(name: str, value: float) -> float:
    """A noise scale: a finite real number >= 0 (numpy numbers accepted; strings, bools and
    complex values refused, as everywhere: :mod:`dponline.privacy.arguments`)."""
    return checked_nonnegative(name, value)


class NoiseDistribution(ABC):
    """A centred noise distribution over vectors in R^d, drawn with an explicit Generator."""

    #: The norm of the sensitivity this distribution is calibrated against: "l1", "l2" or "lr".
    sensitivity_norm: str

    @abstractmethod
    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Draw an array of the given shape; the last axis is the vector dimension d."""

    def sample_sum(
        self, rng: np.random.Generator, count: int, shape: tuple[int, ...]
    ) -> np.ndarray:
        """The sum of ``count`` independent draws of the given shape (exact in distribution).

        The default draws them one by one; a family closed under sums overrides it.
        """
        if count <= 0:
            return np.zeros(shape)
        return self.sample(rng, (count, *shape)).sum(axis=0)

    @abstractmethod
    def coordinate_variance(self, dim: int) -> float:
        """Exact variance of one coordinate of one d-dimensional draw."""

    @abstractmethod
    def scaled(self, factor: float) -> NoiseDistribution:
        """The distribution of ``factor * Z`` for ``Z`` drawn from this one."""

    @property
    @abstractmethod
    def scale(self) -> float:
        """The scale parameter (Laplace b, Gaussian sigma, generalized Gaussian sigma)."""


#: below this many draws a Laplace sample uses inversion (:meth:`LaplaceNoise.sample`)
_FEW = 64


@dataclass(frozen=True)
class LaplaceNoise(NoiseDistribution):
    """I.i.d. Laplace(0, b) coordinates, density exp(-|z|/b) / (2b); variance 2 b^2.

    With ``b = Delta_1 / epsilon`` it gives epsilon-DP to a query of l1 sensitivity Delta_1
    (the Laplace mechanism, Dwork et al. 2006; used per tree node in Agarwal & Singh (2017)
    Theorem 3.1 and Ene et al. (2021) Lemma 5.1).
    """

    b: float
    sensitivity_norm: str = "l1"

    def __post_init__(self) -> None:
        object.__setattr__(self, "b", validate_scale("Laplace scale b", self.b))

    @classmethod
    def calibrated(cls, l1_sensitivity: float, epsilon: float) -> LaplaceNoise:
        """The Laplace mechanism: b = Delta_1 / epsilon gives pure epsilon-DP (exactly)."""
        eps = validate_scale("epsilon", epsilon)
        if eps == 0:
            raise ValueError("epsilon must be positive")
        return cls(validate_scale("l1 sensitivity", l1_sensitivity) / eps)

    @property
    def scale(self) -> float:
        return self.b

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Exactly Laplace(0, b), by a method chosen by the size alone (so a seed gives one
        stream): fewer than :data:`_FEW` draws by the generator's inversion sampler (the least
        overhead a call), more as b S E with E standard exponential and S a fair sign
        independent of it (the density of S E is exp(-|z|) / 2), E from the generator's
        exponential sampler and S from one raw bit each, 64 signs per raw draw: about 1.7x as
        fast per draw as a difference of two exponentials."""
        if self.b == 0:
            return np.zeros(shape)
        n = math.prod(shape)
        if n < _FEW:
            return rng.laplace(0.0, self.b, size=shape)
        e = rng.standard_exponential(size=n)
        raw = rng.bit_generator.random_raw(-(-n // 64)).view(np.uint8)
        bit = np.unpackbits(raw, count=n).view(np.int8)  # 0 or 1
        np.copysign(e, 0.5 - bit, out=e)  # + where the bit is 0, - where it is 1
        if self.b != 1.0:
            e *= self.b
        return e.reshape(shape)

    def coordinate_variance(self, dim: int) -> float:
        return 2.0 * self.b**2

    def scaled(self, factor: float) -> LaplaceNoise:
        return LaplaceNoise(self.b * validate_scale("factor", abs(factor)))


@dataclass(frozen=True)
class GaussianNoise(NoiseDistribution):
    """I.i.d. N(0, sigma^2) coordinates.

    Gives rho-zCDP with rho = Delta_2^2 / (2 sigma^2) to a query of l2 sensitivity Delta_2
    (Bun & Steinke 2016), and the exact (epsilon, delta) curve of the analytic Gaussian
    mechanism (Balle & Wang 2018); see :mod:`dponline.privacy.accounting`.
    """

    sigma: float
    sensitivity_norm: str = "l2"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", validate_scale("Gaussian sigma", self.sigma))

    @classmethod
    def calibrated(cls, l2_sensitivity: float, epsilon: float, delta: float) -> GaussianNoise:
        """The least sigma for (epsilon, delta)-DP: the analytic Gaussian mechanism."""
        from dponline.privacy.accounting import gaussian_sigma

        return cls(gaussian_sigma(l2_sensitivity, epsilon, delta))

    @property
    def scale(self) -> float:
        return self.sigma

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return rng.normal(0.0, self.sigma, size=shape) if self.sigma > 0 else np.zeros(shape)

    def sample_sum(
        self, rng: np.random.Generator, count: int, shape: tuple[int, ...]
    ) -> np.ndarray:
        """A sum of ``count`` i.i.d. N(0, sigma^2) draws is one N(0, count sigma^2) draw."""
        if count <= 0 or self.sigma == 0:
            return np.zeros(shape)
        return rng.normal(0.0, self.sigma * np.sqrt(count), size=shape)

    def coordinate_variance(self, dim: int) -> float:
        return self.sigma**2

    def scaled(self, factor: float) -> GaussianNoise:
        return GaussianNoise(self.sigma * validate_scale("factor", abs(factor)))
