"""Full-information online learners."""

from dponline.online.ftpl import DPFTPL, linear_oracle
from dponline.online.ftrl import DPFTRL, EntropicSimplex, EuclideanBall, EuclideanCube

__all__ = ["DPFTPL", "DPFTRL", "EntropicSimplex", "EuclideanBall", "EuclideanCube", "linear_oracle"]
