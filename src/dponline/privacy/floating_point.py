"""Numbers a deployment publishes, rounded to a grid so that their last bits carry no data.

**The problem** (Mironov, "On significance of the least significant bits for differential
privacy", CCS 2012). The guarantees of this library are proven in exact arithmetic. In floating
point, a noisy value's low-order bits can depend on the data: with a reward of 1, a released
value ``fl(1 + Y)`` in (0, 1/2) is a multiple of 2^-53, because the sum is exact there; with a
reward of 0 the value is ``Y`` itself, whose bits go finer, and about one draw in eight lies in
(0, 1/2) off that lattice. An event of probability 0.13 under one input and 0 under its
neighbour is an unbounded privacy loss, whatever the epsilon claimed (measured on the released
means of AdaP-UCB, DP-IMED, Lazy-DP-TS, DP-UCB and :func:`~dponline.bandits.estimates.
laplace_arm_means` before this module: ``tests/privacy/test_floating_point.py``; and the
releases of the continual counters, which are not rounded: see below).

**What is done** (ours, after Mironov's snapping mechanism). A value published as a number (a
learner's ``released_means()``, :func:`~dponline.bandits.estimates.laplace_arm_means`) is
rounded to the nearest multiple of :data:`RELEASE_GRID` = 2^-16 (about 1.5e-5, below any digit
a report prints). Multiplying and dividing by a power of two and rounding to an integer are
exact in binary floating point, so the rounded value depends on the noisy value only through
the grid cell it falls in: the lattice the attack reads is gone (every output is a multiple of
2^-16 under both inputs).

**What this leaves** (our argument and a reviewer's enumeration, not a theorem). Let b be the
noise's scale in the units of the published value (a released mean's: its sum's scale over the
pulls it holds). (1) Near the centre, ``fl(x + Y)`` differs from ``x + Y`` by at most half an
ulp, which moves a draw into another cell only within an ulp of a cell edge: a relative change
of order ulp / grid in each output's probability (2^-52 / 2^-16 = 2^-36 for values near 1).
(2) In the tails, numpy's unit Laplace takes only the values +-log(k 2^-52), whose spacing
b 2^-52 e^m at m scales out exceeds the grid from m = ln(grid / (b 2^-52)) on: past it some
cells are reached under one input and never under its neighbour. That happens with probability
at most about b 2^-52 / grid in each tail, 2 b 2^-52 / grid = b 2^-35 per published value in
all: a delta of 2.9e-11 at b = 1 (epsilon 1, one pull), growing with b. The estimate is on the
safe side: a reviewer enumerated every draw of the lower tail at b = 1 with the grid at 2^-24
and found 1.6e-9, against the estimate's 3.7e-9 for that tail; at epsilon = 2^-27 that grid
gave an event of probability 1 under one input and 0.74 under the other. The grid is therefore
2^-16, and a deployment at a tiny epsilon (b far above 1) publishes through :func:`snapped`
with a grid near b itself (Mironov's choice, the power of two at or above the noise's scale),
where the tail term is of order 2^-52. Mironov's snapping mechanism proves a bound with his
sampler and an input clamp; ours is numpy's sampler, and nothing beyond this argument is
claimed. The decisions of a learner (arms, points) are computed from noisy values too, and are
not rounded: an arm chosen by comparing noisy indices depends on their last bits only through
near ties. A point or a running sum published as numbers (a DP-FTRL iterate, a continual
counter's release) is passed through :func:`snapped`, with a grid at or above its noise's
scale, by the deployment that publishes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RELEASE_GRID", "snapped"]

#: the grid published numbers are rounded to (a power of two: scaling by it is exact)
RELEASE_GRID = 2.0**-16


def snapped(values: Any, grid: float = RELEASE_GRID) -> np.ndarray:
    """``values`` rounded to the nearest multiple of ``grid`` (a power of two; NaN and
    infinity as they are): the numbers to publish (module docstring)."""
    exponent = np.log2(grid)
    if not (np.isfinite(exponent) and float(exponent).is_integer()):
        raise ValueError(f"grid must be a power of two, got {grid!r}")
    v = np.asarray(values, dtype=float)
    return np.ldexp(np.rint(np.ldexp(v, -int(exponent))), int(exponent))
