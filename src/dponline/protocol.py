"""The learner protocol: one interface for every setting (DESIGN.md, "The learner protocol").

Every learner holds ``replicas`` independent copies along a leading axis and offers

* ``act() -> np.ndarray``: this round's decision for every replica, shape ``(replicas, ...)``;
* ``observe(feedback)``: the round's feedback (one of the classes below); in contextual bandits
  also the round's context, before ``act``;
* ``privacy``: the :class:`~dponline.privacy.guarantee.PrivacyGuarantee` it gives (``None`` for
  a non-private learner);
* ``state_dict()`` / ``load_state_dict(state)``: everything needed to resume, RNG state included.

The runner, the audit and the reports only use this interface, so a new learner needs no code
anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dponline.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "BanditFeedback",
    "ContextFeedback",
    "Feedback",
    "FeedbackKind",
    "Learner",
    "LossFunctionFeedback",
    "LossVectorFeedback",
    "RewardFeedback",
    "SampleFeedback",
]


class FeedbackKind(StrEnum):
    """What a learner observes after acting."""

    LOSS_VECTOR = "full information: the round's loss vector"
    LOSS_FUNCTION = "full information: the round's loss function"
    BANDIT = "bandit: the loss of the action played"
    SAMPLE = "a sample (streaming optimisation)"
    CONTEXTUAL_BANDIT = "contextual bandit: a context before acting, then the reward of the action"


@dataclass(frozen=True)
class LossVectorFeedback:
    """Full information: the loss vector l_t, shape (d,) shared by replicas, or (replicas, d)."""

    loss: np.ndarray
    kind: FeedbackKind = FeedbackKind.LOSS_VECTOR


@dataclass(frozen=True)
class LossFunctionFeedback:
    """Full information: the loss function f_t with its gradient oracle."""

    value: Any  # callable x -> loss, vectorised over replicas
    gradient: Any  # callable x -> gradient
    kind: FeedbackKind = FeedbackKind.LOSS_FUNCTION


@dataclass(frozen=True)
class BanditFeedback:
    """Bandit: the loss of the action each replica played, shape (replicas,)."""

    loss: np.ndarray
    kind: FeedbackKind = FeedbackKind.BANDIT


@dataclass(frozen=True)
class SampleFeedback:
    """A data sample (x, y); arrays with a leading replicas axis or shared."""

    x: np.ndarray
    y: np.ndarray | None = None
    kind: FeedbackKind = FeedbackKind.SAMPLE


@dataclass(frozen=True)
class ContextFeedback:
    """Contextual bandits, before acting: the round's context, shape (d,) shared by replicas or
    (replicas, d). Environments that reveal a context expose ``context(t)`` and the runner hands
    it to the learner through ``observe`` before calling ``act``."""

    context: np.ndarray
    kind: FeedbackKind = FeedbackKind.CONTEXTUAL_BANDIT


@dataclass(frozen=True)
class RewardFeedback:
    """Contextual bandits, after acting: the reward of the arm each replica played, (replicas,)."""

    reward: np.ndarray
    kind: FeedbackKind = FeedbackKind.CONTEXTUAL_BANDIT


Feedback = (
    LossVectorFeedback
    | LossFunctionFeedback
    | BanditFeedback
    | SampleFeedback
    | ContextFeedback
    | RewardFeedback
)


@runtime_checkable
class Learner(Protocol):
    """What every learner implements (see the module docstring)."""

    privacy: PrivacyGuarantee | None
    replicas: int
    feedback_kind: FeedbackKind

    def act(self) -> np.ndarray: ...

    def observe(self, feedback: Feedback) -> None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...
