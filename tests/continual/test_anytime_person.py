"""The anytime (tapered square-root) factorisation over one person's rounds: the bound of
``person_sq_bounds`` (ours) against brute force over every allowed pattern on small prefixes,
against the series summed far out, and its use by the calibration and the factory."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.continual import anytime_factorization as AF
from dponline.continual import participation as P
from dponline.continual.anytime_factorization import (
    TAPER_EXACT_TERMS,
    AnytimeFactorizationCounter,
    JacobsenFawaz,
    TaperedSqrt,
    calibrate_anytime,
    person_sq_bounds,
)
from dponline.continual.factory import make_counter
from dponline.continual.matrix_factorization import toeplitz_matrix
from dponline.privacy.accounting import gaussian_sigma
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyNotion

#: a taper that bends within the first rounds (the default's stays 1 up to k = 108), so that
#: brute force on a few rounds sees the weight change and the tail bound start at k = 4
SMALL = TaperedSqrt(a=0.5, p=1.0, b=1.2, q=1.0)


def pattern_series(r: np.ndarray, k: int, b: int) -> float:
    """sum_{i < n} s_i^2 with s_i = sum_{m < k, m b <= i} r_{i - m b}: the pattern of k rounds
    b apart from round 1, truncated to len(r) rounds (computed directly, not by the library's
    autocorrelations)."""
    s = np.zeros(r.size)
    for m in range(k):
        if m * b < r.size:
            s[m * b :] += r[: r.size - m * b]
    return float(s @ s)


def test_the_tapered_coefficients_are_nonnegative_and_non_increasing():
    # what the Toeplitz rule and the rest's lower bound need; checked where the weight bends
    for taper in (TaperedSqrt(), SMALL):
        r = taper.r_coefficients(2**16)
        assert np.all(r > 0) and np.all(np.diff(r) <= 0)
        far = taper.r_window(2**40, 2**40 + 1000)
        assert np.all(far > 0) and np.all(np.diff(far) <= 0) and far[0] <= r[-1]


def test_windows_agree_with_the_coefficients():
    taper = TaperedSqrt()
    r = taper.r_coefficients(2**18)
    for lo in (0, 1, 5, 1000, 2**17):
        np.testing.assert_allclose(taper.r_window(lo, lo + 2**17 - 7)[:100], r[lo : lo + 100])
        np.testing.assert_allclose(taper.r_window(lo, 2**18), r[lo:], rtol=1e-11)


@pytest.mark.parametrize("taper", [TaperedSqrt(), SMALL], ids=["default", "small"])
def test_tail_bounds_bracket_the_summed_tail(taper):
    far = 2**22
    r = taper.r_coefficients(far)
    for start in (taper.tail_start(), 2**16, 2**20):
        summed = float(np.sum(r[start:] ** 2))  # the tail from start, less the tail from far
        lo_start, hi_start = taper.tail_sq_bounds(start)
        lo_far, hi_far = taper.tail_sq_bounds(far)
        assert lo_start - hi_far <= summed <= hi_start - lo_far
    with pytest.raises(ValueError, match="holds from k"):
        TaperedSqrt().tail_sq_bounds(100)


@pytest.mark.parametrize(
    "k,b,gap",
    [(1, 1, 1e-6), (2, 1, 1e-6), (3, 2, 1e-6), (4, 256, 1e-5), (16, 1, 1e-6), (2, 10**6, 1e-2)],
)
def test_bounds_contain_the_series_summed_far_out(k, b, gap):
    """The series summed directly to N = 2^20 + (k - 1) b + 2^21 rounds is at most the upper
    bound, and at least the lower bound less what its rest beyond N can hold (k sum_m tail(N -
    m b) by Cauchy-Schwarz): an independent route to both bounds. Their relative gap (the rest
    of each autocorrelation beyond 2^20 terms) grows with the separation."""
    taper = TaperedSqrt()
    got = person_sq_bounds(taper, k, b)
    n = TAPER_EXACT_TERMS + (k - 1) * b + 2**21
    series = pattern_series(taper.r_coefficients(n), k, b)
    rest = k * sum(taper.tail_sq_bounds(n - m * b)[1] for m in range(k))
    assert got.lower - rest <= series <= got.upper
    assert got.lower <= got.upper <= got.lower * (1 + gap)


def test_a_separation_past_the_summed_terms_is_bounded_by_its_pairs():
    """Rounds 3e6 apart: the series over the first N rounds needs 9e6 coefficients; its pairs
    (k S + 2 sum (k - g) A(g b)) are summed exactly to 2^20 terms each, the rest bounded."""
    taper = TaperedSqrt()
    got = person_sq_bounds(taper, 3, 3 * 10**6)
    s = taper.sensitivity_bounds()[1]
    assert 3 * s < got.lower <= got.upper < 9 * s  # more than 3 separate rounds, far below 3^2
    assert got.upper < got.lower * 1.02


def test_one_participation_is_the_event_level_sensitivity():
    taper = TaperedSqrt()
    got = person_sq_bounds(taper, 1, 1)
    lo, hi = taper.sensitivity_bounds()
    assert got.lower == pytest.approx(lo, rel=1e-12)
    assert hi <= got.upper <= hi * (1 + 2e-9)


def test_the_bound_grows_with_the_rounds_and_shrinks_with_their_separation():
    taper = TaperedSqrt()
    by_k = [person_sq_bounds(taper, k, 64).upper for k in (1, 2, 4, 8)]
    assert by_k == sorted(by_k) and by_k[-1] < 64 * by_k[0]  # below the triangle's k^2
    by_b = [person_sq_bounds(taper, 4, b).upper for b in (1, 16, 256, 4096)]
    assert by_b == sorted(by_b, reverse=True)


def brute(r: np.ndarray, k: int, b: int) -> float:
    c = toeplitz_matrix(r)
    return P.quadratic_participation_sq(c.T @ c, k, b)


@pytest.mark.parametrize("n", [1, 2, 5, 9, 12])
def test_small_prefixes_by_brute_force(n):
    """For each small prefix, every allowed pattern (brute force over the n x n strategy
    matrix) is within the bound, and the Toeplitz rule's pattern is the worst, as the proof's
    first step says, for the taper that bends at once."""
    for taper in (SMALL, TaperedSqrt()):
        r = taper.r_coefficients(n)
        for k in (1, 2, 3):
            for b in (1, 2, 3):
                worst = brute(r, k, b)
                assert worst == pytest.approx(pattern_series(r, k, b), rel=1e-12)
                assert worst <= person_sq_bounds(taper, k, b).upper


@settings(max_examples=25, deadline=None)
@given(
    a=st.floats(0.1, 3.0),
    p=st.floats(0.0, 2.0),
    extra=st.floats(0.0, 3.0),
    q=st.floats(0.5, 3.0),
    n=st.integers(1, 10),
    k=st.integers(1, 3),
    b=st.integers(1, 4),
)
def test_any_taper_brute_force_within_the_bound(a, p, extra, q, n, k, b):
    taper = TaperedSqrt(a=a, p=p, b=a + extra, q=q)
    r = taper.r_coefficients(n)
    worst = brute(r, k, b)
    assert worst == pytest.approx(pattern_series(r, k, b), rel=1e-12)
    assert worst <= person_sq_bounds(taper, k, b).upper


def test_calibration_for_a_person_uses_the_bound_and_says_it_is_ours():
    person = PrivacyBudget(1.0, 1e-6, participations=4, min_separation=256)
    bounds = Box(0.0, 1.0, dim=3)
    cal = calibrate_anytime(TaperedSqrt(), bounds, person)
    factor = person_sq_bounds(TaperedSqrt(), 4, 256).factor
    assert cal.noise.sigma == pytest.approx(gaussian_sigma(factor * math.sqrt(3), 1.0, 1e-6))
    g = cal.guarantee
    assert g.notion is PrivacyNotion.USER_LEVEL_DP
    assert (g.participations, g.min_separation) == (4, 256)
    assert g.epsilon <= 1.0 + 1e-9 and "ours" in g.derivation and "every n" in g.derivation
    # more noise than one round's calibration, less than the triangle inequality's k Delta
    one = calibrate_anytime(TaperedSqrt(), bounds, PrivacyBudget(1.0, 1e-6)).noise.sigma
    assert one < cal.noise.sigma < 4 * one


def test_strategies_without_a_proof_refuse_a_person():
    person = PrivacyBudget(1.0, 1e-6, participations=2, min_separation=8)
    with pytest.raises(ValueError, match="no proven sensitivity to one person"):
        calibrate_anytime(JacobsenFawaz(), Box(0.0, 1.0, dim=1), person)


def test_a_counter_without_a_horizon_protects_a_person():
    person = PrivacyBudget(1.0, 1e-6, participations=4, min_separation=16)
    counter = make_counter(horizon=None, bounds=Box(0.0, 1.0, dim=2), budget=person)
    assert isinstance(counter, AnytimeFactorizationCounter)
    assert counter.privacy.participations == 4 and counter.privacy.min_separation == 16
    assert counter.privacy.notion is PrivacyNotion.USER_LEVEL_DP
    for _ in range(40):
        counter.step(np.array([1.0, 0.0]))


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"noise": "laplace"}, "because the noise is laplace"),
        (
            {"mechanism": "binary_tree", "noise": "gaussian"},
            "because a mechanism was named ('binary_tree')",
        ),
    ],
    ids=["laplace", "named-mechanism"],
)
def test_doubling_blocks_refuse_a_person_and_say_what_to_do(kwargs, why):
    """The refusal says why the tapered factorisation was not taken (it told a user with tight
    Gaussian noise and no mechanism named to use exactly that, when the dimension was the
    reason: dyadic Hedge's default grid of 1,025 experts is refused so)."""
    delta = 0.0 if kwargs["noise"] == "laplace" else 1e-6
    person = PrivacyBudget(1.0, delta, participations=4, min_separation=16)
    name = kwargs.pop("mechanism", None)
    dim = kwargs.pop("dim", 1)
    with pytest.raises(ValueError, match="tapered square-root factorisation") as err:
        make_counter(name, horizon=None, bounds=Box(0.0, 1.0, dim=dim), budget=person, **kwargs)
    assert why in str(err.value)
    assert "give a horizon" in str(err.value) and "group privacy" in str(err.value)
    assert "in at most 10 coordinates" in str(err.value) and "proof" not in str(err.value)
    assert "mechanism='anytime_blt'" in str(err.value)


def test_past_the_factorisations_memory_a_person_gets_the_blt_without_a_horizon():
    """11 coordinates: the tapered factorisation's noise after 262,144 rounds would hold
    69,206,016 bytes, over the 64 MiB budget, and doubling blocks would add up a person's
    rounds (this was refused): the BLT without a horizon, whose state is O(d)."""
    person = PrivacyBudget(1.0, 1e-6, participations=4, min_separation=16)
    wide = make_counter(horizon=None, bounds=Box(0.0, 1.0, dim=11), budget=person)
    assert wide.name == "anytime_blt" and wide.privacy.participations == 4
    narrow = make_counter(horizon=None, bounds=Box(0.0, 1.0, dim=10), budget=person)
    assert isinstance(narrow, AnytimeFactorizationCounter)


def test_head_products_by_fft_and_by_chunks_agree_with_the_windows():
    """The lags' head products H(d) = sum_{j<K} r_j r_{j+d}: by one FFT (more than 8 lags up to
    2^22) they equal the window sums; past 2^22 the chunk bounds bracket them within 0.3%."""
    taper = TaperedSqrt()
    head = taper.r_coefficients(TAPER_EXACT_TERMS)
    near = np.arange(1, 12, dtype=np.int64) * 300_000  # 11 lags, the last 3.3e6
    lo, hi = AF._head_products(taper, head, near)
    exact = [float(head @ taper.r_window(d, d + head.size)) for d in near.tolist()]
    np.testing.assert_allclose(lo, exact, rtol=1e-12)
    assert np.array_equal(lo, hi)
    far = np.array([2**22 + 1, 10**7, 10**9], dtype=np.int64)
    lo, hi = AF._head_products(taper, head, far)
    exact = [float(head @ taper.r_window(d, d + head.size)) for d in far.tolist()]
    assert np.all(lo <= exact) and np.all(np.array(exact) <= hi) and np.all(hi < lo * 1.003)


def test_a_subclass_that_changes_the_coefficients_must_prove_its_tail():
    """A subclass with a wider weight has larger coefficients; calibrating it with the parent's
    bound (as a cache keyed by the parameters alone once did) would under-noise."""

    class Wide(TaperedSqrt):
        def weight(self, u):  # type: ignore[no-untyped-def]
            return 4.0 * super().weight(u)

    with pytest.raises(TypeError, match="override tail_sq_bounds"):
        calibrate_anytime(Wide(), Box(0.0, 1.0, dim=1), PrivacyBudget(1.0, 1e-6))
    with pytest.raises(TypeError, match="override tail_sq_bounds"):
        person_sq_bounds(Wide(), 2, 3)
