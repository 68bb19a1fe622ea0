"""The binary tree mechanism (Dwork, Naor, Pitassi, Rothblum 2010; Chan, Shi, Song 2011;
Jain, Kothari, Thakurta 2012, Algorithm 5 "PrivateSum").

Notation. Step t (1-indexed) completes the dyadic nodes [t - 2^h + 1, t] for h = 0..v(t), where
v(t) is the number of trailing zero bits of t. The tree holds the dyadic intervals contained in
[1, T]; step t lies in at most L = ceil(log2(T+1)) = T.bit_length() of them, one per level, so
one round's value enters L noise draws (l1 factor L, l2 factor sqrt(L)). The prefix sum S_t is
the sum of the nodes given by the set bits of t, so release t carries popcount(t) noise draws:

    Var(release t) = popcount(t) * Var(one draw),
    max_t Var = floor(log2(T+1)) * Var(one draw).

Only the node used by a release is materialised (level v(t) at step t): memory is O(d log T)
and the amortised cost of a step is O(d) (the running release is updated incrementally).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.dyadic_blocks import AlignedBlocks, place_level
from dponline.continual.participation import (
    ParticipationSensitivity,
    tree_node_matrix,
    tree_participation,
)
from dponline.privacy.noise import NoiseDistribution

__all__ = ["BinaryTreeCounter", "levels", "trailing_zeros", "tree_sensitivity_factors"]


def levels(horizon: int) -> int:
    """ceil(log2(T+1)): the number of tree nodes (levels) a step's value lies in."""
    return int(horizon).bit_length()


def tree_sensitivity_factors(horizon: int) -> tuple[float, float]:
    """(L, sqrt(L)): one round enters L = ceil(log2(T+1)) nodes with coefficient 1."""
    n = levels(horizon)
    return float(n), float(np.sqrt(n))


def trailing_zeros(t: int) -> int:
    """The number of trailing zero bits of t >= 1 (the level of the node completed at t)."""
    return (t & -t).bit_length() - 1


class BinaryTreeCounter(AlignedBlocks, ContinualCounter):
    """Binary tree mechanism with one independent noise draw per dyadic node.

    With Laplace(b) per node it is (L * Delta_1 / b)-DP; with N(0, sigma^2) per node it is a
    Gaussian mechanism of l2 sensitivity sqrt(L) * Delta_2 (see
    :mod:`dponline.privacy.calibration`), L = ceil(log2(T+1)).
    """

    name: ClassVar[str] = "binary_tree"
    summary: ClassVar[str] = "binary tree (Dwork et al. 2010; Jain et al. 2012)"
    state_arrays: ClassVar[tuple[str, ...]] = ("partial", "nodes", "release")

    def __init__(self, horizon: int, dim: int, noise: NoiseDistribution, **kwargs: Any) -> None:
        super().__init__(horizon, dim, noise, **kwargs)
        n_levels = levels(self.horizon)
        self._partial = np.zeros((n_levels, self.replicas, self.dim))  # exact open-node sums
        self._nodes = np.zeros((n_levels, self.replicas, self.dim))  # noisy nodes of set bits
        self._release = np.zeros((self.replicas, self.dim))

    @classmethod
    def sensitivity_factors(cls, horizon: int) -> tuple[float, float]:
        return tree_sensitivity_factors(horizon)

    @classmethod
    def strategy_matrix(cls, horizon: int) -> np.ndarray:
        """One 0/1 row per dyadic node inside [1, T]: the nodes each round enters."""
        return tree_node_matrix(horizon)

    @classmethod
    def participation_sensitivity_factors(
        cls, horizon: int, participations: int, min_separation: int
    ) -> ParticipationSensitivity:
        """Exact, by the tree recursion (:func:`~dponline.continual.participation.
        tree_participation`): the sum over nodes of the squared participations inside."""
        return tree_participation(horizon, participations, min_separation)

    def variance(self, t: int) -> float:
        t = self._check_t(t)
        return int(t).bit_count() * self.noise.coordinate_variance(self.dim)

    @classmethod
    def release_variances(cls, horizon: int, noise: NoiseDistribution, dim: int) -> np.ndarray:
        pc = np.bitwise_count(np.arange(1, int(horizon) + 1, dtype=np.int64)).astype(float)
        return pc * noise.coordinate_variance(dim)

    def _step(self, x: np.ndarray) -> np.ndarray:
        t = self.t
        i = trailing_zeros(t)
        # The new node [t - 2^i + 1, t] is the open lower levels plus x; they close with it.
        node_sum = self._partial[:i].sum(axis=0) + x
        self._partial[:i] = 0.0
        self._partial[i] = node_sum
        # Bits 0..i-1 of t-1 were set and are clear in t; bit i becomes set.
        self._release -= self._nodes[:i].sum(axis=0)
        self._nodes[:i] = 0.0
        self._nodes[i] = node_sum + self._draw()
        self._release += self._nodes[i]
        return self._release.copy()

    def _block_levels(self, noise: np.ndarray, exact: list[np.ndarray]) -> None:
        """Draw the odd nodes of every level below m (the even ones are never released, as
        in _step) into ``noise`` and keep each level's last one."""
        for h, node_sum in enumerate(exact):
            last: np.ndarray | float = 0.0
            if not self._noiseless():
                z = self._draw(noise.shape[0] >> (h + 1))
                place_level(noise, z, h)
                last = z[-1]
            self._partial[h] = node_sum
            self._nodes[h] = node_sum + last
