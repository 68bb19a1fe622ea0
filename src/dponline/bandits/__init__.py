"""Bandit learners."""

from dponline.bandits.exp2 import DPEXP2, exp2_parameters
from dponline.bandits.glm_bandit import DPGLMBandit

__all__ = ["DPEXP2", "DPGLMBandit", "exp2_parameters"]
