"""Rewards that arrive later (dponline.bandits.delayed): the queues answering the learner's
requests, what the policy refuses, its saved state, the guarantee it states and an audit of it."""

from __future__ import annotations

import runpy
from collections import deque
from pathlib import Path

import numpy as np
import pytest

from dponline.bandits import DPIMED
from dponline.bandits.delayed import DelayedPolicy
from dponline.bandits.river_style import RiverPolicy
from dponline.privacy.audit import audit
from dponline.privacy.budget import PrivacyBudget

ARMS = ["A", "B"]


def test_without_delays_it_is_the_river_policy():
    """A reward recorded before the next pull: the same learner, seed and rewards give the same
    allocations as RiverPolicy's (the queue answers nothing; the last reward waits in it)."""
    delayed = DelayedPolicy.from_registry("dp-imed", ARMS, None, seed=3, first_phase=2)
    river = RiverPolicy.from_registry("dp-imed", ARMS, None, seed=3, first_phase=2)
    rewards = np.random.default_rng(0).random(300)
    for t in range(300):
        arm = delayed.pull(ARMS)
        assert river.pull(ARMS) == arm
        reward = bool(rewards[t] < (0.7 if arm == "B" else 0.4))
        delayed.update(arm, reward)
        river.update(arm, reward)
    assert (delayed.n, delayed.queued, river.n) == (299, 1, 300)


def test_a_request_is_pulled_until_a_reward_of_its_arm_answers_it():
    """By hand, UCB1 over two arms: it asks for A first, so A is pulled until A's first reward
    arrives; that reward answers its round 1, then it asks for B; a reward of A that arrives
    later waits in A's queue for A's next request."""
    policy = DelayedPolicy.from_registry("ucb1", ARMS, None)
    assert [policy.pull(ARMS) for _ in range(3)] == ["A", "A", "A"]
    assert policy.pending == {"A": 3, "B": 0} and policy.n == 0
    policy.update("A", 1.0)
    policy.update("A", 0.0)
    assert policy.queued == 2 and policy.learner.t == 0  # read when asked, not before
    assert policy.pull(ARMS) == "B"  # round 1 answered with A's 1.0; UCB1 asks for B
    assert (policy.n, policy.queued, policy.pending) == (1, 1, {"A": 1, "B": 1})
    np.testing.assert_array_equal(policy.learner.sums[0], [1.0, 0.0])
    policy.update("B", 0.0)
    assert policy.pull(ARMS) == "A"  # round 2: B's 0.0; A leads; round 3: A's queued 0.0 ...
    assert policy.n == 3 and policy.queued == 0  # ... and A again, its queue now empty
    np.testing.assert_array_equal(policy.learner.pulls[0], [2, 1])
    assert policy.ranking == ["A", "B"]


def test_what_it_refuses():
    policy = DelayedPolicy.from_registry("dp-imed", ARMS, 4, seed=0, first_phase=1)
    with pytest.raises(ValueError, match="none of its pulls waits"):
        policy.update("A", 1.0)
    with pytest.raises(ValueError, match="not one of"):
        policy.update("C", 1.0)
    with pytest.raises(ValueError, match="was offered"):
        policy.pull(["A", "C"])
    arm = policy.pull(ARMS)
    with pytest.raises(ValueError, match=r"reward must be a number in \[0, 1\]"):
        policy.update(arm, 1.5)
    assert policy.pending[arm] == 1  # a refused reward changes nothing
    policy.cancel(arm)  # lost to follow-up: never read
    with pytest.raises(ValueError, match="none of its pulls waits"):
        policy.cancel(arm)
    # built for T = 4: the learner reads 4 rewards, then the next allocation is refused
    with pytest.raises(ValueError, match="learned from 4 rewards"):
        for _ in range(10):
            policy.update(policy.pull(ARMS), 1.0)
    assert policy.learner.t == 4
    # only the stochastic suite's learners, fresh
    with pytest.raises(TypeError, match="stochastic K-armed suite"):
        DelayedPolicy(RiverPolicy.from_registry("dp-exp2", ARMS, 10).learner, ARMS)
    used = RiverPolicy.from_registry("dp-imed", ARMS, None, first_phase=1)
    used.update(used.pull(ARMS), 1.0)
    with pytest.raises(ValueError, match="needs a fresh learner"):
        DelayedPolicy(used.learner, ARMS)
    # a person's rounds b > 1 apart cannot hold behind the queues
    person = RiverPolicy.from_registry(
        "dp-ucb", ARMS, 100, noise="gaussian", delta=1e-6, participations=4, min_separation=10
    )
    with pytest.raises(ValueError, match="min_separation=1"):
        DelayedPolicy(person.learner, ARMS)


def test_the_guarantee_is_the_learner_s_with_what_the_queues_add():
    policy = DelayedPolicy.from_registry("dp-imed", ARMS, None, participations=3)
    learner = policy.learner.privacy
    stated = policy.privacy
    assert (stated.epsilon, stated.delta, stated.participations) == (1.0, 0.0, 3)
    assert stated.derivation.startswith(learner.derivation)
    assert "behind DelayedPolicy's queues" in stated.derivation
    # what it assumes is printed with the numbers, not only in the derivation (a review)
    assert str(stated).endswith(
        "; assumes each outcome is recorded, late or never (cancelled), independently of its "
        "value (DelayedPolicy; hold=D removes the timing from this)"
    )
    held = DelayedPolicy.from_registry("dp-imed", ARMS, None, hold=30).privacy
    assert "assumes whether an outcome is recorded within 30 allocations" in str(held)
    assert stated.to_dict()["assumes"] == stated.assumes and not learner.assumes
    assert DelayedPolicy.from_registry("kl-ucb", ARMS, None).privacy is None


def _play(policy: DelayedPolicy, rewards: np.ndarray, delay: int, start: int, stop: int) -> list:
    """Allocations start..stop-1, each reward recorded ``delay`` allocations after its own."""
    waiting: deque = deque()
    for i in range(start - delay, start):  # the rewards of allocations before start still due
        if i >= 0:
            waiting.append((i + delay, policy._saved_arms[i], rewards[i]))
    out = []
    for i in range(start, stop):
        while waiting and waiting[0][0] <= i:
            _, arm, reward = waiting.popleft()
            policy.update(arm, reward)
        arm = policy.pull(ARMS)
        policy._saved_arms.append(arm)
        out.append(arm)
        waiting.append((i + delay, arm, rewards[i]))
    return out


def test_a_saved_policy_resumes_where_it_stopped():
    """Saved with pulls waiting, rewards queued and a request open, a fresh policy loads it and
    allocates as the uninterrupted one; a state whose parts disagree is refused unchanged."""
    rewards = (np.random.default_rng(1).random(400) < 0.5).astype(float)

    def fresh() -> DelayedPolicy:
        policy = DelayedPolicy.from_registry("dp-imed", ARMS, None, seed=5, first_phase=2)
        policy._saved_arms = []  # type: ignore[attr-defined]
        return policy

    whole = fresh()
    straight = _play(whole, rewards, 7, 0, 400)
    first = fresh()
    head = _play(first, rewards, 7, 0, 150)
    state = first.state_dict()
    assert state["waiting"] and state["requested"] is not None
    second = fresh()
    second.load_state_dict(state)
    second._saved_arms = list(first._saved_arms)  # type: ignore[attr-defined]
    assert head + _play(second, rewards, 7, 150, 400) == straight
    bad = {**state, "counts": np.zeros(2, dtype=np.int64)}
    untouched = fresh()
    with pytest.raises(ValueError, match="each arm's at least its pulls waiting"):
        untouched.load_state_dict(bad)
    assert untouched.n == 0 and untouched.learner.t == 0


def test_a_ticket_takes_one_reward_of_its_own_pull():
    """update() took no pull: a click log delivered twice was read twice (a review); a ticket
    names the pull, a second reward for it is refused, and so is one for another arm's."""
    policy = DelayedPolicy.from_registry("ucb1", ARMS, None)
    assert policy.pull(ARMS) == "A"
    first = policy.last_ticket
    policy.pull(ARMS)
    policy.update("A", 1.0, ticket=first)
    with pytest.raises(ValueError, match=r"ticket 0: it no longer waits .*duplicate"):
        policy.update("A", 1.0, ticket=first)
    with pytest.raises(ValueError, match="ticket 7, but no pull has it"):
        policy.update("A", 1.0, ticket=7)
    assert policy.pull(ARMS) == "B" and policy.last_ticket == 2
    with pytest.raises(ValueError, match="arm 'A' with ticket 2, the pull of arm 'B'"):
        policy.update("A", 0.0, ticket=2)
    policy.cancel("B", ticket=2)
    assert policy.pending == {"A": 1, "B": 0} and policy.queued == 0


def test_a_hold_makes_when_the_learner_reads_independent_of_when_outcomes_come():
    """With hold=D a reward reaches the queue D allocations after its pull whenever it was
    recorded within them: recording every outcome at once or at the last moment gives the same
    allocations; one not recorded by then is dropped (counted, warned once, refused later)."""
    rewards = (np.random.default_rng(2).random(300) < 0.5).astype(float)

    def run(lag: int, lags=None) -> list:  # type: ignore[no-untyped-def]
        policy = DelayedPolicy.from_registry("dp-imed", ARMS, None, seed=1, first_phase=2, hold=10)
        due: list = []
        out = []
        for i in range(300):
            for _, ticket, arm in sorted(d for d in due if d[0] <= i):
                policy.update(arm, rewards[ticket], ticket=ticket)
            due = [d for d in due if d[0] > i]
            out.append(policy.pull(ARMS))
            step = lag if lags is None else int(lags[policy.last_ticket])
            due.append((i + step, policy.last_ticket, out[-1]))
        return out

    assert run(1) == run(10)  # recorded at once or at the last moment: the same allocations
    # ... and when the moment depends on the outcome (a success at once, a failure last)
    assert run(0, lags=np.where(rewards == 1.0, 1, 10)) == run(10)
    policy = DelayedPolicy.from_registry("ucb1", ARMS, None, hold=2)
    policy.pull(ARMS)
    with pytest.raises(ValueError, match="with hold=2 names its pull: ticket=t"):
        policy.update("A", 1.0)  # the order of recording would be the order of reading
    policy.pull(ARMS)
    with pytest.warns(UserWarning, match="not recorded within hold=2 allocations"):
        policy.pull(ARMS)  # ticket 0 is 2 allocations old, with no reward: dropped
    assert policy.late == 1
    with pytest.raises(ValueError, match="dropped, not recorded within hold=2"):
        policy.update("A", 1.0, ticket=0)
    state = policy.state_dict()
    again = DelayedPolicy.from_registry("ucb1", ARMS, None, hold=2)
    again.load_state_dict(state)
    assert (again.late, again.pending, again.last_ticket) == (1, policy.pending, 2)
    with pytest.raises(ValueError, match="saved with hold=2, this policy has hold=None"):
        DelayedPolicy.from_registry("ucb1", ARMS, None).load_state_dict(state)


def _allocations(data: np.ndarray, n: int, rng: np.random.Generator, fraction: float):
    """n runs of DP-IMED (epsilon 1, two arms, a first phase of one pull) behind the queues,
    ``fraction`` of its noise, on reward table ``data`` (participants x arms), each reward
    recorded 2 allocations after its own: the allocations, shape (n, participants)."""
    participants = data.shape[0]
    out = np.zeros((n, participants))
    for run in range(n):
        learner = DPIMED(2, None, budget=PrivacyBudget(1.0), first_phase=1, rng=rng)
        learner.scale_noise(fraction)
        policy = DelayedPolicy(learner, [0, 1])
        waiting: deque = deque()
        for i in range(participants):
            while waiting and waiting[0][0] <= i:
                _, arm, reward = waiting.popleft()
                policy.update(arm, reward)
            arm = policy.pull([0, 1])
            out[run, i] = arm
            waiting.append((i + 2, arm, data[i, arm]))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("fraction", "refuted"), [(1.0, False), (0.1, True)])
def test_the_allocations_keep_the_learner_s_guarantee(fraction, refuted):
    """Two reward tables that differ in the first participant's reward (0 or 1 on arm A, every
    other reward 1/2), outcomes 2 allocations late: the allocations of DP-IMED behind the
    queues are not refuted at its claim of epsilon = 1 and are refuted at a tenth of its noise
    (each with chance at most 1e-3 of a wrong verdict for a true claim)."""
    table_a = np.full((10, 2), 0.5)
    table_b = table_a.copy()
    table_a[0, 0], table_b[0, 0] = 0.0, 1.0
    result = audit(
        lambda data, n, rng: _allocations(data, n, rng, fraction),
        table_a,
        table_b,
        claim=(1.0, 0.0),
        trials=6000,
        pilot_trials=1500,
        alpha=1e-3,
        rng=0,
    )
    assert result.refuted is refuted, result


@pytest.mark.slow
def test_the_example_prints_what_the_guide_quotes(capsys):
    """examples/delayed_outcomes.py (20 s): the lines docs/private-bandits.md quotes."""
    example = Path(__file__).resolve().parents[2] / "examples" / "delayed_outcomes.py"
    runpy.run_path(str(example), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == [
        "dp-imed  D =   1: regret   54.1 +-  8.4 (median   48.0), best arm 0.76",
        "dp-imed  D =  30: regret   74.9 +- 11.3 (median   71.7), best arm 0.67",
        "dp-imed  D = 300: regret  123.2 +-  9.6 (median  124.0), best arm 0.52",
        "kl-ucb   D =   1: regret   61.9 +-  6.1 (median   59.6), best arm 0.73",
        "kl-ucb   D =  30: regret   64.4 +-  6.5 (median   65.0), best arm 0.73",
        "kl-ucb   D = 300: regret  107.2 +-  7.6 (median  106.2), best arm 0.60",
    ]


def test_a_held_state_resumes_exactly_through_json_and_a_corrupt_one_is_refused():
    """Saved with rewards held, tickets waiting, outcomes dropped as late and a request open,
    a policy loaded from the state's JSON allocates as the uninterrupted one; states that
    cannot happen are refused, the policy unchanged (a review's list)."""
    import json
    import warnings

    rng = np.random.default_rng(4)
    outcomes = (rng.random(600) < 0.5).astype(float)
    lags = rng.integers(1, 9, 600)  # some beyond the hold of 6: dropped
    arms = ["A", "B", "C"]

    def fresh() -> DelayedPolicy:
        return DelayedPolicy.from_registry("dp-imed", arms, None, seed=7, first_phase=2, hold=6)

    def play(policy: DelayedPolicy, start: int, stop: int, due: list) -> list:
        out = []
        for i in range(start, stop):
            for _, ticket, arm in sorted(d for d in due if d[0] <= i):
                if ticket in dict(policy.state_dict()["waiting"]):  # not dropped as late
                    policy.update(arm, outcomes[ticket], ticket=ticket)
            due[:] = [d for d in due if d[0] > i]
            out.append(policy.pull(arms))
            due.append((i + int(lags[i]), policy.last_ticket, out[-1]))
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the first late outcome's warning
        whole = fresh()
        straight = play(whole, 0, 600, [])
        first, due = fresh(), []
        head = play(first, 0, 300, due)
        state = first.state_dict()
        assert state["held"] and state["waiting"] and state["late"]
        assert state["requested"] is not None
        second = fresh()
        second.load_state_dict(json.loads(json.dumps(state, default=lambda a: a.tolist())))
        assert head + play(second, 300, 600, list(due)) == straight
    bad = {
        "late": {**state, "late": 10**6},
        "counts": {**state, "counts": state["counts"][::-1].copy()},
        "stale": {**state, "waiting": [[0, 0], *state["waiting"]]},
        "bool": {**state, "waiting": [[True, 0]]},
        "string": {**state, "queues": [["0.5"], [], []]},
        "arms": {**state, "arm_ids": ["B", "A", "C"]},
    }
    for name, broken in bad.items():
        untouched = fresh()
        with pytest.raises(ValueError):
            untouched.load_state_dict(broken)
        assert untouched.n == 0 and untouched.late == 0, name
