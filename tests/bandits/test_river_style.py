"""The river-style interface: pull / update around the library's arm-playing learners, its
refusals, and (where river is installed) river's own evaluators driving it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.bandits.river_style import ArmSpace, RiverPolicy
from dponline.environments.catalogue import build_environment
from dponline.registry import NON_PRIVATE, build_learner

ARMS = ["red", "green", "blue"]


def _policy(name: str = "dp-exp2", horizon: int = 50, **kw) -> RiverPolicy:
    return RiverPolicy.from_registry(name, ARMS, horizon, seed=3, **kw)


def test_pull_then_update_is_a_round_of_the_learner():
    p = _policy()
    arm = p.pull(ARMS)
    assert arm in ARMS and p.learner.t == 0
    assert p.pull(list(reversed(ARMS))) == arm  # asked again in the same round: the same arm
    p.update(arm, 1.0)
    assert p.learner.t == 1 and p.n == 1 and p._n == 1


@pytest.mark.parametrize("name", ["dp-exp2", "exp2", "private-exp4", "dp-ucb"])
def test_a_second_pull_of_a_round_returns_its_arm(name):
    # EXP2's and EXP4's act() draws afresh each call: the policy asks once a round
    options = {"experts": "arms"} if name == "private-exp4" else {}  # no advice here: say so
    for seed in range(20):
        p = RiverPolicy.from_registry(name, ARMS, 10, seed=seed, **options)
        first = p.pull(ARMS)
        assert all(p.pull(ARMS) == first for _ in range(5))


def test_the_learner_sees_one_minus_the_reward_as_its_loss():
    seen = []
    p = _policy("exp2")
    observe = p.learner.observe
    p.learner.observe = lambda fb: (seen.append(float(fb.loss[0])), observe(fb))
    p.update(p.pull(ARMS), 0.25)
    p.update(p.pull(ARMS), np.array(0.5))  # a 0-d array, as numpy reductions give
    assert seen == [0.75, 0.5]


@pytest.mark.parametrize(
    "reward",
    [1.5, -0.1, math.nan, math.inf, "1", None, 1j, np.array([0.5]), np.array(1.5), np.array("1")],
)
def test_rewards_outside_the_unit_interval_or_not_numbers_are_refused(reward):
    p = _policy()
    arm = p.pull(ARMS)
    before = p.learner.state_dict()
    with pytest.raises(ValueError, match="reward must be a number in"):
        p.update(arm, reward)
    assert p.learner.t == 0 and p.n == 0
    np.testing.assert_equal(p.learner.state_dict()["t"], before["t"])
    p.update(arm, 0.5)  # the pull still waits for its reward
    assert p.learner.t == 1


@pytest.mark.parametrize(("click", "loss"), [(True, 0.0), (False, 1.0), (np.True_, 0.0)])
def test_a_boolean_reward_is_a_click(click, loss):
    seen = []
    p = _policy()
    observe = p.learner.observe
    p.learner.observe = lambda fb: (seen.append(float(fb.loss[0])), observe(fb))
    p.update(p.pull(ARMS), click)
    assert seen == [loss]


def test_update_must_be_for_the_arm_pulled_and_once():
    p = _policy()
    with pytest.raises(ValueError, match="must follow pull"):
        p.update("red", 1.0)
    arm = p.pull(ARMS)
    other = next(a for a in ARMS if a != arm)
    with pytest.raises(ValueError, match="learns only from the arms it plays"):
        p.update(other, 1.0)
    p.update(arm, 1.0)
    with pytest.raises(ValueError, match="must follow pull"):
        p.update(arm, 1.0)
    with pytest.raises(TypeError, match="one reward value"):
        p.update(p.pull(ARMS), 1.0, 2.0)


def test_pull_needs_the_policy_s_arms():
    p = _policy()
    with pytest.raises(ValueError, match="this policy plays the arms"):
        p.pull(["red", "green"])
    with pytest.raises(ValueError, match="this policy plays the arms"):
        p.pull(["red", "green", "yellow"])


def test_the_round_past_the_horizon_is_refused():
    p = _policy(horizon=3)
    for _ in range(3):
        p.update(p.pull(ARMS), 0.0)
    with pytest.raises(ValueError, match="past the horizon"):
        p.pull(ARMS)
    with pytest.raises(ValueError, match="must follow pull"):
        p.update(ARMS[0], 0.0)
    assert p.n == 3


def test_clone_is_a_fresh_policy_of_the_same_configuration():
    p = _policy()
    first = [p.pull(ARMS)]
    p.update(first[0], 1.0)
    q = p.clone()
    assert q.n == 0 and q.learner.t == 0 and q is not p
    assert q.pull(ARMS) == first[0]  # the same seed, the same first decision
    assert q.privacy.epsilon == p.privacy.epsilon == 1.0
    with pytest.raises(TypeError, match="recipe"):
        RiverPolicy(p.learner, ARMS).clone()


def test_clones_without_a_seed_draw_fresh_noise():
    # dp-exp2's arm probabilities stayed below 0.38 here (50 seeds), so two independent runs
    # agree on a round with chance at most 0.38 and on all 30 with chance below 3e-13
    p = RiverPolicy.from_registry("dp-exp2", ARMS, 30, seed=None)

    def pulls(policy: RiverPolicy) -> list:
        out = []
        for _ in range(30):
            out.append(policy.pull(ARMS))
            policy.update(out[-1], 0.5)
        return out

    assert pulls(p.clone()) != pulls(p.clone())


def test_ranking_counts_pulls_not_rewards():
    p = _policy("exp2", horizon=30)
    pulls = dict.fromkeys(ARMS, 0)
    for _ in range(30):
        arm = p.pull(ARMS)
        pulls[arm] += 1
        p.update(arm, 1.0 if arm == "blue" else 0.0)
    # most pulled first, ties in the order of the arms: the decisions' counts, not the rewards
    assert p.ranking == sorted(ARMS, key=lambda a: (-pulls[a], ARMS.index(a)))


def test_what_a_river_policy_cannot_wrap_is_refused():
    with pytest.raises(ValueError, match="not a registered bandit learner"):
        RiverPolicy.from_registry("dp-ftrl", ARMS, 10)
    with pytest.raises(ValueError, match="at least two distinct arms"):
        RiverPolicy.from_registry("exp2", ["a", "a"], 10)
    learner = build_learner("exp2", ArmSpace(3, 10), replicas=2)
    with pytest.raises(ValueError, match="replicas = 1"):
        RiverPolicy(learner, ARMS)
    for k in (2, 5):  # a learner of another number of arms
        with pytest.raises(ValueError, match="plays one of 3 arms"):
            RiverPolicy(build_learner("dp-ucb", ArmSpace(k, 10), epsilon=1.0), ARMS)
    env = build_environment("bandit_linear", 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_arms = None"):  # plays points, not arms
        RiverPolicy(build_learner("dp-scrible", env, epsilon=1.0), ARMS)


def test_the_non_private_counterpart_is_asked_by_name():
    p = RiverPolicy.from_registry("dp-exp2", ARMS, 10, epsilon=NON_PRIVATE, seed=0)
    assert p.privacy is None and p.clone().privacy is None
    # a deployment's epsilon=config.get("epsilon") with the setting missing: never no noise
    with pytest.raises(ValueError, match="epsilon=None for the private learner 'dp-imed'"):
        RiverPolicy.from_registry("dp-imed", ARMS, 400, epsilon=None, seed=0)


def test_river_replay_evaluation_drives_it():
    river_bandit = pytest.importorskip("river.bandit")
    rng = np.random.default_rng(0)
    means = {"red": 0.2, "green": 0.5, "blue": 0.8}
    logged = [ARMS[i] for i in rng.integers(0, 3, size=600)]
    history = [(ARMS, None, a, float(rng.random() < means[a])) for a in logged]
    ours = _policy("dp-exp2", horizon=600)
    total, used = river_bandit.evaluate_offline(ours, iter(history))
    assert used == ours.n == ours.learner.t
    # replay keeps the logged rounds whose arm the policy chose: about a third of 600
    assert 120 <= used <= 280  # binomial(600, 1/3) outside this range: chance < 1e-6
    theirs = river_bandit.RandomPolicy(seed=1)
    _, used_random = river_bandit.evaluate_offline(theirs, iter(history))
    assert 120 <= used_random <= 280
    assert 0.0 <= total.get() <= used


def test_horizon_none_builds_the_anytime_version():
    """horizon=None: the learner's anytime version (it plays past any horizon); the option
    anytime itself, which would ignore a given horizon, is refused, as is None for a learner
    without an anytime version."""
    p = RiverPolicy.from_registry("dp-imed", ARMS, None, seed=0)
    assert p.learner.horizon is None
    for _ in range(30):
        p.update(p.pull(ARMS), 0.5)
    with pytest.raises(ValueError, match="not the option anytime"):
        RiverPolicy.from_registry("dp-imed", ARMS, 10, anytime=True)
    with pytest.raises(ValueError, match="no anytime version"):
        RiverPolicy.from_registry("dp-se", ARMS, None)


@pytest.mark.parametrize("name", ["dp-imed", "dp-exp2", "batched-exp3", "ucb1"])
def test_a_saved_policy_resumes_where_it_stopped(name):
    """state_dict between rounds and with a pull waiting for its reward: a policy loaded from
    it pulls what the original pulls, with the same ranking and n."""
    rewards = np.random.default_rng(5).random(40)
    p = _policy(name, horizon=40)
    for r in rewards[:17]:
        p.update(p.pull(ARMS), r)
    for waiting in (False, True):
        if waiting:
            p.pull(ARMS)
        q = _policy(name, horizon=40)
        q.load_state_dict(p.state_dict())
        assert q.n == p.n == 17 and q.ranking == p.ranking
        assert q.pull(ARMS) == p.pull(ARMS)
    for r in rewards[17:]:
        q.update(q.pull(ARMS), r)
        p.update(p.pull(ARMS), r)
        assert q.learner.t == 40 or q.pull(ARMS) == p.pull(ARMS)
    assert q.ranking == p.ranking and q.n == p.n == 40


def test_a_saved_policy_whose_parts_disagree_is_refused_and_changes_nothing():
    p = _policy("dp-imed", horizon=40)
    for _ in range(5):
        p.update(p.pull(ARMS), 1.0)
    waiting = p.pull(ARMS)
    good = p.state_dict()
    other = ARMS.index(waiting) - 1  # another arm's index
    for change, says in [
        ({"counts": good["counts"] + 1}, "add up to"),
        ({"n": 6, "counts": good["counts"] + np.eye(3, dtype=np.int64)[0]}, "exceeds"),
        ({"pulled": None}, "disagree"),
        ({"pulled": other % 3}, "not the learner's decision"),
        ({"pulled": 3}, "saved pulled"),
    ]:
        q = _policy("dp-imed", horizon=40)
        before = q.state_dict()
        with pytest.raises(ValueError, match=says):
            q.load_state_dict({**good, **change})
        assert (
            q.n == 0
            and q.learner.t == 0
            and q.state_dict()["learner"]["t"] == before["learner"]["t"]
        )


def test_epsilon_is_for_private_learners_only():
    """A non-private learner refuses an epsilon it would ignore (a deployment would believe it
    private); a private one defaults to epsilon = 1; epsilon=None or NON_PRIVATE runs a
    non-private one."""
    assert RiverPolicy.from_registry("dp-imed", ARMS, 400, seed=0).privacy.epsilon == 1.0
    assert RiverPolicy.from_registry("ucb1", ARMS, 20).privacy is None
    assert RiverPolicy.from_registry("ucb1", ARMS, 20, epsilon=None).privacy is None
    assert RiverPolicy.from_registry("ucb1", ARMS, 20, epsilon=NON_PRIVATE).privacy is None
    with pytest.raises(ValueError, match=r"'ucb1' is not private.*'dp-imed'"):
        RiverPolicy.from_registry("ucb1", ARMS, 20, epsilon=0.1)


def test_the_seed_is_seed_not_rng():
    with pytest.raises(ValueError, match=r"seeds the learner with seed= .*clone\(\)"):
        RiverPolicy.from_registry("dp-imed", ARMS, 400, rng=0)


def test_a_reward_out_of_range_names_the_fix():
    p = _policy("ucb1")
    with pytest.raises(ValueError, match=r"in \[0, 1\], got 5.0: rescale.*bounds fixed in advance"):
        p.update(p.pull(ARMS), 5.0)


def test_a_person_s_budget_is_protected_by_group_privacy():
    """DP-IMED proves one round's privacy; a person's 4 rounds are protected by group privacy
    (one round at epsilon / 4), the guarantee stated for the person."""
    p = RiverPolicy.from_registry("dp-imed", ARMS, 4000, epsilon=1.0, participations=4)
    g = p.privacy
    assert (g.epsilon, g.participations, g.min_separation) == (1.0, 4, 1)
    assert g.derivation.startswith("group privacy over any 4")
    assert g.one_input is not None and g.one_input.epsilon == 0.25


def test_a_learner_built_to_clip_clips_the_rewards():
    p = _policy("ucb1", clip=True)
    arm = p.pull(ARMS)
    p.update(arm, 5.0)  # clipped to 1, as the learner clips its losses
    assert p.n == 1
    with pytest.raises(ValueError, match="reward must be a number"):
        p.update(p.pull(ARMS), float("nan"))


def test_round_past_the_horizon_is_refused_before_an_arm_is_shown():
    """pull() in round T + 1 returned an arm and only update() refused it: a deployment would
    show an item, then fail. Now pull() refuses, naming horizon=None."""
    from dponline.continual.base import HorizonExceededError

    p = RiverPolicy.from_registry("adap-ucb", ARMS, 6, seed=0)
    for _ in range(6):
        p.update(p.pull(ARMS), 1.0)
    with pytest.raises(HorizonExceededError, match=r"round 7 is past it.*horizon=None"):
        p.pull(ARMS)
    anytime = RiverPolicy.from_registry("dp-imed", ARMS, None, seed=0)
    for _ in range(7):
        anytime.update(anytime.pull(ARMS), 1.0)


def test_a_state_saved_for_another_unit_is_refused_naming_the_unit():
    """A policy saved for a person of 3 rounds loaded into one for one round was refused for
    'epsilon, first_phase, unit_scale' (its per-round epsilon is a third of the budget's),
    which named settings the user had given alike; the refusal names the unit and the fix."""
    arms = list("ABCD")
    person = RiverPolicy.from_registry("dp-imed", arms, None, epsilon=1.0, participations=3)
    one = RiverPolicy.from_registry("dp-imed", arms, None, epsilon=1.0)
    with pytest.raises(
        ValueError,
        match=r"protecting one person \(at most 3 rounds, at least 1 apart\), this one protects "
        r"one round: build it with participations=3, min_separation=1",
    ):
        one.load_state_dict(person.state_dict())
    with pytest.raises(ValueError, match=r"protecting one round, this one protects one person"):
        person.load_state_dict(one.state_dict())
    again = RiverPolicy.from_registry("dp-imed", arms, None, epsilon=1.0, participations=3)
    again.load_state_dict(person.state_dict())


def test_an_older_state_and_numpy_units_are_named_plainly():
    """A state saved before the unit was recorded said "differs in min_separation,
    participations" (a review's check): it says it comes from an earlier version; units read
    back as numpy integers still get the unit's message."""
    arms = list("ABCD")
    one = RiverPolicy.from_registry("dp-imed", arms, None, epsilon=1.0)
    state = one.state_dict()
    old = {key: value for key, value in state["learner"]["config"].items()}
    del old["participations"], old["min_separation"]
    with pytest.raises(ValueError, match="by an earlier version of dponline"):
        one.load_state_dict({**state, "learner": {**state["learner"], "config": old}})
    person = RiverPolicy.from_registry("dp-imed", arms, None, epsilon=1.0, participations=3)
    saved = person.state_dict()
    config = dict(saved["learner"]["config"])
    config["participations"], config["min_separation"] = np.int64(3), np.int64(1)
    with pytest.raises(ValueError, match=r"protecting one person \(at most 3 rounds"):
        one.load_state_dict({**saved, "learner": {**saved["learner"], "config": config}})


def test_a_state_over_other_arms_or_another_order_is_refused():
    # a reordered or renamed list of items gave each item another's statistics, silently (a
    # newcomer's restarted service: the best item's mean moved to another item)
    p = _policy("dp-imed", horizon=40)
    for _ in range(5):
        p.update(p.pull(ARMS), 1.0)
    state = p.state_dict()
    for ids in (sorted(ARMS), ["red", "green", "teal"]):
        q = RiverPolicy.from_registry("dp-imed", ids, 40, seed=3)
        with pytest.raises(ValueError, match="state was saved over the arms"):
            q.load_state_dict(state)
        assert q.n == 0
    # ids given back by a JSON checkpoint (tuples as lists, numpy integers as Python) are the
    # same ids
    ids = [("a", np.int64(1)), ("b", 2)]
    p = RiverPolicy.from_registry("dp-imed", ids, 40, seed=3)
    p.update(p.pull(ids), 1.0)
    state = {**p.state_dict(), "arm_ids": [["a", 1], ["b", 2]]}
    q = RiverPolicy.from_registry("dp-imed", ids, 40, seed=3)
    q.load_state_dict(state)
    assert q.n == 1


def test_a_policy_from_the_registry_pickles_and_clones_after():
    import pickle

    p = _policy("dp-imed", horizon=40)
    for _ in range(7):
        p.update(p.pull(ARMS), 0.5)
    q = pickle.loads(pickle.dumps(p))  # its recipe was a closure: "Can't pickle local object"
    assert q.n == 7 and q.pull(ARMS) == p.pull(ARMS)
    fresh, again = q.clone(), _policy("dp-imed", horizon=40)
    assert fresh.n == 0 and fresh.pull(ARMS) == again.pull(ARMS)
