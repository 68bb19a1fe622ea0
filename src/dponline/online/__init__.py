"""Full-information online learners."""

from dponline.online.ftpl import DPFTPL, linear_oracle
from dponline.online.ftrl import (
    DPFTRL,
    EntropicSimplex,
    EuclideanBall,
    EuclideanCube,
    PolytopeDomain,
)

__all__ = [
    "DPFTPL",
    "DPFTRL",
    "EntropicSimplex",
    "EuclideanBall",
    "EuclideanCube",
    "PolytopeDomain",
    "linear_oracle",
]
