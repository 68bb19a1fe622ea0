"""Smooth convex losses with gradients and Hessians, for the full-information learners that need
second-order information (CTRL, Agarwal, Kale, Singh & Thakurta 2023, Assumption 1: G-Lipschitz,
beta-smooth, twice-differentiable convex losses).

A round's loss is a :class:`SmoothLoss`,

    l(x) = f(<v, x>, y) + (x - a)' A (x - a) / 2,

a generalised linear model (GLM) term with a known link ``f`` (:class:`GLMLink`: logistic,
squared, Huber) plus an optional convex quadratic. A GLM loss alone is the setting of the
paper's Section 3.2 (Lemma 10, Theorems 11 and 12); ``A = lam I`` makes a loss lam-strongly
convex (Appendix E). Every loss states, from its parameters alone, a Lipschitz constant and a
smoothness constant over a ball containing the decision set, so that a learner can refuse a
loss outside the bounds its guarantee assumes (:meth:`SmoothLoss.constants`).

:class:`LossSum` keeps sum_s l_s for the Newton solves: the quadratic parts and the squared
link's terms as sufficient statistics (O(d^2) memory and time), the other GLM rows in a growing
buffer (gradient and Hessian at k points cost O(k n d^2) for n rows).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from scipy.special import expit

from dponline.privacy.bounds import check_finite

__all__ = [
    "GLM_LINKS",
    "GLMLink",
    "HuberLink",
    "LogisticLink",
    "LossSum",
    "SmoothLoss",
    "SquaredLink",
    "link_by_name",
]


class GLMLink(ABC):
    """A convex link f(z, y) of a GLM loss f(<v, x>, y), with its first two derivatives in z."""

    name: ClassVar[str]

    @abstractmethod
    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def d1(self, z: np.ndarray, y: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def d2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def max_d1(self, zmax: float, y: float) -> float:
        """sup |f'(z, y)| over |z| <= zmax."""

    @abstractmethod
    def max_d2(self, y: float) -> float:
        """sup f''(z, y) over all z."""

    def options(self) -> dict[str, float]:
        """The link's options (``link_by_name(link.name, **link.options())`` rebuilds it)."""
        return dict(vars(self))

    def check_label(self, y: float) -> None:  # noqa: B027 - most links take any label
        """Raise ValueError for a label the link does not take."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class LogisticLink(GLMLink):
    """f(z, y) = log(1 + exp(-y z)) for labels y in {-1, +1}: |f'| <= 1, f'' <= 1/4."""

    name = "logistic"

    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, -y * z)

    def d1(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return -y * expit(-y * z)

    def d2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        s = expit(y * z)
        return s * (1.0 - s)

    def max_d1(self, zmax: float, y: float) -> float:
        return float(expit(abs(zmax)))  # |f'| = sigma(-y z) <= sigma(|z|)

    def max_d2(self, y: float) -> float:
        return 0.25

    def check_label(self, y: float) -> None:
        if y not in (-1.0, 1.0):
            raise ValueError(f"logistic labels must be -1 or +1, got {y!r}")


class SquaredLink(GLMLink):
    """f(z, y) = (z - y)^2 / 2: |f'| <= |z| + |y|, f'' = 1."""

    name = "squared"

    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return 0.5 * (z - y) ** 2

    def d1(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return z - y

    def d2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.ones_like(z * y)

    def max_d1(self, zmax: float, y: float) -> float:
        return float(abs(zmax) + abs(y))

    def max_d2(self, y: float) -> float:
        return 1.0


class HuberLink(GLMLink):
    """Huber's loss of the residual r = z - y with threshold kappa: r^2 / 2 for |r| <= kappa,
    kappa (|r| - kappa / 2) beyond; |f'| <= kappa, f'' in {0, 1}. f' is Lipschitz but f'' jumps
    at |r| = kappa: the density of Lemma 2 then holds almost everywhere (the change of variables
    for the Lipschitz map x -> -grad J(x)), which is all the rejection step uses."""

    name = "huber"

    def __init__(self, kappa: float = 1.0) -> None:
        if not (math.isfinite(kappa) and kappa > 0):
            raise ValueError(f"Huber's kappa must be finite and positive, got {kappa!r}")
        self.kappa = float(kappa)

    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = np.abs(z - y)
        k = self.kappa
        return np.where(r <= k, 0.5 * r**2, k * (r - 0.5 * k))

    def d1(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.clip(z - y, -self.kappa, self.kappa)

    def d2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return (np.abs(z - y) <= self.kappa).astype(float)

    def max_d1(self, zmax: float, y: float) -> float:
        return min(self.kappa, float(abs(zmax) + abs(y)))

    def max_d2(self, y: float) -> float:
        return 1.0


#: the links by name (``link_by_name``)
GLM_LINKS = {"logistic": LogisticLink, "squared": SquaredLink, "huber": HuberLink}


def link_by_name(name: str, **options: float) -> GLMLink:
    """``logistic``, ``squared`` or ``huber`` (option ``kappa``)."""
    if name not in GLM_LINKS:
        raise ValueError(f"link must be one of {sorted(GLM_LINKS)}, got {name!r}")
    return GLM_LINKS[name](**options)


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
            if a.shape != (d, d) or not np.allclose(a, a.T, atol=1e-12):
                raise ValueError(f"curvature must be a scalar or a symmetric ({d}, {d}) matrix")
            if np.linalg.eigvalsh(a)[0] < -1e-12:
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


class LossSum:
    """sum_s l_s of :class:`SmoothLoss` terms, evaluated at many points at once (module
    docstring). ``add`` appends one loss; ``value``, ``gradient``, ``hessian`` take points of
    shape (k, d)."""

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        self.count = 0
        self._a = np.zeros((self.dim, self.dim))
        self._aa = np.zeros(self.dim)  # sum A a
        self._aaa = 0.0  # sum a' A a
        self._rows: dict[GLMLink, list] = {}  # link -> [V buffer, y buffer, n]

    def add(self, loss: SmoothLoss) -> None:
        if loss.dim != self.dim:
            raise ValueError(f"loss has dimension {loss.dim}, the sum {self.dim}")
        self.count += 1
        if loss.curvature is not None:
            a = loss._a
            self._a += a
            self._aa += a @ loss.anchor
            self._aaa += float(loss.anchor @ a @ loss.anchor)
        if isinstance(loss.link, SquaredLink):
            # (<v, x> - y)^2 / 2 is the quadratic with A = v v', A a = y v, a' A a = y^2: kept
            # in the sufficient statistics, so a sum of n squared losses costs O(d^2), not O(n d^2)
            self._a += np.outer(loss.v, loss.v)
            self._aa += loss.y * loss.v
            self._aaa += loss.y * loss.y
        elif loss.link is not None:
            entry = self._rows.get(loss.link)
            if entry is None:
                entry = self._rows[loss.link] = [np.empty((16, self.dim)), np.empty(16), 0]
            v, y, n = entry
            if n == len(y):
                v = np.concatenate([v, np.empty_like(v)])
                y = np.concatenate([y, np.empty_like(y)])
            v[n], y[n] = loss.v, loss.y
            entry[:] = [v, y, n + 1]

    def _glm(self):
        for link, (v, y, n) in self._rows.items():
            if n:
                yield link, v[:n], y[:n]

    def value(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        out = 0.5 * np.einsum("ki,ij,kj->k", x, self._a, x) - x @ self._aa + 0.5 * self._aaa
        for link, v, y in self._glm():
            out = out + link.value(x @ v.T, y).sum(axis=-1)
        return out

    def gradient(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        out = x @ self._a - self._aa
        for link, v, y in self._glm():
            out = out + link.d1(x @ v.T, y) @ v
        return out

    def hessian(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        out = np.broadcast_to(self._a, (x.shape[0], self.dim, self.dim)).copy()
        for link, v, y in self._glm():
            w = link.d2(x @ v.T, y)  # (k, n)
            for i in range(len(x)):  # V' diag(w_i) V by BLAS, point by point
                out[i] += (v.T * w[i]) @ v
        return out

    def state_dict(self) -> dict:
        return {
            "count": self.count,
            "a": self._a.copy(),
            "aa": self._aa.copy(),
            "aaa": self._aaa,
            "links": [(link.name, link.options()) for link in self._rows],
            "rows": [(v[:n].copy(), y[:n].copy()) for v, y, n in self._rows.values()],
        }

    def load_state_dict(self, state: dict) -> None:
        self.count = int(state["count"])
        self._a = np.array(state["a"], dtype=float)
        self._aa = np.array(state["aa"], dtype=float)
        self._aaa = float(state["aaa"])
        self._rows = {
            link_by_name(name, **options): [
                np.array(v, dtype=float),
                np.array(y, dtype=float),
                len(y),
            ]
            for (name, options), (v, y) in zip(state["links"], state["rows"], strict=True)
        }
