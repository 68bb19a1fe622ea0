"""DP-KLUCB and DP-IMED (dponline.bandits.dp_phases): the phase schedule, the noise of each
phase, the fast path against round-by-round play, resuming, the exact privacy of a tiny case,
and regret with fixed seeds."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from dponline.bandits.dp_phases import DPIMED, DPKLUCB, first_phase_length, next_phase_end
from dponline.bandits.lower_bounds import azize_2025_coefficient
from dponline.environments.k_armed import KArmedBandit
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import BanditFeedback
from tests.bandits.stochastic_arms_helpers import play_rounds, same_state

LEARNERS = (DPKLUCB, DPIMED)


def test_phase_ends_grow_geometrically() -> None:
    assert next_phase_end([1, 2, 4, 8], 2.0).tolist() == [2, 4, 8, 16]
    assert next_phase_end([1, 2, 3, 5, 8], 1.5).tolist() == [2, 3, 5, 8, 12]
    # at least one more pull, and 1.1 x 10 = 11.000000000000002 is not pushed to 12
    assert next_phase_end([1, 5, 10, 100], 1.1).tolist() == [2, 6, 11, 110]
    # large ends are not pulled one down by the tolerance, and never overflow
    assert next_phase_end([2**30, 10**12], 2.0).tolist() == [2**31, 2 * 10**12]
    assert next_phase_end([3], 1e19).tolist() == [2**62]


@pytest.mark.parametrize("cls", LEARNERS)
def test_a_hand_case_without_noise(cls) -> None:
    """Arm 0 always pays 1, arm 1 never: each arm once, then arm 0 for phases 1, 2, 4, ...
    (alpha = 2), every phase released exactly."""
    learner = cls(2, 20, budget=None)
    arms = play_rounds(learner, np.array([1.0, 0.0]), 20)
    assert arms[:, 0].tolist() == [0, 1] + [0] * 18
    assert learner.pulls.tolist() == [[19, 1]]
    # arm 0's phases end at pulls 1, 2, 4, 8, 16; the running one (16 -> 32) is not released
    assert learner.phase_end.tolist() == [[16, 1]]
    assert learner.phases.tolist() == [[5, 1]]
    assert learner.noisy_sum.tolist() == [[16.0, 0.0]]
    assert learner.left.tolist() == [13]  # 32 - 19


def test_the_dp_klucb_index_is_the_d_eps_index_at_the_round() -> None:
    """After the initial pulls of three arms with rewards 1, 0, 1/2 (no noise), round 4's
    indices are max{mu : d_eps([x], mu) <= log 4 / 1}, eps = inf: the KL-UCB index."""
    learner = DPKLUCB(3, 10, budget=None)
    for r in (1.0, 0.0, 0.5):
        learner.act()
        learner.observe(BanditFeedback(np.array([1.0 - r])))
    got = learner.index(np.array([0]), np.array([4]))[0]
    assert got[0] == 1.0
    assert got[1] == pytest.approx(1.0 - math.exp(-math.log(4.0)))  # kl(0, q) = -log(1 - q)
    q = got[2]
    assert 0.5 * math.log(0.5 / q) + 0.5 * math.log(0.5 / (1 - q)) == pytest.approx(math.log(4.0))


def test_each_phase_sum_gets_one_laplace_draw_of_scale_one_over_epsilon() -> None:
    """The initial pulls of 2 arms with deterministic rewards: S~ - reward is one Lap(1/eps)
    per arm. Kolmogorov-Smirnov at 4,000 x 2 draws against Laplace(0, 1/eps) (fixed seed;
    p > 1e-4 fails with probability 1e-4 for a correct sampler); a mean of 2 draws per replica
    would give twice the variance and fail by far."""
    eps, reps = 0.5, 4000
    learner = DPIMED(2, 10, budget=PrivacyBudget(eps), replicas=reps, rng=3, first_phase=1)
    play_rounds(learner, np.array([1.0, 0.0]), 2)
    residual = (learner.noisy_sum - np.array([1.0, 0.0])).ravel()
    assert learner.phases.tolist() == [[1, 1]] * reps
    assert stats.kstest(residual, stats.laplace(scale=1 / eps).cdf).pvalue > 1e-4


@pytest.mark.parametrize("cls", LEARNERS)
def test_the_fast_path_is_round_by_round_on_deterministic_rewards(cls) -> None:
    """Means in {0, 1} (rewards deterministic): play_stochastic in uneven stretches, one of
    them started after act(), leaves the same state and the same pulls as single rounds, and
    its regret is the pulls' exact pseudo-regret."""
    means = np.array([1.0, 0.0, 1.0, 0.0])
    t_big, reps = 400, 5
    slow = cls(4, t_big, budget=PrivacyBudget(1.0), replicas=reps, rng=7)
    play_rounds(slow, means, t_big)
    fast = cls(4, t_big, budget=PrivacyBudget(1.0), replicas=reps, rng=7)
    env = KArmedBandit(means, t_big, rng=0)
    regret = np.zeros(reps)
    for n in (1, 6, 37, 0, 150):
        regret += fast.play_stochastic(env, n).regret
    fast.act()
    regret += fast.play_stochastic(env, t_big - fast.t).regret
    assert same_state(slow.state_dict(), fast.state_dict())
    np.testing.assert_array_equal(regret, slow.pulls @ (1.0 - means))


@pytest.mark.parametrize("cls", LEARNERS)
def test_a_resumed_run_is_bit_exact(cls) -> None:
    """Saved mid-phase and loaded into a learner built with another seed: the same actions and
    the same final state as the uninterrupted run."""
    means = np.array([0.7, 0.3, 0.6])
    rewards = np.random.default_rng(0).random((60, 3, 3)) < means  # round, replica, arm

    def run(learner, rounds):
        out = []
        for t in rounds:
            a = learner.act()
            out.append(a)
            r = rewards[t, np.arange(3), a].astype(float)
            learner.observe(BanditFeedback(1.0 - r))
        return out

    whole = cls(3, 60, budget=PrivacyBudget(1.0), replicas=3, rng=5)
    reference = run(whole, range(60))
    first = cls(3, 60, budget=PrivacyBudget(1.0), replicas=3, rng=5)
    head = run(first, range(23))
    assert np.any(first.left > 0)  # inside a phase
    resumed = cls(3, 60, budget=PrivacyBudget(1.0), replicas=3, rng=99)
    resumed.load_state_dict(first.state_dict())
    tail = run(resumed, range(23, 60))
    np.testing.assert_array_equal(np.array(reference), np.array(head + tail))
    assert same_state(whole.state_dict(), resumed.state_dict())


def test_the_default_first_phase_is_ten_over_epsilon() -> None:
    assert [first_phase_length(e) for e in (1.0, 0.1, 0.3, 20.0, math.inf)] == [10, 100, 34, 1, 1]
    assert first_phase_length(1e-9) == 10**10 and first_phase_length(1e-30) == 2**62
    with pytest.raises(ValueError, match="at most 2"):
        DPIMED(2, 10, budget=PrivacyBudget(1.0), first_phase=2**63)
    with pytest.warns(UserWarning, match="fill the horizon"):
        assert DPKLUCB(3, 10, budget=PrivacyBudget(0.5)).first_phase == 20
    assert DPIMED(3, 10, budget=None).first_phase == 1  # the non-private counterpart: n_1 = 1
    assert DPIMED(3, 10, budget=PrivacyBudget(0.5), first_phase=3).first_phase == 3


@pytest.mark.parametrize("cls", LEARNERS)
def test_each_arm_plays_its_first_phase_and_releases_it_once(cls) -> None:
    """eps = 2: n_1 = 5. Arms 0, 1, 2 play 5 rounds each in turn; each arm's S~ is the sum of
    its 5 deterministic rewards plus one Laplace term of scale 1/eps (Kolmogorov-Smirnov over
    2,000 x 3 draws, fixed seed; p > 1e-4 fails with probability 1e-4 for a correct sampler);
    the next commitment lasts one phase, from pull 5 to pull 10 (alpha = 2)."""
    eps, reps = 2.0, 2000
    learner = cls(3, 40, budget=PrivacyBudget(eps), replicas=reps, rng=4)
    means = np.array([1.0, 0.0, 1.0])
    arms = play_rounds(learner, means, 15)
    assert (arms == np.repeat([0, 1, 2], 5)[:, None]).all()
    assert learner.phase_end.tolist() == [[5, 5, 5]] * reps
    assert learner.phases.tolist() == [[1, 1, 1]] * reps
    residual = (learner.noisy_sum - 5.0 * means).ravel()
    assert stats.kstest(residual, stats.laplace(scale=1 / eps).cdf).pvalue > 1e-4
    learner.act()
    assert learner.left.tolist() == [5] * reps


def test_a_state_of_another_first_phase_is_refused() -> None:
    a = DPIMED(3, 40, budget=PrivacyBudget(1.0), first_phase=2, rng=0)
    play_rounds(a, np.array([0.5, 0.5, 0.5]), 7)
    with pytest.raises(ValueError, match="first_phase"):
        DPIMED(3, 40, budget=PrivacyBudget(1.0), first_phase=3).load_state_dict(a.state_dict())


@pytest.mark.parametrize("cls", LEARNERS)
def test_a_state_off_the_phase_schedule_is_refused(cls) -> None:
    """A zeroed phase_end once loaded and then divided by zero; a running phase of another
    length than the schedule's is refused too."""
    lr = cls(3, 400, budget=PrivacyBudget(1.0), replicas=2, first_phase=2, rng=0)
    play_rounds(lr, np.array([0.2, 0.5, 0.8]), 41)
    good = lr.state_dict()
    assert np.all(good["left"] > 0)
    cls(3, 400, budget=PrivacyBudget(1.0), replicas=2, first_phase=2).load_state_dict(good)
    for edit, message in (
        ({"phase_end": np.zeros_like(good["phase_end"])}, "phase_end is not the pulls"),
        ({"left": good["left"] + 1}, "running phase is not the length"),
    ):
        fresh = cls(3, 400, budget=PrivacyBudget(1.0), replicas=2, first_phase=2)
        with pytest.raises(ValueError, match=message):
            fresh.load_state_dict({**good, **edit})


def _imed_round_3_plays_arm_0(r0: float, eps: float) -> float:
    """P(DP-IMED plays arm 0 in round 3): two arms pulled once with rewards r0 and 1/2, then
    the argmin of d_eps([mu~_a], [mu~^*]) + log 1, i.e. the larger clipped private mean (a tie,
    clipped at 0 or 1 or equal, plays arm 0): P(clip(r0 + L0) >= clip(1/2 + L1)) with L0, L1
    i.i.d. Lap(1/eps), by quadrature over L1."""
    lap = stats.laplace(scale=1 / eps)

    def given(l1: float) -> float:
        x1 = min(max(0.5 + l1, 0.0), 1.0)
        if x1 <= 0.0:
            return 1.0  # clip(r0 + L0) >= 0 always
        # clip(r0 + L0) >= x1 iff r0 + L0 >= x1 (x1 in (0, 1]: clipping at 1 ties, plays 0)
        return float(lap.sf(x1 - r0))

    value, _ = integrate.quad(lambda l1: given(l1) * lap.pdf(l1), -60, 60, points=[-0.5, 0.5])
    return value


def test_dp_imed_is_exactly_epsilon_dp_on_a_tiny_case_and_plays_as_computed() -> None:
    """The exact law of round 3 on the two neighbouring streams (round 1's reward 1 or 0): its
    privacy loss is at most eps (the guarantee) and well above eps / 4 (the noise is not far
    too much); the learner's frequency over 8,000 replicas agrees within 4.5 standard errors
    (false failure about 7e-6 per stream)."""
    eps = 1.0
    p = {r0: _imed_round_3_plays_arm_0(r0, eps) for r0 in (1.0, 0.0)}
    loss = max(abs(math.log(p[1.0] / p[0.0])), abs(math.log((1 - p[1.0]) / (1 - p[0.0]))))
    assert eps / 4 < loss <= eps
    reps = 8_000
    for r0, want in p.items():
        learner = DPIMED(2, 3, budget=PrivacyBudget(eps), replicas=reps, rng=11, first_phase=1)
        arms = play_rounds(learner, None, 3, rewards=[r0, 0.5, 0.5])
        got = np.mean(arms[2] == 0)
        assert abs(got - want) < 4.5 * math.sqrt(want * (1 - want) / reps)


@pytest.mark.parametrize("cls", LEARNERS)
def test_regret_with_fixed_seeds(cls) -> None:
    """Means (0.9, 0.8, 0.8), eps = 1, T = 20,000, 20 replicas (fixed seeds): the median
    pseudo-regret lies below twice the asymptotic bound alpha sum Delta log T / d_eps (89 at
    alpha = 2; uniform play pays 1,333), and the non-private counterpart's median below twice
    the private one. At these seeds the medians are 44 (DP-KLUCB) and 32 (DP-IMED), with the
    default first phase n_1 = 10. A false failure needs half the replicas above 178: over 1,000
    runs at other seeds 0.1% (DP-KLUCB) and 0.6% (DP-IMED, whose tail is the heavier: a best
    arm whose early noise is very negative waits long; 4.3% with n_1 = 1) lie above, so ten of
    twenty has probability below 1e-8."""
    means = np.array([0.9, 0.8, 0.8])
    t_big, reps = 20_000, 20
    bound = 2.0 * azize_2025_coefficient(means, 1.0) * math.log(t_big)
    assert bound == pytest.approx(89.2, abs=0.1)
    env = KArmedBandit(means, t_big, rng=1)
    private = cls(3, t_big, budget=PrivacyBudget(1.0), replicas=reps, rng=2)
    reg = private.play_stochastic(env, t_big).regret
    assert np.median(reg) < 2 * bound
    env = KArmedBandit(means, t_big, rng=1)
    plain = cls(3, t_big, budget=None, replicas=reps, rng=2).play_stochastic(env, t_big).regret
    assert np.median(plain) < 2 * np.median(reg)


def test_the_options_are_checked() -> None:
    with pytest.raises(ValueError, match="alpha"):
        DPKLUCB(3, 10, budget=None, alpha=1.0)
    for bad in (0, 2.5, True, "3"):
        with pytest.raises((ValueError, TypeError), match="first_phase"):
            DPKLUCB(3, 10, budget=PrivacyBudget(1.0), first_phase=bad)
    pure = DPIMED(3, 100, budget=PrivacyBudget(1.0, 1e-6)).privacy  # pure DP meets delta > 0
    assert (pure.epsilon, pure.delta) == (1.0, 0.0)
    with pytest.warns(UserWarning, match="fill the horizon"):
        g = DPKLUCB(3, 10, budget=PrivacyBudget(0.5, calibration="paper")).privacy
    assert g.epsilon == 0.5 and g.delta == 0.0 and "Proposition 2" in g.derivation


def test_a_horizon_the_first_phases_fill_is_warned_about():
    with pytest.warns(UserWarning, match=r"10 arms x 10 pulls\) fill the horizon T = 50"):
        DPIMED(10, 50, budget=PrivacyBudget(1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPIMED(10, 101, budget=PrivacyBudget(1.0))
        DPKLUCB(10, None, budget=PrivacyBudget(1.0))
