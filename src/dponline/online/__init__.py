"""Full-information online learners."""

from dponline.online.counter_learner import CounterLearner
from dponline.online.ctrl import CTRL
from dponline.online.dyadic_hedge import DyadicHedge
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
    "CounterLearner",
    "DyadicHedge",
    "EntropicRegulariser",
    "EuclideanRegulariser",
    "FTRLRegulariser",
    "LinearisedFTRL",
    "make_regulariser",
]
