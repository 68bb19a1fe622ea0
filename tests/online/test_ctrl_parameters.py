"""CTRL's parameters (dponline.online.ctrl_parameters): the closeness lemmas against exact
computations, the inversions, Theorem 13 against Lemma 21, the privacy of Theorem 6's proof by
hand, and the calibrations."""

import dataclasses
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
    strongly_convex_regret_bound,
    switching_tail,
    theorem6_epsilon,
)
from dponline.privacy.budget import PrivacyBudget, WeakerGuaranteeError
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


def test_theorem_13_regret_bound_by_hand():
    """G = 3, d = 2, lambda = 2, D = 1, T = 1000, S = 500, L = log 1000:
    2 G^2 (1 + L) / lambda = 9 (1 + L); the printed middle term 512 d^2 L (1 + L) T /
    (lambda S^2) = 512 * 4 * 1000 / (2 * 250000) L (1 + L) = 4.096 L (1 + L); the proof's has G^2:
    36.864 L (1 + L); 14 G D = 42. L (1 + L) = 54.6248..., so 71.170 + 2013.690 + 42 = 2126.860
    (proof) and 71.170 + 223.743 + 42 = 336.913 (printed)."""
    big_l = math.log(1000)
    proof = strongly_convex_regret_bound(500, 1000, 2, 3.0, 2.0, 1.0)
    printed = strongly_convex_regret_bound(500, 1000, 2, 3.0, 2.0, 1.0, printed=True)
    assert proof == pytest.approx(9 * (1 + big_l) + 36.864 * big_l * (1 + big_l) + 42, rel=1e-12)
    assert printed == pytest.approx(9 * (1 + big_l) + 4.096 * big_l * (1 + big_l) + 42, rel=1e-12)
    assert proof == pytest.approx(2126.8598, abs=1e-3)
    assert printed == pytest.approx(336.9131, abs=1e-3)
    # the forms differ on the middle term only, by its factor G^2 = 9
    middle = 4.096 * big_l * (1 + big_l)
    assert proof - printed == pytest.approx((9 - 1) * middle, rel=1e-12)


@pytest.mark.parametrize(("t", "d", "g", "lam", "diam"), [(1000, 2, 3.0, 1.0, 2.0),
                         (100_000, 5, 0.5, 0.3, 4.0), (50, 1, 7.0, 2.0, 0.5)])  # fmt: skip
def test_theorem_13_regret_bound_is_theorem_28_at_its_parameters(t, d, g, lam, diam):
    """Theorem 13's proof substitutes sigma = 16 G sqrt(d T log T) / S and delta = 2 / T^2 in
    Theorem 28: 2 (G^2 + d sigma^2)(1 + log T) / lambda + 6 G D delta T^2 + 2 G D. The printed
    Theorem 13 equals it at G = 1 only."""
    beta = 1.0
    log_t = math.log(t)
    s = math.ceil((4 * beta * d / lam + 16 * d * log_t) * log_t)
    sigma = lazy_strongly_convex_parameters(s, t, d, g, beta, lam)["sigma"]
    theorem28 = 2 * (g * g + d * sigma**2) * (1 + log_t) / lam + 6 * g * diam * 2 + 2 * g * diam
    assert strongly_convex_regret_bound(s, t, d, g, lam, diam) == pytest.approx(theorem28)
    printed = strongly_convex_regret_bound(s, t, d, g, lam, diam, printed=True)
    assert printed != pytest.approx(theorem28)
    at_one = [strongly_convex_regret_bound(s, t, d, 1.0, lam, diam, printed=p) for p in (0, 1)]
    assert at_one[0] == pytest.approx(at_one[1], rel=1e-14)


def test_theorem_13_regret_bound_on_the_benchmark_stream():
    # bench_ctrl_regret's strongly convex stream: G = 3, beta = 2, lambda = 1, d = 2, D = 2,
    # T = 1e5, S = ceil((4 beta d / lambda + 16 d log T) log T) = 4426 (docs/ctrl.md)
    t = 100_000
    s = math.ceil((16.0 + 32 * math.log(t)) * math.log(t))
    assert s == 4426
    assert strongly_convex_regret_bound(s, t, 2, 3.0, 1.0, 2.0) == pytest.approx(13864.07, abs=0.01)
    printed = strongly_convex_regret_bound(s, t, 2, 3.0, 1.0, 2.0, printed=True)
    assert printed == pytest.approx(1815.33, abs=0.01)


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
    budget = PrivacyBudget(1.0, 1e-6, "paper")
    with pytest.raises(WeakerGuaranteeError, match="proves only"):
        entry.factory(env, budget=budget, replicas=1, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        weaker = dataclasses.replace(budget, allow_weaker=True)
        learner = entry.factory(env, budget=weaker, replicas=1, rng=0)
    assert learner.privacy.delta > 1e-6
    assert "Theorem 8" in learner.privacy.derivation


def test_glm_entry_needs_a_glm_stream():
    env = smooth_convex(24, np.random.default_rng(0), dim=2, curvature=0.5)
    with pytest.raises(ValueError, match="needs a GLM stream"):
        learners()["ctrl-glm"].factory(env, budget=PrivacyBudget(1.0, 1e-6), replicas=1, rng=0)


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
