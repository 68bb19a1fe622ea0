"""The price of not knowing the horizon: anytime counters against the square root built for it.

For each anytime mechanism and each t, ``ratio_to_fixed_horizon_sqrt[t]`` is

    max_{s <= t} Var(release s)  /  max variance of a square-root factorisation built for t,

at the same rho-zCDP (each mechanism's Gaussian noise scaled to its own l2 sensitivity,
sigma^2 = sens^2 / (2 rho); the square root's largest variance at horizon t is
(sum_{k<t} c_k^2)^2 / (2 rho)). Every variance is exact, from coefficient sums (no simulation):

* ``tapered_sqrt`` and ``jacobsen_fawaz(gamma, delta)``: Delta^2 sum_{k<s} l_k^2
  (:mod:`dponline.continual.anytime_factorization`);
* ``anytime_blt``: one BLT without a horizon, Delta^2 sum_{m<s} beta_m^2 with Delta the norm
  of all its coefficients (:mod:`dponline.continual.anytime_blt`);
* ``doubling(mech, ratio)``: blocks of lengths round(ratio^j) (j = 0, 1, ...), each a
  fixed-horizon mechanism at the full budget (Chan, Shi & Song 2011); Var(release s) = the
  finished blocks' final variances + the current block's variance at its own step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from dponline.continual.anytime_blt import (
    DESIGN_HORIZON,
    anytime_blt_parameters,
    anytime_blt_sensitivity,
)
from dponline.continual.anytime_choice import BLT, FACTORISATION, PersonVariances, person_variances
from dponline.continual.anytime_factorization import (
    AnytimeStrategy,
    JacobsenFawaz,
    TaperedSqrt,
    strategy_sensitivity,
)
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.continual.smooth_binary import smooth_binary_depth, smooth_binary_node_counts

__all__ = ["anytime_person_table", "anytime_table", "block_lengths", "doubling_variances"]

GOLDEN_SQUARE = (3.0 + math.sqrt(5.0)) / 2.0


def block_lengths(ratio: float, total: int) -> list[int]:
    """round(ratio^j) for j = 0, 1, ... (at least 1 each) until they cover ``total`` rounds."""
    lengths, j = [], 0
    while sum(lengths) < total:
        lengths.append(max(1, round(ratio**j)))
        j += 1
    return lengths


def doubling_variances(
    block_variances: Callable[[int], np.ndarray], ratio: float, total: int
) -> np.ndarray:
    """Var(release s) for s = 1..total of doubling blocks (module docstring);
    ``block_variances(n)`` gives a block of length n's variances at positions 1..n."""
    out = np.empty(total)
    pos, carried = 0, 0.0
    for n in block_lengths(ratio, total):
        v = block_variances(n)
        take = min(n, total - pos)
        out[pos : pos + take] = carried + v[:take]
        carried += float(v[-1])
        pos += take
    return out


def _sqrt_block(cum: np.ndarray) -> Callable[[int], np.ndarray]:
    # a square root over n rounds at rho = 1/2: sigma^2 = sum_{k<n} c_k^2, Var_i = sigma^2 S_i
    return lambda n: cum[n - 1] * cum[:n]


def _smooth_binary_block(n: int) -> np.ndarray:
    k = int(smooth_binary_node_counts(n).max())
    return np.full(n, k * (smooth_binary_depth(n) // 2), dtype=float)


def _factorisation_variances(strategy: AnytimeStrategy, total: int) -> np.ndarray:
    return strategy_sensitivity(strategy) ** 2 * strategy.release_factors(total)


def anytime_table(
    exponents: Iterable[int] = range(10, 21, 2),
    rho: float = 0.5,
    *,
    jacobsen_fawaz: Iterable[tuple[float, float]] = ((-0.51, 0.0),),
) -> list[dict[str, Any]]:
    """One row per anytime mechanism: ``mechanism``, ``sensitivity`` (its l2 factor),
    ``ratio_to_fixed_horizon_sqrt`` {t: ratio} for t = 2^e, and ``worst_ratio`` (module
    docstring). ``jacobsen_fawaz`` lists the (gamma, delta) of the paper's family to include."""
    ts = [2 ** int(e) for e in exponents]
    if not ts:
        return []
    total = max(ts)
    cum = np.cumsum(sqrt_coefficients(total) ** 2)
    scale = 1.0 / (2.0 * float(rho))  # variances below are at rho = 1/2
    fixed = {t: cum[t - 1] ** 2 for t in ts}

    candidates: list[tuple[str, float, Callable[[], np.ndarray]]] = []
    tapered = TaperedSqrt()
    candidates.append(
        (
            f"tapered_sqrt ({tapered!r}, ours)",
            strategy_sensitivity(tapered),
            lambda: _factorisation_variances(tapered, total),
        )
    )
    for gamma, delta in jacobsen_fawaz:
        jf = JacobsenFawaz(gamma, delta)
        candidates.append(
            (
                f"jacobsen_fawaz (gamma={gamma}, delta={delta})",
                strategy_sensitivity(jf),
                lambda jf=jf: _factorisation_variances(jf, total),
            )
        )
    for ratio, label in ((2.0, "2"), (GOLDEN_SQUARE, "phi^2")):
        candidates.append(
            (
                f"doubling(sqrt_factorization, ratio {label})",
                math.nan,
                lambda ratio=ratio: doubling_variances(_sqrt_block(cum), ratio, total),
            )
        )
    blt = anytime_blt_parameters()
    candidates.append(
        (
            f"anytime_blt ({blt.buffers} buffers for {DESIGN_HORIZON:,} rounds, O(d) memory, ours)",
            anytime_blt_sensitivity(blt),
            lambda: anytime_blt_sensitivity(blt) ** 2 * blt.release_factors(total),
        )
    )
    candidates.append(
        (
            "doubling(smooth_binary, ratio 2)",
            math.nan,
            lambda: doubling_variances(_smooth_binary_block, 2.0, total),
        )
    )
    rows = []
    for name, sens, variances in candidates:
        running_max = np.maximum.accumulate(variances())
        ratios = {t: float(running_max[t - 1] / fixed[t]) for t in ts}
        rows.append(
            {
                "mechanism": name,
                "sensitivity": sens,
                "max_variance": {t: float(running_max[t - 1]) * scale for t in ts},
                "fixed_horizon_sqrt_variance": {t: float(fixed[t]) * scale for t in ts},
                "ratio_to_fixed_horizon_sqrt": ratios,
                "worst_ratio": max(ratios.values()),
            }
        )
    return rows


def anytime_person_table(
    participations: int,
    min_separation: int,
    exponents: Iterable[int] = range(10, 21, 2),
    rho: float = 0.5,
) -> list[dict[str, Any]]:
    """The price of not knowing the horizon for one person (at most k rounds, any two at least
    b apart), at the same rho-zCDP for that person: for t = 2^e, the largest variance of the
    releases up to t over that of a square root built for horizon t and calibrated for the
    person (its exact sensitivity under the pattern, the Toeplitz rule). Three rows:

    * the tapered factorisation calibrated for the person (its bound at every prefix length,
      ours: :func:`~dponline.continual.anytime_factorization.person_sq_bounds`);
    * the same counter by group privacy: rho-zCDP for one round is k^2 rho-zCDP for k rounds
      (Bun & Steinke 2016, Proposition 1.9), so it runs at rho / k^2 with one round's
      sensitivity, variance k^2 Delta^2 per unit;
    * the BLT without a horizon calibrated for the person (its parameters optimised for the
      pattern over 2^20 rounds, the sum of the person's columns over all rounds:
      :mod:`dponline.continual.anytime_blt`).

    Every variance is exact up to the bound's gap (``upper``, which the noise uses)."""
    ts = [2 ** int(e) for e in exponents]
    if not ts:
        return []
    v = person_variances(participations, min_separation, ts)
    k = int(participations)
    scale = 1.0 / (2.0 * float(rho))
    factors = v.counters[FACTORISATION][1]
    group = PersonVariances(
        v.rounds, v.fixed, {"group": (k * k * strategy_sensitivity(TaperedSqrt()) ** 2, factors)}
    )
    rows = []
    for name, source, key in (
        ("tapered_sqrt, for the person (ours)", v, FACTORISATION),
        (f"tapered_sqrt, group privacy (rho / {k}^2)", group, "group"),
        ("anytime_blt, for the person (ours, O(d) memory)", v, BLT),
    ):
        ratios = source.ratios(key)
        rows.append(
            {
                "mechanism": name,
                "sensitivity_sq": source.counters[key][0],
                "max_variance": {t: source.variance(key, t) * scale for t in v.rounds},
                "fixed_horizon_sqrt_variance": {t: v.fixed[t] * scale for t in v.rounds},
                "ratio_to_fixed_horizon_sqrt": ratios,
                "worst_ratio": max(ratios.values()),
            }
        )
    return rows
