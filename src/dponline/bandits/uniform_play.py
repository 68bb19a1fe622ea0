"""Uniform random play on a contextual bandit: the level a bandit must beat to have learned.

Every round each replica plays an arm drawn uniformly from the K arms, whatever the context and
the rewards. Its decisions depend on no input, so it reveals nothing about any user (it is
0-DP, trivially); it is registered as a non-private reference because it has no budget to
spend. The report draws it in the private GLM bandit's panel beside the non-private bandit, and
says when a private learner's regret is not below it (:func:`~dponline.experiments.report.
report_notes`). Its expected regret is known in closed form on some environments (0.9 T on the
digits, where one arm of ten is right); running it keeps the comparison on the same draws.

It checks its inputs as the bandits it stands beside do (contexts finite and within
``x_bound`` in l_inf, rewards finite and within ``reward_range``), so that a stream one learner
refuses is refused by all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.glm_bandit import checked_context
from dponline.losses import checked_rewards
from dponline.privacy.arguments import (
    ArgumentError,
    checked_flag,
    checked_generator,
    checked_int_array,
    checked_positive,
    checked_real_array,
    checked_round,
    saved_field,
)
from dponline.protocol import (
    ContextFeedback,
    Feedback,
    FeedbackKind,
    RewardFeedback,
    RoundDiscipline,
    checked_config,
    checked_count,
)
from dponline.registry import LearnerEntry, LearnerTestCase, register_learner
from dponline.rng import RngLike, as_generator, generator_state

__all__ = ["UniformPlay"]


class UniformPlay(RoundDiscipline):
    """Uniform random play over ``arms`` arms for ``horizon`` rounds (module docstring)."""

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.CONTEXTUAL_BANDIT
    order: ClassVar[str] = " (a reward comes after a context and an action)"
    paper: ClassVar[str] = "uniform random play (the no-learning reference)"
    privacy = None

    def __init__(
        self,
        dim: int,
        arms: int,
        horizon: int,
        *,
        reward_range: tuple[float, float] = (0.0, 1.0),
        x_bound: float = 1.0,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self.dim = checked_count("dim", dim)
        self.arms = checked_count("arms", arms)
        self._start_rounds(horizon)
        self.replicas = checked_count("replicas", replicas)
        lo, hi = (float(v) for v in reward_range)
        if not lo <= hi:
            raise ValueError(
                f"reward_range must be (low, high) with low <= high, got {reward_range}"
            )
        self.reward_range = (lo, hi)
        self.x_bound = checked_positive("x_bound", x_bound)
        self.clip = bool(clip)
        self._rng = as_generator(rng)
        self._seen = False
        self._action: np.ndarray | None = None

    def scale_noise(self, factor: float) -> None:
        """Refused: uniform play draws no privacy noise (it reads no data)."""
        raise TypeError("uniform play has no privacy noise to scale (its decisions read no data)")

    def observe(self, feedback: Feedback) -> None:
        """A context (checked, then ignored) or the rewards of the arms played (checked)."""
        if isinstance(feedback, ContextFeedback):
            self._check_horizon()
            checked_context(feedback.context, self.dim, self.replicas, self.x_bound, self.clip)
            self._seen, self._action, self._acted = True, None, False
        elif isinstance(feedback, RewardFeedback):
            self._check_round()  # after a context and an action
            r = checked_real_array("reward", feedback.reward, (self.replicas,))
            checked_rewards(r, self.reward_range, self.clip)
            self._end_round()
            self._seen, self._action = False, None
        else:
            raise TypeError(
                f"observes ContextFeedback then RewardFeedback, got {type(feedback).__name__}"
            )

    def act(self) -> np.ndarray:
        """An arm per replica, uniformly at random (int array of shape (replicas,))."""
        self._check_context(self._seen)
        if self._action is None:
            self._action = self._rng.integers(0, self.arms, size=self.replicas)
            self._acted = True
        return self._action.copy()

    def _config(self) -> dict[str, Any]:
        return {"dim": self.dim, "arms": self.arms, "horizon": self.horizon,
                "replicas": self.replicas, "reward_range": list(self.reward_range)}  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "seen": self._seen,
            "action": None if self._action is None else self._action.copy(),
            "rng": generator_state(self._rng),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (configuration, round counter, whether the round's context
        was seen, the arms drawn, the RNG), then return the function that installs it."""
        checked_config(
            saved_field(state, "config"),
            self._config(),
            "UniformPlay",
            "dimension, arms, horizon, replicas or reward range",
        )
        t = checked_round(saved_field(state, "t"), self.horizon)
        seen = checked_flag("saved seen", saved_field(state, "seen"))
        action = saved_field(state, "action")
        if action is not None:
            if not seen:
                raise ArgumentError("saved arms without a context: a round acts after one")
            action = checked_int_array("saved action", action, (self.replicas,), 0, self.arms)
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self._set_rounds(t, action is not None)
            self._seen, self._action, self._rng = seen, action, rng

        return install


# --- catalogue entry (dponline.registry): dponline list, specs, the battery ----------------------


def _uniform_play(env: Any, *, budget: None = None, **kw: Any) -> UniformPlay:
    """Uniform play with the environment's dimension, arms, horizon and reward range (not
    private: ``budget`` is ``None``)."""
    if budget is not None:
        raise ValueError(f"uniform-play is not private: its budget must be None, got {budget!r}")
    kw.setdefault("reward_range", env.reward_range)
    return UniformPlay(env.dim, env.arms, env.horizon, **kw)


register_learner(
    LearnerEntry(
        "uniform-play",
        _uniform_play,
        paper="uniform random play: the no-learning reference of contextual bandits",
        setting="contextual generalized linear bandit (linear or logistic link)",
        guarantee="none needed: its decisions read no data (non-private reference)",
        calibrations=(),
        private=False,
        feedback_kind=FeedbackKind.CONTEXTUAL_BANDIT,
        action_space="contextual arms",
        test_cases=(
            LearnerTestCase(
                "glm_bandit", environment_options={"dim": 4, "link": "linear"}, randomised=True
            ),
        ),
        counterpart_of=("dp-glm-bandit",),
    )
)
