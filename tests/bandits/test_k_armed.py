"""The K-armed base class: commitments, bookkeeping, input checks, per-replica generators,
the fast path (the same state as round-by-round play) and saved states."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dponline.bandits.k_armed import (
    PRIVATE_K_ARMED,
    KArmedLearner,
    StochasticArms,
    StochasticArmsPlayer,
    StochasticRounds,
    replica_generators,
)
from dponline.environments import KArmedBandit
from dponline.protocol import BanditFeedback
from dponline.registry import build_learner


class FixedArms:
    """A stochastic K-armed environment with deterministic rewards: arm a always pays
    ``means[a]`` (use means in {0, 1}, or any value: every reward equals its mean)."""

    rewards_in_unit_interval = True  # StochasticArms: every reward in [0, 1]

    def __init__(self, means: Any) -> None:
        self.means = np.asarray(means, dtype=float)
        self.calls = 0

    def reward_sums(self, arms: np.ndarray, counts: np.ndarray, rng: Any = None) -> np.ndarray:
        self.calls += 1
        return counts * self.means[arms]


class BernoulliArms:
    """Bernoulli arms with mean rewards ``means``; sums of fresh rewards by binomial draws."""

    rewards_in_unit_interval = True  # StochasticArms: every reward in [0, 1]

    def __init__(self, means: Any, seed: int) -> None:
        self.means = np.asarray(means, dtype=float)
        self.gen = np.random.default_rng(seed)

    def reward_sums(self, arms: np.ndarray, counts: np.ndarray, rng: Any = None) -> np.ndarray:
        return self.gen.binomial(counts, self.means[arms]).astype(float)

    def losses(self, arms: np.ndarray) -> np.ndarray:
        """One round: each replica's loss 1 - reward."""
        return 1.0 - (self.gen.random(arms.shape) < self.means[arms])


def play_rounds(learner: KArmedLearner, means: Any, rounds: int) -> np.ndarray:
    """``rounds`` rounds of act() then observe() with deterministic rewards ``means``; the
    arms played, shape (rounds, replicas)."""
    means = np.asarray(means, dtype=float)
    played = []
    for _ in range(rounds):
        arms = learner.act()
        played.append(arms)
        learner.observe(BanditFeedback(1.0 - means[arms]))
    return np.array(played)


def assert_same_state(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for key in a:
        if isinstance(a[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
            assert a[key].dtype == b[key].dtype, key
        else:
            assert a[key] == b[key], key


class Schedule(KArmedLearner):
    """A test learner: commits to arm (commitments so far) mod K for ``length`` rounds, draws one
    Laplace per concluded commitment and records every conclusion."""

    def __init__(self, n_arms: int, horizon: int, length: int = 3, **kw: Any) -> None:
        super().__init__(n_arms, horizon, **kw)
        self.length = length
        self.commitments = np.zeros(self.replicas, dtype=np.int64)
        self.noise_seen = np.zeros(self.replicas)
        self.log: list[tuple] = []

    def _commit(self, rows, t):
        arms = self.commitments[rows] % self.n_arms
        self.commitments[rows] += 1
        return arms, np.full(rows.size, self.length)

    def _conclude(self, rows, t, arms, sums, counts):
        self.log.append((rows.tolist(), t.tolist(), arms.tolist(), sums.tolist(), counts.tolist()))
        self.noise_seen[rows] += self._noise(rows, 1.0)

    def _extra_state(self):
        return {"commitments": self.commitments.copy(), "noise_seen": self.noise_seen.copy()}

    def _prepare_extra(self, state):
        c = np.array(state["commitments"])
        n = np.array(state["noise_seen"])

        def install():
            self.commitments, self.noise_seen = c, n

        return install


def test_one_replica_takes_a_plain_number_and_a_state_names_its_learner():
    learner = build_learner("dp-imed", KArmedBandit([0.2, 0.9], horizon=100, rng=0), rng=0)
    learner.act()
    learner.observe(BanditFeedback(0.25))  # one replica: a number, as (1,)
    assert learner.t == 1
    two = build_learner("dp-imed", KArmedBandit([0.2, 0.9], horizon=100, rng=0), replicas=2, rng=0)
    two.act()
    with pytest.raises(ValueError, match=r"bandit loss must have shape \(2,\)"):
        two.observe(BanditFeedback(0.25))
    other = build_learner("dp-klucb", KArmedBandit([0.2, 0.9], horizon=100, rng=0), rng=0)
    with pytest.raises(ValueError, match="state was saved from a DPIMED, not a DPKLUCB"):
        other.load_state_dict(learner.state_dict())


def test_commitments_and_bookkeeping_by_hand():
    learner = Schedule(2, 7, length=3, replicas=2, rng=0)
    rewards = [(1.0, 0.0), (0.5, 0.25), (0.0, 1.0), (1.0, 1.0)]
    for i, r in enumerate(rewards):
        arms = learner.act()
        np.testing.assert_array_equal(arms, [0, 0] if i < 3 else [1, 1])
        learner.observe(BanditFeedback(1.0 - np.array(r)))
    # the first commitment (arm 0, rounds 1-3) concluded after round 3, with its sums
    assert learner.log == [([0, 1], [3, 3], [0, 0], [1.5, 1.25], [3, 3])]
    np.testing.assert_array_equal(learner.pulls, [[3, 1], [3, 1]])
    np.testing.assert_allclose(learner.sums, [[1.5, 1.0], [1.25, 1.0]])
    np.testing.assert_array_equal(learner.arm, [1, 1])
    np.testing.assert_array_equal(learner.left, [2, 2])
    np.testing.assert_allclose(learner.episode_sum, [1.0, 1.0])
    np.testing.assert_array_equal(learner.episode_count, [1, 1])
    assert learner.t == 4


def test_losses_outside_the_unit_interval_are_refused_or_clipped():
    learner = Schedule(2, 5, replicas=2, rng=0)
    learner.act()
    before = learner.state_dict()
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\].*1\.5"):
        learner.observe(BanditFeedback(np.array([0.0, 1.5])))
    with pytest.raises(ValueError, match="finite"):
        learner.observe(BanditFeedback(np.array([np.nan, 0.0])))
    with pytest.raises(ValueError, match="bandit loss"):
        learner.observe(BanditFeedback(np.array([0.5j, 0.0])))
    with pytest.raises(ValueError, match="bandit loss"):
        learner.observe(BanditFeedback(np.array(["0.5", "0.5"])))
    assert_same_state(before, learner.state_dict())
    clipped = Schedule(2, 5, replicas=2, rng=0, clip=True)
    clipped.act()
    clipped.observe(BanditFeedback(np.array([-1.0, 1.5])))
    np.testing.assert_allclose(clipped.sums[:, 0], [1.0, 0.0])


def test_observe_before_act_and_past_the_horizon_are_refused():
    learner = Schedule(2, 2, replicas=1, rng=0)
    with pytest.raises(ValueError, match="must follow act"):
        learner.observe(BanditFeedback(np.zeros(1)))
    play_rounds(learner, [1.0, 0.0], 2)
    learner.act()  # a decision after the horizon is post-processing: allowed
    with pytest.raises(ValueError, match="round 3 is past it"):
        learner.observe(BanditFeedback(np.zeros(1)))
    with pytest.raises(ValueError, match="n_arms must be at least 2"):
        Schedule(1, 5)


def test_each_replica_draws_its_own_stream_whatever_the_replica_count():
    few = replica_generators(5, 3)
    many = replica_generators(5, 10)
    for a, b in zip(few, many[:3], strict=False):
        np.testing.assert_array_equal(a.random(4), b.random(4))
    again = replica_generators(np.random.default_rng(5), 3)
    np.testing.assert_array_equal(again[0].random(2), replica_generators(5, 1)[0].random(2))
    assert not np.array_equal(many[0].random(4), many[1].random(4))
    # so a learner of 2 replicas and one of 5 release the same noise for their first two
    small, large = Schedule(2, 9, replicas=2, rng=3), Schedule(2, 9, replicas=5, rng=3)
    play_rounds(small, [1.0, 0.0], 9)
    play_rounds(large, [1.0, 0.0], 9)
    np.testing.assert_array_equal(small.noise_seen, large.noise_seen[:2])


@pytest.mark.parametrize("blocks", [[20], [1, 2, 3, 14], [7, 0, 13], [5, 5, 5, 5]])
def test_fast_path_equals_round_by_round_on_deterministic_rewards(blocks):
    means = [0.0, 1.0, 1.0]
    slow = Schedule(3, 20, length=4, replicas=3, rng=8)
    arms = play_rounds(slow, means, 20)
    fast = Schedule(3, 20, length=4, replicas=3, rng=8)
    assert isinstance(fast, StochasticArmsPlayer)
    env = FixedArms(means)
    assert isinstance(env, StochasticArms)
    regret = np.zeros(3)
    pulls = np.zeros((3, 3), dtype=np.int64)
    for b in blocks:
        out = fast.play_stochastic(env, b)
        assert isinstance(out, StochasticRounds)
        regret += out.regret
        pulls += out.pulls
    assert_same_state(slow.state_dict(), fast.state_dict())
    assert slow.log == [entry for entry in fast.log]
    # exact pseudo-regret: mu* - mu_a = 1 for every pull of arm 0
    np.testing.assert_array_equal(regret, (arms == 0).sum(axis=0))
    np.testing.assert_array_equal(pulls, slow.pulls)


def test_fast_path_jumps_whole_commitments():
    fast = Schedule(2, 1000, length=100, replicas=4, rng=0)
    env = FixedArms([1.0, 0.0])
    fast.play_stochastic(env, 1000)
    assert env.calls == 10  # one call per commitment of 100 rounds
    assert fast.t == 1000


def test_fast_path_after_act_plays_the_decision_made():
    slow, fast = Schedule(2, 10, replicas=2, rng=1), Schedule(2, 10, replicas=2, rng=1)
    play_rounds(slow, [1.0, 0.0], 10)
    fast.act()
    fast.play_stochastic(FixedArms([1.0, 0.0]), 10)
    assert_same_state(slow.state_dict(), fast.state_dict())


def test_fast_path_respects_the_horizon_and_refuses_bad_sums():
    learner = Schedule(2, 10, replicas=2, rng=1)
    with pytest.raises(ValueError, match="past it"):
        learner.play_stochastic(FixedArms([1.0, 0.0]), 11)
    learner.play_stochastic(FixedArms([1.0, 0.0]), 4)
    before = learner.state_dict()
    with pytest.raises(TypeError, match="stochastic K-armed environment"):
        learner.play_stochastic(object(), 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="means"):
        learner.play_stochastic(FixedArms([1.0, 0.0, 0.0]), 1)
    assert_same_state(before, learner.state_dict())  # refused before playing: nothing changed
    broken = FixedArms([1.0, 0.0])
    broken.reward_sums = lambda arms, counts, rng=None: 2.0 * counts  # rewards of 2
    with pytest.raises(ValueError, match="outside"):
        learner.play_stochastic(broken, 6)
    learner.load_state_dict(before)
    assert_same_state(before, learner.state_dict())


class FailsAt(FixedArms):
    """FixedArms whose ``fail_at``-th call returns sums of rewards of 2 (refused)."""

    def __init__(self, means: Any, fail_at: int) -> None:
        super().__init__(means)
        self.fail_at = fail_at

    def reward_sums(self, arms: np.ndarray, counts: np.ndarray, rng: Any = None) -> np.ndarray:
        sums = super().reward_sums(arms, counts, rng)
        return 2.0 * counts if self.calls == self.fail_at else sums


def test_a_failed_call_refuses_to_go_on_until_a_state_is_loaded():
    """The environment saw arms chosen with noise the call drew (3 commitments concluded before
    the refused sum): the learner stays where it stopped and refuses every call but
    load_state_dict (going back to the state before the call would draw that noise again)."""
    learner = Schedule(2, 30, length=3, replicas=2, rng=1)
    before = learner.state_dict()
    with pytest.raises(ValueError, match="outside"):
        learner.play_stochastic(FailsAt([1.0, 0.0], fail_at=4), 12)
    assert len(learner.log) == 3
    for call in (
        learner.act,
        learner.state_dict,
        lambda: learner.observe(BanditFeedback(np.zeros(2))),
        lambda: learner.play_stochastic(FixedArms([1.0, 0.0]), 1),
        lambda: learner.play_stochastic(FixedArms([1.0, 0.0]), 0),
    ):
        with pytest.raises(RuntimeError, match=r"failed part of the way \(ValueError"):
            call()
    learner.load_state_dict(before)  # the caller's decision (dponline.rng)
    learner.play_stochastic(FixedArms([1.0, 0.0]), 12)
    assert learner.t == 12


@pytest.mark.parametrize("name", PRIVATE_K_ARMED)
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_no_private_learner_goes_on_after_a_failed_call(name, calibration):
    """Every private K-armed learner (DP-UCB's counters, whose noise is partly drawn ahead,
    included): a call refused at its last environment call leaves the learner refusing to go
    on, until a state is loaded."""
    env = KArmedBandit(family="bernoulli", means=np.array([0.2, 0.5, 0.8]), horizon=2000, rng=0)
    means = [0.0, 0.5, 1.0]

    def build() -> KArmedLearner:
        return build_learner(name, env, epsilon=1.0, calibration=calibration, rng=3, replicas=2)

    learner, counted = build(), FixedArms(means)
    fresh = learner.state_dict()
    build().play_stochastic(counted, 2000)
    with pytest.raises(ValueError, match="outside"):
        learner.play_stochastic(FailsAt(means, fail_at=counted.calls), 2000)
    with pytest.raises(RuntimeError, match="meet again"):
        learner.play_stochastic(FixedArms(means), 1)
    with pytest.raises(RuntimeError, match="meet again"):
        learner.act()
    counter = getattr(learner, "counter", None)  # DP-UCB's, public: not wound back either
    assert counter is None or counter.t > 0
    learner.load_state_dict(fresh)
    learner.play_stochastic(FixedArms(means), 2000)
    assert learner.t == 2000


def test_resume_mid_commitment_is_bit_exact():
    whole = Schedule(2, 30, length=7, replicas=3, rng=4)
    play_rounds(whole, [0.0, 1.0], 30)
    first = Schedule(2, 30, length=7, replicas=3, rng=4)
    play_rounds(first, [0.0, 1.0], 11)
    state = first.state_dict()
    assert np.all(state["left"] > 0)  # mid-commitment
    resumed = Schedule(2, 30, length=7, replicas=3, rng=99)
    resumed.load_state_dict(state)
    resumed.play_stochastic(FixedArms([0.0, 1.0]), 19)
    assert_same_state(whole.state_dict(), resumed.state_dict())


def test_corrupt_states_are_refused_and_change_nothing():
    source = Schedule(2, 10, replicas=2, rng=0)
    play_rounds(source, [1.0, 0.0], 4)
    good = source.state_dict()
    learner = Schedule(2, 10, replicas=2, rng=5)
    before = learner.state_dict()
    corruptions = {
        "pulls not adding up to t": ("pulls", good["pulls"] + 1),
        "sums above pulls": ("sums", good["sums"] + 5.0),
        "arm out of range": ("arm", good["arm"] + 2),
        "episode sum above count": ("episode_sum", good["episode_count"] + 1.0),
        "one generator missing": ("generators", good["generators"][:1]),
        "another horizon": ("config", {**good["config"], "horizon": 11}),
    }
    for key, value in corruptions.values():
        with pytest.raises(ValueError):
            learner.load_state_dict({**good, key: value})
        assert_same_state(before, learner.state_dict())
    learner.load_state_dict(good)
    assert_same_state(good, learner.state_dict())


def test_fast_path_has_the_distribution_of_round_by_round_play():
    # The schedule learner against Bernoulli arms (0.8, 0.5), 2000 replicas x 60 rounds, played
    # both ways (other reward draws): its arms do not depend on the rewards, so the pulls agree
    # exactly, and each replica's total reward has the same law both ways (binomial sums):
    # a two-sample z-test of the means, |z| < 4.5, false failure about 7e-6.
    means = np.array([0.8, 0.5])
    fast = Schedule(2, 60, length=5, replicas=2000, rng=1)
    fast.play_stochastic(BernoulliArms(means, 2), 60)
    slow = Schedule(2, 60, length=5, replicas=2000, rng=1)
    env = BernoulliArms(means, 3)
    for _ in range(60):
        slow.observe(BanditFeedback(env.losses(slow.act())))
    a, b = fast.sums.sum(axis=1), slow.sums.sum(axis=1)
    z = (a.mean() - b.mean()) / np.sqrt(a.var() / a.size + b.var() / b.size)
    assert abs(z) < 4.5
    np.testing.assert_array_equal(fast.pulls, slow.pulls)


@pytest.mark.filterwarnings("ignore:.*fill the horizon:UserWarning")  # T = 10 is short on purpose
def test_a_state_saved_after_scale_noise_does_not_load_into_a_calibrated_learner():
    """An audit's learner (a tenth of the noise, privacy void) saves a state; loaded into a
    calibrated learner it would draw a tenth of the noise while claiming epsilon = 1."""

    env = KArmedBandit(means=[0.2, 0.8], horizon=10, rng=0)
    for name in ("adap-ucb", "dp-imed", "dp-se", "lazy-dp-ts", "dp-ucb"):
        weak = build_learner(name, env, epsilon=1.0, rng=0, calibration="paper")
        weak.scale_noise(0.1)
        calibrated = build_learner(name, env, epsilon=1.0, rng=0, calibration="paper")
        before = calibrated.state_dict()
        with pytest.raises(ValueError, match=r"noise multiplier|noise_multiplier"):
            calibrated.load_state_dict(weak.state_dict())
        assert calibrated.noise_multiplier == 1.0 and calibrated.privacy.epsilon == 1.0
        assert calibrated.state_dict()["noise_multiplier"] == before["noise_multiplier"]
