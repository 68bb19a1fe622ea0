"""A polytope given by inequalities and equalities, {x : A x <= b, C x = e}, reached through
linear programs (:func:`scipy.optimize.linprog`, HiGHS), with its Euclidean projection (a least
distance programme solved by non-negative least squares) and, when it is full-dimensional, its
log barrier."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np
from scipy.optimize import linprog, nnls

from dponline.domains.affine import AffineHull, StoredGeometry, orthonormal_null_space
from dponline.domains.barriers import PolytopeBarrier, SelfConcordantBarrier
from dponline.domains.base import ConvexDomain, scale_rows
from dponline.domains.checks import (
    SINGLETON_RADIUS,
    as_points,
    checked_finite_array,
    readonly,
)
from dponline.domains.facets import Facets

__all__ = ["Polytope"]

#: HiGHS tolerances for every LP here
_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
#: at most this many repeated projections of a far target (each shrinks the distance by a
#: factor of about 1e-13; a target at 2^60 times the bounding box needs two or three)
_REFINE_STEPS = 8
#: an inequality (rows normalised to unit length) whose largest slack over the polytope is below
#: this is an implicit equality
IMPLICIT_TOL = 1e-9


class Polytope(StoredGeometry, ConvexDomain):
    """{x in R^n : A x <= b, C x = e} (the equalities are optional), which must be non-empty
    and bounded: both are checked at construction (2 n LPs, min and max of each coordinate)
    and refused with a ValueError.

    * LMO: one LP per replica (HiGHS dual simplex, which returns a vertex), then *polished*:
      the constraints active at the LP's answer (slack <= 1e-9) are solved as equations, which
      pins the vertex to rounding level; ties (a face of minimisers) are broken as HiGHS breaks
      them, deterministically for a given input.
    * Affine hull: the equalities plus the *implicit* equalities, the inequalities tight on the
      whole polytope, found by LPs that maximise the slacks (each round finds at least one
      inequality that can be strict, or proves the rest implicit; tolerance
      :data:`IMPLICIT_TOL`). Its basis: :func:`scipy.linalg.null_space`, made canonical
      (:func:`~dponline.domains.affine.orthonormal_null_space`).
    * Interior point and inscribed radius: the Chebyshev centre within the hull (an LP,
      :mod:`dponline.domains.facets`), the radius re-evaluated at the centre.
    * Diameter: a proven upper bound (``diameter_is_exact`` is False), the smaller of the
      diagonals of the bounding box in the standard coordinates and in an orthonormal basis of
      the hull (the widths along each axis come from the construction-time LPs and 2 d more).
    * Membership: certified distance bounds from the inequalities, then Wolfe's minimum-norm
      point with the LP oracle for the undecided rows.
    * ``project``: the Euclidean projection, row by row, in the coordinates w of the affine
      hull (x = x0 + Q w, Q orthonormal, so ||x - t|| = ||w - Q^T (t - x0)|| plus a constant).
      With z = w - Q^T (t - x0) it is the least distance programme min ||z|| s.t. G z <= s
      (G the inequalities that vary on the hull), solved exactly by Lawson & Hanson's
      reduction to non-negative least squares (Solving Least Squares Problems, 1974, Ch. 23:
      u = argmin_{u >= 0} ||E u - e_{k+1}||, E = [-G^T; -s^T], r = E u - e_{k+1},
      z = -r_{1..k} / r_{k+1}), an active-set method that ends on the exact active set, so
      the answer is the projection up to rounding. The programme is scaled by the target's
      distance to the Chebyshev centre so that r_{k+1} = -1 / (1 + ||z||^2) stays away from
      0. An answer that violates an inequality in floating point is pulled back towards the
      strictly interior centre by bisection (80 halvings), with a margin of a few rounding
      errors, so that every row of the result satisfies A x <= b in floating point however
      the products are evaluated. Targets already in the polytope are returned unchanged
      (full-dimensional) or projected onto the hull. Far targets: one solve has an error of
      about 1e-16 times the target's distance, so an answer that still violates an inequality
      by more than 2^-40 (1 + D) (D the bounding box's diagonal) is projected again (up to
      :data:`_REFINE_STEPS` times; the projection is 1-Lipschitz and fixes the answer, so
      each round keeps the first round's error and removes its own) before that repair; and
      a target further than 2^26 (1 + D) from the centre is replaced by the point at that
      distance on the ray from the centre through it (``_near_target``: a normwise relative
      change below 2^-24, which bounds the conditioning of the problem at that distance).
      So the answer is a member for every finite target. These two steps act only on a
      first answer violating an inequality by more than 2^-40 (1 + D) or on a target beyond
      2^26 (1 + D); other targets get the single solve and repair, as before.
    * ``barrier`` (full-dimensional polytopes only, no equalities explicit or implicit): the
      log barrier -sum_j log(b_j - a_j x) of the inequalities as given (zero rows dropped;
      rescaling a row changes the barrier by a constant only),
      :class:`~dponline.domains.barriers.PolytopeBarrier`, nu = m; for a lower-dimensional
      polytope reading it raises AttributeError, so it is not a
      :class:`~dponline.domains.base.HasBarrier`.
    """

    def __init__(self, a: Any, b: Any, c: Any = None, e: Any = None) -> None:
        a = checked_finite_array("A", a, ndim=2)
        b = checked_finite_array("b", b, ndim=1)
        if b.shape != (a.shape[0],):
            raise ValueError(f"need A (m, n) and b (m,), got shapes {a.shape} and {b.shape}")
        n = a.shape[1]
        if n < 1:
            raise ValueError(f"A must have at least one column, got shape {a.shape}")
        if (c is None) != (e is None):
            raise ValueError("give both C and e, or neither")
        if c is None:
            c_arr, e_arr = np.zeros((0, n)), np.zeros(0)
        else:
            c_arr = checked_finite_array("C", c, ndim=2)
            e_arr = checked_finite_array("e", e, ndim=1)
            if c_arr.shape[1] != n or e_arr.shape != (c_arr.shape[0],):
                raise ValueError(
                    f"need C (p, {n}) and e (p,), got shapes {c_arr.shape} and {e_arr.shape}"
                )
        self.dim = n
        norms = np.linalg.norm(a, axis=1)
        zero = norms == 0
        if np.any(zero & (b < 0)):
            j = int(np.flatnonzero(zero & (b < 0))[0])
            raise ValueError(f"the polytope is empty: row {j} of A is 0 but b[{j}] = {b[j]!r} < 0")
        keep = ~zero
        self._given = (readonly(a[keep]), readonly(b[keep]))  # for the barrier
        self.a = readonly(a[keep] / norms[keep, None])
        self.b = readonly(b[keep] / norms[keep])
        self.c, self.e = readonly(c_arr), readonly(e_arr)
        lo, hi, x0 = self._bounding_box()
        self._box = (lo, hi)
        diagonal = float(np.linalg.norm(hi - lo))
        #: targets further than this from the centre are moved closer before projection
        self._far = 2.0**26 * (1.0 + diagonal)
        #: a projected point violating an inequality by more than this is projected again
        self._refine_tol = 2.0**-40 * (1.0 + diagonal)
        implicit = self._implicit_equalities()
        self.implicit = implicit.copy()
        self.implicit.setflags(write=False)
        eq = np.vstack([self.c, self.a[implicit]])
        rhs = np.concatenate([self.e, self.b[implicit]])
        if eq.shape[0]:
            x0 = x0 + np.linalg.lstsq(eq, rhs - eq @ x0, rcond=None)[0]
        basis = orthonormal_null_space(eq, n) if eq.shape[0] else np.eye(n)
        self._hull = AffineHull(readonly(x0), readonly(basis))
        self._facets = Facets(self.a, self.b, self._hull)
        if self.affine_dim == 0:
            self._centre_r = (self._hull.point, SINGLETON_RADIUS)
        else:
            centre, radius = self._facets.chebyshev_centre()
            if not radius > 0:
                raise RuntimeError(
                    "the Chebyshev centre has radius 0 within the computed affine hull: an "
                    "implicit equality was missed (badly scaled constraints?)"
                )
            self._centre_r = (readonly(centre), radius)
        self._diameter: float | None = None

    def __repr__(self) -> str:
        return (
            f"Polytope(dim={self.dim}, inequalities={self.a.shape[0]}, "
            f"equalities={self.c.shape[0]})"
        )

    # --- LPs -------------------------------------------------------------------------------

    def _lp(self, cost: np.ndarray) -> Any:
        return linprog(
            cost,
            A_ub=self.a if self.a.shape[0] else None,
            b_ub=self.b if self.a.shape[0] else None,
            A_eq=self.c if self.c.shape[0] else None,
            b_eq=self.e if self.c.shape[0] else None,
            bounds=(None, None),
            method="highs-ds",
            options=_LP_OPTIONS,
        )

    def _bounding_box(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.dim
        lo, hi = np.empty(n), np.empty(n)
        x0 = None
        for i in range(n):
            for sign, store in ((1.0, lo), (-1.0, hi)):
                cost = np.zeros(n)
                cost[i] = sign
                res = self._lp(cost)
                if res.status == 2:
                    raise ValueError("the polytope is empty: the constraints are infeasible")
                if res.status == 3:
                    side = "below" if sign > 0 else "above"
                    raise ValueError(
                        f"the set is unbounded (x[{i}] is not bounded {side}): a Polytope must "
                        "be bounded"
                    )
                if res.status != 0:
                    raise RuntimeError(f"an LP failed while checking boundedness: {res.message}")
                store[i] = res.x[i]
                x0 = res.x if x0 is None else x0
        assert x0 is not None
        return lo, hi, np.asarray(x0, dtype=float)

    def _implicit_equalities(self) -> np.ndarray:
        """Mask of the inequalities tight on the whole polytope (see the class docstring)."""
        m, n = self.a.shape
        undecided = np.ones(m, dtype=bool)
        while undecided.any():
            idx = np.flatnonzero(undecided)
            k = idx.size
            # variables (x, s), s_j the slack of undecided row j, 0 <= s <= 1: max sum s
            a_ub = np.hstack([self.a, np.zeros((m, k))])
            a_ub[idx, n + np.arange(k)] = 1.0
            a_eq = np.hstack([self.c, np.zeros((self.c.shape[0], k))]) if self.c.size else None
            cost = np.concatenate([np.zeros(n), -np.ones(k)])
            res = linprog(
                cost,
                A_ub=a_ub,
                b_ub=self.b,
                A_eq=a_eq,
                b_eq=self.e if self.c.size else None,
                bounds=[(None, None)] * n + [(0.0, 1.0)] * k,
                method="highs",
                options=_LP_OPTIONS,
            )
            if res.status != 0:
                raise RuntimeError(f"the implicit-equality LP failed: {res.message}")
            strict = res.x[n:] > IMPLICIT_TOL
            if not strict.any():
                break
            undecided[idx[strict]] = False
        return undecided

    # --- oracle ----------------------------------------------------------------------------

    def _vertex(self, d: np.ndarray) -> np.ndarray:
        res = self._lp(d)
        if res.status != 0:
            raise RuntimeError(f"the LMO's LP failed: {res.message}")
        x = np.asarray(res.x, dtype=float)
        active = self.b - self.a @ x <= 1e-9
        eq = np.vstack([self.c, self.a[active]])
        rhs = np.concatenate([self.e, self.b[active]])
        if eq.shape[0]:
            polished = x + np.linalg.lstsq(eq, rhs - eq @ x, rcond=None)[0]
            ok = np.all(self.a @ polished <= self.b + 1e-12) and d @ polished <= d @ x + 1e-12 * (
                1.0 + abs(d @ x)
            )
            if ok:
                return polished
        return x

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        # the rows arrive scaled to a largest entry in [1, 2) (base.py): HiGHS's absolute
        # tolerances then mean the same at every scale of the given direction
        flat = direction.reshape(-1, self.dim)
        out = np.array([self._vertex(row) for row in flat])
        return out.reshape(direction.shape)

    # --- geometry --------------------------------------------------------------------------

    @property
    def diameter(self) -> float:
        if self._diameter is None:
            lo, hi = self._box
            box = float(np.linalg.norm(hi - lo))
            q = self._hull.basis
            widths = []
            for col in q.T:
                top = -float(self._lp(-col).fun)
                bottom = float(self._lp(col).fun)
                widths.append(max(0.0, top - bottom))
            hull_box = math.sqrt(sum(w * w for w in widths))
            self._diameter = min(box, hull_box)
        return self._diameter

    @property
    def diameter_is_exact(self) -> bool:
        return False

    # --- projection and barrier ------------------------------------------------------------

    def project(self, x: np.ndarray) -> np.ndarray:
        """The Euclidean projection of each row of ``x`` onto the polytope (see the class
        docstring; a member for every finite ``x``)."""
        pts = as_points(x, self.dim)
        flat = pts.reshape(-1, self.dim)
        out = np.array([self._project_row(row) for row in flat])
        return out.reshape(pts.shape)

    def _near_target(self, target: np.ndarray) -> np.ndarray:
        """``target``, or, when it lies further than ``far`` = 2^26 (1 + D) from the centre c
        (D the diagonal of the bounding box), the point at distance ``far`` from c on the ray
        from c through it: one least distance solve has an error of about 1e-16 times the
        target's distance, which would exceed D for targets beyond about 1e15 D, and the
        distance itself can overflow. The projection q of the moved target t_m is the exact
        projection of q + R n (R the target's distance to c, n the unit vector from q to
        t_m), which is within D + 2 R D / far of the target: a normwise relative change of at
        most 3 D / far < 2^-24. Computed on the halved difference, so nothing overflows."""
        centre = self._centre_r[0]
        unit, exp = scale_rows(0.5 * target - 0.5 * centre)
        length = float(np.sqrt(unit @ unit))  # ||target - c|| = length 2^(exp + 1)
        if int(exp) + 1 < 1000 and not np.ldexp(length, int(exp) + 1) > self._far:
            return target
        return centre + unit * (self._far / length)

    def _project_row(self, target: np.ndarray) -> np.ndarray:
        if self.affine_dim == 0:
            return self._hull.point.copy()
        g, h = self._facets.g, self._facets.h
        centre = self._centre_r[0]
        x = self._least_distance(self._near_target(target))
        # For a far target the rounding of the least distance programme (about 1e-16 times the
        # distance) can leave x well outside; x is then much nearer than the target was, and
        # projecting it again shrinks the error by the same factor each time. The projection is
        # 1-Lipschitz and fixes the projection q of the target, so every step stays within the
        # first step's error of q.
        for _ in range(_REFINE_STEPS):
            if not np.max(g @ x - h, initial=0.0) > self._refine_tol:
                break
            x = self._least_distance(x)
        # feasible with a margin of a few rounding errors of <g_j, x>, so that A x <= b holds
        # however the products are evaluated
        margin = 4.0 * self.dim * np.finfo(float).eps * (np.abs(h) + np.abs(g) @ np.abs(x))

        def feasible(y: np.ndarray) -> bool:
            return bool(np.all(g @ y <= h - margin))

        if feasible(x) or not feasible(centre):
            return x
        # bisection on the segment from the strictly interior centre to x
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2.0
            if feasible(centre + mid * (x - centre)):
                lo = mid
            else:
                hi = mid
        return centre + lo * (x - centre)

    def _least_distance(self, target: np.ndarray) -> np.ndarray:
        """The least distance programme of the class docstring for one target, solved once
        (no feasibility repair)."""
        full = self.affine_dim == self.dim
        g, h = self._facets.g, self._facets.h
        centre = self._centre_r[0]
        if full:  # coordinates of R^n itself: a target inside comes back unchanged
            origin, q, w_t = np.zeros(self.dim), None, target
        else:
            origin, q = self._hull.point, self._hull.basis
            w_t = (target - origin) @ q
        gq = g if q is None else g @ q
        slack = h - g @ origin - gq @ w_t  # G z <= slack for z = w - w_t
        if np.all(slack >= 0):
            w = w_t
        else:
            w_c = centre - origin if q is None else (centre - origin) @ q
            scale = max(1.0, float(np.linalg.norm(w_t - w_c)))
            e = np.vstack([-gq.T, -slack[None, :] / scale])
            f = np.zeros(e.shape[0])
            f[-1] = 1.0
            u, _ = nnls(e, f, maxiter=50 * e.shape[1] + 100)
            r = e @ u - f
            if not r[-1] < 0:
                raise RuntimeError("the projection's least distance programme found no point")
            w = w_t + scale * (-r[:-1] / r[-1])
        return origin + w if q is None else origin + q @ w

    @cached_property
    def _barrier(self) -> SelfConcordantBarrier | None:
        if self.affine_dim != self.dim:
            return None
        return PolytopeBarrier(*self._given)

    @property
    def barrier(self) -> SelfConcordantBarrier:
        """The log barrier of the inequalities as given; full-dimensional polytopes only."""
        barrier = self._barrier
        if barrier is None:
            raise AttributeError(
                f"{self!r} is not full-dimensional (affine dimension {self.affine_dim} < "
                f"{self.dim}): its log barrier is not a barrier of a set with interior"
            )
        return barrier

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        c, r = self._centre_r
        return self._facets.contains(x, tol, self.lmo, c, r)
