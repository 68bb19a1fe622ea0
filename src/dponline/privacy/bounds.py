"""Input contracts: the bounds a privacy guarantee needs, enforced on every input.

A guarantee holds only for inputs inside the bounds the mechanism was built with. An input
outside them raises :class:`ValueError` naming the value and the bound, unless clipping was asked
for; NaN and infinity are always rejected (docs/design.md, "The learner protocol", inputs).

The bounds also give the exact sensitivities used by the ``tight`` calibrations: two neighbouring
streams differ in one round whose value moves inside the set, so the sensitivity in a norm is the
set's *diameter* in that norm, which can be twice the largest norm the papers use.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from dponline.privacy.arguments import checked_count, checked_real_array

__all__ = ["Box", "InputBounds", "NormBall", "check_finite", "lp_norm"]

_NORM_NAMES = {1.0: "l1", 2.0: "l2", math.inf: "linf"}


def _as_p(norm: float | str) -> float:
    if isinstance(norm, str):
        table = {"l1": 1.0, "l2": 2.0, "linf": math.inf, "inf": math.inf}
        if norm not in table:
            raise ValueError(f"norm must be one of {sorted(table)} or a number >= 1, got {norm!r}")
        return table[norm]
    p = float(norm)
    if not (p >= 1.0):
        raise ValueError(f"norm exponent p must be >= 1, got {norm!r}")
    return p


def lp_norm(x: np.ndarray, p: float | str, axis: int = -1) -> np.ndarray:
    """The l_p norm along ``axis`` (p may be ``inf`` or a name such as ``"l2"``).

    For 1 < p < inf it is ``(sum |x_i|^p)^(1/p)`` where ``m^p`` (``m = max |x_i|``) lies safely
    inside the range of doubles, and otherwise ``m * (sum (|x_i| / m)^p)^(1/p)``: every ratio is
    at most 1 and the largest is 1, so it neither underflows to 0 (|x_i|^p for a large p or a
    tiny x_i, which let inputs far outside a norm ball pass its check) nor overflows. (The
    direct sum where it is safe keeps a unit vector's norm exactly 1.) An infinite entry gives
    an infinite norm."""
    p = _as_p(p)
    a = np.abs(np.asarray(x, dtype=float))
    if p == math.inf:
        return a.max(axis=axis)
    if p == 1.0:
        return a.sum(axis=axis)
    m = a.max(axis=axis, keepdims=True, initial=0.0)
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        direct = (a * a if p == 2.0 else a**p).sum(axis=axis) ** (1.0 / p)
        safe = np.abs(p * np.log(np.squeeze(m, axis=axis))) < _SAFE_LOG_POWER
    if np.all(safe):
        return direct
    finite = np.isfinite(m) & (m > 0)
    ratio = a / np.where(finite, m, 1.0)
    scaled = (ratio * ratio if p == 2.0 else ratio**p).sum(axis=axis) ** (1.0 / p)
    m = np.squeeze(m, axis=axis)
    out = np.where(np.isinf(m), math.inf, np.where(m > 0, m * scaled, 0.0))
    return np.where(safe, direct, out)[()]


#: |p ln m| below this keeps m^p within [1e-260, 1e260]: the direct sum of powers is exact there
_SAFE_LOG_POWER = 600.0


#: the relative distance past a bound that :meth:`InputBounds.check` takes for rounding
_ROUNDING = 1e-12


def check_finite(x: np.ndarray, what: str = "input") -> np.ndarray:
    """Return ``x`` as a float array, raising ValueError if it holds NaN or infinity (and for
    complex values or strings): :func:`~dponline.privacy.arguments.checked_real_array`."""
    return checked_real_array(what, x)


class InputBounds(ABC):
    """A set the per-round input must lie in, with its exact diameters and norms."""

    dim: int

    @abstractmethod
    def violation(self, x: np.ndarray) -> str | None:
        """A message naming the first offending value and the bound, or None when inside."""

    @abstractmethod
    def clip(self, x: np.ndarray) -> np.ndarray:
        """Map ``x`` into the set (identity on the set)."""

    @abstractmethod
    def diameter(self, norm: float | str) -> float:
        """sup ||x - y|| over x, y in the set: the exact sensitivity of one round's value."""

    @abstractmethod
    def max_norm(self, norm: float | str) -> float:
        """sup ||x|| over the set (the papers' ||Y||_p)."""

    def contains(self, x: np.ndarray) -> bool:
        """Fast membership test for finite arrays of shape (..., dim)."""
        return self.violation(x) is None

    def check(self, x: np.ndarray, *, clip: bool = False, what: str = "input") -> np.ndarray:
        """Validate ``x`` (shape ``(..., dim)``) and return it as a float array.

        Raises ValueError for NaN/inf always, and for values outside the set unless
        ``clip=True``, in which case they are mapped into the set; values within a relative
        1e-12 of the set (rounding, :meth:`within_rounding`) are mapped into it either way.
        """
        arr = check_finite(x, what)
        if arr.ndim == 0 or arr.shape[-1] != self.dim:
            raise ValueError(f"{what} must have last dimension {self.dim}, got shape {arr.shape}")
        msg = self.violation(arr)
        if msg is None:
            return arr
        if clip or self.within_rounding(arr):
            return self.clip(arr)
        raise ValueError(
            f"{what} is outside the declared bounds: {msg} (built with clip=True, a learner or "
            "counter clips such inputs into the bounds instead)"
        )

    def within_rounding(self, x: np.ndarray) -> bool:
        """True when every row of ``x`` lies within a relative 1e-12 of the set: a value that
        is inside in exact arithmetic (a gradient scaled to unit norm) can round a hair past
        the bound. :meth:`check` clips such values into the set even without ``clip=True``:
        the clipped value lies in the set, so the sensitivity is still the set's diameter."""
        return False


@dataclass(frozen=True)
class Box(InputBounds):
    """The box {x : low <= x <= high} in R^dim (scalars apply to every coordinate).

    Losses in [0, 1]^N (Agarwal & Singh, Corollary 3.2) are ``Box(0, 1, dim=N)``.
    """

    low: float | np.ndarray
    high: float | np.ndarray
    dim: int
    _lo: np.ndarray = field(init=False, repr=False, compare=False)
    _hi: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        checked_count("dim", self.dim)
        lo = np.broadcast_to(check_finite(self.low, "Box low"), (self.dim,)).astype(float)
        hi = np.broadcast_to(check_finite(self.high, "Box high"), (self.dim,)).astype(float)
        if np.any(lo > hi):
            i = int(np.argmax(lo > hi))
            raise ValueError(f"Box needs low <= high, got low[{i}]={lo[i]} > high[{i}]={hi[i]}")
        object.__setattr__(self, "_lo", lo)
        object.__setattr__(self, "_hi", hi)

    def contains(self, x: np.ndarray) -> bool:
        return bool((x >= self._lo).all() and (x <= self._hi).all())

    def violation(self, x: np.ndarray) -> str | None:
        below = x < self._lo
        above = x > self._hi
        if not (below.any() or above.any()):
            return None
        bad = below | above
        idx = np.unravel_index(int(np.argmax(bad)), x.shape)
        j = idx[-1]
        return (
            f"value {x[idx]!r} at index {tuple(int(i) for i in idx)} is outside "
            f"[{self._lo[j]}, {self._hi[j]}]"
        )

    def clip(self, x: np.ndarray) -> np.ndarray:
        return np.clip(x, self._lo, self._hi)

    def within_rounding(self, x: np.ndarray) -> bool:
        slack = _ROUNDING * np.maximum(np.abs(self._lo), np.abs(self._hi))
        return bool((x >= self._lo - slack).all() and (x <= self._hi + slack).all())

    def diameter(self, norm: float | str) -> float:
        return float(lp_norm(self._hi - self._lo, norm))

    def max_norm(self, norm: float | str) -> float:
        return float(lp_norm(np.maximum(np.abs(self._lo), np.abs(self._hi)), norm))


@dataclass(frozen=True)
class NormBall(InputBounds):
    """The ball {x : ||x||_q <= radius} in R^dim; clipping rescales radially onto the ball."""

    radius: float
    norm: float | str
    dim: int

    def __post_init__(self) -> None:
        checked_count("dim", self.dim)
        r = float(self.radius)
        if not (math.isfinite(r) and r >= 0):
            raise ValueError(f"radius must be finite and non-negative, got {self.radius!r}")
        _as_p(self.norm)

    @property
    def q(self) -> float:
        return _as_p(self.norm)

    def _factor(self, norm: float | str) -> float:
        # sup_{||u||_q <= 1} ||u||_p = dim^{max(0, 1/p - 1/q)}
        p = _as_p(norm)
        inv = (0.0 if p == math.inf else 1.0 / p) - (0.0 if self.q == math.inf else 1.0 / self.q)
        return float(self.dim ** max(0.0, inv))

    def violation(self, x: np.ndarray) -> str | None:
        n = lp_norm(x, self.q)
        over = n > self.radius
        if not np.any(over):
            return None
        idx = np.unravel_index(int(np.argmax(over)), n.shape)
        name = _NORM_NAMES.get(self.q, f"l{self.q:g}")
        row = tuple(int(i) for i in idx)
        return f"{name} norm {float(n[idx])!r} of row {row} exceeds {self.radius}"

    def within_rounding(self, x: np.ndarray) -> bool:
        return bool((lp_norm(x, self.q) <= self.radius * (1.0 + _ROUNDING)).all())

    def clip(self, x: np.ndarray) -> np.ndarray:
        n = lp_norm(x, self.q)[..., None]
        # rescale a hair inside the ball so rounding cannot leave the result outside it
        inside = self.radius * (1.0 - 1e-12)
        scale = np.where(n > self.radius, inside / np.where(n > 0, n, 1.0), 1.0)
        return x * scale

    def diameter(self, norm: float | str) -> float:
        return 2.0 * float(self.radius) * self._factor(norm)

    def max_norm(self, norm: float | str) -> float:
        return float(self.radius) * self._factor(norm)
