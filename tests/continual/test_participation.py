"""User-level sensitivity of every counter (dponline.continual.participation): exact values
checked against brute force over every allowed participation set and sign, for every registered
mechanism (new ones are covered by the registry loop), golden values, and the calibration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.continual import participation as P
from dponline.continual.base import ContinualCounter
from dponline.continual.blt import BLTCounter, optimise_blt
from dponline.continual.calibration import CounterCalibrator, calibrate_counter
from dponline.continual.factory import build_counter
from dponline.continual.registry import MECHANISMS
from dponline.privacy.accounting import gaussian_sigma
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyNotion


def brute_force(strategy: np.ndarray, k: int, b: int) -> tuple[float, float]:
    """(max ||C s||_2^2, max ||C s||_1) over every allowed set and every sign vector s of
    scalar contributions in [-1, 1] (extreme points suffice: both norms are convex)."""
    c = np.asarray(strategy, dtype=float)
    t = c.shape[1]
    best2 = best1 = 0.0
    for pattern in P.allowed_patterns(t, k, b):
        cols = c[:, list(pattern)]
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(pattern))))
        v = cols @ signs.T  # (draws, 2^m)
        best2 = max(best2, float((v * v).sum(axis=0).max()))
        best1 = max(best1, float(np.abs(v).sum(axis=0).max()))
    return best2, best1


def patterns_by_brute_force(t: int, k: int, b: int) -> set[tuple[int, ...]]:
    return {
        s
        for m in range(1, k + 1)
        for s in itertools.combinations(range(t), m)
        if all(y - x >= b for x, y in itertools.pairwise(s))
    }


@pytest.mark.parametrize(("t", "k", "b"), [(7, 3, 2), (9, 2, 1), (10, 4, 3), (5, 9, 1), (6, 2, 6)])
def test_allowed_patterns_are_exactly_the_min_separated_sets(t, k, b):
    got = list(P.allowed_patterns(t, k, b))
    assert len(got) == len(set(got)) == P.count_patterns(t, k, b)
    assert set(got) == patterns_by_brute_force(t, k, b)


def test_effective_participations_and_validation():
    assert P.effective_participations(1024, 4, 256) == 4
    assert P.effective_participations(1024, 5, 256) == 4
    assert P.effective_participations(1025, 5, 256) == 5
    assert P.effective_participations(10, 3, 20) == 1
    for bad, err in [(0, ValueError), (-1, ValueError), (True, TypeError), (1.5, TypeError)]:
        with pytest.raises(err, match="participations"):
            P.check_pattern(10, bad, 1)
        with pytest.raises(err, match="min_separation"):
            P.check_pattern(10, 2, bad)


# TensorFlow Privacy's single-tree accountant tests, (k, s, steps) -> sens^2, with its
# min_separation s = b - 1 (rounds strictly between two participations).
@pytest.mark.parametrize(
    ("k", "s", "steps", "expected"),
    [
        (1, 7, 8, 4),
        (3, 3, 9, 11),
        (3, 2, 7, 9),
        (8, 2, 24, 88),
        (8, 0, 8, 120),  # every round: 2^d (2^(d+1) - 1) per one-bit d of T
        (9, 0, 9, 121),
        (2, 0, 8, 2 + 4 * 3),  # two consecutive rounds: 2 + 4 floor(log2 T)
        (2, 0, 1000, 2 + 4 * 9),
    ],
)
def test_tree_golden_values(k, s, steps, expected):
    assert P.tree_participation_sq(steps, k, s + 1) == expected


def test_tree_recursion_matches_exhaustive_search_on_the_node_matrix():
    for t in range(1, 13):
        x = P.tree_node_matrix(t).T @ P.tree_node_matrix(t)
        for k in range(1, 5):
            for b in (1, 2, 3, 5, t):
                assert P.tree_participation_sq(t, k, b) == round(
                    P.quadratic_participation_sq(x, k, b)
                ), (t, k, b)


def test_tree_level_bound_is_an_upper_bound_and_flagged(monkeypatch):
    for t, k, b in [(64, 4, 5), (100, 3, 7), (37, 6, 1)]:
        assert P._tree_level_bound_sq(t, k, b) >= P.tree_participation_sq(t, k, b)
    monkeypatch.setattr(P, "TREE_WORK_LIMIT", 0)
    got = P.tree_participation(64, 4, 5)
    assert not got.l2_exact and got.l2**2 >= P.tree_participation_sq(64, 4, 5)
    assert "on its own" in got.method


# Brute force over every allowed set and sign for every registered mechanism: a mechanism
# added to the registry is checked here without any change to this file. A BLT optimisation
# per horizon and pattern costs about a second, so the grid is split: one fast corner (whose
# optimisations the other fast tests reuse) and a slow sweep.
FAST_GRID = [(8, 2, 3)]
SLOW_GRID = [(t, k, b) for t in (5, 9, 12) for k in (2, 3, 4) for b in (1, 2, 4)]


def check_mechanism(cls: type[ContinualCounter], t: int, k: int, b: int) -> None:
    got = cls.participation_sensitivity_factors(t, k, b)
    strategy = cls.participation_strategy_matrix(t, k, b)
    assert strategy.shape[1] == t
    sq, l1 = brute_force(strategy, k, b)
    assert got.effective_participations == P.effective_participations(t, k, b)
    if got.l2_exact:
        assert got.l2**2 == pytest.approx(sq, rel=1e-9), (cls.name, t, k, b)
    else:
        assert got.l2**2 >= sq * (1 - 1e-12), (cls.name, t, k, b)
    if got.l1_exact:
        assert got.l1 == pytest.approx(l1, rel=1e-9), (cls.name, t, k, b)
    else:
        assert got.l1 >= l1 * (1 - 1e-12)
    # l1: at most k_eff times the single l1 factor (module docstring's proof)
    single_l1 = np.abs(strategy).sum(axis=0).max()
    assert got.l1 <= got.effective_participations * single_l1 * (1 + 1e-12)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize(("t", "k", "b"), FAST_GRID)
def test_every_mechanism_matches_brute_force(name, t, k, b):
    check_mechanism(MECHANISMS[name], t, k, b)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_mechanism_matches_brute_force_sweep(name):
    for t, k, b in SLOW_GRID:
        check_mechanism(MECHANISMS[name], t, k, b)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_strategy_matrix_agrees_with_single_participation_factors(name):
    cls = MECHANISMS[name]
    for t in (1, 8):
        c = cls.strategy_matrix(t)
        l1, l2 = cls.sensitivity_factors(t)
        assert np.abs(c).sum(axis=0).max() == pytest.approx(l1, rel=1e-9)
        assert np.sqrt((c * c).sum(axis=0)).max() == pytest.approx(l2, rel=1e-9)
        one = cls.participation_sensitivity_factors(t, 1, 1)
        assert one.l2 == pytest.approx(l2, rel=1e-9) and one.l1 == pytest.approx(l1, rel=1e-9)


def test_tree_mechanisms_share_the_node_matrix_and_its_sensitivity():
    for name in ("binary_tree", "padded_tree", "honaker"):
        cls = MECHANISMS[name]
        assert np.array_equal(cls.strategy_matrix(11), P.tree_node_matrix(11))
        got = cls.participation_sensitivity_factors(1024, 4, 256)
        # rounds 0, 256, 512, 768: 9 levels alone, two pairs at 512, all four at 1024
        assert got.l2**2 == pytest.approx(4 * 9 + 2 * 4 + 16) and got.l2_exact
        assert got.l1 == 4 * 11  # every column enters 11 nodes: k times the single l1


def test_toeplitz_rule_and_its_upper_bound():
    c = np.array([1.0, 0.6, 0.5, 0.2, 0.1, 0.05])
    sq, exact = P.toeplitz_participation_sq(c, 2, 2)
    assert exact
    s = c.copy()
    s[2:] += c[:4]
    assert sq == pytest.approx(float(s @ s))
    assert sq == pytest.approx(brute_force(P_toeplitz(c), 2, 2)[0])
    bumpy = np.array([1.0, -0.2, 0.5, 0.1, 0.3, 0.0])
    up, exact = P.toeplitz_participation_sq(bumpy, 3, 2)
    assert not exact and up >= brute_force(P_toeplitz(bumpy), 3, 2)[0]


def P_toeplitz(c: np.ndarray) -> np.ndarray:
    i = np.arange(c.size)
    d = i[:, None] - i[None, :]
    return np.where(d >= 0, c[np.clip(d, 0, None)], 0.0)


def test_generic_routine_branches():
    # orthogonal columns (not Toeplitz): the best separated sum of squared norms
    scales = np.array([1.0, 3.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 2.0, 1.0])
    got = P.strategy_participation(np.diag(scales), 3, 4)
    assert got.l2**2 == pytest.approx(9 + 4) and got.l2_exact and "orthogonal" in got.method
    assert got.l2**2 == pytest.approx(brute_force(np.diag(scales), 3, 4)[0])
    # a nonnegative non-Toeplitz strategy: exhaustive search, exact
    rng = np.random.default_rng(0)
    c = rng.random((7, 9))
    got = P.strategy_participation(c, 3, 2)
    assert got.l2_exact and "exhaustive" in got.method
    assert got.l2**2 == pytest.approx(brute_force(c, 3, 2)[0])
    # the same with the search forbidden: VecSens, an upper bound, flagged
    up = P.strategy_participation(c, 3, 2, exhaustive_limit=0)
    assert not up.l2_exact and "VecSens" in up.method and up.l2 >= got.l2
    # mixed signs: an upper bound, flagged, above the brute force over signs
    mixed = rng.standard_normal((6, 8))
    got = P.strategy_participation(mixed, 3, 2)
    sq, l1 = brute_force(mixed, 3, 2)
    assert not got.l2_exact and got.l2**2 >= sq and not got.l1_exact and got.l1 >= l1


def test_a_mechanism_without_strategy_matrix_has_no_user_level_sensitivity():
    class Opaque(ContinualCounter):
        name = "opaque"

        @classmethod
        def sensitivity_factors(cls, horizon):
            return 1.0, 1.0

        @classmethod
        def release_variances(cls, horizon, noise, dim):
            return np.ones(horizon)

        def variance(self, t):
            return 1.0

        def _step(self, x):
            return x

    with pytest.raises(ValueError, match="Opaque states no strategy_matrix"):
        Opaque.participation_sensitivity_factors(8, 2, 1)


def test_blt_for_the_pattern():
    t, k, b = 8, 2, 3
    # one participation: exactly the single-participation optimisation
    assert optimise_blt(t, 4, 1, 1) is optimise_blt(t)
    assert optimise_blt(t, 4, 3, 8) is optimise_blt(t)  # b >= T: one round fits
    single, person = optimise_blt(t), optimise_blt(t, 4, k, b)
    assert person.participation_max_variance(t, k, b) <= single.participation_max_variance(t, k, b)
    got = BLTCounter.participation_sensitivity_factors(t, k, b)
    sq, exact = person.participation_sensitivity_sq(t, k, b)
    assert got.l2 == pytest.approx(math.sqrt(sq)) and got.l2_exact == exact
    # the counter a user-level calibration builds uses those parameters
    budget = PrivacyBudget(1.0, 1e-6, participations=k, min_separation=b)
    counter = build_counter(budget, horizon=t, bounds=Box(0, 1, dim=2), mechanism="blt")
    assert counter.parameters is person
    assert counter.privacy.participations == k
    sigma = gaussian_sigma(got.l2 * math.sqrt(2), 1.0, 1e-6)
    assert counter.noise.sigma == pytest.approx(sigma)
    assert np.allclose(
        counter.variances(),
        BLTCounter.participation_release_variances(t, counter.noise, 2, k, b),
    )


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_user_level_calibration_uses_the_pattern(name):
    t, k, b = 8, 2, 3
    cls = MECHANISMS[name]
    bounds = Box(0, 1, dim=3)
    pattern = cls.participation_sensitivity_factors(t, k, b)
    person = PrivacyBudget(0.5, 1e-6, participations=k, min_separation=b)
    cal = calibrate_counter(cls, horizon=t, bounds=bounds, budget=person)
    assert cal.noise.sigma == pytest.approx(gaussian_sigma(pattern.l2 * math.sqrt(3), 0.5, 1e-6))
    g = cal.guarantee
    assert (g.participations, g.min_separation) == (k, b)
    assert g.notion is PrivacyNotion.USER_LEVEL_DP
    assert "one person: at most 2 rounds, at least 3 apart" in str(g)
    assert "one person's at most 2 rounds" in g.derivation
    # one participation is the event-level calibration, unchanged
    single = calibrate_counter(cls, horizon=t, bounds=bounds, budget=PrivacyBudget(0.5, 1e-6))
    one = calibrate_counter(
        cls, horizon=t, bounds=bounds, budget=PrivacyBudget(0.5, 1e-6, participations=1)
    )
    assert one.noise.sigma == single.noise.sigma and one.guarantee == single.guarantee
    assert cal.noise.sigma > single.noise.sigma
    if "laplace" in cls.supported_noise:
        lap = calibrate_counter(
            cls,
            horizon=t,
            bounds=bounds,
            budget=PrivacyBudget(0.5, 0.0, participations=k, min_separation=b),
            noise="laplace",
        )
        assert lap.noise.b == pytest.approx(pattern.l1 * 3 / 0.5)
        assert lap.guarantee.participations == k


def test_user_level_refusals():
    bounds = Box(0, 1, dim=2)
    person = PrivacyBudget(1.0, 1e-6, participations=2, min_separation=3)
    with pytest.raises(ValueError, match="not proven for one person's several rounds"):
        calibrate_counter(
            "binary_tree",
            horizon=16,
            bounds=bounds,
            budget=person,
            noise="generalized_gaussian",
            regular_norm=2.0,
        )
    paper = PrivacyBudget(1.0, 0.0, "paper", participations=2, min_separation=3)
    with pytest.raises(ValueError, match=r"event-level formula.*use calibration='tight'"):
        calibrate_counter("padded_tree", horizon=16, bounds=bounds, budget=paper, noise="laplace")
    assert CounterCalibrator.supports_participation is True


def test_past_the_strategy_limit_the_triangle_inequality_bounds_the_person(monkeypatch):
    import dponline.continual.base as base

    monkeypatch.setattr(base, "STRATEGY_LIMIT", 8)
    cls = MECHANISMS["sqrt_factorization"]  # any class with a strategy matrix
    got = base._participation_from_strategy(cls, 11, 3, 2)
    l1, l2 = cls.sensitivity_factors(11)
    assert not got.l2_exact and "triangle" in got.method
    assert got.l2 == pytest.approx(3 * l2) and got.l1 == pytest.approx(3 * l1)
    assert got.l2 >= cls.participation_sensitivity_factors(11, 3, 2).l2


def test_toeplitz_l1_takes_the_earliest_rounds_b_apart():
    """A Toeplitz strategy's column l1 norms do not increase, so the best separated sum is the
    columns 0, b, 2b, ...: the shortcut agrees with the general recursion, whatever the signs."""
    from dponline.continual.matrix_factorization import toeplitz_participation

    rng = np.random.default_rng(3)
    for t, k, b in [(1, 1, 1), (7, 3, 2), (20, 4, 5), (33, 10, 1), (50, 2, 49)]:
        for c in (rng.random(t), rng.normal(size=t)):
            got = toeplitz_participation(lambda n, c=c: c[:n], t, k, b)
            col_l1 = np.cumsum(np.abs(c))[::-1]
            assert got.l1 == pytest.approx(P.best_separated_sum(col_l1, k, b), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    t=st.integers(1, 10),
    k=st.integers(1, 4),
    b=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    constant=st.booleans(),
)
def test_weighted_toeplitz_bound_brackets_the_exact_value(t, k, b, seed, constant):
    """C = diag(sqrt(w)) S with S Toeplitz of nonnegative non-increasing coefficients and any
    w >= 0: the bound's lower value is attained by a pattern, the exact maximum over every
    allowed set lies between the two, and for constant w the bound is exact (the proof in
    weighted_toeplitz_participation_sq); the cruder fallback is valid too."""
    rng = np.random.default_rng(seed)
    c = np.sort(rng.random(t))[::-1]
    w = np.full(t, rng.random() + 0.1) if constant else rng.random(t) * 3.0
    s = c[np.clip(np.subtract.outer(np.arange(t), np.arange(t)), 0, None)]
    s = np.where(np.subtract.outer(np.arange(t), np.arange(t)) >= 0, s, 0.0)
    strategy = np.sqrt(w)[:, None] * s
    exact = P.quadratic_participation_sq(strategy.T @ strategy, k, b)
    upper, lower = P.weighted_toeplitz_participation_sq(c, w, k, b)
    assert lower <= exact * (1 + 1e-12) + 1e-12
    assert exact <= upper * (1 + 1e-12)
    if constant:
        assert upper == pytest.approx(exact, rel=1e-8, abs=1e-12)
    crude, crude_lower = P.weighted_toeplitz_participation_sq(c, w, k, b, fft_limit=0)
    assert crude_lower == lower and exact <= crude * (1 + 1e-12)


def test_weighted_toeplitz_refuses_what_its_proof_does_not_cover():
    with pytest.raises(ValueError, match="non-increasing"):
        P.weighted_toeplitz_participation_sq(np.array([0.5, 1.0]), np.ones(2), 2, 1)
    with pytest.raises(ValueError, match="nonnegative weights"):
        P.weighted_toeplitz_participation_sq(np.array([1.0, 0.5]), np.array([1.0, -1.0]), 2, 1)
    with pytest.raises(ValueError, match="shape"):
        P.weighted_toeplitz_participation_sq(np.array([1.0, 0.5]), np.ones(3), 2, 1)


def test_rescaled_square_root_person_bound_at_long_horizons():
    """Past 4,096 rounds the rescaled square root was charged k_eff times one round's
    sensitivity: 67.04 squared at T = 16,384 for 4 rounds 2,048 apart, where a pattern reaches
    28.16; the row-weighted Toeplitz bound is within 0.01% of that pattern, without the T x T
    matrix. Below the limit it is no looser than the VecSens bound on the materialised matrix
    by more than 0.03%, and its l1 factor is the exact one."""
    cls = MECHANISMS["scaled_sqrt"]
    far = cls.participation_sensitivity_factors(16384, 4, 2048)
    from dponline.continual.matrix_factorization import sqrt_coefficients
    from dponline.continual.scaled_sqrt import scaled_sqrt_diagonal

    weights = scaled_sqrt_diagonal(16384) ** -2.0
    _, lower = P.weighted_toeplitz_participation_sq(sqrt_coefficients(16384), weights, 4, 2048)
    assert 28.16 <= lower <= far.l2**2 <= lower * 1.0001
    charged_before = P.triangle_bound(cls.sensitivity_factors(16384), 16384, 4, 2048)
    assert far.l2**2 < 0.5 * charged_before.l2**2
    for t, k, b in [(1024, 16, 1), (1024, 4, 256), (300, 3, 7)]:
        got = cls.participation_sensitivity_factors(t, k, b)
        generic = P.strategy_participation(cls.strategy_matrix(t), k, b)
        assert got.l2 <= generic.l2 * 1.0003
        assert got.l1 == pytest.approx(generic.l1, rel=1e-9) and got.l1_exact


@pytest.mark.parametrize(("t", "k", "b"), [(9, 3, 2), (12, 2, 1), (13, 4, 3), (27, 2, 9)])
def test_kary_tree_past_the_strategy_limit_matches_brute_force(monkeypatch, t, k, b):
    """Past the limit the k-ary tree's l1 factor is the exact best separated sum of its column
    norms and its l2 factor each level's cells maximised on their own: checked against every
    allowed set and sign on the materialised cells, with the limit lowered."""
    import dponline.continual.kary_tree as kary

    monkeypatch.setattr(kary, "STRATEGY_LIMIT", 1)
    for layout in [(3, 2), (3, 3), (5, 2)]:
        cls = kary.KaryTreeCounter.with_layout(*layout)
        got = cls.participation_sensitivity_factors(t, k, b)
        sq, l1 = brute_force(cls.strategy_matrix(t), k, b)
        assert got.l1_exact and got.l1 == pytest.approx(l1, rel=1e-12), layout
        assert got.l2**2 >= sq * (1 - 1e-12), layout
        assert "each level" in got.method


@pytest.mark.parametrize(
    ("t", "k", "b"), [(9, 3, 2), (12, 2, 1), (20, 4, 3), (10, 10, 1), (27, 2, 9)]
)
def test_smooth_binary_past_its_search_limit_bounds_the_person(monkeypatch, t, k, b):
    """Past the search limit the smooth binary mechanism's l1 factor is the exact best separated
    sum of its column counts and its l2^2 at most k_eff l1: checked against every allowed set
    and sign on the materialised strategy, with the limit lowered; within the limit the search
    is unchanged."""
    import dponline.continual.smooth_binary as sb

    searched = sb.SmoothBinaryCounter.participation_sensitivity_factors(t, k, b)
    monkeypatch.setattr(sb, "PERSON_SEARCH_LIMIT", 1)
    got = sb.SmoothBinaryCounter.participation_sensitivity_factors(t, k, b)
    sq, l1 = brute_force(sb.SmoothBinaryCounter.strategy_matrix(t), k, b)
    assert got.l1_exact and got.l1 == pytest.approx(l1, rel=1e-12) == searched.l1
    assert got.l2**2 >= sq * (1 - 1e-12) and "no search" in got.method
    assert searched.l2**2 == pytest.approx(sq, rel=1e-9) or not searched.l2_exact
    assert searched.l2**2 >= sq * (1 - 1e-12)


def test_kary_tree_person_factors_at_long_horizons():
    """At T = 16,384, 4 rounds 2,048 apart, the k-ary tree was charged k_eff times one round:
    l1 16 (exact, now flagged so) and l2^2 64. Its layout is 13-ary with 4 levels: the cells of
    the three lower levels (up to 169 rounds) hold one round each, the top level's (2,197
    rounds) at most two: 4 + 4 + 4 + 2 x 2^2 = 20."""
    got = MECHANISMS["kary_tree"].participation_sensitivity_factors(16384, 4, 2048)
    assert (got.l1, got.l1_exact) == (16.0, True)
    assert got.l2**2 == pytest.approx(20.0) and not got.l2_exact


def test_best_separated_sum_shortcut_agrees_with_the_recursion():
    """k copies of the largest value b apart end the search at once; the recursion agrees."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        t, k, b = int(rng.integers(1, 30)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
        v = rng.integers(-2, 4, size=t).astype(float)
        got = P.best_separated_sum(v, k, b)
        stacked = P.best_separated_sum(v[None, :], k, b)[0]  # 2-D input takes no shortcut
        assert got == pytest.approx(stacked, abs=1e-12)


@pytest.mark.parametrize(("t", "k", "b"), [(9, 3, 2), (12, 2, 1), (13, 4, 3), (27, 2, 9)])
def test_kary_tree_past_its_exact_horizon_bounds_the_person(monkeypatch, t, k, b):
    """Past EXACT_HORIZON (2^22 rounds) the k-ary tree charges k_eff times its levels in l1 and
    each level's cells in l2, without its O(T) column norms: upper bounds, checked against
    every allowed set and sign with the limits lowered."""
    import dponline.continual.kary_tree as kary

    monkeypatch.setattr(kary, "STRATEGY_LIMIT", 1)
    monkeypatch.setattr(kary, "EXACT_HORIZON", 1)
    for layout in [(3, 2), (3, 3), (5, 2)]:
        cls = kary.KaryTreeCounter.with_layout(*layout)
        got = cls.participation_sensitivity_factors(t, k, b)
        sq, l1 = brute_force(cls.strategy_matrix(t), k, b)
        assert got.l1 >= l1 * (1 - 1e-12) and got.l2**2 >= sq * (1 - 1e-12), layout
        assert not got.l1_exact and not got.l2_exact
