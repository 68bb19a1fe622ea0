"""Streaming stochastic convex optimisation."""

from dponline.stochastic.frank_wolfe import StreamingFrankWolfe, recursive_gradient

__all__ = ["StreamingFrankWolfe", "recursive_gradient"]
