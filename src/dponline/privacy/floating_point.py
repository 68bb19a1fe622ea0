"""Numbers a deployment publishes, rounded to a grid so that their last bits carry no data.

**The problem** (Mironov, "On significance of the least significant bits for differential
privacy", CCS 2012). The guarantees of this library are proven in exact arithmetic. In floating
point, a noisy value's low-order bits can depend on the data: with a reward of 1, a released
value ``fl(1 + Y)`` in (0, 1/2) is a multiple of 2^-53, because the sum is exact there; with a
reward of 0 the value is ``Y`` itself, whose bits go finer, and about one draw in eight lies in
(0, 1/2) off that lattice. An event of probability 0.13 under one input and 0 under its
neighbour is an unbounded privacy loss, whatever the epsilon claimed (measured on the released
means of AdaP-UCB, DP-IMED, Lazy-DP-TS, DP-UCB and :func:`~dponline.bandits.estimates.
laplace_arm_means` before this module: ``tests/privacy/test_floating_point.py``).

**What is done** (ours, after Mironov's snapping mechanism). A value published as a number (a
learner's ``released_means()``, :func:`~dponline.bandits.estimates.laplace_arm_means`) is
rounded to the nearest multiple of :data:`RELEASE_GRID` = 2^-24 (about 6e-8, far below any
digit a report prints). Multiplying and dividing by a power of two and rounding to an integer
are exact in binary floating point, so the rounded value depends on the noisy value only
through the grid cell it falls in: the lattice the attack reads is gone (every output is a
multiple of 2^-24 under both inputs).

**What this proves, and what it does not** (our argument, not a theorem). In exact arithmetic
rounding is post-processing and the guarantee is unchanged. In floating point, ``fl(x + Y)``
differs from ``x + Y`` by at most half an ulp, so the probability of each grid cell differs from
its exact-arithmetic value only for draws within an ulp of the cell's edges: a relative change of
order ulp / grid, 2^-53 / 2^-24 = 2^-29 for values near 1, in the probability of each output.
Two things remain outside the argument: the sampler's own granularity (numpy draws a uniform on
a 2^-53 lattice, so Laplace noise beyond about 36.7 scales never occurs: an output that far out
has probability 0 under one input and a tiny one under its neighbour, a failure of order 2^-53)
and values so large that the grid is finer than their ulp (magnitudes past 2^29, which only a
noise scale of that order produces). Mironov's snapping mechanism proves a bound with his
sampler and an input clamp; ours is numpy's sampler and proves nothing beyond the argument
above. The decisions of a learner (arms, points) are computed from noisy values too, and are
not rounded: an arm chosen by comparing noisy indices depends on their last bits only through
near ties, and a point published as numbers (a DP-FTRL iterate) can be passed through
:func:`snapped` with a grid at least its noise's resolution by the deployment that publishes
it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RELEASE_GRID", "snapped"]

#: the grid published numbers are rounded to (a power of two: scaling by it is exact)
RELEASE_GRID = 2.0**-24


def snapped(values: Any, grid: float = RELEASE_GRID) -> np.ndarray:
    """``values`` rounded to the nearest multiple of ``grid`` (a power of two; NaN and
    infinity as they are): the numbers to publish (module docstring)."""
    exponent = np.log2(grid)
    if not (np.isfinite(exponent) and float(exponent).is_integer()):
        raise ValueError(f"grid must be a power of two, got {grid!r}")
    v = np.asarray(values, dtype=float)
    return np.ldexp(np.rint(np.ldexp(v, -int(exponent))), int(exponent))
