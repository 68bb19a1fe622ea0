"""What every full-information learner that plays from a continual counter's release shares:
it feeds each loss vector to the counter and keeps the latest noisy prefix sum (Agarwal & Singh
2017, Algorithms 1 and 3, line 7), keeps the rounds (:class:`~dponline.protocol.RoundDiscipline`:
rounds past its horizon and feedback before it acted are refused), and scales its counter's
noise on request (the audit's handle). Built without a horizon (``horizon=None``), its counter is
the anytime one of :func:`~dponline.continual.factory.build_counter` and no round is refused
for being late."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.privacy.arguments import ArgumentError, checked_real_array, saved_field
from dponline.protocol import (
    Feedback,
    LossVectorFeedback,
    NoiseHandle,
    RoundDiscipline,
    checked_config,
)
from dponline.threads import blas_limit

__all__ = ["CounterLearner", "described"]


def described(obj: Any) -> str:
    """``repr(obj)`` when it describes the object (the library's domains and regularisers:
    ``LpBall(dim=2, p=2.0, radius=1.0)``), its numbers written one way, else its class name: a
    repr holding an address (``<... at 0x...>``) differs between processes, and a saved state
    must load in another. A domain whose repr gives only its size (a vertex hull, a polytope, a
    path polytope, a graphic matroid's) is told apart by that size alone."""
    text = repr(obj)
    if " at 0x" in text:
        return type(obj).__qualname__
    # one spelling of a number outside quotes: radius=1, radius=1.0 and radius=np.float64(1.0)
    # are one ball (an integer past 2^53 and other numpy types are left as they are)
    parts = re.split(r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", text)
    return "".join(part if i % 2 else _numbers_one_way(part) for i, part in enumerate(parts))


def _numbers_one_way(text: str) -> str:
    out = []
    for i, part in enumerate(re.split(r"(np\.\w+\([^()]*\))", text)):
        if i % 2 and not part.startswith("np.float64("):
            out.append(part)  # another numpy type: its own spelling
            continue
        if i % 2:
            part = part[len("np.float64(") : -1]
        out.append(
            re.sub(r"(?<![\w.])-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?(?![\w.])", _one_number, part)
        )
    return "".join(out)


def _one_number(match: re.Match[str]) -> str:
    token = match.group(0)
    if re.fullmatch(r"-?\d+", token) and abs(int(token)) > 2**53:
        return token  # a float would merge it with its neighbours
    return repr(float(token))


class CounterLearner(NoiseHandle, RoundDiscipline, ABC):
    """Mixin: ``observe`` feeds the counter; ``state_dict`` saves it with the last release.

    Subclasses set ``self.dim``, ``self.replicas``, ``self.counter``, ``self._cumulative`` (the
    release for t = 0 to start) and the horizon (``self._start_rounds(horizon)``, with
    ``anytime=True`` for a learner that also runs with ``horizon=None``), and implement
    ``_decide`` from ``self._cumulative``.
    """

    counter: ContinualCounter  # or an anytime counter (no horizon), with the same interface
    dim: int
    replicas: int
    _cumulative: np.ndarray

    @abstractmethod
    def _decide(self, cumulative: np.ndarray) -> np.ndarray:
        """The decision for each row of ``cumulative`` (noisy prefix sums, shape (k, dim))."""

    def _decide_block(self, before: np.ndarray) -> np.ndarray:
        """The decisions of rounds t+1 .. t+b from the releases before each, shape
        (b, replicas, dim), flattened to (b * replicas, dim): :meth:`_decide` of every row
        (a learner whose rule depends on the round, such as an anytime step size, overrides
        it)."""
        return self._decide(before.reshape(before.shape[0] * self.replicas, -1))

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
        with blas_limit():  # a block's products: bounded BLAS threads (dponline.threads)
            releases = self.counter.step_block(losses)  # checks shape, bounds and the horizon
            b = releases.shape[0]
            if b == 0:
                return releases
            before = np.empty_like(releases)
            before[0] = self._cumulative
            before[1:] = releases[:-1]
            decisions = self._decide_block(before)
        self._cumulative = releases[-1].copy()
        self._end_rounds(b)
        return decisions.reshape(b, self.replicas, -1)

    def observe(self, feedback: Feedback) -> None:
        """Feed l_t to the counter: L~_t = TreeBasedAgg(l_t, ...)."""
        if not isinstance(feedback, LossVectorFeedback):
            raise TypeError(
                f"{type(self).__name__} observes LossVectorFeedback, got {type(feedback).__name__}"
            )
        self._check_round()
        shapes = (self.dim,), (self.replicas, self.dim)
        self._cumulative = self.counter.step(checked_real_array("loss", feedback.loss, *shapes))
        self._end_round()

    def _scale_noise(self, factor: float) -> None:
        self.counter.scale_noise(factor)

    def scale_noise(self, factor: float) -> None:
        """Multiply the calibrated noise by ``factor`` (> 0) before the first round; the
        counter then states the learner's (possibly voided) guarantee."""
        super().scale_noise(factor)
        self.counter.privacy = self.privacy
        self._cumulative = self.counter.initial_release()  # L~_0 was drawn at construction

    def _decision_config(self) -> dict[str, Any]:
        """What the decisions depend on besides the counter's releases (the counter's state
        checks its own configuration): the learner's class and its domain; a subclass adds its
        rule's parameters. A state saved under another is refused, since it would continue a
        different run (and not bit for bit)."""
        domain = getattr(self, "domain", None)
        return {
            "learner": type(self).__name__,
            "domain": None if domain is None else described(domain),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "decisions": self._decision_config(),
            "t": self.t,
            "acted": self._acted,
            "noise_multiplier": self.noise_multiplier,
            "cumulative": self._cumulative.copy(),
            "counter": self.counter.state_dict(),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the round counter, the last release and the counter's whole state, then
        return the function that installs them (:meth:`RoundDiscipline.load_state_dict`)."""
        if isinstance(state, dict) and "decisions" not in state and "counter" in state:
            raise ArgumentError(
                f"state was saved from a {type(self).__name__} by an earlier version of "
                "dponline (it records no decision rule): a state is read back by the version "
                "that wrote it"
            )
        checked_config(
            saved_field(state, "decisions"),
            self._decision_config(),
            type(self).__name__,
            "decision rule (domain, regulariser or step size)",
        )
        t, acted = self._checked_rounds(state)
        multiplier = self._saved_multiplier(state)
        cumulative = np.array(
            checked_real_array(
                "saved cumulative", saved_field(state, "cumulative"), (self.replicas, self.dim)
            )
        )
        install_counter = self.counter.prepare_load(saved_field(state, "counter"))

        def install() -> None:
            install_counter()
            self._cumulative = cumulative
            self.noise_multiplier = multiplier
            self._set_rounds(t, acted)

        return install
