"""Every learner dponline offers, with its paper, setting, guarantee and calibrations
(``dponline list``), and every named environment the runner can build."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dponline.bandits.exp2 import DPEXP2
from dponline.bandits.glm_bandit import DPGLMBandit
from dponline.bandits.scrible import DPSCRiBLe
from dponline.domains.barriers import BallBarrier, BoxBarrier
from dponline.domains.lp_ball import LpBall
from dponline.environments import (
    BanditEnvironment,
    ExpertsEnvironment,
    StochasticBandit,
    alternating_losses,
    stochastic_losses,
    stock_losses,
    switching_best_losses,
)
from dponline.environments.bandit_linear import BanditLinearEnvironment
from dponline.environments.contextual import DigitsBandit, SyntheticGLMBandit
from dponline.environments.linear import LinearLossEnvironment
from dponline.environments.streams import LinearRegressionStream
from dponline.online.ftpl import DPFTPL
from dponline.online.ftrl import DPFTRL, EuclideanBall, EuclideanCube
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import Learner
from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe
from dponline.stochastic.private_frank_wolfe import PrivateStreamingFrankWolfe

__all__ = [
    "ENVIRONMENTS",
    "LEARNERS",
    "EnvironmentEntry",
    "LearnerEntry",
    "build_environment",
    "build_learner",
]


@dataclass(frozen=True)
class LearnerEntry:
    """A learner the runner can build from a name and options."""

    name: str
    factory: Callable[..., Learner]
    paper: str
    setting: str
    guarantee: str
    calibrations: tuple[str, ...]
    private: bool
    options: dict[str, str] = field(default_factory=dict)
    #: Environment settings (``EnvironmentEntry.setting``) the learner can run in.
    environments: tuple[str, ...] = ("experts",)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "paper": self.paper,
            "setting": self.setting,
            "guarantee": self.guarantee,
            "calibrations": list(self.calibrations),
            "private": self.private,
            "options": dict(self.options),
            "environments": list(self.environments),
        }


def _without_noise(factory: Callable[..., Learner]) -> Callable[..., Learner]:
    """The non-private counterpart of a private learner's factory (epsilon=None)."""

    def build(env: Any, **kw: Any) -> Learner:
        return factory(env, **{**kw, "epsilon": None, "calibration": "tight"})

    return build


def _budget(kw: dict[str, Any], delta: float) -> PrivacyBudget | None:
    """Pop the runner's (epsilon, calibration, allow_weaker) and the learner's delta option from
    ``kw`` and build the budget (``None`` for epsilon=None, the non-private counterpart)."""
    epsilon = kw.pop("epsilon")
    calibration = kw.pop("calibration")
    allow_weaker = bool(kw.pop("allow_weaker", False))
    delta = float(kw.pop("delta", delta))
    if epsilon is None:
        return None
    return PrivacyBudget(epsilon, delta, calibration, allow_weaker=allow_weaker)


def _ftrl_geometry(env: Any) -> dict[str, Any]:
    """Decision set and loss set of Agarwal & Singh's Corollary 3.2 for an environment."""
    domain = getattr(env, "domain", "simplex")
    if domain == "ball":  # OLO over the sphere: losses in the unit l2 ball
        return {"domain": EuclideanBall(env.radius), "loss_bounds": NormBall(1.0, 2, env.dim)}
    if domain == "cube":  # OLO over the cube: losses in the unit l1 ball (||Y||_1 = 1)
        return {"domain": EuclideanCube(), "loss_bounds": NormBall(1.0, 1, env.dim)}
    return {}


# Every factory takes (env, *, epsilon, calibration, replicas, rng, **options); those four
# keywords are the learners' own constructor keywords, so they pass straight through.


def _dp_ftrl(env: Any, **kw: Any) -> Learner:
    noise = kw.pop("noise", "laplace")
    budget = _budget(kw, 0.0 if noise == "laplace" else 1e-6)
    return DPFTRL(env.dim, env.horizon, budget=budget, noise=noise, **_ftrl_geometry(env), **kw)


def _dp_ftpl(env: Any, **kw: Any) -> Learner:
    return DPFTPL(
        env.dim,
        env.horizon,
        budget=_budget(kw, 1e-6),
        domain=getattr(env, "domain", "simplex"),
        radius=getattr(env, "radius", 1.0),
        **kw,
    )


def _dp_scrible(env: Any, **kw: Any) -> Learner:
    return DPSCRiBLe(env.barrier, env.horizon, budget=_budget(kw, 0.0), **kw)


def _dp_exp2(env: Any, **kw: Any) -> Learner:
    return DPEXP2(env.dim, env.horizon, budget=_budget(kw, 0.0), **kw)


def _private_fw(env: Any, *, p: float = 1.5, **kw: Any) -> Learner:
    """Algorithm 2 for p = 1, Algorithm 1 otherwise, with the stream's input bounds."""
    p = float(p)
    budget = _budget(kw, 1.0 / env.horizon)
    if p == 1.0:
        return NoisyMinFrankWolfe(
            env.dim,
            env.horizon,
            x_bound=env.x_bound(np.inf),
            y_bound=env.y_bound,
            budget=budget,
            **kw,
        )
    ball = LpBall(env.dim, p)
    return PrivateStreamingFrankWolfe(
        ball, env.horizon, x_bound=env.x_bound(ball.q), y_bound=env.y_bound, budget=budget, **kw
    )


def _dp_glm_bandit(env: Any, **kw: Any) -> Learner:
    """Algorithm 3 with the environment's reward range, link and (synthetic) h_sub."""
    budget = _budget(kw, 1.0 / env.horizon)
    kw.setdefault("link", getattr(env, "link", "logistic"))
    kw.setdefault("h_sub", getattr(env, "h_sub", 0.05))
    kw.setdefault("radius", getattr(env, "radius", 1.0))
    return DPGLMBandit(
        env.dim,
        env.arms,
        env.horizon,
        reward_range=env.reward_range,
        budget=budget,
        **kw,
    )


LEARNERS: dict[str, LearnerEntry] = {
    e.name: e
    for e in (
        LearnerEntry(
            "dp-ftrl",
            _dp_ftrl,
            paper="Agarwal & Singh (2017), Algorithm 1 with Algorithm 2 (tree aggregation)",
            setting="experts; online linear optimisation over the ball or cube (full information)",
            guarantee=(
                "event-level epsilon-DP (Laplace, Theorem 3.1) or (epsilon, delta)-DP "
                "(Gaussian, Theorem A.1) over loss sequences differing in one round, "
                "for losses in [0, 1]^N (experts), the unit l2 ball (ball) or the unit l1 "
                "ball (cube)"
            ),
            calibrations=("paper", "tight"),
            private=True,
            environments=("experts", "online linear optimisation"),
            options={
                "noise": "laplace | gaussian",
                "delta": "for gaussian (default 1e-6)",
                "mechanism": "continual counter (default: padded_tree paper, honaker tight)",
                "eta": "learning rate (default sqrt(log N / T))",
            },
        ),
        LearnerEntry(
            "dp-ftpl",
            _dp_ftpl,
            paper="Agarwal & Singh (2017), Algorithm 3 (FTPL with tree aggregation), Theorem 3.5",
            setting="experts; online linear optimisation over the ball or cube",
            guarantee=(
                "event-level (epsilon, delta)-DP (Gaussian tree noise, Theorem 3.5 and A.1) over "
                "loss sequences differing in one round"
            ),
            calibrations=("paper", "tight"),
            private=True,
            environments=("experts", "online linear optimisation"),
            options={"delta": "default 1e-6", "mechanism": "continual counter"},
        ),
        LearnerEntry(
            "ftpl",
            _without_noise(_dp_ftpl),
            paper="Follow-the-Perturbed-Leader with Gaussian perturbations (Abernethy et al. "
            "2014); the non-private counterpart of dp-ftpl (Theorem 3.5's regret term only)",
            setting="experts; online linear optimisation over the ball or cube",
            guarantee="none (non-private reference)",
            calibrations=(),
            private=False,
            environments=("experts", "online linear optimisation"),
        ),
        LearnerEntry(
            "dp-frank-wolfe",
            _private_fw,
            paper="Han et al., Algorithm 1 (1 < p <= inf, tree with generalized Gaussian noise) "
            "and Algorithm 2 (p = 1, report-noisy-min)",
            setting="streaming stochastic convex optimisation (squared loss, l_p ball)",
            guarantee=(
                "(epsilon, delta)-DP (default delta = 1/T) for every released iterate, over "
                "datasets differing in one sample (continual release)"
            ),
            calibrations=("paper", "tight"),
            private=True,
            environments=("stochastic optimisation",),
            options={"p": "the l_p ball (default 1.5; 1 runs Algorithm 2)", "delta": "1/T"},
        ),
        LearnerEntry(
            "frank-wolfe",
            _without_noise(_private_fw),
            paper="Streaming Frank-Wolfe with recursive gradients (Xie et al. 2020); the "
            "non-private counterpart of dp-frank-wolfe",
            setting="streaming stochastic convex optimisation (squared loss, l_p ball)",
            guarantee="none (non-private reference)",
            calibrations=(),
            private=False,
            environments=("stochastic optimisation",),
            options={"p": "the l_p ball (default 1.5)"},
        ),
        LearnerEntry(
            "dp-glm-bandit",
            _dp_glm_bandit,
            paper="Han et al., Algorithm 3 (forced sampling, pre-selection, greedy choice, "
            "synthetic updates, Algorithm 2 per arm), Theorem 4.6",
            setting="contextual generalized linear bandit (linear or logistic link)",
            guarantee=(
                "(epsilon, delta)-joint DP (default delta = 1/T) over user streams differing "
                "in one user's context and rewards, for ||x||_inf <= 1 and rewards in the "
                "environment's range"
            ),
            calibrations=("paper", "tight"),
            private=True,
            environments=("contextual bandit",),
            options={
                "warmup": "t_0 per arm (default log(dT) log(T) / epsilon^2)",
                "h_sub": "pre-selection gap (default: the environment's)",
                "link": "linear | logistic (default: the environment's)",
            },
        ),
        LearnerEntry(
            "glm-bandit",
            _without_noise(_dp_glm_bandit),
            paper="Han et al., Algorithm 3 without noise (the forced-sampling greedy GLM bandit "
            "of Bastani & Bayati 2020 with Frank-Wolfe estimators); the non-private "
            "counterpart of dp-glm-bandit",
            setting="contextual generalized linear bandit (linear or logistic link)",
            guarantee="none (non-private reference)",
            calibrations=(),
            private=False,
            environments=("contextual bandit",),
            options={"warmup": "t_0 per arm", "h_sub": "pre-selection gap"},
        ),
        LearnerEntry(
            "dp-exp2",
            _dp_exp2,
            paper="Agarwal & Singh (2017), Algorithm 4 (noisy-loss reduction) around "
            "Algorithm 5 (EXP2 with uniform exploration), parameters of Theorem 4.1",
            setting="multi-armed bandit",
            guarantee=(
                "event-level epsilon-DP (Laplace on each observed loss, Lemma 4.2) over loss "
                "sequences differing in one round, for losses in [0, 1]"
            ),
            calibrations=("paper", "tight"),
            private=True,
            environments=("bandit",),
            options={
                "eta": "learning rate (default: Theorem 4.1)",
                "gamma": "exploration (default: Theorem 4.1)",
            },
        ),
        LearnerEntry(
            "dp-scrible",
            _dp_scrible,
            paper="Agarwal & Singh (2017), Algorithm 4 around SCRiBLe (Abernethy, Hazan & "
            "Rakhlin 2012), Theorem 4.5",
            setting="bandit linear optimisation over a set with a self-concordant barrier",
            guarantee=(
                "event-level epsilon-DP (Laplace on the observed loss value, Lemma 4.2) over "
                "loss sequences differing in one round, for losses in the unit l2 ball"
            ),
            calibrations=("paper", "tight"),
            private=True,
            environments=("bandit linear optimisation",),
            options={"eta": "step (default: Theorem 4.5)"},
        ),
        LearnerEntry(
            "scrible",
            _without_noise(_dp_scrible),
            paper="SCRiBLe (Abernethy, Hazan & Rakhlin 2012); the non-private counterpart of "
            "dp-scrible",
            setting="bandit linear optimisation over a set with a self-concordant barrier",
            guarantee="none (non-private reference)",
            calibrations=(),
            private=False,
            environments=("bandit linear optimisation",),
            options={"eta": "step (default: Theorem 4.5 at lambda = 0)"},
        ),
        LearnerEntry(
            "exp2",
            _without_noise(_dp_exp2),
            paper="EXP2 with uniform exploration (Bubeck et al. 2012); the non-private "
            "counterpart of dp-exp2",
            setting="multi-armed bandit",
            guarantee="none (non-private reference)",
            calibrations=(),
            private=False,
            environments=("bandit",),
            options={"eta": "learning rate", "gamma": "exploration"},
        ),
        LearnerEntry(
            "ftrl",
            _without_noise(_dp_ftrl),
            paper="Follow-the-Regularized-Leader with entropy (Hedge); the non-private "
            "counterpart of dp-ftrl",
            setting="experts; online linear optimisation over the ball or cube",
            guarantee="none (non-private reference)",
            calibrations=(),
            private=False,
            environments=("experts", "online linear optimisation"),
            options={"eta": "learning rate (default sqrt(log N / T))"},
        ),
    )
}


@dataclass(frozen=True)
class EnvironmentEntry:
    name: str
    build: Callable[..., Any]
    setting: str
    description: str


def _horizon_cut(losses: np.ndarray, horizon: int | None) -> np.ndarray:
    if horizon is None:
        return losses
    if horizon > len(losses):
        raise ValueError(f"horizon {horizon} exceeds the {len(losses)} rounds of the data")
    return losses[:horizon]


ENVIRONMENTS: dict[str, EnvironmentEntry] = {
    e.name: e
    for e in (
        EnvironmentEntry(
            "stocks",
            lambda horizon, rng, dataset="nyse_o", scale=0.1: ExpertsEnvironment(
                _horizon_cut(stock_losses(dataset, scale), horizon), name=f"stocks:{dataset}"
            ),
            "experts",
            "real data: each stock is an expert; loss from its daily return "
            "(NYSE (O) or DJIA, shipped with dponline)",
        ),
        EnvironmentEntry(
            "alternating",
            lambda horizon, rng, n_experts=10: ExpertsEnvironment(
                alternating_losses(horizon, n_experts), name="alternating"
            ),
            "experts",
            "the adversary that defeats Follow-the-Leader",
        ),
        EnvironmentEntry(
            "switching_best",
            lambda horizon, rng, n_experts=10, switches=4, gap=0.2: ExpertsEnvironment(
                switching_best_losses(horizon, n_experts, switches, gap, rng), name="switching_best"
            ),
            "experts",
            "Bernoulli losses whose best expert changes several times",
        ),
        EnvironmentEntry(
            "stochastic",
            lambda horizon, rng, n_experts=10, gap=0.1: ExpertsEnvironment(
                stochastic_losses(horizon, np.r_[0.5 - gap, np.full(n_experts - 1, 0.5)], rng),
                name="stochastic",
            ),
            "experts",
            "i.i.d. Bernoulli losses, one expert better by `gap`",
        ),
        EnvironmentEntry(
            "linear",
            lambda horizon, rng, dim=5, domain="ball", drift=0.3: LinearLossEnvironment(
                _drifting_losses(horizon, dim, domain, drift, rng),
                domain=domain,
                name=f"linear:{domain}",
            ),
            "online linear optimisation",
            "random loss vectors with a drift, in the unit l2 (ball) or l1 (cube) ball",
        ),
        EnvironmentEntry(
            "stock_bandit",
            lambda horizon, rng, dataset="djia", scale=0.1: BanditEnvironment(
                _horizon_cut(stock_losses(dataset, scale), horizon), name=f"stock_bandit:{dataset}"
            ),
            "bandit",
            "real data: each stock is an arm",
        ),
        EnvironmentEntry(
            "bandit_linear",
            lambda horizon, rng, dim=3, domain="ball", drift=0.3: BanditLinearEnvironment(
                _drifting_losses(horizon, dim, "ball", drift, rng),
                BallBarrier(dim) if domain == "ball" else BoxBarrier(dim),
                name=f"bandit_linear:{domain}",
            ),
            "bandit linear optimisation",
            "drifting random losses in the unit l2 ball, decisions in the unit ball or the "
            "cube [-1, 1]^dim, bandit feedback",
        ),
        EnvironmentEntry(
            "regression_stream",
            lambda horizon, rng, dim=5, noise=0.1: LinearRegressionStream(
                np.r_[0.5, -0.3, np.zeros(dim - 2)] if dim >= 2 else np.array([0.5]),
                horizon,
                noise=noise,
                rng=rng,
            ),
            "stochastic optimisation",
            "x uniform on [-1, 1]^dim, y = <x, theta*> + uniform noise; regret = cumulative "
            "excess risk (exact)",
        ),
        EnvironmentEntry(
            "glm_bandit",
            lambda horizon, rng, dim=10, link="logistic", noise=0.5: SyntheticGLMBandit(
                dim, horizon or 10_000, link=link, noise=noise, rng=rng
            ),
            "contextual bandit",
            "3 sparse GLM arms in R^dim (one never optimal), contexts (1, U[-1, 1]^(dim-1)), "
            "logistic (Bernoulli) or linear (uniform noise) rewards; meets Assumptions 4.2-4.5",
        ),
        EnvironmentEntry(
            "digits_bandit",
            lambda horizon, rng: DigitsBandit(horizon or 10_000, rng=rng),
            "contextual bandit",
            "real data: UCI handwritten digits (shipped), arms = the 10 digits, reward 1 for "
            "the right one; regret = mistakes",
        ),
        EnvironmentEntry(
            "bernoulli_bandit",
            lambda horizon, rng, n_arms=10, gap=0.1: StochasticBandit(
                np.r_[0.5 - gap, np.full(n_arms - 1, 0.5)], horizon, rng
            ),
            "bandit",
            "Bernoulli arms, one better by `gap`",
        ),
    )
}


def _drifting_losses(
    horizon: int, dim: int, domain: str, drift: float, rng: np.random.Generator
) -> np.ndarray:
    """Gaussian vectors around a fixed drift, rescaled into the unit l2 (ball) or l1 (cube)
    ball so they meet dp-ftrl's declared loss set."""
    direction = np.ones(dim) / np.sqrt(dim)
    raw = drift * direction + rng.normal(size=(horizon, dim)) / np.sqrt(dim)
    p = 2 if domain == "ball" else 1
    norms = np.linalg.norm(raw, ord=p, axis=1, keepdims=True)
    return raw / np.maximum(norms * (1.0 + 1e-12), 1.0)  # strictly inside despite rounding


def build_learner(name: str, env: Any, **kwargs: Any) -> Learner:
    if name not in LEARNERS:
        raise ValueError(f"unknown learner {name!r}; expected one of {sorted(LEARNERS)}")
    return LEARNERS[name].factory(env, **kwargs)


def build_environment(
    name: str, horizon: int | None, rng: np.random.Generator, **options: Any
) -> Any:
    if name not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {name!r}; expected one of {sorted(ENVIRONMENTS)}")
    try:
        return ENVIRONMENTS[name].build(horizon, rng, **options)
    except TypeError as exc:
        raise ValueError(f"bad options for environment {name!r}: {exc}") from None
