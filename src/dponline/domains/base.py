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
* ``diameter`` is the Euclidean diameter ``max_{x, y in D} ||x - y||_2``; where it is not known
  in closed form the domain returns a proven upper bound and says so (``diameter_is_exact``).
* ``affine_dim`` is the dimension of the affine hull; ``hull_basis()`` an orthonormal basis of
  its direction space, shape ``(dim, affine_dim)``.
* ``interior_point()`` lies in the relative interior, and the ball of radius
  ``inscribed_radius`` around it *within the affine hull* lies inside the set (a proven lower
  bound on the largest such radius; the domain's docstring gives the derivation).
* ``contains(x, tol)`` decides membership up to ``tol`` in Euclidean distance, row by row.

Projection and a self-concordant barrier exist only for some sets: those domains also satisfy
:class:`Projectable` (``project``) or :class:`HasBarrier` (``barrier``); ask with ``isinstance``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from dponline.domains.barriers import SelfConcordantBarrier

__all__ = [
    "ConvexDomain",
    "FullDimensional",
    "HasBarrier",
    "Projectable",
    "as_directions",
    "checked_domain",
]


def as_directions(direction: np.ndarray, dim: int) -> np.ndarray:
    """``direction`` as a float array whose last axis has length ``dim``; NaN and infinity are
    refused (an oracle answer to a NaN direction would be arbitrary)."""
    d = np.asarray(direction, dtype=float)
    if d.ndim == 0 or d.shape[-1] != dim:
        raise ValueError(f"direction must have last axis of length {dim}, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("direction must be finite (no NaN or infinity)")
    return d


class ConvexDomain(ABC):
    """A compact convex set in R^dim, reached through its linear minimisation oracle."""

    #: ambient dimension n
    dim: int

    @abstractmethod
    def lmo(self, direction: np.ndarray) -> np.ndarray:
        """``argmin_{x in D} <direction, x>``, shape ``direction.shape``."""

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
        """``min_{x in D} <direction, x>`` (the support function at ``-direction``, negated)."""
        d = as_directions(direction, self.dim)
        return np.einsum("...i,...i->...", d, self.lmo(d))


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
