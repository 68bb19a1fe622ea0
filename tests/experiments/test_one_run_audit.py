"""The one-run audit of a learner (dponline.experiments.one_run_audit): a learner built by the
user on the user's own stream, and the registry's learners."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.environments.catalogue import build_environment
from dponline.experiments.one_run_audit import (
    FILLERS,
    CanaryPlan,
    _registered_inputs,
    _release_coordinates,
    audit_registered,
    canary_features,
    coin_generator,
    long_run_case,
    one_run_audit,
    one_run_table,
)
from dponline.privacy.guarantee import PrivacyGuarantee, PrivacyNotion
from dponline.protocol import ContextFeedback, FeedbackKind, LossVectorFeedback
from dponline.registry import build_learner, learners


def _dp_ftrl(noise_fraction: float, horizon: int, seed: int = 1):
    env = build_environment("stochastic", horizon, np.random.default_rng(0), n_experts=2)
    learner = build_learner(
        "dp-ftrl",
        env,
        epsilon=1.0,
        noise="laplace",
        delta=0.0,
        replicas=1,
        rng=np.random.default_rng(seed),
    )
    learner.scale_noise(noise_fraction)
    return learner


def test_plan_rounds_and_features():
    plan = CanaryPlan(canaries=3, gap=4, window=4, first=2)
    assert plan.rounds[:, 0].tolist() == [2, 6, 10]
    assert plan.horizon == 15
    actions = np.arange(15.0)[:, None] ** 2  # a_t = t^2: 15 values, read as continuous
    f = canary_features(actions, plan)
    # after: lag bins [1], [2, 3], [4] from c = 2: mean (c + l)^2 - c^2;
    # before: bins [1], [2, 3] (gap - 1 = 3 rounds back, clipped at round 0)
    assert f[0].tolist() == [9 - 4, (16 + 25) / 2 - 4, 36 - 4, 1 - 4, (0 + 0) / 2 - 4]
    assert f[1].tolist() == [49 - 36, (64 + 81) / 2 - 36, 100 - 36, 25 - 36, (16 + 9) / 2 - 36]
    with pytest.raises(ValueError, match="window"):
        CanaryPlan(canaries=3, gap=2, window=3)
    group = CanaryPlan(canaries=2, gap=10, participations=3, separation=2)
    assert group.rounds.tolist() == [[1, 3, 5], [11, 13, 15]]


def test_choice_features_and_log_weights():
    """Few distinct actions (an arm per round) add the share of rounds that repeat the
    canary's round's choice; probability vectors are read as centred log-weights, an
    underflowed weight as the smallest positive float."""
    plan = CanaryPlan(canaries=2, gap=4, window=2, first=1)
    arms = np.array([0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 0])[:, None]
    f = canary_features(arms, plan)
    # per canary: after [1] diff, same; [2] diff, same; before [1] diff, same; [2, 3] diff, same
    assert f.shape == (2, 8)
    assert f[0].tolist() == [0.0, 1.0, -1.0, 0.0, -1.0, 0.0, -1.0, 0.0]
    probs = np.tile([0.5, 0.5], (40, 1))
    probs[5] = [1.0, 0.0]
    probs[6:] = np.linspace(0.2, 0.8, 34)[:, None] * [1, -1] + [0, 1]
    logs = _release_coordinates(probs)
    assert np.all(np.isfinite(logs)) and np.allclose(logs.sum(axis=1), 0.0)
    assert logs[5, 0] - logs[5, 1] == pytest.approx(-np.log(np.finfo(float).tiny))


def test_fillers_keep_the_canaries_and_differ():
    entry = learners()["dp-ftrl-oco"]
    rows = {}
    for filler in FILLERS:
        if filler == "reference":  # a bandit's filler
            with pytest.raises(ValueError, match="bandit"):
                _registered_inputs(entry, entry.test_case, 16, 4, filler)
            bandit = learners()["dp-se"]
            _env, _a, _b, ref = _registered_inputs(bandit, bandit.test_case, 16, 4, filler)
            rest = bandit.test_case.audit.rest
            assert ref.tolist() == [[0.0, rest]] * 16  # arm 0 the reference
            continue
        _env, a, b, rows[filler] = _registered_inputs(entry, entry.test_case, 16, 4, filler)
        assert rows[filler].shape == (16, a.size) and not np.array_equal(a, b)
    assert np.all(rows["neutral"][:, 0] == 0.0)  # v = 0: a flat loss
    assert rows["blocks"][:4].tolist() == [a.tolist()] * 4
    assert rows["alternate"][:2].tolist() == [a.tolist(), b.tolist()]
    with pytest.raises(ValueError, match="filler"):
        _registered_inputs(entry, entry.test_case, 16, 4, "zeros")


@pytest.mark.slow
def test_user_learner_on_user_stream_refuted_with_a_hundredth_of_the_noise():
    """The user's own stream (random losses), dp-ftrl with Laplace noise: a hundredth of the
    noise is caught in one run; the calibrated learner is not refuted (chance <= 1e-3 each)."""
    plan = CanaryPlan(canaries=450, gap=2)
    stream = np.random.default_rng(3).random((plan.horizon, 2)) * 0.2
    canary = (np.array([0.0, 0.0]), np.array([1.0, 0.0]))
    weak = one_run_audit(  # tested against what its full noise claims
        _dp_ftrl(0.01, plan.horizon),
        stream,
        canary,
        plan,
        dim=2,
        significance=1e-3,
        claim=(1.0, 0.0),
    )
    assert weak.refuted and weak.epsilon_lower > 1.5
    assert weak.audited == 300 and weak.fitted == 150
    full = one_run_audit(
        _dp_ftrl(1.0, plan.horizon), stream, canary, plan, dim=2, significance=1e-3
    )
    assert not full.refuted
    assert full.result.claimed_epsilon == 1.0 and full.result.delta == 0.0


def test_user_scorer_audits_every_canary():
    plan = CanaryPlan(canaries=60, gap=2)
    stream = np.zeros((plan.horizon, 2))
    res = one_run_audit(
        _dp_ftrl(1.0, plan.horizon),
        stream,
        ([0.0, 0.0], [1.0, 0.0]),
        plan,
        dim=2,
        score=lambda f: -f[:, 0],  # less weight on expert 1 after a loss on it
    )
    assert res.audited == 60 and res.fitted == 0


def test_refusals():
    plan = CanaryPlan(canaries=10, gap=2)
    stream = np.zeros((plan.horizon, 2))
    with pytest.raises(ValueError, match="differ"):
        one_run_audit(_dp_ftrl(1.0, plan.horizon), stream, ([1, 0], [1, 0]), plan, dim=2)
    with pytest.raises(ValueError, match="plan's horizon"):
        one_run_audit(_dp_ftrl(1.0, 50), stream[:5], ([0, 0], [1, 0]), plan, dim=2)
    env = build_environment("stochastic", plan.horizon, np.random.default_rng(0), n_experts=2)
    two = build_learner("dp-ftrl", env, epsilon=1.0, replicas=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="replicas=1"):
        one_run_audit(two, stream, ([0, 0], [1, 0]), plan, dim=2)
    played = _dp_ftrl(1.0, plan.horizon + 3)  # a learner that has played is not audited
    played.act()
    played.observe(LossVectorFeedback(np.zeros(2)))
    with pytest.raises(ValueError, match="already played 1 rounds: the audit needs a fresh one"):
        one_run_audit(played, stream, ([0, 0], [1, 0]), plan, dim=2)
    with pytest.raises(ValueError, match=f"built for 5 rounds and the stream has {plan.horizon}"):
        one_run_audit(_dp_ftrl(1.0, 5), stream, ([0, 0], [1, 0]), plan, dim=2)
    shared = np.random.default_rng(3)  # the coins must not come from the learner's generator
    own = build_learner("dp-ftrl", env, epsilon=1.0, replicas=1, rng=shared)
    with pytest.raises(ValueError, match="seed is the learner's own generator"):
        one_run_audit(own, stream, ([0, 0], [1, 0]), plan, dim=2, seed=shared)
    pair = CanaryPlan(canaries=10, gap=4, participations=2, separation=1)
    person = PrivacyGuarantee(1.0, 0.0, participations=2, min_separation=1)
    with pytest.raises(ValueError, match=r"object reads one round per canary.*ArmOrderModel"):
        one_run_audit(
            _dp_ftrl(1.0, pair.horizon),
            np.zeros((pair.horizon, 2)),
            ([0, 0], [1, 0]),
            pair,
            dim=2,
            claim=person,
            white_box=object(),  # refused before it is asked anything
        )
    wide = CanaryPlan(canaries=40, gap=2)
    with pytest.warns(UserWarning, match="each canary changes 1 of the 2 rounds"):
        one_run_audit(
            _dp_ftrl(1.0, wide.horizon),
            np.zeros((wide.horizon, 2)),
            ([0, 0], [1, 0]),
            wide,
            dim=2,
            claim=person,
        )
    with pytest.raises(ValueError, match="non-private"):
        audit_registered(learners()["ftrl"])


def test_a_canary_of_several_rounds_needs_a_claim_over_that_many():
    """A coin setting k rounds tests a k-round change: against a one-round claim it would
    refute a learner that keeps its claim (a per-round randomised response did, at 1.6-2.1
    with claim 1)."""
    plan = CanaryPlan(canaries=60, gap=6, participations=2, separation=2)
    stream = np.zeros((plan.horizon, 2))
    canary = ([0.0, 0.0], [1.0, 0.0])
    learner = _dp_ftrl(1.0, plan.horizon)
    for claim in (None, (1.0, 0.0)):  # the learner's own (one round) or a bare pair
        with pytest.raises(ValueError, match="larger change than the claim covers"):
            one_run_audit(learner, stream, canary, plan, dim=2, claim=claim)
    person = PrivacyGuarantee(
        epsilon=2.0, delta=0.0, derivation="test", participations=2, min_separation=2
    )
    one_run_audit(_dp_ftrl(1.0, plan.horizon), stream, canary, plan, dim=2, claim=person)
    close = CanaryPlan(canaries=60, gap=6, participations=2, separation=1)
    with pytest.raises(ValueError, match="larger change"):
        one_run_audit(_dp_ftrl(1.0, close.horizon), stream, canary, close, dim=2, claim=person)
    with pytest.raises(ValueError, match="reach the next canary"):
        CanaryPlan(canaries=4, gap=2, participations=3, separation=2)


class _OwnContextOnly:
    """Plays the argmax of its own round's context and nothing else: jointly DP at any
    epsilon (no round's data reaches another round's action)."""

    feedback_kind = FeedbackKind.CONTEXTUAL_BANDIT
    replicas = 1
    privacy = PrivacyGuarantee(
        epsilon=0.1, delta=0.0, derivation="test", notion=PrivacyNotion.JOINT_DP
    )

    def __init__(self) -> None:
        self.arm = 0

    def observe(self, feedback) -> None:
        if isinstance(feedback, ContextFeedback):
            self.arm = int(np.argmax(np.asarray(feedback.context).ravel()))

    def act(self) -> np.ndarray:
        return np.array([self.arm])


def test_joint_dp_hides_the_canary_s_own_action():
    """Canary rows that differ in their context: the canary's own action follows it, which
    joint DP allows. Read, it refuted this learner at 3.8 (claim 0.1); hidden, nothing does."""
    plan = CanaryPlan(canaries=600, gap=2, window=1)
    row_a, row_b = np.r_[1.0, 0.0, 0.5, 0.5], np.r_[0.0, 1.0, 0.5, 0.5]
    stream = np.tile(row_a, (plan.horizon, 1))
    for score in (None, lambda f: -f[:, 0]):
        res = one_run_audit(_OwnContextOnly(), stream, (row_a, row_b), plan, dim=2, score=score)
        assert not res.refuted and res.epsilon_lower == 0.0


def test_registered_learner_and_table_row():
    rows = one_run_table(names=["dp-ftrl-oco"], canaries=150)
    (row,) = rows
    assert row["learner"] == "dp-ftrl-oco" and row["canaries"] == 150
    assert row["horizon"] == CanaryPlan(canaries=150, gap=4, window=4).horizon  # its plan
    assert not row["refuted_at_claim"]  # chance <= 1e-3
    # the bound at the claim sits below it; at a tenth of the noise it is above the claim
    assert row["lower_bound_at_claim"] <= row["claimed_epsilon"]
    assert row["lower_bound_at_tenth"] > row["lower_bound_at_claim"]
    assert row["can_refute"] and row["ceiling"] > row["claimed_epsilon"]
    with pytest.raises(ValueError, match="unknown learners"):
        one_run_table(names=["dp-ftlr"])


def test_the_coins_have_a_stream_of_their_own():
    """An int seed never gives the stream a learner built with default_rng(seed) draws: the
    bound needs the coins independent of the learner's noise."""
    for seed in (0, 1, 12345):
        assert not np.array_equal(
            coin_generator(seed).random(8), np.random.default_rng(seed).random(8)
        )
        assert np.array_equal(coin_generator(seed).random(8), coin_generator(seed).random(8))
    gen = np.random.default_rng(3)
    assert coin_generator(gen) is gen
    assert isinstance(coin_generator(None), np.random.Generator)
    for bad in (-1, True, 1.5, "0"):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            coin_generator(bad)


def test_the_batch_learners_are_audited_at_a_delta_one_run_can_refute():
    """Their audit cases claim delta = 1e-3 (one sample); over 800 audited canaries that leaves
    nothing a run could refute (2 m delta > the significance), so the one-run audit tests their
    claim at delta = 1e-6, where guesses all right would refute it."""
    res = audit_registered(learners()["noisy-sgd"], canaries=150)
    assert res.result.delta == 1e-6 and res.can_refute
    assert res.result.ceiling > res.result.claimed_epsilon


@pytest.mark.slow
def test_planned_learner_refuted_at_a_tenth_of_its_noise():
    """Batched EXP3 on its plan (4,000 canaries 4 rounds apart, zero losses between): a
    tenth of its noise is refuted in one run, its claim is not (chance <= 1e-3 each; seed 0
    gave 1.2 at a tenth, seed 1 1.16)."""
    entry = learners()["batched-exp3"]
    weak = audit_registered(entry, noise_fraction=0.1)
    assert weak.plan.canaries == 4000 and weak.plan.gap == 4
    assert weak.refuted
    assert not audit_registered(entry).refuted


@pytest.mark.slow
def test_white_box_reads_dp_ftrl_release():
    # the release read back from the actions of DP-FTRL (Laplace, two experts): the entropic
    # actions give L~_0 - L~_1 exactly, and the scores use neither the coins nor the noise draws
    entry = learners()["dp-ftrl"]
    case = entry.test_cases[0]
    plan = CanaryPlan(canaries=300, gap=16, window=16)
    # seed 1, 300 canaries: a hundredth of the noise leaves each canary's level-0 cell at
    # Laplace(0.08) against a shift of 1, so guessing is nearly perfect (an exact bound above
    # 1 fails only if the scorer is wrong); the claim is refuted with probability <= 1e-3
    gross = audit_registered(entry, case, noise_fraction=0.01, plan=plan, seed=1)
    assert gross.fitted == 0 and gross.audited == 300
    assert gross.refuted
    full = audit_registered(entry, case, noise_fraction=1.0, plan=plan, seed=1)
    assert not full.refuted
    fisher = audit_registered(entry, case, noise_fraction=0.01, plan=plan, seed=1, white_box=False)
    assert fisher.fitted == 100


@pytest.mark.parametrize(
    ("name", "case_index"), [("batched-exp3", 0), ("private-exp4", 0), ("batched-exp4", 0)]
)
def test_the_one_run_keeps_a_moderate_step_where_the_many_run_audit_sharpens_it(name, case_index):
    """The many-run audits of EXP3 and EXP4 run a step so large (eta 20, nothing skipped) that
    one batch value decides the next arm; over thousands of rounds that would lock the run onto
    one arm, so the one-run audit merges the case's ``one_run_options`` (eta 1.5, threshold 5)
    over it. Other cases of the learner (batched EXP3's partial batch, the HTINF base) keep
    their own options."""
    entry = learners()[name]
    case = entry.test_cases[case_index]
    assert case.audit.learner_options["eta"] == 20.0
    long = long_run_case(entry, case)
    assert long.audit.learner_options["eta"] == 1.5
    assert long.audit.learner_options["threshold"] == 5.0
    for other in entry.test_cases[1:]:
        if other.audit is not None:
            kept = long_run_case(entry, other).audit.learner_options
            assert kept.get("eta") == other.audit.learner_options.get("eta")


def test_the_plans_keep_the_loss_between_canaries_where_the_audit_case_moved_it():
    """AdaP-UCB's and DP-IMED's many-run cases put every other loss at 0 (the threshold at the
    edge of the change); their one-run plans keep 1/2 between canaries, DP-KLUCB's 1."""
    for name, rest in (("adap-ucb", 0.5), ("dp-imed", 0.5), ("dp-klucb", 1.0)):
        entry = learners()[name]
        assert long_run_case(entry, entry.test_case).audit.rest == rest


def test_noise_fraction_plays_less_noise_against_the_full_noises_claim():
    """``noise_fraction=0.1`` is the claim saved before ``scale_noise(0.1)``: the same
    result, a person's unit kept (after scale_noise the learner claims infinity, and a bare
    pair would be one round's, which a person's canaries exceed)."""
    plan = CanaryPlan(canaries=60, gap=6, participations=2, separation=2)
    stream = np.zeros((plan.horizon, 2))
    canary = ([0.0, 0.0], [1.0, 0.0])

    def person(rng=1):
        env = build_environment("stochastic", plan.horizon, np.random.default_rng(0), n_experts=2)
        options = dict(noise="laplace", delta=0.0, participations=2, min_separation=2)
        return build_learner(
            "dp-ftrl", env, epsilon=1.0, replicas=1, rng=np.random.default_rng(rng), **options
        )

    learner = person()
    claim = learner.privacy
    learner.scale_noise(0.1)
    assert learner.privacy.epsilon > 1.0  # the scaled learner's own claim is weaker
    by_hand = one_run_audit(learner, stream, canary, plan, dim=2, claim=claim)
    fresh = person()
    asked = one_run_audit(fresh, stream, canary, plan, dim=2, noise_fraction=0.1)
    assert asked.result.claimed_epsilon == 1.0 == by_hand.result.claimed_epsilon
    assert asked.result.epsilon_lower == by_hand.result.epsilon_lower
    assert asked.result.significance == 1e-3  # the default, as dponline audit's
    assert fresh.noise_multiplier == 0.1
    shared = np.random.default_rng(4)
    refused = person(rng=shared)  # a refused audit leaves the learner as it was
    with pytest.raises(ValueError, match="seed is the learner's own generator"):
        one_run_audit(refused, stream, canary, plan, dim=2, noise_fraction=0.1, seed=shared)
    assert refused.noise_multiplier == 1.0 and refused.privacy.epsilon == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"already multiplied by 0\.1"):
        one_run_audit(learner, stream, canary, plan, dim=2, noise_fraction=0.1)
    with pytest.raises(ValueError, match="noise_fraction must be a finite positive"):
        one_run_audit(person(), stream, canary, plan, dim=2, noise_fraction=0.0)
    env = build_environment("stochastic", plan.horizon, np.random.default_rng(0), n_experts=2)
    ftrl, one = build_learner("ftrl", env, replicas=1), CanaryPlan(canaries=60, gap=6)
    with pytest.raises(ValueError, match="non-private: it has no noise"):
        one_run_audit(ftrl, stream, canary, one, dim=2, claim=(1.0, 0.0), noise_fraction=0.5)


@pytest.mark.slow
def test_the_own_stream_example_prints_what_the_guide_quotes(capsys):
    """examples/audit_own_stream.py (6 s): the deployment's 20 rare-click items give the
    audit no power even at a hundredth of the noise; 1,000 arms at 1/2 refute a tenth."""
    import runpy
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "audit_own_stream.py"
    runpy.run_path(str(example), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "20 items, default: 0.000 0.000 0.000",
        "20 items, arm order: 0.000 0.098 0.023",
        "1,000 arms, arm order: 0.478 3.796 4.323",
    ]


def test_a_learner_of_yours_brings_its_plan_and_guesser_in_its_audit_case():
    """A learner registered by a user could not be given the one-run audit's plan or white box
    (both were looked up by the library's learner names): DP-IMED's entry under another name
    saw nothing at a tenth of its noise (0.000; dp-imed itself 3.39 there). Its AuditCase now
    carries ``one_run_plan`` and ``one_run_white_box``, and the audit equals dp-imed's; an
    unknown plan key is refused; ``arm_order_model`` warns on a K-armed learner whose
    schedule it does not know instead of returning None silently."""
    import dataclasses

    from dponline.bandits import DPIMED
    from dponline.bandits.k_armed import KArmedLearner
    from dponline.experiments.one_run_audit import _PLANS, arm_order_model
    from dponline.privacy.budget import PrivacyBudget
    from dponline.registry import AuditCase

    entry = learners()["dp-imed"]
    at_tenth = audit_registered(entry, noise_fraction=0.1).epsilon_lower
    renamed = dataclasses.replace(entry, name="my-imed")
    assert audit_registered(renamed, noise_fraction=0.1).epsilon_lower == 0.0
    case = entry.test_case
    assert case.audit is not None
    audit = dataclasses.replace(
        case.audit, one_run_plan=_PLANS["dp-imed"], one_run_white_box=arm_order_model
    )
    mine = dataclasses.replace(
        renamed, test_cases=(dataclasses.replace(case, audit=audit), *entry.test_cases[1:])
    )
    assert audit_registered(mine, noise_fraction=0.1).epsilon_lower == at_tenth > 3.0
    with pytest.raises(ValueError, match=r"one_run_plan takes the keys .*\['spacing'\]"):
        AuditCase(horizon=3, one_run_plan={"spacing": 4})

    class MyBandit(KArmedLearner):
        def _commit(self, rows, t):  # type: ignore[no-untyped-def]
            return np.zeros(rows.size, dtype=np.int64), np.ones(rows.size, dtype=np.int64)

    mine_learner = MyBandit(3, 100)
    mine_learner.privacy = None
    assert arm_order_model(mine_learner) is None  # non-private: nothing to guess, no warning
    mine_learner.privacy = DPIMED(3, 100, budget=PrivacyBudget(1.0)).privacy
    with pytest.warns(UserWarning, match="does not know the release schedule of MyBandit"):
        assert arm_order_model(mine_learner) is None


def test_a_run_that_sees_nothing_says_so_and_warns_once():
    """DP-IMED for a person's 3 rounds: its first phases fill the audit's run, so the bound is
    0 at the claim, a tenth and a hundredth; the row says so (the command line printed
    "refuted at a tenth: 0 of 1" and nothing else), and the learner's warning about its first
    phases came nine times, once a build: once per message now."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (row,) = one_run_table(names=["dp-imed"], options={"participations": 3})
    assert row["sees_nothing"] and row["can_refute"]
    messages = [str(w.message) for w in caught if "first phases" in str(w.message)]
    assert messages and len(messages) == len(set(messages))
    (seen,) = one_run_table(names=["dp-imed"])  # 3.39 at a tenth
    assert not seen["sees_nothing"]


def test_one_run_power_says_whether_the_audit_can_see_the_learner_on_the_stream():
    """A deployment auditing its own stream learns from "not refuted" only if the audit has
    power there: one_run_power audits the claim at the full noise, a tenth and a hundredth on
    the same stream and coins, and says which (the library call printed no "saw nothing" as
    the command does). DP-FTRL, Laplace, 400 canaries: a hundredth is refuted (2.99 > 1), the
    claim not; canaries that change almost nothing (1e-6) are seen at no fraction."""
    from dponline.experiments.one_run_audit import one_run_power

    plan = CanaryPlan(canaries=400, gap=6)
    stream = np.zeros((plan.horizon, 2))
    make = lambda: _dp_ftrl(1.0, plan.horizon)  # noqa: E731
    power = one_run_power(make, stream, ([0.0, 0.0], [1.0, 0.0]), plan, dim=2)
    assert power.fractions == (1.0, 0.1, 0.01)
    assert not power.refuted and not power.sees_nothing and power.caught == 0.01
    text = str(power)
    assert "noise x 0.01: epsilon >= 2.990 REFUTED" in text
    assert text.endswith(
        "0.01 of its noise is refuted, so the audit can see this learner on this stream."
    )
    blind = one_run_power(make, stream, ([0.0, 0.0], [1e-6, 0.0]), plan, dim=2)
    assert blind.sees_nothing and blind.caught is None and "Saw nothing" in str(blind)

    def under_noised():
        learner = _dp_ftrl(1.0, plan.horizon)
        learner.scale_noise(0.01)
        return learner

    caught = one_run_power(
        under_noised, stream, ([0.0, 0.0], [1.0, 0.0]), plan, dim=2, fractions=(1.0,),
        claim=(1.0, 0.0),
    )  # fmt: skip
    assert caught.refuted and "is refuted as deployed" in str(caught)
    alone = one_run_power(make, stream, ([0.0, 0.0], [1.0, 0.0]), plan, dim=2, fractions=(1.0,))
    assert not alone.sees_nothing and "no smaller noise was tried" in str(alone)
    for bad in ((0.1, 1.0), (), (1.0, 0.0), (1.0, 1.0)):
        with pytest.raises(ValueError, match="fractions must start at 1"):
            one_run_power(make, stream, ([0.0, 0.0], [1.0, 0.0]), plan, dim=2, fractions=bad)
