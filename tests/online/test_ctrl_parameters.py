"""CTRL's parameters (dponline.online.ctrl_parameters): the closeness lemmas against exact
computations, the inversions, Theorem 13 against Lemma 21, the privacy of Theorem 6's proof by
hand, and the calibrations."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dponline.environments.smooth_convex import smooth_convex
from dponline.online.ctrl_parameters import (
    CTRLParameters,
    calibrate_paper,
    calibrate_tight,
    closeness_delta,
    lazy_strongly_convex_parameters,
    log_phi_general,
    log_phi_glm,
    log_phi_lemma21,
    log_phi_theorem13,
    proven_privacy,
    regret_bound_theorem4,
    switching_tail,
    theorem6_epsilon,
)
from dponline.privacy.budget import WeakerGuaranteeError
from dponline.privacy.guarantee import PrivacyWarning
from dponline.registry import learners

PROBLEM = {"horizon": 2000, "dim": 10, "lipschitz": 1.0, "smoothness": 0.25, "diameter": 10.0}


@pytest.mark.parametrize("d", [1, 2, 5, 10, 64, 200])
@pytest.mark.parametrize("delta", [0.3, 1e-2, 1e-6, 1e-12])
def test_gaussian_norm_tail_of_lemma_7(d, delta):
    # the event Lemma 7 conditions on: ||Z|| <= sigma sqrt(2 d log(2 / delta)), exact chi-square
    assert stats.chi2.sf(2 * d * math.log(2 / delta), d) <= delta


@pytest.mark.parametrize("g, sigma, delta", [(1.0, 5.0, 1e-3), (0.3, 40.0, 1e-6), (2.0, 2.0, 0.1)])
def test_lemma_7_closeness_exactly_in_one_dimension(g, sigma, delta):
    # J = x^2 / (2 eta) on R, l = 0, l' = -G x (l - l' G-Lipschitz, 0-smooth): x*(l, Z) = -eta Z,
    # x*(l', Z) = eta (G - Z), so log mu(X) / mu'(X) = (2 G Z + G^2) / (2 sigma^2) at X = -eta Z.
    # Lemma 7 (beta = 0) says this lies in [-log Phi, log Phi] but with probability <= delta.
    log_phi = log_phi_general(1.0, 0.0, g, sigma, delta, 1)
    # |2 G Z + G^2| > 2 sigma^2 log Phi  <=>  Z > a or Z < b
    a = (2 * sigma**2 * log_phi - g * g) / (2 * g)
    b = (-2 * sigma**2 * log_phi - g * g) / (2 * g)
    miss = stats.norm.sf(a / sigma) + stats.norm.cdf(b / sigma)
    assert miss <= delta
    # and the lemma is not vacuous: the failure probability is within a factor 50 of delta
    assert miss >= delta / 50


@settings(max_examples=60, deadline=None)
@given(
    eta=st.floats(1e-6, 1.0),
    beta=st.floats(0.0, 2.0),
    g=st.floats(0.01, 10.0),
    sigma=st.floats(0.1, 1e5),
    delta=st.floats(1e-12, 0.5),
    d=st.integers(1, 100),
)
def test_closeness_delta_inverts_lemmas_7_and_10(eta, beta, g, sigma, delta, d):
    lp = log_phi_general(eta, beta, g, sigma, delta, d)
    back = closeness_delta(lp, eta=eta, sigma=sigma, lipschitz=g, smoothness=beta, dim=d)
    assert back == pytest.approx(delta, rel=1e-6)
    for k in (1, 3):
        lp = log_phi_glm(eta, beta, g, sigma, delta, k)
        back = closeness_delta(
            lp, eta=eta, sigma=sigma, lipschitz=g, smoothness=beta, dim=d, glm=True, directions=k
        )
        assert back == pytest.approx(delta, rel=1e-6)
    # a Phi below the curvature term alone proves nothing
    assert closeness_delta(eta * beta * d * 0.5, eta=eta, sigma=sigma, lipschitz=g,
                           smoothness=beta, dim=d) == 1.0  # fmt: skip


def test_glm_union_bound_costs_log_3():
    one = log_phi_glm(0.01, 1.0, 1.0, 50.0, 1e-6, 1)
    three = log_phi_glm(0.01, 1.0, 1.0, 50.0, 1e-6, 3)
    assert three > one
    assert three == pytest.approx(log_phi_glm(0.01, 1.0, 1.0, 50.0, 1e-6 / 3, 1))


@pytest.mark.parametrize("horizon", [3, 50, 10_000])
def test_theorem_13_scale_bounds_lemma_21(horizon):
    g, beta, lam, d, sigma = 1.0, 2.0, 0.5, 3, 7.0
    printed = log_phi_theorem13(horizon, d, g, beta, lam, sigma)
    assert printed.shape == (horizon,)
    for t in {1, 2, horizon // 2 or 1, horizon}:
        lemma = log_phi_lemma21(
            beta, d, lam * t, g, sigma * math.sqrt(t), sigma * math.sqrt(t + 1), 2 / horizon**2
        )
        assert printed[t - 1] >= lemma * (1 - 1e-12)
    # decreasing in t (switching gets rarer)
    assert np.all(np.diff(printed) < 0)


def test_theorem_13_needs_enough_switches():
    with pytest.raises(ValueError, match="Theorem 13 needs S >="):
        lazy_strongly_convex_parameters(10, 1000, 2, 1.0, 1.0, 1.0)
    p = lazy_strongly_convex_parameters(2000, 1000, 2, 1.0, 1.0, 1.0)
    assert p["sigma"] == pytest.approx(16 * math.sqrt(2 * 1000 * math.log(1000)) / 2000)


def _params(**kw):
    base = dict(eta=0.01, sigma=1000.0, log_phi=0.1, p=0.1, switch_budget=60.0, horizon=100,
                dim=2, lipschitz=1.0, smoothness=0.5)  # fmt: skip
    base.update(kw)
    return CTRLParameters(**base)


def test_proven_privacy_by_hand():
    params = _params()
    proof = proven_privacy(params, 1e-6)
    lp, p, b, t = 0.1, 0.1, 60, 100
    c = 2 * 1.0 / 1000.0**2 + 2 * 0.01**2 * 0.5**2 * 2
    s = (2 * lp / p) ** 2 + b * lp**2 + 2 * b * lp * c / p + t * (c / p) ** 2
    assert proof.sum_of_squares == pytest.approx(s, rel=1e-12)
    assert proof.epsilon == pytest.approx(1.5 * s + math.sqrt(6 * s * math.log(1e6)), rel=1e-12)
    dc = closeness_delta(lp / 2, eta=0.01, sigma=1000.0, lipschitz=3.0, smoothness=1.0, dim=2)
    p_tilde = p - math.expm1(-2 * lp)
    a = b / (p_tilde * t) - 1
    tail = math.exp(-a * a * p_tilde * t / (2 + a))
    assert 0 < dc < 1e-4 and 0 < tail < 1e-4
    assert proof.delta == pytest.approx(1e-6 + t * (4 * dc + 9 * dc * t) + 3 * t * tail)
    # no forced switching: nothing proven
    assert proven_privacy(_params(p=0.0), 1e-6).epsilon == math.inf


def test_printed_theorem_6_can_claim_more_than_its_proof():
    # with a large log Phi the slips (2 for 6 log^3 Phi T, the dropped cross term) matter
    params = _params(log_phi=0.5, p=100 ** (-1 / 3), sigma=3.0, eta=0.05)
    params = CTRLParameters(**{**params.__dict__, "switch_budget": 3 * params.p_tilde * 100})
    printed, _ = theorem6_epsilon(params, 1e-6)
    assert proven_privacy(params, 0.5e-6).epsilon > printed


def test_switching_tail_is_a_valid_chernoff_bound():
    for p_tilde, t in [(0.1, 100), (0.02, 5000), (0.5, 30)]:
        mu = p_tilde * t
        if 3 * mu < t:
            assert switching_tail(p_tilde, t, 3 * mu) == pytest.approx(math.exp(-mu))
        for budget in (1.5 * mu, 3 * mu, 5 * mu):
            if budget < t:
                exact = stats.binom.sf(math.ceil(budget) - 1, t, p_tilde)  # P[X >= B]
                assert exact <= switching_tail(p_tilde, t, budget)
        assert switching_tail(p_tilde, t, t) == 0.0


def test_tight_meets_the_request_and_beats_the_paper():
    paper = calibrate_paper(1.0, 1e-6, **PROBLEM)
    tight, proof = calibrate_tight(1.0, 1e-6, **PROBLEM)
    assert proof.epsilon <= 1.0 and proof.delta <= 1e-6
    assert proof.epsilon > 0.99  # the least noise: the budget is used up
    t = PROBLEM["horizon"]
    bound_paper = regret_bound_theorem4(paper, 10.0, 1e-6 / (60 * t * t))
    bound_tight = regret_bound_theorem4(tight, 10.0, 1e-6 / (4 * t * (4 + 9 * t)))
    assert bound_tight < bound_paper / 2
    assert tight.sigma < paper.sigma
    # Theorem 8's parameters: what its proof supports (its constants are generous) ...
    assert proven_privacy(paper, 0.5e-6).epsilon < 1.0
    # ... while Theorem 6's printed delta is vacuous there (3 T e^{-(1 - Phi^-2) T} > 1)
    assert theorem6_epsilon(paper, 1e-6)[1] > 1.0


def test_paper_calibration_that_proves_less_raises_unless_asked():
    # T = 60: p = T^(-1/3), B = 3 p~ T < T, and 3 T e^{-p~ T} is far above delta
    env = smooth_convex(60, np.random.default_rng(0), dim=2)
    entry = learners()["ctrl"]
    kw = dict(epsilon=1.0, calibration="paper", replicas=1, rng=0)
    with pytest.raises(WeakerGuaranteeError, match="proves only"):
        entry.factory(env, allow_weaker=False, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        learner = entry.factory(env, allow_weaker=True, **kw)
    assert learner.privacy.delta > 1e-6
    assert "Theorem 8" in learner.privacy.derivation


def test_glm_entry_needs_a_glm_stream():
    env = smooth_convex(24, np.random.default_rng(0), dim=2, curvature=0.5)
    with pytest.raises(ValueError, match="needs a GLM stream"):
        learners()["ctrl-glm"].factory(
            env, epsilon=1.0, calibration="tight", allow_weaker=False, replicas=1, rng=0
        )


@pytest.mark.parametrize("glm", [False, True])
@pytest.mark.parametrize("t, s, d", [(1000, 160, 5), (100_000, 1582, 5), (5000, 50, 12)])
def test_lazy_regret_bound_is_theorem_4_at_the_lazy_parameters(glm, t, s, d):
    """Theorems 9 and 12 are Theorem 4 with B = inf and their parameters: D^2 / (2 eta) +
    2 G^2 eta T + sigma sqrt(d) D, plus at most 14 G D for the closeness and barrier terms. The
    GLM bound as printed has no sqrt(d) in its noise term and falls below Theorem 4's."""
    from dponline.online.ctrl import lazy_parameters, lazy_regret_bound

    g, beta, diam = 2.0, 1.0, 2.0
    prm = lazy_parameters(s, t, d, g, beta, diam, glm=glm)
    theorem4 = (
        diam**2 / (2 * prm["eta"]) + 2 * g * g * prm["eta"] * t + prm["sigma"] * math.sqrt(d) * diam
    )
    assert theorem4 <= lazy_regret_bound(s, t, d, g, beta, diam, glm=glm)
    if glm:
        assert lazy_regret_bound(s, t, d, g, beta, diam, glm=True, printed=True) < theorem4
