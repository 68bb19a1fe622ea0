"""DP-FTRL (Agarwal & Singh 2017, Algorithm 1): closed forms, privacy plumbing, state."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.online import DPFTRL, EntropicSimplex, EuclideanBall, EuclideanCube
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import LossVectorFeedback
from tests.helpers import maybe_budget


@given(st.lists(st.floats(-50, 50), min_size=2, max_size=8), st.floats(0.01, 5))
@settings(max_examples=50, deadline=None)
def test_entropic_argmin_is_softmax_and_minimises_the_objective(cum, eta):
    L = np.array(cum)
    x = EntropicSimplex().argmin(eta, L)
    expected = np.exp(-eta * L - np.max(-eta * L))
    np.testing.assert_allclose(x, expected / expected.sum(), rtol=1e-10)
    # first-order optimality on the simplex: eta L_i + log x_i + 1 is constant
    g = eta * L + np.log(x)
    assert np.ptp(g) < 1e-6 * max(1.0, np.abs(g).max())


def test_ball_and_cube_argmins_are_projections():
    L = np.array([3.0, -4.0])
    np.testing.assert_allclose(EuclideanBall(1.0).argmin(1.0, L), [-0.6, 0.8])
    np.testing.assert_allclose(EuclideanBall(10.0).argmin(1.0, L), [-1.5, 2.0])
    np.testing.assert_allclose(EuclideanCube().argmin(1.0, L), [-1.0, 1.0])
    np.testing.assert_allclose(EuclideanCube().argmin(0.2, L), [-0.3, 0.4])


def test_non_private_ftrl_is_hedge():
    rng = np.random.default_rng(0)
    L = rng.uniform(size=(50, 4))
    learner = DPFTRL(4, 50, budget=None, eta=0.3)
    assert learner.privacy is None
    cum = np.zeros(4)
    for t in range(50):
        p = learner.act()[0]
        w = np.exp(-0.3 * cum)
        np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12)
        learner.observe(LossVectorFeedback(L[t]))
        cum += L[t]


def test_private_learner_states_its_guarantee_and_enforces_bounds():
    lr = DPFTRL(5, 100, budget=PrivacyBudget(0.5, 0.0, "tight"), noise="laplace", rng=0)
    assert lr.privacy.epsilon == 0.5 and lr.privacy.delta == 0.0
    assert "Laplace" in lr.privacy.derivation
    lr.act()
    with pytest.raises(ValueError, match="outside the declared bounds"):
        lr.observe(LossVectorFeedback(np.array([0, 0, 2.0, 0, 0])))
    with pytest.raises(ValueError, match="finite"):
        lr.observe(LossVectorFeedback(np.array([0, 0, np.nan, 0, 0])))
    g = DPFTRL(
        5,
        100,
        budget=PrivacyBudget(1.0, 1e-6),
        noise="gaussian",
        rng=0,
        loss_bounds=Box(-1, 1, dim=5),
    )
    assert g.privacy.delta == 1e-6 and g.privacy.rho is not None
    with pytest.raises(TypeError, match="LossVectorFeedback"):
        g.observe(np.zeros(5))  # type: ignore[arg-type]


def test_paper_calibration_uses_the_padded_tree_and_corollary_3_2_noise():
    with pytest.warns(UserWarning):  # the paper's log2 T undercounts the tree's levels
        lr = DPFTRL(
            10,
            1024,
            budget=PrivacyBudget(1.0, 0.0, "paper", allow_weaker=True),
            noise="laplace",
            rng=0,
        )
    assert lr.counter.name == "padded_tree"
    assert lr.counter.noise.scale == pytest.approx(10 * math.log2(1024) / 1.0)  # N log T / eps
    # L~_0 is the sum of ceil(log T) draws (Algorithm 1, lines 2-3): not zero
    assert np.all(lr.act() != 0.1)


@pytest.mark.parametrize("cut", [0, 7, 30])
def test_resume_is_bit_for_bit(cut):
    rng = np.random.default_rng(1)
    L = rng.uniform(size=(40, 3))

    def make():
        return DPFTRL(3, 40, budget=PrivacyBudget(1.0, 1e-6), noise="gaussian", replicas=4, rng=7)

    full = make()
    ref = []
    for t in range(40):
        ref.append(full.act())
        full.observe(LossVectorFeedback(L[t]))
    part = make()
    for t in range(cut):
        part.act()
        part.observe(LossVectorFeedback(L[t]))
    resumed = make()
    resumed.load_state_dict(part.state_dict())
    for t in range(cut, 40):
        np.testing.assert_array_equal(resumed.act(), ref[t])
        resumed.observe(LossVectorFeedback(L[t]))


def test_replicas_differ_and_have_the_right_shape():
    lr = DPFTRL(6, 20, budget=PrivacyBudget(1.0), replicas=5, rng=3)
    lr.act()
    lr.observe(LossVectorFeedback(np.full(6, 0.5)))
    p = lr.act()
    assert p.shape == (5, 6)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert len({tuple(np.round(r, 12)) for r in p}) == 5


@pytest.mark.filterwarnings("ignore::dponline.privacy.guarantee.PrivacyWarning")
@pytest.mark.parametrize("sequence", ["alternating", "switching", "stochastic"])
@pytest.mark.parametrize(
    ("epsilon", "noise"), [(None, "laplace"), (1.0, "laplace"), (1.0, "gaussian"), (0.2, "laplace")]
)
def test_measured_regret_within_theorem_3_1(sequence, epsilon, noise):
    """Mean regret over 30 seeds stays below the bound the proof of Theorem 3.4 gives
    (D_R / eta + 2 eta sum max ||l||*^2 + D). The theorem as printed, sqrt(D_R sum) + D, omits
    the factor 2 and is exceeded: non-private Hedge on the stochastic sequence at T = 2000
    measured 59.0 against 55.8 (docs/agarwal-singh.md)."""
    from dponline.environments import (
        ExpertsEnvironment,
        alternating_losses,
        stochastic_losses,
        switching_best_losses,
    )

    T, N, R = 1000, 5, 30
    L = {
        "alternating": alternating_losses(T, N),
        "switching": switching_best_losses(T, N, 4, 0.2, 0),
        "stochastic": stochastic_losses(T, np.r_[0.4, np.full(N - 1, 0.5)], 0),
    }[sequence]
    env = ExpertsEnvironment(L)
    delta = 0.0 if noise == "laplace" else 1e-6
    lr = DPFTRL(N, T, budget=maybe_budget(epsilon, delta, "paper"), noise=noise, replicas=R, rng=1)
    cum = np.zeros(R)
    for t in range(T):
        fb, loss = env.round(t, lr.act())
        lr.observe(fb)
        cum += loss
    regret = (cum - env.best_cumulative_loss()[-1]).mean()
    assert regret <= lr.regret_bound(L)["explicit"]


def _project_simplex(v):
    """Euclidean projection onto the probability simplex (sort-based, Duchi et al. 2008)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u)
    k = np.nonzero(u * np.arange(1, len(v) + 1) > css - 1)[0][-1]
    return np.maximum(v - (css[k] - 1) / (k + 1), 0.0)


def test_polytope_domain_matches_closed_forms():
    from dponline.online import PolytopeDomain

    N = 3
    rng = np.random.default_rng(0)
    L = rng.normal(size=(4, N)) * 3
    cube = PolytopeDomain(np.r_[np.eye(N), -np.eye(N)], np.ones(2 * N))
    np.testing.assert_allclose(cube.argmin(0.7, L), EuclideanCube().argmin(0.7, L), atol=1e-5)
    # the corner simplex {x >= 0, sum x <= 1}: clip at 0, or the probability simplex
    corner = PolytopeDomain(np.r_[-np.eye(N), np.ones((1, N))], np.r_[np.zeros(N), 1.0])
    got = corner.argmin(0.9, L)
    for row, c in zip(got, L, strict=True):
        v = -0.9 * c / 2
        expected = np.maximum(v, 0) if np.maximum(v, 0).sum() <= 1 else _project_simplex(v)
        np.testing.assert_allclose(row, expected, atol=1e-5)
    with pytest.raises(ValueError, match="interior"):
        PolytopeDomain(
            np.r_[-np.eye(N), np.ones((1, N)), -np.ones((1, N))], np.r_[np.zeros(N), 1.0, -1.0]
        )
    assert cube.range_of_regulariser(N) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="bounded"):
        PolytopeDomain(np.array([[1.0, 0.0]]), np.array([1.0]))


@pytest.mark.filterwarnings("ignore::dponline.privacy.guarantee.PrivacyWarning")
def test_dp_ftrl_on_a_general_polytope():
    """A triangle-like polytope in R^2: private FTRL runs, its decisions stay feasible, and its
    regret is below the proof's bound of Theorem 3.4."""
    from dponline.online import PolytopeDomain
    from dponline.privacy.bounds import NormBall

    a = np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 1.0]])
    b = np.array([1.0, 1.0, 1.0])
    T, R = 200, 4
    rng = np.random.default_rng(1)
    L = rng.normal(size=(T, 2)) / 2 + np.array([0.3, 0.1])
    L /= np.maximum(np.linalg.norm(L, axis=1, keepdims=True) * (1 + 1e-12), 1.0)
    domain = PolytopeDomain(a, b)
    lr = DPFTRL(
        2,
        T,
        budget=PrivacyBudget(1.0, 0.0, "paper", allow_weaker=True),
        noise="laplace",
        domain=domain,
        loss_bounds=NormBall(1.0, 2, 2),
        replicas=R,
        rng=3,
    )
    cum = np.zeros(R)
    for t in range(T):
        x = lr.act()
        assert np.all(x @ a.T <= b + 1e-9)
        cum += x @ L[t]
        lr.observe(LossVectorFeedback(L[t]))
    from scipy.optimize import linprog

    best_loss = linprog(L.sum(axis=0), A_ub=a, b_ub=b, bounds=[(None, None)] * 2).fun
    regret = (cum - best_loss).mean()
    assert regret <= lr.regret_bound(L, samples=300)["explicit"]


def test_polytope_projection_is_always_feasible_and_stateless():
    from dponline.online import PolytopeDomain

    simplex = PolytopeDomain(np.r_[-np.eye(3), np.ones((1, 3))], np.r_[np.zeros(3), 1.0])
    rng = np.random.default_rng(0)
    for scale in (1.0, 1e3, 1e6, 1e8):
        x = simplex.argmin(1.0, rng.normal(size=(50, 3)) * scale)
        assert np.all(x @ simplex.a.T <= simplex.b)
    c = rng.normal(size=(4, 3))
    np.testing.assert_array_equal(simplex.argmin(0.5, c), simplex.argmin(0.5, c))
