"""Bandit learners: Algorithm 4 of Agarwal & Singh (2017) around EXP2 and SCRiBLe, Ene, Nguyen &
Vladu's PrivateBandit, Han et al.'s GLM bandit, and uniform play (the contextual reference)."""

from dponline.bandits.exp2 import DPEXP2, EXP2, exp2_parameters
from dponline.bandits.glm_bandit import DPGLMBandit
from dponline.bandits.private_bandit import PrivateBandit
from dponline.bandits.private_reduction import PrivateBanditReduction
from dponline.bandits.scrible import DPSCRiBLe, SCRiBLe
from dponline.bandits.uniform_play import UniformPlay

__all__ = [
    "DPEXP2",
    "EXP2",
    "DPGLMBandit",
    "DPSCRiBLe",
    "PrivateBandit",
    "PrivateBanditReduction",
    "SCRiBLe",
    "UniformPlay",
    "exp2_parameters",
]
