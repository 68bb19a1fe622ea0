"""The continual counters under a user-level unit: one person contributes to at most k rounds,
any two at least b apart (``dponline mechanisms --participations k --min-separation b``).

For every registered mechanism with Gaussian noise, two largest release variances at the same
rho-zCDP budget and inputs of l2 diameter 1:

* ``single_max_variance``: noise scaled to one round's sensitivity (sigma = l2 factor /
  sqrt(2 rho), as :func:`~dponline.experiments.mechanism_table.mechanism_table`);
* ``participation_max_variance``: noise scaled to one person's sensitivity under the pattern
  (``participation_sensitivity_factors``), on the counter built for that unit (the BLT optimises
  its parameters for it). A person's rounds include one round, so it is never below the single
  one for the same structure.

``l2_exact`` says whether the person's sensitivity is exact or an upper bound (a mechanism whose
strategy matrix admits no exact routine at this size), ``method`` how it was found.

:func:`participation_laplace_table` is the same for every mechanism with Laplace noise at
epsilon-DP and inputs of l1 diameter 1 (scale = l1 factor / epsilon), the unit ``tight`` ranks
Laplace counters for (:func:`~dponline.continual.selection.person_ranking`).
"""

from __future__ import annotations

import math
from typing import Any

from dponline.continual.participation import check_pattern
from dponline.continual.registry import MECHANISMS
from dponline.privacy.accounting import zcdp_sigma
from dponline.privacy.arguments import checked_positive
from dponline.privacy.noise import GaussianNoise, LaplaceNoise

__all__ = ["participation_laplace_table", "participation_table"]


def participation_table(
    horizon: int, participations: int, min_separation: int, rho: float = 0.5
) -> list[dict[str, Any]]:
    """One row per registered Gaussian mechanism, by increasing ``participation_max_variance``
    (module docstring)."""
    t, k, b = check_pattern(horizon, participations, min_separation)
    if not (isinstance(rho, (int, float)) and math.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be a finite positive number, got {rho!r}")
    rows = []
    for name, cls in MECHANISMS.items():
        if "gaussian" not in cls.supported_noise:
            continue
        _, single_l2 = cls.sensitivity_factors(t)
        pattern = cls.participation_sensitivity_factors(t, k, b)
        single = cls.release_variances(t, GaussianNoise(zcdp_sigma(single_l2, rho)), 1)
        person = cls.participation_release_variances(
            t, GaussianNoise(zcdp_sigma(pattern.l2, rho)), 1, k, b
        )
        rows.append(
            {
                "mechanism": name,
                "single_l2_factor": float(single_l2),
                "participation_l2_factor": pattern.l2,
                "l2_exact": pattern.l2_exact,
                "effective_participations": pattern.effective_participations,
                "single_max_variance": float(single.max()),
                "participation_max_variance": float(person.max()),
                "ratio": float(person.max() / single.max()),
                "method": pattern.method,
            }
        )
    rows.sort(key=lambda r: r["participation_max_variance"])
    return rows


def participation_laplace_table(
    horizon: int, participations: int, min_separation: int, epsilon: float = 1.0
) -> list[dict[str, Any]]:
    """One row per registered Laplace mechanism, by increasing ``participation_max_variance``:
    the largest release variance with Laplace noise of scale l1 factor / epsilon, for one round
    and for one person under the pattern (module docstring); ``l1_exact`` as ``l2_exact``."""
    t, k, b = check_pattern(horizon, participations, min_separation)
    eps = checked_positive("epsilon", epsilon)
    rows = []
    for name, cls in MECHANISMS.items():
        if "laplace" not in cls.supported_noise:
            continue
        single_l1, _ = cls.sensitivity_factors(t)
        pattern = cls.participation_sensitivity_factors(t, k, b)
        single = cls.release_variances(t, LaplaceNoise(single_l1 / eps), 1)
        person = cls.participation_release_variances(t, LaplaceNoise(pattern.l1 / eps), 1, k, b)
        rows.append(
            {
                "mechanism": name,
                "single_l1_factor": float(single_l1),
                "participation_l1_factor": pattern.l1,
                "l1_exact": pattern.l1_exact,
                "effective_participations": pattern.effective_participations,
                "single_max_variance": float(single.max()),
                "participation_max_variance": float(person.max()),
                "ratio": float(person.max() / single.max()),
                "method": pattern.method,
            }
        )
    rows.sort(key=lambda r: r["participation_max_variance"])
    return rows
