"""The smooth binary mechanism (Andersson & Pagh, NeurIPS 2023, arXiv 2306.09666).

A binary tree of even depth d, the smallest with binom(d, d/2) > T, whose leaves are used
*only* where the leaf index has exactly d/2 one-bits: l_0 < l_1 < ... < l_T are the d-bit
integers with d/2 one-bits in increasing order. Round s's value sits at tree position
p_s = l_{s-1}; release t is the sum of the tree positions [0, l_t), i.e. of the nodes given by
the one-bits of l_t: for a one-bit b, the node of level b whose positions share l_t's bits above
b and have bit b = 0 (the dyadic decomposition of the binary mechanism). Every release is the
sum of exactly d/2 noisy nodes, so every release has the same variance

    Var(release t) = (d/2) Var(one node),     d = log2 T + (1/2) log2 log2 T + O(1),

about four times below the binary tree's largest variance at equal privacy (the paper's
abstract). Only the nodes that some release 1..T uses carry noise.

Privacy (the strategy matrix C: one 0/1 row per used node, column s = the used nodes that
contain p_s; the releases are B (C x + z) with B the 0/1 release-by-node matrix, B C = M, the
prefix-sum matrix): one round enters at most d/2 used nodes (p_s has d/2 zero bits), the number
that public code charges. We calibrate to the exact largest column norm of C (computed for the
horizon, :func:`smooth_binary_node_counts`): the number of zero bits b of p_s such that some
used leaf shares p_s's bits above b and has bit b set; it is below d/2 for short streams.
Gaussian noise: l2 sensitivity sqrt(count); Laplace noise: l1 sensitivity count (the nodes are
released only through post-processing, each node's noise is drawn when a release first uses it,
after every round inside it, so adaptively chosen inputs are covered). A smaller exact value
exists for the releases themselves, (M e_j)^T (B B^T)^+ (M e_j) (a Gaussian with degenerate
covariance), but it is O(T^3) to compute and its adaptive version is not proven here; it is not
used.

A person's rounds (k rounds at least b apart, :mod:`~dponline.continual.participation`): C >= 0,
so the l1 factor is exactly the best separated sum of the column counts at every horizon; the
l2 factor comes from the strategy matrix up to :data:`PERSON_SEARCH_LIMIT` rounds and past it
from l2^2 = sum over nodes of n_node^2 <= k_eff sum_node n_node = k_eff l1 (no node holds more
than k_eff of the person's rounds), an upper bound, flagged. The selection ranks this counter
for one person with Laplace noise only (:mod:`~dponline.continual.selection`), where it can win
at short horizons.

Streaming: going from l_{t-1} to l_t (the next integer with the same number of one-bits), the
nodes at one-bits above the highest bit that changed are kept and the others are drawn anew:
O(d) state (the current nodes and running sums), O(1) amortised draws per step.
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.participation import (
    ParticipationSensitivity,
    best_separated_sum,
    check_pattern,
    effective_participations,
)
from dponline.privacy.arguments import checked_count
from dponline.privacy.noise import NoiseDistribution

__all__ = [
    "PERSON_SEARCH_LIMIT",
    "SmoothBinaryCounter",
    "smooth_binary_depth",
    "smooth_binary_leaves",
    "smooth_binary_matrices",
    "smooth_binary_node_counts",
]


#: up to this horizon a person's l2 factor is searched on the strategy matrix (0.13 s at 1,024
#: rounds, 3.7 s at 4,096); past it the bound k_eff l1 of the module docstring is used
PERSON_SEARCH_LIMIT = 1024


def smooth_binary_depth(horizon: int) -> int:
    """The smallest even d with binom(d, d/2) > T."""
    t = checked_count("horizon", horizon)
    d = 2
    while math.comb(d, d // 2) <= t:
        d += 2
    return d


@functools.lru_cache(maxsize=4)
def _leaves_all(bits: int, ones: int) -> np.ndarray:
    """Every ``bits``-bit integer with ``ones`` one-bits, increasing (read-only, cached).

    Built one bit at a time from the top: the n-bit integers with j one-bits, increasing, are
    the (n - 1)-bit ones with j one-bits, then those with j - 1 one-bits plus 2^(n - 1). Only
    the counts j that can still reach ``ones`` are built, and only the result is cached (a
    recursion caching every table held about 2^bits / 2 integers after the call)."""
    tables = {0: np.zeros(1, dtype=np.int64)}  # the 0-bit integers, by count of one-bits
    for n in range(1, bits + 1):
        top = np.int64(1) << np.int64(n - 1)
        grown = {}
        for j in range(max(0, ones - (bits - n)), min(n, ones) + 1):
            parts = []
            if j in tables:  # bit n - 1 clear
                parts.append(tables[j])
            if j - 1 in tables:  # bit n - 1 set
                parts.append(tables[j - 1] + top)
            grown[j] = np.concatenate(parts)
        tables = grown
    out = tables[ones]
    out.flags.writeable = False  # cached: shared by every caller
    return out


def smooth_binary_leaves(horizon: int) -> np.ndarray:
    """l_0 .. l_T (T + 1 leaves) for the horizon's depth."""
    d = smooth_binary_depth(horizon)
    return _leaves_all(d, d // 2)[: int(horizon) + 1]


def _leaf_of(index: int, d: int) -> int:
    """l_index without the table: unrank among d-bit integers with d/2 one-bits."""
    k, rest, leaf = d // 2, int(index), 0
    for pos in range(d - 1, -1, -1):
        if k == 0:
            break
        below = math.comb(pos, k)  # integers with this bit clear
        if rest >= below:
            rest -= below
            leaf |= 1 << pos
            k -= 1
    return leaf


def _next_leaf(x: int) -> int:
    """The next integer with as many one-bits as x (x > 0)."""
    low = x & -x
    ripple = x + low
    return (((ripple ^ x) >> 2) // low) | ripple


@functools.lru_cache(maxsize=4)
def smooth_binary_node_counts(horizon: int) -> np.ndarray:
    """For s = 1..T, the number of used nodes round s enters (its column's squared l2 norm and
    l1 norm in C); at most d/2 (read-only, cached).

    Round s sits at p = l_{s-1} and lies in the level-b node with p's bits above b iff bit b of
    p is 0; that node is used iff some leaf l_t (1 <= t <= T) has p's bits above b and bit b
    set. The least d-bit integer with those bits and d/2 one-bits, q, packs the missing
    need = (p's one-bits below b) - 1 one-bits at the bottom: it exists iff p has a one-bit
    below b, and the node is used iff q <= l_T (every leaf exceeds l_0 <= p). Since p <= l_T,
    p's bits above b are at most l_T's; where they are less, q < l_T; where they are equal
    (a run of consecutive rounds, the leaves being increasing) compare the bits up to b."""
    leaves = smooth_binary_leaves(horizon)
    d = smooth_binary_depth(horizon)
    positions, last = leaves[:-1], int(leaves[-1])
    counts = np.zeros(positions.size, dtype=np.int64)  # wide: callers sum and scale them
    for b in range(d):
        low = (1 << b) - 1
        # p's bits above b are below l_T's for the first `split` rounds, equal for the rest
        split = int(np.searchsorted(positions, (last >> (b + 1)) << (b + 1)))
        head = positions[:split]
        counts[:split] += ((head >> b) & 1 == 0) & (head & low != 0)
        tail = positions[split:]
        if tail.size:
            below = np.bitwise_count(tail & low).astype(np.int64)
            q_low = (1 << b) | ((np.int64(1) << np.clip(below - 1, 0, None)) - 1)
            used = ((tail >> b) & 1 == 0) & (below > 0) & (q_low <= (last & ((1 << (b + 1)) - 1)))
            counts[split:] += used
    counts.flags.writeable = False  # cached: shared by every caller
    return counts


def smooth_binary_matrices(horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """(B, C): the release-by-node and node-by-round 0/1 matrices (T x N and N x T), B C = M."""
    t = checked_count("horizon", horizon)
    leaves = smooth_binary_leaves(t)
    d = smooth_binary_depth(t)
    nodes: dict[tuple[int, int], int] = {}
    rows: list[list[int]] = []
    for leaf in leaves[1:]:
        mine = []
        for b in range(d):
            if (int(leaf) >> b) & 1:
                key = (b, int(leaf) >> (b + 1))
                mine.append(nodes.setdefault(key, len(nodes)))
        rows.append(mine)
    big_b = np.zeros((t, len(nodes)))
    for i, mine in enumerate(rows):
        big_b[i, mine] = 1.0
    big_c = np.zeros((len(nodes), t))
    for (b, key), row in nodes.items():
        pos = leaves[:-1]
        big_c[row] = ((pos >> (b + 1)) == key) & ((pos >> b) & 1 == 0)
    return big_b, big_c


class SmoothBinaryCounter(ContinualCounter):
    """The smooth binary mechanism (module docstring; Andersson & Pagh 2023)."""

    name: ClassVar[str] = "smooth_binary"
    summary: ClassVar[str] = "smooth binary mechanism, equal variance at every step (A&P 2023)"
    state_arrays: ClassVar[tuple[str, ...]] = ("prefix", "nodes")
    supported_noise: ClassVar[frozenset[str]] = frozenset({"gaussian", "laplace"})

    def __init__(self, horizon: int, dim: int, noise: NoiseDistribution, **kwargs: Any) -> None:
        super().__init__(horizon, dim, noise, **kwargs)
        self.depth = smooth_binary_depth(self.horizon)
        self._prefix = np.zeros((self.replicas, self.dim))
        # the noise of the node at each one-bit of the current leaf (zero at its other bits)
        self._nodes = np.zeros((self.depth, self.replicas, self.dim))
        self._leaf = _leaf_of(0, self.depth)

    @classmethod
    def sensitivity_factors(cls, horizon: int) -> tuple[float, float]:
        k = int(smooth_binary_node_counts(int(horizon)).max())
        return float(k), math.sqrt(k)

    @classmethod
    def strategy_matrix(cls, horizon: int) -> np.ndarray:
        """C: one 0/1 row per used node (in order of first use), column s = round s's nodes."""
        return smooth_binary_matrices(horizon)[1]

    @classmethod
    def participation_sensitivity_factors(
        cls, horizon: int, participations: int, min_separation: int
    ) -> ParticipationSensitivity:
        """One person's factors (module docstring): from the strategy matrix up to
        :data:`PERSON_SEARCH_LIMIT` rounds; past it l1 exactly (the best separated sum of the
        column counts, C >= 0) and l2^2 <= min(k_eff l1, k_eff^2 max count), flagged."""
        t, k, b = check_pattern(horizon, participations, min_separation)
        if t <= PERSON_SEARCH_LIMIT:
            return super().participation_sensitivity_factors(t, k, b)
        keff = effective_participations(t, k, b)
        counts = smooth_binary_node_counts(t)
        l1 = float(best_separated_sum(counts, keff, b))
        sq = min(keff * l1, float(keff * keff * int(counts.max())))
        how = "l1: best separated sum of the column counts; l2^2 <= k_eff x l1 (no search here)"
        return ParticipationSensitivity(t, k, b, keff, l1, math.sqrt(sq), True, keff == 1, how)

    def variance(self, t: int) -> float:
        t = self._check_t(t)
        return 0.0 if t == 0 else self.depth // 2 * self.noise.coordinate_variance(self.dim)

    @classmethod
    def release_variances(cls, horizon: int, noise: NoiseDistribution, dim: int) -> np.ndarray:
        d = smooth_binary_depth(horizon)
        return np.full(int(horizon), d // 2 * noise.coordinate_variance(dim))

    def _step(self, x: np.ndarray) -> np.ndarray:
        new = _next_leaf(self._leaf)
        high = (new ^ self._leaf).bit_length()  # bits below `high` changed or may have
        fresh = [b for b in range(high) if (new >> b) & 1]
        self._nodes[:high] = 0.0
        if fresh:
            self._nodes[fresh] = self._draw(len(fresh))
        self._leaf = new
        self._prefix = self._prefix + x
        return self._prefix + self._nodes.sum(axis=0)

    def prepare_load(self, state: dict[str, Any]):  # type: ignore[no-untyped-def]
        """The base checks, then the current leaf from the round counter (unranked)."""
        install = super().prepare_load(state)

        def install_all() -> None:
            install()
            self._leaf = _leaf_of(self.t, self.depth)

        return install_all
