"""The private K-armed learners audited over several releases, not only their first.

Each learner's own audit case (the battery's) ends soon after the changed round's first
release, so a bug that puts that round's reward into a later release too (a phase that
re-releases an arm's cumulative sum) passes it: a newcomer's private successive elimination
that did so gave epsilon >= 0.541 at its claim of 1 on a case of horizon 2, the same as its
correct version, and 1.044 (refuted) on one of horizon 6 read by a discriminant over every
round's release (docs/extending.md). Here each learner's case runs four times as long (at
least 16 rounds) with the default statistic, Fisher's discriminant fitted on the pilot runs
over the whole release sequence: the claim is not refuted (each test wrong with chance at most
alpha = 1e-3, 2 alpha for AdaC-UCB's epsilon and rho tests; fixed seeds), and a tenth of the
noise is refuted, so that the case has the power to see the learner (measured 2026-11-27:
at the claim 0.0 to 0.87, at a tenth 2.1 to 7.2).
"""

from __future__ import annotations

import dataclasses

import pytest

from dponline.bandits.k_armed import PRIVATE_K_ARMED
from dponline.experiments.learner_audit import audit_learner
from dponline.registry import learners


def _long_case(name: str):  # type: ignore[no-untyped-def]
    entry = learners()[name]
    case = entry.test_cases[0]
    audit = case.audit
    assert audit is not None, f"{name} has no audit case"
    longer = dataclasses.replace(audit, horizon=max(4 * audit.horizon, 16), statistic=None)
    return entry, dataclasses.replace(case, audit=longer)


@pytest.mark.slow
@pytest.mark.parametrize("name", PRIVATE_K_ARMED)
def test_a_run_over_several_releases_keeps_the_claim_and_sees_a_tenth(name):
    entry, case = _long_case(name)
    full = audit_learner(entry, case, noise_fraction=1.0)
    assert not full.any_refuted, f"{name}: {full}"
    tenth = audit_learner(entry, case, noise_fraction=0.1)
    assert tenth.refuted, f"{name}: a tenth of the noise not seen over several releases: {tenth}"
