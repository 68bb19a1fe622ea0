"""PrivacyBudget: validated once, and the one place where a proof meets the request."""

from __future__ import annotations

import math
import warnings

import pytest

from dponline.privacy import Neighbouring, PrivacyBudget, PrivacyWarning, WeakerGuaranteeError
from dponline.privacy.calibration import Calibration, calibrate


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epsilon": 0.0}, ValueError, "epsilon must be a finite positive number, got 0.0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be a finite positive number"),
        ({"epsilon": math.inf}, ValueError, "epsilon must be a finite positive number, got inf"),
        ({"epsilon": math.nan}, ValueError, "epsilon must be a finite positive number"),
        ({"epsilon": True}, TypeError, "epsilon must be a real number, got True"),
        ({"epsilon": "1"}, TypeError, "epsilon must be a real number"),
        ({"epsilon": 1.0, "delta": 1.0}, ValueError, r"delta must lie in \[0, 1\), got 1.0"),
        ({"epsilon": 1.0, "delta": -1e-9}, ValueError, "delta must lie in"),
        ({"epsilon": 1.0, "calibration": "loose"}, ValueError, "calibration must be one of"),
        ({"epsilon": 1.0, "neighbouring": "one round"}, TypeError, "neighbouring"),
    ],
)
def test_invalid_budgets_are_refused_with_the_value(kwargs, error, match):
    with pytest.raises(error, match=match):
        PrivacyBudget(**kwargs)


def test_budget_is_a_frozen_value():
    b = PrivacyBudget(1, 1e-6)
    assert b.epsilon == 1.0 and isinstance(b.epsilon, float)
    assert b == PrivacyBudget(1.0, 1e-6) and hash(b) == hash(PrivacyBudget(1.0, 1e-6))
    with pytest.raises(AttributeError):
        b.epsilon = 2.0  # type: ignore[misc]
    assert not b.is_pure and PrivacyBudget(1.0).is_pure
    with pytest.raises(ValueError, match="delta must lie in \\(0, 1\\), got 0"):
        PrivacyBudget(1.0).require_delta("Gaussian noise")


def test_prove_returns_a_proof_at_least_as_strong_and_records_the_request():
    b = PrivacyBudget(1.0, 1e-6, neighbouring=Neighbouring.ONE_SAMPLE)
    g = b.prove(0.7, 1e-7, "by hand", rho=0.01)
    assert (g.epsilon, g.delta, g.rho) == (0.7, 1e-7, 0.01)
    assert (g.requested_epsilon, g.requested_delta) == (1.0, 1e-6)
    assert g.neighbouring is Neighbouring.ONE_SAMPLE and g.derivation == "by hand"


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_a_weaker_proof_raises_naming_both(calibration):
    b = PrivacyBudget(1.0, 0.0, calibration)
    with pytest.raises(WeakerGuaranteeError, match=r"proves only epsilon=2, .*requested \(1, 0\)"):
        b.prove(2.0, 0.0, "formula X")
    # the opt-in is for reproducing papers: a tight calibration proving less is a bug, always
    lenient = PrivacyBudget(1.0, 0.0, calibration, allow_weaker=True)
    if calibration == "tight":
        with pytest.raises(WeakerGuaranteeError):
            lenient.prove(2.0, 0.0, "formula X")
        return
    with pytest.warns(PrivacyWarning, match="proves only epsilon=2"):
        g = lenient.prove(2.0, 0.0, "formula X")
    assert g.epsilon == 2.0 and g.requested_epsilon == 1.0 and not g.meets_request


def test_calibrate_dispatches_on_the_budget():
    class Both:
        def paper(self, budget):
            return Calibration("p", budget.prove(budget.epsilon, 0.0, "p"), "paper", "m")

        def tight(self, budget):
            return Calibration("t", budget.prove(budget.epsilon, 0.0, "t"), "tight", "m")

    assert calibrate(Both(), PrivacyBudget(1.0)).noise == "t"
    assert calibrate(Both(), PrivacyBudget(1.0, 0.0, "paper")).noise == "p"
    with pytest.raises(TypeError, match="budget must be a PrivacyBudget"):
        calibrate(Both(), 1.0)  # type: ignore[arg-type]


def test_no_warning_when_the_proof_meets_the_request():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PrivacyBudget(1.0, 0.0, "paper").prove(1.0, 0.0, "exact")
