"""The learner protocol: one interface for every setting (docs/design.md, "The learner
protocol").

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
be caught). :class:`RoundDiscipline` keeps the rounds for every learner: the round counter, the
horizon, observe() after act(), the one error for each misuse, and ``load_state_dict`` that
checks a whole state before it changes anything. :func:`checked_budget` is the budget check
every private learner shares; the other argument checks live in
:mod:`dponline.privacy.arguments` (:func:`checked_count` is re-exported here).

The runner, the audit and the reports only use this interface. A new learner needs no code
elsewhere: its module, in one of the learner packages (``online``, ``bandits``, ``stochastic``),
declares its entry at its bottom with :func:`dponline.registry.register_learner` (factory,
feedback kind, action space, test cases), and ``dponline list``, experiment specs (which pair
learners and environments by feedback kind and action space), the learner battery
(:mod:`dponline.checks`, ``tests/test_learner_battery.py``) and ``dponline audit`` pick it up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

import numpy as np

from dponline.continual.base import HorizonExceededError
from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_flag,
    checked_nonnegative_int,
    checked_positive,
    checked_real_array,
    checked_round,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee, scaled_guarantee

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
    "RoundDiscipline",
    "SampleFeedback",
    "StochasticArms",
    "StochasticArmsPlayer",
    "StochasticRounds",
    "checked_bandit_loss",
    "checked_budget",
    "checked_config",
    "checked_count",
    "checked_round",
    "not_acted_error",
    "past_horizon_error",
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
    (:class:`dponline.losses.SmoothLoss`: value, gradient, Hessian)."""

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


@runtime_checkable
class StochasticArms(Protocol):
    """A stochastic K-armed environment that can draw many pulls of one arm at once:
    ``means`` (K,), the mean rewards in [0, 1], and ``reward_sums(arms, counts, rng=None)``,
    for arms and counts of shape (R,), the sum of ``counts[i]`` fresh rewards of arm
    ``arms[i]`` for each i, shape (R,) (0 where the count is 0). Its rounds' losses are
    1 - reward, and the loss it reports for a round is the expected one, 1 - means[arm].

    ``rewards_in_unit_interval``: the environment's promise that every single reward lies in
    [0, 1]. A learner playing whole commitments sees only their sums, which cannot show a
    reward outside [0, 1] (-1 and +2 average to a valid mean) though its noise is calibrated
    for rewards inside; so ``play_stochastic`` refuses an environment that does not make it
    (play that one round by round, where each reward is checked)."""

    means: np.ndarray
    rewards_in_unit_interval: bool

    def reward_sums(
        self, arms: np.ndarray, counts: np.ndarray, rng: np.random.Generator | None = None
    ) -> np.ndarray: ...


class StochasticRounds(NamedTuple):
    """What :meth:`StochasticArmsPlayer.play_stochastic` played: each replica's pseudo-regret
    over the rounds, sum over its pulls of mu* - mu_a (exact: the environment's means), shape
    (replicas,), and its pulls of each arm in them, shape (replicas, K)."""

    regret: np.ndarray
    pulls: np.ndarray


@runtime_checkable
class StochasticArmsPlayer(Protocol):
    """A K-armed learner that plays ``rounds`` rounds of a :class:`StochasticArms`
    environment at once: ``play_stochastic(env, rounds)`` leaves it in the state ``rounds``
    rounds of ``act()`` then ``observe(BanditFeedback(1 - reward))`` leave it (the same
    distribution; the same numbers when the rewards are deterministic) and returns a
    :class:`StochasticRounds`. Valid for stochastic environments only (rewards drawn afresh,
    independent of the past), which is what lets a commitment's rewards be drawn at once; the
    round loop uses it for those (:mod:`dponline.experiments.rounds`)."""

    def play_stochastic(self, env: StochasticArms, rounds: int) -> StochasticRounds: ...


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


def past_horizon_error(who: str, horizon: int, t: int, unit: str = "round") -> ValueError:
    """The one error for the input of round T+1 (a :class:`~dponline.continual.base.
    HorizonExceededError`, a ValueError): the learner's guarantee covers T rounds."""
    return HorizonExceededError(
        f"{who} was built for {horizon} {unit}s; {unit} {t + 1} is past it (past the horizon "
        "the guarantee is void)"
    )


def not_acted_error(who: str, t: int, unit: str = "round", order: str = "") -> ValueError:
    """The one error for feedback before the round's action (or a second one for it); ``order``
    adds what else a round needs first (a contextual bandit's context)."""
    return ValueError(
        f"observe() must follow act(): {who} got feedback before act() in {unit} {t + 1}{order}"
    )


def checked_bandit_loss(
    learner: Any, feedback: Any, *, acted: bool, finite: bool = True
) -> np.ndarray:
    """The round's bandit loss values, shape (replicas,), after the checks every fixed-horizon
    bandit learner makes before it uses them: BanditFeedback, a round within the learner's
    ``horizon`` (round T+1 would void its guarantee), an action played this round, real values
    of shape (replicas,) (or a number for one replica), finite
    (:func:`~dponline.privacy.arguments.checked_real_array`). The
    learner's state is not touched. ``finite=False`` leaves the NaN and infinity check to a
    caller whose own bounds check refuses them anyway."""
    who = type(learner).__name__
    if not isinstance(feedback, BanditFeedback):
        raise TypeError(f"{who} observes BanditFeedback, got {type(feedback).__name__}")
    if learner.horizon is not None and learner.t >= learner.horizon:
        raise past_horizon_error(who, learner.horizon, learner.t)
    if not acted:
        raise not_acted_error(who, learner.t)
    one = ((),) if learner.replicas == 1 else ()  # one replica: a plain number too
    shape = (learner.replicas,)
    return checked_real_array("bandit loss", feedback.loss, shape, *one, finite=finite).reshape(
        shape
    )


def checked_config(saved: Any, mine: dict[str, Any], who: str, what: str) -> None:
    """A saved ``config`` must equal the learner's own, ``what`` its state depends on (what its
    noise was calibrated for, its horizon, shapes and parameters): else the one error, naming
    the keys that differ."""
    if saved == mine:
        return
    if not isinstance(saved, dict):
        raise ArgumentError(f"saved config of a {who} must be a dict, got {type(saved).__name__}")
    diff = sorted(str(k) for k in set(saved) | set(mine) if saved.get(k) != mine.get(k))
    if "learner" in diff and "learner" in saved and "learner" in mine:
        raise ArgumentError(
            f"state was saved from a {saved['learner']}, not a {mine['learner']}: it cannot "
            "continue this one"
        )
    unit_keys = ("participations", "min_separation")
    missing = sorted(str(k) for k in set(mine) - set(saved))
    if missing and set(missing) == set(diff):
        raise ArgumentError(
            f"state was saved from a {who} by an earlier version of dponline (its config lacks "
            f"{', '.join(missing)}): a state is read back by the version that wrote it"
        )
    if any(key in diff for key in unit_keys) and all(
        isinstance(config.get(key), (int, np.integer))
        for config in (saved, mine)
        for key in unit_keys
    ):  # a person's noise is calibrated for the person: name the unit, not what follows it

        def unit(config: dict[str, Any]) -> str:
            k, b = int(config["participations"]), int(config["min_separation"])
            return "one round" if k == 1 else f"one person (at most {k} rounds, at least {b} apart)"

        raise ArgumentError(
            f"state was saved from a {who} protecting {unit(saved)}, this one protects "
            f"{unit(mine)}: build it with participations={int(saved['participations'])}, "
            f"min_separation={int(saved['min_separation'])} to continue that state"
        )
    raise ArgumentError(
        f"state was saved from a differently configured {who}: a different {what} (the saved "
        f"config differs in {', '.join(diff)}); it cannot continue this one"
    )


class RoundDiscipline:
    """Mixin: the round discipline every learner keeps, in one place.

    A learner is built for ``horizon`` rounds T, or, if it is anytime, with ``horizon=None``
    (its guarantee then holds for every t; see :meth:`_start_rounds`). Each round it acts
    (``act()``, which may be called again, and after round T too: a decision is
    post-processing of what was released) and then observes the round's feedback once. This
    mixin owns the round counter ``t`` (rounds whose feedback was observed), the horizon, the
    flag ``_acted`` and the one error for each misuse:

    * the input of round T+1: :meth:`_check_horizon` (:func:`past_horizon_error`);
    * feedback before the round's action, or a second feedback for one action:
      :meth:`_check_round` (:func:`not_acted_error`);
    * a contextual bandit's ``act()`` before the round's context: :meth:`_check_context`;
    * ``load_state_dict`` of a corrupt state: :meth:`load_state_dict` runs the learner's
      :meth:`prepare_load`, which checks the whole state (the saved round counter with
      :meth:`_checked_rounds`) before it changes anything, and returns the function that
      installs it; a refused state leaves the learner exactly as it was.

    A learner calls :meth:`_start_rounds` in its constructor, sets ``self._acted = True`` in
    ``act()``, calls :meth:`_check_round` in ``observe`` before it reads the feedback and
    :meth:`_end_round` once the feedback is used (:meth:`_end_rounds` after a block of rounds
    played at once). ``unit`` names a round in messages ("sample" for the streaming
    learners), ``order`` what else comes before the feedback.
    """

    unit: ClassVar[str] = "round"
    #: what else a round needs before its feedback, for the message (contextual bandits)
    order: ClassVar[str] = ""
    horizon: int  # None for an anytime learner (built with horizon=None)
    t: int
    _acted: bool = False

    def _start_rounds(self, horizon: Any, name: str = "horizon", *, anytime: bool = False) -> Any:
        """Set the horizon (a positive integer) and start at round 1, not yet acted.

        ``anytime=True`` (a learner whose guarantee holds at every t) also accepts
        ``horizon=None``: no round is then refused for being late, and the rest of the
        discipline (the round counter, observe after act, the checks of a saved state) is
        unchanged. A learner that cannot run without a horizon leaves ``anytime`` False and
        ``None`` is refused with the one message that says so."""
        if horizon is None:
            if not anytime:
                raise ArgumentError(
                    f"{type(self).__name__} needs a {name} (a positive integer): its noise or "
                    f"its step sizes are set for a known number of {self.unit}s, and it has no "
                    f"anytime version ({name}=None is for anytime learners)"
                )
            self.horizon = None  # type: ignore[assignment]
        else:
            self.horizon = checked_count(name, horizon)
        self.t = 0
        self._acted = False
        return self.horizon

    @property
    def anytime(self) -> bool:
        """Whether the learner runs without a horizon (built with ``horizon=None``): its
        guarantee holds for every t and no round is refused for being late."""
        return self.horizon is None

    def _check_horizon(self) -> None:
        """Refuse the input of round T+1 (past the horizon the guarantee does not hold); an
        anytime learner (``horizon=None``) refuses no round."""
        if self.horizon is not None and self.t >= self.horizon:
            raise past_horizon_error(type(self).__name__, self.horizon, self.t, self.unit)

    def _check_round(self) -> None:
        """Before a round's feedback is read: within the horizon, and after ``act()``."""
        self._check_horizon()
        if not self._acted:
            raise not_acted_error(type(self).__name__, self.t, self.unit, self.order)

    def _check_context(self, seen: bool) -> None:
        """A contextual bandit's ``act()`` needs the round's context first."""
        if not seen:
            raise ValueError(
                f"act() needs this round's context first: {type(self).__name__} has not "
                f"observed a ContextFeedback in round {self.t + 1}"
            )

    def _end_round(self) -> None:
        """The round's feedback is used: on to the next round."""
        self._acted = False
        self.t += 1

    def _end_rounds(self, rounds: int) -> None:
        """``rounds`` rounds played at once and their feedback used (a
        :class:`BlockPlayer`'s block, which starts at a round boundary and which the caller
        has checked lies within the horizon): on to the round after them."""
        self._acted = False
        self.t += rounds

    def _checked_rounds(self, state: Any) -> tuple[int, bool]:
        """The saved round counter, in [0, T] (any non-negative integer for an anytime
        learner), and the saved ``acted`` flag, checked."""
        if self.horizon is None:
            t = checked_nonnegative_int("saved round counter t", saved_field(state, "t"))
        else:
            t = checked_round(saved_field(state, "t"), self.horizon)
        return t, checked_flag("saved acted", saved_field(state, "acted"))

    def _set_rounds(self, t: int, acted: bool) -> None:
        self.t, self._acted = t, acted

    def prepare_load(self, state: Any) -> Callable[[], None]:
        """Check the whole of ``state`` (saved by :meth:`state_dict` of an identically built
        learner) and return the function that installs it; that function cannot fail."""
        raise TypeError(
            f"{type(self).__name__} keeps the round discipline but defines no prepare_load: it "
            "cannot check a saved state, so it loads none"
        )

    def load_state_dict(self, state: Any) -> None:
        """Resume from ``state``: everything is checked before anything changes, so a corrupt
        state raises one error and leaves the learner exactly as it was."""
        self.prepare_load(state)()


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

    def _saved_multiplier(self, state: Any) -> float:
        """The saved ``noise_multiplier`` of a state, checked (for ``prepare_load``): it must
        be this learner's own. A state saved at another multiplier holds noise drawn at
        another scale, and installing its multiplier would change the noise of every later
        draw (a crafted state at 1e-6 removed it) while the guarantee still claimed the
        calibrated epsilon; scale this learner's noise first to load such a state."""
        value = saved_field(state, "noise_multiplier")
        try:
            saved = checked_positive("noise_multiplier", value)
        except ArgumentError:  # a saved state's: say so
            raise ArgumentError(
                f"saved noise_multiplier must be positive and finite, got {value!r}"
            ) from None
        if saved != self.noise_multiplier:
            raise ArgumentError(
                f"state was saved from a learner whose noise was multiplied by {saved!r}, this "
                f"one by {self.noise_multiplier!r}: its noise was drawn at another scale "
                "(scale_noise this learner first)"
            )
        return saved

    def scale_noise(self, factor: float) -> None:
        """Multiply the calibrated noise by ``factor`` (> 0) before the first round."""
        f = checked_positive("factor", factor)
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
            self.privacy = scaled_guarantee(self.privacy, self.noise_multiplier)
