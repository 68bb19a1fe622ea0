"""What every full-information learner that plays from a continual counter's release shares:
it feeds each loss vector to the counter and keeps the latest noisy prefix sum (Agarwal & Singh
2017, Algorithms 1 and 3, line 7)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.protocol import Feedback, LossVectorFeedback

__all__ = ["CounterLearner"]


class CounterLearner:
    """Mixin: ``observe`` feeds the counter; ``state_dict`` saves it with the last release.

    Subclasses set ``self.counter``, ``self._cumulative`` (the release for t = 0 to start) and
    ``self.t = 0``, and implement ``act`` from ``self._cumulative``.
    """

    counter: ContinualCounter
    _cumulative: np.ndarray
    t: int

    def observe(self, feedback: Feedback) -> None:
        """Feed l_t to the counter: L~_t = TreeBasedAgg(l_t, ...)."""
        if not isinstance(feedback, LossVectorFeedback):
            raise TypeError(
                f"{type(self).__name__} observes LossVectorFeedback, got {type(feedback).__name__}"
            )
        self._cumulative = self.counter.step(feedback.loss)
        self.t += 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "cumulative": self._cumulative.copy(),
            "counter": self.counter.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.counter.load_state_dict(state["counter"])
        self._cumulative = np.array(state["cumulative"], dtype=float)
        self.t = int(state["t"])
