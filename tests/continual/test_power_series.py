"""Formal power series helpers against closed forms."""

import math

import numpy as np
import pytest

from dponline.continual import power_series as ps
from dponline.continual.matrix_factorization import sqrt_coefficients


@pytest.mark.parametrize("n", [1, 2, 7, 33, 1000, 4096])
def test_inverse_of_one_minus_z_is_all_ones(n):
    assert np.allclose(ps.inverse(np.array([1.0, -1.0]), n), np.ones(n), rtol=0, atol=1e-12)


def test_inverse_times_series_is_one():
    rng = np.random.default_rng(0)
    a = np.concatenate([[2.0], rng.normal(size=299) / np.arange(2, 301) ** 2])
    prod = ps.multiply(a, ps.inverse(a, 300), 300)
    assert abs(prod[0] - 1) < 1e-14 and np.max(np.abs(prod[1:])) < 1e-13


def test_log_of_one_minus_z():
    n = 5000
    got = ps.log(np.array([1.0, -1.0]), n)
    assert got[0] == 0.0
    assert np.allclose(got[1:], -1.0 / np.arange(1, n), rtol=1e-10, atol=0)


def test_exp_of_z_and_log_exp_round_trip():
    got = ps.exp(np.array([0.0, 1.0]), 25)
    assert np.allclose(got, [1 / math.factorial(k) for k in range(25)], rtol=1e-13, atol=1e-16)
    a = np.array([0.3, 0.5, -0.25, 0.125])
    assert np.allclose(ps.log(ps.exp(a, 64), 64), np.pad(a, (0, 60)), atol=1e-13)


@pytest.mark.parametrize("n", [10, 2**13])
def test_power_gives_square_root_coefficients(n):
    got = ps.power(np.array([1.0, -1.0]), -0.5, n)
    assert np.allclose(got, sqrt_coefficients(n), rtol=1e-10, atol=0)


def test_power_of_constant_term_and_integer_power():
    assert np.allclose(ps.power(np.array([4.0, 4.0]), 0.5, 5), 2 * ps.power([1.0, 1.0], 0.5, 5))
    assert np.allclose(ps.power(np.array([1.0, 1.0]), 3, 6), [1, 3, 3, 1, 0, 0], atol=1e-13)


def test_refusals():
    with pytest.raises(ValueError, match="no inverse"):
        ps.inverse(np.array([0.0, 1.0]), 3)
    with pytest.raises(ValueError, match="a_0 > 0"):
        ps.log(np.array([-1.0, 1.0]), 3)
    with pytest.raises(ValueError, match="non-finite"):
        ps.exp(np.array([np.nan]), 3)
    with pytest.raises(ValueError, match="positive integer"):
        ps.inverse(np.array([1.0]), 0)
