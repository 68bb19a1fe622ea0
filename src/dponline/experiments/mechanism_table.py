"""Tables comparing continual-counting mechanisms and calibrations (``dponline mechanisms`` and
``dponline calibrate``)."""

from __future__ import annotations

import warnings
from typing import Any

from dponline.continual.calibration import calibrate_counter
from dponline.continual.registry import MECHANISMS
from dponline.privacy.accounting import zcdp_sigma
from dponline.privacy.arguments import checked_positive
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyWarning
from dponline.privacy.noise import GaussianNoise, LaplaceNoise

__all__ = ["calibration_table", "laplace_table", "mechanism_table"]


def mechanism_table(horizon: int, rho: float = 0.5) -> list[dict[str, Any]]:
    """Max and mean release variance of every mechanism at the same rho-zCDP budget.

    One round's value has l2 sensitivity 1; each mechanism's Gaussian noise is scaled to its own
    column norm (sigma = l2 factor / sqrt(2 rho)), so the rows are directly comparable.
    """
    rows = []
    for name, cls in MECHANISMS.items():
        _, l2 = cls.sensitivity_factors(horizon)
        var = cls.release_variances(horizon, GaussianNoise(zcdp_sigma(l2, rho)), 1)
        rows.append(
            {
                "mechanism": name,
                "description": cls.summary,
                "noise": sorted(cls.supported_noise),
                "l2_sensitivity_factor": l2,
                "max_variance": float(var.max()),
                "mean_variance": float(var.mean()),
            }
        )
    base = next(r for r in rows if r["mechanism"] == "binary_tree")
    for r in rows:
        r["max_variance_vs_binary_tree"] = r["max_variance"] / base["max_variance"]
    return rows


def laplace_table(horizon: int, epsilon: float = 1.0) -> list[dict[str, Any]]:
    """Max and mean release variance of every mechanism with Laplace noise at epsilon-DP.

    One round's value has l1 sensitivity 1; each mechanism's Laplace scale is its own l1 column
    norm over epsilon (b = l1 factor / epsilon: the Laplace mechanism on everything it
    releases), so the rows are directly comparable; ``max_variance_vs_honaker`` is the ratio of
    largest variances to Honaker's estimator, the best pure-DP tree before the k-ary tree.
    """
    eps = checked_positive("epsilon", epsilon)
    rows = []
    for name, cls in MECHANISMS.items():
        if "laplace" not in cls.supported_noise:
            continue
        l1, _ = cls.sensitivity_factors(horizon)
        var = cls.release_variances(horizon, LaplaceNoise(l1 / eps), 1)
        rows.append(
            {
                "mechanism": name,
                "description": cls.summary,
                "l1_sensitivity_factor": l1,
                "laplace_scale": l1 / eps,
                "max_variance": float(var.max()),
                "mean_variance": float(var.mean()),
            }
        )
    base = next(r for r in rows if r["mechanism"] == "honaker")
    for r in rows:
        r["max_variance_vs_honaker"] = r["max_variance"] / base["max_variance"]
        r["mean_variance_vs_honaker"] = r["mean_variance"] / base["mean_variance"]
    return rows


def calibration_table(
    horizon: int, dim: int, epsilon: float, delta: float, low: float = 0.0, high: float = 1.0
) -> list[dict[str, Any]]:
    """Per-draw noise and proven guarantee of every mechanism x noise x calibration (Laplace
    only when ``delta`` is 0: pure DP)."""
    bounds = Box(low, high, dim=dim)
    rows = []
    for name, cls in MECHANISMS.items():
        for noise in ("gaussian", "laplace"):
            if noise not in cls.supported_noise or (noise == "gaussian" and delta == 0):
                continue
            for calibration in ("paper", "tight"):
                if calibration == "paper" and name not in ("binary_tree", "padded_tree"):
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyWarning)
                    cal = calibrate_counter(
                        cls,
                        horizon=horizon,
                        bounds=bounds,
                        budget=PrivacyBudget(
                            epsilon,
                            delta if noise == "gaussian" else 0.0,
                            calibration,
                            allow_weaker=True,  # the table reports what each proves
                        ),
                        noise=noise,
                    )
                counter = cls(horizon, dim, cal.noise)
                rows.append(
                    {
                        "mechanism": name,
                        "noise": noise,
                        "calibration": calibration,
                        "per_draw_scale": cal.noise.scale,
                        "per_draw_std": cal.noise.coordinate_variance(dim) ** 0.5,
                        "max_release_std": counter.max_variance**0.5,
                        "proven_epsilon": cal.guarantee.epsilon,
                        "delta": cal.guarantee.delta,
                        "meets_request": cal.guarantee.meets_request,
                        "derivation": cal.guarantee.derivation,
                    }
                )
    return rows
