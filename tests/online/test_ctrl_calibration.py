"""CTRL's calibrations through the calibration seam (:class:`CTRLCalibrator`): ``paper`` is
Theorem 8's (Theorem 11's) parameters claiming Theorem 6's proof, ``tight`` the least-noise
parameters claiming the Renyi-DP analysis, and the factory runs exactly what the calibrator
answers. Deterministic: every number is recomputed from the formulas it must equal."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from dponline.environments.smooth_convex import smooth_convex
from dponline.online.ctrl_calibration import CTRLCalibrator
from dponline.online.ctrl_parameters import (
    calibrate_paper,
    calibrate_tight,
    proven_privacy,
    theorem6_epsilon,
)
from dponline.privacy.budget import PrivacyBudget, WeakerGuaranteeError
from dponline.privacy.calibration import Calibrator, calibrate
from dponline.privacy.guarantee import PrivacyWarning
from dponline.registry import build_learner

PROBLEM = {"horizon": 2000, "dim": 10, "lipschitz": 1.0, "smoothness": 0.25, "diameter": 10.0}


@pytest.mark.parametrize("glm", [False, True])
def test_paper_is_theorem_8_claiming_what_theorem_6s_proof_gives(glm):
    calibrator = CTRLCalibrator(**PROBLEM, glm=glm)
    assert isinstance(calibrator, Calibrator)
    budget = PrivacyBudget(1.0, 1e-6, "paper")
    cal = calibrate(calibrator, budget)
    params = calibrate_paper(1.0, 1e-6, **PROBLEM, glm=glm)
    proof = proven_privacy(params, 0.5e-6)  # Lemma 17's delta'' = delta / 2
    assert cal.noise == params
    assert (cal.calibration, cal.mechanism) == ("paper", "CTRL (Algorithm 1)")
    g = cal.guarantee
    assert (g.epsilon, g.delta) == (proof.epsilon, proof.delta)
    assert g.epsilon <= 1.0 and g.delta <= 1e-6  # Theorem 8's constants are generous here
    assert (g.requested_epsilon, g.requested_delta) == (1.0, 1e-6)
    eps6, delta6 = theorem6_epsilon(params, 1e-6)
    assert f"Theorem {11 if glm else 8}'s eta and sigma" in g.derivation
    assert f"would give epsilon {eps6:.4g}, delta {delta6:.3g}" in g.derivation
    assert proof.derivation in g.derivation


@pytest.mark.parametrize("glm", [False, True])
def test_tight_is_the_least_noise_the_renyi_analysis_proves(glm):
    cal = calibrate(CTRLCalibrator(**PROBLEM, glm=glm), PrivacyBudget(1.0, 1e-6))
    params, proof = calibrate_tight(1.0, 1e-6, **PROBLEM, glm=glm)
    assert cal.noise == params and cal.calibration == "tight"
    assert (cal.guarantee.epsilon, cal.guarantee.delta) == (proof.epsilon, proof.delta)
    assert 0.99 < cal.guarantee.epsilon <= 1.0  # the budget, used up
    assert proof.derivation in cal.guarantee.derivation
    paper = calibrate_paper(1.0, 1e-6, **PROBLEM, glm=glm)
    assert params.sigma < paper.sigma


def test_the_calibrator_refuses_pure_dp_and_reports_a_weaker_paper_proof():
    calibrator = CTRLCalibrator(**PROBLEM)
    for calibration in ("paper", "tight"):
        with pytest.raises(ValueError, match="delta > 0"):
            calibrate(calibrator, PrivacyBudget(1.0, 0.0, calibration))
    with pytest.raises(ValueError, match="smoothness must be a finite positive number"):
        CTRLCalibrator(**{**PROBLEM, "smoothness": 0.0})
    # T = 60: Theorem 8's parameters prove less than asked (p = T^(-1/3), B = 3 p~ T < T)
    short = CTRLCalibrator(**{**PROBLEM, "horizon": 60, "dim": 2})
    budget = PrivacyBudget(1.0, 1e-6, "paper")
    with pytest.raises(WeakerGuaranteeError, match="proves only"):
        calibrate(short, budget)
    with pytest.warns(PrivacyWarning, match="proves only"):
        cal = calibrate(short, dataclasses.replace(budget, allow_weaker=True))
    proof = proven_privacy(calibrate_paper(1.0, 1e-6, **short._problem()), 0.5e-6)
    assert (cal.guarantee.epsilon, cal.guarantee.delta) == (proof.epsilon, proof.delta)
    assert cal.guarantee.delta > 1e-6


@pytest.mark.parametrize("name, losses", [("ctrl", "huber"), ("ctrl-glm", "logistic")])
@pytest.mark.parametrize("calibration", ["paper", "tight"])
def test_the_factory_runs_what_the_calibrator_answers(name, losses, calibration):
    env = smooth_convex(24, np.random.default_rng(0), dim=2, losses=losses)
    budget = PrivacyBudget(1.0, 1e-6, calibration, allow_weaker=True)
    calibrator = CTRLCalibrator(
        env.horizon,
        env.dim,
        env.lipschitz,
        env.smoothness,
        env.domain.diameter,
        glm=name == "ctrl-glm",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        cal = calibrate(calibrator, budget)
        learner = build_learner(
            name, env, epsilon=1.0, calibration=calibration, allow_weaker=True, rng=0
        )
    params = cal.noise
    assert (learner.eta, learner.sigma, learner.p) == (params.eta, params.sigma, params.p)
    assert learner.switch_budget == params.switch_budget
    assert np.all(learner.log_phi == params.log_phi)
    assert learner.privacy == cal.guarantee
