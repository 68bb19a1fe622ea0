"""Environments: exact regret by hand, adversaries, validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dponline.environments import (
    BanditEnvironment,
    Environment,
    ExpertsEnvironment,
    StochasticBandit,
    alternating_losses,
    stochastic_losses,
    stock_losses,
    switching_best_losses,
)
from dponline.environments.catalogue import ENVIRONMENTS, build_environment
from dponline.experiments.checkpoints import load_state, save_state
from dponline.protocol import FeedbackKind, LossFunctionFeedback
from tests.helpers import catalogue_environment


def test_experts_regret_by_hand():
    L = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    env = ExpertsEnvironment(L)
    p = np.array([[0.5, 0.5]])
    cum = np.cumsum([env.round(t, p)[1][0] for t in range(3)])
    np.testing.assert_allclose(cum, [0.5, 1.0, 1.5])
    # best expert in hindsight up to t: expert 1 with 0, 0, 1
    np.testing.assert_allclose(env.best_cumulative_loss(), [0.0, 0.0, 1.0])
    np.testing.assert_allclose(env.regret(cum), [0.5, 1.0, 0.5])


def test_alternating_adversary_defeats_follow_the_leader():
    T = 100
    env = ExpertsEnvironment(alternating_losses(T, 3))
    cum_loss, cum = 0.0, np.zeros(3)
    for t in range(T):
        leader = np.zeros((1, 3))
        leader[0, int(np.argmin(cum))] = 1.0
        fb, loss = env.round(t, leader)
        cum_loss += loss[0]
        cum += fb.loss
    assert env.regret(np.array([cum_loss]))[0] >= T / 2 - 1  # linear regret for FTL


def test_generators_are_reproducible_and_bounded():
    a = switching_best_losses(200, 5, switches=3, rng=4)
    b = switching_best_losses(200, 5, switches=3, rng=4)
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, 1.0}
    s = stochastic_losses(1000, [0.2, 0.5], rng=0)
    assert abs(s[:, 0].mean() - 0.2) < 0.06  # 4.7 sd of a Bernoulli mean: chance ~1e-6
    L = stock_losses("djia")
    assert L.shape == (507, 30) and L.min() >= 0 and L.max() <= 1
    with pytest.raises(ValueError, match="means"):
        stochastic_losses(10, [1.5])


def test_bandit_regret_and_validation():
    env = BanditEnvironment(np.array([[0.2, 0.9], [0.4, 0.1]]))
    fb, loss = env.round(0, np.array([0, 1]))
    np.testing.assert_allclose(loss, [0.2, 0.9])
    np.testing.assert_allclose(fb.loss, [0.2, 0.9])
    # best arm in hindsight: 0.2 after round 1, min(0.6, 1.0) = 0.6 after round 2
    np.testing.assert_allclose(env.regret(np.array([0.9, 1.0])), [0.7, 0.4])
    with pytest.raises(ValueError, match="arm indices"):
        env.round(0, np.array([2]))
    with pytest.raises(ValueError, match="outside the declared"):
        BanditEnvironment(np.array([[2.0]]))


def test_stochastic_bandit_pseudo_regret():
    env = StochasticBandit(np.array([0.3, 0.5]), horizon=10, rng=0)
    _, expected = env.round(0, np.array([1, 0]))
    np.testing.assert_allclose(expected, [0.5, 0.3])
    np.testing.assert_allclose(env.regret(np.array([[0.5, 1.0]])), [[0.2, 0.4]])


def test_experts_environment_rejects_bad_losses():
    with pytest.raises(ValueError, match="outside the declared"):
        ExpertsEnvironment(np.array([[0.0, 1.5]]))
    with pytest.raises(ValueError, match="finite"):
        ExpertsEnvironment(np.array([[0.0, np.nan]]))


def test_linear_regression_stream_excess_risk_is_exact():
    from dponline.environments import LinearRegressionStream

    theta = np.array([0.5, -0.25, 0.0])
    env = LinearRegressionStream(theta, horizon=10, noise=0.2, rng=0)
    x, y = env.sample(400_000)
    probe = np.array([0.1, 0.1, 0.3])
    mc = 0.5 * np.mean((y - x @ probe) ** 2) - 0.5 * np.mean((y - x @ theta) ** 2)
    # Monte Carlo sd of the difference ~ 2e-4 here; 5e-3 is > 20 sd
    assert env.excess_risk(probe) == pytest.approx(mc, abs=5e-3)
    assert env.excess_risk(theta) == 0.0
    fb, risk = env.round(0, np.stack([theta, probe]))
    assert fb.x.shape == (3,) and np.shape(fb.y) == ()
    np.testing.assert_allclose(risk, [0.0, env.excess_risk(probe)])
    state = env.state_dict()
    a = env.sample(3)
    env.load_state_dict(state)
    np.testing.assert_array_equal(env.sample(3)[0], a[0])


def test_linear_losses_best_fixed_decision_by_brute_force():
    from scipy.optimize import linprog

    from dponline.domains import Box, LpBall, Simplex
    from dponline.environments import LinearLossEnvironment
    from dponline.privacy.bounds import NormBall

    L = np.random.default_rng(3).uniform(-1, 1, size=(20, 3))
    cum = np.cumsum(L, axis=0)
    ball = LinearLossEnvironment(L, LpBall(3, 2.0, 2.0))
    cube = LinearLossEnvironment(L, Box(3))
    experts = LinearLossEnvironment(L, Simplex(3))
    for t in (0, 9, 19):
        # the ball: the minimiser is -r L / ||L||; the cube: an LP solved by scipy
        x = -2.0 * cum[t] / np.linalg.norm(cum[t])
        assert ball.regret(np.zeros(20))[t] == pytest.approx(-(x @ cum[t]))
        lp = linprog(cum[t], bounds=[(-1, 1)] * 3)
        assert cube.regret(np.zeros(20))[t] == pytest.approx(-lp.fun)
        assert experts.regret(np.zeros(20))[t] == pytest.approx(-cum[t].min())
    _, loss = ball.round(0, np.ones((2, 3)))
    np.testing.assert_allclose(loss, [L[0].sum()] * 2)
    with pytest.raises(TypeError, match="ConvexDomain"):
        LinearLossEnvironment(L, "ball")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="3 columns"):
        LinearLossEnvironment(L[:, :2], Box(3))
    with pytest.raises(ValueError, match="outside the declared bounds"):
        LinearLossEnvironment(L, Box(3), loss_bounds=NormBall(1.0, 2, 3))


def test_catalogue_maps_set_names_to_domains_once():
    """The linear and bandit_linear options name sets; the builders turn them into domain
    objects and declare the loss sets (Agarwal & Singh Corollary 3.2 and Theorem 4.5), which
    the learners read from the environment."""
    from dponline.domains import Box, LpBall
    from dponline.privacy.bounds import NormBall

    rng = np.random.default_rng(0)
    ball = build_environment("linear", 5, rng, dim=3)
    cube = build_environment("linear", 5, rng, dim=3, domain="cube")
    assert isinstance(ball.domain, LpBall) and ball.domain.p == 2 and ball.domain.radius == 1
    assert isinstance(cube.domain, Box) and cube.loss_bounds == NormBall(1.0, 1, 3)
    assert ball.loss_bounds == NormBall(1.0, 2, 3)
    for name in ("ball", "box"):
        env = build_environment("bandit_linear", 5, rng, dim=3, domain=name)
        assert env.domain.barrier.dim == 3 and env.loss_bounds == NormBall(1.0, 2, 3)
        with pytest.raises(ValueError, match="outside the decision set"):
            env.round(0, np.full((1, 3), 1.5))
    with pytest.raises(ValueError, match="'ball' or 'box'"):
        build_environment("bandit_linear", 5, rng, domain="simplex")


def _action(env: Environment, space: str, t: int, replicas: int = 2) -> np.ndarray:
    """A valid decision for each replica in round t of an environment accepting ``space``."""
    if space == "simplex":
        return np.full((replicas, env.dim), 1.0 / env.dim)
    if space in ("ball", "cube", "barrier set"):
        return np.full((replicas, env.dim), 0.1 * (-1) ** t)  # inside the unit ball and cube
    if space == "l_p ball":
        return np.full((replicas, env.dim), 0.01 * t)
    if space == "box (1-2D)":  # a point of the box [lo, hi]
        return np.broadcast_to(
            env.lo + (0.3 + 0.1 * (t % 3)) * (env.hi - env.lo), (replicas, env.dim)
        ).copy()
    if space in ("arms", "contextual arms"):
        arms = env.arms if space == "contextual arms" else env.dim
        return (np.arange(replicas) + t) % arms
    if space == "oracle set":  # a vertex of the set (its oracle's answer)
        direction = np.cos(np.arange(env.dim) + t)
        return np.broadcast_to(env.domain.lmo(direction), (replicas, env.dim)).copy()
    raise AssertionError(f"no test action for action space {space!r}: add one")


def _play(env: Environment, space: str, rounds: range) -> list[np.ndarray]:
    """Everything the environment reveals: contexts, feedback fields and losses."""
    seen = []
    for t in rounds:
        if env.reveals_context:
            seen.append(np.array(env.context(t)))
        feedback, loss = env.round(t, _action(env, space, t))
        seen.append(np.asarray(loss))
        if isinstance(feedback, LossFunctionFeedback):  # functions: their values at a probe
            probe = np.full((1, env.dim), 0.1)
            seen.append(feedback.value(probe))
            if feedback.gradient is not None:  # smooth losses: gradient and Hessian too
                seen += [feedback.gradient(probe), feedback.loss.hessian(probe)]
            continue
        seen += [np.asarray(getattr(feedback, f.name)) for f in dataclasses.fields(feedback)[:-1]]
    return seen


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_every_registry_environment_follows_the_protocol(name, tmp_path):
    """An Environment whose state, saved after 5 rounds (through a checkpoint file) and loaded
    into a freshly built copy, reveals exactly what the original reveals in rounds 6-12."""
    entry = ENVIRONMENTS[name]
    space = entry.action_space_for({})
    env = catalogue_environment(name, 12, np.random.default_rng(3), tmp_path)
    assert isinstance(env, Environment)
    assert env.horizon == 12
    assert env.feedback_kind is entry.feedback_kind
    assert env.reveals_context is (entry.feedback_kind is FeedbackKind.CONTEXTUAL_BANDIT)
    assert callable(getattr(env, "context", None)) is env.reveals_context
    _play(env, space, range(5))
    save_state(tmp_path / "env.ckpt.npz", env.state_dict(), task="t")
    expected = _play(env, space, range(5, 12))

    fresh = catalogue_environment(name, 12, np.random.default_rng(3), tmp_path)
    fresh.load_state_dict(load_state(tmp_path / "env.ckpt.npz", task="t"))
    got = _play(fresh, space, range(5, 12))
    for i, (a, b) in enumerate(zip(expected, got, strict=True)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f"{name}: value {i}"


def test_oblivious_environments_have_an_empty_state():
    env = ExpertsEnvironment(np.array([[0.0, 1.0]]))
    assert env.state_dict() == {} and not env.reveals_context
    env.load_state_dict({})
    with pytest.raises(ValueError, match=r"'experts' has oblivious losses.*\['rng'\]"):
        env.load_state_dict({"rng": {}})
    with pytest.raises(TypeError, match="state must be a dict"):
        env.load_state_dict(None)  # type: ignore[arg-type]
