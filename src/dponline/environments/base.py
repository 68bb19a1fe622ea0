"""The environment protocol (DESIGN.md, "Seams"): what the runner, the audit and the reports
may ask of any environment, so that none of them probes for optional methods."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from dponline.protocol import Feedback

__all__ = ["Environment", "HeldOutEvaluation", "at_rounds"]


def at_rounds(per_round: np.ndarray, rounds: np.ndarray | None) -> np.ndarray:
    """``per_round`` (..., T) at the 1-based ``rounds`` (all of it for None)."""
    if rounds is None:
        return per_round
    return np.asarray(per_round)[..., np.asarray(rounds, dtype=np.int64) - 1]


@runtime_checkable
class Environment(Protocol):
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

    horizon: int
    reveals_context: bool

    def round(self, t: int, action: np.ndarray) -> tuple[Feedback, np.ndarray]: ...

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
