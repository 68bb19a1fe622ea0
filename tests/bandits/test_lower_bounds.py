"""Regret lower bounds: the notes' table pinned, hand values, orderings and argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.bandits.lower_bounds import (
    azize_2025_coefficient,
    azize_basu_2022_coefficient,
    lai_robbins_coefficient,
    lower_bound_coefficients,
    minimax_lower_bound,
    regret_lower_bound_curve,
)
from dponline.privacy.arguments import ArgumentError

MEANS = (0.75, 0.625, 0.5, 0.375, 0.25)


def _kl(p, q):
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


@pytest.mark.parametrize(
    ("eps", "lai", "y2022", "y2025"),
    [
        (0.1, 7.128, 8.352, 41.677),
        (0.5, 7.128, 7.128, 10.405),
        (1.0, 7.128, 7.128, 7.708),
        (10.0, 7.128, 7.128, 7.128),
    ],
)
def test_the_table_of_the_notes(eps, lai, y2022, y2025):
    got = lower_bound_coefficients(MEANS, eps)
    assert round(got["lai_robbins"], 3) == lai
    assert round(got["azize_basu_2022"], 3) == y2022
    assert round(got["azize_2025"], 3) == y2025


def test_lai_robbins_by_hand():
    expected = sum((0.75 - m) / _kl(m, 0.75) for m in MEANS[1:])
    assert lai_robbins_coefficient(MEANS) == pytest.approx(expected, rel=1e-14)
    assert lai_robbins_coefficient([0.5, 0.5, 0.5]) == 0.0
    # mu* = 1: no Bernoulli law with a larger mean, kl = inf, the arm adds 0
    assert lai_robbins_coefficient([1.0, 0.5]) == 0.0


def test_2022_bound_by_hand_in_the_private_regime():
    # eps = 0.01: 6 eps Delta < kl for every arm, so the coefficient is (K - 1) / (6 eps)
    sub = MEANS[1:]
    assert all(6 * 0.01 * (0.75 - m) < _kl(m, 0.75) for m in sub)
    assert azize_basu_2022_coefficient(MEANS, 0.01) == pytest.approx(4 / 0.06, rel=1e-14)
    # eps = 0.1: the two closest arms (0.625, 0.5) are in the kl regime, the others in the
    # private one
    by_hand = 0.125 / _kl(0.625, 0.75) + 0.25 / _kl(0.5, 0.75) + 2 / 0.6
    assert 0.6 * 0.25 > _kl(0.5, 0.75) and 0.6 * 0.375 < _kl(0.375, 0.75)
    assert azize_basu_2022_coefficient(MEANS, 0.1) == pytest.approx(by_hand, rel=1e-14)
    assert azize_basu_2022_coefficient(MEANS, math.inf) == lai_robbins_coefficient(MEANS)


def test_orderings_and_limits():
    rng = np.random.default_rng(0)
    for _ in range(200):
        means = rng.random(rng.integers(2, 8))
        eps = float(10 ** rng.uniform(-3, 2))
        lai = lai_robbins_coefficient(means)
        b22 = azize_basu_2022_coefficient(means, eps)
        b25 = azize_2025_coefficient(means, eps)
        assert lai <= b22 * (1 + 1e-12) and b22 <= b25 * (1 + 1e-12)
        # d_eps <= eps Delta: the 2025 coefficient is at least (number of worse arms) / eps
        worse = int(np.sum(means < means.max()))
        assert b25 >= worse / eps * (1 - 1e-12)
    assert azize_2025_coefficient(MEANS, math.inf) == pytest.approx(lai_robbins_coefficient(MEANS))
    # smaller eps, larger bound
    values = [azize_2025_coefficient(MEANS, e) for e in (0.01, 0.1, 0.5, 1.0, 10.0)]
    assert values == sorted(values, reverse=True)


def test_minimax_bound():
    t = np.array([4.0, 100.0, 1e6])
    np.testing.assert_allclose(
        minimax_lower_bound(t, 5, 0.01), np.maximum(np.sqrt(4 * t) / 27, 4 / 1.31)
    )
    assert float(minimax_lower_bound(1e6, 5, 0.01)) == pytest.approx(2000 / 27)
    assert float(minimax_lower_bound(4, 5, 0.001)) == pytest.approx(4 / 0.131)
    assert float(minimax_lower_bound(100, 2, math.inf)) == pytest.approx(10 / 27)
    with pytest.raises(ArgumentError):
        minimax_lower_bound(3, 5, 1.0)  # T < K - 1
    with pytest.raises(ArgumentError):
        minimax_lower_bound(10, 1, 1.0)


def test_curve_is_the_largest_coefficient_times_log_t():
    rounds = np.array([1, 10, 1000, 10**5])
    curve = regret_lower_bound_curve(MEANS, 0.5, rounds)
    np.testing.assert_allclose(curve, azize_2025_coefficient(MEANS, 0.5) * np.log(rounds))
    assert curve[0] == 0.0
    np.testing.assert_allclose(
        regret_lower_bound_curve(MEANS, math.inf, rounds),
        lai_robbins_coefficient(MEANS) * np.log(rounds),
    )


@pytest.mark.parametrize(
    "bad_means", [[0.5], [[0.1, 0.2]], [0.2, 1.2], [0.2, np.nan], "0.5", [0.1, -0.1]]
)
def test_bad_means_are_refused(bad_means):
    with pytest.raises(ArgumentError):
        lai_robbins_coefficient(bad_means)


@pytest.mark.parametrize("bad_eps", [0.0, -1.0, np.nan, "x", None, True])
def test_bad_epsilons_are_refused(bad_eps):
    with pytest.raises(ArgumentError):
        azize_2025_coefficient(MEANS, bad_eps)
    with pytest.raises(ArgumentError):
        azize_basu_2022_coefficient(MEANS, bad_eps)


def test_bad_rounds_are_refused():
    with pytest.raises(ArgumentError):
        regret_lower_bound_curve(MEANS, 1.0, [0, 10])
