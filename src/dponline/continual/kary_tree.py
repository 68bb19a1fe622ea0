"""The k-ary tree with negative digits (Andersson, Pagh, Steiner & Torkamani, "Count on Your
Elders: Laplace vs Gaussian Noise", FORC 2025, arXiv 2408.07021, Section 3): a generalisation of
the binary tree for pure (epsilon) DP with Laplace noise.

The construction below is ours, written from the paper's abstract (a k-ary number system with
negative digits, Laplace noise); its body was not available to us, so the mechanism, its
sensitivity and its variances are derived and proven here.

**Cells.** Fix an odd arity k >= 3 and a number of levels h >= 1; level j (0 <= j < h) has cell
size s_j = k^j, and its cells are the aligned blocks [m s_j + 1, (m + 1) s_j], m >= 0.

**Digits.** For t >= 1 let R_j(t) be the multiple of s_j nearest to t (unique: s_j is odd) for
j < h, and R_h(t) = 0. The digits d_j(t) = (R_j - R_{j+1}) / s_j lie in {-(k-1)/2 .. (k-1)/2}
for j < h - 1 (the balanced base-k digits of t), and the top digit d_{h-1} = R_{h-1} / s_{h-1} is
a non-negative integer (unbounded: when k^h > 2T it is balanced too). Since R_0 = t,

    1_[1, t] = sum_{j<h} (1_[1, R_j] - 1_[1, R_{j+1}]),

and each term is +-(the |d_j| level-j cells between R_{j+1} and R_j): added when d_j > 0 (the
cells after R_{j+1}), subtracted when d_j < 0 (the cells before R_{j+1}). So the prefix sum S_t is
a signed sum of sum_j |d_j(t)| cells. A cell may end after t (a negative digit subtracts cells of
the rounded-up position R_{j+1} > t): their data parts cancel exactly and only their noise stays.

**The mechanism** (a factorisation, design.md "Continual counting"). Let C be the 0/1 matrix whose
rows are the cells some release t <= T uses (:func:`kary_factors`), z one independent draw per
such cell and B the signed selection above, so that B C = M (the prefix-sum matrix) by the
identity. The counter releases

    B (C x + z) = M x + B z:    release t = S_t + sum_j (signed sum of the |d_j(t)| cells' draws).

*Privacy* (ours). One round's value enters at most one used cell per level: the column of C of
round s has l1 norm n_s = the number of levels whose cell containing s is used (<= h), and l2
norm sqrt(n_s). C x + z with Laplace(b) draws is (max_s n_s) Delta_1 / b - DP (the Laplace
mechanism), with Gaussian draws a Gaussian mechanism of l2 sensitivity sqrt(max_s n_s) Delta_2,
and the releases are its post-processing by B. :func:`kary_column_norms` computes n_s exactly.
For inputs chosen adaptively (a learner's next input depends on earlier releases, and a release
may use a cell that ends after t, whose draw is then already in it), the same bound holds: the
releases are y = M x + B z with x_s a function of y_1..y_{s-1}, a triangular map of z with unit
Jacobian, so the density ratio of the whole release sequence under neighbouring streams is that
of z shifted by C(x - x'), at most exp(||C (x - x')||_1 / b) for Laplace draws; for Gaussian
draws it is a fully adaptive composition of Gaussian mechanisms (Denisov et al. 2022,
Theorem 2.1).

*Variance* (ours). The cells a release uses are distinct, so

    Var(release t) = (sum_j |d_j(t)|) Var(one draw).

For Laplace noise at epsilon, Var(one draw) = 2 (max_s n_s)^2 / epsilon^2 per unit l1 diameter.

*Streaming* (ours). The level-j cells a release uses lie within (k-1)/2 cells either side of the
anchor R_{j+1}(t), which never decreases; the k - 1 cells around one anchor form a *group*, and
distinct anchors have disjoint groups. A counter draws a group's k - 1 cells when its anchor
becomes current and keeps their signed running sums (one per digit value); the top level keeps the
running sum of its cells 0 .. d_{h-1} - 1, drawing one more cell when the top digit grows. State:
(h - 1) k + 2 vectors of d numbers per replica; a step costs O(h d).

**Choice of (k, h).** :func:`kary_layout` returns, for a horizon, the layout of least largest
variance under Laplace noise at equal epsilon, (max_s n_s)^2 max_t sum_j |d_j(t)| (exact, cached).
At T = 1024 it is k = 13, h = 3 (largest digit sum 18, three levels): 324 / epsilon^2 against
Honaker's 1,404 / epsilon^2 (0.23x; ``dponline.experiments.mechanism_table.laplace_table``).
With Gaussian noise at rho = 1/2 and unit l2 sensitivity the same layout has largest variance
3 x 18 = 54 (Honaker 63.8, the square root 10.71): valid, but dominated by the factorisations.
The paper's asymptotic optimum is k = 19 or 21 (MSE ~ (k^2 - 1) / (2 k ln^3 k) ln^3 T per
epsilon^-2); at finite T the rounding of h decides. :meth:`KaryTreeCounter.with_layout` fixes
another (k, h).
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.participation import (
    STRATEGY_LIMIT,
    ParticipationSensitivity,
    best_separated_sum,
    cell_level_bound_sq,
    check_pattern,
    effective_participations,
)
from dponline.privacy.noise import NoiseDistribution

__all__ = [
    "KaryTreeCounter",
    "kary_column_norms",
    "kary_digits",
    "kary_factors",
    "kary_layout",
    "kary_max_column_norm",
]

#: rounds per chunk of the computations over the whole horizon (layout, column norms, variances),
#: so that their memory does not grow with it
_CHUNK = 2**16
#: past this horizon the layout is the bound's best and the sensitivity factor the number of
#: levels (an upper bound): computing them exactly costs O(T) time (:func:`kary_layout`,
#: :func:`kary_max_column_norm`)
EXACT_HORIZON = 2**22

#: largest number of floats a block of :meth:`KaryTreeCounter.step_block` works on at once
_BLOCK_FLOATS = 2**20


def _check_layout(arity: int, levels: int) -> tuple[int, int]:
    if isinstance(arity, bool) or not isinstance(arity, (int, np.integer)):
        raise TypeError(f"arity must be an odd integer >= 3, got {arity!r}")
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)):
        raise TypeError(f"levels must be a positive integer, got {levels!r}")
    if arity < 3 or arity % 2 == 0:
        raise ValueError(f"arity must be an odd integer >= 3, got {arity}")
    if levels < 1:
        raise ValueError(f"levels must be a positive integer, got {levels}")
    return int(arity), int(levels)


def _nearest(t: np.ndarray | int, size: int) -> np.ndarray | int:
    """The multiple of the odd ``size`` nearest to t (t >= 0)."""
    return (t + (size - 1) // 2) // size * size


def kary_digits(t: np.ndarray | int, arity: int, levels: int) -> np.ndarray:
    """The digits d_0 .. d_{h-1} of t >= 1 (module docstring), shape (levels, *shape of t)."""
    k, h = _check_layout(arity, levels)
    t = np.asarray(t, dtype=np.int64)
    rounded = [_nearest(t, k**j) for j in range(h)] + [np.zeros_like(t)]
    return np.stack([(rounded[j] - rounded[j + 1]) // k**j for j in range(h)])


def _round_chunks(horizon: int):
    """The rounds 1..horizon as int64 arrays of at most :data:`_CHUNK` rounds, in order."""
    for start in range(0, horizon, _CHUNK):
        yield np.arange(start + 1, min(start + _CHUNK, horizon) + 1, dtype=np.int64)


def _digit_counts(horizon: int, arity: int, levels: int):
    """sum_j |d_j(t)| (the cells release t uses) for t = 1..horizon, chunk by chunk."""
    for t in _round_chunks(horizon):
        yield np.abs(kary_digits(t, arity, levels)).sum(axis=0)


@functools.lru_cache(maxsize=4)  # O(T / k) each; the maximum it serves is cached apart
def _used_cells(horizon: int, arity: int, levels: int) -> tuple[tuple[np.ndarray, ...], int]:
    """For every level below the top: the largest positive and negative digit used under each
    anchor (arrays indexed by the anchor's index R_{j+1} / s_{j+1}); and the top level's largest
    digit (its cells 0 .. top - 1 are used). Memory O(T / k), whatever the horizon."""
    k, h = _check_layout(arity, levels)
    n = int(horizon)
    spans = []
    for j in range(h - 1):
        size = _nearest(n, k ** (j + 1)) // k ** (j + 1) + 2
        spans += [np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)]
    for t in _round_chunks(n):
        digits = kary_digits(t, k, h)
        for j in range(h - 1):
            anchor = _nearest(t, k ** (j + 1)) // k ** (j + 1)  # non-decreasing in t
            first = np.flatnonzero(np.diff(anchor, prepend=-1))  # where each anchor starts
            at = anchor[first]  # distinct; an anchor may straddle two chunks
            for span, sign in ((spans[2 * j], 1), (spans[2 * j + 1], -1)):
                most = np.maximum.reduceat(np.maximum(sign * digits[j], 0), first)
                span[at] = np.maximum(span[at], most)
    # the top digit R_{h-1} / s_{h-1} never decreases in t: the horizon's is the largest
    return tuple(spans), int(kary_digits(n, k, h)[h - 1])


def _column_norm_chunks(horizon: int, arity: int, levels: int):
    """n_s (:func:`kary_column_norms`) for rounds s = 1..horizon, chunk by chunk."""
    k, h = _check_layout(arity, levels)
    spans, top = _used_cells(int(horizon), k, h)
    half = (k - 1) // 2
    for t in _round_chunks(int(horizon)):
        s = t - 1
        count = np.zeros(s.size, dtype=np.int64)
        for j in range(h - 1):
            up, down = spans[2 * j], spans[2 * j + 1]
            cell = s // k**j
            anchor = (cell + half) // k
            offset = cell - anchor * k  # -(k-1)/2 .. (k-1)/2; +(k-1)/2 lies in no group
            count += np.where(offset >= 0, offset < up[anchor], -offset <= down[anchor])
        count += s // k ** (h - 1) < top
        yield count


def kary_column_norms(horizon: int, arity: int, levels: int) -> np.ndarray:
    """n_s for rounds s = 1..T: how many used cells (one per level at most) contain round s, the
    squared l2 and the l1 norm of its column of C (module docstring)."""
    return np.concatenate(
        [np.zeros(0, dtype=np.int64), *_column_norm_chunks(int(horizon), arity, levels)]
    )


@functools.lru_cache(maxsize=256)
def kary_max_column_norm(horizon: int, arity: int, levels: int) -> int:
    """max_s n_s (:func:`kary_column_norms`), the counter's sensitivity factor; memory O(T / k)
    and cached. Past :data:`EXACT_HORIZON` rounds the number of levels, an upper bound (a round
    lies in at most one cell per level) that equalled the maximum at each of the 44 horizons
    from 10^3 to 3 x 10^6 where both were computed (tests/continual/test_kary_tree.py checks
    some): the exact maximum costs O(T) time, about 1 s at 10^7 rounds."""
    if int(horizon) > EXACT_HORIZON:
        return _check_layout(arity, levels)[1]
    return max(int(c.max()) for c in _column_norm_chunks(int(horizon), arity, levels))


def kary_factors(horizon: int, arity: int, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """The materialised factorisation (B, C) of the module docstring: C (cells x T) has a row per
    used cell (by level, then cell index), B (T x cells) the signs, B C = M. For tests and
    user-level sensitivities; O(T x cells) memory."""
    k, h = _check_layout(arity, levels)
    n = int(horizon)
    t = np.arange(1, n + 1, dtype=np.int64)
    digits = kary_digits(t, k, h)
    rows: dict[tuple[int, int], int] = {}
    entries: list[tuple[int, int, int]] = []  # (release index, row, sign)
    for j in range(h):
        start = np.zeros_like(t) if j == h - 1 else _nearest(t, k ** (j + 1))
        for i in range(n):
            d = int(digits[j, i])
            first = int(start[i]) // k**j
            cells = range(first, first + d) if d > 0 else range(first + d, first)
            for m in cells:
                row = rows.setdefault((j, m), len(rows))
                entries.append((i, row, 1 if d > 0 else -1))
    strategy = np.zeros((len(rows), n))
    for (j, m), row in rows.items():
        strategy[row, m * k**j : min((m + 1) * k**j, n)] = 1.0
    release = np.zeros((n, len(rows)))
    for i, row, sign in entries:
        release[i, row] = sign
    return release, strategy


def _layout_cost(horizon: int, arity: int, levels: int) -> tuple[float, float, int]:
    """(largest, mean) Laplace variance at unit l1 diameter and epsilon = 1 up to the factor 2,
    and the state in vectors: what :func:`kary_layout` minimises, in that order."""
    norm = kary_max_column_norm(horizon, arity, levels)
    largest, total = 0, 0
    for counts in _digit_counts(horizon, arity, levels):
        largest, total = max(largest, int(counts.max())), total + int(counts.sum())
    return norm**2 * float(largest), norm**2 * (total / horizon), (levels - 1) * arity


@functools.lru_cache(maxsize=64)
def kary_layout(horizon: int) -> tuple[int, int]:
    """The (arity, levels) of least largest Laplace variance at equal epsilon for ``horizon``
    (then least mean variance, then least state). Candidates: every h with an odd k whose top
    level is used (k^(h-1) < 2T); the two best by the bound h^2 ((h-1)(k-1)/2 + round(T /
    k^(h-1))) on the largest variance are evaluated exactly (at 107 horizons from 1 to 30,000 the
    bound's best was the exact best of its twelve best); past :data:`EXACT_HORIZON` rounds the
    bound's best alone. Deterministic and cached."""
    n = int(horizon)
    if n < 1:
        raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
    candidates = [(float(n), 3, 1)]  # the two least (bound, k, h) so far, in order
    h = 2
    while 3 ** (h - 1) < 2 * n:
        k = 3
        # the bound grows with k once its lower-digit part alone passes the best one so far
        while k ** (h - 1) < 2 * n and h * h * (h - 1) * (k - 1) / 2 <= candidates[0][0]:
            top = (n + (k ** (h - 1) - 1) // 2) // k ** (h - 1)
            candidates = sorted([*candidates, (h * h * ((h - 1) * (k - 1) / 2 + top), k, h)])[:2]
            k += 2
        h += 1
    if n > EXACT_HORIZON:  # evaluating a candidate exactly costs O(T): the bound's best
        return candidates[0][1], candidates[0][2]
    best = min(candidates[:2], key=lambda c: (_layout_cost(n, c[1], c[2]), c[1], c[2]))
    return best[1], best[2]


class KaryTreeCounter(ContinualCounter):
    """The k-ary tree with negative digits (Andersson, Pagh, Steiner & Torkamani 2025, Section 3;
    our construction and proofs in the module docstring).

    With Laplace(b) per cell it is (n Delta_1 / b)-DP, with N(0, sigma^2) per cell a Gaussian
    mechanism of l2 sensitivity sqrt(n) Delta_2, n = the exact largest column norm
    (:func:`kary_column_norms`, at most the number of levels). The layout (k, h) is
    :func:`kary_layout` of the horizon unless the class fixes one (:meth:`with_layout`).
    """

    name: ClassVar[str] = "kary_tree"
    summary: ClassVar[str] = "k-ary tree with negative digits (Andersson et al. 2025)"
    state_arrays: ClassVar[tuple[str, ...]] = ("groups", "top", "prefix")
    #: a fixed (arity, levels), or None for :func:`kary_layout` of the horizon
    fixed_layout: ClassVar[tuple[int, int] | None] = None
    #: the noises whose guarantee for adaptively chosen inputs the module proves (negative
    #: digits release a cell's noise before its inputs are complete; a per-cell composition of
    #: generalized-Gaussian noise is not proven for that)
    supported_noise: ClassVar[frozenset[str]] = frozenset({"gaussian", "laplace"})

    def __init__(self, horizon: int, dim: int, noise: NoiseDistribution, **kwargs: Any) -> None:
        super().__init__(horizon, dim, noise, **kwargs)
        self.arity, self.levels = type(self).layout(self.horizon)
        self._sizes = [self.arity**j for j in range(self.levels)]
        self._half = (self.arity - 1) // 2
        self._groups = np.zeros((self.levels - 1, self.arity, self.replicas, self.dim))
        self._top = np.zeros((self.replicas, self.dim))
        self._prefix = np.zeros((self.replicas, self.dim))

    # ----------------------------------------------------------------- structure
    @classmethod
    def layout(cls, horizon: int) -> tuple[int, int]:
        """(arity, levels) of a counter of this class over ``horizon`` rounds."""
        if cls.fixed_layout is not None:
            return cls.fixed_layout
        return kary_layout(int(horizon))

    @classmethod
    def with_layout(cls, arity: int, levels: int) -> type[KaryTreeCounter]:
        """This counter with the layout (arity, levels) fixed for every horizon."""
        layout = _check_layout(arity, levels)
        return type(f"KaryTreeCounter_{layout[0]}x{layout[1]}", (cls,), {"fixed_layout": layout})

    @classmethod
    def sensitivity_factors(cls, horizon: int) -> tuple[float, float]:
        n = kary_max_column_norm(int(horizon), *cls.layout(horizon))
        return float(n), float(np.sqrt(n))

    @classmethod
    def strategy_matrix(cls, horizon: int) -> np.ndarray:
        """C of the module docstring: a row per used cell, a column per round."""
        return kary_factors(int(horizon), *cls.layout(horizon))[1]

    @classmethod
    def participation_sensitivity_factors(
        cls, horizon: int, participations: int, min_separation: int
    ) -> ParticipationSensitivity:
        """One person's factors: from the strategy matrix up to ``STRATEGY_LIMIT`` rounds (the
        generic routine); past it without materialising C: l1 exactly, the best separated sum
        of the column norms n_s (C >= 0, :mod:`~dponline.continual.participation`), l2 by
        each level's cells maximised on its own (:func:`~dponline.continual.participation.
        cell_level_bound_sq`) or k_eff^2 max_s n_s if less, an upper bound, flagged."""
        t, k, b = check_pattern(horizon, participations, min_separation)
        if t <= STRATEGY_LIMIT:
            return super().participation_sensitivity_factors(t, k, b)
        keff = effective_participations(t, k, b)
        arity, levels = cls.layout(t)
        cells = [(arity**j, -(-t // arity**j)) for j in range(levels)]
        if t > EXACT_HORIZON:  # the column norms cost O(T): each at most the levels
            largest = kary_max_column_norm(t, arity, levels)
            l1 = float(keff * largest)
            how = "k_eff x the levels (l1) and each level's cells on its own (l2): upper bounds"
        else:
            norms = kary_column_norms(t, arity, levels)
            largest = int(norms.max())
            l1 = float(best_separated_sum(norms, keff, b))
            how = "each level's cells maximised on its own (strategy matrix too large to search)"
        sq = min(cell_level_bound_sq(cells, keff, b), keff * keff * largest)
        exact = t <= EXACT_HORIZON
        return ParticipationSensitivity(
            t, k, b, keff, l1, math.sqrt(sq), exact, exact and keff == 1, how
        )

    def variance(self, t: int) -> float:
        t = self._check_t(t)
        if t == 0:
            return 0.0
        count = int(np.abs(kary_digits(t, self.arity, self.levels)).sum())
        return count * self.noise.coordinate_variance(self.dim)

    @classmethod
    def release_variances(cls, horizon: int, noise: NoiseDistribution, dim: int) -> np.ndarray:
        counts = np.concatenate(
            [np.zeros(0, dtype=np.int64), *_digit_counts(int(horizon), *cls.layout(horizon))]
        )
        return counts * noise.coordinate_variance(dim)

    def _config(self) -> dict[str, Any]:
        return {**super()._config(), "layout": [self.arity, self.levels]}

    # ----------------------------------------------------------------- streaming
    def _fill_group(self, group: np.ndarray, draws: np.ndarray) -> None:
        """Signed running sums of a group: index half + d holds the noise of digit d, the
        first half of ``draws`` being the cells after the anchor, the second those before."""
        half = self._half
        group[half] = 0.0
        np.cumsum(draws[:half], axis=0, out=group[half + 1 :])
        np.cumsum(draws[half:], axis=0, out=group[half - 1 :: -1])
        group[:half] *= -1.0

    def _step(self, x: np.ndarray) -> np.ndarray:
        t, k, h = self.t, self.arity, self.levels
        self._prefix += x
        out = self._prefix.copy()
        for j in range(h - 1):
            size = self._sizes[j] * k
            if t == 1 or _nearest(t, size) != _nearest(t - 1, size):
                self._fill_group(self._groups[j], self._draw(k - 1))
            digit = (_nearest(t, self._sizes[j]) - _nearest(t, size)) // self._sizes[j]
            out += self._groups[j, self._half + digit]
        top = self._sizes[-1]
        if _nearest(t, top) != _nearest(t - 1, top):
            self._top += self._draw()
        out += self._top
        return out

    def _step_block(self, xs: np.ndarray, out: np.ndarray) -> None:
        """The draws of single steps, in the same order, vectorised over chunks of rounds (for
        Gaussian noise the very same numbers; Laplace's sampler picks its method by the size of
        a call, so there the same law, not the same numbers):
        every group (and top cell) that becomes current in a chunk is drawn at once, and each
        release gathers its digits' running sums."""
        b = xs.shape[0]
        chunk = max(1, _BLOCK_FLOATS // (self.arity * self.replicas * self.dim))
        for lo in range(0, b, chunk):
            hi = min(b, lo + chunk)
            self._block(xs[lo:hi], out[lo:hi])

    def _block(self, xs: np.ndarray, out: np.ndarray) -> None:
        k, h, half = self.arity, self.levels, self._half
        b = xs.shape[0]
        t = np.arange(self.t + 1, self.t + b + 1, dtype=np.int64)
        fresh = []  # per level below the top: does round t open a new group?
        for j in range(h - 1):
            size = self._sizes[j] * k
            fresh.append((_nearest(t, size) != _nearest(t - 1, size)) | (t == 1))
        top_size = self._sizes[-1]
        fresh_top = _nearest(t, top_size) != _nearest(t - 1, top_size)
        groups_at = np.zeros(b, dtype=np.int64)  # groups opened at round t (all levels)
        for f in fresh:
            groups_at += f
        per_round = groups_at * (k - 1) + fresh_top
        start = np.concatenate([[0], np.cumsum(per_round)[:-1]])
        draws = self._draw(int(per_round.sum()))  # the single steps' draws, in their order
        noise = self._prefix + np.cumsum(xs if xs.ndim == 3 else xs[:, None], axis=0)
        self._prefix = noise[-1].copy()
        before = np.zeros(b, dtype=np.int64)  # groups opened at round t on lower levels
        for j in range(h - 1):
            opened = np.flatnonzero(fresh[j])
            groups = np.empty((opened.size + 1, k, self.replicas, self.dim))
            groups[0] = self._groups[j]
            offsets = start[opened] + (k - 1) * before[opened]
            for g, off in enumerate(offsets, start=1):
                self._fill_group(groups[g], draws[off : off + k - 1])
            which = np.cumsum(fresh[j])
            size = self._sizes[j]
            digit = (_nearest(t, size) - _nearest(t, size * k)) // size
            noise += groups[which, half + digit]
            self._groups[j] = groups[-1]
            before += fresh[j]
        opened = np.flatnonzero(fresh_top)
        tops = np.empty((opened.size + 1, self.replicas, self.dim))
        tops[0] = self._top
        if opened.size:
            cells = draws[start[opened] + (k - 1) * groups_at[opened]]
            np.cumsum(cells, axis=0, out=tops[1:])
            tops[1:] += self._top
        noise += tops[np.cumsum(fresh_top)]
        self._top = tops[-1].copy()
        out[...] = noise
        self.t += b
