"""The squared loss's exact increment bound of Algorithm 1 and the clips that use it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.domains.lp_ball import LpBall
from dponline.losses import squared_loss_constants
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import SampleFeedback
from dponline.stochastic.private_frank_wolfe import (
    DEFAULT_BOUND_FROM_STEP,
    PrivateStreamingFrankWolfe,
    clip_lq,
    squared_increment_bound,
)


def _on_sphere(gen, d, p, r=1.0):
    v = gen.normal(size=d)
    return r * v / LpBall(d, p).norm(v[None])[0]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    d=st.integers(1, 6),
    p=st.sampled_from([1.5, 2.0, 3.0, math.inf]),
    steps=st.integers(1, 40),
)
def test_every_increment_of_a_frank_wolfe_path_is_within_the_exact_bound(seed, d, p, steps):
    # any path theta_{t+1} = theta_t + (v_t - theta_t) / (t+1) with v_t in the unit ball, any
    # sample with ||x||_q <= 1 and |y| <= 1: ||g_t||_q <= L + beta D / t at every step t
    gen = np.random.default_rng(seed)
    ball = LpBall(d, p)
    lip, beta = squared_loss_constants(1.0, 1.0, 1.0)
    diameter = ball.lp_diameter()
    prev = theta = np.zeros(d)
    for t in range(1, steps + 1):
        x = _on_sphere(gen, d, ball.q) * gen.uniform(0.5, 1.0)
        y = gen.uniform(-1, 1)
        g = (t + 1) * 2 * (theta @ x - y) * x - t * 2 * (prev @ x - y) * x
        norm = float(LpBall(d, ball.q).norm(g[None])[0])
        assert norm <= squared_increment_bound(lip, beta, diameter, t) * (1 + 1e-12)
        v = _on_sphere(gen, d, p) * gen.uniform(0.0, 1.0)
        prev, theta = theta, theta + (v - theta) / (t + 1)


def test_the_bound_is_attained_in_one_dimension():
    # d = 1, the interval [-1, 1] (r = 1, D = 2), X = Y = 1: L = 4, beta = 2. At t = 2 from
    # theta_1 = -1 with v_1 = 1: theta_2 = 0, w = 3 theta_2 - 2 theta_1 = 2 = r + D / 2, and
    # x = 1, y = -1 give g_2 = 2 (w - y) = 6 = L + beta D / 2.
    lip, beta = squared_loss_constants(1.0, 1.0, 1.0)
    theta_1 = -1.0
    theta_2 = theta_1 + (1.0 - theta_1) / 2
    g_2 = 3 * 2 * (theta_2 + 1) - 2 * 2 * (theta_1 + 1)
    assert g_2 == squared_increment_bound(lip, beta, 2.0, 2) == 6.0


def test_clip_lq_scales_rows_down_to_the_bound_only():
    g = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    out = clip_lq(g, 2.0, 1.0)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
    np.testing.assert_allclose(clip_lq(g, math.inf, 2.0), [[1.5, 2.0], [0.3, 0.4], [0, 0]])


def _learner(**kw):
    return PrivateStreamingFrankWolfe(LpBall(3, 1.5), 200, x_bound=1.0, y_bound=1.0, rng=0, **kw)


def test_tight_uses_the_bound_from_step_32_and_paper_theorem_3_1():
    lip, beta = squared_loss_constants(1.0, 1.0, 1.0)
    tight = _learner(budget=PrivacyBudget(1.0, 1e-3))
    paper = _learner(budget=PrivacyBudget(1.0, 1e-3, "paper", allow_weaker=True))
    assert tight.bound_from_step == DEFAULT_BOUND_FROM_STEP == 32
    assert tight.sensitivity == pytest.approx(2 * (lip + beta * 2.0 / 32))
    assert paper.sensitivity == pytest.approx(2 * (lip + beta * 2.0))
    assert _learner(budget=None).bound_from_step == 1  # nothing to calibrate, nothing clipped
    logistic = _learner(budget=PrivacyBudget(1.0, 1e-3), loss="logistic")
    assert logistic.sensitivity == pytest.approx(2 * (logistic.lipschitz + logistic.beta * 2.0))


def test_increments_are_clipped_before_step_k_and_with_increment_clip_always():
    seen = []

    class Recorder:
        def __init__(self, counter):
            self.counter = counter

        def step(self, g):
            seen.append(np.array(g))
            return self.counter.step(g)

        def __getattr__(self, name):
            return getattr(self.counter, name)

    for kw, limit in (({}, None), ({"increment_clip": 0.05}, 0.05)):
        learner = _learner(budget=PrivacyBudget(1.0, 1e-3), **kw)
        learner.counter = Recorder(learner.counter)
        seen.clear()
        gen = np.random.default_rng(1)
        for _ in range(60):
            learner.act()
            x = 0.999 * _on_sphere(gen, 3, 3.0)
            learner.observe(SampleFeedback(x, float(gen.uniform(-1, 1))))
        norms = LpBall(3, 3.0).norm(np.concatenate(seen))
        bound = learner.increment_bound
        assert norms.max() <= bound * (1 + 1e-12)
        if limit is not None:
            assert bound == limit and learner.sensitivity == 2 * limit
            assert np.isclose(norms, limit).sum() > 30  # the clip binds on most steps
    with pytest.raises(ValueError, match="increment_clip must be finite and positive"):
        _learner(budget=PrivacyBudget(1.0, 1e-3), increment_clip=0.0)


def _run(learner, rounds, gen):
    for _ in range(rounds):
        learner.act()
        x = gen.uniform(-1, 1, learner.dim)
        learner.observe(SampleFeedback(x / (1.01 * np.abs(x).sum()), np.array(gen.uniform(-1, 1))))


@pytest.mark.parametrize("algorithm", ["1", "2"])
def test_a_state_no_run_reaches_is_refused(algorithm):
    """A loaded state with iterates no run reaches would let increments past the calibrated
    bound: theta_prev = -e1 and theta = e1 lie in the unit ball, but after 40 rounds a step is
    at most D / 41 long (once fed 40x the bound to the counter). Both algorithms refuse it,
    and a theta_prev outside the domain, and load the states their runs reach."""
    from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe

    def build():
        budget = PrivacyBudget(1.0, 1e-5)
        if algorithm == "1":
            return PrivateStreamingFrankWolfe(LpBall(2, 2.0), 100, budget=budget, rng=0)
        return NoisyMinFrankWolfe(2, 100, budget=budget, rng=0)

    learner = build()
    _run(learner, 40, np.random.default_rng(1))
    state = learner.state_dict()
    build().load_state_dict(state)  # the run's own state loads
    far = {**state, "theta": np.array([[1.0, 0.0]]), "theta_prev": np.array([[-1.0, 0.0]])}
    with pytest.raises(ValueError, match="step's target point of replica 0 lies outside"):
        build().load_state_dict(far)
    outside = {**state, "theta": np.array([[2.0, 0.0]]), "theta_prev": np.array([[2.0, 0.0]])}
    with pytest.raises(ValueError, match="theta_prev of replica 0 lies outside"):
        build().load_state_dict(outside)


def test_every_increment_is_clipped_to_the_bound():
    # iterates set by hand (no load path accepts them) still feed the counter at most the bound
    fw = PrivateStreamingFrankWolfe(LpBall(2, 2.0), 100, budget=PrivacyBudget(1.0, 1e-5), rng=0)
    _run(fw, 40, np.random.default_rng(1))
    fw.theta, fw.theta_prev = np.array([[1.0, 0.0]]), np.array([[-1.0, 0.0]])
    fed = []
    step = fw.counter.step
    fw.counter.step = lambda g: (fed.append(float(np.linalg.norm(g))), step(g))[1]
    fw.act()
    fw.observe(SampleFeedback(np.array([0.99, 0.0]), np.array(0.99)))
    assert fed and fed[0] <= fw.increment_bound * (1 + 1e-12)
