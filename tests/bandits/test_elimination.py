"""Successive elimination and DP-SE (dponline.bandits.elimination): constants and round robin
by hand, eliminations on deterministic rewards, the fast path against round-by-round play,
resuming, the exact privacy of one elimination, and regret with fixed seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dponline.bandits.dp_ucb import DPUCB
from dponline.bandits.elimination import DPSE, SuccessiveElimination, dp_se_constants
from dponline.environments.k_armed import KArmedBandit
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import BanditFeedback
from tests.bandits.stochastic_arms_helpers import ExactRewards, play_rounds, same_state


def test_dp_se_constants_by_hand() -> None:
    r_e, h_e, c_e = dp_se_constants(1, 2, 0.5, 1.0)
    want_r = max(32 * math.log(32) / 0.25, 8 * math.log(16) / 0.5) + 1
    assert r_e == pytest.approx(want_r)
    assert h_e == pytest.approx(math.sqrt(math.log(32) / (2 * want_r)))
    assert c_e == pytest.approx(math.log(16) / want_r)
    # the Laplace term wins at small eps: e = 2, s = 3, beta = 1e-3, eps = 0.01
    r_e, _, c_e = dp_se_constants(2, 3, 1e-3, 0.01)
    assert r_e == pytest.approx(8 * math.log(4 * 3 * 4 / 1e-3) / (0.01 * 0.25) + 1)
    # non-private: no Laplace term, c_e = 0
    r_e, _, c_e = dp_se_constants(1, 2, 0.5, math.inf)
    assert r_e == pytest.approx(32 * math.log(32) / 0.25 + 1) and c_e == 0.0


def test_both_widths_are_at_most_an_eighth_of_the_epoch_gap() -> None:
    """h_e <= Delta_e / 8 and c_e <= Delta_e / 8 (so the margin is at most Delta_e / 2) over a
    grid of epochs, active arms, beta and eps."""
    e, s = np.meshgrid(np.arange(1, 25), np.arange(2, 50))
    gap = 2.0**-e
    for beta in (1e-9, 1e-3, 0.5):
        for eps in (1e-3, 0.1, 1.0, 30.0):
            _, h_e, c_e = dp_se_constants(e, s, beta, eps)
            assert np.all(h_e <= gap / 8) and np.all(c_e <= gap / 8)


def test_round_robin_over_the_active_arms() -> None:
    learner = SuccessiveElimination(5, 40, beta=0.5)
    learner.active[0] = [True, False, True, True, False]
    learner._refresh_order(np.array([0]))
    learner.epoch_pulls[0] = 2
    arms = play_rounds(learner, np.zeros(5), 6)[:, 0]
    assert arms.tolist() == [0, 2, 3, 0, 2, 3]


def test_successive_elimination_by_hand() -> None:
    """Rewards 1, 0, 0: after t sweeps the gap 1 passes 2 alpha_t at the first t with
    log(4 K t^2 / delta) / t < 1/4; from then on only arm 0 is played."""
    t_big, k = 2000, 3
    t = 1
    while math.log(4 * k * t * t * t_big) / t >= 0.25:
        t += 1
    learner = SuccessiveElimination(k, t_big)
    arms = play_rounds(learner, np.array([1.0, 0.0, 0.0]), t_big)[:, 0]
    assert arms[: 3 * t].tolist() == [0, 1, 2] * t
    assert np.all(arms[3 * t :] == 0)
    assert learner.active.tolist() == [[True, False, False]]
    assert learner.left.tolist() == [0]  # the last commitment runs to the horizon


def test_dp_se_eliminates_after_its_first_epoch() -> None:
    """Rewards 1, 0, 0 at eps = 1, beta = 1/2: every arm is pulled r = ceil(R_1) times round
    robin; arms 1 and 2 are eliminated (gap 1 against a margin below 1/4 and noise of scale
    1/(eps r) ~ 0.002: a miss has probability below 1e-100); then arm 0 to the horizon."""
    r_e, _, _ = dp_se_constants(1, 3, 0.5, 1.0)
    r = math.ceil(r_e)
    t_big = 3 * r + 50
    learner = DPSE(3, t_big, budget=PrivacyBudget(1.0), beta=0.5, replicas=2, rng=0)
    arms = play_rounds(learner, np.array([1.0, 0.0, 0.0]), t_big)
    assert np.all(arms[: 3 * r] == np.tile([0, 1, 2], r)[:, None])
    assert np.all(arms[3 * r :] == 0)
    assert learner.pulls.tolist() == [[r + 50, r, r]] * 2


@pytest.mark.parametrize(
    "make, t_big",
    [
        (lambda: SuccessiveElimination(4, 1000, beta=0.5, replicas=3, rng=1), 1000),
        (lambda: DPSE(4, 3000, budget=PrivacyBudget(1.0), beta=0.5, replicas=5, rng=1), 3000),
    ],
    ids=["successive-elimination", "dp-se"],
)
def test_the_fast_path_is_round_by_round_on_deterministic_rewards(make, t_big) -> None:
    """Means 1, 0, 1, 0 (two best arms, the elimination of each one up to the noise): uneven
    stretches, one started after act(), leave the same state and pulls as single rounds; the
    regret is the exact pseudo-regret of the pulls."""
    means = np.array([1.0, 0.0, 1.0, 0.0])
    slow = make()
    play_rounds(slow, means, t_big)
    fast = make()
    env = KArmedBandit(means, t_big, rng=0)
    regret = np.zeros(fast.replicas)
    for n in (1, 5, 2, 300, 0, 333):
        regret += fast.play_stochastic(env, n).regret
    fast.act()
    regret += fast.play_stochastic(env, t_big - fast.t).regret
    assert same_state(slow.state_dict(), fast.state_dict())
    np.testing.assert_array_equal(regret, slow.pulls @ (1.0 - means))
    assert np.all(slow.active.sum(axis=1) < 4)  # something was eliminated


def test_a_refused_reward_sum_refuses_to_go_on() -> None:
    class Broken(KArmedBandit):
        def reward_sums(self, arms, counts, rng=None):
            return np.asarray(counts, dtype=float) + 0.5

    learner = DPSE(2, 100, budget=PrivacyBudget(1.0), replicas=2, rng=0)
    play_rounds(learner, np.array([1.0, 0.0]), 3)
    before = learner.state_dict()
    with pytest.raises(ValueError, match="outside"):
        learner.play_stochastic(Broken(np.array([1.0, 0.0]), 100), 10)
    with pytest.raises(RuntimeError, match="meet again"):
        learner.act()
    learner.load_state_dict(before)
    assert same_state(before, learner.state_dict())


def test_a_resumed_run_is_bit_exact() -> None:
    """Saved mid-epoch, loaded into a DP-SE built with another seed: the same actions and final
    state as the uninterrupted run."""
    means = np.array([0.8, 0.2])
    t_big = 1000
    rewards = np.random.default_rng(0).random((t_big, 2, 2)) < means

    def run(learner, rounds):
        out = []
        for t in rounds:
            a = learner.act()
            out.append(a)
            learner.observe(BanditFeedback(1.0 - rewards[t, np.arange(2), a]))
        return out

    whole = DPSE(2, t_big, budget=PrivacyBudget(1.0), beta=0.5, replicas=2, rng=4)
    reference = run(whole, range(t_big))
    first = DPSE(2, t_big, budget=PrivacyBudget(1.0), beta=0.5, replicas=2, rng=4)
    head = run(first, range(601))
    resumed = DPSE(2, t_big, budget=PrivacyBudget(1.0), beta=0.5, replicas=2, rng=5)
    resumed.load_state_dict(first.state_dict())
    tail = run(resumed, range(601, t_big))
    np.testing.assert_array_equal(np.array(reference), np.array(head + tail))
    assert same_state(whole.state_dict(), resumed.state_dict())
    assert np.all(whole.active.sum(axis=1) == 1)  # the resumed part held the elimination


def _eliminated(gap: float, margin: float, scale: float) -> float:
    """P(L1 - L0 > margin - gap) for L0, L1 i.i.d. Lap(scale): arm 0, whose epoch mean is
    ``gap`` below arm 1's, is eliminated when mu~_1 - mu~_0 = gap + L1 - L0 > margin."""
    lap = stats.laplace(scale=scale)
    x = margin - gap
    value, _ = integrate.quad(lambda l0: lap.sf(x + l0) * lap.pdf(l0), -40 * scale, 40 * scale)
    return value


def test_one_elimination_is_exactly_epsilon_dp_and_plays_as_computed() -> None:
    """Two arms, the first epoch at eps = 1: round 1's reward of arm 0 is 1 or 0, its other
    rewards 1 - rest, arm 1's all 1 (the audit's streams). The exact probability that arm 0 is
    eliminated moves by a factor at most e^eps between the two (and more than e^(eps/4));
    the learner's frequency over 8,000 replicas agrees within 4.5 standard errors (false
    failure about 7e-6 per stream)."""
    eps, beta = 1.0, 0.5
    r_e, h_e, c_e = dp_se_constants(1, 2, beta, eps)
    r = math.ceil(r_e)
    margin = 2 * h_e + 2 * c_e
    rest = (r * margin - 0.5) / (r - 1)
    p = {}
    for r0 in (1.0, 0.0):
        gap = (1.0 - r0 + (r - 1) * rest) / r
        p[r0] = _eliminated(gap, margin, 1.0 / (eps * r))
    loss = max(abs(math.log(p[0.0] / p[1.0])), abs(math.log((1 - p[1.0]) / (1 - p[0.0]))))
    assert eps / 4 < loss <= eps + 1e-9
    reps = 8_000
    for r0, want in p.items():
        learner = DPSE(2, 2 * r + 1, budget=PrivacyBudget(eps), beta=beta, replicas=reps, rng=9)
        learner.act()  # round 1 (arm 0) round by round, the rest of the epoch at once
        learner.observe(BanditFeedback(np.full(reps, 1.0 - r0)))
        learner.play_stochastic(ExactRewards([1.0 - rest, 1.0]), 2 * r - 1)
        got = np.mean(~learner.active[:, 0])
        assert abs(got - want) < 4.5 * math.sqrt(want * (1 - want) / reps)


def test_regret_with_fixed_seeds() -> None:
    """Means (0.9, 0.4), eps = 1, beta = 1/T, T = 50,000, 10 replicas (fixed seeds): DP-SE
    eliminates arm 1 at the end of its first epoch (gap 0.5 against a margin of at most 1/4:
    with probability at least 1 - beta by the paper's analysis), so its regret is exactly
    0.5 r_1, r_1 = ceil(R_1); successive elimination's is below that (its confidence uses every
    sample). A false failure needs a wrong or late elimination in one of 10 replicas:
    probability below 10 beta = 2e-4 (much less in fact: the gap is twice the margin)."""
    means = np.array([0.9, 0.4])
    t_big = 50_000
    r_1 = math.ceil(dp_se_constants(1, 2, 1 / t_big, 1.0)[0])
    env = KArmedBandit(means, t_big, rng=3)
    dp = DPSE(2, t_big, budget=PrivacyBudget(1.0), replicas=10, rng=4)
    np.testing.assert_allclose(dp.play_stochastic(env, t_big).regret, 0.5 * r_1)
    env = KArmedBandit(means, t_big, rng=3)
    se = SuccessiveElimination(2, t_big, replicas=10).play_stochastic(env, t_big).regret
    assert np.all(se < 0.5 * r_1)


def test_the_options_are_checked() -> None:
    with pytest.raises(ValueError, match="beta"):
        DPSE(3, 10, budget=None, beta=1.5)
    with pytest.raises(ValueError, match="beta"):
        SuccessiveElimination(3, 10, beta=0.0)
    with pytest.raises(TypeError, match="delta"):  # the privacy budget's name, not a confidence
        SuccessiveElimination(3, 10, delta=0.5)
    pure = DPSE(3, 10, budget=PrivacyBudget(1.0, 1e-6)).privacy  # pure DP meets delta > 0
    assert (pure.epsilon, pure.delta) == (1.0, 0.0)
    g = DPSE(3, 10, budget=PrivacyBudget(2.0)).privacy
    assert g.epsilon == 2.0 and g.delta == 0.0 and "Sajed & Sheffet" in g.derivation


@pytest.mark.parametrize("name", ["successive-elimination", "dp-se"])
def test_act_after_the_horizon_once_one_arm_is_left(name):
    """A replica down to its last arm commits to it until T; act() after round T (allowed:
    post-processing) must not ask for an empty commitment."""
    from dponline.environments.k_armed import KArmedBandit
    from dponline.experiments.rounds import play
    from dponline.registry import build_learner

    env = KArmedBandit(means=[0.0, 1.0], horizon=4000, rng=0)
    eps = 5.0 if name == "dp-se" else None
    learner = build_learner(name, env, epsilon=eps, rng=0)
    play(env, learner, range(4000), keep=False, blocks=True)
    assert learner._size[0] == 1  # eliminated down to one arm before T
    assert learner.act()[0] == 1


class _PlusMinus:
    """Every reward is -1 or +2, never in [0, 1], yet each arm's mean lies in [0, 1] and a
    commitment's sum mostly in [0, count]; it makes no promise about single rewards."""

    horizon, dim, n_arms, reveals_context = 2_000, 2, 2, False

    def __init__(self, promise: bool | None = None) -> None:
        self.means = np.array([0.6, 0.3])
        self._gen = np.random.default_rng(0)
        if promise is not None:
            self.rewards_in_unit_interval = promise

    def _draw(self, arms, n):
        return np.where(self._gen.random(n) < (self.means[arms] + 1) / 3, 2.0, -1.0)

    def round(self, t, action):
        arms = np.asarray(action, dtype=int)
        return BanditFeedback(1.0 - self._draw(arms, arms.shape)), 1.0 - self.means[arms]

    def reward_sums(self, arms, counts, rng=None):
        return np.array(
            [self._draw(np.full(c, a), c).sum() for a, c in zip(arms, counts, strict=True)]
        )


def test_the_fast_path_needs_the_promise_of_rewards_in_the_unit_interval() -> None:
    # from a review: sums hid rewards of -1 and +2 (3x the sensitivity the noise is for) and
    # the round loop took the fast path for any environment with means and reward_sums
    from dponline.experiments.rounds import play

    for promise in (None, False):
        env = _PlusMinus(promise)
        learner = DPSE(2, env.horizon, budget=PrivacyBudget(1.0), rng=0)
        with pytest.raises((TypeError, ValueError), match="rewards_in_unit_interval"):
            learner.play_stochastic(env, 10)
        with pytest.raises(ValueError, match="must lie in"):  # played round by round instead
            play(env, learner, range(env.horizon), keep=False, blocks=True)
        assert learner.t == 0  # refused at its first reward


def test_reward_sums_must_be_real_numbers() -> None:
    for bad in (np.array(["1.0", "2.0"]), np.array([1.0 + 1.0j, 2.0])):

        class Odd(KArmedBandit):
            def reward_sums(self, arms, counts, rng=None, bad=bad):
                return bad

        for cls in (DPSE, DPUCB):
            learner = cls(2, 100, budget=PrivacyBudget(1.0), replicas=2, rng=0)
            with pytest.raises(ValueError, match="environment reward sums must be real"):
                learner.play_stochastic(Odd(np.array([0.5, 0.5]), 100), 50)
