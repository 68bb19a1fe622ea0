"""Replay evaluation (Li, Chu, Langford & Wang 2011, Algorithm 1): it keeps exactly the rounds
whose logged arm is the learner's choice, feeds the learner those rounds' rewards and nothing
else, and on uniformly logged data estimates a policy's click rate without bias."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.bandits.glm_bandit import DPGLMBandit
from dponline.bandits.uniform_play import UniformPlay
from dponline.environments.open_bandit import OpenBanditLog, open_bandit_log
from dponline.experiments.replay import (
    ReplayTarget,
    replay,
    replay_contextual_learners,
    replay_horizon,
    replay_learner,
    replay_note,
    replay_summary,
    wilson_interval,
)
from dponline.protocol import ContextFeedback, FeedbackKind, RewardFeedback
from dponline.registry import NON_PRIVATE


def hand_log(contexts, actions, rewards, arms) -> OpenBanditLog:
    contexts = np.asarray(contexts, dtype=float)
    n = len(actions)
    return OpenBanditLog(
        contexts=contexts,
        actions=np.asarray(actions),
        rewards=np.asarray(rewards, dtype=float),
        propensity=np.full(n, 1.0 / arms),
        items=np.arange(arms),
        rows=np.arange(n),
        feature_names=tuple(f"x{j}" for j in range(contexts.shape[1])),
    )


class ContextArgmax:
    """A scripted contextual learner: plays the argmax of the context's coordinates (mod its
    arms) and records everything it is shown."""

    feedback_kind = FeedbackKind.CONTEXTUAL_BANDIT
    replicas = 1

    def __init__(self, arms: int, horizon: int) -> None:
        self.arms, self.horizon = arms, horizon
        self.contexts: list[np.ndarray] = []
        self.rewards: list[float] = []
        self.t = 0

    def observe(self, feedback) -> None:
        if isinstance(feedback, ContextFeedback):
            self.contexts.append(np.array(feedback.context))
        else:
            assert isinstance(feedback, RewardFeedback) and feedback.reward.shape == (1,)
            self.rewards.append(float(feedback.reward[0]))
            self.t += 1

    def act(self) -> np.ndarray:
        return np.array([int(np.argmax(self.contexts[-1])) % self.arms])


def test_replay_keeps_exactly_the_matching_rounds_of_a_hand_log():
    # the learner plays argmax(context): arms 0, 1, 2, 0, 1, 2, 0 on these seven rounds
    contexts = np.eye(3)[[0, 1, 2, 0, 1, 2, 0]]
    actions = [0, 2, 2, 1, 1, 0, 0]  # matches at rows 0, 2, 4, 6
    rewards = [1, 1, 0, 1, 1, 1, 0]
    log = hand_log(contexts, actions, rewards, arms=3)
    learner = ContextArgmax(3, horizon=10)
    run = replay(learner, log, label="argmax")
    np.testing.assert_array_equal(run.kept_rows, [0, 2, 4, 6])
    np.testing.assert_array_equal(run.rewards, [1, 0, 1, 0])
    assert learner.rewards == [1.0, 0.0, 1.0, 0.0] and learner.t == 4
    assert len(learner.contexts) == 7 and run.rows_read == 7
    assert run.kept == 4 and run.clicks == 2 and run.rate == 0.5
    # the walk stops when the learner has used its horizon of kept rounds
    short = ContextArgmax(3, horizon=2)
    cut = replay(short, log)
    np.testing.assert_array_equal(cut.kept_rows, [0, 2])
    assert cut.rows_read == 3 and len(short.contexts) == 3
    # a log where nothing matches keeps nothing, and its rate is undefined
    none = replay(ContextArgmax(3, 10), hand_log(contexts[:2], [1, 0], [1, 1], arms=3))
    assert none.kept == 0 and math.isnan(none.rate)


def test_uniform_play_is_kept_where_its_own_draws_hit_the_logged_arms():
    rng = np.random.default_rng(5)
    n, arms = 400, 4
    log = hand_log(np.ones((n, 1)), rng.integers(0, arms, n), rng.random(n) < 0.3, arms)
    learner = UniformPlay(1, arms, horizon=n, rng=np.random.default_rng(11))
    run = replay(learner, log)
    # UniformPlay draws one arm per context from its generator: the same draws by hand
    draws = np.random.default_rng(11).integers(0, arms, size=(n, 1))[:, 0]
    np.testing.assert_array_equal(run.kept_rows, np.flatnonzero(draws == log.actions))
    assert learner.t == run.kept


def test_a_dropped_round_leaves_the_glm_bandit_as_it_was():
    learner = DPGLMBandit(3, 2, 20, h_sub=0.1, warmup=1, budget=None, replicas=1, rng=0)
    x = np.array([1.0, 0.5, -0.5])
    for _ in range(4):  # past the warm-up
        learner.observe(ContextFeedback(x))
        learner.act()
        learner.observe(RewardFeedback(np.array([1.0])))
    before = learner.state_dict()
    learner.observe(ContextFeedback(x))
    learner.act()
    learner.observe(ContextFeedback(-x))  # the round was dropped: a new context instead
    after = learner.state_dict()
    assert after["t"] == before["t"] == 4
    np.testing.assert_array_equal(after["forced"], before["forced"])
    for a, b in zip(after["estimators"], before["estimators"], strict=True):
        for key in b:
            if isinstance(b[key], np.ndarray):
                np.testing.assert_array_equal(a[key], b[key])


def test_replay_refuses_what_it_cannot_drive():
    log = hand_log(np.ones((3, 1)), [0, 1, 0], [1, 0, 1], arms=2)
    with pytest.raises(ValueError, match="one replica"):
        replay(UniformPlay(1, 2, 3, replicas=2, rng=0), log)

    class Bandit(ContextArgmax):
        feedback_kind = FeedbackKind.BANDIT

    with pytest.raises(TypeError, match="contextual bandit learner"):
        replay(Bandit(2, 3), log)
    with pytest.raises(ValueError, match="not one"):
        replay_learner("exp2", log)


def test_replay_of_a_fixed_choice_estimates_its_value_on_a_synthetic_log():
    # two user types, four arms logged uniformly, click probabilities mu[type, arm]; the
    # scripted learner plays argmax(context), arm 0 for type 0 and arm 1 for type 1, worth
    # (0.2 + 0.6) / 2 = 0.4 per round, against 0.35 for the logging policy
    mu = np.array([[0.2, 0.5, 0.1, 0.3], [0.4, 0.6, 0.3, 0.4]])
    rng = np.random.default_rng(2024)
    n, arms = 8000, 4
    kind = rng.integers(0, 2, n)
    logged = rng.integers(0, arms, n)
    clicks = rng.random(n) < mu[kind, logged]
    run = replay(ContextArgmax(arms, n), hand_log(np.eye(2)[kind], logged, clicks, arms))
    # kept ~ Binomial(8000, 1/4): 2000 +- 39; the kept rewards are 2000 Bernoulli(0.4) draws,
    # sd 0.011; outside 5 sd of either with probability < 1e-6
    assert abs(run.kept - 2000) < 5 * math.sqrt(8000 * 0.25 * 0.75)
    assert abs(run.rate - 0.4) < 5 * math.sqrt(0.4 * 0.6 / run.kept)


def test_uniform_play_on_the_open_bandit_log_estimates_the_logged_click_rate():
    log = open_bandit_log()
    runs = replay_learner("uniform-play", log, seeds=8, seed=7)
    table = replay_summary(runs, log).set_index("learner")
    row = table.loc["uniform-play"]
    logged = table.loc["logged policy (uniform)", "click_rate"]
    assert logged == pytest.approx(0.0038)
    # uniform play is the logging policy, so its replayed click rate estimates 38 / 10,000.
    # Given the log, each run keeps every row independently with probability 1/80 (its draws
    # are independent of the log); simulating that exactly, the mean rate of 8 runs falls
    # outside the Wilson interval of one run's size with probability about 5e-6 (200,000
    # simulated sweeps, one failure); a single run would fail 8% of the time (2 kept clicks).
    assert row["ci_low"] <= logged <= row["ci_high"]
    # replay keeps Binomial(10,000, 1/80) rounds per run: 8 runs keep 1,000 +- 31.4 in all,
    # outside 5 sd with probability 6e-7
    kept = sum(r.kept for r in runs)
    assert abs(kept - 1000) < 5 * math.sqrt(8 * 10_000 / 80 * 79 / 80)
    assert all(r.rows_read == 10_000 for r in runs)  # the default horizon is never reached
    # n / K = 125, less the chance that the default horizon caps the kept rounds
    assert row["seeds"] == 8 and 125.0 - 1e-3 < row["kept_expected"] < 125.0


def test_the_summary_says_what_a_private_replay_proves_and_what_its_horizon_keeps():
    """A private learner's row and note give epsilon and delta (delta defaults to 1 / the kept
    rounds' horizon, so it is no small constant); a horizon below n / K caps the kept rounds
    and their expected number alike (the expected n / K was printed under a cap of 40)."""
    log = open_bandit_log(10)
    runs = replay_learner("dp-glm-bandit", log, epsilon=1.0, seeds=2, seed=3, horizon=40)
    table = replay_summary(runs, log).set_index("learner")
    row = table.loc["dp-glm-bandit eps=1"]
    assert row["proven_epsilon"] == pytest.approx(runs[0].epsilon) and runs[0].epsilon <= 1.0
    assert row["delta"] == pytest.approx(1 / 40)
    assert row["kept"] == 40.0 and row["kept_expected"] == pytest.approx(40.0, abs=1e-6)
    assert math.isnan(table.loc["logged policy (uniform)", "proven_epsilon"])
    note = replay_note(table.reset_index(), log)
    assert f"on 40 kept rounds, ({runs[0].epsilon:.3g}, 0.025)-DP" in note
    # the expectation itself: E[min(Binomial(n, 1/K), h)] by the sum of tails, against a
    # direct sum over the binomial's support
    from scipy.stats import binom

    from dponline.experiments.replay import expected_kept

    k = np.arange(201)
    direct = float((np.minimum(k, 12) * binom.pmf(k, 200, 0.05)).sum())
    assert expected_kept(200, 20, 12) == pytest.approx(direct, rel=1e-12)
    assert expected_kept(200, 20) == 10.0 and expected_kept(200, 20, 500) == 10.0


def test_replay_is_deterministic_with_a_seed():
    log = open_bandit_log(10)
    a = replay_learner("dp-glm-bandit", log, seeds=2, seed=3, epsilon=1.0)
    b = replay_learner("dp-glm-bandit", log, seeds=2, seed=3, epsilon=1.0)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.kept_rows, y.kept_rows)
        np.testing.assert_array_equal(x.rewards, y.rewards)
    u = replay_learner("uniform-play", log, seeds=2, seed=3)
    v = replay_learner("uniform-play", log, seeds=2, seed=4)
    assert not np.array_equal(u[0].kept_rows, v[0].kept_rows)
    assert not np.array_equal(u[0].kept_rows, u[1].kept_rows)  # the seeds' runs differ
    assert a[0].label == "dp-glm-bandit eps=1"
    assert u[0].label == "uniform-play"


def test_a_private_learner_is_replayed_private_unless_asked_otherwise():
    """Without epsilon a private learner runs at epsilon 1 (it ran without noise when epsilon
    defaulted to None); its non-private counterpart is asked by name and labelled so."""
    log = open_bandit_log(10)
    (run,) = replay_learner("dp-glm-bandit", log, seeds=1, horizon=20)
    assert run.label == "dp-glm-bandit eps=1"
    (run,) = replay_learner("dp-glm-bandit", log, seeds=1, horizon=20, epsilon=NON_PRIVATE)
    assert run.label == "dp-glm-bandit (non-private)"
    with pytest.raises(ValueError, match="epsilon=None for the private learner"):
        replay_learner("dp-glm-bandit", log, seeds=1, horizon=20, epsilon=None)
    with pytest.raises(ValueError, match=r"'glm-bandit' is not private.*dp-glm-bandit"):
        replay_learner("glm-bandit", log, seeds=1, horizon=20, epsilon=1.0)


def test_every_contextual_learner_replays_on_the_open_bandit_log():
    log = open_bandit_log(10)
    table, runs = replay_contextual_learners(log, seeds=1, seed=1)
    assert {"dp-glm-bandit eps=1", "glm-bandit", "uniform-play"} <= set(table["learner"])
    assert table.loc[0, "learner"] == "logged policy (uniform)"
    assert table.loc[0, "click_rate"] == pytest.approx(7 / 1300)
    for run in runs:
        # 1,300 rows over 10 arms: 130 kept rounds expected over the draw of the log, whatever
        # the policy; on this log a policy that settles on one arm keeps about that arm's rows
        # (items 0-9 were shown 98 to 160 times)
        assert 60 <= run.kept <= replay_horizon(1300, 10)
    assert (
        (table["ci_low"] <= table["click_rate"]) & (table["click_rate"] <= table["ci_high"])
    ).all()


def test_the_wilson_interval():
    lo, hi = wilson_interval(0.5, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    lo, hi = wilson_interval(0.0, 125)
    z2 = 1.959964**2
    assert lo == 0.0 and hi == pytest.approx(z2 / (125 + z2))
    assert all(math.isnan(v) for v in wilson_interval(0.5, 0))
    assert replay_horizon(10_000, 80) == 170 and replay_horizon(3, 2) == 3


def test_the_replay_target_gives_the_factories_what_they_read():
    target = ReplayTarget(dim=25, arms=80, horizon=170)
    assert target.reward_range == (0.0, 1.0) and target.link == "logistic"
    assert target.radius == 6.0 and target.reveals_context


def test_the_note_states_the_replay_and_the_rates():
    log = hand_log(np.eye(2)[[0, 1, 0, 1]], [0, 1, 1, 0], [1, 0, 1, 1], arms=2)
    runs = [replay(ContextArgmax(2, 4), log, label="argmax", seed=0)]
    table = replay_summary(runs, log)
    note = replay_note(table, log)
    assert "2 items as arms, 4 logged impressions with 3 clicks" in note
    assert "argmax 50.00% [" in note and "on 2 kept rounds" in note
    assert "logged policy (uniform) 75.00% [" in note
    assert "The intervals all overlap" in note
