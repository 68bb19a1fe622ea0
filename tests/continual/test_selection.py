"""The tight calibrations' choice of counter (:mod:`dponline.continual.selection`)."""

import numpy as np
import pytest

from dponline.continual import MECHANISMS, best_mechanism
from dponline.continual.selection import _RANKING, person_ranking, state_bytes
from dponline.online import DPFTRL
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.noise import GaussianNoise, LaplaceNoise
from dponline.protocol import LossVectorFeedback


@pytest.mark.parametrize("horizon", [64, 1024])
def test_the_ranking_is_by_largest_variance_at_equal_sensitivity(horizon):
    # Gaussian noise at unit l2 sensitivity: sigma = the l2 factor of each mechanism
    def worst(name: str) -> float:
        cls = MECHANISMS[name]
        _, l2 = cls.sensitivity_factors(horizon)
        return float(cls.release_variances(horizon, GaussianNoise(l2), 1).max())

    ranked = ["scaled_sqrt", "sqrt_factorization", "blt", "honaker", "binary_tree"]
    values = [worst(n) for n in ranked]
    assert values[0] < values[1] <= values[2] <= 1.1 * values[1]
    assert values[2] < values[3] < values[4]


@pytest.mark.parametrize(
    "horizon", [1, 2, 3, 5, 8, 13, 27, 64, 100, 243, 500, 1000, 1024, 2187, 5000, 20_000]
)
def test_the_laplace_ranking_holds_at_equal_epsilon(horizon):
    # Laplace noise at unit l1 sensitivity and epsilon = 1: b = the l1 factor
    def worst(name: str) -> float:
        cls = MECHANISMS[name]
        l1, _ = cls.sensitivity_factors(horizon)
        return float(cls.release_variances(horizon, LaplaceNoise(l1), 1).max())

    kary, honaker, tree = (worst(n) for n in ("kary_tree", "honaker", "binary_tree"))
    assert kary <= honaker <= tree
    # the smooth binary mechanism, ranked for a person only, is never first for one round
    assert kary <= worst("smooth_binary")
    if horizon >= 2:
        assert kary < honaker
    if horizon >= 1000:
        assert kary <= 0.31 * honaker  # 324 against 1,060 at T = 1000, 1,404 at 1024


def test_the_best_mechanism_that_fits_the_memory():
    assert best_mechanism(1000, 10, "gaussian") == "scaled_sqrt"
    # T = 1e6, d = 1000: the square roots would hold 7.5 GiB; the BLT 48 KB
    assert state_bytes("sqrt_factorization", 10**6, 1000) > 7 * 2**30
    assert state_bytes("scaled_sqrt", 10**6, 1000) == state_bytes("sqrt_factorization", 10**6, 1000)
    assert best_mechanism(10**6, 1000, "gaussian") == "blt"
    assert best_mechanism(10**5, 1000, "laplace") == "kary_tree"
    # the k-ary tree at T = 1024 (k = 13, h = 3) keeps 2 x 13 + 2 vectors, Honaker 2 x 11 + 1
    assert state_bytes("kary_tree", 1024, 1) == 28 * 8
    assert state_bytes("honaker", 1024, 1) == 23 * 8
    assert best_mechanism(1024, 1, "laplace", memory_budget=200) == "honaker"
    assert best_mechanism(10, 10, "gaussian", memory_budget=100) == "binary_tree"
    with pytest.raises(ValueError, match="noise"):
        best_mechanism(10, 10, "cauchy")


def test_tight_dp_ftrl_takes_it():
    small = DPFTRL(10, 1000, budget=PrivacyBudget(1.0, 1e-6), noise="gaussian", rng=0)
    assert small.counter.name == "scaled_sqrt"
    # one run's square root would hold 1e5 x 100 noise values (76 MiB): a BLT, for any replicas
    wide = DPFTRL(100, 10**5, budget=PrivacyBudget(1.0, 1e-6), noise="gaussian")
    assert wide.counter.name == "blt"
    pure = DPFTRL(10, 1000, budget=PrivacyBudget(1.0), noise="laplace", rng=0)
    assert pure.counter.name == "kary_tree"
    np.testing.assert_array_equal(small.act().shape, (1, 10))


def _person_worst(name: str, horizon: int, k: int, b: int) -> float:
    """The largest release variance of ``name`` calibrated for the person (sigma = its l2
    factor under the pattern), computed here from the mechanisms' own routines."""
    cls = MECHANISMS[name]
    l2 = cls.participation_sensitivity_factors(horizon, k, b).l2
    return float(cls.participation_release_variances(horizon, GaussianNoise(l2), 1, k, b).max())


@pytest.mark.parametrize(
    "horizon,k,b,expected",
    [(1024, 4, 256, "blt"), (1024, 16, 1, "blt"), (1024, 2, 512, "scaled_sqrt")],
)
def test_tight_picks_the_counter_for_the_person(horizon, k, b, expected):
    """For a person the one-round ranking does not carry over (the rescaled square root's
    sensitivity under a pattern is an upper bound, the BLT is optimised for the pattern):
    ``tight`` runs the Gaussian counter of least variance for the budget's unit. The one-round
    choice, the rescaled square root, has 1.13x the BLT's variance at 16 rounds 1 apart."""
    assert best_mechanism(horizon, 1, "gaussian") == "scaled_sqrt"
    got = best_mechanism(horizon, 1, "gaussian", participations=k, min_separation=b)
    assert got == expected
    fits = ("scaled_sqrt", "sqrt_factorization", "blt", "honaker", "binary_tree")
    assert _person_worst(got, horizon, k, b) == min(_person_worst(n, horizon, k, b) for n in fits)
    # what a learner builds: DP-FTRL for that person runs it
    budget = PrivacyBudget(1.0, 1e-6, participations=k, min_separation=b)
    learner = DPFTRL(2, horizon, budget=budget, noise="gaussian")
    assert learner.counter.name == expected
    # one person whose rounds cannot both fit is one round: the one-round choice
    assert best_mechanism(8, 1, "gaussian", participations=2, min_separation=8) == "scaled_sqrt"
    # Laplace noise is ranked for the person too (scale = the l1 factor); the k-ary tree stays
    # first for these patterns
    laplace = best_mechanism(horizon, 1, "laplace", participations=k, min_separation=b)
    assert laplace == person_ranking(horizon, k, b, "laplace", ("kary_tree", "honaker"))[0][0]
    assert laplace == "kary_tree"


@pytest.mark.parametrize(
    ("horizon", "k", "b", "smooth", "kary"),
    [(32, 32, 1, 49_928.0, 65_536.0), (5, 3, 2, 64.0, 90.0), (15, 15, 1, 6_534.0, 6_750.0)],
)
def test_the_smooth_binary_mechanism_wins_for_a_person_of_many_rounds(horizon, k, b, smooth, kary):
    """For Laplace noise and a person of many rounds of a short stream the smooth binary
    mechanism has the least largest variance at equal epsilon (scale = each l1 factor for the
    person): tight runs it there, and a learner built for that person runs it end to end."""
    ranked = person_ranking(horizon, k, b, "laplace", _RANKING["laplace"])
    assert ranked[0] == ("smooth_binary", pytest.approx(smooth))
    assert dict(ranked)["kary_tree"] == pytest.approx(kary)
    assert best_mechanism(horizon, 1, "laplace") == "kary_tree"
    got = best_mechanism(horizon, 1, "laplace", participations=k, min_separation=b)
    assert got == "smooth_binary"
    budget = PrivacyBudget(1.0, participations=k, min_separation=b)
    learner = DPFTRL(2, horizon, budget=budget, noise="laplace", rng=0)
    assert learner.counter.name == "smooth_binary"
    for _ in range(horizon):
        assert np.all(np.isfinite(learner.act()))
        learner.observe(LossVectorFeedback(np.full((1, 2), 0.1)))


def test_the_pattern_is_checked_even_when_nothing_fits():
    with pytest.raises(ValueError, match="participations"):
        best_mechanism(1024, 10**8, "gaussian", participations=0)


@pytest.mark.parametrize("horizon", [1, 7, 64, 1000, 1024, 4097])
def test_the_memory_rule_counts_the_state_a_counter_holds(horizon):
    """The rule counted levels + 2 vectors for the binary tree and Honaker's estimator, which
    hold 2 levels + 1 (an exact and a noisy node per level, the release): at T = 1024 and
    d = 400,000 Laplace chose Honaker's as fitting 64 MiB (41.6 MB counted) and built 73.6 MB.
    Every ranked mechanism's count now equals the bytes of its state arrays."""
    from dponline.continual.registry import get_mechanism
    from dponline.privacy.noise import GaussianNoise, LaplaceNoise

    for noise, names in _RANKING.items():
        for name in names:
            draw = LaplaceNoise(1.0) if noise == "laplace" else GaussianNoise(1.0)
            counter = get_mechanism(name)(horizon, 3, draw, replicas=2)
            held = sum(getattr(counter, f"_{a}").nbytes for a in counter.state_arrays)
            assert state_bytes(name, horizon, 3, replicas=2) == held, (name, noise)
    with pytest.raises(ValueError, match="no memory model"):
        state_bytes("padded_tree", 64, 3)


def test_long_horizons_choose_for_a_person_without_reading_every_round():
    """The BLT's person sums are closed forms, so it is scored at every horizon (it won 167.88
    against the rescaled square root's 172.85 at T = 10^6, 4 rounds 10^5 apart, where the square
    root was taken unscored before); past PERSON_TREE_HORIZON the trees are not scored (their
    exact variances cost O(T)): 10^8 rounds choose the BLT, Laplace noise the k-ary tree."""
    ranked = dict(person_ranking(10**6, 4, 10**5, "gaussian", ("scaled_sqrt", "blt")))
    assert ranked["blt"] == pytest.approx(167.88, abs=0.01)
    assert ranked["scaled_sqrt"] == pytest.approx(172.85, abs=0.01)
    assert best_mechanism(10**6, 1, "gaussian", participations=4, min_separation=10**5) == "blt"
    assert best_mechanism(10**8, 1, "gaussian", participations=4, min_separation=1000) == "blt"
    assert best_mechanism(10**8, 1, "laplace", participations=4, min_separation=1000) == "kary_tree"
