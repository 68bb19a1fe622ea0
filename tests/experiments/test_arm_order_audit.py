"""The arm-order guesser of the one-run audit (dponline.experiments.one_run_audit.ArmOrderModel):
the release schedules it assumes against the learners', its scores on hand-made runs, and the
K-armed learners audited in one run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.bandits.elimination import dp_se_constants, midpoint_loss
from dponline.environments.catalogue import build_environment
from dponline.experiments.one_run_audit import (
    ArmOrderModel,
    CanaryPlan,
    _play_actions,
    arm_order_model,
    audit_registered,
    doubling_release,
    first_epoch_release,
    lazy_epoch_release,
    next_pull,
    one_run_audit,
    phase_release,
    pulls_before,
)
from dponline.registry import build_learner, learners

#: the learners whose registry one-run audit reads the order of their arms
ARM_ORDER = ("adap-ucb", "adap-klucb", "adac-ucb", "dp-klucb", "dp-imed", "lazy-dp-ts", "dp-se")


def test_pulls_before_counts_each_arms_earlier_rounds():
    arms = np.array([2, 0, 2, 2, 1, 0, 2])
    assert pulls_before(arms).tolist() == [0, 0, 1, 2, 0, 1, 3]


def test_release_schedules_by_hand():
    n = np.arange(9)
    # the initial pull, then episodes that double the count: 1 | 2 | 3 4 | 5 6 7 8
    assert doubling_release(n).tolist() == [1, 2, 4, 4, 8, 8, 8, 8, 16]
    # epochs of 1, 2, 4 pulls: released at 1, 3, 7 pulls
    assert lazy_epoch_release(n).tolist() == [1, 3, 3, 7, 7, 7, 7, 15, 15]
    # a first phase of 3, then ratio 2: ends at 3, 6, 12
    assert phase_release(3, 2.0)(n).tolist() == [3, 3, 3, 6, 6, 6, 12, 12, 12]
    assert next_pull(n).tolist() == (n + 1).tolist()


def _play(name: str, arms: int, horizon: int, **options):
    env = build_environment("bernoulli_bandit", horizon, np.random.default_rng(0), n_arms=arms)
    learner = build_learner(
        name, env, epsilon=1.0, replicas=1, rng=np.random.default_rng(3), **options
    )
    losses = np.random.default_rng(0).random((horizon, arms))
    actions = _play_actions(learner, learner.feedback_kind, losses, arms, None)
    return learner, actions.reshape(horizon).astype(int)


@pytest.mark.parametrize("name", ["adap-ucb", "adac-ucb", "dp-klucb", "dp-imed"])
def test_a_commitment_ends_where_the_model_says_a_statistic_is_released(name):
    # every switch of arm happens at the end of an episode or phase: the last pull of a run,
    # with p pulls before it, is the release(p)-th pull of its arm
    learner, actions = _play(name, 4, 400)
    model = arm_order_model(learner)
    assert isinstance(model, ArmOrderModel) and model.levels == 1
    pulls = pulls_before(actions)
    last = np.nonzero(actions[:-1] != actions[1:])[0]
    assert len(last) > 10
    assert np.array_equal(np.asarray(model.release(pulls[last])), pulls[last] + 1)


def test_dp_se_first_epoch_length():
    learner, actions = _play("dp-se", 3, 50, beta=0.5)
    r_1 = math.ceil(float(dp_se_constants(1, 3, 0.5, 1.0)[0]))
    assert first_epoch_release(learner)(np.array([0, r_1 - 1, r_1])).tolist() == [
        r_1,
        r_1,
        r_1 + 1,
    ]
    # the first epoch is a round robin: round t plays arm t mod K
    assert actions.tolist() == [t % 3 for t in range(50)]


def test_models_of_the_registered_learners():
    for name in (*ARM_ORDER, "dp-ucb"):
        env = build_environment("bernoulli_bandit", 100, np.random.default_rng(0), n_arms=3)
        learner = build_learner(name, env, epsilon=1.0, replicas=1, rng=0)
        assert isinstance(arm_order_model(learner), ArmOrderModel), name
    env = build_environment("bernoulli_bandit", 100, np.random.default_rng(0), n_arms=3)
    assert arm_order_model(build_learner("ucb1", env, replicas=1, rng=0)) is None
    assert arm_order_model(build_learner("dp-ucb", env, replicas=1, rng=0, epsilon=1.0)).levels > 1


def test_scores_by_hand():
    # three arms pulled once each (rounds 0-2), then the next pulls in the order 2, 0, 1 and
    # then 1, 2, 0: canary 0 (round 0, arm 0) is read at arm 0's second pull (rank 1 of 3),
    # canary 1 (round 2, arm 2) at arm 2's (rank 0); centred ranks, times the sign of
    # loss_b - loss_a on the arm (+1 on arm 0, -1 on arm 2)
    actions = np.array([0, 1, 2, 2, 0, 1, 1, 2, 0])
    plan = CanaryPlan(canaries=2, gap=2, window=1, first=0)
    row_a = np.array([0.0, 0.0, 1.0])
    row_b = np.array([1.0, 1.0, 0.0])
    model = ArmOrderModel(doubling_release)
    got = model.scores(actions, None, row_a, row_b, plan)
    assert got.tolist() == [0.5 - 0.5, -(0.0 - 0.5)]
    # two levels: the second pull's rank and the third's (arm 0: ranks 1/2 and 2/2)
    two = ArmOrderModel(next_pull, levels=2).scores(actions, None, row_a, row_b, plan)
    assert two[0] == pytest.approx(((0.5 - 0.5) + (1.0 - 0.5)) / 2)
    # arms that never come back share the ranks after every arm that does: four arms, arms 1
    # and 3 not pulled a second time share ranks 2 and 3 (2.5 of 0..3)
    late = ArmOrderModel(doubling_release).scores(
        np.array([0, 1, 2, 3, 2, 0]),
        None,
        np.zeros(4),
        np.ones(4),
        CanaryPlan(canaries=1, gap=1, window=1, first=3),
    )
    assert late.tolist() == [pytest.approx(2.5 / 3 - 0.5)]


def test_midpoint_loss_puts_the_threshold_half_way():
    for arms in (2, 10, 100):
        r_e, h_e, c_e = dp_se_constants(1, arms, 0.5, 1.0)
        r = math.ceil(float(r_e))
        rest = midpoint_loss(arms)
        gaps = [(1 - reward + (r - 1) * rest) / r for reward in (1.0, 0.0)]
        assert np.mean(gaps) == pytest.approx(2 * h_e + 2 * c_e)


def test_adap_ucb_refuted_at_a_tenth_in_one_run():
    """AdaP-UCB on its plan (1,000 arms, 2,000 canaries 8 rounds apart): a tenth of its noise is
    refuted in one run, its claim is not (chance <= 1e-3 each; seeds 0-3 gave 3.4-3.8 at a
    tenth and 0.61-0.76 at the claim)."""
    entry = learners()["adap-ucb"]
    weak = audit_registered(entry, noise_fraction=0.1)
    assert weak.fitted == 0 and weak.audited == 2000
    assert weak.refuted
    assert not audit_registered(entry).refuted


@pytest.mark.slow
@pytest.mark.parametrize("name", (*ARM_ORDER[1:], "dp-ucb"))
def test_k_armed_learners_refuted_at_a_tenth_in_one_run(name):
    """Each K-armed learner with the arm-order guesser: a tenth of its noise refuted in one run
    (seed 0), its claim not (chance <= 1e-3 each). Seeds 0-3 gave at a tenth: AdaP-KLUCB
    3.1-3.7, AdaC-UCB 2.5-2.7, DP-KLUCB 1.8-2.0, DP-IMED 3.4-3.8, Lazy-DP-TS 1.7-2.0, DP-SE
    1.99, DP-UCB (Gaussian) 1.13-1.30."""
    entry = learners()[name]
    case = entry.test_cases[-1]  # DP-UCB: its Gaussian case
    assert audit_registered(entry, case, noise_fraction=0.1).refuted
    assert not audit_registered(entry, case).refuted


def test_user_k_armed_learner_audited_by_the_order_of_its_arms():
    """The library call on a bandit built by the user: AdaP-UCB with 300 arms, losses 1/2 on
    every arm, 600 canaries 8 rounds apart. A tenth of its noise is refuted, its claim is not
    (chance <= 1e-3 each; seed 0 gave 2.76 and 0.42)."""
    arms = 300
    plan = CanaryPlan(canaries=600, gap=8)
    env = build_environment("bernoulli_bandit", plan.horizon, np.random.default_rng(0), n_arms=arms)
    stream = np.full((plan.horizon, arms), 0.5)
    canary = (np.zeros(arms), np.ones(arms))
    for fraction, refuted in ((0.1, True), (1.0, False)):
        learner = build_learner(
            "adap-ucb", env, epsilon=1.0, replicas=1, rng=np.random.default_rng(5)
        )
        learner.scale_noise(fraction)
        result = one_run_audit(
            learner,
            stream,
            canary,
            plan,
            dim=arms,
            white_box=arm_order_model(learner),
            claim=(1.0, 0.0),  # the full noise's (scale_noise restates the learner's own)
            significance=1e-3,
        )
        assert result.audited == 600 and result.fitted == 0
        assert result.refuted is refuted
    with pytest.raises(ValueError, match="not both"):
        one_run_audit(
            learner,
            stream,
            canary,
            plan,
            dim=arms,
            white_box=arm_order_model(learner),
            score=np.sum,
        )


def test_a_persons_canary_scores_the_sum_of_its_rounds():
    """A canary of a person's rounds (one coin) is scored by the sum of what each of its rounds
    would score alone."""
    actions = np.array([0, 1, 2, 2, 0, 1, 1, 2, 0])
    row_a, row_b = np.array([0.0, 0.0, 1.0]), np.array([1.0, 1.0, 0.0])
    model = ArmOrderModel(next_pull, levels=2)
    person = CanaryPlan(canaries=1, gap=4, window=1, first=0, participations=2, separation=2)
    alone = CanaryPlan(canaries=2, gap=2, window=1, first=0)  # rounds 0 and 2 as canaries
    assert person.rounds.tolist() == [[0, 2]] and alone.rounds.ravel().tolist() == [0, 2]
    got = model.scores(actions, None, row_a, row_b, person)
    assert got.tolist() == [pytest.approx(model.scores(actions, None, row_a, row_b, alone).sum())]


def test_a_persons_claim_is_audited_by_the_order_of_its_arms():
    """AdaP-UCB for a person of 3 rounds (group privacy) with the arm-order guesser, each
    canary 3 rounds set by one coin: a tenth of its noise refuted, its claim not (chance
    <= 1e-3 each; seed 0 gave 3.80 and 0.55). The white boxes read one round per canary
    before; the fitted discriminant found nothing even at a hundredth of DP-UCB's noise."""
    from dponline.experiments.learner_audit import configured_case

    entry = learners()["adap-ucb"]
    case = configured_case(entry.test_case, {"participations": 3})
    weak = audit_registered(entry, case, noise_fraction=0.1)
    assert weak.fitted == 0 and weak.plan.participations == 3
    assert weak.refuted
    assert not audit_registered(entry, case).refuted
