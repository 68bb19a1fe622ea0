"""Norms of the input bounds (dponline.privacy.bounds): exact against a high-precision sum,
and no underflow or overflow that would let an input outside a ball pass its check."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.continual import build_counter
from dponline.privacy.bounds import NormBall, lp_norm
from dponline.privacy.budget import PrivacyBudget


def _exact_norm(x: list[float], p: int) -> float:
    """(sum |x_i|^p)^(1/p) with the sum in exact rationals (integer p), rounded once."""
    total = sum(Fraction(abs(v)) ** p for v in x)
    if total == 0:
        return 0.0
    # the p-th root of a rational: through logarithms of numerator and denominator
    log = (math.log(total.numerator) - math.log(total.denominator)) / p
    return math.exp(log)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-1e30, 1e30, allow_nan=False, width=64), min_size=1, max_size=6),
    st.sampled_from([2, 3, 7, 50, 400]),
    st.integers(-300, 300),
)
def test_lp_norm_is_the_exact_norm_at_every_scale(values, p, exponent):
    x = [v * 10.0**exponent for v in values]
    if not all(math.isfinite(v) for v in x):
        return
    assert float(lp_norm(np.array(x), p)) == pytest.approx(_exact_norm(x, p), rel=1e-12, abs=0)


def test_a_large_exponent_or_a_tiny_radius_does_not_hide_an_input_outside_the_ball():
    """|x_i|^p underflowed to 0: at p = 50 and radius 1e-8, an input of norm 1.01e-7 (10x the
    radius) was accepted and moved the sum 5x past the noise's calibrated diameter."""
    assert float(lp_norm(np.array([1e-7, 1e-7]), 50)) == pytest.approx(1e-7 * 2 ** (1 / 50))
    assert float(lp_norm(np.array([0.5, 0.5]), 2000)) == pytest.approx(0.5 * 2 ** (1 / 2000))
    ball = NormBall(1e-8, 50, dim=2)
    counter = build_counter(PrivacyBudget(1.0, 1e-6), horizon=8, bounds=ball)
    with pytest.raises(ValueError, match="outside"):
        counter.step(np.array([1e-7, 1e-7]))
    assert counter.t == 0
    counter.step(np.array([5e-9, 5e-9]))  # inside: accepted
    # the l2 norm neither underflows nor overflows
    assert float(lp_norm(np.array([3e-200, 4e-200]), 2)) == pytest.approx(5e-200)
    assert float(lp_norm(np.array([3e200, 4e200]), 2)) == pytest.approx(5e200)
    assert float(lp_norm(np.array([math.inf, 1.0]), 3)) == math.inf
    assert lp_norm(np.zeros((2, 3)), 2.5).tolist() == [0.0, 0.0]
