"""Environments: the loss sequences learners face, and exact regret against the best fixed
decision in hindsight. Every environment implements :class:`Environment`."""

from dponline.environments.bandits import BanditEnvironment, StochasticBandit
from dponline.environments.base import Environment, HeldOutEvaluation
from dponline.environments.contextual import DigitsBandit, SyntheticGLMBandit
from dponline.environments.expert_advice import ExpertAdviceBandit, informed_expert_advice
from dponline.environments.experts import (
    ExpertsEnvironment,
    alternating_losses,
    stochastic_losses,
    switching_best_losses,
)
from dponline.environments.k_armed import (
    KArmedBandit,
    azize_basu_means,
    build_k_armed,
    two_level_means,
    unequal_gap_means,
)
from dponline.environments.linear import LinearLossEnvironment, drifting_losses
from dponline.environments.real import stock_losses
from dponline.environments.streams import LinearRegressionStream

__all__ = [
    "BanditEnvironment",
    "DigitsBandit",
    "Environment",
    "ExpertAdviceBandit",
    "ExpertsEnvironment",
    "HeldOutEvaluation",
    "KArmedBandit",
    "LinearLossEnvironment",
    "LinearRegressionStream",
    "StochasticBandit",
    "SyntheticGLMBandit",
    "alternating_losses",
    "azize_basu_means",
    "build_k_armed",
    "drifting_losses",
    "informed_expert_advice",
    "stochastic_losses",
    "stock_losses",
    "switching_best_losses",
    "two_level_means",
    "unequal_gap_means",
]
