"""Argument checks shared by the decision sets: each error is one line that names the argument,
the offending value and what was expected (ValueError for a bad value or shape, TypeError for a
bad type).

Every array a domain takes goes through one of two checks with the same refusals: a direction
or a point to project or to test for membership through :func:`checked_rows` (shape
``(..., dim)``), the data a set is built from through :func:`checked_finite_array`. Both start
with the package's one array check, :func:`dponline.privacy.arguments.checked_real_array`:
integer, boolean and float arrays are converted to float64; complex values, strings, other
non-numeric data and ragged nested lists are refused there, never by a numpy error further on.
They add only what a domain needs: the shape (the last axis of length ``dim``, or the number
of axes), and for NaN and +-infinity the first offending value with its index. Every refusal
is an :class:`~dponline.privacy.arguments.ArgumentError` (a ValueError and a TypeError).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from dponline.privacy.arguments import (
    ArgumentError,
    checked_nonnegative_int,
    checked_real_array,
)

__all__ = [
    "SINGLETON_RADIUS",
    "as_points",
    "checked_finite_array",
    "checked_nonnegative_int",
    "checked_rows",
    "checked_tol",
    "contains_by_projection",
    "readonly",
]

#: The inscribed radius a domain reports when its affine hull is a single point: the unit ball
#: of a 0-dimensional hull is {0}, so every radius is valid; 1.0 keeps ``c + r * u`` finite.
SINGLETON_RADIUS = 1.0


def checked_tol(tol: Any) -> float:
    """A finite tolerance >= 0."""
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol must be a real number, got {tol!r}")
    t = float(tol)
    if not (t >= 0 and math.isfinite(t)):
        raise ValueError(f"tol must be finite and >= 0, got {tol!r}")
    return t


def _refuse_non_finite(name: str, a: np.ndarray) -> None:
    """The one refusal a domain adds to the shared check: the first NaN or infinite entry of
    ``a``, with its index."""
    if not np.all(np.isfinite(a)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        if len(bad) == 0:
            where = "a scalar"
        else:
            where = f"index {bad[0]}" if len(bad) == 1 else f"index {bad}"
        raise ArgumentError(f"{name} must be finite real numbers, got {float(a[bad])!r} at {where}")


def checked_rows(name: str, value: Any, dim: int) -> np.ndarray:
    """``value`` as a float64 array of shape ``(..., dim)`` with finite entries: the one check
    every direction and every point a domain takes goes through (module docstring)."""
    a = checked_real_array(name, value, finite=False)  # real numbers: the shared refusals
    if a.ndim == 0 or a.shape[-1] != dim:
        raise ArgumentError(
            f"{name} must have shape (..., {dim}) (last axis of length {dim}), got shape {a.shape}"
        )
    _refuse_non_finite(name, a)
    return a


def checked_finite_array(name: str, value: Any, ndim: int | None = None) -> np.ndarray:
    """``value`` as a float array of ``ndim`` axes with finite entries (the data a domain is
    built from; same refusals as :func:`checked_rows`), always a new array."""
    a = checked_real_array(name, value, finite=False)  # real numbers: the shared refusals
    if ndim is not None and a.ndim != ndim:
        raise ArgumentError(f"{name} must have {ndim} axes, got shape {a.shape}")
    _refuse_non_finite(name, a)
    return np.array(a, dtype=float)  # a copy: the caller may keep or modify it


def as_points(x: Any, dim: int) -> np.ndarray:
    """The points ``x`` given to ``project`` or ``contains``, checked as
    :func:`checked_rows` does (named ``x``): NaN and infinity are refused, not treated
    as non-members."""
    return checked_rows("x", x, dim)


def readonly(a: Any) -> np.ndarray:
    """A float copy of ``a`` that cannot be written to (cached bases and points)."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


def contains_by_projection(
    project: Callable[[np.ndarray], np.ndarray], x: Any, dim: int, tol: float
) -> np.ndarray:
    """``||x - project(x)|| <= tol`` row by row, the exact Euclidean test for a set with an
    exact projection (``x`` checked by :func:`as_points`; a distance that overflows to +inf is
    correctly not within ``tol``)."""
    t = checked_tol(tol)
    pts = as_points(x, dim)
    return np.linalg.norm(pts - project(pts), axis=-1) <= t
