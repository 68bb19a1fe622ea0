"""Group privacy: a guarantee for one round stated for a person who owns any k rounds
(:func:`dponline.privacy.guarantee.group_guarantee`), and the one-round budget that protects a
person that way (:meth:`dponline.privacy.budget.PrivacyBudget.by_group_privacy`), which
``build_learner`` asks for every learner that proves one round's privacy only.

The closed forms are checked exactly, the request identity for random budgets (hypothesis),
the lift by brute force against the composition of k one-round steps on a Laplace mechanism
(where k epsilon is attained), and the claim by an audit that could refute it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.bandits.batched import same_arm_after
from dponline.environments import KArmedBandit
from dponline.experiments.person_audit import audit_person, person_rounds
from dponline.privacy.accounting import zcdp_renyi_epsilon, zcdp_rho_for
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import (
    Neighbouring,
    PrivacyGuarantee,
    PrivacyNotion,
    group_delta_factor,
    group_guarantee,
    proves_less,
)
from dponline.registry import build_learner


def test_the_delta_factor_is_the_geometric_sum():
    assert group_delta_factor(0.7, 1) == 1.0
    assert group_delta_factor(0.7, 2) == pytest.approx(1 + math.exp(0.7), rel=1e-15)
    assert group_delta_factor(0.0, 5) == 5.0
    for eps, k in [(0.01, 50), (1.0, 4), (3.0, 7)]:
        direct = sum(math.exp(i * eps) for i in range(k))
        assert group_delta_factor(eps, k) == pytest.approx(direct, rel=1e-13)
        # never above the k e^((k - 1) epsilon) form of the textbooks
        assert group_delta_factor(eps, k) <= k * math.exp((k - 1) * eps)
    assert group_delta_factor(1e3, 10) == math.inf
    assert group_delta_factor(math.inf, 2) == math.inf
    with pytest.raises(ValueError, match="at least one member"):
        group_delta_factor(1.0, 0)


def test_a_pure_guarantee_lifts_to_k_epsilon():
    g = PrivacyGuarantee(0.25, 0.0, derivation="Laplace on each sum")
    lifted = group_guarantee(g, 4, requested_epsilon=1.0, requested_delta=0.0)
    assert (lifted.epsilon, lifted.delta, lifted.rho) == (1.0, 0.0, None)
    assert (lifted.participations, lifted.min_separation) == (4, 1)
    assert lifted.notion is PrivacyNotion.USER_LEVEL_DP
    assert lifted.one_input == g and lifted.meets_request
    assert lifted.derivation.startswith("group privacy over any 4 of its inputs")
    assert lifted.derivation.endswith("For one input: Laplace on each sum")
    assert group_guarantee(g, 1) is g


def test_an_approximate_guarantee_lifts_delta_by_the_geometric_sum():
    g = PrivacyGuarantee(0.5, 1e-8)
    lifted = group_guarantee(g, 3)
    assert lifted.epsilon == 1.5
    assert lifted.delta == pytest.approx(1e-8 * (1 + math.exp(0.5) + math.exp(1.0)), rel=1e-14)


def test_a_zcdp_guarantee_lifts_rho_by_k_squared_and_states_the_smaller_epsilon():
    # a Gaussian calibrated for (0.05, 1e-9) per round: over 20 rounds (eps, delta) group
    # privacy gives epsilon 1.0, the zCDP route 400 rho, whose epsilon at the lifted delta is
    # a little smaller (0.9983: the lifted delta is larger than one round's)
    rho = zcdp_rho_for(0.05, 1e-9)
    lifted = group_guarantee(PrivacyGuarantee(0.05, 1e-9, rho=rho), 20)
    assert lifted.rho == pytest.approx(400 * rho, rel=1e-15)
    delta = 1e-9 * group_delta_factor(0.05, 20)
    assert lifted.delta == pytest.approx(delta, rel=1e-14)
    by_rho = zcdp_renyi_epsilon(400 * rho, delta)
    assert by_rho < 0.999
    assert lifted.epsilon == pytest.approx(by_rho, rel=1e-12)
    assert "Proposition 1.9" in lifted.derivation
    # where (epsilon, delta) group privacy is smaller, it is kept
    small_k = group_guarantee(PrivacyGuarantee(0.01, 1e-6, rho=5e-5), 2)
    assert small_k.epsilon == pytest.approx(0.02, rel=1e-15)


def test_a_vacuous_lift_is_stated_as_no_guarantee():
    lifted = group_guarantee(PrivacyGuarantee(5.0, 1e-3), 10)
    assert lifted.epsilon == math.inf
    assert "vacuous" in lifted.derivation


def test_the_notion_and_the_relation_are_kept():
    joint = PrivacyGuarantee(
        0.1, 1e-7, neighbouring=Neighbouring.ONE_USER, notion=PrivacyNotion.JOINT_DP
    )
    lifted = group_guarantee(joint, 3)
    assert lifted.notion is PrivacyNotion.JOINT_DP
    assert lifted.unit == "one person: at most 3 users (differing in the person's users)"
    samples = group_guarantee(PrivacyGuarantee(0.1, 0.0, neighbouring=Neighbouring.ONE_SAMPLE), 2)
    assert "at most 2 samples" in samples.unit


def test_a_person_s_guarantee_is_not_lifted_again():
    lifted = group_guarantee(PrivacyGuarantee(0.1, 0.0), 3)
    with pytest.raises(ValueError, match="already over one person"):
        group_guarantee(lifted, 2)
    with pytest.raises(ValueError, match="one_input must be a guarantee for one input"):
        PrivacyGuarantee(0.3, 0.0, participations=3, one_input=lifted)


def test_parts_are_compared_by_their_one_input_guarantees():
    stated = group_guarantee(PrivacyGuarantee(0.1, 1e-8, rho=1e-3), 5)
    same = group_guarantee(PrivacyGuarantee(0.1, 1e-8, rho=1e-3), 5)
    weaker = group_guarantee(PrivacyGuarantee(0.1, 1e-8, rho=2e-3), 5)
    other_k = group_guarantee(PrivacyGuarantee(0.1, 1e-8, rho=1e-3), 4)
    assert not proves_less(same, stated)
    assert proves_less(weaker, stated)
    assert proves_less(other_k, stated)
    assert proves_less(PrivacyGuarantee(0.5, 0.0, participations=5), stated)  # not lifted
    assert proves_less(None, stated)


def test_by_group_privacy_asks_one_round_for_the_person_s_share():
    person = PrivacyBudget(1.0, 1e-6, participations=50, min_separation=10)
    one = person.by_group_privacy()
    assert one.epsilon == 0.02 and not one.is_user_level
    assert one.delta == pytest.approx(1e-6 / group_delta_factor(0.02, 50), rel=1e-15)
    assert one.group_of == person
    assert "by group privacy" in one.unit and "group_of=" in repr(one)
    event = PrivacyBudget(1.0)
    assert event.by_group_privacy() is event
    # every proof of the one-round budget is stated for the person
    g = one.prove(one.epsilon, one.delta, "a Gaussian mechanism")
    assert (g.participations, g.requested_epsilon, g.requested_delta) == (50, 1.0, 1e-6)
    assert g.epsilon <= 1.0 * (1 + 1e-12) and g.delta <= 1e-6 * (1 + 1e-12)


def test_a_one_round_budget_too_large_for_the_person_is_refused():
    person = PrivacyBudget(1.0, 0.0, participations=4)
    with pytest.raises(ValueError, match="does not protect one person"):
        PrivacyBudget(0.3, 0.0, group_of=person)
    with pytest.raises(ValueError, match="over a person"):
        PrivacyBudget(0.1, 0.0, group_of=PrivacyBudget(1.0))
    assert PrivacyBudget(0.25, 0.0, group_of=person).prove(0.25, 0.0, "x").meets_request


def test_a_weaker_proof_names_the_person_s_numbers():
    one = PrivacyBudget(1.0, 0.0, participations=2).by_group_privacy()
    with pytest.raises(ValueError, match=r"proves only epsilon=1.2.*requested \(1, 0\)"):
        one.prove(0.6, 0.0, "too little noise")


@settings(max_examples=200, deadline=None)
@given(
    epsilon=st.floats(1e-3, 20.0),
    delta=st.one_of(st.just(0.0), st.floats(1e-12, 0.5)),
    k=st.integers(2, 500),
)
def test_a_proof_of_the_one_round_request_meets_the_person_s(epsilon, delta, k):
    one = PrivacyBudget(epsilon, delta, participations=k).by_group_privacy()
    g = one.prove(one.epsilon, one.delta, "exact")
    assert g.meets_request
    assert g.epsilon == pytest.approx(epsilon, rel=1e-12)
    if delta > 0:
        assert g.delta == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_k_laplace_steps_compose_to_the_lift_exactly(k):
    """A sum released once with Laplace(1 / epsilon_1): a person's k rounds of sensitivity 1
    in it shift it by k, whose largest log density ratio (over a grid through the whole line) is
    k epsilon_1, the lift's epsilon: group privacy is attained by a learner that puts each
    round in one release (the K-armed learners' sums, the batched bandits' batch means)."""
    eps1 = 0.3
    lifted = group_guarantee(PrivacyGuarantee(eps1, 0.0), k)
    x = np.linspace(-50, 50, 200_001)
    log_ratio = eps1 * (np.abs(x - k) - np.abs(x))  # log p_0(x) - log p_k(x)
    assert log_ratio.max() == pytest.approx(lifted.epsilon, rel=1e-12)


def test_build_learner_runs_an_event_level_learner_at_the_person_s_share():
    env = KArmedBandit([0.2, 0.5, 0.9], horizon=1000, rng=0)
    learner = build_learner("dp-imed", env, epsilon=1.0, participations=5, min_separation=20)
    assert learner.epsilon == pytest.approx(0.2)  # its phases and noise are one round's at 0.2
    g = learner.privacy
    assert (g.epsilon, g.participations, g.min_separation) == (1.0, 5, 1)
    assert g.one_input.epsilon == pytest.approx(0.2)
    # a learner that proves the person itself takes the person's budget as is
    native = build_learner("dp-ucb", env, epsilon=1.0, participations=5, min_separation=20)
    assert native.privacy.one_input is None
    assert (native.privacy.participations, native.privacy.min_separation) == (5, 20)


K = 3
BATCHED = {"batch": K, "eta": 20.0, "threshold": 1e4}


def _batched_person_audit(budget: PrivacyBudget):  # type: ignore[no-untyped-def]
    """Batched EXP3 with one batch of K rounds, all the person's (losses 0 against 1 for both
    arms), and the next round's arm: the batch mean moves by 1, K times one round's move."""
    return audit_person(
        "batched-exp3",
        budget=budget,
        environment="bernoulli_bandit",
        environment_options={"n_arms": 2},
        horizon=K + 1,
        rounds=person_rounds(K + 1, K, 1),
        value_a=(0.0, 0.0),
        value_b=(1.0, 1.0),
        learner_options=BATCHED,
        statistic=same_arm_after(1, K + 1),
        trials=20_000,
        pilot_trials=5_000,
        seed=1,
    )


def test_a_round_s_calibration_is_refuted_for_a_person():
    # calibrated for one round at epsilon 1, the person's 3 rounds have epsilon 3: measured
    # lower bound 2.87 (seed 1). Not refuting would need the event's counts to miss their
    # means by many standard deviations: chance of a false failure far below 1e-9.
    result = _batched_person_audit(PrivacyBudget(1.0))
    assert result.claimed_epsilon == 1.0
    assert result.refuted, str(result)
    assert result.epsilon_lower > 2.0


def test_the_group_privacy_calibration_is_not_refuted():
    # the claim is true (1.0 for the person, attained: measured lower bound 0.94); refuted
    # with probability at most alpha = 1e-3 (Clopper-Pearson), the seed fixed
    result = _batched_person_audit(PrivacyBudget(1.0, participations=K).by_group_privacy())
    assert result.claimed_epsilon == pytest.approx(1.0)
    assert not result.refuted, str(result)


def test_a_person_s_learner_resumes_from_a_checkpoint(tmp_path):
    """The lifted guarantee (with its one-round guarantee inside) survives the checkpoint
    format, and a learner built for another person refuses the state."""
    from dponline.environments.catalogue import build_environment
    from dponline.experiments.checkpoints import load_state, save_state
    from dponline.experiments.rounds import play

    env = build_environment("bandit_convex", 64, np.random.default_rng(0), domain="simplex", dim=3)

    def build(k: int):  # type: ignore[no-untyped-def]
        return build_learner(
            "private-bandit", env, epsilon=1.0, participations=k, anytime=True, rng=0
        )

    learner = build(2)
    play(env, learner, range(10))
    save_state(tmp_path / "s.npz", learner.state_dict(), task="t")
    state = load_state(tmp_path / "s.npz", task="t")
    resumed = build(2)
    resumed.load_state_dict(state)
    assert resumed.t == 10 and resumed.privacy == learner.privacy
    with pytest.raises(ValueError, match=r"privacy|guarantee"):
        build(3).load_state_dict(state)


def _dp_se_scaled(budget: PrivacyBudget, fraction: float):  # type: ignore[no-untyped-def]
    from dponline.registry import learners

    entry = learners()["dp-se"]

    def make(n: int, rng: np.random.Generator):  # type: ignore[no-untyped-def]
        learner = entry.factory(
            KArmedBandit([0.2, 0.5, 0.9], horizon=n, rng=0), budget=budget, rng=rng
        )
        learner.scale_noise(fraction)
        return learner

    return make


def test_a_voided_guarantee_stays_void_for_the_person():
    """Noise cut below its calibration voids the guarantee, the one-input one inside too: the
    doubling trick refuses such epochs for a person as for one round (from a review: the
    one-input guarantee kept its epsilon, and the wrapper stated 1 for a tenth of the noise)."""
    from dponline.doubling import DoublingLearner
    from dponline.privacy.budget import WeakerGuaranteeError
    from dponline.privacy.guarantee import scaled_guarantee

    lifted = group_guarantee(PrivacyGuarantee(0.2, 0.0), 5)
    void = scaled_guarantee(lifted, 0.1)
    assert void.epsilon == math.inf and void.one_input.epsilon == math.inf
    assert proves_less(void, lifted)
    group = PrivacyBudget(1.0, participations=3).by_group_privacy()
    one_round = PrivacyBudget(group.epsilon)
    for budget in (one_round, group):
        with pytest.raises(WeakerGuaranteeError, match="epsilon=inf"):
            DoublingLearner(_dp_se_scaled(budget, 0.1), budget=budget, rng=0)


def test_joint_dp_over_users_stays_joint_for_a_person():
    """The GLM bandit restates its estimators' guarantee as joint DP over users, the one-input
    guarantee alike, so the doubling trick (event-level only) refuses it for a person as for one
    user (from a review: only the outer guarantee was restated, and the wrapper stated
    user-level DP over samples)."""
    from dponline.bandits.glm_bandit import DPGLMBandit
    from dponline.doubling import DoublingLearner

    group = PrivacyBudget(1.0, 1e-3, participations=3, min_separation=2).by_group_privacy()
    bandit = DPGLMBandit(4, 3, 16, h_sub=1.0, warmup=1, link="linear", budget=group, rng=0)
    g = bandit.privacy
    assert g.notion is PrivacyNotion.JOINT_DP and g.one_input.notion is PrivacyNotion.JOINT_DP
    assert g.neighbouring is g.one_input.neighbouring is Neighbouring.ONE_USER
    assert "at most 3 users" in g.unit

    def make(n: int, rng: np.random.Generator) -> DPGLMBandit:
        return DPGLMBandit(4, 3, n, h_sub=1.0, warmup=1, link="linear", budget=group, rng=rng)

    with pytest.raises(ValueError, match="keeps event-level DP only"):
        DoublingLearner(make, budget=group, first=8, rng=0)


def test_a_lifted_guarantee_cannot_be_relabelled_outside_only():
    import dataclasses

    lifted = group_guarantee(PrivacyGuarantee(0.2, 0.0), 5)
    with pytest.raises(ValueError, match="restate both"):
        dataclasses.replace(lifted, notion=PrivacyNotion.JOINT_DP)
    with pytest.raises(ValueError, match="restate both"):
        dataclasses.replace(lifted, neighbouring=Neighbouring.ONE_SAMPLE)


def test_a_calibration_for_another_unit_is_refused():
    """A noisy-min estimator takes a calibration handed in only when it answers its own budget:
    one proven for one round at the person's epsilon is not one for the person by group
    privacy (from a review: it was accepted, with a third of the noise)."""
    from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe

    group = PrivacyBudget(1.0, 1e-3, participations=3, min_separation=2).by_group_privacy()
    other = NoisyMinFrankWolfe(4, 50, budget=PrivacyBudget(1.0, 1e-3), rng=0)
    with pytest.raises(ValueError, match="calibration is not this estimator's"):
        NoisyMinFrankWolfe(4, 50, budget=group, rng=0, calibration=other.calibration)
    own = NoisyMinFrankWolfe(4, 50, budget=group, rng=0)
    again = NoisyMinFrankWolfe(4, 50, budget=group, rng=1, calibration=own.calibration)
    assert again.privacy == own.privacy
    mine = own.budget  # the estimator's: over one sample
    assert mine.answered_by(own.privacy) and not mine.answered_by(other.privacy)
    assert not other.budget.answered_by(own.privacy)


@pytest.mark.parametrize(
    ("options", "unit"),
    [
        ({}, (3, 4)),  # tight, a horizon: the counter calibrated for the pattern
        ({"calibration": "paper", "allow_weaker": True}, (3, 1)),  # the paper's formula
        ({"anytime": True, "noise": "laplace"}, (3, 1)),  # doubling blocks
    ],
)
def test_a_person_level_learner_falls_back_to_group_privacy(options, unit):
    """DP-FTRL proves the pattern where it can; where its configuration proves one round only
    the class refuses the person (PersonNotCovered) and build_learner takes group privacy."""
    import warnings

    from dponline.environments.catalogue import build_environment
    from dponline.privacy.budget import PersonNotCovered
    from dponline.privacy.guarantee import PrivacyWarning

    env = build_environment("switching_best", 64, np.random.default_rng(0), n_experts=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = build_learner(
            "dp-ftrl", env, epsilon=1.0, participations=3, min_separation=4, rng=0, **options
        ).privacy
    said = [str(w.message) for w in caught if not issubclass(w.category, PrivacyWarning)]
    # the fallback is said aloud; the pattern's own proof is silent
    assert any("runs by group privacy instead" in m for m in said) == (unit == (3, 1))
    assert (g.participations, g.min_separation) == unit
    assert (g.one_input is not None) == (unit == (3, 1))
    if unit == (3, 1):
        from dponline.online.ftrl import DPFTRL

        person = PrivacyBudget(1.0, participations=3, min_separation=4, calibration="paper")
        with pytest.raises(PersonNotCovered, match="by_group_privacy"):
            DPFTRL(3, None, budget=PrivacyBudget(1.0, participations=3), noise="laplace")
        with pytest.raises(PersonNotCovered):
            DPFTRL(3, 64, budget=person, noise="laplace", mechanism="binary_tree")


def test_a_block_for_one_round_does_not_cover_a_person():
    """A doubling counter stated for a person refuses blocks proven for one round (from a
    review: proves_less compared the numbers only, and such a counter stated epsilon 1 for 3
    rounds whose blocks proved it for one)."""
    from dponline.continual.calibration import CounterCalibrator
    from dponline.continual.registry import get_mechanism
    from dponline.continual.unknown_horizon import BlockCalibration, DoublingCounter
    from dponline.privacy.bounds import Box
    from dponline.privacy.calibration import calibrate

    tree, bounds = get_mechanism("binary_tree"), Box(0, 1, dim=1)
    person = PrivacyBudget(1.0, participations=3, min_separation=4)
    stated = calibrate(CounterCalibrator(tree, 64, bounds, "laplace"), person).guarantee

    def block(n: int) -> BlockCalibration:
        cal = calibrate(CounterCalibrator(tree, n, bounds, "laplace"), PrivacyBudget(1.0))
        return BlockCalibration(tree, cal.noise, cal.guarantee)

    assert proves_less(block(8).guarantee, stated)
    farther = PrivacyGuarantee(0.5, 0.0, participations=3, min_separation=8)
    assert proves_less(farther, stated)  # covers rounds 8 apart, not 4
    assert not proves_less(PrivacyGuarantee(1.0, 0.0, participations=4), stated)
    counter = DoublingCounter(block, 1, bounds=bounds, privacy=stated, rng=0)
    with pytest.raises(RuntimeError, match=r"proves .* less than the stream's stated"):
        counter.step([1.0])


def test_a_blt_under_group_privacy_runs_the_one_round_parameters():
    """A BLT built for a person by group privacy was calibrated for one round: it runs the
    parameters optimised for one round, not for the person's k rounds 1 apart (from a review:
    it ran those, 1.85x the variance its calibration measured)."""
    from dponline.continual import build_counter
    from dponline.continual.blt import optimise_blt
    from dponline.privacy.bounds import Box

    group = PrivacyBudget(1.0, 1e-6, participations=3).by_group_privacy()
    counter = build_counter(group, horizon=256, bounds=Box(0, 1, dim=1), mechanism="blt")
    np.testing.assert_array_equal(counter.parameters.theta, optimise_blt(256).theta)
    assert counter.privacy.participations == 3 and counter.privacy.epsilon <= 1.0 + 1e-9


def test_a_weaker_proof_answers_only_a_budget_that_allows_it():
    import warnings

    from dponline.privacy.guarantee import PrivacyWarning

    lenient = PrivacyBudget(1.0, calibration="paper", allow_weaker=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        weaker = lenient.prove(2.0, 0.0, "a paper's formula")
    assert not weaker.meets_request and lenient.answered_by(weaker)
    assert not PrivacyBudget(1.0, calibration="paper").answered_by(weaker)


def test_first_use_messages_name_the_right_fix():
    """From a first-use review: a pure-DP learner meets a person's delta by pure DP (it refused
    it); min_separation without participations is refused (it was dropped); every private
    learner lists delta among its options."""
    from dponline.bandits import DPIMED
    from dponline.registry import learners

    person = PrivacyBudget(1.0, 1e-6, participations=8, min_separation=4)
    g = DPIMED(3, 1000, budget=person.by_group_privacy(), rng=0).privacy
    assert (g.epsilon, g.delta, g.participations) == (pytest.approx(1.0), 0.0, 8)
    env = KArmedBandit([0.2, 0.5, 0.9], horizon=100, rng=0)
    with pytest.raises(ValueError, match=r"min_separation=10 says how far apart.*participations"):
        build_learner("dp-imed", env, min_separation=10)
    for entry in learners().values():
        if entry.private:  # (a non-private one may have a delta of its own: a confidence)
            assert "delta" in entry.documented_options(), entry.name
