"""The regret lower bounds a report draws beside a stochastic Bernoulli bandit's runs.

For each environment of a spec whose arms are Bernoulli (``k_armed`` with its default family,
``open_bandit_arms``): Lai & Robbins' bound C log t for every learner, and at each epsilon of
the spec the private one (the largest coefficient of
:func:`~dponline.bandits.lower_bounds.lower_bound_coefficients`; Azize et al. 2025's in
practice). Both are asymptotic bounds for consistent policies (:mod:`dponline.bandits.lower_bounds`
says what they do not say at a finite T). Arms of another family get none: the bounds use the
Bernoulli divergence, which for other laws on [0, 1] with the same means is not below theirs,
so the curve would not be a lower bound there. An epsilon-DP bound holds for a person's
guarantee too (it implies one round's at the same epsilon).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["lower_bound_references"]

#: points of each curve (geometric in t)
POINTS = 200


def lower_bound_references(spec: Any) -> dict[str, list[dict[str, Any]]]:
    """Environment label -> the curves
    (:func:`~dponline.experiments.report.plot_regret_curves`' ``references``) for the Bernoulli
    bandits of ``spec`` (a parsed :class:`~dponline.experiments.spec.ExperimentSpec`); an
    environment of another kind has no entry."""
    from dponline.bandits.lower_bounds import lai_robbins_coefficient, regret_lower_bound_curve
    from dponline.environments.catalogue import build_environment
    from dponline.environments.k_armed import KArmedBandit

    out: dict[str, list[dict[str, Any]]] = {}
    for env in spec.environments:
        if env["name"] not in ("k_armed", "open_bandit_arms"):
            continue
        options = env.get("options", {})
        # no horizon given: the environment's own (real data: all of it), as the runner's
        horizon = env.get("horizon", spec.horizon)
        bandit = build_environment(env["name"], horizon, np.random.default_rng(0), **options)
        if not isinstance(bandit, KArmedBandit) or bandit.family != "bernoulli":
            continue
        horizon, means = int(bandit.horizon), bandit.means
        t = np.unique(np.geomspace(1, horizon, POINTS).astype(int))
        curves = [
            {
                "label": "Lai-Robbins bound",
                "epsilon": None,
                "t": t.tolist(),
                "regret": (lai_robbins_coefficient(means) * np.log(t)).tolist(),
            }
        ]
        for eps in spec.epsilons:
            curves.append(
                {
                    "label": "private bound (its epsilon)",
                    "epsilon": eps,
                    "t": t.tolist(),
                    "regret": np.asarray(regret_lower_bound_curve(means, eps, t)).tolist(),
                }
            )
        out[env.get("label") or env["name"]] = curves
    return out
