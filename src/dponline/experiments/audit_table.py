"""``dponline audit``: audit every continual-counting mechanism and every registered private
learner at its claim, correctly calibrated and with a tenth of its noise (which the audit must
catch; less than a tenth for a learner whose audit case documents a looser proof)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dponline.continual import make_counter
from dponline.continual.registry import MECHANISMS
from dponline.experiments.learner_audit import audit_learner, audited_cases, options_text
from dponline.experiments.progress import Progress
from dponline.privacy.arguments import checked_probability
from dponline.privacy.audit import AuditResult, audit, counter_sampler
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget

__all__ = ["audit_table", "learner_audit_table"]


def _rho_columns(res: AuditResult, suffix: str = "") -> dict[str, Any]:
    """The rho test's columns of a row (``None`` where the claim states no rho): the claimed
    rho, the audit's lower bound, the verdict, the event and its counts."""
    r = res.rho
    cols: dict[str, Any] = {
        "rho_lower": None if r is None else r.rho_lower,
        "rho_refuted": None if r is None else r.refuted,
        "rho_verdict": "" if r is None else ("REFUTED" if r.refuted else "not refuted"),
        "rho_event": None if r is None else r.event,
        "rho_counts": None if r is None else list(r.counts),
    }
    out = {f"{k}{suffix}": v for k, v in cols.items()}
    if not suffix:
        out["claimed_rho"] = None if r is None else r.claimed_rho
    return out


def audit_table(
    *,
    horizon: int = 16,
    trials: int = 20_000,
    seed: int = 1,
    alpha: float = 1e-3,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per mechanism x noise x noise fraction in {1, 0.5, 0.1}; epsilon = 1
    (``progress``: count the mechanisms on stderr,
    :class:`~dponline.experiments.progress.Progress`). A Gaussian counter's row also tests its
    rho (``claimed_rho``, ``rho_lower``, ``rho_refuted``: the second test of
    :func:`~dponline.privacy.audit.audit`), the one that sees half the noise."""
    a = np.zeros((horizon, 1))
    b = a.copy()
    b[0, 0] = 1.0  # round 1 moves across the whole input set [0, 1]
    rows = []
    cases = [
        (name, cls, noise)
        for name, cls in MECHANISMS.items()
        for noise in ("gaussian", "laplace", "generalized_gaussian")
        if noise in cls.supported_noise
    ]
    with Progress(len(cases), unit="mechanisms", enabled=progress) as bar:
        for name, cls, noise in cases:
            delta = 0.0 if noise == "laplace" else 1e-5
            ref = make_counter(
                name,
                horizon=horizon,
                bounds=Box(0, 1, dim=1),
                budget=PrivacyBudget(1.0, delta),
                noise=noise,
                regular_norm=2.0 if noise == "generalized_gaussian" else None,
            )
            for fraction in (1.0, 0.5, 0.1):
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
                        **_rho_columns(res),
                    }
                )
            bar.update()
    return rows


def learner_audit_table(
    *,
    names: Sequence[str] | None = None,
    trials: int | None = None,
    seed: int | None = None,
    alpha: float = 1e-3,
    calibration: str = "tight",
    noise_fraction: float | None = None,
    options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per private learner's test case (:mod:`dponline.registry`; ``names``: only these
    learners, ``options``: built with these learner options,
    :func:`~dponline.experiments.learner_audit.configured_case`): the claimed epsilon
    (epsilon = 1 requested, in ``calibration``) beside the audit's lower bound with the full
    calibrated noise and with ``noise_fraction`` of it (default the case's
    ``refute_fraction``, a tenth unless the entry says why less;
    :func:`~dponline.experiments.learner_audit.audit_learner`). ``trials`` per input and
    ``seed`` default to each case's own. Each row says what was tested: the audit case's
    horizon, the round whose input differs and its two values, the event counted (chosen on the
    pilot runs) and its counts on the fresh runs (``counts``: k_A, n_A, k_B, n_B). A learner
    whose guarantee states rho-zCDP also gets the rho test's columns (``claimed_rho``,
    ``rho_lower``, ``rho_refuted`` and their ``_under_noised`` twins; ``None`` for the
    others)."""
    if noise_fraction is not None:
        noise_fraction = checked_probability("noise_fraction", noise_fraction)
    rows = []
    cases = audited_cases(names, options)
    with Progress(len(cases), unit="learners", enabled=progress) as bar:
        for name, entry, case in cases:
            kw: dict[str, Any] = dict(
                calibration=calibration, trials=trials, alpha=alpha, seed=seed
            )
            full = audit_learner(entry, case, noise_fraction=1.0, **kw)
            assert case.audit is not None  # the registry requires one of a private learner
            fraction = case.audit.refute_fraction if noise_fraction is None else noise_fraction
            under = audit_learner(entry, case, noise_fraction=fraction, **kw)
            rows.append(
                {
                    "learner": name,
                    "case": case.label,
                    "options": options_text(options),
                    "calibration": calibration,
                    "claimed_epsilon": full.claimed_epsilon,
                    "delta": full.delta,
                    "epsilon_lower": full.epsilon_lower,
                    "refuted": full.refuted,
                    "verdict": "REFUTED" if full.refuted else "not refuted",
                    "under_noise_fraction": fraction,
                    "epsilon_lower_under_noised": under.epsilon_lower,
                    "refuted_under_noised": under.refuted,
                    "verdict_under_noised": "REFUTED" if under.refuted else "not refuted",
                    "trials": full.counts[1],
                    "alpha": alpha,
                    "horizon": case.audit.horizon,
                    "changed_round": case.audit.changed_round,
                    "values": list(case.audit.values),
                    "event": full.event,
                    "counts": list(full.counts),
                    "event_under_noised": under.event,
                    "counts_under_noised": list(under.counts),
                    **_rho_columns(full),
                    **_rho_columns(under, "_under_noised"),
                }
            )
            bar.update()
    return rows
