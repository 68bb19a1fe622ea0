"""Full-information online learners."""

from dponline.online.ftrl import DPFTRL, EntropicSimplex, EuclideanBall, EuclideanCube

__all__ = ["DPFTRL", "EntropicSimplex", "EuclideanBall", "EuclideanCube"]
