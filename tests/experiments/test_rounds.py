"""The round loop (:mod:`dponline.experiments.rounds`): the order of a round, what it keeps and
records, checkpoints that resume to the same numbers, and the fast path for oblivious linear
streams against one round at a time."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.environments.catalogue import build_environment
from dponline.experiments.checkpoints import load_state, save_state
from dponline.experiments.rounds import BLOCK_FLOATS, Tally, block_rounds, play
from dponline.protocol import ContextFeedback
from dponline.registry import build_learner


class _Env:
    """Round t (0-indexed) charges every replica t + 1 and shows ("feedback", t); with a
    context, ``context(t)`` is [t]. Every call is logged."""

    def __init__(self, horizon: int, log: list, *, context: bool = False, replicas: int = 2):
        self.horizon, self.reveals_context, self.log, self.replicas = (
            horizon,
            context,
            log,
            replicas,
        )

    def context(self, t: int) -> np.ndarray:
        self.log.append(("context", t))
        return np.array([float(t)])

    def round(self, t: int, action: np.ndarray) -> tuple[tuple[str, int], np.ndarray]:
        self.log.append(("round", t))
        return ("feedback", t), np.full(self.replicas, t + 1.0)


class _Learner:
    """Plays ``decisions[t]`` (replicas, ...) in round t from one buffer it overwrites each
    round; counts the feedback it observes. Every call is logged."""

    def __init__(self, decisions: np.ndarray, log: list):
        self.decisions, self.log, self.t = np.asarray(decisions), log, 0
        self.buffer = np.empty_like(self.decisions[0])

    def act(self) -> np.ndarray:
        self.log.append(("act", self.t))
        self.buffer[...] = self.decisions[self.t]
        return self.buffer

    def observe(self, feedback) -> None:
        if isinstance(feedback, ContextFeedback):
            self.log.append(("observe context", float(feedback.context[0])))
            return
        self.log.append(("observe", feedback))
        self.t += 1


def _decisions(horizon: int, replicas: int = 2) -> np.ndarray:
    return np.arange(horizon * replicas, dtype=float).reshape(horizon, replicas, 1)


@pytest.mark.parametrize("context", [False, True])
def test_a_round_is_context_act_round_observe(context):
    log: list = []
    env, learner = _Env(5, log, context=context), _Learner(_decisions(5), log)
    play(env, learner, range(1, 3))  # rounds 1 and 2 of 5, say after a resume
    want = []
    for played, t in enumerate(range(1, 3)):  # the fake learner counts its own rounds from 0
        if context:
            want += [("context", t), ("observe context", float(t))]
        want += [("act", played), ("round", t), ("observe", ("feedback", t))]
    assert log == want


def test_it_keeps_copies_of_the_actions_or_releases_after_the_feedback():
    log: list = []
    decisions = _decisions(4)
    learner = _Learner(decisions, log)
    actions = play(_Env(4, log), learner, range(4))
    # the learner overwrites one buffer each round: the loop kept copies
    assert [a.tolist() for a in actions] == decisions.tolist()
    learner = _Learner(decisions, log)
    released = play(_Env(4, log), learner, range(4), lambda lr: np.array([lr.t, -lr.t]))
    assert [r.tolist() for r in released] == [[1, -1], [2, -2], [3, -3], [4, -4]]  # after observe
    assert play(_Env(4, log), _Learner(decisions, log), range(4), keep=False) == []


def test_the_tally_records_cumulative_losses_at_its_rounds():
    """Round t charges t + 1, so the cumulative loss after round t (1-based) is t (t + 1) / 2;
    recorded every 3rd round, the last (10) and round 4."""
    log: list = []
    tally = Tally.start(2, last=10, record_every=3, rounds=(4,))
    play(_Env(10, log), _Learner(_decisions(10), log), range(10), keep=False, tally=tally)
    assert tally.recorded_t == [3, 4, 6, 9, 10]
    t = np.array(tally.recorded_t, dtype=float)
    np.testing.assert_array_equal(tally.loss_table(), np.repeat((t * (t + 1) / 2)[:, None], 2, 1))
    np.testing.assert_array_equal(tally.cumulative, [55.0, 55.0])
    assert tally.switch_table() is None


def test_switches_count_rounds_whose_decision_changed():
    """By hand: replica 0 plays a a b b a (switches after each round 0 0 1 1 2), replica 1
    plays a b c c c (0 1 2 2 2); a decision is a vector, changed if any entry is."""
    a, b, c = [0.0, 1.0], [0.0, 2.0], [3.0, 2.0]
    decisions = np.array([[a, a], [a, b], [b, c], [b, c], [a, c]])  # (T, replicas, 2)
    log: list = []
    tally = Tally.start(2, last=5, switches=True)
    play(_Env(5, log), _Learner(decisions, log), range(5), keep=False, tally=tally)
    np.testing.assert_array_equal(tally.switch_table(), [[0, 0], [0, 1], [1, 2], [1, 2], [2, 2]])


@pytest.mark.parametrize(("horizon", "calls"), [(10, [3, 6, 9]), (9, [3, 6])])
def test_checkpoints_come_after_every_kth_round_but_the_last(horizon, calls):
    log: list = []
    seen: list[int] = []
    play(
        _Env(horizon, log),
        _Learner(_decisions(horizon), log),
        range(horizon),
        checkpoint_every=3,
        checkpoint=seen.append,
    )
    assert seen == calls


def test_bad_arguments_are_one_clear_error():
    log: list = []
    env, learner = _Env(4, log), _Learner(_decisions(4), log)
    with pytest.raises(ValueError, match=r"consecutive .*range\(0, 4, 2\)"):
        play(env, learner, range(0, 4, 2))
    with pytest.raises(ValueError, match="checkpoint_every must be a positive integer, got 0"):
        play(env, learner, range(4), checkpoint_every=0, checkpoint=print)
    with pytest.raises(ValueError, match=r"rounds to record must lie in \[1, 4\], got \[0, 5\]"):
        Tally.start(2, last=4, rounds=(0, 2, 5))
    with pytest.raises(ValueError, match=r"learner X played actions of shape \(2, 1\); expected 3"):
        play(env, learner, range(4), tally=Tally.start(3, last=4), who="learner X")


def test_block_rounds_fit_the_budget_of_floats():
    for width in (1, 7, 100, 3000):
        b = block_rounds(width)
        assert b & (b - 1) == 0 and b * width <= BLOCK_FLOATS < 2 * b * width


# --- real learners: the fast path and checkpoints ----------------------------------------------

HORIZON = 300


def _experts(name: str, calibration: str, replicas: int, seed: int = 3):
    """The runner tests' sweep: 300 rounds of switching_best with 4 experts, and ``name``
    (ftrl, or dp-ftrl with Gaussian noise) built as the runner builds it."""
    env = build_environment("switching_best", HORIZON, np.random.default_rng(5), n_experts=4)
    options = {} if name == "ftrl" else {"noise": "gaussian", "delta": 1e-6}
    learner = build_learner(
        name,
        env,
        epsilon=None if name == "ftrl" else 1.0,
        calibration=calibration,
        allow_weaker=False,
        replicas=replicas,
        rng=np.random.default_rng(seed),
        **options,
    )
    return env, learner


def _tallied(env, learner, *, blocks: bool, replicas: int) -> Tally:
    tally = Tally.start(replicas, last=HORIZON, record_every=10, switches=True)
    play(env, learner, range(HORIZON), keep=False, tally=tally, blocks=blocks)
    return tally


@pytest.mark.parametrize(
    ("name", "calibration"), [("ftrl", "none"), ("dp-ftrl", "tight"), ("dp-ftrl", "paper")]
)
def test_the_fast_path_gives_the_step_by_step_record(name, calibration):
    """Blocks of rounds (an oblivious linear stream and a learner that plays blocks) against
    one round at a time: the same record where both draw the same noise in the same order
    (exact sums; the square root's noise drawn ahead), the same regret in distribution for the
    padded tree (its blocks draw the nodes by levels): 40 seeds of 300 rounds, mean final
    losses within 4 standard errors of each other (a false failure has probability about
    1.4e-4)."""
    replicas = 40 if calibration == "paper" else 3
    fast = _tallied(*_experts(name, calibration, replicas), blocks=True, replicas=replicas)
    slow = _tallied(*_experts(name, calibration, replicas), blocks=False, replicas=replicas)
    assert fast.recorded_t == slow.recorded_t == [*range(10, HORIZON + 1, 10)]
    if calibration != "paper":
        np.testing.assert_allclose(fast.loss_table(), slow.loss_table(), rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(fast.switch_table(), slow.switch_table())
    else:
        a, b = fast.cumulative, slow.cumulative
        se = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / replicas)
        assert abs(a.mean() - b.mean()) < 4 * se


def test_the_fast_path_runs_blocks_ending_at_checkpoints(monkeypatch):
    env, learner = _experts("dp-ftrl", "tight", 3)
    blocks: list[tuple[int, int]] = []
    original = type(env).loss_vectors

    def watched(self, start, stop):
        blocks.append((start, stop))
        return original(self, start, stop)

    monkeypatch.setattr(type(env), "loss_vectors", watched)
    seen: list[int] = []
    tally = Tally.start(3, last=HORIZON)
    play(env, learner, range(HORIZON), tally=tally, blocks=True, checkpoint_every=128,
         checkpoint=seen.append)  # fmt: skip
    assert blocks == [(0, 128), (128, 256), (256, 300)] and seen == [128, 256]


def _glm_bandit(seed: int):
    """A contextual bandit (its environment draws contexts and rewards: it has a state)."""
    env = build_environment(
        "glm_bandit", 60, np.random.default_rng(1), dim=4, link="linear", noise=0.0
    )
    learner = build_learner(
        "dp-glm-bandit",
        env,
        epsilon=1.0,
        calibration="tight",
        allow_weaker=False,
        replicas=3,
        rng=np.random.default_rng(seed),
    )
    return env, learner


@pytest.mark.parametrize("case", ["experts, blocks", "contextual bandit, steps"])
def test_a_pass_resumed_from_its_checkpoint_records_the_same_numbers(case, tmp_path):
    """Play to the checkpoint at round 25, save learner, environment and tally to a file, load
    them into a learner built with another seed, play the rest: the record (losses and
    switches) is bit for bit the uninterrupted one's (blocks end every 25 rounds in both: a
    block's cumulative sums round as its own)."""
    make = (lambda s: _experts("dp-ftrl", "tight", 3, s)) if "experts" in case else _glm_bandit
    blocks = "blocks" in case
    env, learner = make(7)
    whole = Tally.start(3, last=env.horizon, record_every=4, switches=True)
    play(env, learner, range(env.horizon), keep=False, tally=whole, blocks=blocks,
         checkpoint_every=25, checkpoint=lambda t: None)  # fmt: skip

    env, learner = make(7)
    first = Tally.start(3, last=env.horizon, record_every=4, switches=True)
    path = tmp_path / "pass.ckpt.npz"

    class Stop(Exception):
        """Raised by the checkpoint hook, as if the run were killed there."""

    def save(t: int) -> None:
        state = {"t": t, "learner": learner.state_dict(), "environment": env.state_dict()}
        save_state(path, {**state, **first.state()}, task="pass")
        raise Stop  # as if killed right after the checkpoint

    with pytest.raises(Stop):
        play(env, learner, range(env.horizon), keep=False, tally=first, blocks=blocks,
             checkpoint_every=25, checkpoint=save)  # fmt: skip
    state = load_state(path, task="pass")
    env, learner = make(99)  # another noise stream, replaced by the saved state
    learner.load_state_dict(state["learner"])
    env.load_state_dict(state["environment"])
    rest = Tally.start(3, last=env.horizon, record_every=4, switches=True)
    rest.load_state(state)
    play(env, learner, range(state["t"], env.horizon), keep=False, tally=rest, blocks=blocks,
         checkpoint_every=25, checkpoint=lambda t: None)  # fmt: skip
    assert state["t"] == 25 and rest.recorded_t == whole.recorded_t
    assert rest.loss_table().tobytes() == whole.loss_table().tobytes()
    assert rest.switch_table().tobytes() == whole.switch_table().tobytes()


def test_a_tally_loads_only_a_state_recorded_the_same_way():
    counting = Tally.start(2, last=5, switches=True)
    with pytest.raises(ValueError, match="saved tally counts switches, this pass does not"):
        Tally.start(2, last=5).load_state(counting.state())
    with pytest.raises(ValueError, match="does not count switches, this pass does"):
        counting.load_state(Tally.start(2, last=5).state())


# --- the stretch path of stochastic K-armed environments ------------------------------------


def _k_armed_pass(name: str, blocks: bool, every: int = 0, record_every: int = 7):
    from dponline.environments.k_armed import KArmedBandit
    from dponline.registry import build_learner

    # deterministic rewards (means 0 and 1): the stretch path and single rounds draw the same
    # rewards, and the learner draws its noise per replica in the same order either way
    env = KArmedBandit(means=[0.0, 1.0, 0.0, 1.0, 0.0], horizon=120, rng=0)
    eps = 1.0 if name.startswith(("adap", "dp")) else None
    learner = build_learner(name, env, epsilon=eps, replicas=4, rng=5)
    if blocks:  # the stretch path draws whole commitments, never a single round
        env.round = None
    tally = Tally.start(4, last=120, record_every=record_every, rounds=(50,))
    saved: list[int] = []
    play(env, learner, range(120), keep=False, tally=tally, blocks=blocks,
         checkpoint_every=every or None, checkpoint=saved.append if every else None)  # fmt: skip
    return learner, tally, saved


@pytest.mark.parametrize("name", ["ucb1", "adap-ucb", "dp-klucb"])
def test_stretches_record_what_single_rounds_record(name):
    one, single, _ = _k_armed_pass(name, blocks=False)
    many, stretched, _ = _k_armed_pass(name, blocks=True)
    assert stretched.recorded_t == single.recorded_t
    assert 50 in stretched.recorded_t and 120 in stretched.recorded_t
    np.testing.assert_allclose(stretched.loss_table(), single.loss_table(), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(many.pulls, one.pulls)
    assert many.t == one.t == 120


def test_stretches_end_at_checkpoints():
    _, _, saved = _k_armed_pass("adap-ucb", blocks=True, every=40)
    assert saved == [40, 80]
