"""DP-FTRL on linearised losses (:mod:`dponline.online.linearised_ftrl`)."""

import math

import numpy as np
import pytest

from dponline.domains.lp_ball import LpBall
from dponline.environments.smooth_convex import smooth_convex
from dponline.online.ftrl import DPFTRL
from dponline.online.linearised_ftrl import LinearisedFTRL
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import LossFunctionFeedback, LossVectorFeedback


def _linear(c: np.ndarray) -> LossFunctionFeedback:
    return LossFunctionFeedback(
        value=lambda x: np.asarray(x) @ c, gradient=lambda x: np.broadcast_to(c, np.shape(x))
    )


def test_on_linear_losses_it_is_dp_ftrl_on_their_vectors():
    # the gradient of <c_t, x> is c_t wherever x is: the same decisions, draw for draw
    rng = np.random.default_rng(0)
    costs = rng.uniform(-1, 1, size=(30, 3)) / math.sqrt(3)
    ball = LpBall(3, 2.0, 1.0)
    budget = PrivacyBudget(1.0, 1e-6)
    ours = LinearisedFTRL(ball, 30, lipschitz=1.0, budget=budget, replicas=3, rng=5)
    ref = DPFTRL(
        3, 30, budget=budget, noise="gaussian", domain=ball, regulariser="euclidean",
        loss_bounds=NormBall(1.0, 2, 3), eta=ours.eta, replicas=3, rng=5,
    )  # fmt: skip
    for c in costs:
        np.testing.assert_array_equal(ours.act(), ref.act())
        ours.observe(_linear(c))
        ref.observe(LossVectorFeedback(c))
    assert ours.privacy == ref.privacy
    assert ours.eta == pytest.approx(math.sqrt(1.0 / 30))  # D_R = max ||x||^2 = 1 (unit ball)


def test_non_private_regret_within_the_ftrl_bound():
    # Theorem 3.1's explicit bound for R = ||x||^2: D_R / eta + eta sum ||g_t||^2 <= 2 G sqrt(D_R T)
    env = smooth_convex(400, np.random.default_rng(1), dim=3, losses="squared")
    learner = LinearisedFTRL(env.domain, env.horizon, lipschitz=env.lipschitz, budget=None)
    total = 0.0
    for t in range(env.horizon):
        feedback, loss = env.round(t, learner.act())
        total += float(loss[0])
        learner.observe(feedback)
    regret = total - float(env.best_cumulative_loss(np.array([env.horizon]))[0])
    d_r = float(env.domain.barrier.max_norm()) ** 2
    assert 0 < regret <= 2.0 * env.lipschitz * math.sqrt(d_r * env.horizon)


def test_a_gradient_beyond_the_bound_is_refused_with_its_norm():
    learner = LinearisedFTRL(LpBall(2, 2.0, 1.0), 5, lipschitz=1.0, budget=PrivacyBudget(1.0, 1e-6))
    learner.act()
    with pytest.raises(ValueError, match=r"1\.5"):
        learner.observe(_linear(np.array([1.5, 0.0])))
    clipped = LinearisedFTRL(
        LpBall(2, 2.0, 1.0), 5, lipschitz=1.0, budget=PrivacyBudget(1.0, 1e-6), clip=True
    )
    clipped.act()
    clipped.observe(_linear(np.array([1.5, 0.0])))  # clipping is part of the mechanism
    assert clipped.t == 1


def test_learning_rate_and_lipschitz_are_checked():
    with pytest.raises(ValueError, match="lipschitz"):
        LinearisedFTRL(LpBall(2, 2.0, 1.0), 5, lipschitz=0.0, budget=None)
    with pytest.raises(ValueError, match="eta"):
        LinearisedFTRL(LpBall(2, 2.0, 1.0), 5, lipschitz=1.0, budget=None, eta=-1.0)


def test_a_state_is_refused_by_a_learner_that_decides_otherwise():
    """A state saved under radius 1 loaded into a learner over radius 2, or with another step
    size, continued a different run without a word: the decision rule is now in the state."""
    from dponline.privacy.arguments import ArgumentError

    def build(radius=1.0, **kw):
        return LinearisedFTRL(
            LpBall(3, 2, radius), None, lipschitz=1.0, budget=PrivacyBudget(1.0, 1e-6), rng=0, **kw
        )

    learner = build()
    learner.act()
    state = learner.state_dict()
    build().load_state_dict(state)  # the same rule loads
    build(1).load_state_dict(state)  # radius=1 is radius=1.0
    build(np.float64(1.0)).load_state_dict(state)
    inner = {k: v for k, v in state["inner"].items() if k != "decisions"}
    old = {**state, "inner": inner}  # before the rule was recorded
    with pytest.raises(ArgumentError, match="earlier version of dponline"):
        build().load_state_dict(old)
    for other, key in (
        (build(2.0), "domain"),
        (build(eta_constant=0.1), "eta_constant"),
        (build(eta=0.01), "eta"),
    ):
        with pytest.raises(ArgumentError, match=f"decision rule .* differs in {key}"):
            other.load_state_dict(state)


def test_a_description_writes_numbers_one_way_and_nothing_else():
    """radius=1 and radius=np.float64(1.0) are one ball; digits inside quotes (a node's name),
    integers past 2^53 and other numpy types keep their spelling (a review found '01' and '1'
    merged)."""
    from dponline.online.counter_learner import described

    class Shown:
        def __init__(self, text):
            self.text = text

        def __repr__(self):
            return self.text

    cases = {
        "LpBall(dim=3, p=2, radius=np.float64(1.0))": "LpBall(dim=3.0, p=2.0, radius=1.0)",
        "P(source='01', n=3)": "P(source='01', n=3.0)",
        'P(source="1")': 'P(source="1")',
        "P(n=9007199254740993)": "P(n=9007199254740993)",
        "P(r=np.float32(0.1), k=np.uint8(3))": "P(r=np.float32(0.1), k=np.uint8(3))",
        "P(x2=-1e-3)": "P(x2=-0.001)",
    }
    for text, want in cases.items():
        assert described(Shown(text)) == want
    assert described(object()) == "object"  # an address: the class name
