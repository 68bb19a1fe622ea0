"""Anytime learners: built with ``horizon=None`` they run past any horizon, resume bit for bit,
refuse no round for being late, state a guarantee for every t, release noise of the variance
their counter reports, and keep a sane regret."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.continual.factory import build_counter
from dponline.environments import stochastic_losses
from dponline.environments.catalogue import build_environment
from dponline.experiments.rounds import play
from dponline.online import DPFTPL, DPFTRL
from dponline.online.dyadic_hedge import DyadicHedge
from dponline.online.linearised_ftrl import LinearisedFTRL
from dponline.privacy.arguments import ArgumentError
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import LossVectorFeedback, RoundDiscipline
from dponline.registry import build_learner, learners

GAUSS = PrivacyBudget(1.0, 1e-6)


def _anytime_entries() -> list[str]:
    """The anytime entries of the counter-based learners: the online ones and private
    streaming Frank-Wolfe."""
    mine = ("dponline.online.", "dponline.stochastic.private_frank_wolfe")
    return [
        name
        for name, e in learners().items()
        if e.anytime and e.factory.__module__.startswith(mine)
    ]


def test_at_least_the_counter_learners_are_anytime() -> None:
    private = {name for name in _anytime_entries() if learners()[name].private}
    assert {"dp-ftrl", "dp-ftpl", "dp-ftrl-oco", "dp-dyadic-hedge", "dp-frank-wolfe"} <= private


@pytest.mark.parametrize("name", _anytime_entries())
def test_resumes_bit_for_bit_past_the_environments_horizon(name: str) -> None:
    """Built with ``anytime=True`` in an environment of 160 rounds (its own horizon ignored),
    saved after round 70 (past the doubling blocks 1..64) and resumed into a fresh learner and
    environment: the next 90 actions agree exactly."""
    entry = learners()[name]
    case = entry.test_case
    epsilon = case.epsilon if entry.private else None

    def fresh():  # type: ignore[no-untyped-def]
        env = build_environment(
            case.environment, 160, np.random.default_rng(5), **case.environment_options
        )
        learner = build_learner(
            entry, env, epsilon=epsilon, anytime=True, replicas=2, rng=11, **case.learner_options
        )
        return env, learner

    env, learner = fresh()
    assert learner.horizon is None and learner.anytime
    if entry.private:
        derivation = learner.privacy.derivation  # the tapered factorisation's, or the BLT's
        assert "anytime" in derivation or "every prefix length" in derivation
        assert learner.privacy.meets_request
    play(env, learner, range(70), keep=False)
    saved, env_saved = learner.state_dict(), env.state_dict()
    first = play(env, learner, range(70, 160))
    assert learner.t == 160
    env2, learner2 = fresh()
    env2.load_state_dict(env_saved)
    learner2.load_state_dict(saved)
    second = play(env2, learner2, range(70, 160))
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def test_runs_past_any_horizon_and_refuses_only_misuse() -> None:
    """No round is refused for being late (several doubling blocks, single rounds and blocks);
    observe before act, a negative or non-integer saved round counter, and a state from a
    fixed-horizon learner are still refused."""
    lr = DPFTRL(3, None, budget=GAUSS, noise="gaussian", replicas=2, rng=0)
    losses = np.random.default_rng(1).random((1100, 3))
    lr.play_block(losses[:1000])
    for row in losses[1000:1030]:
        lr.act()
        lr.observe(LossVectorFeedback(row))
    lr.play_block(losses[1030:])
    assert lr.t == 1100 and lr.counter.t == 1100
    with pytest.raises(ValueError, match="observe\\(\\) must follow act\\(\\)"):
        lr.observe(LossVectorFeedback(losses[0]))
    state = lr.state_dict()
    before = lr.state_dict()
    for bad in (-1, 2.0, True):
        with pytest.raises(ArgumentError, match="saved round counter t"):
            lr.load_state_dict({**state, "t": bad})
    fixed = DPFTRL(3, 2000, budget=GAUSS, noise="gaussian", replicas=2, rng=0)
    with pytest.raises(ArgumentError):
        lr.load_state_dict(fixed.state_dict())
    after = lr.state_dict()
    np.testing.assert_array_equal(after["cumulative"], before["cumulative"])
    assert after["t"] == before["t"] == 1100


def test_a_learner_without_an_anytime_version_says_so() -> None:
    class FixedOnly(RoundDiscipline):
        """A learner that keeps the default: no anytime version."""

    with pytest.raises(ArgumentError, match="has no anytime version"):
        FixedOnly()._start_rounds(None)
    with pytest.raises(ArgumentError, match="horizon must be a positive integer"):
        FixedOnly()._start_rounds(0)


def test_variance_at_t_is_the_counters() -> None:
    """The learner's noisy sums at t = 40 have the per-coordinate variance its anytime counter
    (the tapered square root for tight Gaussian noise) reports: 2 x 4000 draws, so the sample
    variance's relative sd is 1.6% and a 7% tolerance fails by chance with probability below
    1e-5."""
    lr = DPFTRL(2, None, budget=GAUSS, noise="gaussian", replicas=4000, rng=3)
    lr.play_block(np.zeros((40, 2)))
    v = lr.counter.variance(40)
    assert lr.counter.horizon is None and lr.counter.name == "anytime_factorization"
    assert v > lr.counter.variance(31)
    assert np.var(lr.state_dict()["cumulative"]) == pytest.approx(v, rel=0.07)


def test_anytime_rate_and_the_fixed_default_agree_at_T() -> None:
    anytime = DPFTRL(5, None, budget=None, replicas=1)
    fixed = DPFTRL(5, 400, budget=None, replicas=1)
    assert anytime.rate(400) == pytest.approx(fixed.eta)
    assert anytime.eta == pytest.approx(np.sqrt(np.log(5)))  # round 1
    losses = np.random.default_rng(0).random((10, 5))
    d = anytime.play_block(losses)
    for k in (0, 9):  # each row of a block played at its own round's rate
        w = np.exp(-anytime.rate(k + 1) * losses[:k].sum(axis=0))
        np.testing.assert_allclose(d[k, 0], w / w.sum())


def test_regret_is_sane_and_under_the_anytime_bound() -> None:
    """Anytime Gaussian DP-FTRL on a stochastic stream (expert 0 better by 0.1): the mean
    regret of 40 replicas lies under the bound of the module docstring and is a small fraction
    of T. Measured: mean 82 with standard error 7.7, bound 267, 5% of T = 150: a false failure
    needs a deviation of more than 8 standard errors (chance far below 1e-6)."""
    horizon = 3000
    losses = stochastic_losses(horizon, np.r_[0.4, 0.5, 0.5, 0.5], rng=2)
    lr = DPFTRL(4, None, budget=GAUSS, noise="gaussian", replicas=40, rng=4)
    decisions = lr.play_block(losses)
    regret = np.einsum("trn,tn->r", decisions, losses) - losses.sum(axis=0).min()
    bound = lr.regret_bound(losses, samples=4000)
    assert set(bound) >= {"explicit", "regulariser_term", "stability", "noise_term"}
    assert 0 < regret.mean() < bound["explicit"]
    assert regret.mean() < 0.05 * horizon


def test_learners_of_every_kind_build_without_a_horizon() -> None:
    """DP-FTPL grows its perturbation block by block; the linearised and dyadic learners
    state the anytime guarantee of their inner DP-FTRL."""
    ftpl = DPFTPL(3, None, budget=GAUSS, replicas=2, rng=0)
    ftpl.play_block(np.random.default_rng(0).random((300, 3)))
    assert ftpl.counter.variance(300) > ftpl.counter.variance(10) > 0
    assert "anytime" in ftpl.privacy.derivation and ftpl.privacy.meets_request
    non_private = DPFTPL(3, None, budget=None, replicas=2, rng=0)
    assert non_private.privacy is None and non_private.sigma > 0
    from dponline.domains.lp_ball import LpBall

    oco = LinearisedFTRL(LpBall(2, 2.0), None, lipschitz=2.0, budget=GAUSS, replicas=2)
    assert oco.anytime and oco.eta == pytest.approx(oco.inner.rate(1))
    assert "anytime" in oco.privacy.derivation
    hedge = DyadicHedge([0.0], [1.0], None, lipschitz=1.0, budget=GAUSS, replicas=2)
    # 1,025 experts: past the tapered factorisation's memory, the BLT without a horizon
    assert hedge.grid.levels == 10 and hedge.counter.name == "anytime_blt"
    assert "every prefix length" in hedge.privacy.derivation
    with pytest.raises(ValueError, match="fixed-horizon bound"):
        hedge.regret_bound(np.zeros((3, hedge.grid.size)))
    env = build_environment("regression_stream", 50, np.random.default_rng(0), dim=3)
    fw = build_learner("dp-frank-wolfe", env, epsilon=1.0, anytime=True, increment_clip=0.5)
    assert fw.horizon is None and fw.privacy.neighbouring.name == "ONE_SAMPLE"
    with pytest.raises(ValueError, match=r"Algorithm 2 .* has no anytime version"):
        build_learner("dp-frank-wolfe", env, epsilon=1.0, anytime=True, p=1.0)


def test_scale_noise_and_a_state_at_another_multiplier() -> None:
    lr = DPFTRL(2, None, budget=GAUSS, noise="gaussian", replicas=2, rng=0)
    v = lr.counter.variance(5)
    saved = lr.state_dict()
    lr.scale_noise(0.1)
    assert lr.privacy.epsilon == np.inf and "anytime" in lr.privacy.derivation
    assert lr.counter.variance(5) == pytest.approx(0.01 * v)
    with pytest.raises(ArgumentError, match=r"multiplied by|calibrated for another guarantee"):
        lr.load_state_dict(saved)
    lr.play_block(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="before the first round"):
        lr.scale_noise(2.0)


def test_the_anytime_counter_checks_before_it_changes() -> None:
    """A bad input at a block boundary (step 4 opens the block of steps 4..7) leaves the
    counter as it was, for the doubling blocks (a named mechanism) and the tapered square root
    (tight Gaussian); the noiseless counter (no budget) releases the exact sums."""
    tapered = build_counter(GAUSS, bounds=Box(0.0, 1.0, dim=2), replicas=2, rng=0)
    tapered.step_block(np.ones((3, 2)))
    before = tapered.state_dict()
    with pytest.raises(ValueError):
        tapered.step([2.0, 0.0])
    assert tapered.state_dict()["t"] == before["t"] == 3
    twin = build_counter(GAUSS, bounds=Box(0.0, 1.0, dim=2), replicas=2, rng=0)
    twin.step_block(np.ones((3, 2)))
    np.testing.assert_array_equal(tapered.step([1.0, 1.0]), twin.step([1.0, 1.0]))
    c = build_counter(
        GAUSS, bounds=Box(0.0, 1.0, dim=2), mechanism="sqrt_factorization", replicas=2, rng=0
    )
    c.step_block(np.ones((3, 2)))
    state = c.state_dict()
    with pytest.raises(ValueError):
        c.step([2.0, 0.0])  # outside the bounds, at the step that opens block 4..7
    with pytest.raises(ValueError):
        c.step([np.nan, 0.0])
    after = c.state_dict()
    assert after["t"] == state["t"] == 3 and after["block_index"] == state["block_index"]
    np.testing.assert_array_equal(after["carried"], state["carried"])
    exact = build_counter(None, bounds=Box(0.0, 1.0, dim=2), replicas=1)
    out = exact.step_block(np.ones((100, 2)))
    np.testing.assert_array_equal(out[:, 0, 0], np.arange(1, 101))
    assert exact.horizon is None and exact.privacy is None


def test_eta_constant_is_refused_where_it_would_be_ignored() -> None:
    """eta_constant sets only the anytime rate: with a horizon, or beside eta, it was silently
    ignored (DPFTRL(5, 1000, eta_constant=50) ran at sqrt(D_R / T) = 0.0401)."""
    with pytest.raises(ValueError, match="eta_constant sets the anytime rate"):
        DPFTRL(5, 1000, budget=None, eta_constant=50.0)
    with pytest.raises(ValueError, match="give one of eta and eta_constant"):
        DPFTRL(5, None, budget=None, eta=0.1, eta_constant=50.0)
    assert DPFTRL(5, None, budget=None, eta_constant=50.0).rate(4) == pytest.approx(25.0)
    assert DPFTRL(5, None, budget=None, eta=0.1).rate(4) == pytest.approx(0.1)
    hedge = DyadicHedge([0.0], [1.0], None, lipschitz=1.0, budget=None, eta=0.2)
    assert hedge.rate(9) == pytest.approx(0.2)


def test_the_linearised_learner_takes_a_rate_without_a_horizon() -> None:
    """LinearisedFTRL without a horizon passed its default c beside a given eta, which DPFTRL
    refused ("give one of eta and eta_constant", a parameter it did not take): eta is now a
    rate fixed for every round, eta_constant the anytime rate's c, through the registry too."""
    from dponline.domains.lp_ball import LpBall

    ball = LpBall(3, 2.0, 2.0)  # D_R = 4: the default c = sqrt(4) / G = 1 for G = 2
    fixed = LinearisedFTRL(ball, None, lipschitz=2.0, budget=GAUSS, eta=0.1)
    assert fixed.inner.rate(1) == fixed.inner.rate(100) == pytest.approx(0.1)
    default = LinearisedFTRL(ball, None, lipschitz=2.0, budget=GAUSS)
    assert default.inner.rate(4) == pytest.approx(0.5)
    mine = LinearisedFTRL(ball, None, lipschitz=2.0, budget=GAUSS, eta_constant=3.0)
    assert mine.inner.rate(9) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="eta_constant sets the anytime rate"):
        LinearisedFTRL(ball, 100, lipschitz=2.0, budget=GAUSS, eta_constant=3.0)
    env = build_environment("smooth_convex", 50, np.random.default_rng(0), dim=3)
    built = build_learner("dp-ftrl-oco", env, anytime=True, eta=0.1)
    assert built.horizon is None and built.inner.rate(50) == pytest.approx(0.1)
    built = build_learner("ftrl-oco", env, anytime=True, eta_constant=3.0)
    assert built.inner.rate(9) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "name,options",
    [
        ("dp-ftrl", {"noise": "gaussian"}),
        ("dp-ftrl-oco", {}),
        ("dp-dyadic-hedge", {"levels": 3}),  # 9 experts: the tapered factorisation's
        ("dp-ucb", {"noise": "gaussian"}),
    ],
)
def test_person_level_learners_protect_a_person_without_a_horizon(name, options) -> None:
    """Without a horizon, the person-level learners state the person's guarantee, proved at
    every prefix length by the tapered factorisation (they were refused before), and run."""
    case = learners()[name].test_cases[0]
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(1), **case.environment_options
    )
    learner = build_learner(
        name,
        env,
        epsilon=1.0,
        participations=3,
        min_separation=5,
        anytime=True,
        rng=np.random.default_rng(2),
        **options,
    )
    g = learner.privacy
    assert (g.participations, g.min_separation) == (3, 5) and g.epsilon <= 1.0 + 1e-9
    assert "at every n" in g.derivation and "ours" in g.derivation
    actions = play(env, learner, range(case.horizon))
    assert len(actions) == case.horizon and np.isfinite(np.asarray(actions, dtype=float)).all()


def test_laplace_without_a_horizon_protects_a_person_by_group_privacy_only() -> None:
    """DP-UCB's doubling blocks (Laplace noise, no horizon) prove one round: the class refuses
    a person's budget, and build_learner runs the blocks at one round's epsilon / 3."""
    from dponline.bandits.dp_ucb import DPUCB
    from dponline.privacy.budget import PersonNotCovered, PrivacyBudget

    person = PrivacyBudget(1.0, participations=3, min_separation=5)
    with pytest.raises(PersonNotCovered, match="group privacy"):
        DPUCB(3, None, budget=person, rng=0)
    env = build_environment("bernoulli_bandit", 24, np.random.default_rng(1), n_arms=3)
    with pytest.warns(UserWarning, match="the noise is laplace.*runs by group privacy instead"):
        learner = build_learner(
            "dp-ucb", env, epsilon=1.0, participations=3, min_separation=5, anytime=True
        )
    g = learner.privacy
    assert (g.epsilon, g.participations, g.min_separation) == (1.0, 3, 1)
    assert g.one_input.epsilon == pytest.approx(1 / 3)
