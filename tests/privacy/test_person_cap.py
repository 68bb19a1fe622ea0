"""The participation cap: the rounds it admits for each person are at most k, any two at least
b apart, and it admits every round that keeps them so (checked against brute force on random
arrival schedules); it follows a learner's guarantee and survives a checkpoint."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.privacy import ParticipationCap, PrivacyBudget
from dponline.privacy.arguments import ArgumentError
from dponline.privacy.guarantee import PrivacyGuarantee, group_guarantee


@settings(max_examples=300, deadline=None)
@given(
    k=st.integers(1, 4),
    b=st.integers(1, 5),
    steps=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=40),
)
def test_admitted_rounds_fit_the_unit_and_no_round_that_fits_is_refused(k, b, steps):
    cap = ParticipationCap(k, b)
    t, admitted = 0, {}
    for person, advance in steps:
        t += advance + 1  # one person per round, rounds in order
        ok = cap.admit(person, t)
        mine = admitted.setdefault(person, [])
        fits = len(mine) < k and (not mine or t - mine[-1] >= (b if k > 1 else 1))
        assert ok == fits
        if ok:
            mine.append(t)
    for person, rounds in admitted.items():
        assert len(rounds) <= k and cap.admitted(person) == len(rounds)
        assert all(j - i >= (b if k > 1 else 1) for i, j in itertools.pairwise(rounds))


def test_the_cap_follows_a_learners_guarantee():
    assert ParticipationCap.for_guarantee(PrivacyGuarantee(1.0, 0.0)).participations == 1
    person = PrivacyGuarantee(1.0, 0.0, participations=50, min_separation=10)
    cap = ParticipationCap.for_guarantee(person)
    assert (cap.participations, cap.min_separation) == (50, 10)
    group = group_guarantee(PrivacyGuarantee(0.02, 0.0), 50)  # any 50 rounds
    assert (ParticipationCap.for_guarantee(group).min_separation) == 1
    with pytest.raises(TypeError, match="PrivacyGuarantee"):
        ParticipationCap.for_guarantee(PrivacyBudget(1.0))


def test_one_round_per_person_for_an_event_level_guarantee():
    cap = ParticipationCap(1, 7)  # the separation means nothing for one round
    assert cap.min_separation == 1
    assert [cap.admit("a", 0), cap.admit("b", 0), cap.admit("a", 5)] == [True, True, False]
    assert cap.people == 2


def test_bad_calls_are_refused():
    cap = ParticipationCap(3, 2)
    cap.admit("a", 4)
    with pytest.raises(ArgumentError, match="rounds come in order"):
        cap.admit("b", 3)
    # a retry of an admitted round, said so: the same answer, counted once (it raised, which
    # broke a service that asks again after a timeout); unsaid, it is refused
    assert cap.admit("a", 4, retry=True) and cap.admitted("a") == 1
    with pytest.raises(ArgumentError, match="retry must be True or False"):
        cap.admit("a", 4, retry=1)
    for bad in (-1, 2.0, True, np.True_, "5", np.float64(6.0)):
        with pytest.raises(ArgumentError, match="round index"):
            cap.admit("a", bad)
    with pytest.raises(ArgumentError, match="hashable"):
        cap.admit(["a"], 5)
    assert cap.admit("c", np.int64(6))  # a learner's round counter may be a numpy integer
    assert not cap.admit("c", np.int32(7))  # 1 round after: too soon (b = 2)
    with pytest.raises(ValueError, match="participations"):
        ParticipationCap(0)


def test_the_record_survives_a_checkpoint():
    cap = ParticipationCap(2, 3)
    for person, t in [("a", 0), ("b", 1), ("a", 2), ("a", 3), ("b", 9)]:
        cap.admit(person, t)
    state = json.loads(json.dumps(cap.state_dict()))
    resumed = ParticipationCap(2, 3)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == cap.state_dict()
    assert [resumed.admit("a", 10), resumed.admit("c", 11)] == [False, True]
    with pytest.raises(ValueError, match="cap of 2 rounds 3 apart"):
        ParticipationCap(3, 3).load_state_dict(state)
    broken = dict(state, counts=[5, 1])
    with pytest.raises(ValueError, match=r"outside 1\.\.2"):
        ParticipationCap(2, 3).load_state_dict(broken)


def test_the_cap_is_what_keeps_a_frequent_visitor_within_the_claim():
    """An audit that could refute it: batched EXP3 protecting a person of 3 rounds by group
    privacy, one batch of 6 rounds, all a frequent visitor's. Uncapped, the two streams differ
    in 6 rounds: the claim (epsilon 1 for the person) is refuted, measured lower bound 1.89
    (seed 1; the true epsilon is 2). Capped, the 3 rounds past the cap carry a fixed input in
    both streams: not refuted (0.93; the claim is attained, refuted with chance at most
    alpha = 1e-3). The refutation would fail only if the event's counts missed their means by
    many standard deviations: chance far below 1e-6."""
    from dponline.bandits.batched import same_arm_after
    from dponline.experiments.person_audit import audit_person

    k, visits = 3, 6
    budget = PrivacyBudget(1.0, participations=k).by_group_privacy()
    cap = ParticipationCap.for_guarantee(group_guarantee(PrivacyGuarantee(1 / k, 0.0), k))
    admitted = tuple(t for t in range(visits) if cap.admit("visitor", t))
    assert admitted == (0, 1, 2)

    def audited(rounds: tuple[int, ...]):  # type: ignore[no-untyped-def]
        return audit_person(
            "batched-exp3",
            budget=budget,
            environment="bernoulli_bandit",
            environment_options={"n_arms": 2},
            horizon=visits + 1,
            rounds=rounds,
            value_a=(0.0, 0.0),
            value_b=(1.0, 1.0),
            learner_options={"batch": visits, "eta": 20.0, "threshold": 1e4},
            statistic=same_arm_after(1, visits + 1),
            trials=20_000,
            pilot_trials=5_000,
            seed=1,
        )

    uncapped = audited(tuple(range(visits)))
    assert uncapped.refuted and uncapped.epsilon_lower > 1.5, str(uncapped)
    capped = audited(admitted)
    assert not capped.refuted, str(capped)


def test_a_deployment_checkpoints_the_policy_and_the_cap_together(tmp_path):
    """What the user-level guide says a deployment saves: the policy's state and the cap's
    record in one checkpoint (about 8 KB for DP-UCB on the BLT over 20 items), resumed whole:
    the same next arm, the same record."""
    import numpy as np

    from dponline.bandits.river_style import RiverPolicy
    from dponline.experiments.checkpoints import load_state, save_state

    items = [f"item-{i}" for i in range(20)]

    def policy_for() -> RiverPolicy:
        return RiverPolicy.from_registry(
            "dp-ucb", items, None, epsilon=1.0, delta=1e-6, noise="gaussian",
            mechanism="anytime_blt", participations=50, min_separation=10, seed=3,
        )  # fmt: skip

    policy = policy_for()
    cap = ParticipationCap.for_guarantee(policy.privacy)
    rng = np.random.default_rng(0)
    for t in range(300):
        person = f"user-{int(rng.integers(30))}"
        item = policy.pull(items)
        policy.update(item, bool(rng.random() < 0.05) if cap.admit(person, t) else False)
    path = tmp_path / "deploy.npz"
    save_state(path, {"policy": policy.state_dict(), "cap": cap.state_dict()}, task="rec")
    assert path.stat().st_size < 16_000
    state = load_state(path, task="rec")
    resumed = policy_for()
    resumed.load_state_dict(state["policy"])
    resumed_cap = ParticipationCap.for_guarantee(resumed.privacy)
    resumed_cap.load_state_dict(state["cap"])
    assert resumed.pull(items) == policy.pull(items)
    assert resumed_cap.state_dict() == cap.state_dict()


def test_a_retry_gets_the_same_answer_and_numpy_ids_save_as_json():
    import json

    cap = ParticipationCap(2, 3)
    answers = [(cap.admit(np.int64(7), t), cap.admit(7, t, retry=True)) for t in (0, 1, 3, 6)]
    assert answers == [(True, True), (False, False), (True, True), (False, False)]
    assert cap.admitted(7) == 2 and cap.people == 1
    state = json.loads(json.dumps(cap.state_dict()))  # numpy ids were not JSON-serialisable
    assert state["people"] == [7]
    again = ParticipationCap(2, 3)
    again.load_state_dict(state)
    assert not again.admit(7, 9) and again.admit("7", 9)  # "7" is another person


def test_a_round_index_that_does_not_advance_lets_no_one_in_twice():
    # a person's admitted round asked again is refused unless the caller says it retries the
    # last call: a stuck index (a timestamp, a batch number) let every later visit in, uncounted
    cap = ParticipationCap(2, 10)
    assert [cap.admit("ann", 5) for _ in range(6)] == [True] + [False] * 5
    assert cap.admitted("ann") == 1
    cap = ParticipationCap(1, 1)
    assert cap.admit("ann", 5) and cap.admit("ann", 5, retry=True)  # a retry
    assert cap.admit("bob", 5)
    assert not cap.admit("ann", 5, retry=True)  # not the last call: a later visit
    assert not cap.admit("bob", 5, retry=True)  # the last call was refused: refused again
    assert cap.admitted("ann") == 1 and cap.admitted("bob") == 1
    # the last call admitted survives a checkpoint (a retry after a restart); a state whose
    # last call is not an admitted round, or naming a person twice, is refused
    cap.admit("cy", 6)
    state = cap.state_dict()
    assert state["previous"] == ["cy", 6]
    again = ParticipationCap(1, 1)
    again.load_state_dict(state)
    assert again.admit("cy", 6, retry=True) and again.admitted("cy") == 1
    with pytest.raises(ValueError, match="not the round admitted last"):
        ParticipationCap(1, 1).load_state_dict({**state, "previous": ["cy", 5]})
    twice = {**state, "people": ["ann", "ann", "cy"]}  # the later count would replace the first
    with pytest.raises(ValueError, match="names a person twice"):
        ParticipationCap(1, 1).load_state_dict(twice)
    with pytest.raises(ValueError, match="round must be an integer"):
        ParticipationCap(1, 1).load_state_dict({**state, "round": 6.0})
    older = {k: v for k, v in state.items() if k != "previous"}  # saved before it was kept
    ParticipationCap(1, 1).load_state_dict(older)


def test_a_refused_state_leaves_the_cap_as_it_was():
    # the last call was checked after the counts were installed: a refused state left a cap
    # that had forgotten who was admitted (a reviewer's: ann admitted twice under a cap of 1)
    cap = ParticipationCap(1, 1)
    assert cap.admit("ann", 0) and cap.admit("bob", 3)
    good = cap.state_dict()
    for previous in (["bob", 2], ["ann", 0], ["bob"], 5, ["bob", 3, 4], [["x"], 3], ["bob", True]):
        with pytest.raises(ValueError, match="not the round admitted last"):
            cap.load_state_dict({**good, "people": ["bob"], "counts": [1], "last": [3],
                                 "previous": previous})  # fmt: skip
        assert cap.state_dict() == good
    assert not cap.admit("ann", 100, retry=True) and cap.admitted("ann") == 1
