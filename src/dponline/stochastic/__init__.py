"""Streaming stochastic convex optimisation."""

from dponline.stochastic.baseline_fit import BaselineFit, BatchPlan
from dponline.stochastic.batch_learner import BatchLearner
from dponline.stochastic.frank_wolfe import StreamingFrankWolfe, recursive_gradient
from dponline.stochastic.local_md import LocalMDPlan, local_md
from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe
from dponline.stochastic.noisy_sfw import NoisySFWPlan, noisy_sfw
from dponline.stochastic.noisy_sgd import NoisySGDPlan, noisy_sgd
from dponline.stochastic.private_frank_wolfe import PrivateStreamingFrankWolfe

__all__ = [
    "BaselineFit",
    "BatchLearner",
    "BatchPlan",
    "LocalMDPlan",
    "NoisyMinFrankWolfe",
    "NoisySFWPlan",
    "NoisySGDPlan",
    "PrivateStreamingFrankWolfe",
    "StreamingFrankWolfe",
    "local_md",
    "noisy_sfw",
    "noisy_sgd",
    "recursive_gradient",
]
