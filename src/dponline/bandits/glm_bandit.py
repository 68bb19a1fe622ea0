"""Differentially private high-dimensional generalized linear bandit: Han et al., Algorithm 3.

K arms with unknown parameters theta*_i in an l_1 ball; at round t a user arrives with context
X_t (||X_t||_inf <= X), the learner plays an arm a_t and receives r_t with
E[r_t | X_t] = zeta(X_t' theta*_{a_t}). Every arm keeps an estimator run by Algorithm 2 (private
streaming Frank-Wolfe with report-noisy-min over the l_1 ball's vertices) on the GLM loss
(:class:`~dponline.losses.glm.GLMLoss`):

1. warm-up (lines 3-10): arm i is pulled for t_0 rounds in turn and only its estimator is updated;
   theta_{t_0, i} is the forced-sampling estimator;
2. afterwards (lines 11-18): pre-select K_t = {i : zeta(X_t' theta_{t_0, i}) >
   max_j zeta(X_t' theta_{t_0, j}) - h_sub / 2}, play the greedy a_t = argmax_{i in K_t}
   zeta(X_t' theta_{t, i}), add (X_t, r_t) to arm a_t's stream and the synthetic sample
   (0, zeta(0)) -- zero gradient -- to every other arm's, and advance every estimator one step.

Each arm's estimator therefore sees exactly one sample per round after the warm-up, so its
number of samples is n = t_0 + T - K t_0, fixed in advance, which Algorithm 2's noise needs.

Privacy (Theorem 4.6, joint DP, Definition 4.1). Neighbouring inputs differ in one user's context
and rewards. The actions of every other user are functions of their own context and of the
released estimators, so it suffices that the estimators of all arms are (epsilon, delta)-DP.
Changing user t changes the arms' streams in one of two ways: if both inputs play the same arm,
that arm's sample changes (sensitivity 2 (beta D + L), as in Algorithm 2); if they play
different arms a and a', each of the two streams changes from a real sample to the synthetic
zero, whose gradient is zero, so its recursive-gradient increment moves by at most
||(t+1) grad f(theta_t) - t grad f(theta_{t-1})||_inf <= L + beta D, half the one-arm bound.
Every arm runs Algorithm 2 calibrated for (epsilon, delta), which is rho-zCDP for sensitivity
2 (beta D + L); its zCDP is quadratic in the sensitivity, so the two-arm case costs
2 (1/2)^2 rho = rho / 2 <= rho. Hence the released estimators, and so Algorithm 3, are
(epsilon, delta)-JDP with each arm's own guarantee, as Theorem 4.6 states (its proof in Appendix
B writes the ratio over the two arms without this step). The ``paper`` calibration uses
Algorithm 2's Laplace noise, ``tight`` its Gumbel (exponential mechanism) calibration.

Input contract: ||x||_inf <= X (``x_bound``) and rewards in ``reward_range``; the true parameters
should lie in the l_1 ball of radius ``radius`` for the estimators to be consistent (privacy does
not depend on it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.losses import GLMLoss
from dponline.privacy.arguments import (
    ArgumentError,
    checked_int_array,
    checked_positive,
    checked_real_array,
    checked_round,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee, PrivacyNotion, restated
from dponline.protocol import (
    ContextFeedback,
    Feedback,
    FeedbackKind,
    NoiseHandle,
    RewardFeedback,
    RoundDiscipline,
    checked_budget,
    checked_config,
    checked_count,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    one_over_horizon,
    register_learner,
)
from dponline.rng import RngLike, as_generator
from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe, l1_ball_vertices

__all__ = ["DPGLMBandit", "checked_context", "default_warmup"]


def checked_context(
    context: np.ndarray, dim: int, replicas: int, x_bound: float, clip: bool
) -> np.ndarray:
    """A round's context, shape (dim,) or (replicas, dim), finite and with
    ||x||_inf <= ``x_bound`` (rows scaled into the bound with ``clip``), else ValueError."""
    x = checked_real_array("context", context, (dim,), (replicas, dim))  # names NaN, shape
    norm = float(np.abs(x).max())
    if norm > x_bound:
        if not clip:
            raise ValueError(
                f"context outside the declared bounds: ||x||_inf = {norm!r} exceeds "
                f"x_bound = {x_bound}"
            )
        rows = np.abs(x).max(axis=-1, keepdims=True)
        x = x * np.minimum(1.0, x_bound * (1 - 1e-12) / np.maximum(rows, 1e-300))
    return x


def default_warmup(dim: int, horizon: int, epsilon: float | None, arms: int = 1) -> int:
    """t_0 = ceil(log(d T) log(T) / epsilon^2) (epsilon = 1 without privacy): the order that
    Theorem 4.8 requires, t_0 = O(log(dT/alpha) log(T) / epsilon^2), with constant 1; capped so
    that the warm-up of all ``arms`` takes at most half the horizon."""
    eps = 1.0 if epsilon is None else min(float(epsilon), 1.0)
    t0 = math.ceil(math.log(dim * horizon) * math.log(horizon) / eps**2)
    return max(1, min(t0, horizon // (2 * arms)))


class DPGLMBandit(NoiseHandle, RoundDiscipline):
    """Han et al. Algorithm 3 (see the module docstring).

    Parameters
    ----------
    dim, arms, horizon:
        d, K and T.
    warmup:
        t_0, the forced-sampling rounds per arm (T must exceed K t_0); default
        :func:`default_warmup` for ``arms``.
    h_sub:
        The pre-selection gap of Assumption 4.2 (on the scale of zeta).
    link:
        "linear" or "logistic".
    reward_range:
        (lo, hi) bounds on rewards; zeta(0) must lie inside.
    x_bound, radius:
        X and the l_1 radius R of the parameter set.
    budget:
        The joint-DP (epsilon, delta) budget, delta > 0 (``None``: the non-private bandit, no
        noise); each arm's Algorithm 2 is calibrated to it.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.CONTEXTUAL_BANDIT
    order: ClassVar[str] = " (a reward comes after a context and an action)"
    paper: ClassVar[str] = "Han et al., Algorithm 3 and Theorem 4.6"

    def __init__(
        self,
        dim: int,
        arms: int,
        horizon: int,
        *,
        h_sub: float,
        warmup: int | None = None,
        link: str = "logistic",
        reward_range: tuple[float, float] = (0.0, 1.0),
        x_bound: float = 1.0,
        radius: float = 1.0,
        budget: PrivacyBudget | None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self.dim = checked_count("dim", dim)
        self.arms = checked_count("arms", arms)
        self._start_rounds(horizon)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget, Neighbouring.ONE_USER)
        epsilon = None if self.budget is None else self.budget.epsilon
        self.warmup = (
            default_warmup(self.dim, self.horizon, epsilon, self.arms)
            if warmup is None
            else checked_count("warmup", warmup)
        )
        if self.arms < 2:
            raise ValueError(f"need at least 2 arms, got {arms!r}")
        if self.warmup < 1 or self.horizon <= self.arms * self.warmup:
            raise ValueError(
                f"need warmup >= 1 and horizon > arms * warmup, got warmup={self.warmup!r}, "
                f"arms={arms!r}, horizon={horizon!r}"
            )
        self.h_sub = checked_positive("h_sub", h_sub, infinite_ok=True)
        self.loss = GLMLoss.named(link, reward_range)
        self.zero_reward = float(self.loss.link(np.float64(0.0)))
        self.x_bound = checked_positive("x_bound", x_bound)
        self.clip = bool(clip)
        per_arm = self.warmup + self.horizon - self.arms * self.warmup
        gen = as_generator(rng)
        self.radius = checked_positive("radius", radius)
        vertices = l1_ball_vertices(self.dim, self.radius)
        # each arm's Algorithm 2 is private over its own samples; the bandit's JDP follows
        arm_budget = (
            None
            if self.budget is None
            else dataclasses.replace(self.budget, neighbouring=Neighbouring.ONE_SAMPLE)
        )
        # the arms are copies of one estimator: its calibration is proven once, for the first
        self.estimators: list[NoisyMinFrankWolfe] = []
        for child in gen.spawn(self.arms):
            first = self.estimators[0].calibration if self.estimators else None
            self.estimators.append(
                NoisyMinFrankWolfe(
                    self.dim,
                    per_arm,
                    vertices=vertices,
                    x_bound=x_bound,
                    budget=arm_budget,
                    replicas=self.replicas,
                    rng=child,
                    clip=clip,
                    loss=self.loss,
                    calibration=first,
                )
            )
        arm_privacy = self.estimators[0].privacy
        self.privacy: PrivacyGuarantee | None = (
            None
            if arm_privacy is None
            else restated(
                arm_privacy,
                notion=PrivacyNotion.JOINT_DP,
                neighbouring=Neighbouring.ONE_USER,
                derivation=(
                    "Theorem 4.6: other users' actions are post-processing of the released "
                    "estimators; one user changes one arm's sample, or two arms' samples to "
                    "or from the zero-gradient synthetic one (half the sensitivity each); "
                    + arm_privacy.derivation
                ),
            )
        )
        self.forced = np.zeros((self.arms, self.replicas, self.dim))  # theta_{t_0, i}
        self._context: np.ndarray | None = None
        self._action: np.ndarray | None = None

    def _scale_noise(self, factor: float) -> None:
        for est in self.estimators:
            est.scale_noise(factor)

    # --- the protocol -------------------------------------------------------------------------

    def observe(self, feedback: Feedback) -> None:
        if isinstance(feedback, ContextFeedback):
            self._see(feedback.context)
        elif isinstance(feedback, RewardFeedback):
            self._reward(feedback.reward)
        else:
            raise TypeError(
                f"observes ContextFeedback then RewardFeedback, got {type(feedback).__name__}"
            )

    def act(self) -> np.ndarray:
        """The arm each replica plays (int array of shape (replicas,))."""
        self._check_context(self._context is not None)
        if self._action is None:
            self._action = self._choose(self._context)
            self._acted = True
        return self._action.copy()

    # --- Algorithm 3 --------------------------------------------------------------------------

    def estimates(self) -> np.ndarray:
        """Every arm's current estimator theta_{t, i}, shape (replicas, arms, dim): what the
        proof of Theorem 4.6 releases (every other user's action is post-processing of it)."""
        return np.stack([e.theta for e in self.estimators], axis=1)

    @property
    def in_warmup(self) -> bool:
        return self.t < self.arms * self.warmup

    def scores(self, context: np.ndarray, thetas: np.ndarray) -> np.ndarray:
        """zeta(X' theta_i) for every arm and replica: (replicas, arms)."""
        z = np.einsum("krd,rd->rk", thetas, np.broadcast_to(context, (self.replicas, self.dim)))
        return self.loss.link(z)

    def _choose(self, context: np.ndarray) -> np.ndarray:
        if self.in_warmup:  # lines 3-6: arm i for rounds i t_0 + 1, ..., (i + 1) t_0
            return np.full(self.replicas, self.t // self.warmup, dtype=int)
        forced = self.scores(context, self.forced)  # line 13
        keep = forced > forced.max(axis=1, keepdims=True) - self.h_sub / 2.0
        current = np.stack([e.theta for e in self.estimators])
        greedy = np.where(keep, self.scores(context, current), -np.inf)  # line 14
        return np.argmax(greedy, axis=1)

    def _see(self, context: np.ndarray) -> None:
        self._check_horizon()
        x = checked_context(context, self.dim, self.replicas, self.x_bound, self.clip)
        self._context, self._action, self._acted = x, None, False

    def _reward(self, reward: np.ndarray) -> None:
        self._check_round()  # after a context and an action
        action = self._action
        assert self._context is not None and action is not None
        one = ((),) if self.replicas == 1 else ()  # one replica: a plain number too
        r = checked_real_array("reward", reward, (self.replicas,), *one).reshape(self.replicas)
        # validate before any estimator moves, so a bad reward leaves every arm in step
        r = self.loss.check_reward(r, self.clip)
        x = np.broadcast_to(self._context, (self.replicas, self.dim))
        if self.in_warmup:  # lines 7-8: only the pulled arm learns
            self.estimators[int(action[0])].observe_each(x, r)
            if self.t + 1 == self.arms * self.warmup:
                self.forced = np.stack([e.theta for e in self.estimators])
        else:  # lines 16-17: the played arm gets (X, r), the others (0, zeta(0))
            for i, est in enumerate(self.estimators):
                played = action == i
                est.observe_each(
                    np.where(played[:, None], x, 0.0), np.where(played, r, self.zero_reward)
                )
        self._end_round()
        self._context, self._action = None, None

    # --- checkpoints --------------------------------------------------------------------------

    def _config(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "arms": self.arms,
            "horizon": self.horizon,
            "warmup": self.warmup,
            "h_sub": self.h_sub,
            "replicas": self.replicas,
            "loss": self.loss.to_dict(),
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume, between rounds or within one (the revealed context and
        the chosen actions included)."""
        return {
            "config": self._config(),
            "t": self.t,
            "forced": self.forced.copy(),
            "estimators": [e.state_dict() for e in self.estimators],
            "context": None if self._context is None else self._context.copy(),
            "action": None if self._action is None else self._action.copy(),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (configuration, round counter, forced-sampling estimators,
        every arm's estimator, the revealed context and chosen actions), then return the
        function that installs it. A round is acted when its actions are saved."""
        checked_config(
            saved_field(state, "config"),
            self._config(),
            "DPGLMBandit",
            "dimension, arms, horizon, warm-up, gap, replicas or loss",
        )
        t = checked_round(saved_field(state, "t"), self.horizon)
        forced = np.array(
            checked_real_array(
                "saved forced", saved_field(state, "forced"), (self.arms, self.replicas, self.dim)
            )
        )
        saved = saved_field(state, "estimators")
        if not isinstance(saved, list | tuple) or len(saved) != self.arms:
            raise ArgumentError(
                f"saved estimators must be a list of {self.arms} states (one per arm), got a "
                f"{type(saved).__name__}" + (f" of {len(saved)}" if isinstance(saved, list) else "")
            )
        installs = [est.prepare_load(s) for est, s in zip(self.estimators, saved, strict=True)]
        self._check_schedule(t, forced, [saved_field(s, "t") for s in saved])
        context, action = saved_field(state, "context"), saved_field(state, "action")
        if context is not None:
            context = np.array(
                checked_real_array("saved context", context, (self.dim,), (self.replicas, self.dim))
            )
        if action is not None:
            if context is None:
                raise ArgumentError("saved actions without a context: a round acts after one")
            action = checked_int_array("saved action", action, (self.replicas,), 0, self.arms)
            if t < self.arms * self.warmup and np.any(action != t // self.warmup):
                raise ArgumentError(
                    f"saved actions {action.tolist()} in warm-up round {t} are not the "
                    f"scheduled arm {t // self.warmup} (lines 3-6: arm i for its t_0 rounds)"
                )

        def install() -> None:
            for install_estimator in installs:
                install_estimator()
            self._set_rounds(t, action is not None)
            self.forced, self._context, self._action = forced, context, action

        return install

    def _check_schedule(self, t: int, forced: np.ndarray, steps: list[Any]) -> None:
        """Refuse a saved state off Algorithm 3's schedule at round t: forced-sampling
        estimators that are not zero before the warm-up ends or that leave the parameter set
        (l_1 ball of radius R: Frank-Wolfe iterates) after it, or an arm whose estimator has
        taken other than its scheduled steps (min(max(t - i t_0, 0), t_0) in the warm-up;
        t_0 + t - K t_0 after it, every arm learning every round)."""
        warm = self.arms * self.warmup
        if t < warm and np.any(forced != 0.0):
            raise ArgumentError(
                f"saved forced-sampling estimators are set in warm-up round {t}: they are "
                f"taken when the warm-up ends (round {warm})"
            )
        norms = np.abs(forced).sum(axis=-1)
        if t >= warm and float(norms.max()) > self.radius * (1.0 + 1e-9):
            raise ArgumentError(
                f"saved forced-sampling estimators leave the l_1 ball of radius {self.radius} "
                f"(l_1 norm {float(norms.max()):.6g}): no run's iterate does"
            )
        for i, got in enumerate(steps):
            want = (
                min(max(t - i * self.warmup, 0), self.warmup)
                if t < warm
                else t - warm + self.warmup
            )
            if got != want:
                raise ArgumentError(
                    f"saved estimator of arm {i} has taken {got!r} steps at round {t}; the "
                    f"schedule gives it {want}"
                )


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _dp_glm_bandit(env: Any, *, budget: PrivacyBudget | None, **kw: Any) -> DPGLMBandit:
    """Algorithm 3 with the environment's dimension, arms, horizon, reward range, link,
    (synthetic) h_sub and parameter radius, each overridable by an option."""
    kw.setdefault("link", getattr(env, "link", "logistic"))
    kw.setdefault("h_sub", getattr(env, "h_sub", 0.05))
    kw.setdefault("radius", getattr(env, "radius", 1.0))
    kw.setdefault("reward_range", env.reward_range)
    return DPGLMBandit(env.dim, env.arms, env.horizon, budget=budget, **kw)


_GLM_BOUNDS = {
    "reward_range": "the rewards' range, enforced (default: the environment's)",
    "x_bound": "X: every context's ||x||_inf <= X, enforced (default 1)",
    "radius": "the l_1 radius of the parameter set (default: the environment's, else 1)",
}
_GLM_SETTING = "contextual generalized linear bandit (linear or logistic link)"

_DP_GLM_BANDIT_ENTRY = register_learner(
    LearnerEntry(
        "dp-glm-bandit",
        _dp_glm_bandit,
        paper="Han et al., Algorithm 3 (forced sampling, pre-selection, greedy choice, "
        "synthetic updates, Algorithm 2 per arm), Theorem 4.6",
        setting=_GLM_SETTING,
        guarantee=(
            "(epsilon, delta)-joint DP (default delta = 1/T) over user streams differing "
            "in one user's context and rewards, for ||x||_inf <= 1 and rewards in the "
            "environment's range"
        ),
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.CONTEXTUAL_BANDIT,
        action_space="contextual arms",
        test_cases=(
            LearnerTestCase(
                "glm_bandit",
                environment_options={"dim": 4, "link": "linear", "noise": 0.0},
                release=DPGLMBandit.estimates,
                audit=AuditCase(
                    # 3 arms, t_0 = 1, linear link, rewards in [-100, 100]: user 4 (the first
                    # after the warm-up) has reward +100 or -100 whichever arm it gets: its
                    # gradient moves by 200 in l_inf, against the proven 2 (beta D + L) = 206
                    # (L = 101, beta = 1, D = 2)
                    horizon=6,
                    values=(100.0, -100.0),
                    changed_round=3,
                    environment_options={"dim": 3, "link": "linear"},
                    learner_options={
                        "warmup": 1,
                        "h_sub": 1.0,
                        "link": "linear",
                        "reward_range": (-100.0, 100.0),
                        "delta": 1e-5,
                    },
                    trials=60_000,
                    pilot_trials=20_000,
                    seed=6,
                ),
            ),
        ),
        options={
            "warmup": "t_0 per arm (default log(dT) log(T) / epsilon^2)",
            "h_sub": "pre-selection gap (default: the environment's)",
            "link": "linear | logistic (default: the environment's)",
            **_GLM_BOUNDS,
        },
        default_delta=one_over_horizon,
    )
)

register_learner(
    non_private_entry(
        _DP_GLM_BANDIT_ENTRY,
        "glm-bandit",
        paper="Han et al., Algorithm 3 without noise (the forced-sampling greedy GLM bandit "
        "of Bastani & Bayati 2020 with Frank-Wolfe estimators); the non-private "
        "counterpart of dp-glm-bandit",
        test_cases=(
            LearnerTestCase(
                "glm_bandit",
                environment_options={"dim": 4, "link": "linear", "noise": 0.0},
                release=DPGLMBandit.estimates,
            ),
        ),
        options={
            "warmup": "t_0 per arm",
            "h_sub": "pre-selection gap",
            "link": "linear | logistic (default: the environment's)",
            **_GLM_BOUNDS,
        },
    )
)
