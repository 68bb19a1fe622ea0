"""Privacy: noise distributions, guarantees, input bounds, calibrations, accounting, audits."""

from dponline.privacy.bounds import Box, InputBounds, NormBall
from dponline.privacy.calibration import Calibration, calibrate_counter
from dponline.privacy.guarantee import (
    Neighbouring,
    PrivacyGuarantee,
    PrivacyNotion,
    PrivacyWarning,
)
from dponline.privacy.noise import GaussianNoise, LaplaceNoise, NoiseDistribution

__all__ = [
    "Box",
    "Calibration",
    "GaussianNoise",
    "InputBounds",
    "LaplaceNoise",
    "Neighbouring",
    "NoiseDistribution",
    "NormBall",
    "PrivacyGuarantee",
    "PrivacyNotion",
    "PrivacyWarning",
    "calibrate_counter",
]
