"""UCB1, KL-UCB and IMED: indices by hand, the initial round robin, determinism, regret."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.bandits.index_policies import IMED, KLUCB, UCB1
from dponline.bandits.kl import bernoulli_kl
from dponline.protocol import BanditFeedback
from dponline.registry import learners
from tests.bandits.test_k_armed import BernoulliArms, FixedArms, assert_same_state, play_rounds

ROW = np.array([0])


def _with_state(learner, pulls, sums):
    """``learner`` (one replica) with the given pulls and reward sums of each arm."""
    learner.pulls[0] = pulls
    learner.sums[0] = sums
    return learner


def test_ucb1_index_by_hand():
    ucb = _with_state(UCB1(2, 10), [2, 1], [1.0, 0.0])
    # t = 3: 0.5 + sqrt(2 ln 3 / 2) and 0 + sqrt(2 ln 3)
    want = [0.5 + math.sqrt(math.log(3.0)), math.sqrt(2.0 * math.log(3.0))]
    np.testing.assert_allclose(ucb.index(ROW, np.array([3])), [want], rtol=1e-14)
    assert ucb._choose(ROW, np.array([3]))[0] == 0


def test_klucb_index_by_hand():
    kl = _with_state(KLUCB(2, 10), [2, 1], [1.0, 0.0])
    # arm 0: kl(1/2, q) = ln(3) / 2 <=> q (1 - q) = 1/12 <=> q = (1 + sqrt(2/3)) / 2;
    # arm 1: kl(0, q) = -ln(1 - q) = ln 3 <=> q = 2/3
    want = [(1.0 + math.sqrt(2.0 / 3.0)) / 2.0, 2.0 / 3.0]
    np.testing.assert_allclose(kl.index(ROW, np.array([3])), [want], atol=1e-12)
    assert kl._choose(ROW, np.array([3]))[0] == 0
    # c = 3 adds 3 log log t to the level; log log 3 > 0 here
    kl3 = _with_state(KLUCB(2, 10, c=3.0), [2, 1], [1.0, 0.0])
    q = kl3.index(ROW, np.array([3]))[0, 1]
    level = math.log(3.0) + 3.0 * math.log(math.log(3.0))
    assert float(bernoulli_kl(0.0, q)) == pytest.approx(level, rel=1e-10)
    # where log log t < 0 the level is clipped at 0 (the index is the mean)
    kl_low = _with_state(KLUCB(2, 10, c=30.0), [1, 1], [0.5, 0.0])
    np.testing.assert_allclose(kl_low.index(ROW, np.array([2])), [[0.5, 0.0]])
    with pytest.raises(ValueError, match="c must be finite and non-negative"):
        KLUCB(2, 10, c=-1.0)


def test_imed_index_by_hand():
    imed = _with_state(IMED(2, 10), [4, 1], [2.0, 0.0])
    # mu^ = (1/2, 0), mu^* = 1/2: I_0 = ln 4, I_1 = 1 * kl(0, 1/2) + ln 1 = ln 2
    np.testing.assert_allclose(imed.index(ROW, np.array([5])), [[math.log(4.0), math.log(2.0)]])
    assert imed._choose(ROW, np.array([5]))[0] == 1
    # an arm below an empirical mean of 1 has an infinite index
    top = _with_state(IMED(2, 10), [2, 3], [2.0, 1.0])
    assert top.index(ROW, np.array([5]))[0, 1] == math.inf


@pytest.mark.parametrize("cls", [UCB1, KLUCB, IMED])
def test_every_arm_once_first_then_deterministic(cls):
    learner = cls(4, 40, replicas=3, rng=0)
    gen = np.random.default_rng(1)
    table = (gen.random((40, 4)) < 0.5).astype(float)  # one shared loss per round and arm
    played = []
    for t in range(40):
        arms = learner.act()
        played.append(arms)
        learner.observe(BanditFeedback(table[t, arms]))
    played = np.array(played)
    np.testing.assert_array_equal(played[:4, 0], [0, 1, 2, 3])
    assert (played == played[:, :1]).all()  # replicas fed the same rewards agree
    assert learner.privacy is None
    with pytest.raises(ValueError, match="non-private"):
        learner.scale_noise(0.5)


@pytest.mark.parametrize("cls", [UCB1, KLUCB, IMED])
def test_fast_path_equals_round_by_round(cls):
    means = [0.0, 1.0, 1.0]
    slow, fast = cls(3, 30, replicas=2, rng=0), cls(3, 30, replicas=2, rng=0)
    play_rounds(slow, means, 30)
    fast.play_stochastic(FixedArms(means), 12)
    fast.play_stochastic(FixedArms(means), 18)
    assert_same_state(slow.state_dict(), fast.state_dict())


def test_regret_on_two_bernoulli_arms():
    # mean rewards (0.9, 0.6), T = 2000, 100 replicas, fixed seeds. UCB1's expected regret is
    # at most 8 ln T / 0.3 + (1 + pi^2 / 3) 0.3 = 204 (Auer et al. 2002, Theorem 1); measured
    # about 30 (replica sd 8, so sd 0.8 of the mean): exceeding 204 is a 200-sd event. KL-UCB
    # and IMED measure about 6 and 5 (replica sd 3, sd of the mean 0.3): reaching 15 is a 30-sd
    # event. False failure: far below 1e-9.
    means = np.array([0.9, 0.6])
    regret = {}
    for cls in (UCB1, KLUCB, IMED):
        out = cls(2, 2000, replicas=100, rng=0).play_stochastic(BernoulliArms(means, 1), 2000)
        assert out.pulls.sum() == 2000 * 100
        regret[cls.__name__] = out.regret.mean()
    bound = 8 * math.log(2000) / 0.3 + (1 + math.pi**2 / 3) * 0.3
    assert 0 < regret["UCB1"] < bound
    assert regret["KLUCB"] < regret["UCB1"] / 2
    assert regret["IMED"] < regret["UCB1"] / 2


def test_registry_entries_pair_with_the_private_learners():
    catalogue = learners()
    assert catalogue["ucb1"].counterpart_of == ("adap-ucb", "adac-ucb", "dp-ucb")
    assert "adap-klucb" in catalogue["kl-ucb"].counterpart_of
    for name in ("ucb1", "kl-ucb", "imed"):
        assert not catalogue[name].private
    with pytest.raises(ValueError, match="not private"):
        catalogue["ucb1"].factory(FixedArms([0.0, 1.0]), budget=object())
