"""The environment protocol (docs/design.md, "Decision sets, losses, environments"): what the
runner, the audit and the reports may ask of any environment, so that none of them probes for
optional methods or concrete classes: :class:`Rounds` (what the round loop plays),
:class:`Environment` (every environment), :class:`HeldOutEvaluation` (held-out sets) and
:class:`ObliviousLinearLosses` (losses fixed in advance, played by blocks of rounds)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from dponline.protocol import Feedback

__all__ = ["Environment", "HeldOutEvaluation", "ObliviousLinearLosses", "Rounds", "at_rounds"]


def at_rounds(per_round: np.ndarray, rounds: np.ndarray | None) -> np.ndarray:
    """``per_round`` (..., T) at the 1-based ``rounds`` (all of it for None)."""
    if rounds is None:
        return per_round
    return np.asarray(per_round)[..., np.asarray(rounds, dtype=np.int64) - 1]


@runtime_checkable
class Rounds(Protocol):
    """What the round loop (:func:`dponline.experiments.rounds.play`) asks of what it plays:
    ``horizon``, ``reveals_context`` (with ``context(t)`` when true) and ``round(t, action)``
    (the feedback and each replica's loss), as :class:`Environment` states them. Every
    environment has them; so do the privacy audit's fixed input streams
    (:mod:`dponline.environments.fixed_streams`), which have no decision set to measure regret
    against."""

    horizon: int
    reveals_context: bool

    def round(self, t: int, action: np.ndarray) -> tuple[Feedback, np.ndarray]: ...


@runtime_checkable
class Environment(Rounds, Protocol):
    """A sequence of rounds t = 0..horizon-1 against a learner's replicas.

    * ``horizon``: the number of rounds;
    * ``reveals_context``: True for contextual bandits, which also expose ``context(t)``, the
      round's context, handed to the learner before it acts (004 Section 4);
    * ``round(t, action)``: the feedback for the learner and each replica's loss, shape
      ``(replicas,)``;
    * ``regret(cumulative_loss, rounds=None)``: regret curves from cumulative losses
      ``(..., horizon)``, exactly, against the best fixed decision in hindsight; with
      ``rounds`` (1-based, increasing) the cumulative losses are those after these rounds only,
      shape ``(..., len(rounds))``, and so is the answer (environments whose comparator is
      costly compute it at those rounds alone: the runner asks for the rounds it records);
    * ``state_dict()`` / ``load_state_dict(state)``: everything needed to resume, RNG state
      included (an empty dict for oblivious losses, fixed in advance).
    """

    def regret(
        self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None
    ) -> np.ndarray: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@runtime_checkable
class HeldOutEvaluation(Protocol):
    """An environment with held-out sets, on which any iterate can be scored after the stream
    (streaming stochastic optimisation, Han et al. 2024 App. C):

    * ``test_loss(action)``: each replica's loss on the test set, shape ``(replicas,)``; the
      runner scores the learner's final output with it (the table's ``final_loss``);
    * ``validation_loss(action)``: the same on a separate validation set, the only one a
      hyperparameter search (a spec's ``tune``) may look at.
    """

    def test_loss(self, action: np.ndarray) -> np.ndarray: ...

    def validation_loss(self, action: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ObliviousLinearLosses(Protocol):
    """An environment whose losses are linear, <l_t, x>, with vectors l_t fixed before the
    first round (an oblivious adversary: they cannot react to the decisions). The round loop
    (:func:`dponline.experiments.rounds.play`) then plays a learner that can decide a block of
    rounds at once (:class:`~dponline.protocol.BlockPlayer`) a block at a time:

    * ``dim``: the length of a loss vector;
    * ``loss_vectors(start, stop)``: the loss vectors of rounds start..stop-1 (0-indexed),
      shape (stop - start, dim): the full-information feedback of those rounds;
    * ``block_losses(start, actions)``: each replica's loss in rounds start..start+b-1 for
      ``actions`` of shape (b, replicas, dim), shape (b, replicas).

    A block must be worth its rounds played one at a time: ``round(t, x)`` shows
    ``loss_vectors(t, t + 1)[0]`` and charges each replica ``block_losses(t, x[None])[0]``.
    """

    dim: int

    def loss_vectors(self, start: int, stop: int) -> np.ndarray: ...

    def block_losses(self, start: int, actions: np.ndarray) -> np.ndarray: ...
