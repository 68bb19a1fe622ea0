"""Bernoulli kl, the KL-UCB index, d_eps and the DP-KLUCB index: hand values, edges, brute
force on grids, and properties (hypothesis). Every test turns floating-point warnings into
errors: the functions promise none."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.bandits import kl as K
from dponline.bandits.kl import bernoulli_kl, d_eps, d_eps_upper, kl_lower, kl_upper
from dponline.privacy.arguments import ArgumentError

pytestmark = pytest.mark.filterwarnings("error")

unit = st.floats(0.0, 1.0)
inner = st.floats(1e-6, 1.0 - 1e-6)
levels = st.floats(1e-6, 30.0)
epsilons = st.floats(1e-3, 50.0)
BOTH = [True, False] if K.HAVE_NUMBA else [False]


def _bisect_upper(p: float, level: float) -> float:
    """max{q >= p : kl(p, q) <= level} by plain bisection on the float kl (reference)."""
    lo, hi = p, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if float(bernoulli_kl(p, mid)) <= level:
            lo = mid
        else:
            hi = mid
    return lo


def _brute_d_eps(x: float, y: float, eps: float, n: int = 200_001) -> float:
    z = np.linspace(min(x, y), max(x, y), n)
    return float(np.min(eps * np.abs(z - x) + bernoulli_kl(z, y)))


# ---------------------------------------------------------------------------------------------
# bernoulli_kl


def test_kl_hand_values_and_conventions():
    assert bernoulli_kl(0.25, 0.5) == pytest.approx(0.25 * math.log(0.5) + 0.75 * math.log(1.5))
    assert bernoulli_kl(0.3, 0.3) == 0.0
    assert bernoulli_kl(0.0, 0.0) == 0.0 and bernoulli_kl(1.0, 1.0) == 0.0
    assert bernoulli_kl(0.0, 0.75) == pytest.approx(-math.log(0.25), rel=1e-15)
    assert bernoulli_kl(1.0, 0.75) == pytest.approx(-math.log(0.75), rel=1e-15)
    for p, q in [(0.5, 0.0), (0.5, 1.0), (1.0, 0.0), (0.0, 1.0), (1e-300, 0.0)]:
        assert bernoulli_kl(p, q) == math.inf
    out = bernoulli_kl(np.array([[0.1], [0.9]]), np.array([0.2, 0.5, 0.8]))
    assert out.shape == (2, 3) and out.dtype == np.float64


@pytest.mark.parametrize("bad", [np.nan, -0.1, 1.5, "0.5", 1 + 0j, [0.2, np.nan], None])
def test_arguments_outside_the_domain_are_refused(bad):
    for call in (
        lambda: bernoulli_kl(bad, 0.5),
        lambda: bernoulli_kl(0.5, bad),
        lambda: kl_upper(bad, 0.1),
        lambda: kl_lower(bad, 0.1),
        lambda: d_eps(0.2, bad, 1.0),
        lambda: d_eps_upper(bad, 0.1, 1.0),
    ):
        with pytest.raises(ArgumentError):
            call()


@pytest.mark.parametrize("bad", [np.nan, -1e-9, "1", [0.1, -1.0]])
def test_levels_and_epsilons_must_be_nonnegative(bad):
    with pytest.raises(ArgumentError):
        kl_upper(0.5, bad)
    with pytest.raises(ArgumentError):
        kl_lower(0.5, bad)
    with pytest.raises(ArgumentError):
        d_eps(0.2, 0.5, bad)
    with pytest.raises(ArgumentError):
        d_eps_upper(0.2, bad, 1.0)
    with pytest.raises(ArgumentError):
        d_eps_upper(0.2, 0.1, bad)


# ---------------------------------------------------------------------------------------------
# kl_upper / kl_lower


@pytest.mark.parametrize("compiled", BOTH)
def test_kl_upper_hand_values_and_edges(compiled):
    up = lambda p, lv: float(kl_upper(p, lv, compiled=compiled))  # noqa: E731
    # kl(1/2, q) = -log(4 q (1 - q)) / 2 = log 2  <=>  q (1 - q) = 1/16
    assert up(0.5, math.log(2.0)) == pytest.approx((1 + math.sqrt(3) / 2) / 2, abs=1e-14)
    assert up(0.0, 0.7) == -math.expm1(-0.7)
    assert up(1.0, 0.3) == 1.0
    assert up(0.3, 0.0) == 0.3
    assert up(0.3, math.inf) == 1.0
    assert up(0.3, 45.0) == 1.0
    lo = lambda p, lv: float(kl_lower(p, lv, compiled=compiled))  # noqa: E731
    assert lo(0.5, math.log(2.0)) == pytest.approx((1 - math.sqrt(3) / 2) / 2, abs=1e-14)
    assert lo(1.0, 0.7) == math.exp(-0.7)
    assert lo(0.0, 0.7) == 0.0
    assert lo(0.3, 0.0) == 0.3
    assert lo(0.3, math.inf) == 0.0


@pytest.mark.parametrize("compiled", BOTH)
def test_kl_upper_matches_bisection_on_a_grid(compiled):
    ps = np.array([1e-6, 1e-3, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1 - 1e-3, 1 - 1e-6])
    lvs = np.array([1e-6, 1e-4, 1e-2, 0.1, 0.5, 1.0, 3.0, 10.0, 30.0])
    got = kl_upper(ps[:, None], lvs[None, :], compiled=compiled)
    ref = np.array([[_bisect_upper(p, lv) for lv in lvs] for p in ps])
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-12)
    low = kl_lower(ps[:, None], lvs[None, :], compiled=compiled)
    ref_low = 1.0 - np.array([[_bisect_upper(1 - p, lv) for lv in lvs] for p in ps])
    np.testing.assert_allclose(low, ref_low, rtol=0, atol=2e-12)


def test_kl_upper_is_accurate_at_extreme_arguments():
    # p near 0 and 1, levels from 1e-20 to 39: kl at the answer, computed without cancellation
    # as -(1 - p) log1p(-d / (1 - p)) - p log1p(d / p) with d = q - p (exact: Sterbenz), must
    # equal the level up to an
    # error in q of 1e-13 (which moves kl by 1e-13 kl'(q), kl'(q) = (q - p) / (q (1 - q)))
    # plus the rounding of that evaluation
    rng = np.random.default_rng(3)
    p = np.concatenate([10 ** rng.uniform(-12, 0, 3000), 1 - 10 ** rng.uniform(-12, 0, 3000)])
    p = np.clip(p, 1e-12, 1 - 1e-12)
    lv = 10 ** rng.uniform(-20, np.log10(39.0), p.size)
    for compiled in BOTH:
        q = kl_upper(p, lv, compiled=compiled)
        assert np.all((q >= p) & (q <= 1.0))
        keep = q < 1.0 - 1e-9
        qk, pk, lk = q[keep], p[keep], lv[keep]
        d = qk - pk
        first = -(1.0 - pk) * np.log1p(-d / (1.0 - pk))
        second = pk * np.log1p(d / pk)
        slope = d / (qk * (1.0 - qk))
        tol = 1e-13 * slope + 1e-15 * (np.abs(first) + np.abs(second)) + 1e-300
        assert np.all(np.abs(first - second - lk) <= tol)


def test_newton_iterations_are_few():
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.random(20000), 10 ** rng.uniform(-12, 0, 5000)])
    p = np.clip(np.concatenate([p, 1 - 10 ** rng.uniform(-12, 0, 5000)]), 1e-12, 1 - 1e-12)
    lv = 10 ** rng.uniform(-25, np.log10(39.9), p.size)
    worst = max(K._halley_numpy(p[i : i + 1], lv[i : i + 1])[1] for i in range(0, p.size, 7))
    assert worst <= 5  # 4 when written
    _, together = K._halley_numpy(p, lv)
    assert together <= 5


@pytest.mark.skipif(not K.HAVE_NUMBA, reason="numba not installed")
def test_compiled_and_numpy_versions_agree():
    rng = np.random.default_rng(1)
    edges = np.array([0.0, 1e-300, 1e-12, 0.5, 1 - 1e-12, 1.0])
    x = np.concatenate([rng.random(2000), edges])
    y = np.concatenate([rng.random(2000), edges[::-1]])
    lv = np.concatenate([10 ** rng.uniform(-30, 2, 2000), [0.0, 1e-27, 1e-10, 1.0, 40.0, np.inf]])
    eps = np.concatenate([10 ** rng.uniform(-3, 3, 2000), [0.0, 1e-9, 1.0, 800.0, np.inf, 2.0]])
    for f, args in [
        (kl_upper, (x, lv)),
        (kl_lower, (x, lv)),
        (d_eps, (x, y, eps)),
        (d_eps_upper, (x, lv, eps)),
    ]:
        a, b = f(*args, compiled=True), f(*args, compiled=False)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f.__name__)


@pytest.mark.parametrize("compiled", BOTH)
def test_every_combination_of_edges_is_quiet_and_finite(compiled):
    """Every pairing of the edge values, not only those lined up above: no floating-point
    warning (the module filter makes one an error) and no NaN, on both paths. The numpy path
    divided 0 by 0 for d_eps(x, 0, eps > 709) and multiplied 0 by inf for
    d_eps_upper(0, level, eps > 709) (the values were right, the warnings were not)."""
    edges = np.array([0.0, 1e-300, 1e-12, 0.3, 0.5, 1 - 1e-12, 1.0])
    levels_ = np.array([0.0, 1e-27, 1e-10, 0.5, 40.0, np.inf])
    eps = np.array([0.0, 1e-9, 1.0, 709.0, 710.0, 800.0, 1e300, np.inf])
    x, y, e = np.meshgrid(edges, edges, eps, indexing="ij")
    xl, lv, el = np.meshgrid(edges, levels_, eps, indexing="ij")
    for out in (d_eps(x, y, e, compiled=compiled), d_eps_upper(xl, lv, el, compiled=compiled)):
        assert not np.isnan(out).any()
    # x = 0 against y = 0 costs nothing; against y > 0 with eps -> inf it is kl(0, y)
    assert float(d_eps(0.3, 0.0, 800.0, compiled=compiled)) == pytest.approx(240.0)
    assert float(d_eps_upper(0.0, 0.5, 800.0, compiled=compiled)) == pytest.approx(
        float(kl_upper(0.0, 0.5)), rel=1e-12
    )


def _brackets(f, lo_end: float, mu: float, level: float, tol: float = 1e-12) -> None:
    """``mu`` is max{m : f(m) <= level} to within ``tol``: f is below the level at mu - tol
    and above it at mu + tol (each when inside [lo_end, 1]). A check in the index's own units:
    near 1 the functions are too steep for a check on their values."""
    if mu - tol >= lo_end:
        assert float(f(mu - tol)) <= level
    if mu + tol <= 1.0:
        assert float(f(mu + tol)) >= level


@settings(max_examples=150, deadline=None)
@given(p=inner, lv=levels)
def test_kl_upper_inverts_kl(p, lv):
    q = float(kl_upper(p, lv))
    assert p <= q <= 1.0
    _brackets(lambda m: bernoulli_kl(p, m), p, q, lv)
    qd = float(kl_lower(p, lv))
    assert 0.0 <= qd <= p
    # the lower index mirrored: 1 - qd is the upper index of 1 - p
    _brackets(lambda m: bernoulli_kl(1 - p, m), 1 - p, 1 - qd, lv)


@settings(max_examples=150, deadline=None)
@given(p1=unit, p2=unit, l1=levels, l2=levels)
def test_kl_upper_is_monotone(p1, p2, l1, l2):
    (pa, pb), (la, lb) = sorted((p1, p2)), sorted((l1, l2))
    assert float(kl_upper(pa, la)) <= float(kl_upper(pb, la)) + 1e-13
    assert float(kl_upper(pa, la)) <= float(kl_upper(pa, lb)) + 1e-13
    assert float(kl_lower(pa, la)) <= float(kl_lower(pb, la)) + 1e-13
    assert float(kl_lower(pa, lb)) <= float(kl_lower(pa, la)) + 1e-13


def test_broadcasting_and_shapes():
    p = np.linspace(0.05, 0.95, 10)
    lv = np.full((100, 1), 0.3)
    assert kl_upper(p, lv).shape == (100, 10)
    assert kl_upper(0.5, 0.1).shape == ()
    assert d_eps(p, 0.9, np.array([[0.1], [1.0]])).shape == (2, 10)
    assert d_eps_upper(p[None, :], lv, 0.5).shape == (100, 10)
    assert kl_upper(np.zeros((0, 3)), 0.1).shape == (0, 3)


def test_empty_arrays_on_the_numpy_path_too():
    # the numpy path (taken where numba is absent) once failed on nothing to iterate
    for compiled in (False, None):
        assert kl_upper(np.zeros((0, 3)), 0.1, compiled=compiled).shape == (0, 3)
        assert kl_lower(np.zeros((0, 3)), 0.1, compiled=compiled).shape == (0, 3)
        assert d_eps_upper(np.zeros(0), 0.1, 0.5, compiled=compiled).shape == (0,)


# ---------------------------------------------------------------------------------------------
# d_eps


@pytest.mark.parametrize("compiled", BOTH)
def test_d_eps_matches_brute_force_on_a_grid(compiled):
    grid = np.array([0.0, 0.01, 0.1, 0.25, 0.5, 0.625, 0.75, 0.9, 0.99, 1.0])
    for eps in [0.01, 0.1, 0.5, 1.0, 3.0, 10.0]:
        for x in grid:
            for y in grid:
                got = float(d_eps(x, y, eps, compiled=compiled))
                ref = _brute_d_eps(x, y, eps, n=20_001)
                if math.isinf(ref):
                    assert math.isinf(got)
                    continue
                # the grid minimum is above the infimum by at most the grid step times the
                # slope near the minimiser; never below it (d_eps is the infimum)
                assert got <= ref + 1e-12
                assert ref - got <= 1e-6 * max(1.0, eps), (x, y, eps, got, ref)


def test_d_eps_hand_values_and_limits():
    # x < y = 1: only z = 1 has finite kl, so d = eps (1 - x); y = 0 < x: d = eps x
    assert float(d_eps(0.3, 1.0, 2.0)) == pytest.approx(1.4, rel=1e-15)
    assert float(d_eps(0.3, 0.0, 2.0)) == pytest.approx(0.6, rel=1e-15)
    assert float(d_eps(0.4, 0.4, 5.0)) == 0.0
    assert float(d_eps(0.1, 0.9, 0.0)) == 0.0
    x, y = np.array([0.1, 0.25, 0.8, 0.0, 1.0]), np.array([0.6, 0.75, 0.3, 0.5, 0.2])
    np.testing.assert_allclose(d_eps(x, y, np.inf), bernoulli_kl(x, y), rtol=1e-15)
    # large eps: the constraint binds and d_eps is kl exactly (z0 beyond x)
    np.testing.assert_allclose(d_eps(x, y, 50.0), bernoulli_kl(x, y), rtol=1e-14)
    # small eps: d_eps / (eps |x - y|) -> 1
    np.testing.assert_allclose(d_eps(x, y, 1e-7) / (1e-7 * np.abs(x - y)), 1.0, atol=1e-6)
    # x > y with y below the rounding of 1 (1 - y == 1 in floating point): y must not be lost
    yt = 4.132979190839974e-17
    # (z0 = y / (y + (1 - y) e^-36) = 0.15 < x: the constraint does not bind)
    assert float(d_eps(0.5, yt, 36.0)) == pytest.approx(-18.0 - math.log(yt + math.exp(-36.0)))
    # a value by hand for x < y, unconstrained minimiser: z0 = expit(logit(y) - eps)
    xv, yv, e = 0.2, 0.75, 1.0
    z0 = yv * math.exp(-e) / (1 - yv + yv * math.exp(-e))
    kl_z0 = z0 * math.log(z0 / yv) + (1 - z0) * math.log((1 - z0) / (1 - yv))
    assert float(d_eps(xv, yv, e)) == pytest.approx(e * (z0 - xv) + kl_z0, rel=1e-13)


@settings(max_examples=200, deadline=None)
@given(x=unit, y=unit, eps=epsilons, eps2=epsilons)
def test_d_eps_is_below_kl_and_eps_tv_and_grows_with_eps(x, y, eps, eps2):
    d = float(d_eps(x, y, eps))
    assert 0.0 <= d <= float(bernoulli_kl(x, y)) * (1 + 1e-12) + 1e-15
    assert d <= eps * abs(x - y) * (1 + 1e-12) + 1e-15
    lo, hi = sorted((eps, eps2))
    assert float(d_eps(x, y, lo)) <= float(d_eps(x, y, hi)) * (1 + 1e-12) + 1e-15


@settings(max_examples=100, deadline=None)
@given(x=inner, y=inner, eps=epsilons)
def test_d_eps_matches_brute_force_at_random_points(x, y, eps):
    ref = _brute_d_eps(x, y, eps, n=20_001)
    got = float(d_eps(x, y, eps))
    assert got <= ref + 1e-12
    assert ref - got <= 1e-5 * max(1.0, eps) * max(abs(x - y), 1e-3)


# ---------------------------------------------------------------------------------------------
# d_eps_upper


@pytest.mark.parametrize("compiled", BOTH)
def test_d_eps_upper_edges(compiled):
    def f(x, lv, e):
        return float(d_eps_upper(x, lv, e, compiled=compiled))

    assert f(0.3, 0.0, 1.0) == 0.3
    assert f(0.3, math.inf, 1.0) == 1.0
    assert f(0.3, 0.1, 0.0) == 1.0
    assert f(1.0, 0.1, 1.0) == 1.0
    assert f(0.3, 0.7, 1.0) == 1.0  # level >= eps (1 - x) = d_eps(x, 1)
    assert f(0.3, 0.69, 1.0) < 1.0
    assert f(0.3, 0.2, math.inf) == float(kl_upper(0.3, 0.2))
    # x = 0: d_eps(0, mu) = -log(1 - mu (1 - e^-eps)) for every mu > 0
    assert f(0.0, 0.1, 2.0) == pytest.approx(-math.expm1(-0.1) / -math.expm1(-2.0), rel=1e-14)


@pytest.mark.parametrize("compiled", BOTH)
def test_d_eps_upper_matches_brute_force_on_a_grid(compiled):
    mus = np.linspace(0.0, 1.0, 100_001)
    for eps in [0.05, 0.5, 1.0, 5.0]:
        for x in [0.0, 0.1, 0.4, 0.75, 0.95]:
            row = d_eps(x, mus, eps)
            for lv in [1e-4, 1e-2, 0.1, 0.5, 2.0]:
                got = float(d_eps_upper(x, lv, eps, compiled=compiled))
                ok = mus[(mus >= x) & (row <= lv)]
                ref = ok.max()
                assert ref - 1e-12 <= got <= ref + 1e-5 + 1e-12, (x, lv, eps, got, ref)


@settings(max_examples=150, deadline=None)
@given(x=unit, lv=levels, eps=epsilons)
def test_d_eps_upper_inverts_d_eps_and_exceeds_kl_upper(x, lv, eps):
    mu = float(d_eps_upper(x, lv, eps))
    assert x <= mu <= 1.0
    assert mu >= float(kl_upper(x, lv)) - 1e-12  # d_eps <= kl: a larger index
    _brackets(lambda m: d_eps(x, m, eps), x, mu, lv)
