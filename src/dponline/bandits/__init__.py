"""Bandit learners: Algorithm 4 of Agarwal & Singh (2017) around EXP2 and SCRiBLe, Ene, Nguyen &
Vladu's PrivateBandit, Han et al.'s GLM bandit and uniform play (the contextual reference); the
stochastic K-armed suite (the base :class:`KArmedLearner`, UCB1, KL-UCB, IMED, AdaP-UCB,
AdaP-KLUCB, AdaC-UCB, DP-KLUCB, DP-IMED, DP-UCB, successive elimination, DP-SE, Thompson
sampling, Lazy-DP-TS) with the Bernoulli KL divergences and the regret lower bounds they are
measured against; the batched private conversion of Asi, Raman & Talwar (2025) around EXP3,
HTINF, EXP2 and EXP4; and the river-style interface (:class:`RiverPolicy`, and
:class:`DelayedPolicy` for rewards that arrive later)."""

from dponline.bandits.adaptive_episodes import AdaCUCB, AdaPKLUCB, AdaPUCB, EpisodeCalibrator
from dponline.bandits.batched import BatchedEXP2, BatchedEXP3, BatchedHTINF, BatchedPrivateBandit
from dponline.bandits.delayed import DelayedPolicy
from dponline.bandits.dp_phases import DPIMED, DPKLUCB, GeometricPhases, RewardSumCalibrator
from dponline.bandits.dp_ucb import DPUCB
from dponline.bandits.elimination import (
    DPSE,
    RoundRobinEpochs,
    SuccessiveElimination,
    dp_se_constants,
)
from dponline.bandits.exp2 import DPEXP2, EXP2, exp2_parameters
from dponline.bandits.exp3 import EXP3
from dponline.bandits.exp4 import EXP4, BatchedEXP4, PrivateEXP4
from dponline.bandits.glm_bandit import DPGLMBandit
from dponline.bandits.htinf import HTINF
from dponline.bandits.index_policies import IMED, KLUCB, UCB1
from dponline.bandits.k_armed import KArmedLearner, replica_generators
from dponline.bandits.kl import bernoulli_kl, d_eps, d_eps_upper, kl_lower, kl_upper
from dponline.bandits.lower_bounds import (
    azize_2025_coefficient,
    azize_basu_2022_coefficient,
    lai_robbins_coefficient,
    lower_bound_coefficients,
    minimax_lower_bound,
    regret_lower_bound_curve,
)
from dponline.bandits.private_bandit import PrivateBandit
from dponline.bandits.private_reduction import PrivateBanditReduction
from dponline.bandits.river_style import ArmSpace, RiverPolicy
from dponline.bandits.scrible import DPSCRiBLe, SCRiBLe
from dponline.bandits.thompson import LazyDPTS, ThompsonSampling
from dponline.bandits.uniform_play import UniformPlay

__all__ = [
    "DPEXP2",
    "DPIMED",
    "DPKLUCB",
    "DPSE",
    "DPUCB",
    "EXP2",
    "EXP3",
    "EXP4",
    "HTINF",
    "IMED",
    "KLUCB",
    "UCB1",
    "AdaCUCB",
    "AdaPKLUCB",
    "AdaPUCB",
    "ArmSpace",
    "BatchedEXP2",
    "BatchedEXP3",
    "BatchedEXP4",
    "BatchedHTINF",
    "BatchedPrivateBandit",
    "DPGLMBandit",
    "DPSCRiBLe",
    "DelayedPolicy",
    "EpisodeCalibrator",
    "GeometricPhases",
    "KArmedLearner",
    "LazyDPTS",
    "PrivateBandit",
    "PrivateBanditReduction",
    "PrivateEXP4",
    "RewardSumCalibrator",
    "RiverPolicy",
    "RoundRobinEpochs",
    "SCRiBLe",
    "SuccessiveElimination",
    "ThompsonSampling",
    "UniformPlay",
    "azize_2025_coefficient",
    "azize_basu_2022_coefficient",
    "bernoulli_kl",
    "d_eps",
    "d_eps_upper",
    "dp_se_constants",
    "exp2_parameters",
    "kl_lower",
    "kl_upper",
    "lai_robbins_coefficient",
    "lower_bound_coefficients",
    "minimax_lower_bound",
    "regret_lower_bound_curve",
    "replica_generators",
]
