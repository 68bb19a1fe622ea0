"""Learner-level privacy audit of DP-FTRL: the whole sequence of decisions on two loss
sequences that differ in round 1. Each non-refutation fails by chance with probability at most
alpha = 1e-3; the seeds are fixed."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.online import DPFTRL
from dponline.privacy.audit import audit
from dponline.privacy.budget import PrivacyBudget
from tests.helpers import first_coordinate_decisions, with_noise_fraction

T, N = 8, 2
A = np.zeros((T, N))
B = A.copy()
B[0] = [1.0, 0.0]


def _learner(noise, n, rng):
    delta = 0.0 if noise == "laplace" else 1e-5
    # a large step so that one round visibly moves the decisions (the guarantee holds for any eta)
    return DPFTRL(N, T, budget=PrivacyBudget(1.0, delta), noise=noise, eta=1.0, replicas=n, rng=rng)


def _sampler(noise, fraction):
    def sample(losses, n, rng):
        lr = with_noise_fraction(_learner(noise, n, rng), fraction, rng)
        return first_coordinate_decisions(lr, losses)

    return sample


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_dp_ftrl_not_refuted_and_a_tenth_of_its_noise_refuted(noise):
    claim = _learner(noise, 1, 0).privacy
    kw = dict(claim=claim, trials=50_000, pilot_trials=10_000, rng=3)
    ok = audit(_sampler(noise, 1.0), A, B, **kw)
    assert not ok.any_refuted, str(ok)
    bad = audit(_sampler(noise, 0.1), A, B, **kw)
    assert bad.refuted, str(bad)
