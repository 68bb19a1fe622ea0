"""Empirical audits of private learners on neighbouring streams that differ in a LATE or MIDDLE
round of a longer stream.

The registry's audit cases (``AuditCase``) almost all change round 1 of a short stream, so a
privacy bug that shows only at later rounds or longer horizons (a budget split across the doubling
epochs of an anytime learner, the deeper levels of a tree counter, a noise schedule that depends
on t, an episode, phase or batch schedule) is never exercised by them. Each test here takes a
registered learner's audit case and replaces its horizon H and changed round c (0-indexed;
"round c + 1" in the 1-based words of the docstrings), and its statistic (the registry's
statistics read fixed rounds of the short streams), through ``dataclasses.replace``, then
runs :func:`~dponline.experiments.learner_audit.audit_learner` twice:

* at the learner's claim (its full calibrated noise): the claim must NOT be refuted. A correct
  claim is refuted with probability at most ``ALPHA`` = 1e-3 (Clopper-Pearson, the audit's
  guarantee), so each such assertion fails by chance with probability at most 1e-3; a failure
  is a potential privacy bug, not a flaky test (rerun it with another seed and more trials);
* at a fraction of that noise (a tenth unless the test says otherwise): the claim MUST be
  refuted, which shows the audit sees the changed round at all. With the fixed seeds this
  outcome is deterministic; the margins were measured over several seeds.

Before auditing, every case checks that the audit really plays what it says
(:func:`_late_case`): the audit's environment has horizon H, the learner is built for H rounds
(or without a horizon, for the anytime cases), and the two neighbouring streams have H rows and
differ in row c only.

Runtime: a few seconds per test on one core (the whole module about a minute); marked slow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from dponline.bandits.elimination import last_round_plays_arm_1
from dponline.environments.bandit_convex import make_domain
from dponline.experiments.learner_audit import (
    audit_environment,
    audit_factory,
    audit_learner,
    neighbouring_streams,
)
from dponline.privacy.audit import AuditResult
from dponline.registry import LearnerEntry, LearnerTestCase, learners

pytestmark = pytest.mark.slow

#: the audits' chance of refuting a correct claim (per "not refuted" assertion)
ALPHA = 1e-3

Statistic = Callable[[np.ndarray], np.ndarray]


# --------------------------------------------------------------------------- statistics


def plays_changed_arm(changed: int, span: int | None = None) -> Statistic:
    """The fraction of the ``span`` rounds after round ``changed`` (all of them when ``None``)
    that play the arm played in round ``changed``, outputs (n, T) of arm indices: a low loss in
    the changed round (stream A) makes the arm that saw it more likely to be played again."""

    def statistic(outputs: np.ndarray) -> np.ndarray:
        out = np.asarray(outputs)
        stop = None if span is None else changed + 1 + span
        return (out[:, changed + 1 : stop] == out[:, [changed]]).mean(axis=1)

    return statistic


def hull_product(changed: int, start: int, stop: int) -> Statistic:
    """private-bandit on the 2 x 2 grid DAG (the registry audit's set, k = 1): the hull
    coordinate h_c = zeta u_c of the point played in the changed round times the mean hull
    coordinate over rounds ``start`` .. ``stop`` - 1, whose centre line 14 computes from the
    counter release that holds round c (the registry's ``_hull_statistic``, moved to a later
    epoch)."""
    domain = make_domain("grid_paths", 2)
    centre, basis = domain.interior_point(), domain.hull_basis()[:, 0]

    def statistic(outputs: np.ndarray) -> np.ndarray:
        h = (np.asarray(outputs) - centre) @ basis
        return h[:, changed] * h[:, start:stop].mean(axis=1)

    return statistic


# --------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class LateCase:
    """A registry audit case moved to horizon ``horizon`` and changed round ``changed``.

    ``label``: the registry test case's label. ``options``: learner options merged over the
    registry audit's. ``statistic``: the audit's statistic (``None``: Fisher's discriminant
    fitted on the pilot runs). ``audit_fields``: other ``AuditCase`` fields to replace (for
    example ``rest``). ``claim_trials`` / ``fraction_trials``: runs per stream of the audit at
    the claim and at ``fraction`` of the noise (a quarter as many pilot runs each).
    """

    learner: str
    label: str
    horizon: int
    changed: int
    statistic: Statistic | None
    seed: int
    claim_trials: int
    fraction_trials: int
    fraction: float = 0.1
    options: Mapping[str, Any] = field(default_factory=dict)
    audit_fields: Mapping[str, Any] = field(default_factory=dict)


def _late_case(case: LateCase) -> tuple[LearnerEntry, LearnerTestCase]:
    """The registry entry and its test case with the audit moved to ``case``'s horizon and
    changed round, after checking that the audit plays exactly that: the environment's horizon
    is H, the learner is built for H rounds (``None`` when built with ``anytime=True``), and the
    neighbouring streams have H rows and differ in row c only."""
    entry = learners()[case.learner]
    (test_case,) = [c for c in entry.test_cases if c.label == case.label]
    assert test_case.audit is not None
    spec = dataclasses.replace(
        test_case.audit,
        horizon=case.horizon,
        changed_round=case.changed,
        statistic=case.statistic,
        learner_options={**test_case.audit.learner_options, **case.options},
        **case.audit_fields,
    )
    moved = dataclasses.replace(test_case, audit=spec)

    env = audit_environment(entry, moved)
    assert env.horizon == case.horizon
    learner = audit_factory(entry, moved, env)(1, np.random.default_rng(0))
    anytime = bool({**moved.learner_options, **spec.learner_options}.get("anytime", False))
    assert anytime <= entry.anytime
    assert learner.horizon == (None if anytime else case.horizon), learner.horizon
    a, b = neighbouring_streams(entry.feedback_kind, spec, int(env.dim), getattr(env, "arms", None))
    assert a.shape == b.shape and a.shape[0] == case.horizon
    differ = np.flatnonzero(np.any((a != b).reshape(len(a), -1), axis=1))
    assert differ.tolist() == [case.changed]
    return entry, moved


def audit_late(case: LateCase) -> tuple[AuditResult, AuditResult]:
    """The audits at the claim (full noise) and at ``case.fraction`` of the noise."""
    entry, moved = _late_case(case)
    full = audit_learner(
        entry, moved, noise_fraction=1.0, trials=case.claim_trials, alpha=ALPHA, seed=case.seed
    )
    weak = audit_learner(
        entry,
        moved,
        noise_fraction=case.fraction,
        trials=case.fraction_trials,
        alpha=ALPHA,
        seed=case.seed + 1,
    )
    return full, weak


def _check(name: str) -> None:
    case = CASES[name]
    full, weak = audit_late(case)
    where = f"{case.learner} {case.label!r}, H = {case.horizon}, changed round {case.changed}"
    assert not full.refuted, (
        f"POTENTIAL PRIVACY BUG: {where} refuted at its claim (a correct claim is refuted with "
        f"probability at most {ALPHA}): {full}"
    )
    assert weak.refuted, f"{where}: {case.fraction} of the noise not caught: {weak}"


CASES: dict[str, LateCase] = {
    # --- tree and matrix counters inside learners
    "dp-ftrl laplace k-ary tree": LateCase(
        "dp-ftrl", "laplace", horizon=64, changed=46, statistic=None, seed=101,
        claim_trials=40_000, fraction_trials=10_000,
    ),
    "dp-ftrl laplace binary tree": LateCase(
        "dp-ftrl", "laplace", horizon=64, changed=32, statistic=None, seed=111,
        claim_trials=40_000, fraction_trials=100_000, options={"mechanism": "binary_tree"},
    ),
    "dp-ftrl gaussian square root": LateCase(
        "dp-ftrl", "gaussian, cube", horizon=64, changed=46, statistic=None, seed=121,
        claim_trials=40_000, fraction_trials=10_000,
    ),
    "dp-ucb laplace": LateCase(
        "dp-ucb", "laplace", horizon=64, changed=46, statistic=plays_changed_arm(46, 3),
        seed=131, claim_trials=20_000, fraction_trials=10_000,
    ),
    "dp-ucb gaussian": LateCase(
        "dp-ucb", "gaussian", horizon=64, changed=46, statistic=plays_changed_arm(46),
        seed=141, claim_trials=20_000, fraction_trials=10_000,
    ),
    # --- anytime learners (built without a horizon)
    "dp-ftrl anytime laplace": LateCase(
        "dp-ftrl", "laplace", horizon=64, changed=39, statistic=None, seed=151,
        claim_trials=40_000, fraction_trials=10_000, options={"anytime": True},
    ),
    "dp-ftrl anytime gaussian": LateCase(
        "dp-ftrl", "gaussian, cube", horizon=64, changed=39, statistic=None, seed=161,
        claim_trials=40_000, fraction_trials=10_000, options={"anytime": True},
    ),
    "dp-ucb anytime laplace": LateCase(
        "dp-ucb", "laplace", horizon=64, changed=39, statistic=plays_changed_arm(39, 3),
        seed=171, claim_trials=20_000, fraction_trials=10_000, options={"anytime": True},
    ),
    "private-bandit anytime": LateCase(
        "private-bandit", "", horizon=31, changed=16, statistic=hull_product(16, 21, 24),
        seed=181, claim_trials=40_000, fraction_trials=10_000, options={"anytime": True},
    ),
    "dp-frank-wolfe": LateCase(
        "dp-frank-wolfe", "p=1.5, Algorithm 1", horizon=32, changed=20, statistic=None,
        seed=191, claim_trials=40_000, fraction_trials=10_000,
    ),
    "dp-frank-wolfe anytime": LateCase(
        "dp-frank-wolfe", "p=1.5, Algorithm 1", horizon=32, changed=20, statistic=None,
        seed=201, claim_trials=40_000, fraction_trials=10_000, options={"anytime": True},
    ),
    # --- episode and phase K-armed learners
    "adap-ucb": LateCase(
        "adap-ucb", "", horizon=33, changed=20, statistic=plays_changed_arm(20), seed=211,
        claim_trials=40_000, fraction_trials=10_000,
    ),
    "dp-imed": LateCase(
        "dp-imed", "", horizon=48, changed=20, statistic=plays_changed_arm(20), seed=221,
        claim_trials=40_000, fraction_trials=10_000, options={"first_phase": 2},
    ),
    "dp-klucb": LateCase(
        "dp-klucb", "", horizon=41, changed=25, statistic=plays_changed_arm(25), seed=231,
        claim_trials=40_000, fraction_trials=10_000,
    ),
    "lazy-dp-ts": LateCase(
        "lazy-dp-ts", "", horizon=32, changed=10, statistic=plays_changed_arm(10), seed=241,
        claim_trials=20_000, fraction_trials=10_000,
    ),
    # --- batched adversarial learner, successive elimination
    "batched-exp3": LateCase(
        "batched-exp3", "", horizon=24, changed=13, statistic=plays_changed_arm(13), seed=251,
        claim_trials=200_000, fraction_trials=100_000,
        options={"batch": 4, "eta": 16.0, "threshold": 1000.0}, audit_fields={"rest": 0.0},
    ),
    "dp-se": LateCase(
        "dp-se", "", horizon=891, changed=888, statistic=last_round_plays_arm_1, seed=261,
        claim_trials=10_000, fraction_trials=2_000,
    ),
}  # fmt: skip
