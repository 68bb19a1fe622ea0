"""Base polytopes of submodular functions, and the permutahedron.

For a submodular f : 2^V -> R with f(empty) = 0 on V = {0, ..., n-1}, the base polytope is

    B(f) = {x in R^n : x(S) <= f(S) for all S, x(V) = f(V)}.

**LMO** (Edmonds' greedy algorithm): sort the direction increasingly (a stable sort, so ties go
to the smaller index), e_1, ..., e_n, and set x_{e_i} = f({e_1..e_i}) - f({e_1..e_{i-1}}); this
vertex minimises <d, x> over B(f) (Edmonds 1970), vectorised over replicas with the value
table of f.

:class:`SubmodularBasePolytope` takes a value oracle and tabulates it on all 2^n subsets, so
n <= :data:`MAX_GROUND_SET` (16); it refuses larger n. With the table everything is exact:

* submodularity is checked (f(S+i) + f(S+j) >= f(S+i+j) + f(S) for all S, i, j; relative
  tolerance 1e-12), and f(empty) = 0;
* affine hull: S is a *separator* when f(S) + f(V - S) = f(V); the minimal non-empty separators
  C_1, ..., C_k partition V (the connected components of f), the hull is {x(C_j) = f(C_j)}, of
  dimension n - k (Fujishige, *Submodular functions and optimization*, Thm 3.38);
* the H-representation above is complete, so the interior point and inscribed radius are the
  Chebyshev centre within the hull (an LP with 2^n - 2 rows, :mod:`dponline.domains.facets`);
  membership uses its certified distance bounds, then Wolfe's minimum-norm point;
* diameter: exact for n <= 6 (all n! greedy vertices, pairwise), otherwise the proven bound
  ``sqrt(sum_i (f({i}) - (f(V) - f(V - i)))^2)`` (x_i lies between these two values on B(f)),
  with ``diameter_is_exact`` False.

:class:`Permutahedron` is the convex hull of the permutations of a vector w (default
(1, 2, ..., n), the standard permutahedron): the base polytope of f(S) = sum of the |S| largest
entries of w (for the default, f(S) = sum_{i=0}^{|S|-1} (n - i)); it has closed forms for
everything and any n.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from dponline.domains.affine import (
    AffineHull,
    CentreByMethod,
    blocks_sum_zero_basis,
    sum_zero_basis,
)
from dponline.domains.base import ConvexDomain
from dponline.domains.checks import (
    SINGLETON_RADIUS,
    as_points,
    checked_finite_array,
    contains_by_projection,
    readonly,
)
from dponline.domains.facets import Facets
from dponline.privacy.arguments import checked_count

__all__ = ["MAX_GROUND_SET", "Permutahedron", "SubmodularBasePolytope"]

#: the largest ground set for which a value oracle is tabulated (2^16 = 65536 values)
MAX_GROUND_SET = 16
#: largest n for which the diameter is computed exactly from all n! greedy vertices
_EXACT_DIAMETER_N = 6


def _greedy(d: np.ndarray, gains_of: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Edmonds' greedy vertex for each row of d: ``gains_of(order)`` gives the marginal values
    along each row's order."""
    order = np.argsort(d, axis=-1, kind="stable")
    out = np.empty(d.shape)
    np.put_along_axis(out, order, gains_of(order), axis=-1)
    return out


class SubmodularBasePolytope(CentreByMethod, ConvexDomain):
    """B(f) for a submodular value oracle ``f`` (frozenset of elements of {0..n-1} -> real, with
    f(frozenset()) = 0), n <= 16. ``check_submodular=False`` skips the O(n^2 2^n) check (the
    greedy vertex is then the LMO only if f really is submodular). See the module docstring."""

    def __init__(
        self,
        n: int,
        f: Callable[[frozenset[int]], float],
        *,
        check_submodular: bool = True,
    ) -> None:
        self.dim = n = checked_count("n", n)
        if n > MAX_GROUND_SET:
            raise ValueError(
                f"n = {n} is too large: a value oracle is tabulated on all 2^n subsets, so n "
                f"must be at most {MAX_GROUND_SET}"
            )
        if not callable(f):
            raise TypeError(f"f must be callable on frozensets, got {f!r}")
        masks = np.arange(1 << n)
        table = np.empty(1 << n)
        for mask in range(1 << n):
            v = f(frozenset(i for i in range(n) if mask >> i & 1))
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise ValueError(
                    f"f must return finite real numbers, got f({_set_str(mask, n)}) = {v!r}"
                )
            table[mask] = float(v)
        self._scale = scale = max(1.0, float(np.abs(table).max()))
        if abs(table[0]) > 1e-12 * scale:
            raise ValueError(f"f(empty set) must be 0, got {table[0]!r}")
        table[0] = 0.0
        self.table = readonly(table)
        self._full = (1 << n) - 1
        if check_submodular:
            self._check_submodular(masks)
        self._bits = np.left_shift(1, np.arange(n, dtype=np.int64))
        self._cache: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"SubmodularBasePolytope(n={self.dim})"

    def _check_submodular(self, masks: np.ndarray) -> None:
        t, n = self.table, self.dim
        for i in range(n):
            for j in range(i + 1, n):
                s = masks[(masks >> i & 1 == 0) & (masks >> j & 1 == 0)]
                si, sj, sij = s | 1 << i, s | 1 << j, s | 1 << i | 1 << j
                viol = t[sij] + t[s] - t[si] - t[sj]
                k = int(np.argmax(viol))
                if viol[k] > 1e-12 * self._scale:
                    raise ValueError(
                        f"f is not submodular: with S = {_set_str(int(s[k]), n)}, "
                        f"f(S+{i}) + f(S+{j}) = {t[si[k]] + t[sj[k]]!r} < f(S+{i}+{j}) + f(S) = "
                        f"{t[sij[k]] + t[s[k]]!r}"
                    )

    # --- oracle ----------------------------------------------------------------------------

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        def gains(order: np.ndarray) -> np.ndarray:
            prefix = np.cumsum(self._bits[order], axis=-1)
            vals = self.table[prefix]
            return np.diff(vals, axis=-1, prepend=0.0)

        return _greedy(direction, gains)

    # --- hull ------------------------------------------------------------------------------

    def components(self) -> list[list[int]]:
        """The connected components of f (minimal non-empty separators), sorted."""
        if "components" not in self._cache:
            t, full, n = self.table, self._full, self.dim
            masks = np.arange(1 << n)
            sep = np.abs(t + t[full ^ masks] - t[full]) <= 1e-12 * self._scale
            sep_masks = masks[sep]
            atoms = set()
            for i in range(n):
                containing = sep_masks[(sep_masks >> i & 1) == 1]
                atoms.add(int(np.bitwise_and.reduce(containing)))
            comps = sorted([i for i in range(n) if a >> i & 1] for a in atoms)
            self._cache["components"] = comps
        return self._cache["components"]

    def hull_basis(self) -> np.ndarray:
        if "basis" not in self._cache:
            basis = blocks_sum_zero_basis(self.dim, self.components())
            self._cache["basis"] = readonly(basis)
        return self._cache["basis"]

    @property
    def affine_dim(self) -> int:
        return int(self.hull_basis().shape[1])

    def _facets(self) -> Facets:
        if "facets" not in self._cache:
            n = self.dim
            masks = np.arange(1, self._full)
            g = ((masks[:, None] >> np.arange(n)) & 1).astype(float)
            hull = AffineHull(readonly(self.lmo(np.zeros(n))), self.hull_basis())
            self._cache["facets"] = Facets(g, self.table[masks], hull)
        return self._cache["facets"]

    def _centre(self) -> tuple[np.ndarray, float]:
        if "centre" not in self._cache:
            facets = self._facets()
            if self.affine_dim == 0:
                self._cache["centre"] = (facets.hull.point, SINGLETON_RADIUS)
            else:
                c, r = facets.chebyshev_centre()
                self._cache["centre"] = (readonly(c), r)
        return self._cache["centre"]

    # --- diameter --------------------------------------------------------------------------

    def _diameter(self) -> tuple[float, bool]:
        if "diam" not in self._cache:
            n = self.dim
            if n <= _EXACT_DIAMETER_N:
                perms = np.array(list(itertools.permutations(range(n))), dtype=float)
                verts = np.unique(self.lmo(perms), axis=0)
                sq = (verts * verts).sum(axis=1)
                d2 = sq[:, None] + sq[None, :] - 2.0 * verts @ verts.T
                self._cache["diam"] = (float(np.sqrt(max(0.0, d2.max()))), True)
            else:
                t, full = self.table, self._full
                hi = t[self._bits]
                lo = t[full] - t[full ^ self._bits]
                self._cache["diam"] = (float(np.linalg.norm(hi - lo)), False)
        return self._cache["diam"]

    @property
    def diameter(self) -> float:
        return self._diameter()[0]

    @property
    def diameter_is_exact(self) -> bool:
        return self._diameter()[1]

    # --- membership ------------------------------------------------------------------------

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        c, r = self._centre()
        return self._facets().contains(x, tol, self.lmo, c, r)


def _set_str(mask: int, n: int) -> str:
    return "{" + ", ".join(str(i) for i in range(n) if mask >> i & 1) + "}"


class Permutahedron(ConvexDomain):
    """The convex hull of the permutations of ``values`` (default (1, 2, ..., n)).

    * LMO (rearrangement inequality): the largest value goes to the smallest direction entry;
      a stable sort breaks ties, so among equal entries the smaller index gets the larger value.
    * Diameter ||w_asc - w_desc|| (exact: ||x - y||^2 = 2 ||w||^2 - 2 <x, y> and <x, y> over two
      permutations is smallest for opposite orders).
    * Affine hull {sum x = sum w}, dimension n - 1 (0 if all values are equal); interior point
      mean(w) 1.
    * Inscribed radius, exact: the facets within the hull are x(S) >= (sum of the |S| smallest
      values), 0 < |S| < n; at the centre mu 1 the slack is |S| mu - bottom_|S| and the normal
      moves at rate ||P 1_S|| = sqrt(k (n - k) / n), k = |S|, so
      r = min_k (k mu - bottom_k) / sqrt(k (n - k) / n). For the default values this is
      sqrt(n (n - 1)) / 2 (at k = 1).
    * ``project``: exact, by isotonic regression (Blondel, Teboul, Berthet & Djolonga 2020,
      Prop. 3): with sigma sorting z decreasingly, x_sigma = z_sigma - v, v the non-increasing
      least-squares fit of z_sigma - w_desc (pool adjacent violators), computed from the gaps
      between consecutive sorted entries so that it is exact to rounding at every scale
      (:func:`_project_sorted`). ``contains`` uses it (x is a member iff it is majorised by w;
      the projection gives the exact distance).
    """

    def __init__(self, n: int, values: Any = None) -> None:
        self.dim = n = checked_count("n", n)
        if values is None:
            w = np.arange(1.0, n + 1.0)
        else:
            w = checked_finite_array("values", values, ndim=1)
            if w.shape != (n,):
                raise ValueError(f"values must have length n = {n}, got shape {w.shape}")
        self.values_desc = readonly(np.sort(w)[::-1])
        self._basis: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"Permutahedron(n={self.dim}, values={self.values_desc[::-1].tolist()})"

    def submodular_function(self) -> Callable[[frozenset[int]], float]:
        """f(S) = sum of the |S| largest values: B(f) is this permutahedron."""
        csum = np.concatenate([[0.0], np.cumsum(self.values_desc)])
        return lambda s: float(csum[len(s)])

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        return _greedy(direction, lambda order: np.broadcast_to(self.values_desc, order.shape))

    @property
    def diameter(self) -> float:
        return float(np.linalg.norm(self.values_desc - self.values_desc[::-1]))

    @property
    def affine_dim(self) -> int:
        w = self.values_desc
        return 0 if w[0] == w[-1] else self.dim - 1

    def hull_basis(self) -> np.ndarray:
        if self._basis is None:
            if self.affine_dim == 0:
                basis = np.zeros((self.dim, 0))
            else:
                basis = sum_zero_basis(self.dim)
            self._basis = readonly(basis)
        return self._basis

    def interior_point(self) -> np.ndarray:
        return np.full(self.dim, float(self.values_desc.mean()))

    @property
    def inscribed_radius(self) -> float:
        if self.affine_dim == 0:
            return SINGLETON_RADIUS
        n = self.dim
        w_asc = self.values_desc[::-1]
        mu = float(w_asc.mean())
        k = np.arange(1, n)
        bottom = np.cumsum(w_asc)[:-1]
        return float(((k * mu - bottom) / np.sqrt(k * (n - k) / n)).min())

    def project(self, x: np.ndarray) -> np.ndarray:
        z = as_points(x, self.dim)
        flat = z.reshape(-1, self.dim)
        out = np.empty(flat.shape)
        w = self.values_desc
        for i, row in enumerate(flat):
            sigma = np.argsort(-row, kind="stable")
            out[i, sigma] = _project_sorted(row[sigma], w)
        return out.reshape(z.shape)

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return contains_by_projection(self.project, x, self.dim, tol)


def _project_sorted(s: np.ndarray, w: np.ndarray) -> np.ndarray:
    """s - v for s and w non-increasing, v = argmin ||v - (s - w)|| over v_1 >= ... >= v_n
    (pool adjacent violators), written in terms of the gaps g_t = s_t - s_{t+1} >= 0 so that
    nothing cancels when s is large: a block B of consecutive indices keeps its size c, the
    sum of w over it, span = s_first - s_last and ds = sum_{j in B} (s_j - s_first) <= 0.
    Adjacent blocks B1, B2 (gap g between them, delta = span_1 + g = s_first1 - s_first2)
    violate the order iff mean_1(s - w) < mean_2(s - w), i.e.
    delta + ds_1 / c_1 - ds_2 / c_2 < mean_1(w) - mean_2(w) (a sum of non-negative terms on
    the left); merged, ds = ds_1 + ds_2 - c_2 delta and span = delta + span_2. On a final
    block, x_j = s_j - mean(s) + mean(w) = (s_j - s_first) - ds / c + sum_w / c: a block of
    one entry gets w exactly, and pooled entries are within the spread of w of each other."""
    n = s.size
    gaps = (s[:-1] - s[1:]).tolist()  # >= 0; +inf where s jumps past the float range
    wl = w.tolist()
    blocks: list[list] = []  # [first, last, count, sum_w, ds, span]
    for t in range(n):
        blk = [t, t, 1, wl[t], 0.0, 0.0]
        while blocks:
            first, last, c1, sw1, ds1, span1 = blocks[-1]
            delta = span1 + gaps[last]
            c2, sw2, ds2 = blk[2], blk[3], blk[4]
            if not delta + ds1 / c1 - ds2 / c2 < sw1 / c1 - sw2 / c2:
                break
            blocks.pop()
            blk = [first, blk[1], c1 + c2, sw1 + sw2, ds1 + ds2 - c2 * delta, delta + blk[5]]
        blocks.append(blk)
    out = np.empty(n)
    for first, last, c, sw, ds, _ in blocks:
        offset = sw / c - ds / c
        run = 0.0
        out[first] = offset
        for j in range(first + 1, last + 1):
            run -= gaps[j - 1]
            out[j] = run + offset
    return out
