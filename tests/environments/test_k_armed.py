"""Stochastic K-armed environments: protocol, exact pseudo-regret, reward sums against their
laws, clipped-Gaussian means, state resume, refused inputs and the instance families."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dponline.environments.base import Environment
from dponline.environments.k_armed import (
    FAMILIES,
    KArmedBandit,
    azize_basu_means,
    build_k_armed,
    clipped_normal_mean,
    two_level_means,
    unequal_gap_means,
)
from dponline.privacy.arguments import ArgumentError
from dponline.protocol import BanditFeedback, FeedbackKind, StochasticArms

# a two-sided normal test at 4.9 standard errors fails by chance with probability 1e-6
Z = 4.9


def _clipped_normal_second_moment(m: float, s: float) -> float:
    """E[clip(N(m, s^2), 0, 1)^2]: E[X^2; 0 < X < 1] + P(X > 1), by hand."""
    a, b = -m / s, (1 - m) / s
    inside = stats.norm.cdf(b) - stats.norm.cdf(a)
    pa, pb = stats.norm.pdf(a), stats.norm.pdf(b)
    x2 = m * m * inside + 2 * m * s * (pa - pb) + s * s * (inside + a * pa - b * pb)
    return float(x2 + stats.norm.sf(b))


@pytest.mark.parametrize("family", FAMILIES)
def test_protocol_and_properties(family):
    env = KArmedBandit(np.array([0.2, 0.7, 0.5]), 10, family=family, rng=0)
    assert isinstance(env, Environment) and isinstance(env, StochasticArms)
    assert env.dim == 3 and env.reveals_context is False
    assert env.feedback_kind is FeedbackKind.BANDIT
    np.testing.assert_array_equal(env.mean_rewards, env.means)
    np.testing.assert_allclose(env.gaps, env.means.max() - env.means)
    assert env.gaps[1] == 0.0
    feedback, loss = env.round(0, np.array([0, 1, 2, 1]))
    assert isinstance(feedback, BanditFeedback) and feedback.loss.shape == (4,)
    assert np.all((feedback.loss >= 0) & (feedback.loss <= 1))
    np.testing.assert_array_equal(loss, 1.0 - env.means[[0, 1, 2, 1]])
    if family == "bernoulli":
        assert set(np.unique(feedback.loss)) <= {0.0, 1.0}


def test_pseudo_regret_by_hand():
    env = KArmedBandit(np.array([0.9, 0.5, 0.2]), 4, rng=0)
    charged = [float(env.round(t, np.array([a]))[1][0]) for t, a in enumerate([1, 2, 0, 1])]
    assert charged == pytest.approx([0.5, 0.8, 0.1, 0.5], abs=1e-15)
    cumulative = np.cumsum(charged)[None, :]
    np.testing.assert_allclose(env.regret(cumulative), [[0.4, 1.1, 1.1, 1.5]], atol=1e-14)
    np.testing.assert_allclose(
        env.regret(cumulative[:, [1, 3]], rounds=np.array([2, 4])), [[1.1, 1.5]], atol=1e-14
    )


def test_bernoulli_reward_sums_are_binomial():
    # 40000 replicas, counts 50 of arm 1 (p = 0.3): chi-square goodness of fit against
    # Binomial(50, 0.3) on bins of expected count >= 20; the threshold is the 1 - 1e-6
    # quantile, so a correct sampler fails with probability 1e-6 (the seed is fixed)
    env = KArmedBandit(np.array([0.8, 0.3]), 10, rng=12)
    n = 40_000
    sums = env.reward_sums(np.ones(n, dtype=np.int64), np.full(n, 50))
    assert sums.dtype == np.float64 and np.all(sums == np.round(sums))
    law = stats.binom(50, 0.3)
    ks = np.arange(51)
    expected = n * law.pmf(ks)
    keep = expected >= 20
    lo, hi = ks[keep].min(), ks[keep].max()
    observed = np.bincount(sums.astype(int), minlength=51)
    obs = np.r_[observed[: lo + 1].sum(), observed[lo + 1 : hi], observed[hi:].sum()]
    exp = np.r_[n * law.cdf(lo), expected[lo + 1 : hi], n * law.sf(hi - 1)]
    chi2 = float(np.sum((obs - exp) ** 2 / exp))
    assert chi2 < stats.chi2.ppf(1 - 1e-6, obs.size - 1)
    # mean and variance (each at 4.9 standard errors: false failure 1e-6 each)
    assert abs(sums.mean() - 15.0) < Z * np.sqrt(10.5 / n)
    assert abs(sums.var() / 10.5 - 1.0) < Z * np.sqrt(2.0 / n) * 1.1
    # counts 0 give 0; a replica's sum lies in [0, count]
    mixed = env.reward_sums(np.array([0, 1, 0]), np.array([0, 7, 1_000_000]))
    assert mixed[0] == 0.0 and 0 <= mixed[1] <= 7 and 0 <= mixed[2] <= 1_000_000


@pytest.mark.parametrize("family", ["beta", "gaussian"])
def test_drawn_reward_sums_have_the_mean_and_variance_of_their_law(family):
    # 20000 replicas summing 30 draws of arm 0 (location 0.35) and arm 1 (0.95: clipping
    # matters for the Gaussian, sigma 0.2): mean and variance of the sums against count * E[X]
    # and count * Var(X) computed in closed form, at 4.9 standard errors (false failure about
    # 4e-6 for the four checks)
    env = KArmedBandit(np.array([0.35, 0.95]), 10, family=family, sigma=0.2, rng=5)
    n, count = 20_000, 30
    for arm in (0, 1):
        m = float(env.means[arm])
        if family == "beta":
            var = m * (1 - m) / (env.concentration + 1)
        else:
            var = _clipped_normal_second_moment(float(env.location[arm]), 0.2) - m * m
        sums = env.reward_sums(np.full(n, arm), np.full(n, count))
        assert np.all((sums >= 0) & (sums <= count))
        assert abs(sums.mean() - count * m) < Z * np.sqrt(count * var / n)
        # the sums are nearly normal: Var of the sample variance is about 2 sigma^4 / n
        assert abs(sums.var() / (count * var) - 1.0) < Z * np.sqrt(2.0 / n) * 1.2


@pytest.mark.parametrize("family", ["beta", "gaussian"])
def test_large_counts_are_drawn_in_chunks_with_the_right_mean(family):
    # counts above the 2^18 chunk: 6 replicas of 700000 draws; each sum within 4.9 standard
    # deviations of count * mean (false failure 6e-6 in all)
    env = KArmedBandit(np.array([0.35, 0.95]), 10, family=family, rng=9)
    counts = np.array([700_000, 1, 700_000, 0, 700_000, 300_000])
    arms = np.array([0, 1, 1, 0, 0, 1])
    sums = env.reward_sums(arms, counts)
    sd_one = {"beta": np.sqrt(env.means * (1 - env.means) / 3.0), "gaussian": np.full(2, 0.1)}[
        family
    ]
    for a, c, s in zip(arms, counts, sums, strict=True):
        assert abs(s - c * env.means[a]) <= Z * np.sqrt(c) * sd_one[a] + 1e-12
    assert sums[3] == 0.0 and 0.0 <= sums[1] <= 1.0
    # the same generator state gives the same sums, whatever generator is passed
    again = KArmedBandit(np.array([0.35, 0.95]), 10, family=family, rng=9)
    np.testing.assert_array_equal(again.reward_sums(arms, counts), sums)
    other = np.random.default_rng(9)
    third = KArmedBandit(np.array([0.35, 0.95]), 10, family=family, rng=1)
    np.testing.assert_array_equal(third.reward_sums(arms, counts, rng=other), sums)


def test_clipped_gaussian_means_are_exact():
    # Monte Carlo with 10^6 draws per arm; the exact means must lie within 4.9 standard errors
    # (false failure 1e-6 per arm), and clipping must have moved the edge arms' means by more
    # than 10 standard errors (so the check could fail had the means not been corrected)
    loc = np.array([0.02, 0.5, 0.97])
    env = KArmedBandit(loc, 10, family="gaussian", sigma=0.2, rng=21)
    n = 1_000_000
    for arm in range(3):
        draws = env._draw(np.full(n, arm), np.random.default_rng(100 + arm))
        se = draws.std() / np.sqrt(n)
        assert abs(draws.mean() - env.means[arm]) < Z * se
        if arm != 1:
            assert abs(env.means[arm] - loc[arm]) > 10 * se
    assert env.means[1] == pytest.approx(0.5, abs=1e-15)  # symmetric about 1/2
    # the closed form against numerical integration of the clipped law
    for m, s in [(0.1, 0.3), (0.9, 0.05), (1.0, 0.5), (0.0, 1.0)]:
        # E[clip(X)] = 0 * P(X < 0) + integral_0^1 z pdf(z) dz + 1 * P(X > 1)
        z = np.linspace(0.0, 1.0, 200_001)
        body = np.trapezoid(z * stats.norm.pdf(z, m, s), z)
        assert float(clipped_normal_mean(m, s)) == pytest.approx(
            body + stats.norm.sf(1.0, m, s), abs=1e-9
        )


@pytest.mark.parametrize("family", FAMILIES)
def test_state_resume_is_bit_exact(family):
    env = build_k_armed(20, np.random.default_rng(4), family=family, instance="unequal_gaps")
    arms = np.array([0, 3, 9, 5])
    for t in range(5):
        env.round(t, arms)
    state = env.state_dict()
    expected = [env.round(t, arms)[0].loss for t in range(5, 9)]
    expected.append(env.reward_sums(arms, np.array([3, 0, 400_000, 17])))

    fresh = build_k_armed(20, np.random.default_rng(99), family=family, instance="unequal_gaps")
    fresh.load_state_dict(state)
    got = [fresh.round(t, arms)[0].loss for t in range(5, 9)]
    got.append(fresh.reward_sums(arms, np.array([3, 0, 400_000, 17])))
    for a, b in zip(expected, got, strict=True):
        assert a.tobytes() == b.tobytes()
    with pytest.raises(ArgumentError):
        fresh.load_state_dict({})
    with pytest.raises(ArgumentError):
        fresh.load_state_dict({"rng": {"bit_generator": "os"}})


@pytest.mark.parametrize(
    "action",
    [
        np.array([0.0, 1.0]),
        np.array([0, 3]),
        np.array([-1, 0]),
        np.array([[0, 1]]),
        np.array([], dtype=np.int64),
        np.array([True, False]),
        "0",
    ],
)
def test_bad_actions_are_refused(action):
    env = KArmedBandit(np.array([0.2, 0.7, 0.5]), 10, rng=0)
    with pytest.raises(ArgumentError):
        env.round(0, action)
    with pytest.raises(ArgumentError):
        env.reward_sums(action, np.ones(np.shape(action), dtype=np.int64))


def test_bad_counts_rounds_and_parameters_are_refused():
    env = KArmedBandit(np.array([0.2, 0.7]), 10, rng=0)
    arms = np.array([0, 1])
    for counts in (np.array([1, -1]), np.array([1.0, 2.0]), np.array([1, 2, 3])):
        with pytest.raises(ArgumentError):
            env.reward_sums(arms, counts)
    for t in (-1, 10):
        with pytest.raises(ArgumentError):
            env.round(t, arms)
    for kwargs in (
        {"means": np.array([0.5])},
        {"means": np.array([0.5, 1.2])},
        {"means": np.array([0.5, np.nan])},
        {"means": "0.5, 0.2"},
        {"family": "poisson"},
        {"concentration": 0.0},
        {"sigma": -1.0},
        {"horizon": 0},
    ):
        args = {"means": np.array([0.2, 0.7]), "horizon": 10} | kwargs
        with pytest.raises(ArgumentError):
            KArmedBandit(**args)


def test_beta_arms_at_the_edges_are_deterministic():
    env = KArmedBandit(np.array([0.0, 1.0, 0.5]), 10, family="beta", rng=0)
    fb, _ = env.round(0, np.array([0, 1, 0, 1]))
    np.testing.assert_array_equal(fb.loss, [1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(env.reward_sums(np.array([0, 1]), np.array([5, 5])), [0, 5])


def test_instance_families():
    np.testing.assert_array_equal(two_level_means(), np.r_[np.full(9, 0.8), 0.9])
    np.testing.assert_array_equal(two_level_means(3, 0.6, 0.5), [0.5, 0.5, 0.6])
    np.testing.assert_allclose(unequal_gap_means(), np.linspace(0.5, 0.9, 10))
    np.testing.assert_allclose(unequal_gap_means(5, 0.9, 0.1), [0.1, 0.3, 0.5, 0.7, 0.9])
    np.testing.assert_array_equal(azize_basu_means(), [0.75, 0.625, 0.5, 0.375, 0.25])
    for bad in (lambda: two_level_means(1), lambda: two_level_means(3, 0.5, 0.6)):
        with pytest.raises(ArgumentError):
            bad()
    with pytest.raises(ArgumentError):
        unequal_gap_means(4, 0.5, 0.5)
    env = build_k_armed(10, 0, instance="azize_basu")
    np.testing.assert_array_equal(env.means, azize_basu_means())
    assert env.name == "k_armed:bernoulli:azize_basu"
    custom = build_k_armed(10, 0, family="beta", means=[0.1, 0.2])
    assert custom.dim == 2 and custom.name == "k_armed:beta:custom"
    with pytest.raises(ArgumentError):
        build_k_armed(10, 0, instance="hard")
    assert build_k_armed(10, 0, means=[0.1, 0.2], arms=2).dim == 2
    assert build_k_armed(10, 0, instance="azize_basu", arms=5).dim == 5
    for contradiction, says in [  # each option was silently ignored
        (dict(means=[0.2, 0.5, 0.7, 0.9], arms=3), "4 means"),
        (dict(instance="azize_basu", arms=3), "has 5 arms"),
        (dict(means=[0.2, 0.5], instance="unequal_gaps"), "not both"),
    ]:
        with pytest.raises(ArgumentError, match=says):
            build_k_armed(10, 0, **contradiction)
