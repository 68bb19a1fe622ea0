"""DP-UCB (dponline.bandits.dp_ucb): the per-arm trees of the paper calibration made visible
with unit noise, the widening of both calibrations, the Laplace tail bound, UCB1 without a
budget, resuming, the exact privacy of a tiny case, and regret with fixed seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dponline.bandits.dp_ucb import (
    DPUCB,
    laplace_sum_tail,
    mishra_thakurta_v,
    tree_levels,
)
from dponline.bandits.index_policies import UCB1
from dponline.environments.k_armed import KArmedBandit
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import BanditFeedback
from tests.bandits.stochastic_arms_helpers import ExactRewards, play_rounds, same_state


def test_levels_cover_step_t() -> None:
    """ceil(log2(T + 1)): a power of two T needs one level more than ceil(log2 T)."""
    assert [tree_levels(t) for t in (1, 2, 3, 4, 7, 8, 1000, 1024)] == [1, 2, 2, 3, 3, 4, 10, 11]
    assert tree_levels(8) > math.ceil(math.log2(8))


def test_v_by_hand() -> None:
    k, t, eps, gamma = 10, 1000, 0.5, 1e-12
    lt = math.log(t)
    assert mishra_thakurta_v(k, t, eps, gamma) == pytest.approx(
        k * lt * lt * math.log(k * t * lt / gamma) / eps
    )


def test_the_paper_trees_with_unit_noise_add_popcount_draws() -> None:
    """Every noise draw replaced by 1 (TF-Privacy's trick): an arm's private sum after n pulls
    is its exact sum plus popcount(n), the noisy nodes of the 1-bits of n."""
    learner = DPUCB(2, 64, budget=PrivacyBudget(1.0, calibration="paper"), rng=0)
    learner._noise = lambda rows, scale, kind="laplace": np.ones(rows.size)
    rewards = np.random.default_rng(1).random(40)
    arms = play_rounds(learner, None, 40, rewards=rewards)[:, 0]
    for a in (0, 1):
        n = int(np.sum(arms == a))
        exact = rewards[arms == a].sum()
        assert learner.private_sum[0, a] == pytest.approx(exact + bin(n).count("1"))
    assert learner.levels == 7  # T = 64 has 7 bits


def test_the_paper_node_noise_is_levels_over_epsilon() -> None:
    """Lap(L / eps) per node: after one pull of each arm the private sum is reward + one draw.
    Kolmogorov-Smirnov on 4,000 x 2 draws (fixed seed; p > 1e-4 fails with probability 1e-4
    for a correct sampler)."""
    eps = 2.0
    learner = DPUCB(2, 100, budget=PrivacyBudget(eps, calibration="paper"), replicas=4000, rng=2)
    play_rounds(learner, np.array([0.5, 0.5]), 2)
    residual = (learner.private_sum - 0.5).ravel()
    scale = tree_levels(100) / eps
    assert stats.kstest(residual, stats.laplace(scale=scale).cdf).pvalue > 1e-4


def test_the_laplace_tail_bound_holds_and_is_not_loose_by_much() -> None:
    """P(Z >= sigma (L + log 2)) <= e^-L for weighted sums of Laplace variables: exactly for a
    single Laplace (the worst case of the proof, where the bound is within a factor ~2^0.4 of
    the tail at L = 10), and by simulation for 20 terms (fixed seed; the simulated frequency is
    far below the bound, a false failure needs it to be 10 standard errors off)."""
    for level in (1.0, 3.0, 10.0, 30.0):
        b = 1.0
        sigma = math.sqrt(2.0) * b
        u = float(laplace_sum_tail(sigma, level))
        exact = 0.5 * math.exp(-u / b)
        assert exact <= math.exp(-level)
    gen = np.random.default_rng(0)
    c = gen.random(20)
    z = gen.laplace(size=(200_000, 20)) @ c
    sigma = math.sqrt(2.0 * np.sum(c * c))
    for level in (2.0, 5.0):
        assert np.mean(z >= laplace_sum_tail(sigma, level)) <= math.exp(-level)


def test_the_tight_learner_runs_the_best_counter_with_its_exact_widening() -> None:
    learner = DPUCB(3, 500, budget=PrivacyBudget(1.0), rng=0)
    assert learner.mechanism == "kary_tree" and learner.counter is not None
    assert learner.privacy.epsilon == 1.0 and learner.privacy.delta == 0.0
    assert "sensitivity" in learner.privacy.derivation
    t = np.array([100])
    sigma = math.sqrt(learner.counter.variance(100))
    want = sigma * (4.0 * math.log(100) + math.log(2.0))
    assert learner.widening(np.array([0]), t)[0, 0] == pytest.approx(want)
    gauss = DPUCB(3, 500, budget=PrivacyBudget(1.0, 1e-6), noise="gaussian", rng=0)
    assert gauss.mechanism == "scaled_sqrt" and gauss.privacy.delta == 1e-6
    sigma = math.sqrt(gauss.counter.variance(100))
    want = sigma * math.sqrt(2.0 * 4.0 * math.log(100))
    assert gauss.widening(np.array([0]), t)[0, 0] == pytest.approx(want)


def test_without_a_budget_it_is_ucb1() -> None:
    rewards = (np.random.default_rng(3).random((300, 4)) < [0.6, 0.5, 0.4, 0.55]).astype(float)
    ours, ucb1 = DPUCB(4, 300, budget=None), UCB1(4, 300)
    for t in range(300):
        a, b = ours.act(), ucb1.act()
        assert a.tolist() == b.tolist()
        ours.observe(BanditFeedback(1.0 - rewards[t, a]))
        ucb1.observe(BanditFeedback(1.0 - rewards[t, b]))


@pytest.mark.parametrize("calibration", ["paper", "tight"])
def test_a_resumed_run_is_bit_exact(calibration) -> None:
    means = np.array([0.7, 0.3, 0.6])
    rewards = np.random.default_rng(0).random((50, 3, 3)) < means

    def run(learner, rounds):
        out = []
        for t in rounds:
            a = learner.act()
            out.append(a)
            learner.observe(BanditFeedback(1.0 - rewards[t, np.arange(3), a]))
        return out

    def build(seed):
        return DPUCB(
            3, 50, budget=PrivacyBudget(1.0, calibration=calibration), replicas=3, rng=seed
        )

    whole = build(5)
    reference = run(whole, range(50))
    first = build(5)
    head = run(first, range(21))
    resumed = build(6)
    resumed.load_state_dict(first.state_dict())
    tail = run(resumed, range(21, 50))
    np.testing.assert_array_equal(np.array(reference), np.array(head + tail))
    assert same_state(whole.state_dict(), resumed.state_dict())


def test_the_fast_path_is_round_by_round_on_deterministic_rewards() -> None:
    """One-round commitments through the base class's fast path: the same state as single
    rounds when the rewards are the arms' means (the paper trees draw per replica)."""
    means = np.array([1.0, 0.0, 0.5])
    slow = DPUCB(3, 80, budget=PrivacyBudget(1.0, calibration="paper"), replicas=3, rng=8)
    play_rounds(slow, means, 80)
    fast = DPUCB(3, 80, budget=PrivacyBudget(1.0, calibration="paper"), replicas=3, rng=8)
    fast.play_stochastic(ExactRewards(means), 33)
    fast.play_stochastic(ExactRewards(means), 47)
    assert same_state(slow.state_dict(), fast.state_dict())


@pytest.mark.parametrize("calibration", ["paper", "tight"])
def test_round_3_is_exactly_epsilon_dp_and_plays_as_computed(calibration) -> None:
    """Two arms pulled once (rewards r0 and 1/2), then the argmax of indices that differ only
    by the private sums (the same N_a, t and widening): round 3 plays arm 0 when
    r0 + Z0 >= 1/2 + Z1. Paper trees: Z is one node's Lap(L / eps), L = 2 at T = 3, so the
    exact probability is a one-dimensional integral; its privacy loss lies in (eps/8, eps] and
    the learner's frequency over 8,000 replicas agrees within 4.5 standard errors (false
    failure about 7e-6 per stream). Both calibrations: the empirical privacy loss of the event
    stays below eps plus 9 standard errors of the log frequencies."""
    eps, reps = 1.0, 8_000
    freq = {}
    for r0 in (1.0, 0.0):
        learner = DPUCB(
            2, 3, budget=PrivacyBudget(eps, calibration=calibration), replicas=reps, rng=3
        )
        arms = play_rounds(learner, None, 3, rewards=[r0, 0.5, 0.5])
        freq[r0] = float(np.mean(arms[2] == 0))
    if calibration == "paper":
        lap = stats.laplace(scale=2.0 / eps)
        exact = {}
        for r0 in (1.0, 0.0):
            # P(L0 - L1 >= 1/2 - r0)
            x = 0.5 - r0
            exact[r0], _ = integrate.quad(lambda z, x=x: lap.sf(x + z) * lap.pdf(z), -80, 80)
            p = exact[r0]
            assert abs(freq[r0] - p) < 4.5 * math.sqrt(p * (1 - p) / reps)
        p1, p0 = exact[1.0], exact[0.0]
        loss = max(abs(math.log(p1 / p0)), abs(math.log((1 - p0) / (1 - p1))))
        assert eps / 8 < loss <= eps
    # the empirical privacy loss of the event stays below eps plus sampling error (4.5 standard
    # errors of the log frequencies: false failure about 7e-6 per frequency)
    se = max(math.sqrt((1 - p) / (p * reps)) for p in (freq[1.0], freq[0.0], 1 - freq[0.0]))
    assert math.log(freq[1.0] / freq[0.0]) <= eps + 9 * se


def test_regret_with_fixed_seeds() -> None:
    """Means (0.9, 0.3), eps = 1, T = 2,000, 10 replicas (fixed seeds). The paper's widening
    v = K (log T)^2 log(K T log T / T^-4) ~ 5,000 keeps it close to round robin (regret near
    0.6 x 1,000 = 600; 558 to 568 here), the tight learner's widening (~ 100 x log t) is
    smaller (435 to 446 here) and UCB1 (no budget) pays least (17 to 34 here). The
    inequalities hold for every replica with margins of 20% and more at these seeds; the
    runs' spread (sd below 1% of the regret for the private learners) makes a reordering a
    many-standard-deviation event."""
    means = np.array([0.9, 0.3])
    t_big = 2000
    regret = {}
    for name, budget in (
        ("paper", PrivacyBudget(1.0, calibration="paper")),
        ("tight", PrivacyBudget(1.0)),
        ("none", None),
    ):
        env = KArmedBandit(means, t_big, rng=4)
        learner = DPUCB(2, t_big, budget=budget, replicas=10, rng=5)
        regret[name] = learner.play_stochastic(env, t_big).regret
    assert np.all((regret["paper"] > 0.8 * 600) & (regret["paper"] <= 600))
    assert np.all(regret["tight"] < 0.85 * regret["paper"])
    assert np.all(regret["none"] < 0.25 * regret["tight"])


def test_the_options_are_checked() -> None:
    with pytest.raises(ValueError, match="noise"):
        DPUCB(3, 10, budget=None, noise="cauchy")
    with pytest.raises(ValueError, match="delta"):
        DPUCB(3, 10, budget=PrivacyBudget(1.0), noise="gaussian")
    # the paper trees add Laplace noise whatever the noise option: pure DP meets delta > 0
    g = DPUCB(3, 10, budget=PrivacyBudget(1.0, 1e-6, "paper"), noise="gaussian").privacy
    assert g.epsilon == 1.0 and g.delta == 0.0


def test_a_named_counter_runs_in_place_of_the_default() -> None:
    """``mechanism`` (tight): the BLT keeps O(K) noise state, with a horizon and, in doubling
    blocks, without one; the guarantee is the counter's, as for the default counter."""
    gaussian = PrivacyBudget(1.0, 1e-6)
    fixed = DPUCB(5, 2_000, budget=gaussian, mechanism="blt", replicas=2, rng=0)
    assert fixed.mechanism == "blt" and fixed.counter.name == "blt"
    assert fixed.privacy.epsilon == pytest.approx(1.0) and fixed.privacy.delta == 1e-6
    assert fixed.privacy.meets_request
    anytime = DPUCB(5, None, budget=gaussian, mechanism="blt", replicas=2, rng=0)
    assert anytime.counter.name == "doubling(blt)" and anytime.counter.horizon is None
    env = KArmedBandit([0.1, 0.2, 0.3, 0.4, 0.9], horizon=3_000, rng=1)
    run = anytime.play_stochastic(env, 3_000)
    assert run.pulls.sum() == 6_000 and (run.pulls[:, -1] > run.pulls[:, 0]).all()
    resumed = DPUCB(5, None, budget=gaussian, mechanism="blt", replicas=2, rng=9)
    resumed.load_state_dict(anytime.state_dict())
    assert same_state(resumed.state_dict(), anytime.state_dict())
    with pytest.raises(ValueError, match="differs in mechanism"):
        DPUCB(5, None, budget=gaussian, replicas=2, rng=0).load_state_dict(anytime.state_dict())
    with pytest.raises(ValueError, match="'blt' supports noise \\['gaussian'\\]"):
        DPUCB(5, 100, budget=PrivacyBudget(1.0), mechanism="blt")
    with pytest.raises(ValueError, match="unknown mechanism 'bltt'"):
        DPUCB(5, 100, budget=gaussian, mechanism="bltt")
    with pytest.raises(ValueError, match="the paper's DP-UCB runs its own per-arm trees"):
        DPUCB(5, 100, budget=PrivacyBudget(1.0, calibration="paper"), mechanism="blt")
    person = PrivacyBudget(1.0, 1e-6, participations=4, min_separation=10)
    assert DPUCB(5, 2_000, budget=person, mechanism="blt").privacy.participations == 4
    with pytest.raises(ValueError, match="does not support a user-level budget"):
        DPUCB(5, None, budget=person, mechanism="blt")  # blocks would compose a person
