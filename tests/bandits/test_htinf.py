"""HTINF (dponline.bandits.htinf) and the batched conversion around it: the 1/2-Tsallis weights
against their optimality conditions and a root found by scipy, the skipping rule by hand, and
learning on a stochastic instance."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import brentq

from dponline.bandits.batched import BatchedHTINF
from dponline.bandits.htinf import HTINF, SKIP_CONSTANT, tsallis_weights
from dponline.environments.k_armed import KArmedBandit
from dponline.privacy.arguments import ArgumentError
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import BanditFeedback
from dponline.registry import build_learner


@settings(max_examples=60, deadline=None)
@given(arrays(float, (3, 5), elements=st.floats(-50, 50)))
def test_weights_meet_the_optimality_conditions(scaled):
    # the minimiser of <s, x> - 2 sum sqrt(x) on the simplex: x_i^(-1/2) - s_i is the same for
    # every arm (the multiplier), and the weights sum to 1
    x, lam = tsallis_weights(scaled)
    assert np.allclose(x.sum(axis=1), 1.0)
    assert np.all(x > 0)
    gap = x**-0.5 - scaled
    assert np.allclose(gap, gap[:, :1], atol=1e-8 * (1 + np.abs(scaled).max()))
    # from any warm start, to the left or the right of the root, the same weights
    for start in (lam - 30.0, lam + 30.0, lam):
        again, _ = tsallis_weights(scaled, start)
        assert np.allclose(again, x, atol=1e-10)


def test_two_arms_against_a_root_finder():
    s = np.array([[0.3, -1.2]])
    lam = brentq(lambda v: (s[0, 0] + v) ** -2 + (s[0, 1] + v) ** -2 - 1.0, 1.2 + 1e-9, 10.0)
    x, got = tsallis_weights(s)
    assert got[0, 0] == pytest.approx(lam, rel=1e-10)
    assert x[0].tolist() == pytest.approx([(0.3 + lam) ** -2, (-1.2 + lam) ** -2], rel=1e-10)
    # equal losses: uniform play
    assert tsallis_weights(np.zeros((1, 4)))[0][0].tolist() == pytest.approx([0.25] * 4)


def test_skipping_rule_by_hand():
    # two arms, round 1, sigma 1: x = (1/2, 1/2), eta = 1, the threshold theta sqrt(1/2)
    algo = HTINF(2, sigma=1.0, replicas=2, rng=np.random.default_rng(0))
    algo.act()
    r = SKIP_CONSTANT * math.sqrt(0.5)
    values = np.array([0.9 * r, -1.1 * r])
    assert algo.estimates(values).tolist() == pytest.approx([0.9 * r / 0.5, 0.0])
    assert algo.eta == 1.0
    algo.learn(values)
    assert algo.t == 2 and algo.eta == pytest.approx(1 / math.sqrt(2))
    never = HTINF(2, sigma=1.0, replicas=1, rng=np.random.default_rng(0), theta=None)
    never.act()
    assert never.estimates(np.array([100.0]))[0] == pytest.approx(200.0)


def test_refusals_and_state():
    with pytest.raises(ValueError, match="at least 2"):
        HTINF(1, sigma=1.0, replicas=1, rng=np.random.default_rng(0))
    algo = HTINF(3, sigma=2.0, replicas=2, rng=np.random.default_rng(0))
    algo.act()
    algo.learn(np.array([0.5, 0.2]))
    state = algo.state_dict()
    twin = HTINF(3, sigma=2.0, replicas=2, rng=np.random.default_rng(9))
    twin.load_state_dict(state)
    assert np.array_equal(twin.act(), algo.act())
    other = HTINF(3, sigma=1.0, replicas=2, rng=np.random.default_rng(0))
    with pytest.raises(ArgumentError, match="other arms or constants"):
        other.load_state_dict(state)
    bad = {**state, "t": 0}
    with pytest.raises(ArgumentError, match="t must"):
        twin.load_state_dict(bad)


def test_batched_htinf_learns_and_takes_the_papers_batch():
    # epsilon = 0.5: tau = ceil(1 / 0.5) = 2 in both calibrations, Laplace(1 / (eps tau)) = 1
    for calibration in ("paper", "tight"):
        learner = BatchedHTINF(5, 200, budget=PrivacyBudget(0.5, calibration=calibration), rng=0)
        assert learner.batch == 2 and learner.laplace_scale == pytest.approx(1.0)
        assert learner.algorithm.sigma == pytest.approx(math.sqrt(3.0))
    # a stochastic instance, 40 replicas, epsilon = 1: the best arm (index 4) is found; the
    # mean pseudo-regret is far below uniform play's (fixed seeds; measured 0.116x: 556 vs 4,800)
    means = np.array([0.5, 0.5, 0.5, 0.5, 0.8])
    horizon = 20_000
    env = KArmedBandit(family="bernoulli", means=means, horizon=horizon, rng=3)
    learner = build_learner("batched-htinf", env, epsilon=1.0, replicas=40, rng=4)
    pulls = np.zeros((40, 5))
    for t in range(horizon):
        arms = learner.act()
        pulls[np.arange(40), arms] += 1
        learner.observe(env.round(t, arms)[0])
    regret = (pulls * (means.max() - means)).sum(axis=1).mean()
    uniform = horizon * (means.max() - means.mean())
    assert regret < 0.5 * uniform


def test_a_batched_htinf_state_whose_base_round_disagrees_is_refused():
    """HTINF's learning rate reads its round: it must have learned from the batches that
    ended (t = 10 rounds in batches of 2: 5 values, HTINF at its round 6)."""
    lr = BatchedHTINF(4, 100, budget=PrivacyBudget(0.5), rng=0)
    assert lr.batch == 2
    for _ in range(10):
        lr.act()
        lr.observe(BanditFeedback(np.array([0.5])))
    state = lr.state_dict()
    assert state["algorithm"]["t"] == 6
    for t in (1, 5, 7):
        bad = copy.deepcopy(state)
        bad["algorithm"]["t"] = t
        fresh = BatchedHTINF(4, 100, budget=PrivacyBudget(0.5), rng=0)
        before = fresh.state_dict()
        with pytest.raises(ArgumentError, match="learned from"):
            fresh.load_state_dict(bad)
        after = fresh.state_dict()
        assert after["t"] == before["t"] == 0 and after["algorithm"]["t"] == 1
        np.testing.assert_array_equal(after["algorithm"]["losses"], 0.0)
    BatchedHTINF(4, 100, budget=PrivacyBudget(0.5), rng=0).load_state_dict(state)
    assert lr.algorithm.learned_rounds(state["algorithm"]) == 5
