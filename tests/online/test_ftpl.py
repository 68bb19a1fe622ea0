"""DP-FTPL (Agarwal & Singh 2017, Algorithm 3, Theorem 3.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from dponline import domains
from dponline.online.ftpl import DPFTPL, ftpl_sigma_paper
from dponline.privacy.accounting import gaussian_epsilon
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import LossVectorFeedback
from tests.helpers import first_coordinate_decisions, maybe_budget, with_noise_fraction


@pytest.mark.parametrize("seed", range(5))
def test_domain_oracles_against_linprog(seed):
    c = np.random.default_rng(seed).normal(size=(1, 4))
    x = domains.Simplex(4).lmo(c)[0]
    lp = linprog(c[0], A_eq=np.ones((1, 4)), b_eq=[1], bounds=[(0, 1)] * 4)
    assert x @ c[0] == pytest.approx(lp.fun)
    cube = domains.Box(4).lmo(c)[0]
    assert cube @ c[0] == pytest.approx(linprog(c[0], bounds=[(-1, 1)] * 4).fun)
    ball = domains.LpBall(4, 2.0, 2.0).lmo(c)[0]
    assert ball @ c[0] == pytest.approx(-2.0 * np.linalg.norm(c[0]))
    assert np.linalg.norm(ball) == pytest.approx(2.0)


def test_decisions_are_the_domain_oracle_on_the_noisy_sum():
    """x_t = domain.lmo(L~_{t-1}); against the closed forms the simplex, ball and cube FTPL
    used before they became domains (a vertex at the argmin, -r L / ||L||, -sign(L)), and on a
    polytope (an LP per replica)."""
    N, T = 4, 15
    rng = np.random.default_rng(3)
    raw = rng.normal(size=(T, N))
    l2 = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True) * (1 + 1e-12), 1.0)
    l1 = raw / np.maximum(np.abs(raw).sum(axis=1, keepdims=True) * (1 + 1e-12), 1.0)
    polytope = domains.Polytope(
        np.r_[np.eye(N), -np.eye(N), np.ones((1, N))], np.r_[np.ones(2 * N), 1.5]
    )
    cases = [
        (domains.Simplex(N), None, np.abs(raw) / np.abs(raw).max()),
        (domains.LpBall(N, 2.0, 2.0), NormBall(1.0, 2, N), l2),
        (domains.Box(N), NormBall(1.0, 1, N), l1),
        (polytope, NormBall(1.0, 2, N), l2),
    ]
    for domain, bounds, losses in cases:
        lr = DPFTPL(
            N,
            T,
            budget=PrivacyBudget(1.0, 1e-6),
            mechanism="padded_tree",  # L~_0 is noise: no ties
            domain=domain,
            loss_bounds=bounds,
            replicas=3,
            rng=1,
        )
        for t in range(T):
            x, cum = lr.act(), lr._cumulative
            np.testing.assert_allclose((x * cum).sum(axis=1), domain.min_linear(cum), atol=1e-9)
            if isinstance(domain, domains.Simplex):
                np.testing.assert_array_equal(x, np.eye(N)[np.argmin(cum, axis=1)])
            elif isinstance(domain, domains.LpBall):
                expected = -2.0 * cum / np.linalg.norm(cum, axis=1, keepdims=True)
                np.testing.assert_allclose(x, expected, rtol=1e-14, atol=1e-15)
            elif isinstance(domain, domains.Box):
                np.testing.assert_array_equal(x, -np.sign(cum))
            lr.observe(LossVectorFeedback(losses[t]))


def test_theorem_3_5_sigma_by_hand():
    T, N, eps, delta = 1024, 16, 1.0, 1e-6
    lt = 10.0
    expected = max(4.0 * math.sqrt(T / (4.0 * lt)), 4.0 * lt * math.log(lt / delta) / eps)
    assert ftpl_sigma_paper(4.0, N, T, eps, delta) == pytest.approx(expected)
    lr = DPFTPL(N, T, budget=maybe_budget(eps, delta, "paper"), rng=0)
    assert lr.sigma == pytest.approx(expected)  # ||Y||_2 = sqrt(16) for [0, 1]^16
    assert lr.counter.name == "padded_tree"


def test_guarantee_is_what_sigma_proves():
    lr = DPFTPL(10, 10_000, budget=PrivacyBudget(1.0, 1e-6, "tight"), rng=0)
    _, l2 = lr.counter.sensitivity_factors(10_000)
    total = l2 * math.sqrt(10)
    assert lr.privacy.epsilon == pytest.approx(gaussian_epsilon(1e-6, total / lr.sigma))
    assert lr.privacy.epsilon <= 1.0 + 1e-9
    paper = DPFTPL(10, 10_000, budget=PrivacyBudget(1.0, 1e-6, "paper", allow_weaker=True), rng=0)
    assert paper.sigma > lr.sigma and paper.privacy.meets_request


def test_resume_and_contract():
    L = np.random.default_rng(2).uniform(size=(25, 3))

    def make():
        return DPFTPL(3, 25, budget=PrivacyBudget(1.0, 1e-6), replicas=3, rng=4)

    full, ref = make(), []
    for t in range(25):
        ref.append(full.act())
        full.observe(LossVectorFeedback(L[t]))
    part = make()
    for t in range(10):
        part.act()
        part.observe(LossVectorFeedback(L[t]))
    resumed = make()
    resumed.load_state_dict(part.state_dict())
    for t in range(10, 25):
        np.testing.assert_array_equal(resumed.act(), ref[t])
        resumed.observe(LossVectorFeedback(L[t]))
    fresh = make()
    fresh.act()
    with pytest.raises(ValueError, match="outside the declared bounds"):
        fresh.observe(LossVectorFeedback(np.array([0.0, 2.0, 0.0])))
    with pytest.raises(TypeError, match="ConvexDomain"):
        DPFTPL(3, 25, budget=PrivacyBudget(1.0, 1e-6), domain="sphere")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dimension 4, expected 3"):
        DPFTPL(3, 25, budget=PrivacyBudget(1.0, 1e-6), domain=domains.Box(4))


def _ftpl_sampler(fraction):
    T, N = 8, 2

    def sample(losses, n, rng):
        lr = DPFTPL(N, T, budget=PrivacyBudget(1.0, 1e-5), replicas=n, rng=rng)
        return first_coordinate_decisions(with_noise_fraction(lr, fraction, rng), losses)

    return sample


def test_audit_not_refuted_and_a_tenth_of_the_noise_refuted():
    from dponline.privacy.audit import audit

    a = np.zeros((8, 2))
    b = a.copy()
    b[0] = [1.0, 0.0]
    claim = DPFTPL(2, 8, budget=PrivacyBudget(1.0, 1e-5)).privacy
    kw = dict(claim=claim, trials=50_000, pilot_trials=10_000, rng=8)
    ok = audit(_ftpl_sampler(1.0), a, b, **kw)
    assert not ok.any_refuted, str(ok)  # false refutation chance <= 1e-3 per claim
    bad = audit(_ftpl_sampler(0.1), a, b, **kw)
    assert bad.refuted, str(bad)


@pytest.mark.parametrize("calibration", ["paper", "tight"])
def test_regret_within_the_proof_of_theorem_3_5(calibration):
    """Mean regret over 20 seeds below sigma sqrt(N log T) ||X|| + T ||X|| ||Y||^2 /
    (2 sigma sqrt(log T)) (proof of Theorem 3.5, Appendix A), experts, i.i.d. losses."""
    from dponline.environments import ExpertsEnvironment, stochastic_losses

    T, N, R = 2000, 5, 20
    L = stochastic_losses(T, np.r_[0.4, np.full(N - 1, 0.5)], 0)
    env = ExpertsEnvironment(L)
    lr = DPFTPL(N, T, budget=PrivacyBudget(1.0, 1e-6, calibration), replicas=R, rng=2)
    cum = np.zeros(R)
    for t in range(T):
        fb, loss = env.round(t, lr.act())
        lr.observe(fb)
        cum += loss
    regret = (cum - env.best_cumulative_loss()[-1]).mean()
    lt = math.log2(T)
    x2, y2 = 1.0, math.sqrt(N)
    bound = lr.sigma * math.sqrt(N * lt) * x2 + T * x2 * y2**2 / (2 * lr.sigma * math.sqrt(lt))
    assert regret <= bound


def test_non_private_ftpl_keeps_only_the_perturbation():
    lr = DPFTPL(4, 1000, budget=None, rng=0)
    assert lr.privacy is None
    lt = math.log2(1000)
    assert lr.sigma == pytest.approx(2.0 * math.sqrt(1000 / (2.0 * lt)))  # ||Y||_2 = 2
    lr.act()
    lr.observe(LossVectorFeedback(np.full(4, 0.5)))
    assert lr.act().shape == (1, 4)


def test_a_person_with_a_horizon_is_calibrated_on_the_counters_pattern():
    """DP-FTPL with a horizon takes a budget over one person (tight): sigma is max(the regret
    term, the counter's least sigma for the person's sensitivity), and the guarantee is what
    that sigma proves for the person, whichever term set it; the paper formula and the
    anytime learner (doubling blocks) refuse the person."""
    from dponline.continual.registry import get_mechanism

    honaker = get_mechanism("honaker")
    person = PrivacyBudget(1.0, 1e-6, participations=2, min_separation=100)
    learner = DPFTPL(3, 1000, budget=person, rng=0)
    pattern = honaker.participation_sensitivity_factors(1000, 2, 100)
    total = pattern.l2 * math.sqrt(3)  # the l2 diameter of [0, 1]^3
    assert (learner.privacy.participations, learner.privacy.min_separation) == (2, 100)
    assert gaussian_epsilon(1e-6, total / learner.sigma) == pytest.approx(1.0, rel=1e-6)
    assert learner.sigma > DPFTPL(3, 1000, budget=PrivacyBudget(1.0, 1e-6)).sigma
    # where the regret term is the larger, the person's guarantee is stronger than asked
    loose = DPFTPL(
        3, 10_000, budget=PrivacyBudget(8.0, 1e-6, participations=2, min_separation=5000)
    )
    assert loose.sigma == pytest.approx(loose.calibrator.regret_term)
    loose_total = honaker.participation_sensitivity_factors(10_000, 2, 5000).l2 * math.sqrt(3)
    proven = gaussian_epsilon(1e-6, loose_total / loose.sigma)
    assert loose.privacy.epsilon == pytest.approx(proven) and proven < 8.0
    assert "one person's at most 2 rounds" in loose.privacy.derivation
    with pytest.raises(ValueError, match="event-level formula"):
        DPFTPL(3, 1000, budget=PrivacyBudget(1.0, 1e-6, participations=2, calibration="paper"))
    with pytest.raises(ValueError, match="give a horizon"):
        DPFTPL(3, None, budget=person)
