"""Anytime K-armed learners (``horizon=None``): the learners whose indices read log t and whose
episodes, phases or epochs end by their own rule need no horizon (DP-UCB's tight counter is the
anytime one). Built without one they make the same decisions as with one where no horizon
enters them, play on past any T, resume bit for bit,
and their guarantee says it holds at every t; the learners that need T refuse ``None``."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits.dp_ucb import DPUCB
from dponline.bandits.elimination import DPSE
from dponline.environments.catalogue import build_environment
from dponline.privacy.arguments import ArgumentError
from dponline.privacy.budget import PrivacyBudget
from dponline.registry import build_learner, learners
from tests.bandits.stochastic_arms_helpers import play_rounds, same_state

ANYTIME_K_ARMED = sorted(
    name for name, entry in learners().items() if entry.anytime and entry.action_spaces == ("arms",)
)


def _build(name: str, horizon_env: int, anytime: bool, seed: int = 3):
    env = build_environment("bernoulli_bandit", horizon_env, np.random.default_rng(0), n_arms=3)
    epsilon = 1.0 if learners()[name].private else None
    return build_learner(name, env, epsilon=epsilon, anytime=anytime, replicas=4, rng=seed)


def test_at_least_six_private_k_armed_learners_are_anytime() -> None:
    private = [n for n in ANYTIME_K_ARMED if learners()[n].private]
    assert len(private) >= 6, private


@pytest.mark.parametrize("name", ANYTIME_K_ARMED)
def test_no_horizon_same_decisions_and_no_end(name: str) -> None:
    means = np.array([1.0, 0.0, 1.0])
    fixed = _build(name, 40, anytime=False)
    free = _build(name, 40, anytime=True)
    assert free.horizon is None and free.anytime
    arms_fixed, arms_free = play_rounds(fixed, means, 40), play_rounds(free, means, 40)
    if getattr(free, "counter", None) is None:
        # no horizon enters the decisions or the noise: the same arms for the first 40 rounds
        np.testing.assert_array_equal(arms_fixed, arms_free)
    else:
        # DP-UCB's counter is the anytime one: another noise, the same initial round robin
        np.testing.assert_array_equal(arms_fixed[:3], arms_free[:3])
    with pytest.raises(ValueError, match="past the horizon"):
        fixed.act()
        play_rounds(fixed, means, 1)
    play_rounds(free, means, 30)  # on past the environment's horizon
    assert free.t == 70
    if free.privacy is not None:
        assert "anytime" in free.privacy.derivation


@pytest.mark.filterwarnings("ignore:.*fill the horizon:UserWarning")  # T = 10 is short on purpose
@pytest.mark.parametrize("name", ANYTIME_K_ARMED)
def test_anytime_state_resumes_bit_for_bit(name: str) -> None:
    means = np.array([0.0, 1.0, 1.0])
    a = _build(name, 10, anytime=True)
    play_rounds(a, means, 25)
    saved = a.state_dict()
    b = _build(name, 10, anytime=True, seed=99)
    b.load_state_dict(saved)
    np.testing.assert_array_equal(play_rounds(a, means, 20), play_rounds(b, means, 20))
    assert same_state(a.state_dict(), b.state_dict())
    fixed = _build(name, 10, anytime=False)
    with pytest.raises(ArgumentError):
        fixed.load_state_dict(saved)  # an anytime state is not a fixed-horizon one


@pytest.mark.parametrize("name", ["adap-ucb", "dp-imed", "kl-ucb"])
def test_anytime_fast_path_runs_past_any_horizon(name: str) -> None:
    learner = _build(name, 10, anytime=True)  # the horizon of 10 is ignored
    env = build_environment("k_armed", 5_000, np.random.default_rng(1), arms=3)
    out = learner.play_stochastic(env, 5_000)
    assert learner.t == 5_000 and out.pulls.sum() == 5_000 * learner.replicas


def test_a_learner_that_needs_its_horizon_refuses_none() -> None:
    with pytest.raises(ArgumentError, match="needs a horizon"):
        DPSE(3, None, budget=PrivacyBudget(1.0))
    assert not learners()["dp-se"].anytime
    with pytest.raises(ArgumentError, match="needs a horizon"):
        DPUCB(3, None, budget=PrivacyBudget(1.0, calibration="paper"))


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_anytime_dp_ucb_widens_by_its_counters_variance(noise: str) -> None:
    delta = 1e-6 if noise == "gaussian" else 0.0
    learner = DPUCB(3, None, budget=PrivacyBudget(1.0, delta), noise=noise, rng=0)
    assert learner.counter.horizon is None
    assert "every" in learner.privacy.derivation  # holds for the releases up to every t
    t = np.array([50])
    assert learner.widening(np.array([0]), t)[0, 0] > 0.0
    assert learner.counter.variance(200) > learner.counter.variance(50)


def test_anytime_dp_ucb_follows_the_memory_rule() -> None:
    """DP-UCB took the tapered factorisation at any K, its noise state growing as t K (80 MiB
    at K = 40 after 2^18 rounds) where the other anytime learners left the factorisation past
    the memory rule's dimension; now it follows the same rule, and refuses a person's budget on
    the blocks saying why; Gaussian noise on more arms takes the BLT without a horizon (O(K)
    state), for one round or one person."""
    from dponline.continual.anytime_blt import AnytimeBLTCounter
    from dponline.continual.anytime_factorization import AnytimeFactorizationCounter
    from dponline.continual.factory import ANYTIME_MAX_DIM
    from dponline.continual.unknown_horizon import DoublingCounter

    budget = PrivacyBudget(1.0, 1e-6)
    fits = DPUCB(ANYTIME_MAX_DIM, None, budget=budget, noise="gaussian", rng=0)
    assert isinstance(fits.counter, AnytimeFactorizationCounter)
    many = DPUCB(ANYTIME_MAX_DIM + 1, None, budget=budget, noise="gaussian", rng=0)
    assert isinstance(many.counter, AnytimeBLTCounter)  # O(K) state
    assert many.counter.variance(100) > 0.0
    blocks = DPUCB(ANYTIME_MAX_DIM + 1, None, budget=PrivacyBudget(1.0), rng=0)  # Laplace
    assert isinstance(blocks.counter, DoublingCounter)
    person = PrivacyBudget(1.0, 1e-6, participations=2, min_separation=5)
    DPUCB(ANYTIME_MAX_DIM, None, budget=person, noise="gaussian", rng=0)
    wide = DPUCB(ANYTIME_MAX_DIM + 1, None, budget=person, noise="gaussian", rng=0)
    assert isinstance(wide.counter, AnytimeBLTCounter) and wide.privacy.participations == 2
    with pytest.raises(ValueError, match=r"because a mechanism was named \('blt'\)"):
        DPUCB(ANYTIME_MAX_DIM + 1, None, budget=person, noise="gaussian", mechanism="blt")
    with pytest.raises(ValueError, match="because the noise is laplace"):
        DPUCB(3, None, budget=PrivacyBudget(1.0, participations=2), noise="laplace", rng=0)


def test_the_fast_path_refuses_rounds_past_the_environments_horizon() -> None:
    learner = _build("dp-imed", 10, anytime=True)
    env = build_environment("k_armed", 100, np.random.default_rng(1), arms=3)
    learner.play_stochastic(env, 60)
    with pytest.raises(ValueError, match=r"the environment has 100 rounds.*61\.\.160"):
        learner.play_stochastic(env, 100)
    assert learner.t == 60  # refused before any round
    learner.play_stochastic(env, 40)
