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
from dponline.online.linearised_ftrl import LinearisedFTRL

__all__ = [
    "CTRL",
    "DPFTPL",
    "DPFTRL",
    "EntropicRegulariser",
    "EuclideanRegulariser",
    "FTRLRegulariser",
    "LinearisedFTRL",
    "make_regulariser",
]
