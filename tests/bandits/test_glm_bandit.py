"""Han et al. Algorithm 3 (DP GLM bandit) and its contextual environments (its GLM losses:
tests/losses/test_glm.py)."""

import warnings

import numpy as np
import pytest

from dponline.bandits.glm_bandit import DPGLMBandit, default_warmup
from dponline.environments.contextual import (
    DigitsBandit,
    SyntheticGLMBandit,
    synthetic_glm_parameters,
)
from dponline.privacy.audit import audit
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyNotion
from dponline.protocol import ContextFeedback, RewardFeedback
from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe
from tests.helpers import maybe_budget


def _play(bandit, env, horizon):
    actions, regret = [], np.zeros(bandit.replicas)
    for t in range(horizon):
        bandit.observe(ContextFeedback(env.context(t)))
        a = bandit.act()
        fb, r = env.round(t, a)
        bandit.observe(fb)
        actions.append(a)
        regret += r
    return np.array(actions), regret


def test_warmup_schedule_synthetic_updates_and_sample_counts():
    env = SyntheticGLMBandit(5, 40, link="linear", rng=0)
    b = DPGLMBandit(
        5,
        3,
        40,
        warmup=4,
        h_sub=env.h_sub,
        link="linear",
        reward_range=env.reward_range,
        budget=PrivacyBudget(1.0, 1e-3),
        replicas=3,
        rng=0,
    )
    for t in range(40):
        b.observe(ContextFeedback(env.context(t)))
        a = b.act()
        before = [(e.t, e.grad_sum.copy()) for e in b.estimators]
        b.observe(env.round(t, a)[0])
        if t < 12:  # lines 3-8: arm t // 4 for every replica, only it learns
            assert (a == t // 4).all()
            assert [e.t - s for e, (s, _) in zip(b.estimators, before, strict=True)] == [
                int(i == t // 4) for i in range(3)
            ]
        else:  # lines 16-17: every arm steps; an unplayed arm's gradient sum is unchanged
            assert all(e.t == s + 1 for e, (s, _) in zip(b.estimators, before, strict=True))
            for i, (e, (_, g)) in enumerate(zip(b.estimators, before, strict=True)):
                np.testing.assert_array_equal(e.grad_sum[a != i], g[a != i])
    # every arm's Algorithm 2 ran exactly its n = t_0 + T - K t_0 samples
    assert all(e.t == e.horizon == 4 + 40 - 12 for e in b.estimators)
    with pytest.raises(ValueError, match="built for 40 rounds"):
        b.observe(ContextFeedback(env.context(40)))


def test_preselection_and_greedy_choice_by_hand():
    b = DPGLMBandit(
        3,
        3,
        20,
        warmup=1,
        h_sub=0.4,
        link="linear",
        reward_range=(-2.0, 2.0),
        budget=None,
        replicas=1,
        rng=0,
    )
    b.t = 3  # past the warm-up
    b.forced = np.array([[[1.0, 0, 0]], [[0.9, 0, 0]], [[0.0, 0, 0]]])  # forced scores 1, .9, 0
    for est, th in zip(b.estimators, ([0.0, 0, 0], [0.5, 0, 0], [0.9, 0, 0]), strict=True):
        est.theta = np.array([th])
    b.observe(ContextFeedback(np.array([1.0, 0.0, 0.0])))
    # K_t = {i: forced_i > 1 - 0.2} = {0, 1}; greedy among them on current: arm 1 (0.5 > 0);
    # arm 2 has the best current score but was not pre-selected
    assert b.act().tolist() == [1]


def test_privacy_statement_and_contract():
    env = SyntheticGLMBandit(5, 200, rng=0)
    tight = DPGLMBandit(5, 3, 200, h_sub=env.h_sub, budget=PrivacyBudget(1.0, 1e-3), rng=0)
    assert tight.privacy.notion is PrivacyNotion.JOINT_DP
    assert tight.privacy.neighbouring is Neighbouring.ONE_USER
    assert tight.privacy.epsilon == pytest.approx(1.0, rel=1e-6)
    assert "synthetic" in tight.privacy.derivation
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the paper's noise proves more than asked: no warning
        paper = DPGLMBandit(
            5,
            3,
            200,
            h_sub=env.h_sub,
            budget=PrivacyBudget(1.0, 1e-3, "paper", allow_weaker=True),
            rng=0,
        )
    assert paper.privacy.epsilon < 1.0
    # tight noise (Gumbel, bounded range) is smaller than the paper's Laplace noise
    assert (tight.estimators[0]._scales < paper.estimators[0]._scales).all()
    assert default_warmup(5, 200, 1.0) == 37  # ceil(ln(1000) ln(200))
    assert tight.warmup == default_warmup(5, 200, 1.0, arms=3) == 33  # capped at T / (2K)
    with pytest.raises(ValueError, match="context first"):
        tight.act()
    with pytest.raises(ValueError, match="shape"):
        tight.observe(ContextFeedback(np.ones(4)))
    with pytest.raises(ValueError, match=r"\|\|x\|\|_inf = 2.0 exceeds x_bound = 1.0"):
        tight.observe(ContextFeedback(np.r_[1.0, 2.0, 0, 0, 0]))  # refused before any update
    tight.observe(ContextFeedback(np.ones(5)))
    with pytest.raises(ValueError, match="after a context and an action"):
        tight.observe(RewardFeedback(np.array([1.0])))  # no act() yet
    tight.act()
    before = [e.state_dict() for e in tight.estimators]
    with pytest.raises(ValueError, match="outside"):
        tight.observe(RewardFeedback(np.array([2.0])))  # reward outside [0, 1]
    for est, saved in zip(tight.estimators, before, strict=True):  # every arm still in step
        assert est.t == saved["t"]
        np.testing.assert_array_equal(est.theta, saved["theta"])
    with pytest.raises(ValueError, match="horizon > arms"):
        DPGLMBandit(5, 3, 30, budget=PrivacyBudget(1.0, 1e-6), warmup=10, h_sub=0.1)


def test_state_dict_resumes_the_same_run():
    env_a, env_b = SyntheticGLMBandit(5, 300, rng=1), SyntheticGLMBandit(5, 300, rng=1)
    kw = dict(warmup=10, h_sub=env_a.h_sub, budget=PrivacyBudget(1.0, 1e-3), replicas=4)
    ref = DPGLMBandit(5, 3, 300, rng=7, **kw)
    ref_actions, _ = _play(ref, env_a, 300)
    first = DPGLMBandit(5, 3, 300, rng=7, **kw)
    head, _ = _play(first, env_b, 150)
    state, env_state = first.state_dict(), env_b.state_dict()
    resumed = DPGLMBandit(5, 3, 300, rng=99, **kw)
    resumed.load_state_dict(state)
    env_c = SyntheticGLMBandit(5, 300, rng=5)
    env_c.load_state_dict(env_state)
    tail = []
    for t in range(150, 300):
        resumed.observe(ContextFeedback(env_c.context(t)))
        a = resumed.act()
        resumed.observe(env_c.round(t, a)[0])
        tail.append(a)
    np.testing.assert_array_equal(np.r_[head, np.array(tail)], ref_actions)
    with pytest.raises(ValueError, match="differently configured"):
        DPGLMBandit(5, 3, 300, rng=7, **{**kw, "warmup": 11}).load_state_dict(state)


def test_environments_meet_their_assumptions():
    theta = synthetic_glm_parameters(6)
    assert np.abs(theta).sum(axis=1).max() <= 1.0
    env = SyntheticGLMBandit(6, 10, rng=0)
    rng = np.random.default_rng(1)
    x = np.hstack([np.ones((20_000, 1)), rng.uniform(-1, 1, (20_000, 5))])
    z = x @ theta.T
    best = z[:, :2].max(axis=1)
    assert (best - z[:, 2] >= 0.25 - 1e-12).all()  # arm 3 never optimal, gap s g = 1/4
    share = (z[:, 0] > z[:, 1]).mean()
    assert 0.48 < share < 0.52  # arms 1 and 2 each optimal on half the contexts
    for i in (0, 1):  # Assumption 4.3 on U_i: E[x x' | U_i] positive definite
        region = x[np.argmax(z[:, :2], axis=1) == i]
        assert np.linalg.eigvalsh(region.T @ region / len(region)).min() > 0.05
    fb, regret = env.round(0, np.array([0, 1, 2]))
    assert set(np.unique(fb.reward)) <= {0.0, 1.0} and (regret >= 0).all() and regret[2] > 0
    digits = DigitsBandit(10, rng=0)
    assert digits.dim == 65 and digits.arms == 10
    ctx = digits.context(0)
    assert ctx[0] == 1.0 and 0 <= ctx.min() and ctx.max() <= 1.0
    fb, loss = digits.round(0, np.arange(10))
    assert fb.reward.sum() == 1 and loss.sum() == 9


def test_private_bandit_learns_the_synthetic_instance():
    """Sanity of the whole pipeline: over 3,000 rounds (8 seeds) the non-private bandit's
    pseudo-regret is far below that of playing uniformly at random, and the private one at
    epsilon = 4 lies between the two. Seeds fixed; the margins are several standard errors."""
    env_kw = dict(link="linear", rng=3)
    horizon = 3000
    env = SyntheticGLMBandit(10, horizon, **env_kw)
    rng = np.random.default_rng(0)
    uniform = sum(env.round(t, rng.integers(3, size=8))[1] for t in range(horizon)).mean()
    results = {}
    for eps in (None, 4.0):
        env = SyntheticGLMBandit(10, horizon, **env_kw)
        b = DPGLMBandit(
            10,
            3,
            horizon,
            h_sub=env.h_sub,
            link="linear",
            reward_range=env.reward_range,
            budget=maybe_budget(eps, 1 / horizon),
            replicas=8,
            rng=1,
        )
        results[eps] = _play(b, env, horizon)[1].mean()
    assert results[None] < 0.2 * uniform
    assert results[None] < results[4.0] < uniform


AUDIT_REWARD = 100.0


def _audit_bandit(horizon, replicas=1, rng=None):
    """2 arms in d = 2, t_0 = 1, linear link, rewards in [-100, 100], (1, 1e-5)-JDP."""
    return DPGLMBandit(
        2,
        2,
        horizon,
        warmup=1,
        h_sub=1.0,
        link="linear",
        reward_range=(-AUDIT_REWARD, AUDIT_REWARD),
        budget=PrivacyBudget(1.0, 1e-5),
        replicas=replicas,
        rng=rng,
    )


def _audit_sampler(fraction, horizon=5):
    """Datasets: rows (x_t, r_t(arm 0), r_t(arm 1)); output: every arm's estimator after every
    round (what the JDP proof releases)."""

    def sample(data, m, rng):
        b = _audit_bandit(horizon, m, rng)
        if fraction != 1.0:
            b.scale_noise(fraction)  # the public handle (every arm's Algorithm 2)
        out = []
        for t in range(horizon):
            b.observe(ContextFeedback(data[t, :2]))
            a = b.act()
            b.observe(RewardFeedback(data[t, 2:][a]))
            out.append(np.concatenate([e.theta for e in b.estimators], axis=1))
        return np.stack(out, axis=1)

    return sample


def test_audit_joint_dp():
    """User 3 (the first after the warm-up) has reward +100 in one stream and -100 in the
    other, whichever arm it gets: the arm it plays sees its gradient (zeta(z) - r) x move by
    200 in l_inf against the proven sensitivity 2(beta D + L) = 2(2 + 101) = 206. Claim not
    refuted (false-refutation chance <= 1e-3), a tenth of the noise refuted."""
    horizon = 5
    a = np.zeros((horizon, 4))
    a[:, 0] = 1.0
    b = a.copy()
    a[2, 2:], b[2, 2:] = AUDIT_REWARD, -AUDIT_REWARD
    claim = _audit_bandit(horizon).privacy
    kw = dict(claim=claim, trials=50_000, pilot_trials=10_000, rng=6)
    ok = audit(_audit_sampler(1.0), a, b, **kw)
    assert not ok.any_refuted, str(ok)
    bad = audit(_audit_sampler(0.1), a, b, **kw)
    assert bad.refuted, str(bad)


def test_noisy_min_observe_each_matches_shared_samples():
    """Algorithm 2 fed one sample per replica equals feeding each replica alone."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, size=(6, 3, 2))
    y = rng.uniform(-1, 1, size=(6, 3))
    together = NoisyMinFrankWolfe(2, 6, budget=None, replicas=3)
    for t in range(6):
        together.observe_each(x[t], y[t])
    for r in range(3):
        alone = NoisyMinFrankWolfe(2, 6, budget=None)
        for t in range(6):
            alone.observe_each(x[t, r : r + 1], y[t, r : r + 1])
        np.testing.assert_allclose(alone.theta[0], together.theta[r])
    with pytest.raises(ValueError, match="shape"):
        NoisyMinFrankWolfe(2, 6, budget=None, replicas=3).observe_each(x[0, :2], y[0])


def test_a_load_refuses_states_off_the_schedule():
    """From a review: forced-sampling estimators off the l_1 ball or set during the warm-up,
    a warm-up action other than the scheduled arm (replicas disagreeing among them) and arms
    whose estimators took other than their scheduled steps were all loaded (only action[0]'s
    arm then learned, from every replica). Each is refused; the states a run reaches load."""

    def fresh() -> DPGLMBandit:
        return DPGLMBandit(
            3, 3, 30, warmup=2, h_sub=0.1, budget=PrivacyBudget(1.0, 1e-3), replicas=2, rng=0
        )

    run = fresh()
    rng = np.random.default_rng(1)
    states = []
    for _ in range(8):  # through the end of the warm-up (round 6) and two rounds after it
        run.observe(ContextFeedback(rng.uniform(-0.5, 0.5, size=3)))
        run.act()
        states.append(run.state_dict())  # within a round: the action saved
        run.observe(RewardFeedback(rng.uniform(0.0, 1.0, size=2)))
        states.append(run.state_dict())
    for state in states:
        fresh().load_state_dict(state)
    warm, after = states[0], states[-1]  # round 0 with its action; round 8
    bad = [
        (dict(warm, forced=np.full((3, 2, 3), 1e-3)), "set in warm-up round 0"),
        (dict(after, forced=np.full((3, 2, 3), 1.0)), "leave the l_1 ball of radius 1.0"),
        (dict(warm, action=np.array([2, 1])), "not the scheduled arm 0"),
        (dict(warm, action=np.array([0, 1])), "not the scheduled arm 0"),
    ]
    skewed = [dict(e) for e in after["estimators"]]
    skewed[2] = states[-3]["estimators"][2]  # arm 2 one step behind
    bad.append((dict(after, estimators=skewed), "arm 2 has taken 3 steps at round 8"))
    for state, match in bad:
        with pytest.raises(ValueError, match=match):
            fresh().load_state_dict(state)
