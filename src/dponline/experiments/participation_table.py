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
from collections.abc import Callable
from typing import Any

from dponline.continual.participation import check_pattern
from dponline.continual.registry import MECHANISMS
from dponline.privacy.accounting import zcdp_sigma
from dponline.privacy.arguments import checked_positive
from dponline.privacy.noise import GaussianNoise, LaplaceNoise, NoiseDistribution

__all__ = ["participation_laplace_table", "participation_table"]


def participation_table(
    horizon: int, participations: int, min_separation: int, rho: float = 0.5
) -> list[dict[str, Any]]:
    """One row per registered Gaussian mechanism, by increasing ``participation_max_variance``
    (module docstring)."""
    if not (isinstance(rho, (int, float)) and math.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be a finite positive number, got {rho!r}")
    return _rows(
        horizon, participations, min_separation, "l2", lambda f: GaussianNoise(zcdp_sigma(f, rho))
    )


def participation_laplace_table(
    horizon: int, participations: int, min_separation: int, epsilon: float = 1.0
) -> list[dict[str, Any]]:
    """One row per registered Laplace mechanism, by increasing ``participation_max_variance``:
    the largest release variance with Laplace noise of scale l1 factor / epsilon, for one round
    and for one person under the pattern (module docstring); ``l1_exact`` as ``l2_exact``."""
    eps = checked_positive("epsilon", epsilon)
    return _rows(horizon, participations, min_separation, "l1", lambda f: LaplaceNoise(f / eps))


def _rows(
    horizon: int,
    participations: int,
    min_separation: int,
    norm: str,
    noise_for: Callable[[float], NoiseDistribution],
) -> list[dict[str, Any]]:
    """The rows of the mechanisms offering the noise of ``norm`` ("l2": Gaussian, "l1":
    Laplace), each scaled by ``noise_for`` to its factor for one round and for the person."""
    t, k, b = check_pattern(horizon, participations, min_separation)
    family = "gaussian" if norm == "l2" else "laplace"
    rows = []
    for name, cls in MECHANISMS.items():
        if family not in cls.supported_noise:
            continue
        single_factor = cls.sensitivity_factors(t)[1 if norm == "l2" else 0]
        pattern = cls.participation_sensitivity_factors(t, k, b)
        factor, exact = (
            (pattern.l2, pattern.l2_exact) if norm == "l2" else (pattern.l1, pattern.l1_exact)
        )
        single = cls.release_variances(t, noise_for(single_factor), 1)
        person = cls.participation_release_variances(t, noise_for(factor), 1, k, b)
        rows.append(
            {
                "mechanism": name,
                f"single_{norm}_factor": float(single_factor),
                f"participation_{norm}_factor": factor,
                f"{norm}_exact": exact,
                "effective_participations": pattern.effective_participations,
                "single_max_variance": float(single.max()),
                "participation_max_variance": float(person.max()),
                "ratio": float(person.max() / single.max()),
                "method": pattern.method,
            }
        )
    rows.sort(key=lambda r: r["participation_max_variance"])
    return rows
