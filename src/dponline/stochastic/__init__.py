"""Streaming stochastic convex optimisation."""

from dponline.stochastic.frank_wolfe import StreamingFrankWolfe, recursive_gradient
from dponline.stochastic.private_frank_wolfe import PrivateStreamingFrankWolfe

__all__ = ["PrivateStreamingFrankWolfe", "StreamingFrankWolfe", "recursive_gradient"]
