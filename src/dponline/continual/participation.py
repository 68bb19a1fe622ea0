"""Sensitivity of a continual counter when one person contributes to several rounds.

The unit (:class:`~dponline.privacy.budget.PrivacyBudget`): one person contributes to at most
k = ``participations`` rounds, any two of them at least b = ``min_separation`` apart (rounds i
and j of one person satisfy |i - j| >= b; b = 1 allows consecutive rounds; jax_privacy's
convention). At most k_eff = min(k, ceil(T / b)) rounds of a horizon T fit the pattern.

A counter releases B (C x + z) with B C the prefix-sum matrix, z the noise and C its *strategy
matrix* (``strategy_matrix(horizon)``: column j is what round j's value enters before noise).
Everything after C x + z is post-processing, so the sensitivity of the mechanism is that of
x -> C x. Two neighbouring streams differ by contributions g_i (i in a set P of rounds allowed by
the pattern), each g_i a difference of two points of the input set, so ||g_i|| <= D (its
diameter), and

    sens_2^2 = max_{P, g} || sum_{i in P} C_i g_i^T ||_F^2
             = max_{P, g} sum_{i,j in P} X_ij <g_i, g_j>

with X = C^T C. **When X >= 0 elementwise** the maximum aligns every contribution (g_i = g, one
diameter-attaining difference): <g_i, g_j> <= ||g_i|| ||g_j|| <= D^2 with equality there, so
sens_2 = D sqrt(max_P sum_{i,j in P} X_ij) exactly (Choquette-Choo et al. 2023, arXiv
2211.06530, Eq. 5). Otherwise sum |X_ij| over the best P is an upper bound.

**l1 (Laplace), ours.** ||sum_i C_i g_i^T||_1 <= sum_i ||C_i||_1 ||g_i||_1 by the triangle
inequality, so sens_1 <= D_1 max_P sum_{i in P} ||C_i||_1 <= k_eff D_1 max_j ||C_j||_1, which is
k_eff times the single-participation l1 factor. When C >= 0 elementwise the first bound is
attained: with every g_i = g (a difference attaining the l1 diameter, entries of any sign),
|sum_i C_ri g_c| = (sum_i C_ri) |g_c| for every row r and coordinate c, summing to
(sum_{i in P} ||C_i||_1) ||g||_1. So for a nonnegative strategy the exact l1 factor is the best
min-separated sum of column l1 norms (:func:`best_separated_sum`), at most k_eff times the single
one and equal to it when k_eff columns of largest l1 norm fit the pattern (every column of the
binary tree at T = 2^m has l1 norm m + 1).

Exact l2 routines by structure:

* **binary tree, padded tree, Honaker** (the same C: one row per dyadic node contained in
  [1, T], Honaker's estimates and the padding being post-processing): sens_2^2 = max over
  patterns of sum over nodes of (participations inside the node)^2, since X_ij counts the nodes
  holding both i and j. :func:`tree_participation_sq` finds it by a recursion over the tree (as
  in TensorFlow Privacy's single-tree accountant for DP-FTRL, Kairouz et al. 2021, Appendix D:
  a subtree holding i participations adds i^2 at its root), with the distances of the first and
  last participation to the subtree's edges (capped at b - 1) as state, so that the gap across
  every split is enforced exactly.
* **Toeplitz C with nonnegative non-increasing coefficients** (the square root; a BLT whose
  coefficients are): the worst pattern is k_eff participations exactly b apart from round 1
  (Kalinin & Lampert 2024, arXiv 2405.13763, Theorem 2, as used by jax_privacy), so
  sens_2^2 = sum_{i<T} (sum_{m < k_eff, m b <= i} c_{i - m b})^2. Other coefficients are
  replaced by the reverse running maximum of |c| (non-increasing, at least |c|, so X grows
  elementwise): an upper bound, flagged.
* **rows of such a Toeplitz C rescaled** (C = diag(sqrt(w)) S, the rescaled square root):
  each X_ij bounded by its largest value at the pattern's least gap and any later position
  (:func:`weighted_toeplitz_participation_sq`, ours), an upper bound within 0.03% of a
  pattern's value up to T = 16,384 and 0.5% at 10^6 where we compared, reported with that
  pattern's value; exact for constant w.
* **any C** (:func:`strategy_participation`): X b-banded (columns b or more apart orthogonal):
  the best min-separated sum of diag X, exact; X >= 0 with few allowed sets: exhaustive search,
  exact; otherwise the VecSens bound (arXiv 2306.08153, Algorithm 3: the best min-separated sum
  of each row of |X|, then of those row maxima), an upper bound, flagged. Past
  :data:`STRATEGY_LIMIT` rounds the strategy matrix is not materialised and the triangle
  inequality bounds the person by k_eff times one round's factors (:func:`triangle_bound`),
  flagged.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import signal

__all__ = [
    "ParticipationSensitivity",
    "allowed_patterns",
    "best_separated_sum",
    "cell_level_bound_sq",
    "check_pattern",
    "count_patterns",
    "effective_participations",
    "quadratic_participation_sq",
    "strategy_participation",
    "toeplitz_participation_sq",
    "tree_node_matrix",
    "tree_participation",
    "tree_participation_sq",
    "triangle_bound",
    "vecsens_upper_sq",
    "weighted_toeplitz_participation_sq",
]

#: largest number of allowed participation sets searched exhaustively by the generic routine
EXHAUSTIVE_LIMIT = 400_000
#: largest work (numbers combined) of the exact tree recursion before the level-wise bound
TREE_WORK_LIMIT = 2 * 10**9
#: largest horizon whose strategy matrix the generic routine materialises (its Gram matrix is
#: T x T); past it, the triangle inequality bounds the person by k_eff single rounds
STRATEGY_LIMIT = 4096
#: largest k_eff x T for which the rescaled square root's person bound correlates k_eff rows by
#: FFT (:func:`weighted_toeplitz_participation_sq`); past it the cruder max(w) bound
WEIGHTED_TOEPLITZ_LIMIT = 2**25


@dataclass(frozen=True)
class ParticipationSensitivity:
    """The l1 and l2 factors of a counter under a participation pattern: one person's rounds
    move everything the mechanism releases by at most ``l1`` times the input set's l1 diameter
    and ``l2`` times its l2 diameter. ``l1_exact`` / ``l2_exact`` say whether each is the exact
    supremum or an upper bound (still a valid sensitivity); ``method`` says how it was found."""

    horizon: int
    participations: int
    min_separation: int
    effective_participations: int
    l1: float
    l2: float
    l1_exact: bool
    l2_exact: bool
    method: str

    @property
    def factors(self) -> tuple[float, float]:
        """(l1, l2), as :meth:`ContinualCounter.sensitivity_factors` returns them."""
        return self.l1, self.l2

    def describe(self) -> str:
        """One phrase for a derivation."""
        kind = "exact" if self.l2_exact else "an upper bound"
        return (
            f"one person's at most {self.participations} rounds at least {self.min_separation} "
            f"apart (at most {self.effective_participations} fit in T = {self.horizon}): l2 "
            f"factor {self.l2:.6g} ({kind}), l1 factor {self.l1:.6g} "
            f"({'exact' if self.l1_exact else 'an upper bound'}); {self.method}"
        )


def check_pattern(horizon: int, participations: int, min_separation: int) -> tuple[int, int, int]:
    """(T, k, b) as integers, each at least 1, else an error naming the value."""
    out = []
    for name, value in (
        ("horizon", horizon),
        ("participations", participations),
        ("min_separation", min_separation),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value!r}")
        out.append(int(value))
    return out[0], out[1], out[2]


def effective_participations(horizon: int, participations: int, min_separation: int) -> int:
    """k_eff = min(k, ceil(T / b)): the most rounds b apart that fit in T rounds."""
    t, k, b = check_pattern(horizon, participations, min_separation)
    return min(k, -(-t // b))


def count_patterns(horizon: int, participations: int, min_separation: int) -> int:
    """The number of non-empty allowed sets: sum over m <= k of C(T - (m-1)(b-1), m)."""
    t, k, b = check_pattern(horizon, participations, min_separation)
    total = 0
    for m in range(1, effective_participations(t, k, b) + 1):
        total += math.comb(t - (m - 1) * (b - 1), m)
    return total


def allowed_patterns(horizon: int, participations: int, min_separation: int):  # type: ignore[no-untyped-def]
    """Every non-empty set of rounds (0-indexed, increasing tuples) of one person: at most k,
    pairwise at least b apart. Sets of size m are the m-subsets q of range(T - (m-1)(b-1))
    shifted by p_j = q_j + j (b - 1)."""
    t, k, b = check_pattern(horizon, participations, min_separation)
    for m in range(1, effective_participations(t, k, b) + 1):
        shift = np.arange(m) * (b - 1)
        for q in itertools.combinations(range(t - (m - 1) * (b - 1)), m):
            yield tuple(int(v) for v in np.asarray(q) + shift)


def best_separated_sum(values: np.ndarray, participations: int, min_separation: int) -> float:
    """max over allowed sets P (at most k indices pairwise >= b apart, possibly empty) of
    sum_{i in P} values_i: the recursion F[i, m] = max(values_i + F[i + b, m - 1], F[i + 1, m])
    (arXiv 2306.08153, Algorithm 3), vectorised over leading axes: ``values`` (..., T) gives
    shape (...)."""
    v = np.asarray(values, dtype=float)
    t = v.shape[-1]
    b = int(min_separation)
    k = min(int(participations), -(-t // b))
    lead = v.shape[:-1]
    if not lead and t and float(v.max()) >= 0.0:
        # k indices of the largest value b apart (the earliest-first greedy finds the most)
        # make the best set outright: no set holds more than k values, none above the largest
        top = np.flatnonzero(v == v.max())
        picked, at = 1, int(top[0])
        while picked < k:
            nxt = int(np.searchsorted(top, at + b))
            if nxt == top.size:
                break
            picked, at = picked + 1, int(top[nxt])
        if picked == k:
            return k * float(v.max())
    # a ring of b + 1 rows: row i % (b + 1) holds F[i, 0..k] while it is needed; F[T + ., .] = 0
    f = np.zeros((b + 1, *lead, k + 1))
    for i in range(t - 1, -1, -1):
        nxt, far = f[(i + 1) % (b + 1)], f[(i + b) % (b + 1)]
        row = np.empty_like(nxt)
        row[..., 0] = 0.0
        row[..., 1:] = np.maximum(v[..., i, None] + far[..., :-1], nxt[..., 1:])
        f[i % (b + 1)] = row
    return f[0][..., k] if lead else float(f[0][k])


def vecsens_upper_sq(x: np.ndarray, participations: int, min_separation: int) -> float:
    """An upper bound on max_P sum_{i,j in P} |X_ij|: for each row i, u_i = the best allowed sum
    of |X_i.|; then the best allowed sum of u (arXiv 2306.08153, Algorithm 3). Valid because
    sum_{j in P} |X_ij| <= u_i for every allowed P."""
    a = np.abs(np.asarray(x, dtype=float))
    rows = np.concatenate(
        [
            np.atleast_1d(best_separated_sum(a[i : i + 256], participations, min_separation))
            for i in range(0, a.shape[0], 256)
        ]
    )
    return float(best_separated_sum(rows, participations, min_separation))


def quadratic_participation_sq(x: np.ndarray, participations: int, min_separation: int) -> float:
    """max over allowed sets P of sum_{i,j in P} X_ij, by enumerating every set (vectorised per
    size); for the generic routine's small cases and the tests' brute force."""
    x = np.asarray(x, dtype=float)
    t = x.shape[0]
    b = int(min_separation)
    best = 0.0
    for m in range(1, effective_participations(t, participations, b) + 1):
        combos = itertools.combinations(range(t - (m - 1) * (b - 1)), m)
        q = np.fromiter(itertools.chain.from_iterable(combos), dtype=np.int64).reshape(-1, m)
        p = q + np.arange(m) * (b - 1)
        total = np.zeros(len(p))
        for u in range(m):
            for w in range(m):
                total += x[p[:, u], p[:, w]]
        best = max(best, float(total.max()))
    return best


def toeplitz_participation_sq(
    coefficients: np.ndarray, participations: int, min_separation: int
) -> tuple[float, bool]:
    """(sens^2, exact) of the lower-triangular Toeplitz C with first column ``coefficients``
    (c_0..c_{T-1}) under the pattern: k_eff participations exactly b apart from round 1 (module
    docstring). Exact when the coefficients are nonnegative and non-increasing; otherwise of the
    reverse running maximum of |c|, an upper bound."""
    c = np.asarray(coefficients, dtype=float)
    t = c.size
    exact = bool(np.all(c >= 0) and np.all(np.diff(c) <= 0))
    if not exact:
        c = np.maximum.accumulate(np.abs(c)[::-1])[::-1]
    k = effective_participations(t, participations, min_separation)
    s = np.zeros(t)
    for m in range(k):
        start = m * int(min_separation)
        s[start:] += c[: t - start]
    return float(np.sum(s * s)), exact


def _separated_pattern_sq(
    coefficients: np.ndarray, weights: np.ndarray, k: int, b: int, start: int
) -> float:
    """sum_r w_r (sum_{i in P, i <= r} c_{r-i})^2 for P = {start, start + b, ...}: k rounds."""
    c, t = coefficients, coefficients.size
    s = np.zeros(t)
    for m in range(k):
        i = start + m * b
        s[i:] += c[: t - i]
    return float(np.sum(weights * s * s))


def weighted_toeplitz_participation_sq(
    coefficients: np.ndarray,
    weights: np.ndarray,
    participations: int,
    min_separation: int,
    *,
    fft_limit: int = WEIGHTED_TOEPLITZ_LIMIT,
) -> tuple[float, float]:
    """(upper, lower) bounds on sens^2 = max_P sum_{i,j in P} X_ij for the strategy
    C = diag(sqrt(w)) S, S lower-triangular Toeplitz with nonnegative non-increasing
    coefficients c_0..c_{T-1} and weights w >= 0 (the rescaled square root: w = D^{-2}).
    ``lower`` is attained (k_eff rounds exactly b apart from the first round or ending at the
    last), so the truth lies in [lower, upper]. Ours.

    *Proof of the upper bound.* X_ij = sum_r w_r c_{r-i} c_{r-j}; for i <= j, with d = j - i,
    X_ij = h(d, j) := sum_{q=0}^{T-1-j} c_{q+d} c_q w_{j+q}, non-increasing in d since
    c is (every factor is nonnegative). Number an allowed set's rounds p_0 < ... < p_{m-1}
    (m <= k_eff); then p_l - p_l' >= (l - l') b and p_l >= l b, so for l' <= l

        X_{p_l' p_l} <= h((l - l') b, p_l) <= H((l - l') b, l b),
        H(d, j0) := max_{j >= j0} h(d, j).

    Every X_ij is nonnegative, so summing over all k_eff^2 pairs (l, l') bounds every set:
    sens^2 <= U = sum_l H(0, l b) + 2 sum_{l' < l} H((l - l') b, l b). For constant w, h is
    non-increasing in j too, H(d, j0) = h(d, j0), and the set {0, b, 2b, ...} attains every
    term: U is exact (Kalinin & Lampert's Toeplitz rule). Each h(d, .) is one FFT correlation,
    so U costs k_eff FFTs of length 2T; the computed U is raised by a relative 1e-9 against
    the FFT's rounding. Where k_eff T exceeds ``fft_limit``, the cruder max_r w_r times the
    Toeplitz rule's exact value for S (X <= max(w) S^T S elementwise) is returned instead.
    """
    c = np.asarray(coefficients, dtype=float)
    w = np.asarray(weights, dtype=float)
    t = c.size
    if w.shape != c.shape:
        raise ValueError(f"weights must have shape {c.shape}, got {w.shape}")
    if np.any(c < 0) or np.any(np.diff(c) > 0) or np.any(w < 0):
        raise ValueError("needs nonnegative non-increasing coefficients and nonnegative weights")
    b = int(min_separation)
    k = effective_participations(t, participations, b)
    lower = max(
        _separated_pattern_sq(c, w, k, b, 0),
        _separated_pattern_sq(c, w, k, b, t - 1 - (k - 1) * b),
    )
    if k * t > fft_limit:
        plain, _ = toeplitz_participation_sq(c, k, b)
        return max(float(w.max()) * plain, lower), lower
    upper = 0.0
    for gap in range(k):
        d = gap * b
        a = np.zeros(t)
        a[: t - d] = c[d:] * c[: t - d]  # a_q = c_{q+d} c_q
        h = signal.fftconvolve(w, a[::-1])[t - 1 : 2 * t - 1]  # h[j] = sum_q a_q w_{j+q}
        tail_max = np.maximum.accumulate(h[::-1])[::-1]
        upper += (1.0 if gap == 0 else 2.0) * float(tail_max[np.arange(gap, k) * b].sum())
    return max(upper * (1.0 + 1e-9), lower), lower


# ------------------------------------------------------------------ the binary tree
def tree_node_matrix(horizon: int) -> np.ndarray:
    """The binary tree's strategy matrix: one 0/1 row per dyadic interval
    [j 2^h + 1, (j + 1) 2^h] contained in [1, T], by level h then position j; column t is the
    nodes round t enters (:mod:`dponline.continual.binary_tree`)."""
    t = int(horizon)
    rows = []
    for h in range(t.bit_length()):
        size = 1 << h
        for j in range(t // size):
            row = np.zeros(t)
            row[j * size : (j + 1) * size] = 1.0
            rows.append(row)
    return np.array(rows)


def _tree_work(horizon: int, k: int, b: int) -> float:
    """Numbers combined by :func:`tree_participation_sq` (an estimate from above)."""
    work = 0.0
    for h in range(1, int(horizon).bit_length() + 1):
        half = 1 << (h - 1)
        cap = min(k, -(-half // b))
        work += 2.0 * cap * cap * min(b, 2 * half) * b * b
    return work


def tree_participation_sq(horizon: int, participations: int, min_separation: int) -> int:
    """max over allowed sets P of sum over the tree's nodes v of |P cap v|^2: the binary tree's
    exact l2 sensitivity squared under the pattern (module docstring).

    The recursion runs over the complete tree of 2^L leaves (L = T.bit_length(); rounds past T
    are never chosen and nodes not inside [1, T] add nothing). For a subtree and a count i, a
    table ``V[i][l, r]`` holds the best sum inside the subtree over sets of i rounds whose first
    round is l and last round r places from the subtree's left and right edges (both capped at
    b - 1: farther is as good as b - 1 for every later gap), -inf where none exists. Joining two
    children whose sets are non-empty needs r_left + l_right + 1 >= b (the gap across the
    split); the parent adds i^2 if it is a node. Full subtrees of one height are the same, so
    the work is O(L k^2 b^3) at most.
    """
    t, k, b = check_pattern(horizon, participations, min_separation)
    k = effective_participations(t, k, b)
    return _tree_sq(t, k, b)


@functools.lru_cache(maxsize=256)
def _tree_sq(t: int, k: int, b: int) -> int:
    n_levels = t.bit_length()
    if k == 1:
        return int(_tree_column_l1(t).max())  # one round: the nodes it enters
    width = b  # offsets 0..b-1, the last meaning ">= b - 1" (b < T here)
    neg = -np.inf

    def leaf() -> np.ndarray:
        table = np.full((k + 1, width, width), neg)
        table[1, 0, 0] = 1.0  # a leaf inside [1, T] is a node
        return table

    def shift_empty(table: np.ndarray, half: int, axis: int) -> np.ndarray:
        """The child's table seen from its parent when the sibling is empty: the offset on
        ``axis`` (1: left, 2: right) grows by the sibling's length ``half``."""
        out = np.full_like(table, neg)
        for o in range(width):
            target = min(o + half, width - 1)
            src = table[:, o, :] if axis == 1 else table[:, :, o]
            if axis == 1:
                np.maximum(out[:, target, :], src, out=out[:, target, :])
            else:
                np.maximum(out[:, :, target], src, out=out[:, :, target])
        return out

    def join(
        left: np.ndarray | None, right: np.ndarray | None, half: int, is_node: bool
    ) -> np.ndarray | None:
        """The parent's table from its children's (None: no round of [1, T] inside)."""
        if left is None and right is None:
            return None
        out = np.full((k + 1, width, width), neg)
        if left is not None:
            np.maximum(out, shift_empty(left, half, 2), out=out)  # right child empty
        if right is not None:
            np.maximum(out, shift_empty(right, half, 1), out=out)  # left child empty
        if left is not None and right is not None:
            # right's best with left offset at least lam: suffix maximum over l_right
            r_suf = np.maximum.accumulate(right[:, ::-1, :], axis=1)[:, ::-1, :]
            counts_l = [i for i in range(1, k) if np.isfinite(left[i]).any()]
            counts_r = [i for i in range(1, k) if np.isfinite(right[i]).any()]
            if counts_l and counts_r:
                r_hi = max(counts_r)
                for i1 in counts_l:
                    top = min(k - i1, r_hi)
                    if top < 1:
                        continue
                    for r1 in range(width):
                        col = left[i1, :, r1]
                        if not np.isfinite(col).any():
                            continue
                        lam = width - 1 - r1  # the right child's first round needs l >= lam
                        cand = col[None, :, None] + r_suf[1 : top + 1, lam, None, :]
                        seg = out[i1 + 1 : i1 + 1 + top]
                        np.maximum(seg, cand, out=seg)
        if is_node:
            out += (np.arange(k + 1, dtype=float) ** 2)[:, None, None]
        out[0] = neg
        return out

    full: dict[int, np.ndarray] = {0: leaf()}
    for h in range(1, n_levels):
        sub = full[h - 1]
        table = join(sub, sub, 1 << (h - 1), True)
        assert table is not None
        full[h] = table

    def build(h: int, start: int) -> np.ndarray | None:
        """The table of the subtree of height h over rounds start .. start + 2^h - 1."""
        size = 1 << h
        if start >= t:
            return None
        if start + size <= t:
            return full[h]
        half = size >> 1
        return join(build(h - 1, start), build(h - 1, start + half), half, False)

    root = build(n_levels, 0)
    assert root is not None
    return round(float(np.max(root[1:])))


def _tree_level_bound_sq(t: int, k: int, b: int) -> int:
    """An upper bound on :func:`tree_participation_sq`: each level maximised on its own."""
    return cell_level_bound_sq([(1 << h, t >> h) for h in range(t.bit_length())], k, b)


def cell_level_bound_sq(levels: list[tuple[int, int]], k: int, b: int) -> int:
    """An upper bound on max_P sum over cells of |P cap cell|^2 for a strategy of 0/1 rows that
    are cells: at each level (size, count) disjoint cells of ``size`` rounds, at most ``count``
    of them. Each level is maximised on its own: a cell of size s holds at most c = min(k,
    ceil(s / b)) rounds, and the k rounds fill whole cells best: floor(k / c) c^2 + (k mod c)^2
    (fewer where the cells run out). The binary tree's nodes and the k-ary tree's cells."""
    total = 0
    for size, nodes in levels:
        if nodes == 0:
            continue
        c = min(k, -(-size // b))
        full_nodes = min(k // c, nodes)
        rest = k - full_nodes * c
        total += full_nodes * c * c + (min(rest, c) ** 2 if full_nodes < nodes else 0)
    return total


def tree_participation(
    horizon: int, participations: int, min_separation: int
) -> ParticipationSensitivity:
    """The binary tree's factors under the pattern (binary tree, padded tree, Honaker)."""
    t, k, b = check_pattern(horizon, participations, min_separation)
    keff = effective_participations(t, k, b)
    l1 = best_separated_sum(_tree_column_l1(t), keff, b)
    if _tree_work(t, keff, b) <= TREE_WORK_LIMIT:
        sq, exact = _tree_sq(t, keff, b), True
        how = "tree recursion over the nodes (sum of squared participations per node)"
    else:
        sq, exact = _tree_level_bound_sq(t, keff, b), False
        how = "each tree level maximised on its own (the exact recursion is too large here)"
    return ParticipationSensitivity(t, k, b, keff, float(l1), math.sqrt(sq), True, exact, how)


def _tree_column_l1(t: int) -> np.ndarray:
    """Nodes each round enters: levels h whose node around round j lies inside [1, T]."""
    j = np.arange(t)
    out = np.zeros(t)
    for h in range(t.bit_length()):
        size = 1 << h
        out += ((j // size + 1) * size <= t).astype(float)
    return out


# ------------------------------------------------------------------ any strategy matrix
def triangle_bound(
    single: tuple[float, float], horizon: int, participations: int, min_separation: int
) -> ParticipationSensitivity:
    """k_eff times one round's (l1, l2) factors ``single``: ||sum_{i in P} C_i g_i|| <=
    sum_i ||C_i|| ||g_i||, valid for any strategy; an upper bound, flagged."""
    t, k, b = check_pattern(horizon, participations, min_separation)
    keff = effective_participations(t, k, b)
    l1, l2 = single
    how = "triangle inequality: k_eff x one round's factors (strategy matrix too large here)"
    return ParticipationSensitivity(
        t, k, b, keff, keff * float(l1), keff * float(l2), keff == 1, keff == 1, how
    )


def _toeplitz_coefficients(c: np.ndarray) -> np.ndarray | None:
    """The first column if ``c`` is a square lower-triangular Toeplitz matrix, else None."""
    if c.ndim != 2 or c.shape[0] != c.shape[1]:
        return None
    first = c[:, 0]
    t = c.shape[0]
    idx = np.arange(t)
    diff = idx[:, None] - idx[None, :]
    expected = np.where(diff >= 0, first[np.clip(diff, 0, None)], 0.0)
    scale = max(float(np.abs(first).max()), 1e-300)
    if np.max(np.abs(c - expected)) > 1e-12 * scale:
        return None
    return first


def strategy_participation(
    strategy: np.ndarray,
    participations: int,
    min_separation: int,
    *,
    exhaustive_limit: int = EXHAUSTIVE_LIMIT,
) -> ParticipationSensitivity:
    """The factors of any strategy matrix C (draws x T) under the pattern (module docstring):
    exact when C is lower-triangular Toeplitz with nonnegative non-increasing coefficients,
    when X = C^T C >= 0 is b-banded, or when X >= 0 and at most ``exhaustive_limit`` sets are
    allowed (searched exhaustively); the VecSens upper bound otherwise (flagged)."""
    c = np.asarray(strategy, dtype=float)
    if c.ndim != 2 or c.shape[1] < 1:
        raise ValueError(f"a strategy matrix has shape (draws, horizon), got {c.shape}")
    t = c.shape[1]
    _, k, b = check_pattern(t, participations, min_separation)
    keff = effective_participations(t, k, b)
    nonneg_c = bool(np.all(c >= 0))
    col_l1 = np.abs(c).sum(axis=0)
    l1 = float(best_separated_sum(col_l1, keff, b))
    x = c.T @ c
    tol = 1e-12 * max(float(np.abs(x).max()), 1e-300)
    nonneg_x = bool(np.all(x >= -tol))
    first = _toeplitz_coefficients(c)
    if keff == 1:
        sq, exact, how = float(np.max(np.diag(x))), True, "one participation: largest column"
    elif first is not None and np.all(first >= 0) and np.all(np.diff(first) <= 0):
        sq, exact = toeplitz_participation_sq(first, keff, b)
        how = "Toeplitz rule: participations exactly b apart from round 1"
    elif nonneg_x and (b >= t or not np.any(np.abs(np.triu(x, b)) > tol)):
        sq, exact = float(best_separated_sum(np.diag(x), keff, b)), True
        how = "columns b or more apart are orthogonal: best separated sum of squared norms"
    elif nonneg_x and count_patterns(t, keff, b) <= exhaustive_limit:
        sq, exact = quadratic_participation_sq(x, keff, b), True
        how = "X = C^T C >= 0: exhaustive search over every allowed set"
    else:
        sq, exact = vecsens_upper_sq(x, keff, b), False
        how = "VecSens bound on |C^T C| (arXiv 2306.08153, Alg. 3)"
    return ParticipationSensitivity(
        t, k, b, keff, l1, math.sqrt(max(sq, 0.0)), nonneg_c, exact, how
    )
