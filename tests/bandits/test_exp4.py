"""Bandits with expert advice: EXP4 (hand cases, EXP3 as its special case), private EXP4 and
the batched conversion over the experts (guarantees, arms drawn from the batch's expert,
regret against the best expert), the environment, state and replicas."""

from __future__ import annotations

import copy
import math
import tracemalloc

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from dponline.bandits.batched import batched_exp3_regret_bound
from dponline.bandits.exp3 import EXP3, laplace_second_moment
from dponline.bandits.exp4 import (
    EXP4,
    BatchedEXP4,
    PrivateEXP4,
    advice_digest,
    arm_experts,
    checked_advice,
    exp4_parameters,
    exp4_regret_bound,
    random_advice,
    robust_exp4_parameters,
    robust_exp4_regret_bound,
)
from dponline.bandits.htinf import HTINF
from dponline.environments import BanditEnvironment, expert_advice
from dponline.environments.expert_advice import ExpertAdviceBandit, informed_expert_advice
from dponline.privacy.arguments import ArgumentError
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import BanditFeedback
from dponline.registry import build_learner
from tests.bandits.stochastic_arms_helpers import assert_every_state_of_a_run_loads, same_state


def test_advice_is_checked():
    with pytest.raises(ValueError, match=r"\(T, N, K\)"):
        checked_advice(np.ones((3, 2)))
    with pytest.raises(ValueError, match="nonnegative"):
        checked_advice(np.array([[[1.5, -0.5]]]))
    with pytest.raises(ValueError, match="sum to 1"):
        checked_advice(np.array([[[0.5, 0.6]]]))
    with pytest.raises(ValueError, match="horizon 4"):
        checked_advice(arm_experts(3, 2), horizon=4)
    with pytest.raises(ValueError, match="finite"):
        checked_advice(np.array([[[np.nan, 1.0]]]))
    assert random_advice(5, 3, 4, seed=1).shape == (5, 3, 4)
    np.testing.assert_allclose(random_advice(5, 3, 4, seed=1).sum(axis=2), 1.0)


def test_one_exp4_update_by_hand():
    advice = np.array([[[0.5, 0.5, 0.0], [0.0, 0.2, 0.8]]] * 2)  # 2 experts, 3 arms
    alg = EXP4(advice, eta=0.7, replicas=3, rng=np.random.default_rng(0))
    np.testing.assert_allclose(alg.probabilities(), [[0.25, 0.35, 0.4]] * 3)
    arms = alg.act()
    y = np.array([0.3, 0.9, 0.6])
    alg.learn(y)
    p = np.array([0.25, 0.35, 0.4])[arms]
    for r in range(3):
        est = advice[0][:, arms[r]] * y[r] / p[r]  # y~_j = xi_j(I) y / p(I)
        q = np.exp(-0.7 * est)
        np.testing.assert_allclose(alg.weights()[r], q / q.sum(), rtol=1e-12)
    assert alg.step == 1


def test_exp4_over_the_arm_experts_is_exp3():
    T, K = 30, 4
    a = EXP4(arm_experts(T, K), eta=0.4, replicas=3, rng=np.random.default_rng(2), threshold=1.6)
    b = EXP3(K, eta=0.4, replicas=3, rng=np.random.default_rng(2), threshold=1.6)
    values = np.random.default_rng(3).normal(0.5, 1.0, (T, 3))
    for t in range(T):
        np.testing.assert_array_equal(a.act(), b.act())
        a.learn(values[t])
        b.learn(values[t])
        np.testing.assert_allclose(a.probabilities(), b.probabilities(), rtol=1e-12)


def test_constants_by_hand():
    assert exp4_parameters(8, 3, 100) == pytest.approx(math.sqrt(2 * math.log(8) / 300))
    assert exp4_regret_bound(8, 3, 100) == pytest.approx(math.sqrt(2 * 100 * 3 * math.log(8)))
    s2 = laplace_second_moment(2.0)
    h = (math.e**1.6 - 1) / 1.6**2
    assert robust_exp4_regret_bound(8, 3, 100, s2) == pytest.approx(
        2 * math.sqrt(100 * 3 * s2 * h * math.log(8))
    )
    # the default rate minimises the bound for every N >= 2 (N = 2 once took log N as 1)
    for n_exp in (2, 3, 50):
        eta = robust_exp4_parameters(n_exp, 3, 10_000, 3.0)
        best = minimize_scalar(
            lambda e, n=n_exp: robust_exp4_regret_bound(n, 3, 10_000, 3.0, eta=e),
            bounds=(1e-6, 1.0),
            method="bounded",
            options={"xatol": 1e-10},
        )
        assert eta == pytest.approx(best.x, rel=1e-4)


def test_private_exp4_guarantee_and_noise():
    advice = random_advice(50, 5, 3)
    for cal in ("tight", "paper"):
        lr = PrivateEXP4(advice, budget=PrivacyBudget(0.5, 0.0, cal), rng=0)
        assert lr.laplace_scale == 2.0 and lr.privacy.epsilon == 0.5
        assert lr.algorithm.threshold == 1.6
    plain = PrivateEXP4(advice, budget=None, rng=0)
    assert plain.privacy is None and plain.algorithm.threshold is None
    assert plain.eta == pytest.approx(exp4_parameters(5, 3, 50))


def test_batched_exp4_plays_the_batch_expert_s_advice():
    # 3 experts with deterministic advice: expert j plays arm (j + t) mod 3 in round t
    T, K = 12, 3
    advice = np.zeros((T, 3, K))
    for t in range(T):
        for j in range(3):
            advice[t, j, (j + t) % K] = 1.0
    lr = BatchedEXP4(advice, budget=PrivacyBudget(0.25), batch=4, replicas=6, rng=1)
    assert lr.batch == 4 and lr.laplace_scale == pytest.approx(1.0)
    experts = []
    for t in range(T):
        if t % 4 == 0:  # before the batch's expert is drawn: the advice mixed by the weights
            np.testing.assert_allclose(lr.probabilities(), lr.weights() @ advice[t])
        arm = lr.act()
        experts.append(lr._choice.copy())  # the base's action for the batch: an expert
        np.testing.assert_array_equal(arm, (experts[-1] + t) % K)
        np.testing.assert_array_equal(lr.probabilities(), advice[t][experts[-1]])
        lr.observe(BanditFeedback(np.full(6, 0.5)))
    for t in range(T):  # one expert per batch of 4 rounds
        np.testing.assert_array_equal(experts[t], experts[t - t % 4])


def test_batched_exp4_htinf_base():
    """base="htinf": HTINF over the experts with sigma = sqrt(1 + 2 b^2), tau = ceil(1 / epsilon)
    in both calibrations (no bound to tune it), the conversion's guarantee unchanged; the other
    base's options are refused, an unknown base too."""
    advice = random_advice(40, 4, 3)
    for cal in ("tight", "paper"):
        lr = BatchedEXP4(advice, budget=PrivacyBudget(0.3, 0.0, cal), base="htinf", rng=0)
        assert isinstance(lr.algorithm, HTINF) and lr.algorithm.n_arms == 4
        assert lr.batch == 4 and lr.laplace_scale == pytest.approx(1.0 / (0.3 * 4))
        assert lr.algorithm.sigma == pytest.approx(math.sqrt(laplace_second_moment(1 / 1.2)))
        assert lr.privacy.epsilon == pytest.approx(0.3) and lr.privacy.delta == 0.0
    assert isinstance(BatchedEXP4(advice, budget=None, rng=0).algorithm, EXP3)
    fixed = BatchedEXP4(advice, budget=PrivacyBudget(1.0), base="htinf", sigma=2.0, theta=None)
    assert fixed.algorithm.sigma == 2.0 and fixed.algorithm.theta is None
    for bad in ({"eta": 0.1}, {"threshold": 2.0}):
        with pytest.raises(ValueError, match="other base"):
            BatchedEXP4(advice, budget=PrivacyBudget(1.0), base="htinf", **bad)
    for bad in ({"sigma": 2.0}, {"theta": 0.5}, {"theta": None}):
        with pytest.raises(ValueError, match="other base"):
            BatchedEXP4(advice, budget=PrivacyBudget(1.0), **bad)
    with pytest.raises(ValueError, match="base must be one of"):
        BatchedEXP4(advice, budget=PrivacyBudget(1.0), base="exp4")
    saved = BatchedEXP4(advice, budget=PrivacyBudget(1.0), base="htinf", rng=0).state_dict()
    other = BatchedEXP4(advice, budget=PrivacyBudget(1.0), rng=0)
    with pytest.raises(ValueError, match="BatchedEXP4"):
        other.load_state_dict(saved)


def test_a_state_resumes_only_with_the_same_advice():
    """Advice of the same shape but other values is refused (its digest is in the state)."""
    one, two = random_advice(40, 4, 3, seed=1), random_advice(40, 4, 3, seed=2)
    for make in (
        lambda a: BatchedEXP4(a, budget=PrivacyBudget(1.0), rng=0),
        lambda a: PrivateEXP4(a, budget=PrivacyBudget(1.0), rng=0),
    ):
        saved = make(one).state_dict()
        make(one).load_state_dict(saved)
        with pytest.raises(ValueError, match="advice"):
            make(two).load_state_dict(saved)
    # a broadcast view and its copy have one digest
    view = arm_experts(5000, 3)
    assert advice_digest(view) == advice_digest(np.array(view))


def test_regret_against_the_best_expert():
    """The informed-expert benchmark (T = 3000, 10 arms, 12 experts): EXP4 and both private
    versions (epsilon = 1; the batched one with both bases) have mean regret of 60 replicas
    against the best expert below their proven bounds (HTINF's: none here) and below uniform
    play's by more than 10 standard errors (fixed seeds)."""
    T, R = 3000, 60
    env = informed_expert_advice(T, 0, n_arms=10, n_experts=12, switches=3, gap=0.3)
    uniform = env.losses.sum() / env.dim - env.best_cumulative_loss()[-1]
    learners = {
        "exp4": build_learner("exp4", env, replicas=R, rng=1),
        "private-exp4": build_learner("private-exp4", env, epsilon=1.0, replicas=R, rng=2),
        "batched-exp4": build_learner("batched-exp4", env, epsilon=1.0, replicas=R, rng=3),
        "batched-exp4:htinf": build_learner(
            "batched-exp4", env, epsilon=1.0, replicas=R, rng=4, base="htinf"
        ),
    }
    bounds = {
        "exp4": exp4_regret_bound(12, 10, T),
        "private-exp4": robust_exp4_regret_bound(12, 10, T, laplace_second_moment(1.0)),
        "batched-exp4": batched_exp3_regret_bound(12, T, 1, 1.0),
        "batched-exp4:htinf": math.inf,  # no bound with HTINF's constants is proven here
    }
    for name, lr in learners.items():
        cum = np.zeros(R)
        for t in range(T):
            fb, loss = env.round(t, lr.act())
            lr.observe(fb)
            cum += loss
        regret = cum - env.best_cumulative_loss()[-1]
        assert regret.mean() <= bounds[name], name
        assert regret.mean() < uniform - 10 * regret.std(ddof=1) / math.sqrt(R), name


def test_environment_regret_is_against_the_best_expert_by_hand():
    losses = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    advice = np.array([[[0.5, 0.5], [0.0, 1.0]]] * 3)
    env = ExpertAdviceBandit(losses, advice=advice)
    # expert 0: 0.5 a round; expert 1: 0, 1, 0 -> cumulative 0, 1, 1; best: 0, 1, 1
    np.testing.assert_allclose(env.best_cumulative_loss(), [0.0, 1.0, 1.0])
    fb, charged = env.round(0, np.array([0, 1]))
    np.testing.assert_array_equal(charged, [1.0, 0.0])
    np.testing.assert_array_equal(fb.loss, [1.0, 0.0])
    with pytest.raises(ValueError, match="must sum to 1"):
        ExpertAdviceBandit(losses, advice=advice * 2)
    with pytest.raises(ValueError, match="advice covers 2 rounds"):
        ExpertAdviceBandit(losses, advice=advice[:2])
    bench = informed_expert_advice(400, 1, n_arms=4, n_experts=6)
    assert bench.n_experts == 6 and bench.n_arms == 4
    # the informed expert beats every arm (and the arm experts are the arms)
    assert bench.best_cumulative_loss()[-1] < bench.losses.sum(axis=0).min()


def test_factories_take_the_environment_s_advice_or_the_experts_option():
    env = informed_expert_advice(20, 0, n_arms=3, n_experts=5)
    lr = build_learner("private-exp4", env, epsilon=1.0, rng=0)
    assert lr.algorithm.advice is env.advice or np.array_equal(lr.algorithm.advice, env.advice)
    with pytest.raises(ValueError, match=r"gives 5 experts' advice .* drop the experts option"):
        build_learner("private-exp4", env, epsilon=1.0, experts="random", rng=0)
    plain = BanditEnvironment(np.full((20, 3), 0.5))
    with pytest.warns(UserWarning, match="gives no experts' advice: .* one expert per arm"):
        assert build_learner("exp4", plain, rng=0).algorithm.n_experts == 3  # the arm experts
    assert build_learner("exp4", plain, experts="arms", rng=0).algorithm.n_experts == 3
    lr = build_learner("batched-exp4", plain, epsilon=1.0, experts="random", n_experts=7, rng=0)
    assert lr.n_experts == 7
    with pytest.raises(ValueError, match="'arms' or 'random'"):
        build_learner("exp4", plain, experts="oracle")


@pytest.mark.parametrize(
    ("name", "options"),
    [("private-exp4", {}), ("batched-exp4", {}), ("batched-exp4", {"base": "htinf"})],
)
def test_resume_bit_for_bit_and_replicas_independent(name, options):
    T = 24
    env = informed_expert_advice(T, 0, n_arms=3, n_experts=5)

    def make(seed):
        return build_learner(name, env, epsilon=0.5, replicas=4, rng=seed, **options)

    def run(lr, rounds):
        out = []
        for t in rounds:
            a = lr.act()
            out.append(a)
            lr.observe(env.round(t, a)[0])
        return out

    reference = run(make(1), range(T))
    part = make(1)
    first = run(part, range(9))
    resumed = make(5)
    resumed.load_state_dict(part.state_dict())
    for a, b in zip(reference, first + run(resumed, range(9, T)), strict=True):
        np.testing.assert_array_equal(a, b)
    runs = np.stack(reference, axis=1)
    assert len({tuple(r) for r in runs}) == 4


def _play(lr, rounds, seed=0):
    losses = np.random.default_rng(seed).uniform(size=(rounds, lr.replicas))
    for t in range(rounds):
        lr.act()
        lr.observe(BanditFeedback(losses[t]))


@pytest.mark.parametrize(
    "make",
    [
        lambda: PrivateEXP4(
            random_advice(9, 4, 3, seed=1), budget=PrivacyBudget(1.0), replicas=2, rng=0
        ),
        lambda: BatchedEXP4(
            random_advice(9, 4, 3, seed=1), budget=PrivacyBudget(0.25), replicas=3, rng=0
        ),
        lambda: BatchedEXP4(
            random_advice(9, 4, 3, seed=1),
            budget=PrivacyBudget(0.2),
            base="htinf",
            replicas=3,
            rng=0,
        ),
    ],
)
def test_every_state_of_a_real_run_loads(make):
    """States saved before and after every act(), at the horizon and after acting past it
    pass the cross-checks of prepare_load (the batch's arm is any arm its expert advised)."""
    losses = np.random.default_rng(3).uniform(size=(9, 3))
    assert_every_state_of_a_run_loads(make, lambda t, arms: losses[t, : arms.size])


def test_a_private_exp4_state_whose_exp4_step_disagrees_is_refused():
    """EXP4 reads the advice of its own step: a state whose step is not the learner's round
    (one value learned per round) would read another round's advice."""
    advice = random_advice(50, 4, 3, seed=1)
    lr = PrivateEXP4(advice, budget=PrivacyBudget(1.0), rng=0)
    _play(lr, 10)
    state = lr.state_dict()
    assert state["t"] == state["algorithm"]["step"] == 10
    for step in (0, 9, 11, 40):
        bad = copy.deepcopy(state)
        bad["algorithm"]["step"] = step
        fresh = PrivateEXP4(advice, budget=PrivacyBudget(1.0), rng=0)
        before = fresh.state_dict()
        with pytest.raises(ArgumentError, match="learned from"):
            fresh.load_state_dict(bad)
        assert same_state(fresh.state_dict(), before)
    PrivateEXP4(advice, budget=PrivacyBudget(1.0), rng=0).load_state_dict(state)


@pytest.mark.parametrize("base", ["exp3", "htinf"])
def test_a_batched_exp4_state_whose_parts_disagree_is_refused(base):
    """The batch's expert must be the one the base drew; HTINF must have learned from the
    batches that ended; the batch sum must be one the batch's rounds can give."""
    advice = random_advice(40, 4, 3, seed=1)

    def make():
        return BatchedEXP4(advice, budget=PrivacyBudget(1.0), batch=4, base=base, rng=0)

    lr = make()
    _play(lr, 6)  # two rounds into the second batch
    state = lr.state_dict()
    expert = int(state["choice"][0])
    bad_choice = copy.deepcopy(state)
    bad_choice["choice"] = np.array([(expert + 1) % 4])
    bad_sum = copy.deepcopy(state)
    bad_sum["sum"] = np.array([2.5])
    cases = [(bad_choice, "base algorithm drew"), (bad_sum, "saved sum 2.5")]
    if base == "htinf":
        bad_round = copy.deepcopy(state)
        bad_round["algorithm"]["t"] = 1
        cases.append((bad_round, "learned from"))
    for bad, match in cases:
        fresh = make()
        before = fresh.state_dict()
        with pytest.raises(ArgumentError, match=match):
            fresh.load_state_dict(bad)
        assert same_state(fresh.state_dict(), before)


def test_the_learners_keep_their_own_copy_of_the_advice():
    """Changing the caller's array after construction (a NaN row) changes neither what the
    learners play nor the digest their states record: each keeps a read-only copy."""
    pristine = random_advice(20, 3, 3, seed=0)
    builders = (
        lambda a: EXP4(a, eta=0.5, replicas=2, rng=np.random.default_rng(0)),
        lambda a: PrivateEXP4(a, budget=PrivacyBudget(1.0), replicas=2, rng=0),
        lambda a: BatchedEXP4(a, budget=PrivacyBudget(0.5), replicas=2, rng=0),
    )
    for build in builders:
        shared = pristine.copy()
        lr, reference = build(shared), build(pristine.copy())
        shared[3] = np.nan
        shared[5] = 0.0
        for _ in range(20):
            np.testing.assert_array_equal(lr.act(), reference.act())
            if isinstance(lr, EXP4):
                lr.learn(np.full(2, 0.5))
                reference.learn(np.full(2, 0.5))
            else:
                lr.observe(BanditFeedback(np.full(2, 0.5)))
                reference.observe(BanditFeedback(np.full(2, 0.5)))
        assert np.isfinite(lr.probabilities()).all()
        assert same_state(lr.state_dict(), reference.state_dict())  # the same advice digest
        advice = lr.advice if isinstance(lr, EXP4 | BatchedEXP4) else lr.algorithm.advice
        np.testing.assert_array_equal(advice, pristine)
        assert not advice.flags.writeable
        with pytest.raises(ValueError, match="WRITEABLE"):  # nor can it be made writeable
            advice.flags.writeable = True
    view = checked_advice(arm_experts(10, 3))  # the broadcast view's base as well
    for array in (view, view.base):
        with pytest.raises(ValueError, match="WRITEABLE"):
            array.flags.writeable = True


def test_arm_experts_are_checked_without_building_the_whole_array():
    """The (T, K, K) broadcast view of arm_experts is checked through the identity it repeats:
    no array (nor temporary) of T K^2 entries is built, and the learners keep a view."""
    T, K = 100_000, 20  # the view: 40 million entries (a boolean temporary: 40 MB)
    view = arm_experts(T, K)
    for build in (
        checked_advice,
        lambda a: PrivateEXP4(a, budget=PrivacyBudget(1.0), rng=0),
        lambda a: BatchedEXP4(a, budget=PrivacyBudget(1.0), rng=0),
    ):
        tracemalloc.start()
        try:
            built = build(view)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 2_000_000, peak
        advice = built if isinstance(built, np.ndarray) else getattr(built, "advice", None)
        if advice is None:
            advice = built.algorithm.advice
        assert advice.shape == (T, K, K) and advice.strides[0] == 0
        assert not advice.flags.writeable
    with pytest.raises(ValueError, match="sum to 1"):
        checked_advice(np.broadcast_to(np.full((1, 2, 2), 0.6), (T, 2, 2)))
    with pytest.raises(ValueError, match="finite"):
        checked_advice(np.broadcast_to(np.array([np.nan, 1.0]), (T, 3, 2)))


def test_advice_is_copied_and_checked_once(monkeypatch):
    """PrivateEXP4 hands its checked advice to EXP4, which does not check (nor copy) it
    again; checking an array checked_advice returned returns it as it is."""
    calls = []
    copy_and_check = expert_advice._checked_copy

    def counting(advice):
        calls.append(1)
        return copy_and_check(advice)

    monkeypatch.setattr(expert_advice, "_checked_copy", counting)
    advice = random_advice(30, 3, 4, seed=2)
    for build in (
        lambda: PrivateEXP4(advice, budget=PrivacyBudget(1.0), rng=0),
        lambda: BatchedEXP4(advice, budget=PrivacyBudget(1.0), rng=0),
        lambda: EXP4(advice, eta=0.1, replicas=1, rng=np.random.default_rng(0)),
    ):
        calls.clear()
        build()
        assert len(calls) == 1
    checked = checked_advice(advice)
    calls.clear()
    assert checked_advice(checked, horizon=30, n_arms=4) is checked and not calls
    with pytest.raises(ValueError, match="horizon 31"):
        checked_advice(checked, horizon=31)
    env = informed_expert_advice(30, 1, n_arms=4, n_experts=6)  # keeps its checked copy
    calls.clear()
    for name in ("private-exp4", "batched-exp4", "exp4"):
        learner = build_learner(name, env, epsilon=1.0 if name != "exp4" else None, rng=0)
        kept = learner.advice if hasattr(learner, "advice") else learner.algorithm.advice
        assert kept is env.advice
    assert not calls  # the environment's copy is every learner's, checked and copied once


@pytest.mark.parametrize("cls", [PrivateEXP4, BatchedEXP4])
def test_act_asked_again_returns_the_arm_played_also_after_a_checkpoint(cls):
    """The arm of a round is drawn once: act() asked again before the loss (and act() of a
    learner resumed from a state saved in between) returns it, and the loss is charged to it."""
    advice = arm_experts(20, 4)
    learner = cls(advice, budget=PrivacyBudget(1.0), rng=3)
    for _ in range(5):
        arm = learner.act()
        assert np.array_equal(learner.act(), arm)
        state = learner.state_dict()
        twin = cls(advice, budget=PrivacyBudget(1.0), rng=11)
        twin.load_state_dict(state)
        assert np.array_equal(twin.act(), arm)
        learner.observe(BanditFeedback(loss=1.0))


@pytest.mark.parametrize("name", ["private-exp4", "batched-exp4"])
def test_the_guarantee_says_the_advice_is_assumed_public(name):
    env = informed_expert_advice(20, 0, n_arms=3, n_experts=5)
    privacy = build_learner(name, env, epsilon=1.0, rng=0).privacy
    assert "advice is fixed before the first round and public" in privacy.assumes
    assert "assumes the experts' advice is fixed" in str(privacy)
    person = build_learner(name, env, epsilon=1.0, participations=2, rng=0).privacy
    assert "public" in person.assumes and person.epsilon <= 1.0


@pytest.mark.parametrize("cls", [PrivateEXP4, BatchedEXP4])
def test_a_loss_a_hair_past_its_bound_is_rounding(cls):
    """1 + 2^-52 (a loss computed as 1 - (-eps)) was refused mid-run by the reduction's own
    check; within a relative 1e-12 it is clipped in, further out still refused."""
    learner = cls(arm_experts(4, 2), budget=PrivacyBudget(1.0), rng=0)
    learner.act()
    learner.observe(BanditFeedback(loss=1.0 + 2.0**-52))
    learner.act()
    with pytest.raises(ValueError, match="outside"):
        learner.observe(BanditFeedback(loss=1.0 + 1e-9))
