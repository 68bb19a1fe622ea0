"""Full-information online learners."""

from dponline.online.ctrl import CTRL
from dponline.online.ftpl import DPFTPL
from dponline.online.ftrl import (
    DPFTRL,
    EntropicRegulariser,
    EuclideanRegulariser,
    FTRLRegulariser,
    make_regulariser,
)

__all__ = [
    "CTRL",
    "DPFTPL",
    "DPFTRL",
    "EntropicRegulariser",
    "EuclideanRegulariser",
    "FTRLRegulariser",
    "make_regulariser",
]
