"""Streaming stochastic convex optimisation."""

from dponline.stochastic.frank_wolfe import StreamingFrankWolfe, recursive_gradient
from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe
from dponline.stochastic.private_frank_wolfe import PrivateStreamingFrankWolfe

__all__ = [
    "NoisyMinFrankWolfe",
    "PrivateStreamingFrankWolfe",
    "StreamingFrankWolfe",
    "recursive_gradient",
]
