"""Tree aggregation with identically distributed noise: Agarwal & Singh (2017), Algorithm 2
(TreeBasedAgg), also Ene, Nguyen & Vladu (2021), Appendix A, Algorithms 3-5.

It runs the binary tree (:class:`~dponline.continual.binary_tree.BinaryTreeCounter`) and pads
every release with fresh draws so that each release carries exactly

    P = max(1, ceil(log2 T))

independent noise draws (Algorithm 2, lines 4-6: r_t = ceil(log T) - |S_t| extra draws), and the
initial release L~_0 is the sum of P draws (Algorithm 1, lines 2-3). Since popcount(t) <=
floor(log2(T+1)) <= ceil(log2 T) for T >= 2, the padding is never negative; the ``max(1, .)``
covers T = 1. The extra draws are independent of the data, so the privacy of the tree is
unchanged (post-processing): the strategy matrix and the sensitivity under any participation
pattern are the binary tree's (inherited). Every release has variance P * Var(one draw): identically
distributed noise is what the regret analysis of 002 Theorem 3.4 uses. The padding is drawn with
``NoiseDistribution.sample_sum``: one N(0, k sigma^2) draw for k Gaussian draws, k draws otherwise.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.privacy.noise import NoiseDistribution

__all__ = ["PaddedTreeCounter", "padded_draws"]


def padded_draws(horizon: int) -> int:
    """P = max(1, ceil(log2 T)): the noise draws in every release of Algorithm 2."""
    return max(1, math.ceil(math.log2(horizon))) if horizon > 1 else 1


class PaddedTreeCounter(BinaryTreeCounter):
    """Binary tree whose every release carries exactly ceil(log2 T) noise draws (002 Alg. 2)."""

    name: ClassVar[str] = "padded_tree"
    summary: ClassVar[str] = (
        "tree with identically distributed noise (Agarwal & Singh 2017, Alg. 2)"
    )
    state_arrays: ClassVar[tuple[str, ...]] = (*BinaryTreeCounter.state_arrays, "initial")

    def __init__(self, horizon: int, dim: int, noise: NoiseDistribution, **kwargs: Any) -> None:
        super().__init__(horizon, dim, noise, **kwargs)
        self.draws = padded_draws(self.horizon)
        # Algorithm 1, lines 2-3: L~_0 is a sum of P draws, drawn once at construction.
        self._initial = self.noise.sample_sum(self._rng, self.draws, (self.replicas, self.dim))

    def _scale_drawn_noise(self, factor: float) -> None:
        self._initial *= factor  # L~_0, drawn at construction

    def initial_release(self) -> np.ndarray:
        return self._initial.copy()

    def variance(self, t: int) -> float:
        t = self._check_t(t)
        return self.draws * self.noise.coordinate_variance(self.dim)

    @classmethod
    def release_variances(cls, horizon: int, noise: NoiseDistribution, dim: int) -> np.ndarray:
        return np.full(int(horizon), padded_draws(horizon) * noise.coordinate_variance(dim))

    def _step(self, x: np.ndarray) -> np.ndarray:
        tree_release = super()._step(x)
        extra = self.draws - int(self.t).bit_count()
        if extra > 0:
            tree_release += self.noise.sample_sum(self._rng, extra, (self.replicas, self.dim))
        return tree_release

    def _pad_block(self, releases: np.ndarray) -> None:
        """The padding of local rounds 1..b-1 of an aligned block (rounds t0 + s), grouped by
        the number of extra draws P - popcount(t0 + s)."""
        rounds = self.t + np.arange(1, releases.shape[0] + 1)
        extra = self.draws - np.array([int(t).bit_count() for t in rounds])
        for k in np.unique(extra[extra > 0]):
            rows = np.flatnonzero(extra == k)
            shape = (rows.size, self.replicas, self.dim)
            releases[rows] += self.noise.sample_sum(self._rng, int(k), shape)
