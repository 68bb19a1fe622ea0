"""The l_p ball {||x||_p <= r} and its linear minimisation oracle, for 1 <= p <= inf.

By Hoelder's inequality, with q = p / (p - 1) the dual exponent,

    argmin_{||v||_p <= r} <c, v> = -r sign(c) |c|^{q-1} / ||c||_q^{q-1}   (1 < p < inf),

a signed vertex -r sign(c_i) e_i at the largest |c_i| for p = 1, and -r sign(c) for p = inf;
the minimum value is -r ||c||_q. Vectorised over a leading replicas axis.

Euclidean geometry (for :class:`~dponline.domains.base.ConvexDomain`), from the norm
comparisons ``||v||_2 <= ||v||_p <= n^{1/p - 1/2} ||v||_2`` (p <= 2) and
``n^{1/p - 1/2} ||v||_2 <= ||v||_p <= ||v||_2`` (p >= 2), each attained (at e_1 or at the
all-ones vector):

* the largest Euclidean norm in the ball is ``r max(1, n^{1/2 - 1/p})``, and since the ball is
  symmetric its Euclidean diameter is twice that (``||x - y|| <= ||x|| + ||y||``, attained at
  x = -y);
* the largest Euclidean ball inside it, centred at 0, has radius ``r min(1, n^{1/2 - 1/p})``.

For p = 2 the ball has the self-concordant barrier -log(r^2 - ||x||^2) (nu = 1,
:class:`~dponline.domains.barriers.BallBarrier`), which SCRiBLe plays on.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from dponline.domains.barriers import BallBarrier, SelfConcordantBarrier
from dponline.domains.base import ConvexDomain, FullDimensional, as_directions, scale_rows
from dponline.domains.checks import as_points, contains_by_projection
from dponline.domains.simplex import project_simplex
from dponline.privacy.arguments import checked_count

__all__ = ["LpBall", "dual_exponent"]


def dual_exponent(p: float) -> float:
    """q with 1/p + 1/q = 1 (q = inf for p = 1, q = 1 for p = inf)."""
    if p == 1:
        return math.inf
    if p == math.inf:
        return 1.0
    return p / (p - 1.0)


@dataclass(frozen=True)
class LpBall(FullDimensional, ConvexDomain):
    """The l_p ball of radius ``radius`` in R^dim, 1 <= p <= inf.

    * LMO (see the module docstring). Ties: for p = 1 the first index of the largest |c_i|;
      for p = inf a coordinate with c_i = 0 gets 0 (the middle of the optimal face); the zero
      direction gives the centre 0 for every p. For 1 < p < inf the minimiser is unique.
    * ``diameter`` is the Euclidean diameter 2 r max(1, n^{1/2 - 1/p}) (exact);
      :meth:`lp_diameter` is the l_p diameter 2 r; ``max_euclidean_norm`` is half the
      diameter, the largest Euclidean norm in the ball (exact).
    * Full-dimensional; interior point 0, inscribed radius r min(1, n^{1/2 - 1/p}) (exact).
    * ``project``: scaling (p = 2), clipping (p = inf), the simplex projection of |x| with the
      signs restored (p = 1); for other p the KKT system z_i + lam p z_i^{p-1} = |x_i|,
      sum z_i^p = r^p, solved by nested bisection. ``contains`` uses the exact distance.
    * ``barrier`` (p = 2 only): :class:`~dponline.domains.barriers.BallBarrier` of radius r.
      For p != 2 the attribute does not exist (reading it raises AttributeError), so
      ``isinstance(ball, HasBarrier)`` is True exactly for the Euclidean ball.
    """

    dim: int
    p: float
    radius: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim", checked_count("dim", self.dim))
        if isinstance(self.p, bool) or not isinstance(self.p, numbers.Real):
            raise TypeError(f"p must be a real number >= 1 (or inf), got {self.p!r}")
        if not (self.p >= 1):
            raise ValueError(f"p must be >= 1 (or inf), got {self.p!r}")
        object.__setattr__(self, "p", float(self.p))
        if not (self.radius > 0 and math.isfinite(self.radius)):
            raise ValueError(f"radius must be finite and positive, got {self.radius!r}")

    @property
    def q(self) -> float:
        return dual_exponent(self.p)

    def norm(self, x: np.ndarray) -> np.ndarray:
        """The l_p norm of each row (+inf where it overflows; the membership test of
        ``project`` uses this very formula, so a point it returns is inside by it)."""
        a = np.abs(x)
        if self.p == math.inf:
            return a.max(axis=-1)
        with np.errstate(over="ignore"):  # +inf is the answer for a norm beyond the range
            return (a**self.p).sum(axis=-1) ** (1.0 / self.p)

    def lmo(self, c: np.ndarray) -> np.ndarray:
        """argmin_{||v||_p <= r} <c, v>, row by row (c = 0 gives 0); ``c`` arrives checked
        and scaled (:mod:`dponline.domains.base`)."""
        if self.p == math.inf:
            return -self.radius * np.sign(c)
        if self.p == 1:
            out = np.zeros_like(c)
            idx = np.argmax(np.abs(c), axis=-1)
            np.put_along_axis(
                out,
                idx[..., None],
                -self.radius * np.sign(np.take_along_axis(c, idx[..., None], -1)),
                axis=-1,
            )
            return out
        q = self.q
        a = np.abs(c)
        scale = a.max(axis=-1, keepdims=True)  # for stability with large q
        safe = np.where(scale > 0, scale, 1.0)
        w = (a / safe) ** (q - 1.0)
        nq = ((a / safe) ** q).sum(axis=-1, keepdims=True) ** ((q - 1.0) / q)
        v = -self.radius * np.sign(c) * w / np.where(nq > 0, nq, 1.0)
        return np.where(scale > 0, v, 0.0)

    def min_linear(self, c: np.ndarray) -> np.ndarray:
        """min_{||v||_p <= r} <c, v> = -r ||c||_q, computed on the row scaled by a power of
        two (and, for 1 < q < inf, divided by its largest entry), so that it overflows only
        when the value does."""
        unit, exp = scale_rows(as_directions(c, self.dim))
        a = np.abs(unit)
        q = self.q
        if q == math.inf:
            nq = a.max(axis=-1)
        elif q == 1:
            nq = a.sum(axis=-1)
        elif q == 2:
            nq = np.sqrt((a * a).sum(axis=-1))
        else:
            top = a.max(axis=-1, keepdims=True)
            safe = np.where(top > 0, top, 1.0)
            nq = top[..., 0] * ((a / safe) ** q).sum(axis=-1) ** (1.0 / q)
        with np.errstate(over="ignore"):  # -inf is the answer for a value beyond the range
            return np.ldexp(-self.radius * nq, exp)

    def lp_diameter(self) -> float:
        """The l_p diameter 2r."""
        return 2.0 * self.radius

    def _euclid_factor(self) -> float:
        """n^{1/2 - 1/p}: the ratio of the Euclidean norm of the all-ones direction's boundary
        point to r."""
        inv_p = 0.0 if self.p == math.inf else 1.0 / self.p
        return float(self.dim ** (0.5 - inv_p))

    @property
    def diameter(self) -> float:
        """The Euclidean diameter 2 r max(1, n^{1/2 - 1/p})."""
        return 2.0 * self.radius * max(1.0, self._euclid_factor())

    @property
    def max_euclidean_norm(self) -> float:
        """max_{||x||_p <= r} ||x||_2 = r max(1, n^{1/2 - 1/p}) (module docstring), exact."""
        return self.radius * max(1.0, self._euclid_factor())

    def interior_point(self) -> np.ndarray:
        return np.zeros(self.dim)

    @property
    def inscribed_radius(self) -> float:
        return self.radius * min(1.0, self._euclid_factor())

    @property
    def barrier(self) -> SelfConcordantBarrier:
        """The log barrier -log(r^2 - ||x||^2) of the Euclidean ball (p = 2 only)."""
        if self.p != 2:
            raise AttributeError(
                f"LpBall(p={self.p:g}) has no self-concordant barrier here: only the Euclidean "
                "ball (p = 2) has one (BallBarrier)"
            )
        return BallBarrier(self.dim, float(self.radius))

    def project(self, x: np.ndarray) -> np.ndarray:
        """The Euclidean projection of each row onto the ball (rows inside by :meth:`norm`
        are returned unchanged)."""
        y = as_points(x, self.dim)
        r = self.radius
        if self.p == math.inf:
            return np.clip(y, -r, r)
        norm = self.norm(y)[..., None]
        inside = norm <= r
        if self.p == 2:
            # y r / ||y|| on the row scaled by a power of two: exact scaling, and ||unit||
            # neither overflows nor underflows however large y is
            unit, _ = scale_rows(y)
            unit_norm = np.sqrt((unit * unit).sum(axis=-1, keepdims=True))
            return np.where(inside, y, unit * (r / np.where(inside, 1.0, unit_norm)))
        if self.p == 1:
            return np.where(inside, y, np.sign(y) * project_simplex(np.abs(y), r))
        out = y.copy()
        flat_in = inside[..., 0].reshape(-1)
        if not flat_in.all():
            flat = out.reshape(-1, self.dim)
            rows = flat[~flat_in]
            flat[~flat_in] = np.sign(rows) * _lp_sphere_kkt(np.abs(rows), self.p, r)
            out = flat.reshape(y.shape)
        return out

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return contains_by_projection(self.project, x, self.dim, tol)


def _bisect_increasing(f, lo: np.ndarray, hi: np.ndarray, iters: int = 64) -> np.ndarray:
    """The root of an increasing function between ``lo`` and ``hi`` (elementwise): the last
    ``lo`` (where f <= 0), so a root bracketed from below."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        pos = f(mid) > 0
        hi = np.where(pos, mid, hi)
        lo = np.where(pos, lo, mid)
    return lo


def _lp_sphere_kkt(a: np.ndarray, p: float, r: float) -> np.ndarray:
    """For rows a >= 0 with ||a||_p > r: the z >= 0 with z_i + lam p z_i^{p-1} = a_i and
    ||z||_p = r (the KKT conditions of the projection onto the l_p ball, 1 < p < inf).

    Parametrised by zeta = z_max, the entry at the largest a_i (a_max), so that no quantity
    can overflow at any scale: lam = (a_max - zeta) / (p zeta^{p-1}), and each z_i is the root
    in [0, min(a_i, zeta)] of the increasing z + (a_max - zeta) (z / zeta)^{p-1} - a_i (< 0
    at 0, >= 0 at the upper end). ||z(zeta)||_p = zeta ||z / zeta||_p increases with zeta,
    and the root zeta lies in [r n^{-1/p}, min(r, a_max)] (r = ||z||_p is between z_max
    and n^{1/p} z_max), a bracket of bounded ratio, so 64 bisections pin it to rounding
    level. The lower end is returned, so ||z||_p <= r as computed."""
    n = a.shape[1]
    a_max = a.max(axis=1, keepdims=True)

    def z_of(zeta: np.ndarray) -> np.ndarray:
        over = a_max - zeta
        return _bisect_increasing(
            lambda z: z + over * (z / zeta) ** (p - 1.0) - a,
            np.zeros_like(a),
            np.minimum(a, zeta),
        )

    def excess(zeta: np.ndarray) -> np.ndarray:
        ratio = z_of(zeta) / zeta
        return zeta[:, 0] * (ratio**p).sum(axis=1) ** (1.0 / p) - r

    hi = np.minimum(r, a_max)
    lo = np.minimum(r * n ** (-1.0 / p), hi)
    zeta = _bisect_increasing(lambda t: excess(t[:, None]), lo[:, 0], hi[:, 0])
    return z_of(zeta[:, None])
