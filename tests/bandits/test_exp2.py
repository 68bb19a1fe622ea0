"""DP-EXP2 (Agarwal & Singh 2017, Algorithms 4 and 5; Theorem 4.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.bandits import DPEXP2, exp2_parameters
from dponline.bandits.exp2 import (
    exp2_condition_ratio,
    exp2_proof_parameters,
    exp2_proven_regret_bound,
    exp2_regret_bound,
)
from dponline.environments import BanditEnvironment, StochasticBandit
from dponline.privacy.audit import audit
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyWarning
from dponline.protocol import BanditFeedback
from tests.helpers import maybe_budget


def test_theorem_4_1_parameters_by_hand():
    n, t, eps = 10, 1000, 0.5
    lam = 1 / eps
    spread = 1 + 2 * lam**2 * math.log(n * t)
    eta, gamma = exp2_parameters(n, t, lam)
    assert eta == pytest.approx(math.sqrt(math.log(n) / (2 * n * t * spread)))
    assert gamma == pytest.approx(eta * n * math.sqrt(spread))
    lr = DPEXP2(n, t, budget=maybe_budget(eps, 0.0, "paper"), rng=0)
    assert lr.laplace_scale == lam and lr.eta == pytest.approx(eta)
    # the printed bound, as the paper's proof writes it (not a proven bound: see below)
    printed = math.log(n) / eta + 2 * eta * t * n * (1 + lam**2 * math.log(n * t) ** 2)
    assert exp2_regret_bound(n, t, lam) == pytest.approx(printed + 2 * t * gamma + 1)


def test_printed_parameters_violate_the_proof_s_condition_by_7_8_to_11_4():
    # eta N (1 + 4 lambda log NT) <= gamma is what Lemma 4.4 needs (002, line 385)
    ratios = [exp2_condition_ratio(n, t, 1.0) for n, t in ((2, 1000), (10, 10**4), (100, 10**5))]
    assert ratios == pytest.approx([7.8019, 9.5992, 11.3567], abs=1e-3)
    eta, gamma = exp2_parameters(10, 10**4, 1.0)
    with pytest.raises(ValueError, match="violate the proof's condition"):
        exp2_proven_regret_bound(10, 10**4, 1.0, eta=eta, gamma=gamma)
    # without noise the printed parameters meet it (with equality)
    assert exp2_condition_ratio(10, 10**4, 0.0) == pytest.approx(1.0)


def test_proof_parameters_meet_the_condition_and_minimise_the_proven_bound():
    n, t, lam = 10, 10**4, 2.0
    eta, gamma = exp2_proof_parameters(n, t, lam)
    big_l = 1 + 4 * lam * math.log(n * t)
    assert gamma == pytest.approx(eta * n * big_l) and gamma <= 1
    best = exp2_proven_regret_bound(n, t, lam)
    assert best == pytest.approx(exp2_proven_regret_bound(n, t, lam, eta=eta, gamma=gamma))
    for f in (0.9, 1.1):  # any other eta at its least gamma does worse
        e = eta * f
        assert exp2_proven_regret_bound(n, t, lam, eta=e, gamma=e * n * big_l) > best
    # by hand: log N / eta + eta T N K + 2 gamma T M + 2 M, K = 2 (1 + 10 lam^2 log^2 NT)
    k = 2 * (1 + 10 * lam**2 * math.log(n * t) ** 2)
    assert best == pytest.approx(math.log(n) / eta + eta * t * n * k + 2 * gamma * t + 2)
    # the tight calibration runs them, the paper's the printed ones
    tight = DPEXP2(n, t, budget=PrivacyBudget(0.5), rng=0)
    paper = DPEXP2(n, t, budget=maybe_budget(0.5, 0.0, "paper"), rng=0)
    assert (tight.eta, tight.gamma) == pytest.approx(exp2_proof_parameters(n, t, 2.0))
    assert (paper.eta, paper.gamma) == pytest.approx(exp2_parameters(n, t, 2.0))


def test_probabilities_mix_exploration_and_update_uses_importance_weights():
    lr = DPEXP2(4, 100, budget=None, eta=0.5, gamma=0.2, replicas=3, rng=0)
    np.testing.assert_allclose(lr.probabilities(), 0.25)
    arms = lr.act()
    p = lr.probabilities()[np.arange(3), arms]
    lr.observe(BanditFeedback(np.array([0.4, 0.8, 0.0])))
    # non-private: l~(i) = l / p(i) at the played arm; q proportional to exp(-eta l~)
    log_q = np.zeros((3, 4))
    log_q[np.arange(3), arms] = -0.5 * np.array([0.4, 0.8, 0.0]) / p
    q = np.exp(log_q)
    q /= q.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(lr.probabilities(), 0.8 * q + 0.2 / 4, rtol=1e-12)


def test_loss_estimate_is_unbiased():
    """E[l~_t] = l_t under i_t ~ p_t: Monte Carlo over 200,000 replicas."""
    R = 200_000
    lr = DPEXP2(3, 10, budget=None, gamma=0.3, replicas=R, rng=1)
    loss = np.array([0.2, 0.5, 0.9])
    arms = lr.act()
    est = lr.algorithm.loss_estimate(loss[arms])
    # each coordinate's estimate has sd <= max l / sqrt(p) / sqrt(R) ~ 0.004; 6 sd margin
    np.testing.assert_allclose(est.mean(axis=0), loss, atol=0.025)


def test_privacy_guarantees_tight_and_paper():
    tight = DPEXP2(5, 100, budget=PrivacyBudget(0.5), rng=0)
    assert tight.laplace_scale == 2.0 and tight.privacy.epsilon == 0.5
    with pytest.warns(PrivacyWarning, match="proves only"):
        paper = DPEXP2(
            5,
            100,
            budget=PrivacyBudget(0.5, 0.0, "paper", allow_weaker=True),
            loss_range=(-1, 1),
            rng=0,
        )
    assert paper.laplace_scale == 2.0 and paper.privacy.epsilon == pytest.approx(1.0)


def test_input_contract():
    lr = DPEXP2(3, 10, budget=PrivacyBudget(1.0), rng=0)
    with pytest.raises(ValueError, match="must follow act"):
        lr.observe(BanditFeedback(np.array([0.5])))
    lr.act()
    with pytest.raises(ValueError, match="outside the declared bounds"):
        lr.observe(BanditFeedback(np.array([1.5])))
    with pytest.raises(ValueError, match="finite"):
        lr.observe(BanditFeedback(np.array([np.nan])))
    with pytest.raises(TypeError, match="BanditFeedback"):
        lr.observe(np.array([0.5]))  # type: ignore[arg-type]


def test_resume_bit_for_bit():
    env_losses = np.random.default_rng(0).uniform(size=(30, 4))

    def run(lr, start, stop):
        out = []
        for t in range(start, stop):
            a = lr.act()
            out.append(a)
            lr.observe(BanditFeedback(env_losses[t, a]))
        return out

    full = run(DPEXP2(4, 30, budget=PrivacyBudget(1.0), replicas=5, rng=3), 0, 30)
    part = DPEXP2(4, 30, budget=PrivacyBudget(1.0), replicas=5, rng=3)
    run(part, 0, 12)
    resumed = DPEXP2(4, 30, budget=PrivacyBudget(1.0), replicas=5, rng=3)
    resumed.load_state_dict(part.state_dict())
    for a, b in zip(run(resumed, 12, 30), full[12:], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("eps", [None, 1.0])
def test_regret_within_theorem_4_1_bound(eps):
    """Mean pseudo-regret over 200 seeds on a Bernoulli bandit stays below the bound."""
    T, N, R = 2000, 5, 200
    env = StochasticBandit(np.r_[0.2, np.full(N - 1, 0.5)], T, rng=0)
    lr = DPEXP2(N, T, budget=maybe_budget(eps), replicas=R, rng=1)
    cum = np.zeros(R)
    for t in range(T):
        fb, expected = env.round(t, lr.act())
        lr.observe(fb)
        cum += expected
    regret = cum - T * 0.2  # pseudo-regret against the best arm's mean
    # the tight calibration runs parameters its proof supports; the non-private ones meet it
    bound = exp2_proven_regret_bound(N, T, lr.laplace_scale, eta=lr.eta, gamma=lr.gamma)
    assert regret.mean() <= bound
    if eps is None:
        assert regret.mean() < 0.2 * T  # it learns: uniform play costs 0.24 T


def _arm_sampler(laplace_factor):
    """Two rounds, two arms, a large step so one loss visibly moves the next arm."""

    def sample(losses, n, rng):
        lr = DPEXP2(2, 2, budget=PrivacyBudget(1.0), eta=3.0, gamma=0.2, replicas=n, rng=rng)
        if laplace_factor != 1.0:
            lr.scale_noise(laplace_factor)  # the public handle
        env = BanditEnvironment(losses)
        out = []
        for t in range(2):
            a = lr.act()
            out.append(a)
            fb, _ = env.round(t, a)
            lr.observe(fb)
        return np.stack(out, axis=1).astype(float)

    return sample


def test_audit_does_not_refute_dp_exp2_and_refutes_a_tenth_of_its_noise():
    # neighbouring sequences differ in round 1's losses: 0 vs 1 for both arms
    a = np.array([[0.0, 0.0], [0.5, 0.5]])
    b = np.array([[1.0, 1.0], [0.5, 0.5]])
    claim = DPEXP2(2, 2, budget=PrivacyBudget(1.0)).privacy

    def same_arm(out):  # round 1's loss decides whether round 2 repeats round 1's arm
        return (out[:, 0] == out[:, 1]).astype(float)

    kw = dict(claim=claim, statistic=same_arm, trials=100_000, pilot_trials=20_000, rng=4)
    ok = audit(_arm_sampler(1.0), a, b, **kw)
    assert not ok.any_refuted, str(ok)  # chance of a false refutation <= alpha = 1e-3
    bad = audit(_arm_sampler(0.1), a, b, **kw)
    assert bad.refuted, str(bad)


@pytest.mark.parametrize("eps", [None, 1.0])
def test_regret_within_theorem_4_1_on_an_adversarial_sequence(eps):
    """A switching-best oblivious sequence: mean realised regret below Theorem 4.1's bound."""
    from dponline.environments import switching_best_losses

    T, N, R = 2000, 5, 100
    env = BanditEnvironment(switching_best_losses(T, N, switches=3, gap=0.3, rng=1))
    lr = DPEXP2(N, T, budget=maybe_budget(eps), replicas=R, rng=2)
    cum = np.zeros(R)
    for t in range(T):
        fb, loss = env.round(t, lr.act())
        lr.observe(fb)
        cum += loss
    regret = env.regret(np.broadcast_to(cum[:, None], (R, T)))[:, -1]
    bound = exp2_proven_regret_bound(N, T, lr.laplace_scale, eta=lr.eta, gamma=lr.gamma)
    assert regret.mean() <= bound


def test_complex_loss_is_refused():
    lr = DPEXP2(3, 10, budget=PrivacyBudget(1.0), rng=0)
    lr.act()
    with pytest.raises(TypeError, match="real"):
        lr.observe(BanditFeedback(np.array([0.5 + 1j])))


def test_general_action_set_estimate_is_unbiased_and_reduces_to_the_multi_armed_case():
    from dponline.bandits.exp2 import EXP2

    # k-subsets of 4 arms (k = 2): P = E[a a'] is full rank under uniform exploration
    actions = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0], [0, 1, 0, 1],
                        [0, 0, 1, 1]], dtype=float)  # fmt: skip
    R = 200_000
    alg = EXP2(eta=0.1, gamma=0.3, replicas=R, rng=np.random.default_rng(0), actions=actions)
    loss = np.array([0.1, 0.9, 0.4, 0.6])
    alg.act()
    est = alg.loss_estimate(alg.played() @ loss)
    # l~ = P^+ x x' l has mean P^+ P l = l. Under the uniform p of the first round each
    # coordinate takes values in an interval of width below 5, so by Hoeffding the mean over
    # 2e5 replicas misses by 0.05 with probability below 2 exp(-2e5 0.05^2 2 / 25) = 1e-17
    np.testing.assert_allclose(est.mean(axis=0), loss, atol=0.05)
    # the multi-armed bandit is the standard basis: the same draws and weights either way
    a = DPEXP2(3, 50, budget=PrivacyBudget(1.0), rng=5, replicas=4)
    b = DPEXP2(3, 50, budget=PrivacyBudget(1.0), rng=5, replicas=4, actions=np.eye(3),
               eta=a.eta, gamma=a.gamma)  # fmt: skip
    assert b.algorithm.one_hot
    for t in range(20):
        np.testing.assert_array_equal(a.act(), b.act())
        fb = BanditFeedback(np.full(4, 0.25 + 0.5 * (t % 2)))
        a.observe(fb)
        b.observe(fb)
    np.testing.assert_allclose(a.probabilities(), b.probabilities())


def test_general_action_set_sensitivity_and_exploration():
    actions = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    mu = np.array([0.5, 0.25, 0.25])
    lr = DPEXP2(3, 100, budget=PrivacyBudget(1.0), actions=actions, exploration=mu,
                eta=0.1, gamma=0.5, rng=0)  # fmt: skip
    # losses in [0, 1]^3: <l - l', a> moves by at most ||a||_1 = 2 (Lemma 4.2 with ||a||_inf = 1)
    assert lr.calibrator.sensitivity == 2.0 and lr.laplace_scale == 2.0
    assert lr.privacy.epsilon == pytest.approx(1.0)
    np.testing.assert_allclose(lr.probabilities()[0], 0.5 * np.full(3, 1 / 3) + 0.5 * mu)
    with pytest.raises(ValueError, match="give eta and gamma"):
        DPEXP2(3, 100, budget=PrivacyBudget(1.0), actions=actions)
    with pytest.raises(ValueError, match="exploration must be a distribution"):
        DPEXP2(3, 100, budget=None, actions=actions, exploration=[0.5, 0.5, 0.5], eta=1, gamma=1)
    lr.act()
    with pytest.raises(ValueError, match=r"outside the declared bounds: losses in the loss set"):
        lr.observe(BanditFeedback(np.array([2.5])))  # <l, a> <= 2 for l in [0, 1]^3
