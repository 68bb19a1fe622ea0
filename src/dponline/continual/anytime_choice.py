"""Which counter without a horizon has less noise for one person (ours).

Two counters prove a person's guarantee (at most k rounds, any two at least b apart) at every
prefix length: the tapered square-root factorisation
(:class:`~dponline.continual.anytime_factorization.TaperedSqrt`, its sensitivity to the
person bounded by :func:`~dponline.continual.anytime_factorization.person_sq_bounds`) and the
BLT without a horizon, optimised for the person's pattern
(:mod:`dponline.continual.anytime_blt`). Neither is better for every pattern: for one round the
factorisation's largest variance stays within 1.40x of a square root built for the horizon
from t = 2^10 to 2^20 and the BLT's within 1.71x; for 50 rounds 10 apart the factorisation's
reaches 2.19x and the BLT's 1.54x (``dponline mechanisms --anytime --participations 50
--min-separation 10``). :func:`anytime_choice` takes, for a pattern, the one whose worst ratio
over those prefix lengths is smaller (by 2% at least for the BLT), as ``tight`` takes the
counter of least variance when the horizon is known. A BLT optimised for a shorter design
horizon n is compared at the prefix lengths up to n (and at n), one for a longer one at those up
to 2^20. Every number is exact up to the person bound's gap (its upper end, which the noise
uses).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dponline.continual.anytime_blt import (
    DESIGN_HORIZON,
    anytime_blt_parameters,
    anytime_blt_sensitivity,
)
from dponline.continual.anytime_factorization import TaperedSqrt, person_sq_bounds
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.continual.participation import check_pattern, toeplitz_participation_sq

__all__ = [
    "CHOICE_MARGIN",
    "CHOICE_MAX_PARTICIPATIONS",
    "CHOICE_ROUNDS",
    "PersonVariances",
    "anytime_choice",
    "choice_rounds",
    "person_variances",
]

#: the prefix lengths the choice compares (those of ``dponline mechanisms --anytime``)
CHOICE_ROUNDS = tuple(2**e for e in range(10, 21, 2))

#: the counters compared, by their mechanism names (ties go to the first)
FACTORISATION, BLT = "anytime_factorization", "anytime_blt"

#: the BLT is taken only where its worst ratio is below this fraction of the factorisation's:
#: a near tie (16 rounds 1 apart: 1.549 against 1.558) rests on a numerical optimum that
#: another platform's arithmetic could move, and with it the counter a checkpoint was saved by
CHOICE_MARGIN = 0.98

#: the most participations compared: the comparison optimises the person's BLT and sums the
#: square root's pattern over 2^20 rounds, 2.8 s at 1,024 consecutive rounds and 6.5 s at
#: 4,096 (2026-11-27, 2 shared cores), growing with k; past it the factorisation stays, and
#: ``mechanism="anytime_blt"`` names the BLT (at 256 and 1,024 consecutive rounds its worst
#: ratio is 1.30 and 1.52, the factorisation's 1.94 and 3.30: likely the better past the
#: limit too)
CHOICE_MAX_PARTICIPATIONS = 1024


@dataclass(frozen=True)
class PersonVariances:
    """At unit noise multiplier (sigma = sensitivity): ``fixed[t]``, the largest release
    variance up to t of a square root built for t and calibrated for the person (the Toeplitz
    rule); ``counters[name]`` = (the counter's squared sensitivity to the person over all
    rounds, its release factors: the largest variance up to t per unit sensitivity, t = 1..)."""

    rounds: tuple[int, ...]
    fixed: dict[int, float]
    counters: dict[str, tuple[float, np.ndarray]]

    def variance(self, name: str, t: int) -> float:
        """The largest release variance up to t of counter ``name``."""
        sensitivity_sq, release = self.counters[name]
        return float(sensitivity_sq * release[t - 1])

    def ratios(self, name: str) -> dict[int, float]:
        """Counter ``name``'s largest variance up to t over the square root's, per t."""
        return {t: self.variance(name, t) / self.fixed[t] for t in self.rounds}

    def worst(self, name: str) -> float:
        """The largest of :meth:`ratios`: the price of not knowing the horizon."""
        return max(self.ratios(name).values())


def choice_rounds(design_horizon: int = DESIGN_HORIZON) -> tuple[int, ...]:
    """The prefix lengths the choice compares for a BLT optimised for ``design_horizon``
    rounds: those of :data:`CHOICE_ROUNDS` up to it, and the design horizon itself where it is
    shorter than their last (a longer one is compared up to 2^20: the square root's pattern
    sums grow with the rounds compared)."""
    if design_horizon >= CHOICE_ROUNDS[-1]:
        return CHOICE_ROUNDS
    return (*(t for t in CHOICE_ROUNDS if t < design_horizon), design_horizon)


def person_variances(
    participations: int,
    min_separation: int,
    rounds: Iterable[int] = CHOICE_ROUNDS,
    design_horizon: int = DESIGN_HORIZON,
) -> PersonVariances:
    """The variances behind :func:`anytime_choice` for a person of ``participations`` rounds
    at least ``min_separation`` apart, at the prefix lengths ``rounds``, the BLT optimised for
    ``design_horizon`` rounds."""
    ts = tuple(sorted({int(t) for t in rounds}))
    if not ts or ts[0] < 1:
        raise ValueError(f"rounds must be positive prefix lengths, got {ts!r}")
    total = ts[-1]
    _, k, b = check_pattern(total, participations, min_separation)
    c = sqrt_coefficients(total)
    cum = np.cumsum(c**2)
    fixed = {t: float(toeplitz_participation_sq(c[:t], k, b)[0] * cum[t - 1]) for t in ts}
    taper = TaperedSqrt()
    blt = anytime_blt_parameters(k, b, design_horizon)
    counters = {
        FACTORISATION: (float(person_sq_bounds(taper, k, b).upper), taper.release_factors(total)),
        BLT: (float(anytime_blt_sensitivity(blt, k, b) ** 2), blt.release_factors(total)),
    }
    return PersonVariances(ts, fixed, counters)


@functools.lru_cache(maxsize=64)
def anytime_choice(
    participations: int, min_separation: int, design_horizon: int = DESIGN_HORIZON
) -> str:
    """The mechanism name of the counter without a horizon whose largest release variance, over
    a square root's built for t, is smaller at its worst over :func:`choice_rounds` (those of
    :data:`CHOICE_ROUNDS` for the default design horizon), for a person of ``participations``
    rounds ``min_separation`` apart (1, 1: one round), the BLT optimised for
    ``design_horizon`` rounds: the BLT where its worst ratio is below :data:`CHOICE_MARGIN`
    times the factorisation's, else the factorisation, which is also taken without comparing
    past :data:`CHOICE_MAX_PARTICIPATIONS` rounds; cached."""
    if participations > CHOICE_MAX_PARTICIPATIONS:
        return FACTORISATION
    v = person_variances(
        participations, min_separation, choice_rounds(design_horizon), design_horizon
    )
    return BLT if v.worst(BLT) < CHOICE_MARGIN * v.worst(FACTORISATION) else FACTORISATION
