"""What every full-information learner that plays from a continual counter's release shares:
it feeds each loss vector to the counter and keeps the latest noisy prefix sum (Agarwal & Singh
2017, Algorithms 1 and 3, line 7), refuses rounds past its horizon and feedback before it acted,
and scales its counter's noise on request (the audit's handle)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from dponline.continual.base import ContinualCounter, HorizonExceededError
from dponline.protocol import Feedback, LossVectorFeedback, NoiseHandle, checked_round

__all__ = ["CounterLearner"]


class CounterLearner(NoiseHandle, ABC):
    """Mixin: ``observe`` feeds the counter; ``state_dict`` saves it with the last release.

    Subclasses set ``self.counter``, ``self._cumulative`` (the release for t = 0 to start),
    ``self.horizon`` and ``self.t = 0``, and implement ``_decide`` from ``self._cumulative``.
    """

    counter: ContinualCounter
    horizon: int
    _cumulative: np.ndarray
    _acted: bool = False

    @abstractmethod
    def _decide(self, cumulative: np.ndarray) -> np.ndarray:
        """The decision for each row of ``cumulative`` (noisy prefix sums, shape (k, dim))."""

    def act(self) -> np.ndarray:
        """This round's decision, shape (replicas, dim): post-processing of the releases so
        far (the decision after round T is allowed; round T+1's loss is not)."""
        self._acted = True
        return self._decide(self._cumulative)

    def play_block(self, losses: np.ndarray) -> np.ndarray:
        """The decisions of the next b rounds of an oblivious stream, shape
        (b, replicas, dim), and their losses fed to the counter
        (:class:`~dponline.protocol.BlockPlayer`): the counter releases the b noisy prefix
        sums at once (:meth:`~dponline.continual.base.ContinualCounter.step_block`) and round
        t's decision is computed from release t - 1, as :meth:`act` would."""
        if self._acted:
            raise ValueError(
                f"play_block() starts at a round boundary: {type(self).__name__} has acted in "
                f"round {self.t + 1} without observing its loss"
            )
        releases = self.counter.step_block(losses)  # checks shape, bounds and the horizon
        b = releases.shape[0]
        if b == 0:
            return releases
        before = np.empty_like(releases)
        before[0] = self._cumulative
        before[1:] = releases[:-1]
        decisions = self._decide(before.reshape(b * self.replicas, -1))
        self._cumulative = releases[-1].copy()
        self.t += b
        return decisions.reshape(b, self.replicas, -1)

    def observe(self, feedback: Feedback) -> None:
        """Feed l_t to the counter: L~_t = TreeBasedAgg(l_t, ...)."""
        if not isinstance(feedback, LossVectorFeedback):
            raise TypeError(
                f"{type(self).__name__} observes LossVectorFeedback, got {type(feedback).__name__}"
            )
        if self.t >= self.horizon:
            raise HorizonExceededError(
                f"{type(self).__name__} was built for {self.horizon} rounds; the loss of round "
                f"{self.t + 1} would void its guarantee"
            )
        if not self._acted:
            raise ValueError(
                f"observe() must follow act(): {type(self).__name__} has not acted in round "
                f"{self.t + 1}"
            )
        self._cumulative = self.counter.step(feedback.loss)
        self._acted = False
        self.t += 1

    def _scale_noise(self, factor: float) -> None:
        self.counter.scale_noise(factor)

    def scale_noise(self, factor: float) -> None:
        """Multiply the calibrated noise by ``factor`` (> 0) before the first round; the
        counter then states the learner's (possibly voided) guarantee."""
        super().scale_noise(factor)
        self.counter.privacy = self.privacy
        self._cumulative = self.counter.initial_release()  # L~_0 was drawn at construction

    def state_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "acted": self._acted,
            "noise_multiplier": self.noise_multiplier,
            "cumulative": self._cumulative.copy(),
            "counter": self.counter.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.counter.load_state_dict(state["counter"])
        self._cumulative = np.array(state["cumulative"], dtype=float)
        self._acted = bool(state["acted"])
        self.noise_multiplier = float(state["noise_multiplier"])
        self.t = checked_round(state["t"], self.horizon)
