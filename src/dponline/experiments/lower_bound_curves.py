"""The regret lower bounds a report draws beside a stochastic Bernoulli bandit's runs, and
uniform random play's exact regret there (the level of a learner that has learned nothing).

For each environment of a spec whose arms are Bernoulli (``k_armed`` with its default family,
``open_bandit_arms``): Lai & Robbins' bound C log t for every learner, and at each epsilon of
the spec the private one (the largest coefficient of
:func:`~dponline.bandits.lower_bounds.lower_bound_coefficients`; Azize et al. 2025's in
practice). Both are asymptotic bounds for consistent policies
(:mod:`dponline.bandits.lower_bounds` says what they do not say at a finite T), drawn from the
last t where they lie above uniform random play's regret t (max mean - mean) on: above it a
bound says nothing at that t (rare clicks: C log t far above what playing at random loses, no
curve at all). Arms of another family get none: the bounds use the Bernoulli divergence, which
for other laws on [0, 1] with the same means is not below theirs, so the curve would not be a
lower bound there. An epsilon-DP bound holds for a person's
guarantee too (it implies one round's at the same epsilon).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["lower_bound_references", "uniform_play_regret"]

#: points of each curve (geometric in t)
POINTS = 200


def _bandits(spec: Any) -> dict[str, Any]:
    """Environment label (as the results name it) -> the stochastic K-armed bandit it runs, for
    the tasks of ``spec`` on ``k_armed`` or ``open_bandit_arms``."""
    from dponline.environments.catalogue import build_environment
    from dponline.environments.k_armed import KArmedBandit

    out: dict[str, Any] = {}
    for task in spec.tasks():
        label = task.environment_label or task.environment
        if task.environment not in ("k_armed", "open_bandit_arms") or label in out:
            continue
        # no horizon given: the environment's own (real data: all of it), as the runner's
        bandit = build_environment(
            task.environment, task.horizon, np.random.default_rng(0), **task.environment_options
        )
        if isinstance(bandit, KArmedBandit):
            out[label] = bandit
    return out


def lower_bound_references(spec: Any) -> dict[str, list[dict[str, Any]]]:
    """Environment label -> the curves
    (:func:`~dponline.experiments.report.plot_regret_curves`' ``references``) for the Bernoulli
    bandits of ``spec`` (a parsed :class:`~dponline.experiments.spec.ExperimentSpec`); an
    environment of another kind or family has no entry."""
    from dponline.bandits.lower_bounds import lai_robbins_coefficient, regret_lower_bound_curve

    out: dict[str, list[dict[str, Any]]] = {}
    for label, bandit in _bandits(spec).items():
        if bandit.family != "bernoulli":
            continue
        horizon, means = int(bandit.horizon), bandit.means
        t = np.unique(np.geomspace(1, horizon, POINTS).astype(int))
        uniform = t * (means.max() - means.mean())
        bounds = [("Lai-Robbins bound", None, lai_robbins_coefficient(means) * np.log(t))]
        for eps in spec.epsilons:
            private = np.asarray(regret_lower_bound_curve(means, eps, t))
            bounds.append(("private bound (its epsilon)", eps, private))
        curves = []
        for name, eps, regret in bounds:
            # an asymptotic bound above uniform play's regret at t says nothing at that t:
            # drawn from the last such t on
            above = np.nonzero(regret > uniform)[0]
            start = int(above[-1]) + 1 if above.size else 0
            if t.size - start >= 2:
                curves.append(
                    {
                        "label": name,
                        "epsilon": eps,
                        "t": t[start:].tolist(),
                        "regret": regret[start:].tolist(),
                    }
                )
        if curves:
            out[label] = curves
    return out


def uniform_play_regret(spec: Any) -> dict[str, float]:
    """Environment label -> uniform random play's exact expected (pseudo-)regret at the
    horizon, T (max mean - mean of the means), for the stochastic K-armed bandits of ``spec``
    (any family): the level a learner that has learned nothing stays at, for the report's
    notes."""
    return {
        label: float(bandit.horizon * (bandit.means.max() - bandit.means.mean()))
        for label, bandit in _bandits(spec).items()
    }
