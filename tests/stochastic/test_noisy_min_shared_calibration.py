"""Algorithm 3's arms are copies of one Algorithm 2 estimator: the guarantee is proven once and
handed to the other arms, which accept only a calibration of their own constants and budget.
Deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.environments.catalogue import build_environment
from dponline.privacy.budget import PrivacyBudget
from dponline.registry import build_learner
from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe


def test_an_estimator_takes_only_its_own_calibration():
    budget = PrivacyBudget(1.0, 1e-3)
    first = NoisyMinFrankWolfe(3, 50, budget=budget, rng=0)
    copy = NoisyMinFrankWolfe(3, 50, budget=budget, rng=1, calibration=first.calibration)
    assert copy.privacy == first.privacy and copy.calibration is first.calibration
    assert [copy.noise_scale(t) for t in (1, 50)] == [first.noise_scale(t) for t in (1, 50)]
    for other in (
        dict(dim=3, horizon=60, budget=budget),  # another horizon: other sensitivities
        dict(dim=3, horizon=50, budget=budget, x_bound=2.0),  # other constants
        dict(dim=3, horizon=50, budget=PrivacyBudget(0.5, 1e-3)),  # another request
        dict(dim=3, horizon=50, budget=PrivacyBudget(1.0, 1e-3, "paper")),  # another family
    ):
        with pytest.raises(ValueError, match="calibration is not this estimator's"):
            NoisyMinFrankWolfe(**other, calibration=first.calibration)
    assert NoisyMinFrankWolfe(3, 50, budget=None).calibration is None


def test_the_bandits_arms_share_one_proof():
    env = build_environment("glm_bandit", 60, np.random.default_rng(0), dim=3, link="linear")
    bandit = build_learner("dp-glm-bandit", env, epsilon=1.0, replicas=2, rng=0)
    first = bandit.estimators[0]
    assert len(bandit.estimators) == env.arms >= 2
    for arm in bandit.estimators[1:]:
        assert arm.calibration is first.calibration
        assert arm.privacy == first.privacy
    assert first.privacy.derivation in bandit.privacy.derivation
