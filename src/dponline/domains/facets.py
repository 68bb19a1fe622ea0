"""A polytope written as ``{x in H : G x <= h}``, H its affine hull: the inscribed ball, the
Chebyshev centre within H, and certified bounds on the Euclidean distance to the polytope.

**Inscribed ball.** For c in P and a unit u in the direction space L of H, ``c + r u`` satisfies
``g_j x <= h_j`` iff ``g_j c + r <P g_j, u> <= h_j``; the worst u gives ``<P g_j, u> =
||P g_j||`` (P the orthogonal projector onto L). So the largest ball around c inside P within H
has radius

    r(c) = min_j (h_j - g_j c) / ||P g_j||   over the rows with P g_j != 0,

the rows with P g_j = 0 being constant on H (satisfied by any point of H in P). Maximising r(c)
over c is the linear program of the Chebyshev centre, solved in the coordinates of H with
:func:`scipy.optimize.linprog`; the radius reported is r(c) re-evaluated at the solution and
shrunk by a factor 1 - 1e-9 against rounding.

**Distance bounds.** Every inequality is valid on P, so ``dist(x, P) >= (g_j x - h_j) / ||g_j||``
and ``dist(x, P) >= dist(x, H)``. Conversely let x' be the projection of x onto H and
``delta = max_j (g_j x' - h_j)_+ / ||P g_j||``; with (c, r) an inscribed ball,
``z = x' + theta (c - x')``, ``theta = delta / (r + delta)`` satisfies every inequality:
``g_j z <= (1 - theta)(h_j + delta ||P g_j||) + theta (h_j - r ||P g_j||) = h_j``. Hence
``dist(x, P) <= ||x - x'|| + theta ||x' - c||``. For a point of P (up to rounding) the upper
bound is at rounding level; for a point clearly outside the lower bound is positive.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from dponline.domains.affine import AffineHull
from dponline.domains.checks import as_points, checked_tol
from dponline.domains.min_norm_point import Oracle, contains_rows

__all__ = ["Facets"]

#: rows whose projection onto the hull is shorter than this (relative) are constant on the hull
_FLAT = 1e-12


class Facets:
    """The inequalities ``G x <= h`` (rows g_j) of a polytope within the affine hull ``hull``.
    The description must be complete: P = {x in hull : G x <= h}. ``hull_norms`` may give the
    rates ||P g_j|| when the caller knows them more cheaply than ``G @ basis``."""

    def __init__(
        self,
        g: np.ndarray,
        h: np.ndarray,
        hull: AffineHull,
        hull_norms: np.ndarray | None = None,
    ) -> None:
        g = np.asarray(g, dtype=float).reshape(-1, hull.dim)
        h = np.asarray(h, dtype=float).reshape(-1)
        if h.shape[0] != g.shape[0]:
            raise ValueError(f"need one right-hand side per row: {g.shape[0]} rows, {h.shape}")
        self.hull = hull
        full = np.linalg.norm(g, axis=1)
        keep = full > 0
        self.g_all, self.h_all, self.full_norms = g[keep], h[keep], full[keep]
        hn = hull.hull_norms(self.g_all) if hull_norms is None else np.asarray(hull_norms)[keep]
        moving = hn > _FLAT * self.full_norms
        self.g, self.h, self.norms = self.g_all[moving], self.h_all[moving], hn[moving]

    def contains(
        self, x: np.ndarray, tol: float, lmo: Oracle, centre: np.ndarray, radius: float
    ) -> np.ndarray:
        """Membership of each row of ``x`` up to Euclidean distance ``tol`` in the polytope these
        facets describe: the certified distance bounds of :meth:`distance_bounds` (around the
        ball of ``radius`` at ``centre`` inside it) decide the clear rows, Wolfe's minimum-norm
        point with the polytope's oracle ``lmo`` the rest (:func:`contains_rows`)."""
        t = checked_tol(tol)
        pts = as_points(x, self.hull.dim)

        def bounds(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return self.distance_bounds(rows, centre, radius)

        return contains_rows(pts, t, lmo, centre, bounds)

    def radius_at(self, c: np.ndarray) -> float:
        """r(c): the largest radius of a ball around c (in the hull) inside the polytope."""
        if self.g.shape[0] == 0:
            return float("inf")
        return float(((self.h - self.g @ c) / self.norms).min())

    def chebyshev_centre(self) -> tuple[np.ndarray, float]:
        """(c, r) maximising r(c) (the LP of the module docstring), r shrunk by 1 - 1e-9."""
        q, p = self.hull.basis, self.hull.point
        d = q.shape[1]
        if d == 0 or self.g.shape[0] == 0:
            return p.copy(), float("inf")
        a_ub = np.column_stack([self.g @ q, self.norms])
        b_ub = self.h - self.g @ p
        cost = np.zeros(d + 1)
        cost[-1] = -1.0
        bounds = [(None, None)] * d + [(0, None)]
        res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
        if res.status != 0:
            raise RuntimeError(f"the Chebyshev-centre LP failed: {res.message}")
        c = p + q @ res.x[:d]
        return c, self.radius_at(c) * (1.0 - 1e-9)

    def distance_bounds(
        self, x: np.ndarray, centre: np.ndarray, radius: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on dist(x, P) for each row of x (2-d), given an
        inscribed ball (centre, radius) of P within its hull."""
        xp = self.hull.project(x)
        off = np.linalg.norm(x - xp, axis=-1)
        lower = off
        if self.g_all.shape[0]:
            viol = (x @ self.g_all.T - self.h_all) / self.full_norms
            lower = np.maximum(lower, viol.max(axis=-1))
        if self.g.shape[0]:
            delta = np.maximum(((xp @ self.g.T - self.h) / self.norms).max(axis=-1), 0.0)
        else:
            delta = np.zeros(x.shape[0])
        if np.isfinite(radius):
            theta = delta / (radius + delta)
        else:
            theta = np.where(delta > 0, 1.0, 0.0)
        upper = off + theta * np.linalg.norm(xp - centre, axis=-1)
        return np.maximum(lower, 0.0), upper
