"""``dponline audit``: audit every continual-counting mechanism at its claim, correctly
calibrated and with a tenth of its noise (which the audit must catch)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dponline.continual import make_counter
from dponline.continual.registry import MECHANISMS
from dponline.privacy.audit import audit, counter_sampler
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget

__all__ = ["audit_table"]


def audit_table(
    *, horizon: int = 16, trials: int = 20_000, seed: int = 1, alpha: float = 1e-3
) -> list[dict[str, Any]]:
    """One row per mechanism x noise x noise fraction in {1, 0.1}; epsilon = 1."""
    a = np.zeros((horizon, 1))
    b = a.copy()
    b[0, 0] = 1.0  # round 1 moves across the whole input set [0, 1]
    rows = []
    for name, cls in MECHANISMS.items():
        for noise in ("gaussian", "laplace", "generalized_gaussian"):
            if noise not in cls.supported_noise:
                continue
            delta = 0.0 if noise == "laplace" else 1e-5
            ref = make_counter(
                name,
                horizon=horizon,
                bounds=Box(0, 1, dim=1),
                budget=PrivacyBudget(1.0, delta),
                noise=noise,
                regular_norm=2.0 if noise == "generalized_gaussian" else None,
            )
            for fraction in (1.0, 0.1):
                scaled = ref.noise.scaled(fraction)

                def factory(replicas, rng, cls=cls, scaled=scaled):  # type: ignore[no-untyped-def]
                    return cls(horizon, 1, scaled, replicas=replicas, rng=rng)

                res = audit(
                    counter_sampler(factory),
                    a,
                    b,
                    claim=ref.privacy,
                    trials=trials,
                    pilot_trials=max(10, trials // 4),
                    alpha=alpha,
                    rng=seed,
                )
                rows.append(
                    {
                        "mechanism": name,
                        "noise": noise,
                        "noise_fraction": fraction,
                        "claimed_epsilon": res.claimed_epsilon,
                        "delta": res.delta,
                        "epsilon_lower": res.epsilon_lower,
                        "alpha": res.alpha,
                        "refuted": res.refuted,
                        "verdict": "REFUTED" if res.refuted else "not refuted",
                        "counts": list(res.counts),
                    }
                )
    return rows
