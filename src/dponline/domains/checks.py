"""Argument checks shared by the decision sets: each error names the offending value and what
was expected (ValueError for a bad value, TypeError for a bad type)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "SINGLETON_RADIUS",
    "as_points",
    "checked_dim",
    "checked_finite_array",
    "checked_nonnegative_int",
    "checked_tol",
    "contains_by_projection",
    "readonly",
]

#: The inscribed radius a domain reports when its affine hull is a single point: the unit ball
#: of a 0-dimensional hull is {0}, so every radius is valid; 1.0 keeps ``c + r * u`` finite.
SINGLETON_RADIUS = 1.0


def checked_dim(name: str, value: Any) -> int:
    """A positive integer (numpy integers accepted; bools and floats refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def checked_nonnegative_int(name: str, value: Any) -> int:
    """A non-negative integer (numpy integers accepted; bools and floats refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative integer, got {value!r}")
    if int(value) < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def checked_tol(tol: Any) -> float:
    """A finite tolerance >= 0."""
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol must be a real number, got {tol!r}")
    t = float(tol)
    if not (t >= 0 and math.isfinite(t)):
        raise ValueError(f"tol must be finite and >= 0, got {tol!r}")
    return t


def checked_finite_array(name: str, value: Any, ndim: int | None = None) -> np.ndarray:
    """``value`` as a float array of ``ndim`` axes with finite entries."""
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name} must be an array of real numbers, got {type(value).__name__}"
        ) from err
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        raise ValueError(
            f"{name} must be finite (no NaN or infinity), got {float(a[bad])!r} at index {bad}"
        )
    return a


def as_points(x: Any, dim: int) -> np.ndarray:
    """``x`` as a float array whose last axis has length ``dim`` (NaN allowed: such a row is
    simply not a member)."""
    a = np.asarray(x, dtype=float)
    if a.ndim == 0 or a.shape[-1] != dim:
        raise ValueError(f"x must have last axis of length {dim}, got shape {a.shape}")
    return a


def readonly(a: Any) -> np.ndarray:
    """A float copy of ``a`` that cannot be written to (cached bases and points)."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


def contains_by_projection(
    project: Callable[[np.ndarray], np.ndarray], x: Any, dim: int, tol: float
) -> np.ndarray:
    """``||x - project(x)|| <= tol`` row by row, the exact Euclidean test for a set with an
    exact projection; rows with a non-finite entry are not members."""
    t = checked_tol(tol)
    pts = as_points(x, dim)
    finite = np.all(np.isfinite(pts), axis=-1)
    safe = np.where(finite[..., None], pts, 0.0)
    dist = np.linalg.norm(safe - project(safe), axis=-1)
    return finite & (dist <= t)
