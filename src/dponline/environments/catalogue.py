"""Every named environment the runner can build (``[[environments]]`` in a spec), with the
feedback it gives and the action space it accepts, which is how specs pair it with learners
(:meth:`dponline.registry.LearnerEntry.runs_in`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dponline.environments.bandit_convex import bandit_convex, make_domain
from dponline.environments.bandit_linear import BanditLinearEnvironment
from dponline.environments.bandits import BanditEnvironment, StochasticBandit
from dponline.environments.base import Environment
from dponline.environments.contextual import DigitsBandit, SyntheticGLMBandit
from dponline.environments.expert_advice import (
    ExpertAdviceBandit,
    arm_experts,
    informed_expert_advice,
    random_advice,
)
from dponline.environments.experts import (
    ExpertsEnvironment,
    alternating_losses,
    stochastic_losses,
    switching_best_losses,
)
from dponline.environments.k_armed import build_k_armed
from dponline.environments.linear import LinearLossEnvironment, drifting_losses
from dponline.environments.lipschitz import lipschitz_low_dim, stock_portfolio_low_dim
from dponline.environments.lp_regression import LpRegressionStream
from dponline.environments.open_bandit import open_bandit_arms
from dponline.environments.own_data import bandit_losses, expert_losses, horizon_cut
from dponline.environments.real import stock_basket, stock_losses, stock_tree
from dponline.environments.smooth_convex import digits_logistic, smooth_convex
from dponline.environments.smooth_samples import smooth_convex_samples
from dponline.environments.streams import LinearRegressionStream
from dponline.privacy.bounds import NormBall
from dponline.protocol import FeedbackKind
from dponline.spelling import did_you_mean

__all__ = ["ENVIRONMENTS", "EnvironmentEntry", "build_environment"]


@dataclass(frozen=True)
class EnvironmentEntry:
    """A named environment: ``build(horizon, rng, **options)``, the feedback it gives and the
    action space it accepts. An environment offering several action spaces chooses one by an
    option: ``action_space_option = (option name, default)``, the option's value naming the
    space (``linear`` with ``domain = "cube"`` accepts points of the cube)."""

    name: str
    build: Callable[..., Environment]
    feedback_kind: FeedbackKind
    action_space: str | tuple[str, ...]
    description: str
    action_space_option: tuple[str, str] | None = None
    #: whether the environment built with these options gives experts' advice (a bandit with
    #: expert advice, whose regret is against its experts); None: never
    gives_advice: Callable[[Mapping[str, Any]], bool] | None = None

    def advice_given(self, options: Mapping[str, Any]) -> bool:
        """Whether the environment built with ``options`` gives experts' advice."""
        return self.gives_advice is not None and bool(self.gives_advice(options))

    @property
    def action_spaces(self) -> tuple[str, ...]:
        """Every action space the environment can be built for."""
        a = self.action_space
        return (a,) if isinstance(a, str) else tuple(a)

    def action_space_for(self, options: Mapping[str, Any]) -> str:
        """The action space of the environment built with ``options``."""
        if self.action_space_option is None:
            return self.action_spaces[0]
        key, default = self.action_space_option
        value = options.get(key, default)
        if value not in self.action_spaces:
            raise ValueError(
                f"environment {self.name!r}: option {key!r} must be one of "
                f"{list(self.action_spaces)}, got {value!r}"
            )
        return str(value)


def _stock_bandit(
    horizon: int | None,
    rng: np.random.Generator,
    dataset: str = "djia",
    scale: float = 0.1,
    random_experts: int = 0,
    advice_seed: int = 0,
) -> BanditEnvironment:
    """Each stock an arm; with ``random_experts`` M > 0 a bandit with expert advice: the arm
    experts (one per stock) and M Dirichlet(1) experts drawn up front from ``advice_seed``,
    independent of the losses (the advice is public)."""
    losses = horizon_cut(stock_losses(dataset, scale), horizon)
    name = f"stock_bandit:{dataset}"
    if isinstance(random_experts, bool) or not isinstance(random_experts, (int, np.integer)):
        raise ValueError(f"random_experts must be an integer >= 0, got {random_experts!r}")
    if random_experts < 0:
        raise ValueError(f"random_experts must be an integer >= 0, got {random_experts!r}")
    if random_experts == 0:
        return BanditEnvironment(losses, name=name)
    t, k = losses.shape
    advice = np.concatenate(
        [arm_experts(t, k), random_advice(t, int(random_experts), k, advice_seed)], axis=1
    )
    return ExpertAdviceBandit(losses, name=f"{name}+experts", advice=advice)


def _linear(
    horizon: int, rng: np.random.Generator, dim: int = 5, domain: str = "ball", drift: float = 0.3
) -> LinearLossEnvironment:
    """Agarwal & Singh's Corollary 3.2 geometries, named by the option ``domain`` (user
    input, mapped to a domain object here and only here): the unit Euclidean ball with losses
    in the unit l2 ball, or the cube [-1, 1]^dim with losses in the unit l1 ball."""
    if domain not in ("ball", "cube"):
        raise ValueError(f"domain must be 'ball' or 'cube', got {domain!r}")
    return LinearLossEnvironment(
        drifting_losses(horizon, dim, domain, drift, rng),
        make_domain("ball" if domain == "ball" else "box", dim),
        loss_bounds=NormBall(1.0, 2 if domain == "ball" else 1, dim),
        name=f"linear:{domain}",
    )


def _bandit_linear(
    horizon: int, rng: np.random.Generator, dim: int = 3, domain: str = "ball", drift: float = 0.3
) -> BanditLinearEnvironment:
    """Losses in the unit l2 ball over the unit Euclidean ball or the cube [-1, 1]^dim (the
    option ``domain``, mapped to a domain object here and only here), both with barriers."""
    if domain not in ("ball", "box"):
        raise ValueError(f"domain must be 'ball' or 'box', got {domain!r}")
    return BanditLinearEnvironment(
        drifting_losses(horizon, dim, "ball", drift, rng),
        make_domain(domain, dim),
        loss_bounds=NormBall(1.0, 2, dim),
        name=f"bandit_linear:{domain}",
    )


ENVIRONMENTS: dict[str, EnvironmentEntry] = {
    e.name: e
    for e in (
        EnvironmentEntry(
            "stocks",
            lambda horizon, rng, dataset="nyse_o", scale=0.1: ExpertsEnvironment(
                horizon_cut(stock_losses(dataset, scale), horizon), name=f"stocks:{dataset}"
            ),
            FeedbackKind.LOSS_VECTOR,
            "simplex",
            "real data: each stock is an expert; loss from its daily return "
            "(dataset = nyse_o | djia, shipped with dponline)",
        ),
        EnvironmentEntry(
            "alternating",
            lambda horizon, rng, n_experts=10: ExpertsEnvironment(
                alternating_losses(horizon, n_experts), name="alternating"
            ),
            FeedbackKind.LOSS_VECTOR,
            "simplex",
            "the adversary that defeats Follow-the-Leader",
        ),
        EnvironmentEntry(
            "switching_best",
            lambda horizon, rng, n_experts=10, switches=4, gap=0.2: ExpertsEnvironment(
                switching_best_losses(horizon, n_experts, switches, gap, rng), name="switching_best"
            ),
            FeedbackKind.LOSS_VECTOR,
            "simplex",
            "Bernoulli losses whose best expert changes several times",
        ),
        EnvironmentEntry(
            "stochastic",
            lambda horizon, rng, n_experts=10, gap=0.1: ExpertsEnvironment(
                stochastic_losses(horizon, np.r_[0.5 - gap, np.full(n_experts - 1, 0.5)], rng),
                name="stochastic",
            ),
            FeedbackKind.LOSS_VECTOR,
            "simplex",
            "i.i.d. Bernoulli losses, one expert better by `gap`",
        ),
        EnvironmentEntry(
            "linear",
            _linear,
            FeedbackKind.LOSS_VECTOR,
            ("ball", "cube"),
            "random loss vectors with a drift, in the unit l2 (ball) or l1 (cube) ball",
            action_space_option=("domain", "ball"),
        ),
        EnvironmentEntry(
            "stock_bandit",
            _stock_bandit,
            FeedbackKind.BANDIT,
            "arms",
            "real data: each stock is an arm (dataset = djia | nyse_o); random_experts = M > 0 "
            "adds experts' advice: one expert per stock and M Dirichlet(1) ones drawn from "
            "advice_seed (public, fixed in advance; regret against the best expert)",
            gives_advice=lambda options: options.get("random_experts", 0) not in (0, None, False),
        ),
        EnvironmentEntry(
            "bandit_linear",
            _bandit_linear,
            FeedbackKind.BANDIT,
            "barrier set",
            "drifting random losses in the unit l2 ball, decisions in the unit ball or the "
            "cube [-1, 1]^dim (domain = ball | box), bandit feedback",
        ),
        EnvironmentEntry(
            "bandit_convex",
            bandit_convex,
            FeedbackKind.BANDIT,
            "oracle set",
            "linear, quadratic, absolute-value or hinge losses (losses = linear | quadratic | "
            "absolute | hinge) around a random "
            "direction, over a set with a linear minimisation oracle (domain = simplex | box | "
            "ball | k_subsets | grid_paths), bandit feedback",
        ),
        EnvironmentEntry(
            "stock_basket",
            lambda horizon, rng, dataset="nyse_o", k=5, scale=0.1: stock_basket(
                horizon, dataset, k, scale
            ),
            FeedbackKind.BANDIT,
            "oracle set",
            "real data: choose k stocks a day (uniform matroid) from the basket's loss alone",
        ),
        EnvironmentEntry(
            "stock_tree",
            lambda horizon, rng, dataset="djia", stocks=15, scale=0.05: stock_tree(
                horizon, dataset, stocks, scale
            ),
            FeedbackKind.BANDIT,
            "oracle set",
            "real data: choose a spanning tree of stocks a day (graphic matroid, 105 edges) "
            "from the tree's loss alone: edges cost how far two stocks' returns diverge",
        ),
        EnvironmentEntry(
            "regression_stream",
            lambda horizon, rng, dim=5, noise=0.1: LinearRegressionStream(
                np.r_[0.5, -0.3, np.zeros(dim - 2)] if dim >= 2 else np.array([0.5]),
                horizon,
                noise=noise,
                rng=rng,
            ),
            FeedbackKind.SAMPLE,
            "l_p ball",
            "x uniform on [-1, 1]^dim, y = <x, theta*> + uniform noise; regret = cumulative "
            "excess risk (exact)",
        ),
        EnvironmentEntry(
            "lp_regression",
            lambda horizon, rng, dim=5, p=1.5, n_validation=10_000, n_test=10_000: (
                LpRegressionStream(dim, horizon, p, rng, n_validation=n_validation, n_test=n_test)
            ),
            FeedbackKind.SAMPLE,
            "l_p ball",
            "Han et al. (2024) App. C: x ~ N(0, 0.05^2 I) rescaled to ||x||_q = 1, y = <x, "
            "theta*> + N(0, 0.05^2), loss = test SubOpt; validation and test sets held out",
        ),
        EnvironmentEntry(
            "glm_bandit",
            lambda horizon, rng, dim=10, link="logistic", noise=0.5: SyntheticGLMBandit(
                dim, horizon or 10_000, link=link, noise=noise, rng=rng
            ),
            FeedbackKind.CONTEXTUAL_BANDIT,
            "contextual arms",
            "3 sparse GLM arms in R^dim (one never optimal), contexts (1, U[-1, 1]^(dim-1)), "
            "logistic (Bernoulli) or linear (uniform noise) rewards; meets Assumptions 4.2-4.5",
        ),
        EnvironmentEntry(
            "digits_bandit",
            lambda horizon, rng: DigitsBandit(horizon or 10_000, rng=rng),
            FeedbackKind.CONTEXTUAL_BANDIT,
            "contextual arms",
            "real data: UCI handwritten digits (shipped), arms = the 10 digits, reward 1 for "
            "the right one; regret = mistakes",
        ),
        EnvironmentEntry(
            "smooth_convex",
            smooth_convex,
            FeedbackKind.LOSS_FUNCTION,
            "barrier set",
            "smooth convex GLM losses (losses = logistic | squared | huber) around a random "
            "direction, decisions in the ball or the box (domain = ball | box) of `radius`; "
            "`curvature` > 0 adds lam ||x||^2 / 2 (strongly convex); kind = stochastic | "
            "adversarial (the direction flips on blocks of doubling length); full information",
        ),
        EnvironmentEntry(
            "smooth_convex_samples",
            smooth_convex_samples,
            FeedbackKind.SAMPLE,
            "l_p ball",
            "the stream of smooth_convex (same options) over the unit Euclidean ball as samples "
            "(v_t, y_t) for streaming optimisers, scored by its losses l_t: built from the same "
            "generator, it holds smooth_convex's data",
        ),
        EnvironmentEntry(
            "digits_logistic",
            lambda horizon, rng, radius=5.0, pool=8: digits_logistic(
                horizon, rng, radius=radius, pool=pool
            ),
            FeedbackKind.LOSS_FUNCTION,
            "barrier set",
            "real data: online logistic regression on the shipped handwritten digits (64 "
            "pixels, digits 0-4 against 5-9; `pool` = 8 keeps the 64 pixels, 4 | 2 | 1 averages "
            "them into 16 | 4 | 1 features), "
            "decisions in a Euclidean ball; full information",
        ),
        EnvironmentEntry(
            "lipschitz_low_dim",
            lipschitz_low_dim,
            FeedbackKind.LOSS_FUNCTION,
            "box (1-2D)",
            "non-convex Lipschitz losses G min_j ||x - c_j|| on [0, 1]^dim (dim = 1 | 2), "
            "kind = stochastic | adversarial; full information",
        ),
        EnvironmentEntry(
            "stock_portfolio_low_dim",
            stock_portfolio_low_dim,
            FeedbackKind.LOSS_FUNCTION,
            "box (1-2D)",
            "real data: -log wealth of a portfolio of dim + 1 NYSE stocks parametrised by "
            "[0, 1]^dim (dim = 1 | 2; non-convex in 2D); full information",
        ),
        EnvironmentEntry(
            "bernoulli_bandit",
            lambda horizon, rng, n_arms=10, gap=0.1: StochasticBandit(
                np.r_[0.5 - gap, np.full(n_arms - 1, 0.5)], horizon, rng
            ),
            FeedbackKind.BANDIT,
            "arms",
            "Bernoulli arms, one better by `gap` (losses 0.5 - gap and 0.5; pseudo-regret): "
            "the first family; k_armed has it and more (families, chosen instances, the "
            "K-armed fast path)",
        ),
        EnvironmentEntry(
            "k_armed",
            build_k_armed,
            FeedbackKind.BANDIT,
            "arms",
            "stochastic K-armed bandit: family = bernoulli | beta | gaussian (clipped to [0, 1]); "
            "means, or instance = two_level (the default: best arm 0.9, the others 0.8) | "
            "unequal_gaps (0.5 up to 0.9) (both over arms = K, default 10, the best arm last) | "
            "azize_basu (its five arms); feedback 1 - reward, regret = exact pseudo-regret",
        ),
        EnvironmentEntry(
            "switching_bandit",
            lambda horizon, rng, n_arms=10, switches=4, gap=0.2: BanditEnvironment(
                switching_best_losses(horizon, n_arms, switches, gap, rng),
                name="switching bandit",
            ),
            FeedbackKind.BANDIT,
            "arms",
            "adversarial (oblivious) bandit: Bernoulli losses whose best arm changes `switches` "
            "times (means 0.5 and 0.5 - gap); regret against the best fixed arm",
        ),
        EnvironmentEntry(
            "open_bandit_arms",
            lambda horizon, rng, position=None, items=None: open_bandit_arms(
                horizon or 10_000, rng, position=position, items=items
            ),
            FeedbackKind.BANDIT,
            "arms",
            "real data: the Open Bandit Dataset's 80 items (ZOZOTOWN, uniformly logged sample, "
            "shipped) as Bernoulli arms at their measured click rates (0 to 2.6%; positions "
            "pooled, or position = 1 | 2 | 3; items = a count or ids); loss = 1 - click; "
            "simulated clicks, so any horizon (10,000 when none is given)",
        ),
        EnvironmentEntry(
            "bandit_losses",
            bandit_losses,
            FeedbackKind.BANDIT,
            "arms",
            "your own adversarial bandit: losses (T, K) in [0, 1] from the file path (.npy or "
            ".csv), with the experts' advice (T, N, K, .npy) from the file advice when given; "
            "a spec records each file's SHA-256",
            gives_advice=lambda options: options.get("advice") is not None,
        ),
        EnvironmentEntry(
            "expert_losses",
            expert_losses,
            FeedbackKind.LOSS_VECTOR,
            "simplex",
            "your own experts: losses (T, N) in [0, 1] from the file path (.npy or .csv), seen "
            "in full; a spec records the file's SHA-256",
        ),
        EnvironmentEntry(
            "expert_advice",
            lambda horizon, rng, n_arms=10, n_experts=20, switches=4, gap=0.2, accuracy=0.8: (
                informed_expert_advice(horizon, rng, n_arms, n_experts, switches, gap, accuracy)
            ),
            FeedbackKind.BANDIT,
            "arms",
            "bandit with expert advice: switching Bernoulli losses, an informed expert, the K "
            "arm experts and Dirichlet experts (advice public, fixed in advance); regret against "
            "the best expert",
            gives_advice=lambda options: True,
        ),
    )
}


def build_environment(
    name: str, horizon: int | None, rng: np.random.Generator, **options: Any
) -> Environment:
    """Build the environment ``name`` for ``horizon`` rounds (``None``: all of a real data
    set) from ``rng`` and its options; unknown names and bad options are ValueErrors."""
    if name not in ENVIRONMENTS:
        raise ValueError(
            f"unknown environment {name!r}{did_you_mean(name, ENVIRONMENTS)}; expected one of "
            f"{sorted(ENVIRONMENTS)}"
        )
    entry = ENVIRONMENTS[name]
    entry.action_space_for(options)  # an option naming an action space must name one
    check_environment_options(name, options)
    try:  # the options against the builder's signature; its own errors pass through
        inspect.signature(entry.build).bind(horizon, rng, **options)
    except TypeError as exc:
        raise ValueError(f"bad options for environment {name!r}: {exc}") from None
    return entry.build(horizon, rng, **options)


def check_environment_options(name: str, options: Mapping[str, Any]) -> None:
    """Refuse an option the environment ``name``'s builder does not take (ValueError naming
    it, the closest name and the environment's options), and a required one missing (a file
    of one's own), before anything is built."""
    parameters = inspect.signature(ENVIRONMENTS[name].build).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return  # the builder takes any option: its own errors say what is wrong
    valid = list(parameters)[2:]
    for option in options:
        if option not in valid:
            raise ValueError(
                f"environment {name!r} has no option {option!r}"
                f"{did_you_mean(option, valid)}; its options: {', '.join(valid) or 'none'}"
            )
    missing = [
        p for p in valid if parameters[p].default is inspect.Parameter.empty and p not in options
    ]
    if missing:
        raise ValueError(
            f"environment {name!r} needs the option {', '.join(repr(p) for p in missing)} "
            f"(dponline environments {name})"
        )
