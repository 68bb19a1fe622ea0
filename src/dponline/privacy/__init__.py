"""Privacy: noise distributions, guarantees, input bounds, calibrations, accounting, audits."""

from dponline.privacy.bounds import Box, InputBounds, NormBall
from dponline.privacy.budget import (
    CALIBRATIONS,
    PersonNotCovered,
    PrivacyBudget,
    WeakerGuaranteeError,
)
from dponline.privacy.calibration import Calibration, Calibrator, calibrate
from dponline.privacy.guarantee import (
    Neighbouring,
    PrivacyGuarantee,
    PrivacyNotion,
    PrivacyWarning,
)
from dponline.privacy.noise import GaussianNoise, LaplaceNoise, NoiseDistribution
from dponline.privacy.person_cap import ParticipationCap

__all__ = [
    "CALIBRATIONS",
    "Box",
    "Calibration",
    "Calibrator",
    "GaussianNoise",
    "InputBounds",
    "LaplaceNoise",
    "Neighbouring",
    "NoiseDistribution",
    "NormBall",
    "ParticipationCap",
    "PersonNotCovered",
    "PrivacyBudget",
    "PrivacyGuarantee",
    "PrivacyNotion",
    "PrivacyWarning",
    "WeakerGuaranteeError",
    "calibrate",
]
