"""Bandit learners."""

from dponline.bandits.exp2 import DPEXP2, exp2_parameters

__all__ = ["DPEXP2", "exp2_parameters"]
