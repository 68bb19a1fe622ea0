"""The learner protocol: one interface for every setting (DESIGN.md, "The learner protocol").

Every learner holds ``replicas`` independent copies along a leading axis and offers

* ``act() -> np.ndarray``: this round's decision for every replica, shape ``(replicas, ...)``;
* ``observe(feedback)``: the round's feedback (one of the classes below); in contextual bandits
  also the round's context, before ``act``;
* ``privacy``: the :class:`~dponline.privacy.guarantee.PrivacyGuarantee` it gives (``None`` for
  a non-private learner);
* ``state_dict()`` / ``load_state_dict(state)``: everything needed to resume, RNG state included.

A private learner takes one :class:`~dponline.privacy.budget.PrivacyBudget` (``budget=None``
runs the non-private algorithm it privatises) and offers :meth:`NoiseHandle.scale_noise`, the
public handle through which an audit multiplies its calibrated noise (a tenth of the noise must
be caught). :func:`checked_budget` and :func:`checked_count` are the argument checks every
learner shares.

The runner, the audit and the reports only use this interface. A new learner needs no code
elsewhere: its module, in one of the learner packages (``online``, ``bandits``, ``stochastic``),
declares its entry at its bottom with :func:`dponline.registry.register_learner` (factory,
feedback kind, action space, test cases), and ``dponline list``, experiment specs (which pair
learners and environments by feedback kind and action space), the learner battery
(:mod:`dponline.checks`, ``tests/test_learner_battery.py``) and ``dponline audit`` pick it up.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dponline.privacy.bounds import check_finite
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee

__all__ = [
    "BanditFeedback",
    "BlockPlayer",
    "ContextFeedback",
    "Feedback",
    "FeedbackKind",
    "Learner",
    "LossFunctionFeedback",
    "LossVectorFeedback",
    "NoiseHandle",
    "RewardFeedback",
    "SampleFeedback",
    "checked_bandit_loss",
    "checked_budget",
    "checked_count",
    "checked_round",
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
    """Full information: the loss function f_t with its gradient oracle, and for learners that
    need curvature and declared constants (CTRL) the structured loss itself
    (:class:`dponline.online.smooth_losses.SmoothLoss`: value, gradient, Hessian)."""

    value: Any  # callable x -> loss, vectorised over replicas
    gradient: Any  # callable x -> gradient
    loss: Any = None
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


@runtime_checkable
class BlockPlayer(Protocol):
    """A full-information learner that can play a block of rounds of an oblivious stream at
    once: ``play_block(losses)`` with ``losses`` of shape (b, dim), the next b rounds' loss
    vectors, returns the b decisions, shape (b, replicas, dim), that b rounds of ``act()``
    then ``observe(LossVectorFeedback(l_t))`` would make, with the same distribution and the
    same state afterwards. Valid only when the losses were fixed before the first round
    (they cannot react to the decisions); the runner uses it for
    :class:`~dponline.environments.oblivious.LinearFullInformation` streams."""

    def play_block(self, losses: np.ndarray) -> np.ndarray: ...


def checked_count(name: str, value: Any) -> int:
    """A positive integer (numpy integers accepted, bools and floats refused), else an error
    naming the argument: horizons, dimensions, replicas."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def checked_budget(
    budget: Any, relation: Neighbouring = Neighbouring.ONE_ROUND
) -> PrivacyBudget | None:
    """``budget`` (a :class:`PrivacyBudget`, or ``None`` for the non-private algorithm) stated
    over the learner's own neighbouring ``relation``: a budget left at the default relation
    (one round) takes the learner's; one that names another relation is refused, since the
    learner's proof is not over it."""
    if budget is None:
        return None
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(
            "budget must be a dponline.privacy.PrivacyBudget (or None for the non-private "
            f"algorithm), got {budget!r}"
        )
    if budget.neighbouring not in (Neighbouring.ONE_ROUND, relation):
        raise ValueError(
            f"this learner's guarantee is over {relation.value!r}; the budget asks for "
            f"{budget.neighbouring.value!r}"
        )
    return dataclasses.replace(budget, neighbouring=relation)


def checked_round(t: Any, horizon: int) -> int:
    """A saved round counter, checked to lie in [0, horizon] (a state past the horizon would
    let a learner release more than its guarantee covers)."""
    if isinstance(t, bool) or not isinstance(t, numbers.Integral) or not 0 <= int(t) <= horizon:
        raise ValueError(f"saved round counter t must be an integer in [0, {horizon}], got {t!r}")
    return int(t)


def checked_bandit_loss(
    learner: Any, feedback: Any, *, acted: bool, finite: bool = True
) -> np.ndarray:
    """The round's bandit loss values, shape (replicas,), after the checks every fixed-horizon
    bandit learner makes before it uses them: BanditFeedback, a round within the learner's
    ``horizon`` (round T+1 would void its guarantee), an action played this round, finite
    values of the right shape. The learner's state is not touched. ``finite=False`` leaves
    the NaN and infinity check to a caller whose own bounds check refuses them anyway."""
    who = type(learner).__name__
    if not isinstance(feedback, BanditFeedback):
        raise TypeError(f"{who} observes BanditFeedback, got {type(feedback).__name__}")
    if learner.t >= learner.horizon:
        raise ValueError(
            f"{who} was built for {learner.horizon} rounds; the loss of round {learner.t + 1} "
            "would void its guarantee"
        )
    if not acted:
        raise ValueError("observe() must follow act(): no action was played this round")
    value = check_finite(feedback.loss, "bandit loss") if finite else np.asarray(feedback.loss)
    if value.dtype.kind not in "fiub":
        raise TypeError(f"bandit loss must be real numbers, got dtype {value.dtype}")
    if value.shape != (learner.replicas,):
        raise ValueError(f"bandit loss must have shape ({learner.replicas},), got {value.shape}")
    return value


class NoiseHandle:
    """Mixin: the public handle on a private learner's noise.

    :meth:`scale_noise` multiplies every noise scale the learner draws with by ``factor``, before
    the first round. It exists for audits: a factor below 1 voids the calibrated guarantee, and
    ``privacy`` then says so (epsilon = inf, the calibrated derivation kept). Subclasses
    implement ``_scale_noise(factor)``; ``noise_multiplier`` reports the product applied so far.
    """

    privacy: PrivacyGuarantee | None
    t: int
    noise_multiplier: float = 1.0

    def _scale_noise(self, factor: float) -> None:
        raise TypeError(f"{type(self).__name__} draws no noise to scale")

    def scale_noise(self, factor: float) -> None:
        """Multiply the calibrated noise by ``factor`` (> 0) before the first round."""
        f = float(factor)
        if not (math.isfinite(f) and f > 0):
            raise ValueError(f"factor must be a finite positive number, got {factor!r}")
        if self.privacy is None:
            raise ValueError(f"{type(self).__name__} is non-private: it has no noise to scale")
        if self.t != 0:
            raise ValueError(
                f"scale the noise before the first round (this learner is at round {self.t}): "
                "noise already released cannot change"
            )
        self._scale_noise(f)
        self.noise_multiplier *= f
        if self.noise_multiplier < 1.0:
            self.privacy = dataclasses.replace(
                self.privacy,
                epsilon=math.inf,
                rho=None,
                derivation=(
                    f"noise multiplied by {self.noise_multiplier:g} after calibration: no "
                    f"guarantee (for audits). As calibrated: {self.privacy.derivation}"
                ),
            )
