"""What the many-run audit catches beyond the battery's tenth of the noise: the audit cases
whose decisions put their threshold at the edge of the change (the index policies' other arms
at reward 0 or 1, the adaptive episodes' with eight arms so that the largest of seven noises
puts arm 0's threshold in its tail; DP-SE's elimination threshold at the epoch mean of one of
the two rewards; EXP3 and EXP4 with a step that makes the next arm a threshold on the noisy
value) refute half the noise, a factor-2 sensitivity bug (design.md, "Two audits"). Fixed
seeds (each case's own): the results are deterministic; the lower bounds at half the noise,
measured: AdaP-UCB 1.73, AdaP-KLUCB 1.79, DP-IMED 1.36, DP-KLUCB 1.08, DP-SE 1.14, batched
EXP3 1.93, batched EXP4 1.90, private EXP4 1.92 (the claim: 1); AdaC-UCB's rho 0.040 against
the claimed 0.028."""

from __future__ import annotations

import pytest

from dponline.experiments.learner_audit import audit_learner
from dponline.registry import learners

SHARPENED = [
    "adap-ucb",
    "adap-klucb",
    "dp-imed",
    "dp-klucb",
    "dp-se",
    "batched-exp3",
    "batched-exp4",
    "private-exp4",
]


@pytest.mark.parametrize("name", SHARPENED)
def test_sharpened_audit_cases_refute_half_the_noise(name):
    entry = learners()[name]
    half = audit_learner(entry, noise_fraction=0.5)
    assert half.refuted, (name, half.epsilon_lower)
    assert half.epsilon_lower > 1.05 * half.claimed_epsilon


def test_adac_ucb_rho_is_refuted_at_half_the_noise():
    """AdaC-UCB's Gaussian noise: the rho test sees half of it (the epsilon test, 0.62, does
    not)."""
    half = audit_learner(learners()["adac-ucb"], noise_fraction=0.5)
    assert half.rho is not None and half.rho.refuted, str(half)
    assert half.rho.rho_lower > 1.2 * half.rho.claimed_rho
