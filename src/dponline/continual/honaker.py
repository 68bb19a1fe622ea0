"""Honaker's online estimator on the binary tree (Honaker 2015, "Efficient use of
differentially private binary trees"; the online, bottom-up variant).

Every dyadic node of the tree gets its own noise draw (same privacy as the binary tree: one
round's value lies in L = ceil(log2(T+1)) nodes). When a node at height h >= 1 completes, its
noisy value y is combined with the sum of its two children's estimates, which estimates the same
quantity independently, by inverse-variance weighting:

    v_0 = s^2,       v_h = 1 / (1/s^2 + 1/(2 v_{h-1})) = s^2 2^h / (2^{h+1} - 1),
    est_h = (v_h / s^2) * y + (1 - v_h / s^2) * (est_left + est_right),

with s^2 the variance of one draw. Only completed subtrees are used, so each estimate is
available as soon as its node closes. The prefix sum at t adds the estimates of the nodes of the
set bits of t, so Var(release t) = sum_{h : bit h of t} v_h, which tends to s^2 / 2 per node.
At T = 2^10 and equal zCDP this is 0.58x the binary tree's largest variance.
Memory is O(d log T); a step costs O(d) amortised.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.binary_tree import levels, trailing_zeros, tree_sensitivity_factors
from dponline.continual.dyadic_blocks import AlignedBlocks, place_level
from dponline.continual.participation import (
    ParticipationSensitivity,
    tree_node_matrix,
    tree_participation,
)
from dponline.privacy.noise import NoiseDistribution

__all__ = ["HonakerCounter", "honaker_node_variances"]


def honaker_node_variances(n_levels: int) -> np.ndarray:
    """v_h / s^2 = 2^h / (2^{h+1} - 1) for h = 0..n_levels-1."""
    h = np.arange(n_levels, dtype=float)
    return 2.0**h / (2.0 ** (h + 1) - 1.0)


class HonakerCounter(AlignedBlocks, ContinualCounter):
    """Binary tree with Honaker's online variance-weighted node estimates."""

    name: ClassVar[str] = "honaker"
    summary: ClassVar[str] = "binary tree with Honaker's online estimator (Honaker 2015)"
    state_arrays: ClassVar[tuple[str, ...]] = ("exact", "est", "release")

    def __init__(self, horizon: int, dim: int, noise: NoiseDistribution, **kwargs: Any) -> None:
        super().__init__(horizon, dim, noise, **kwargs)
        n_levels = levels(self.horizon)
        self._rel_var = honaker_node_variances(n_levels)
        self._weights = self._rel_var.copy()  # weight of a node's own noisy value: v_h / s^2
        self._exact = np.zeros((n_levels, self.replicas, self.dim))  # last closed node, exact
        self._est = np.zeros((n_levels, self.replicas, self.dim))  # its Honaker estimate
        self._release = np.zeros((self.replicas, self.dim))

    @classmethod
    def sensitivity_factors(cls, horizon: int) -> tuple[float, float]:
        return tree_sensitivity_factors(horizon)

    @classmethod
    def strategy_matrix(cls, horizon: int) -> np.ndarray:
        """The binary tree's nodes (the estimates are post-processing of the noisy nodes)."""
        return tree_node_matrix(horizon)

    @classmethod
    def participation_sensitivity_factors(
        cls, horizon: int, participations: int, min_separation: int
    ) -> ParticipationSensitivity:
        """The binary tree's (the same noisy nodes): exact, by the tree recursion."""
        return tree_participation(horizon, participations, min_separation)

    def variance(self, t: int) -> float:
        t = self._check_t(t)
        bits = [h for h in range(int(t).bit_length()) if (t >> h) & 1]
        return float(self._rel_var[bits].sum()) * self.noise.coordinate_variance(self.dim)

    @classmethod
    def release_variances(cls, horizon: int, noise: NoiseDistribution, dim: int) -> np.ndarray:
        n_levels = levels(horizon)
        t = np.arange(1, int(horizon) + 1)
        node = honaker_node_variances(n_levels)
        total = np.zeros(t.size)
        for level in range(n_levels):  # level by level: O(T) memory, not O(T levels)
            total += ((t >> level) & 1) * node[level]
        return total * noise.coordinate_variance(dim)

    def _step(self, x: np.ndarray) -> np.ndarray:
        t = self.t
        i = trailing_zeros(t)
        noise = self._draw(i + 1)
        # Levels 0..i-1 of the release (bits set in t-1, clear in t) leave the prefix sum.
        self._release -= self._est[:i].sum(axis=0)
        cur_exact = x
        cur_est = x + noise[0]
        for h in range(1, i + 1):
            # the left sibling is the last closed node at level h-1; read it before overwriting
            node_exact = self._exact[h - 1] + cur_exact
            w = self._weights[h]
            node_est = w * (node_exact + noise[h]) + (1.0 - w) * (self._est[h - 1] + cur_est)
            self._exact[h - 1], self._est[h - 1] = cur_exact, cur_est
            cur_exact, cur_est = node_exact, node_est
        self._exact[i], self._est[i] = cur_exact, cur_est
        self._release += cur_est
        return self._release.copy()

    def _block_levels(self, noise: np.ndarray, exact: list[np.ndarray]) -> None:
        """Draw every node closing inside the block and its estimate's error bottom-up,
        e_h = w_h z + (1 - w_h)(e_left + e_right); place the odd ones in ``noise`` and keep
        each level's last one."""
        below = np.empty(0)
        for h, node_sum in enumerate(exact):
            n = (noise.shape[0] >> h) - 1  # nodes 1..n of level h close inside the block
            z = self._draw(n)
            if h == 0:
                err = z
            else:
                w = self._weights[h]
                err = w * z + (1.0 - w) * (below[0 : 2 * n : 2] + below[1 : 2 * n : 2])
            place_level(noise, err[0::2], h)  # nodes j = 1, 3, ..., n
            self._exact[h] = node_sum
            self._est[h] = node_sum + err[-1]
            below = err
