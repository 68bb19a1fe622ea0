"""Smooth convex losses with gradients and Hessians, for the full-information learners that need
second-order information (CTRL, Agarwal, Kale, Singh & Thakurta 2023, Assumption 1: G-Lipschitz,
beta-smooth, twice-differentiable convex losses).

A round's loss is a :class:`SmoothLoss`,

    l(x) = f(<v, x>, y) + (x - a)' A (x - a) / 2,

a generalised linear model (GLM) term with a known link ``f``
(:class:`~dponline.losses.links.GLMLink`: logistic, squared, Huber) plus an optional convex
quadratic. A GLM loss alone is the setting of the paper's Section 3.2 (Lemma 10, Theorems 11
and 12); ``A = lam I`` makes a loss lam-strongly convex (Appendix E). Every loss states, from its
parameters alone, a Lipschitz constant and a smoothness constant over a ball containing the
decision set, so that a learner can refuse a loss outside the bounds its guarantee assumes
(:meth:`SmoothLoss.constants`). Their running sum is :class:`dponline.losses.sums.LossSum`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dponline.losses.links import GLMLink
from dponline.privacy.bounds import check_finite

__all__ = ["SmoothLoss"]


def _spectral_norm(a: np.ndarray) -> float:
    return float(np.linalg.norm(a, 2)) if a.size else 0.0


@dataclass(frozen=True, eq=False)
class SmoothLoss:
    """l(x) = f(<v, x>, y) + (x - a)' A (x - a) / 2 (module docstring); ``link`` None drops the
    GLM term, ``curvature`` None the quadratic (a scalar c means A = c I)."""

    dim: int
    link: GLMLink | None = None
    v: np.ndarray | None = None
    y: float = 0.0
    curvature: np.ndarray | float | None = None
    anchor: np.ndarray | None = None
    _a: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        d = int(self.dim)
        if d < 1:
            raise ValueError(f"dim must be >= 1, got {self.dim!r}")
        if self.link is not None:
            v = check_finite(self.v, "v") if self.v is not None else None
            if v is None or v.shape != (d,):
                raise ValueError(f"a GLM loss needs v of shape ({d},), got {np.shape(self.v)}")
            y = float(check_finite(np.asarray(self.y), "y"))
            self.link.check_label(y)
            object.__setattr__(self, "v", v)
            object.__setattr__(self, "y", y)
        a = np.zeros((d, d))
        if self.curvature is not None:
            c = check_finite(self.curvature, "curvature")
            a = c * np.eye(d) if c.ndim == 0 else c
            scale = float(np.abs(a).max()) if a.size else 0.0
            if a.shape != (d, d) or np.abs(a - a.T).max(initial=0.0) > 1e-12 * max(scale, 1.0):
                raise ValueError(f"curvature must be a scalar or a symmetric ({d}, {d}) matrix")
            # rounding-level asymmetry removed, so that the value, the gradient A (x - a) and
            # the Hessian A all describe one quadratic and the convexity check reads it whole
            a = 0.5 * (a + a.T)
            if np.linalg.eigvalsh(a)[0] < -1e-12 * max(scale, 1.0):
                raise ValueError("curvature must be positive semi-definite (a convex quadratic)")
            anchor = np.zeros(d) if self.anchor is None else check_finite(self.anchor, "anchor")
            if anchor.shape != (d,):
                raise ValueError(f"anchor must have shape ({d},), got {anchor.shape}")
            object.__setattr__(self, "anchor", anchor)
        object.__setattr__(self, "_a", a)

    # --- constructors -----------------------------------------------------------------------
    @classmethod
    def glm(cls, link: GLMLink, v: np.ndarray, y: float) -> SmoothLoss:
        """f(<v, x>, y) alone (the GLM setting of Section 3.2)."""
        v = np.asarray(v, dtype=float)
        return cls(v.shape[-1], link=link, v=v, y=y)

    @classmethod
    def quadratic(cls, curvature: np.ndarray | float, anchor: np.ndarray) -> SmoothLoss:
        """(x - a)' A (x - a) / 2."""
        anchor = np.asarray(anchor, dtype=float)
        return cls(anchor.shape[-1], curvature=curvature, anchor=anchor)

    # --- evaluation (rows of x are points: (k, d) -> (k,), (k, d), (k, d, d)) ---------------
    @property
    def is_glm(self) -> bool:
        """A pure GLM term f(<v, x>, y) (no quadratic part)."""
        return self.link is not None and self.curvature is None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """l(x), as :meth:`value` (a loss is a function of the points)."""
        return self.value(x)

    def value(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.zeros(x.shape[:-1])
        if self.link is not None:
            out = out + self.link.value(x @ self.v, self.y)
        if self.curvature is not None:
            r = x - self.anchor
            out = out + 0.5 * np.einsum("...i,ij,...j->...", r, self._a, r)
        return out

    def gradient(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.zeros(x.shape)
        if self.link is not None:
            out = out + self.link.d1(x @ self.v, self.y)[..., None] * self.v
        if self.curvature is not None:
            out = out + (x - self.anchor) @ self._a
        return out

    def hessian(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.broadcast_to(self._a, (*x.shape[:-1], self.dim, self.dim)).copy()
        if self.link is not None:
            w = self.link.d2(x @ self.v, self.y)
            out += w[..., None, None] * np.outer(self.v, self.v)
        return out

    # --- declared constants --------------------------------------------------------------------
    def constants(self, radius: float) -> tuple[float, float, float]:
        """(G, beta, lam) over the ball ||x|| <= ``radius``, from the parameters alone:
        G >= sup ||grad l||, beta >= sup ||Hess l|| (spectral), lam <= inf lambda_min(Hess l)."""
        g = beta = 0.0
        lam = 0.0
        if self.link is not None:
            nv = float(np.linalg.norm(self.v))
            g += self.link.max_d1(radius * nv, self.y) * nv
            beta += self.link.max_d2(self.y) * nv**2
        if self.curvature is not None:
            na = _spectral_norm(self._a)
            g += na * (radius + float(np.linalg.norm(self.anchor)))
            beta += na
            lam = max(float(np.linalg.eigvalsh(self._a)[0]), 0.0)
        return g, beta, lam
