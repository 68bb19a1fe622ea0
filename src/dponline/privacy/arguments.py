"""Argument checks, in one place for the whole package.

Every check takes the argument's name and value, returns the value in its canonical type (an
``int``, a ``float``, a float array) or raises :class:`ArgumentError` with one line that names
the argument and the value:

* :func:`checked_count` (a positive integer: horizons, dimensions, replicas) and
  :func:`checked_nonnegative_int`;
* :func:`checked_positive` (a finite positive real, or ``inf`` where the caller allows it),
  :func:`checked_nonnegative` and :func:`checked_probability`;
* :func:`checked_real_array`: a real array of one of the given shapes, finite unless told
  otherwise; NaN, infinity and complex values, strings and other non-numeric input and wrong
  shapes are all refused here, never by a numpy error further on;
* for saved states (``load_state_dict``): :func:`saved_field` (a key that must be there),
  :func:`checked_round` (a saved round counter within the horizon), :func:`checked_flag`,
  :func:`checked_int_array` and :func:`checked_generator` (a saved RNG state).

The module lives in :mod:`dponline.privacy` because the privacy package needs these checks
itself (calibrations take positive reals and probabilities, input bounds take finite arrays and
dimensions) and may import nothing of dponline outside ``privacy`` and ``rng``
(``tests/test_imports.py``); every other package already imports ``privacy``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from dponline.rng import generator_from_state

__all__ = [
    "ArgumentError",
    "checked_count",
    "checked_flag",
    "checked_generator",
    "checked_generators",
    "checked_int_array",
    "checked_nonnegative",
    "checked_nonnegative_int",
    "checked_positive",
    "checked_probability",
    "checked_real_array",
    "checked_round",
    "saved_field",
]


class ArgumentError(ValueError, TypeError):
    """An argument of the wrong type or value. It is both a ValueError and a TypeError, so that
    callers that catch either (as they did before the checks lived here) catch it, whichever of
    type or value was wrong: NaN, infinity and complex values are refused the same way."""


def _show(value: Any, limit: int = 80) -> str:
    """``repr(value)`` on one line, shortened to ``limit`` characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _integer(value: Any) -> int | None:
    """``value`` as an int if it is an integer (numpy integers included; bools refused)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def _real(value: Any) -> float | None:
    """``value`` as a float if it is a real number (a Python or numpy number, or a 0-d numeric
    array; bools, complex numbers and strings refused)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return float(value)
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def checked_count(name: str, value: Any) -> int:
    """A positive integer (numpy integers accepted; bools and floats refused)."""
    v = _integer(value)
    if v is None or v < 1:
        raise ArgumentError(f"{name} must be a positive integer, got {_show(value)}")
    return v


def checked_nonnegative_int(name: str, value: Any) -> int:
    """A non-negative integer (numpy integers accepted; bools and floats refused)."""
    v = _integer(value)
    if v is None or v < 0:
        raise ArgumentError(f"{name} must be a non-negative integer, got {_show(value)}")
    return v


def checked_positive(name: str, value: Any, *, infinite_ok: bool = False) -> float:
    """A finite positive real number (``inf`` too with ``infinite_ok``)."""
    v = _real(value)
    if v is None or not (v > 0 and (math.isfinite(v) or infinite_ok)):
        need = "a positive number (inf allowed)" if infinite_ok else "a finite positive number"
        raise ArgumentError(f"{name} must be {need}, got {_show(value)}")
    return v


def checked_nonnegative(name: str, value: Any, *, infinite_ok: bool = False) -> float:
    """A finite real number >= 0 (``inf`` too with ``infinite_ok``)."""
    v = _real(value)
    if v is None or not (v >= 0 and (math.isfinite(v) or infinite_ok)):
        need = "non-negative (inf allowed)" if infinite_ok else "finite and non-negative"
        raise ArgumentError(f"{name} must be {need}, got {_show(value)}")
    return v


def checked_probability(name: str, value: Any, *, closed: bool = False) -> float:
    """A probability in (0, 1), or in [0, 1] with ``closed``."""
    v = _real(value)
    inside = v is not None and (0.0 <= v <= 1.0 if closed else 0.0 < v < 1.0)
    if not inside:
        interval = "[0, 1]" if closed else "(0, 1)"
        raise ArgumentError(f"{name} must lie in {interval}, got {_show(value)}")
    assert v is not None
    return v


def _shapes(shapes: tuple[tuple[int, ...], ...]) -> str:
    return " or ".join(str(tuple(s)) for s in shapes)


def checked_real_array(
    name: str, value: Any, *shapes: tuple[int, ...], finite: bool = True
) -> np.ndarray:
    """``value`` as a float array (no copy when it already is one): real numbers (bools and
    integers converted; complex values, strings and other objects refused), of one of
    ``shapes`` when any is given, and finite unless ``finite=False``."""
    if isinstance(value, str | bytes):
        raise ArgumentError(f"{name} must be real numbers, got the string {_show(value)}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # a ragged nesting of sequences
        raise ArgumentError(
            f"{name} must be an array of real numbers, got {_show(value)}"
        ) from None
    kind = arr.dtype.kind
    if kind == "c":
        raise ArgumentError(f"{name} must be real, got complex values {_show(value)}")
    if kind == "O":  # numbers as objects (Fractions...); None, complex numbers, text refused
        for item in arr.flat:
            if not isinstance(item, numbers.Real):
                raise ArgumentError(
                    f"{name} must be real numbers, got {_show(item)} in {_show(value)}"
                )
        arr = arr.astype(float)
    elif kind not in "biuf":
        raise ArgumentError(f"{name} must be real numbers, got {arr.dtype} values {_show(value)}")
    arr = arr.astype(float, copy=False)
    if shapes and arr.shape not in {tuple(s) for s in shapes}:
        raise ArgumentError(f"{name} must have shape {_shapes(shapes)}, got {arr.shape}")
    if finite and not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)].ravel()[0])
        raise ArgumentError(
            f"{name} must be finite, got {bad!r} (NaN and infinity are never accepted)"
        )
    return arr


def checked_int_array(
    name: str, value: Any, shape: tuple[int, ...], low: int = 0, high: int | None = None
) -> np.ndarray:
    """``value`` as an int64 array of ``shape`` with entries in [low, high) (no upper limit
    when ``high`` is None): integers only, never a float rounded down."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise ArgumentError(f"{name} must be integers, got {arr.dtype} values {_show(value)}")
    if arr.shape != tuple(shape):
        raise ArgumentError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    if arr.size and (arr.min() < low or (high is not None and arr.max() >= high)):
        span = f"[{low}, inf)" if high is None else f"[{low}, {high - 1}]"
        raise ArgumentError(f"{name} must lie in {span}, got {_show(value)}")
    return arr.astype(np.int64)


def saved_field(state: Any, key: str) -> Any:
    """``state[key]`` of a saved state, or an error saying the key is missing."""
    if not isinstance(state, Mapping):
        raise ArgumentError(f"a saved state must be a dict, got {type(state).__name__}")
    if key not in state:
        raise ArgumentError(
            f"saved state has no {key!r} (keys {sorted(map(str, state))}): it was saved by "
            "another kind of object, or by another dponline version (a state is read back by "
            "the version that wrote it)"
        )
    return state[key]


def checked_round(t: Any, horizon: int) -> int:
    """A saved round counter, in [0, horizon] (a state past the horizon would let a learner
    release more than its guarantee covers)."""
    v = _integer(t)
    if v is None or not 0 <= v <= horizon:
        raise ArgumentError(
            f"saved round counter t must be an integer in [0, {horizon}], got {_show(t)}"
        )
    return v


def checked_flag(name: str, value: Any) -> bool:
    """A saved bool (Python or numpy)."""
    if not isinstance(value, bool | np.bool_):
        raise ArgumentError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def checked_generator(name: str, state: Any) -> np.random.Generator:
    """The generator a saved RNG state describes (:func:`dponline.rng.generator_from_state`)."""
    try:
        return generator_from_state(state)
    except (KeyError, TypeError, ValueError) as err:
        raise ArgumentError(f"{name} is not a saved generator state: {err}") from None


def checked_generators(name: str, states: Any, replicas: int) -> list[np.random.Generator]:
    """The per-replica generators of a saved state (``states``: a list of ``replicas``
    generator states, as :func:`dponline.rng.replica_generators` made them), each checked."""
    if not isinstance(states, list | tuple) or len(states) != replicas:
        raise ArgumentError(f"{name} must be a list of {replicas} generator states")
    return [checked_generator(f"{name}[{i}]", s) for i, s in enumerate(states)]
