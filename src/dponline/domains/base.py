"""The one contract every decision set of dponline meets.

Projection-free learners (Ene, Nguyen & Vladu 2021; the streaming Frank-Wolfe of Han et al.)
touch a decision set only through its linear minimisation oracle; bandit learners that smooth a
loss by spherical perturbation (Ene et al. Lemma 2.2) also need the set's affine hull, a point of
its relative interior and the radius of a ball around that point inside the set (Appendix D).
:class:`ConvexDomain` states that contract once; every set in :mod:`dponline.domains` is one.

Conventions, for every domain:

* ``lmo(direction)`` returns ``argmin_{x in D} <direction, x>`` for ``direction`` of shape
  ``(..., dim)``, vectorised over any leading axes (the replicas axis of a learner). Ties are
  broken deterministically (the domain's docstring says how), so that two replicas given the
  same direction play the same vertex.
* **Scale invariance.** The answer depends on the direction of each row, not on its size, at
  every finite scale from subnormal rows (5e-324) to 1.7e308: before a domain sees a
  direction, each row is multiplied by the power of two ``2**k`` that puts its largest
  absolute entry in [1, 2) (:func:`scale_rows`; an all-zero row is left as it is, and every
  domain answers it with a fixed member, its docstring says which). Multiplying by a power of
  two is exact, and orders, signs, sums and products scale exactly with it (away from
  underflow and overflow), so the answer to a row of ordinary size is bit for bit the one the
  domain's own algorithm gives unscaled (for every oracle here built from those operations:
  all but :class:`~dponline.domains.polytope.Polytope`, whose LP solver has absolute
  tolerances and now always sees rows of the same size); ``lmo(2**j * c) == lmo(c)`` bit for
  bit, ties included, whenever ``2**j * c`` is exact; and ``lmo(s * c) == lmo(c)`` for every
  ``s > 0`` whenever the minimiser is unique by more than the rounding of ``s * c``. In the
  scaled row, entries below ``2**-1022`` times the largest lose
  bits and entries below ``2**-1075`` times it become 0: the answer is optimal for the scaled
  row, whose objective differs from the given one's by less than its rounding. Every domain
  wraps the ``lmo`` it defines (:meth:`ConvexDomain.__init_subclass__`), so its own code
  receives checked, scaled float rows and need not repeat either step.
* ``min_linear(direction)`` is ``<direction, lmo(direction)>``, computed on the scaled row
  and scaled back, so it overflows only when the value itself does (then +-inf).
* ``diameter`` is the Euclidean diameter ``max_{x, y in D} ||x - y||_2``; where it is not known
  in closed form the domain returns a proven upper bound and says so (``diameter_is_exact``).
* ``affine_dim`` is the dimension of the affine hull; ``hull_basis()`` an orthonormal basis of
  its direction space, shape ``(dim, affine_dim)``, in closed form or from a decomposition
  that fixes it (a basis from a singular value decomposition is made canonical,
  :func:`~dponline.domains.affine.canonical_basis`, since a LAPACK build may return any basis
  where singular values repeat and learners compute in these coordinates).
* ``interior_point()`` lies in the relative interior, and the ball of radius
  ``inscribed_radius`` around it *within the affine hull* lies inside the set (a proven lower
  bound on the largest such radius; the domain's docstring gives the derivation).
* ``contains(x, tol)`` decides membership up to ``tol`` in Euclidean distance, row by row.

**Refusals**, the same for every domain and every array argument (``direction`` of ``lmo`` and
``min_linear``, ``x`` of ``project`` and ``contains``), all from one check
(:func:`dponline.domains.checks.checked_rows`), each a one-line message naming the
argument: NaN or +-infinity is a ValueError naming the value and its index (an oracle's answer
to a NaN direction would be arbitrary, and a point with a NaN is neither in nor out of a set);
complex values (even with zero imaginary part) and non-numeric data are a TypeError; a shape
whose last axis is not ``dim``, a scalar or a ragged nested list is a ValueError naming the
expected shape ``(..., dim)``. Integer and boolean arrays are accepted as real numbers.

Projection and a self-concordant barrier exist only for some sets: those domains also satisfy
:class:`Projectable` (``project``) or :class:`HasBarrier` (``barrier``); ask with ``isinstance``.
``project`` returns a member of the set for every finite input, however far.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from dponline.domains.checks import checked_rows

if TYPE_CHECKING:
    from dponline.domains.barriers import SelfConcordantBarrier

__all__ = [
    "ConvexDomain",
    "FullDimensional",
    "HasBarrier",
    "Projectable",
    "as_directions",
    "checked_domain",
    "scale_rows",
]


def as_directions(direction: Any, dim: int) -> np.ndarray:
    """``direction`` as a float array of shape ``(..., dim)`` with finite entries (the refusals
    of the module docstring, the argument named ``direction``)."""
    return checked_rows("direction", direction, dim)


def scale_rows(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(unit, exponent)`` with ``d == unit * 2**exponent`` row by row (along the last axis),
    ``exponent`` an integer array of shape ``d.shape[:-1]`` chosen so that the largest absolute
    entry of each non-zero row of ``unit`` lies in [1, 2); all-zero rows have exponent 0.
    Exact (a power-of-two scaling) except that entries below ``2**-1074`` times their row's
    largest underflow. ``d`` must be finite; a row already in range is returned unchanged
    (and ``d`` itself when every row is)."""
    top = np.max(np.abs(d), axis=-1)
    _, exp = np.frexp(top)  # top = m 2**exp, m in [0.5, 1); exp = 0 for top = 0
    exp = np.where(top > 0, exp - 1, 0)
    if not exp.any():
        return d, exp
    return np.ldexp(d, -exp[..., None]), exp


def _scaled_oracle(impl: Callable[[Any, np.ndarray], np.ndarray]) -> Callable:
    """The public ``lmo``: checks ``direction`` and scales its rows (module docstring), then
    calls the domain's own oracle ``impl`` on the scaled float rows."""

    @functools.wraps(impl)
    def lmo(self: ConvexDomain, direction: Any) -> np.ndarray:
        unit, _ = scale_rows(as_directions(direction, self.dim))
        return impl(self, unit)

    lmo._scaled_oracle = True  # type: ignore[attr-defined]
    return lmo


class ConvexDomain(ABC):
    """A compact convex set in R^dim, reached through its linear minimisation oracle."""

    #: ambient dimension n
    dim: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap the ``lmo`` a subclass defines so that it receives checked directions scaled
        by :func:`scale_rows` (the scale invariance and refusals of the module docstring)."""
        super().__init_subclass__(**kwargs)
        impl = cls.__dict__.get("lmo")
        if (
            callable(impl)
            and not getattr(impl, "_scaled_oracle", False)
            and not getattr(impl, "__isabstractmethod__", False)
        ):
            cls.lmo = _scaled_oracle(impl)  # type: ignore[method-assign]

    @abstractmethod
    def lmo(self, direction: np.ndarray) -> np.ndarray:
        """``argmin_{x in D} <direction, x>``, shape ``direction.shape``. A subclass's
        implementation receives float rows already checked and scaled (module docstring)."""

    @property
    @abstractmethod
    def diameter(self) -> float:
        """Euclidean diameter (or a proven upper bound when ``diameter_is_exact`` is False)."""

    @property
    def diameter_is_exact(self) -> bool:
        return True

    @property
    @abstractmethod
    def affine_dim(self) -> int:
        """Dimension of the affine hull."""

    @abstractmethod
    def hull_basis(self) -> np.ndarray:
        """Orthonormal basis of the affine hull's direction space, shape (dim, affine_dim)."""

    @abstractmethod
    def interior_point(self) -> np.ndarray:
        """A point of the relative interior, shape (dim,)."""

    @property
    @abstractmethod
    def inscribed_radius(self) -> float:
        """r > 0 with interior_point() + r * (unit ball of the affine hull) inside the set."""

    @abstractmethod
    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``x`` lies within Euclidean distance ``tol`` of the set."""

    def min_linear(self, direction: np.ndarray) -> np.ndarray:
        """``min_{x in D} <direction, x>`` (the support function at ``-direction``, negated),
        computed on the scaled rows and scaled back: +-inf only when the value itself is
        beyond the float range."""
        unit, exp = scale_rows(as_directions(direction, self.dim))
        with np.errstate(over="ignore"):
            return np.ldexp(np.einsum("...i,...i->...", unit, self.lmo(unit)), exp)


def checked_domain(domain: Any, dim: int | None = None) -> ConvexDomain:
    """``domain`` if it is a :class:`ConvexDomain` (of dimension ``dim`` when given), else a
    TypeError (ValueError for the wrong dimension) saying what was expected."""
    if not isinstance(domain, ConvexDomain):
        raise TypeError(
            f"domain must be a ConvexDomain (dponline.domains), got {type(domain).__name__}"
        )
    if dim is not None and domain.dim != dim:
        raise ValueError(f"domain has dimension {domain.dim}, expected {dim}")
    return domain


class FullDimensional:
    """Mixin for a set with non-empty interior in R^dim: its affine hull is R^dim. List it
    before :class:`ConvexDomain` among the bases."""

    dim: int

    @property
    def affine_dim(self) -> int:
        return self.dim

    def hull_basis(self) -> np.ndarray:
        return np.eye(self.dim)


@runtime_checkable
class Projectable(Protocol):
    """A domain with a Euclidean projection."""

    def project(self, x: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class HasBarrier(Protocol):
    """A domain with a self-concordant barrier (for SCRiBLe, Agarwal & Singh Theorem 4.5)."""

    @property
    def barrier(self) -> SelfConcordantBarrier: ...
