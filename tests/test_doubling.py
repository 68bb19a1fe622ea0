"""The doubling trick (dponline.doubling): an anytime learner from fresh fixed-horizon learners,
on a toy learner (every branch: block play, paper guarantees per length) and on PrivateBandit
(Ene, Nguyen & Vladu 2021, whose batching needs T): epochs of 1, 2, 4, ... rounds, the same
actions as hand-built epochs on the same generators, bit-exact resume across a boundary,
corrupt states refused unchanged, the audit's noise handle, the stated guarantee, user-level
budgets refused, the registry's anytime flag. Deterministic: fixed seeds, no statistics."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from dponline.bandits.glm_bandit import DPGLMBandit
from dponline.bandits.private_bandit import PrivateBandit, default_zeta
from dponline.doubling import DoublingLearner, epoch_generator, epoch_lengths
from dponline.environments.catalogue import build_environment
from dponline.experiments.rounds import play as play_in_rounds
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee, PrivacyWarning
from dponline.protocol import (
    BanditFeedback,
    BlockPlayer,
    FeedbackKind,
    LossVectorFeedback,
    NoiseHandle,
    RoundDiscipline,
    checked_config,
)
from dponline.registry import build_learner, learners
from dponline.rng import generator_state

K, R = 3, 2  # the toy's experts and replicas
TIGHT = PrivacyBudget(1.0)
DOUBLING = epoch_lengths()


class ToyLeader(NoiseHandle, RoundDiscipline):
    """A fixed-horizon toy: follow the leader on K experts with fresh Laplace noise each round,
    a block player. Its "guarantee" is a label for the wrapper's bookkeeping (not a proof):
    the budget's epsilon under ``tight``, epsilon (1 + 1/T) under ``paper`` (weaker for short
    horizons, as the paper formulas are)."""

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR

    def __init__(self, horizon, *, budget, replicas=R, rng=None, scale=0.3):
        self._start_rounds(horizon)
        self.replicas, self.scale = replicas, scale
        self._rng = np.random.default_rng(rng)
        self.cum = np.zeros((replicas, K))
        self.privacy = None
        if budget is not None:
            eps = budget.epsilon * (1 + 1 / horizon if budget.calibration == "paper" else 1)
            self.privacy = budget.prove(eps, 0.0, f"toy for {horizon} rounds")
        self._played = np.zeros((replicas, K))

    def _scale_noise(self, factor):
        self.scale = self.scale * factor

    def act(self):
        if not self._acted:
            z = self._rng.laplace(0.0, self.scale, size=(self.replicas, K))
            self._played = np.eye(K)[np.argmin(self.cum + z, axis=1)]
            self._acted = True
        return self._played.copy()

    def _checked_loss(self, loss, shape):
        arr = checked_real_array("loss", loss, shape)
        if np.any((arr < 0) | (arr > 1)):
            raise ValueError("loss outside [0, 1]")
        return arr

    def observe(self, feedback):
        if not isinstance(feedback, LossVectorFeedback):
            raise TypeError("ToyLeader observes LossVectorFeedback")
        self._check_round()
        self.cum = self.cum + self._checked_loss(feedback.loss, (K,))
        self._end_round()

    def play_block(self, losses):
        arr = self._checked_loss(losses, (len(np.asarray(losses)), K))
        if self.t + len(arr) > self.horizon:
            raise ValueError("past the horizon")
        out = []
        for loss in arr:
            out.append(self.act())
            self.observe(LossVectorFeedback(loss))
        return np.array(out).reshape(len(arr), self.replicas, K)

    def _config(self):
        return {"horizon": self.horizon, "scale": self.scale, "replicas": self.replicas}

    def state_dict(self):
        return {
            "config": self._config(),
            "t": self.t,
            "acted": self._acted,
            "noise_multiplier": self.noise_multiplier,
            "cum": self.cum.copy(),
            "played": self._played.copy(),
            "rng": generator_state(self._rng),
        }

    def prepare_load(self, state):
        checked_config(saved_field(state, "config"), self._config(), "ToyLeader", "setup")
        t, acted = self._checked_rounds(state)
        cum = np.array(checked_real_array("cum", saved_field(state, "cum"), (self.replicas, K)))
        played = np.array(checked_real_array("played", saved_field(state, "played"), cum.shape))
        rng = checked_generator("rng", saved_field(state, "rng"))
        multiplier = self._saved_multiplier(state)

        def install():
            self.cum, self._played, self._rng = cum, played, rng
            self.noise_multiplier = multiplier
            self._set_rounds(t, acted)

        return install


def toy_make(budget: PrivacyBudget | None) -> Callable[[int, np.random.Generator], ToyLeader]:
    return lambda n, gen: ToyLeader(n, budget=budget, rng=gen)


def toy(budget=TIGHT, seed=7, **kw) -> DoublingLearner:
    return DoublingLearner(toy_make(budget), budget=budget, replicas=R, rng=seed, **kw)


def losses(rounds: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((rounds, K))


def play(learner, rows) -> np.ndarray:
    out = []
    for loss in rows:
        out.append(learner.act())
        learner.observe(LossVectorFeedback(loss))
    return np.array(out)


def same(a: Any, b: Any) -> bool:
    """Two saved states equal, arrays compared exactly."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray | list | tuple):
        return np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    return a == b


# --- epochs ------------------------------------------------------------------------------------


def test_epochs_switch_at_1_2_4_and_the_run_has_no_end():
    learner = toy()
    assert learner.horizon is None and learner.anytime
    seen = []
    for loss in losses(70):
        seen.append((learner.epoch, learner.learner.horizon, learner.learner.t))
        learner.act()
        learner.observe(LossVectorFeedback(loss))
    # round r (1-indexed) lies in epoch floor(log2 r), which lasts 2^k rounds
    for r, (k, n, inner_t) in enumerate(seen, start=1):
        assert k == r.bit_length() - 1 and n == 2**k and inner_t == r - 2**k
    assert learner.t == 70 and [learner.epoch_start(k) for k in range(5)] == [0, 1, 3, 7, 15]
    assert [epoch_lengths(3, 2)(k) for k in range(4)] == [2, 6, 18, 54]
    assert [epoch_lengths(1.5)(k) for k in range(5)] == [1, 2, 2, 3, 5]
    with pytest.raises(ValueError, match="ratio must exceed 1"):
        epoch_lengths(1.0)


def hand_built(make, rng_seed, rows, lengths=DOUBLING):
    """Fresh fixed-horizon learners, one per epoch, on the generators epoch_generator draws from
    one parent: what the wrapper must play."""
    parent = np.random.default_rng(rng_seed)
    out, i, k = [], 0, 0
    while i < len(rows):
        n = lengths(k)
        learner = make(n, epoch_generator(parent))
        out.append(play(learner, rows[i : i + n]))
        i, k = i + n, k + 1
    return np.concatenate(out)


def test_same_actions_as_hand_built_fresh_epochs():
    rows = losses(45)
    np.testing.assert_array_equal(
        play(toy(), rows), hand_built(toy_make(PrivacyBudget(1.0)), 7, rows)
    )
    other = play(toy(ratio=3, first=2), rows)
    np.testing.assert_array_equal(
        other, hand_built(toy_make(PrivacyBudget(1.0)), 7, rows, epoch_lengths(3, 2))
    )


# --- state -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [6, 7, 8])  # the last round of epoch 2, the first of 3, inside
def test_resume_is_bit_exact_across_an_epoch_boundary(cut):
    rows = losses(40)
    a = toy()
    play(a, rows[:cut])
    saved = copy.deepcopy(a.state_dict())
    b = toy(seed=123)
    b.load_state_dict(saved)
    np.testing.assert_array_equal(play(a, rows[cut:]), play(b, rows[cut:]))
    assert same(a.state_dict(), b.state_dict())


def test_a_state_saved_after_act_resumes_the_same_round():
    rows = losses(10)
    a = toy()
    play(a, rows[:2])
    x = a.act()
    b = toy(seed=5)
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(b.act(), x)
    np.testing.assert_array_equal(play(a, rows[2:]), play(b, rows[2:]))


def _corruptions() -> dict[str, Callable[[dict], None]]:
    def set_(path, value):
        def go(s):
            d = s
            for key in path[:-1]:
                d = d[key]
            d[path[-1]] = value

        return go

    return {
        "epoch": set_(("epoch",), 2),
        "negative epoch": set_(("epoch",), -1),
        "t": set_(("t",), 5),
        "t past the inner": set_(("t",), 9),
        "acted": set_(("acted",), True),
        "rng": set_(("rng",), {"bit_generator": "os"}),
        "ratio": set_(("config", "ratio"), 3.0),
        "privacy": set_(("config", "privacy"), None),
        "multiplier": set_(("noise_multiplier",), 0.5),
        "inner cum": set_(("learner", "cum"), np.full((R, K), np.nan)),
        "inner t": set_(("learner", "t"), 0),
        "inner config": set_(("learner", "config", "horizon"), 16),
        "missing": lambda s: s.pop("learner"),
        "not a dict": None,
    }


@pytest.mark.parametrize("what", sorted(_corruptions()))
def test_a_corrupt_state_is_refused_and_changes_nothing(what):
    rows = losses(20)
    donor = toy(seed=3)
    play(donor, rows[:10])  # epoch 3, rounds 8..15
    state = copy.deepcopy(donor.state_dict())
    corrupt = _corruptions()[what]
    if corrupt is None:
        state = [state]
    else:
        corrupt(state)
    a, twin = toy(), toy()
    play(a, rows[:5])
    play(twin, rows[:5])
    before = copy.deepcopy(a.state_dict())
    with pytest.raises((ArgumentError, ValueError, TypeError)):
        a.load_state_dict(state)
    assert same(a.state_dict(), before)
    np.testing.assert_array_equal(play(a, rows[5:]), play(twin, rows[5:]))


def test_refused_feedback_at_an_epoch_boundary_changes_nothing():
    a, twin = toy(), toy()
    rows = losses(12)
    a.act()
    before = copy.deepcopy(a.state_dict())
    with pytest.raises(ValueError, match="outside"):
        a.observe(LossVectorFeedback(np.array([2.0, 0.0, 0.0])))  # epoch 0's last round
    assert same(a.state_dict(), before) and a.epoch == 0
    with pytest.raises(ValueError, match="observe\\(\\) must follow act\\(\\)"):
        toy().observe(LossVectorFeedback(rows[0]))
    np.testing.assert_array_equal(play(a, rows), play(twin, rows))


# --- blocks ------------------------------------------------------------------------------------


def test_play_block_splits_at_epoch_boundaries():
    rows = losses(50)
    a, b = toy(), toy()
    assert isinstance(a, BlockPlayer)
    blocks = [a.play_block(rows[i:j]) for i, j in ((0, 5), (5, 5), (5, 6), (6, 33), (33, 50))]
    np.testing.assert_array_equal(np.concatenate(blocks), play(b, rows))
    assert same(a.state_dict(), b.state_dict()) and a.epoch == 5
    bad = losses(20, seed=1)
    bad[12, 0] = np.nan  # after the boundary at round 63
    before = copy.deepcopy(a.state_dict())
    with pytest.raises(ValueError):
        a.play_block(bad)
    assert same(a.state_dict(), before)
    a.act()
    with pytest.raises(ValueError, match="round boundary"):
        a.play_block(rows[:2])


# --- the noise handle and the guarantee ----------------------------------------------------------


def test_scale_noise_reaches_every_epoch_and_states_refuse_another_multiplier():
    rows = losses(20)
    a = toy()
    a.scale_noise(0.5)
    a.scale_noise(0.5)
    assert a.noise_multiplier == 0.25 and a.privacy.epsilon == np.inf
    assert "noise multiplied by 0.25" in a.privacy.derivation

    def scaled(n, gen):
        learner = ToyLeader(n, budget=PrivacyBudget(1.0), rng=gen)
        learner.scale_noise(0.5)
        learner.scale_noise(0.5)
        return learner

    np.testing.assert_array_equal(play(a, rows[:12]), hand_built(scaled, 7, rows[:12]))
    assert a.epoch == 3 and a.learner.noise_multiplier == 0.25
    with pytest.raises(ValueError, match="before the first round"):
        a.scale_noise(2.0)
    with pytest.raises(ArgumentError, match=r"multiplied by 0\.25"):
        toy().load_state_dict(a.state_dict())
    b = toy(seed=1)
    b.scale_noise(0.5)
    b.scale_noise(0.5)
    b.load_state_dict(a.state_dict())  # the same multiplier: loads, the same noise after
    np.testing.assert_array_equal(play(a, rows[12:]), play(b, rows[12:]))
    with pytest.raises(ValueError, match="non-private"):
        toy(budget=None).scale_noise(0.5)


def test_the_guarantee_says_anytime_and_names_the_epochs():
    g = toy(PrivacyBudget(0.7)).privacy
    assert (g.epsilon, g.delta) == (0.7, 0.0)
    for words in ("anytime", "epochs of lengths 1, 2, 4", "ToyLeader", "parallel composition"):
        assert words in g.derivation
    assert "epochs of lengths 2, 6, 18" in toy(ratio=3, first=2).privacy.derivation
    assert toy(budget=None).privacy is None


def test_a_paper_budget_states_the_weakest_epoch():
    budget = PrivacyBudget(1.0, calibration="paper", allow_weaker=True)

    def guarantee(n: int) -> PrivacyGuarantee:
        return PrivacyGuarantee(1.0 + 1.0 / n, 0.0, derivation=f"toy for {n} rounds")

    with pytest.warns(PrivacyWarning) as caught:
        a = toy(budget, epoch_guarantee=guarantee)
    assert len(caught) == 1  # once, for the run: not once per epoch
    assert a.privacy.epsilon == 2.0 and "toy for 1 rounds" in a.privacy.derivation
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # later epochs build without a warning
        play(a, losses(20))
    with pytest.raises(ValueError, match="give epoch_guarantee"):
        toy(budget)

    def overstated(n: int, gen: np.random.Generator) -> ToyLeader:
        learner = ToyLeader(n, budget=budget, rng=gen)
        if n > 1:  # proves less than the claims of epoch_guarantee (a broken mirror)
            learner.privacy = PrivacyGuarantee(1.0 + n, 0.0)
        return learner

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        b = DoublingLearner(overstated, budget=budget, replicas=R, epoch_guarantee=guarantee)
    b.act()
    before = copy.deepcopy(b.state_dict())
    with pytest.raises(ValueError, match="epoch 1's learner \\(2 rounds\\) proves epsilon=3"):
        b.observe(LossVectorFeedback(losses(1)[0]))  # epoch 1 is built before it plays
    assert same(b.state_dict(), before)


def test_a_user_level_budget_is_refused():
    budget = PrivacyBudget(1.0, participations=2, min_separation=3)
    with pytest.raises(ValueError, match="several epochs"):
        toy(budget)
    with pytest.raises(ValueError, match=r"budget.by_group_privacy\(\)"):
        toy(budget)


def test_a_person_by_group_privacy_is_lifted_once():
    """build_learner answers a person's budget for an event-level learner by group privacy: the
    epochs run at one round's budget, their one-round guarantees are combined as for one round
    (each round in one epoch) and the whole is lifted once (lifting each epoch's and then the
    whole's would state k^2 epsilon, or refuse)."""
    env = build_environment("bandit_convex", 16, np.random.default_rng(0), domain="simplex", dim=3)
    learner = build_learner("private-bandit", env, epsilon=1.0, participations=2, anytime=True)
    g = learner.privacy
    assert (g.participations, g.min_separation, g.requested_epsilon) == (2, 1, 1.0)
    assert g.derivation.count("group privacy over any") == 1
    assert g.one_input.epsilon == pytest.approx(g.epsilon / 2)
    assert g.one_input.derivation.startswith("anytime (no horizon)")
    assert g.meets_request
    play_in_rounds(env, learner, range(7))  # into the third epoch, each checked as it starts
    assert learner.epoch >= 2


def test_a_joint_dp_learner_is_refused():
    """Joint DP leaves a user's own action unprotected and later epochs may adapt to it: the
    wrapper once stated full DP for DP-GLM-bandit epochs, and a user's context moved the next
    epoch's action for that user by a ratio of about 11 at epsilon 1."""
    budget = PrivacyBudget(1.0, 1e-5, neighbouring=Neighbouring.ONE_USER)

    def make(n: int, gen: np.random.Generator) -> DPGLMBandit:
        return DPGLMBandit(3, 2, n, h_sub=0.5, warmup=None, link="linear", budget=budget, rng=gen)

    with pytest.raises(ValueError, match="keeps event-level DP only"):
        DoublingLearner(make, budget=budget, first=4)


def test_make_must_build_fresh_learners_of_the_epoch_length():
    with pytest.raises(ValueError, match="for 1 rounds"):
        DoublingLearner(lambda n, gen: ToyLeader(n + 1, budget=None), budget=None, replicas=R)
    with pytest.raises(ValueError, match="replicas"):
        DoublingLearner(lambda n, gen: ToyLeader(n, budget=None), budget=None, replicas=1)
    with pytest.raises(ValueError, match="private"):
        DoublingLearner(toy_make(PrivacyBudget(1.0)), budget=None, replicas=R)


# --- PrivateBandit --------------------------------------------------------------------------------


def bandit_env(horizon: int = 25):
    return build_environment(
        "bandit_convex", horizon, np.random.default_rng(0), domain="simplex", dim=4
    )


def bandit(seed: int = 5, **kw) -> DoublingLearner:
    return build_learner(
        "private-bandit", bandit_env(), epsilon=1.0, anytime=True, replicas=3, rng=seed, **kw
    )


def bandit_play(learner, rounds: int, start: int = 0) -> np.ndarray:
    """Linear losses <c_t, x> with c_t in [-1, 1]^4 drawn from a fixed seed (inside every
    epoch's loss range: |<c, x>| <= ||x||_1 <= 1 + the smoothing radius)."""
    gen = np.random.default_rng(100 + start)
    out = []
    for _ in range(rounds):
        x = learner.act()
        c = gen.uniform(-1, 1, 4)
        out.append(x)
        learner.observe(BanditFeedback(np.clip(x @ c, -1.0, 1.0) * 0.5))
    return np.array(out)


def test_private_bandit_runs_past_any_horizon_on_hand_built_epochs():
    env = bandit_env()
    learner = bandit()
    assert learner.horizon is None and not isinstance(learner, BlockPlayer)
    acts = bandit_play(learner, 70)  # the environment's horizon is 25
    assert learner.t == 70 and learner.epoch == 6 and learner.learner.horizon == 64
    assert isinstance(learner.learner, PrivateBandit)
    assert learner.learner.zeta == default_zeta(env.domain, 64)  # calibrated for its length
    parent = np.random.default_rng(5)
    hand = []
    gen = np.random.default_rng(100)
    for k in range(7):
        n = 2**k
        inner = PrivateBandit(
            env.domain,
            n,
            budget=PrivacyBudget(1.0),
            lipschitz=env.lipschitz(default_zeta(env.domain, n)),
            replicas=3,
            rng=epoch_generator(parent),
        )
        for _ in range(min(n, 70 - len(hand))):
            x = inner.act()
            c = gen.uniform(-1, 1, 4)
            hand.append(x)
            inner.observe(BanditFeedback(np.clip(x @ c, -1.0, 1.0) * 0.5))
    np.testing.assert_array_equal(acts, np.array(hand))


def test_private_bandit_resumes_bit_exact_across_a_boundary_and_refuses_corrupt_states():
    a = bandit()
    bandit_play(a, 15)  # the next round opens epoch 4
    saved = copy.deepcopy(a.state_dict())
    b = bandit(seed=99)
    b.load_state_dict(saved)
    np.testing.assert_array_equal(bandit_play(a, 20, start=15), bandit_play(b, 20, start=15))
    assert same(a.state_dict(), b.state_dict())
    bad = copy.deepcopy(saved)
    bad["learner"]["noisy_oco"]["t"] = 3
    c = bandit()
    before = copy.deepcopy(c.state_dict())
    with pytest.raises(ArgumentError):
        c.load_state_dict(bad)
    assert same(c.state_dict(), before)


def test_private_bandit_scale_noise_and_guarantees():
    a = bandit()
    a.scale_noise(0.1)
    bandit_play(a, 8)
    assert a.learner.noise_multiplier == 0.1 and a.learner.horizon == 8
    assert a.privacy.epsilon == np.inf
    g = bandit().privacy
    assert (g.epsilon, g.delta) == pytest.approx((1.0, 0.0))
    assert "anytime" in g.derivation and "Algorithm 1" in g.derivation
    gauss = bandit(delta=1e-5).privacy
    assert gauss.delta == 1e-5 and gauss.epsilon <= 1.0 + 1e-9 and gauss.rho is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        paper = bandit(calibration="paper", allow_weaker=True)
    # Lemma 5.1's noise proves the least for the shortest epoch: its guarantee is stated, and
    # the epochs built later (checked against it) prove no less
    assert paper.privacy.epsilon == paper.learner.privacy.epsilon > 1.0
    assert "Weakest of the epochs covering 2^62 rounds" in paper.privacy.derivation
    bandit_play(paper, 40)
    assert paper.learner.privacy.epsilon < paper.privacy.epsilon


def test_the_registry_says_private_bandit_is_anytime():
    entries = learners()
    assert entries["private-bandit"].anytime and entries["projection-free-bandit"].anytime
    assert "anytime" in entries["private-bandit"].options
    free = build_learner("projection-free-bandit", bandit_env(), anytime=True, rng=1)
    assert free.privacy is None and free.horizon is None
    with pytest.raises(ValueError, match="anytime"):
        build_learner("private-bandit", bandit_env(), epsilon=1.0, anytime="yes")
    fixed = build_learner("private-bandit", bandit_env(), epsilon=1.0)
    assert isinstance(fixed, PrivateBandit) and fixed.horizon == 25
