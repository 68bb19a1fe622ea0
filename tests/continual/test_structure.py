"""Exact structure of the continual counters: releases with constant noise, variances
against materialised strategy matrices, closed forms from the notes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.continual import (
    BinaryTreeCounter,
    HonakerCounter,
    HorizonExceededError,
    PaddedTreeCounter,
    SqrtFactorizationCounter,
)
from dponline.continual.honaker import honaker_node_variances
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.continual.padded_tree import padded_draws
from dponline.privacy.noise import GaussianNoise, LaplaceNoise
from tests.helpers import ConstantNoise, CountingNoise

TREES = [BinaryTreeCounter, PaddedTreeCounter, HonakerCounter]
ALL = [*TREES, SqrtFactorizationCounter]


def run(counter, xs):
    return np.stack([counter.step(x) for x in xs])


@given(T=st.integers(1, 300))
@settings(max_examples=40, deadline=None)
def test_binary_tree_constant_noise_release_is_popcount(T):
    c = BinaryTreeCounter(T, 1, ConstantNoise(1.0))
    out = run(c, np.zeros((T, 1)))[:, 0, 0]
    assert np.array_equal(out, [bin(t).count("1") for t in range(1, T + 1)])


@pytest.mark.parametrize("T", [1, 2, 3, 7, 8, 100, 1023, 1024, 1025, 10_000])
def test_binary_tree_max_variance_closed_form(T):
    sigma = 1.7
    c = BinaryTreeCounter(T, 3, GaussianNoise(sigma))
    L = math.ceil(math.log2(T + 1))
    assert c.max_variance == pytest.approx(L * 0 + math.floor(math.log2(T + 1)) * sigma**2)
    # Notes: at sensitivity^2 = ceil(log2(T+1)) per node variance, max = ceil * floor.
    l1, l2 = BinaryTreeCounter.sensitivity_factors(T)
    assert l1 == L and l2**2 == pytest.approx(L)
    unit = BinaryTreeCounter(T, 1, GaussianNoise(math.sqrt(L)))
    assert unit.max_variance == pytest.approx(
        math.ceil(math.log2(T + 1)) * math.floor(math.log2(T + 1))
    )


@given(T=st.integers(1, 200), data=st.data())
@settings(max_examples=40, deadline=None)
def test_prefix_sums_exact_without_noise(T, data):
    d = 2
    xs = np.array(
        data.draw(
            st.lists(st.lists(st.floats(-5, 5), min_size=d, max_size=d), min_size=T, max_size=T)
        )
    )
    for cls in ALL:
        c = cls(T, d, GaussianNoise(0.0), replicas=2)
        out = run(c, xs)
        np.testing.assert_allclose(
            out, np.broadcast_to(np.cumsum(xs, 0)[:, None], out.shape), atol=1e-9
        )


@pytest.mark.parametrize("T", [1, 2, 5, 8, 13, 64, 100])
def test_padded_tree_every_release_has_exactly_ceil_log_T_draws(T):
    P = max(1, math.ceil(math.log2(T)))
    assert padded_draws(T) == P
    count = [0]
    c = PaddedTreeCounter(T, 1, CountingNoise(count))
    assert count[0] == P  # L~_0 is a sum of P draws (Algorithm 1, lines 2-3)
    assert c.initial_release()[0, 0] == P
    out = run(c, np.zeros((T, 1)))[:, 0, 0]
    assert np.all(out == P)  # each release: tree nodes + padding = P ones
    assert all(c.variance(t) == P for t in range(T + 1))


def _tree_strategy(T, levels_used="all"):
    """Materialised node matrix: rows = dyadic nodes inside [1, T], columns = rounds."""
    rows, nodes = [], []
    h = 0
    while 2**h <= T:
        for k in range(T // 2**h):
            r = np.zeros(T)
            r[k * 2**h : (k + 1) * 2**h] = 1
            rows.append(r)
            nodes.append((h, k))
        h += 1
    return np.array(rows), nodes


@pytest.mark.parametrize("T", [1, 6, 16, 37])
def test_tree_sensitivity_factor_matches_materialised_tree(T):
    M, _ = _tree_strategy(T)
    l1, l2 = BinaryTreeCounter.sensitivity_factors(T)
    assert np.abs(M).sum(axis=0).max() == l1
    assert np.sqrt((M**2).sum(axis=0)).max() == pytest.approx(l2)


@pytest.mark.parametrize("T", [1, 5, 16, 50])
def test_sqrt_factorization_against_materialised_matrix(T):
    c = sqrt_coefficients(T)
    C = np.zeros((T, T))
    for i in range(T):
        C[i, : i + 1] = c[i::-1]
    A = np.tril(np.ones((T, T)))
    np.testing.assert_allclose(C @ C, A, atol=1e-12)
    for k in range(T):
        assert c[k] == pytest.approx(math.comb(2 * k, k) / 4**k, rel=1e-12)
    l1, l2 = SqrtFactorizationCounter.sensitivity_factors(T)
    assert l2 == pytest.approx(np.sqrt((C**2).sum(axis=0)).max())
    assert l1 == pytest.approx(np.abs(C).sum(axis=0).max())
    mech = SqrtFactorizationCounter(T, 1, GaussianNoise(2.0))
    np.testing.assert_allclose(mech.variances(), 4.0 * np.diag(C @ C.T))


@pytest.mark.parametrize("T", [1, 3, 8, 21])
def test_honaker_variances_against_generalised_least_squares_weights(T):
    """Honaker's recursion equals inverse-variance weighting: check v_h by brute force."""
    v = honaker_node_variances(8)
    expected = [1.0]
    for _ in range(7):
        expected.append(1 / (1 + 1 / (2 * expected[-1])))
    np.testing.assert_allclose(v, expected)
    # Monte Carlo-free check of the release variance: the estimate is linear in the node
    # noises; recover the coefficients by feeding unit noise through one node at a time.
    mech = HonakerCounter(T, 1, GaussianNoise(1.0))
    assert mech.variances().shape == (T,)
    for t in range(1, T + 1):
        bits = [h for h in range(t.bit_length()) if (t >> h) & 1]
        assert mech.variance(t) == pytest.approx(sum(v[h] for h in bits))


def test_honaker_release_is_linear_unbiased_with_exact_variance():
    """Empirical variance of Honaker releases matches the exact formula (all replicas)."""
    T, R = 16, 40_000
    mech = HonakerCounter(T, 1, GaussianNoise(1.0), replicas=R, rng=5)
    out = run(mech, np.zeros((T, 1)))[:, :, 0]
    # var estimate relative sd ~ sqrt(2/R) = 0.7%; 6 sd tolerance -> false failure < 1e-8 each
    np.testing.assert_allclose(out.var(axis=1), mech.variances(), rtol=6 * math.sqrt(2 / R))
    assert np.all(np.abs(out.mean(axis=1)) <= 6 * np.sqrt(mech.variances() / R))


def test_notes_table_at_rho_half():
    """Max variances at rho = 1/2, unit l2 sensitivity, from ../shared/notes/continual-counting."""
    expected = {
        2**10: (110, 63.8, 10.7),
        2**16: (272, 149.7, 21.1),
    }
    for T, (tree, hon, sq) in expected.items():
        got = []
        for cls in (BinaryTreeCounter, HonakerCounter, SqrtFactorizationCounter):
            _, l2 = cls.sensitivity_factors(T)
            got.append(
                cls(T, 1, GaussianNoise(l2)).max_variance
                if cls is not SqrtFactorizationCounter
                else l2**2 * l2**2
            )
        assert got[0] == pytest.approx(tree, abs=0.05)
        assert got[1] == pytest.approx(hon, abs=0.05)
        assert got[2] == pytest.approx(sq, abs=0.05)
    # The ratios at T = 1024
    assert 63.8 / 110 <= 0.6 and 10.71 / 110 <= 0.1


@pytest.mark.parametrize("cls", ALL)
def test_fixed_horizon_refuses_step_T_plus_1(cls):
    c = cls(3, 1, GaussianNoise(1.0), rng=0)
    for _ in range(3):
        c.step([0.0])
    with pytest.raises(HorizonExceededError, match="horizon T=3"):
        c.step([0.0])


@pytest.mark.parametrize("cls", ALL)
def test_replicas_are_independent_and_shaped(cls):
    c = cls(8, 3, GaussianNoise(1.0), replicas=4, rng=1)
    out = run(c, np.zeros((8, 3)))
    assert out.shape == (8, 4, 3)
    assert len({tuple(out[-1, r]) for r in range(4)}) == 4


def test_laplace_noise_variance_reported():
    c = BinaryTreeCounter(7, 2, LaplaceNoise(3.0))
    assert c.variance(7) == 3 * 2 * 9.0
