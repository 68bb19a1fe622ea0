"""Every decision set of the catalogue at every finite scale: the oracle is scale invariant
(bit for bit under powers of two, ties included), optimal and a member from subnormal
directions (5e-324) to 1.7e308, vectorised rows are scaled one by one, projections of points
of any size are members, and NaN, infinity, complex values, non-numeric data and wrong shapes
are refused the same way everywhere, with the argument named (domains/base.py, "Refusals").

Ground truth is brute force over the listed vertices, on the direction divided by its largest
absolute entry (an independent normalisation: a division, not the library's power of two).
Hypothesis runs derandomised (a fixed sequence of examples), so the tests are deterministic.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.domains import (
    BirkhoffPolytope,
    ConvexDomain,
    LpBall,
    PathPolytope,
    Polytope,
    Projectable,
    VertexHull,
)
from dponline.domains.base import scale_rows
from tests.domains.catalogue import CASES, DAG, PRISM_A, PRISM_B, RNG_POINTS, Case, dag_paths

IDS = [c.name for c in CASES]
FEW = settings(max_examples=12, deadline=None, derandomize=True, database=None)

#: scales at the edges of the float range, and powers of ten in between
SCALES = st.one_of(
    st.sampled_from([5e-324, 2.5e-323, 2.2250738585072014e-308, 1e-300, 1e300, 1.7e308]),
    st.integers(-300, 300).map(lambda e: 10.0**e),
)


@functools.cache
def _domain(name: str) -> ConvexDomain:
    return next(c for c in CASES if c.name == name).make()


@functools.cache
def _vertices(name: str) -> np.ndarray:
    return np.unique(next(c for c in CASES if c.name == name).vertices(), axis=0)


PROJECTABLE = [c for c in CASES if isinstance(_domain(c.name), Projectable)]


def _rows(n: int) -> st.SearchStrategy[np.ndarray]:
    """Directions in [-1, 1]^n: quarters (many ties, exact zeros) or floats of magnitude 0 or
    at least 2^-60 (so that a power-of-two scaling down to 2^-960 stays exact)."""
    quarter = st.integers(-4, 4).map(lambda k: k / 4.0)
    real = st.floats(-1.0, 1.0).map(lambda v: 0.0 if abs(v) < 2.0**-60 else v)
    return st.lists(st.one_of(quarter, real), min_size=n, max_size=n).map(np.array)


def _normalised(d: np.ndarray) -> np.ndarray:
    top = np.abs(d).max()
    return d / top if top > 0 else d


def _unique_optimum(verts: np.ndarray, d: np.ndarray, margin: float = 1e-7) -> np.ndarray | None:
    """The vertex minimising <d, v> if every other vertex is worse by more than ``margin``."""
    vals = verts @ d
    order = np.argsort(vals)
    if len(vals) > 1 and vals[order[1]] - vals[order[0]] <= margin:
        return None
    return verts[order[0]]


def _assert_optimal_member(case: Case, d: np.ndarray, x: np.ndarray) -> None:
    dom, verts = _domain(case.name), _vertices(case.name)
    dn = _normalised(d)
    best = float((verts @ dn).min())
    tol = 1e-9 * (1.0 + np.abs(dn).sum() * np.abs(verts).max())
    assert float(dn @ x) <= best + tol, (case.name, d, x)
    assert dom.contains(x), (case.name, d, x)
    if case.vertex_answers:
        assert np.linalg.norm(verts - x, axis=1).min() < 1e-9, (case.name, d, x)


# --- scale invariance ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_lmo_is_bitwise_invariant_under_powers_of_two(case: Case, data):
    """lmo(2^j c) == lmo(c) exactly, ties included, for j from -960 to 1020 (every entry of
    2^j c exact), and min_linear scales by exactly 2^j."""
    dom = _domain(case.name)
    c = data.draw(_rows(dom.dim), label="c")
    j = data.draw(st.integers(-960, 1020), label="j")
    d = np.ldexp(c, j)
    np.testing.assert_array_equal(dom.lmo(d), dom.lmo(c))
    with np.errstate(over="ignore"):
        assert dom.min_linear(d) == np.ldexp(dom.min_linear(c), j)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_lmo_on_subnormal_and_huge_integer_directions(case: Case, data):
    """k 2^-1074 (subnormal, exact for small integers k) and k 2^1000 give the answer of k."""
    dom = _domain(case.name)
    k = np.array(data.draw(st.lists(st.integers(-8, 8), min_size=dom.dim, max_size=dom.dim)))
    want = dom.lmo(k.astype(float))
    tiny, huge = k * 5e-324, np.ldexp(k.astype(float), 1000)
    assert np.all(np.abs(tiny[k != 0]) > 0)  # really subnormal, not flushed to zero
    np.testing.assert_array_equal(dom.lmo(tiny), want)
    np.testing.assert_array_equal(dom.lmo(huge), want)
    _assert_optimal_member(case, tiny, dom.lmo(tiny))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_lmo_is_optimal_a_member_and_scale_free_at_any_scale(case: Case, data):
    dom, verts = _domain(case.name), _vertices(case.name)
    c = data.draw(_rows(dom.dim), label="c")
    s = data.draw(SCALES, label="s")
    d = s * c
    x = dom.lmo(d)
    assert x.shape == d.shape and np.all(np.isfinite(x))
    _assert_optimal_member(case, d, x)
    unique = _unique_optimum(verts, _normalised(d))
    if unique is not None:
        np.testing.assert_allclose(x, unique, atol=1e-9)
        same = _unique_optimum(verts, _normalised(c))
        if same is not None and np.allclose(same, unique, atol=1e-12):
            np.testing.assert_allclose(x, dom.lmo(c), atol=1e-9)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@settings(max_examples=6, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_replica_rows_are_scaled_one_by_one(case: Case, data):
    """Rows at scales 1e-300, 1, 1e300 and 5e-324 multiples in one (replicas, n) batch, and in
    a (2, 2, n) batch, get each row's own answer."""
    dom = _domain(case.name)
    rows = np.array([data.draw(_rows(dom.dim)) for _ in range(4)])
    batch = rows * np.array([[1e-300], [1.0], [1e300], [1.7e308]])
    batch = np.vstack([batch, np.round(rows * 8) * 5e-324])
    out = dom.lmo(batch)
    np.testing.assert_array_equal(out, np.array([dom.lmo(r) for r in batch]))
    np.testing.assert_array_equal(
        dom.lmo(batch[:4].reshape(2, 2, dom.dim)), out[:4].reshape(2, 2, -1)
    )
    for d, x in zip(batch, out, strict=True):
        _assert_optimal_member(case, d, x)


def test_scale_rows_is_an_exact_power_of_two_scaling():
    d = np.array(
        [
            [3.0, -1.0, 0.5],
            [0.0, 0.0, -0.0],
            [5e-324, -1e-323, 0.0],
            [1.7e308, -1e300, 1e-300],
            [1.5, 1.0, -1.9],
        ]
    )
    unit, exp = scale_rows(d)
    assert exp.tolist() == [1, 0, -1073, 1023, 0]
    top = np.abs(unit).max(axis=1)
    assert np.all((top[[0, 2, 3, 4]] >= 1.0) & (top[[0, 2, 3, 4]] < 2.0))
    np.testing.assert_array_equal(unit[1], d[1])  # zero rows untouched (sign of zero kept)
    np.testing.assert_array_equal(np.signbit(unit[1]), np.signbit(d[1]))
    np.testing.assert_array_equal(np.ldexp(unit[:3], exp[:3, None]), d[:3])
    in_range = d[[1, 4]]
    same, zero = scale_rows(in_range)
    assert same is in_range and not zero.any()  # nothing to scale: no copy


# --- the cases the issue measured, by hand ---------------------------------------------------


def test_path_polytope_near_overflow_returns_a_path():
    dom = PathPolytope(DAG, (0, 0), (2, 2))
    paths = dag_paths(DAG, (0, 0), (2, 2))
    rng = np.random.default_rng(11)
    for _ in range(20):
        d = rng.choice([-1.7e308, 1.7e308, 1e308, -1e308], size=dom.dim)
        x = dom.lmo(d)
        assert x.sum() >= 2  # never the single edge an overflowed distance used to give
        assert np.linalg.norm(paths - x, axis=1).min() == 0.0
        assert x @ (d / 1.7e308) == pytest.approx((paths @ (d / 1.7e308)).min(), abs=1e-12)


@pytest.mark.parametrize("scale", [1.7e308, 1e308, 5e-324, 1e-320])
def test_vertex_hull_picks_the_best_vertex_at_the_float_limits(scale):
    dom = VertexHull(RNG_POINTS)
    rng = np.random.default_rng(12)
    for _ in range(20):
        c = rng.integers(-3, 4, size=3).astype(float) / 3.0
        d = c * scale
        x = dom.lmo(d)
        vals = RNG_POINTS @ _normalised(d)
        assert _normalised(d) @ x == pytest.approx(vals.min(), abs=1e-12)


def test_vertex_hull_with_subnormal_points():
    """The points are scaled once too: with subnormal points the plain scores of
    (-0.29, -0.45) round to a tie (-0.87 and -0.9 times 2^-1074 both round to -2^-1074),
    which would give the first point; the scaled scores find the second."""
    pts = np.array([[3.0, 0.0], [0.0, 2.0], [1.0, 1.0]]) * 5e-324
    plain = np.einsum("n,kn->k", np.array([-0.29, -0.45]), pts)
    assert plain[0] == plain[1]
    dom = VertexHull(pts)
    np.testing.assert_array_equal(dom.lmo([-0.29, -0.45]), pts[1])
    np.testing.assert_array_equal(dom.lmo([-0.31, -0.45]), pts[0])
    np.testing.assert_array_equal(dom.lmo([1e-300, 1.2e-300]), pts[2])


@pytest.mark.parametrize("scale", [1e-300, 1e-40, 1e-21, 1e6, 1e20, 1e300, 1.7e308])
def test_polytope_lmo_is_a_vertex_at_every_scale(scale):
    """HiGHS's absolute tolerances used to give arbitrary vertices below 1e-20 and fail from
    1e6 on; with scaled rows every scale gives the optimal vertex."""
    dom = Polytope(PRISM_A, PRISM_B)
    verts = _vertices("polytope-prism")
    rng = np.random.default_rng(13)
    for _ in range(15):
        c = rng.normal(size=3)
        c /= np.abs(c).max()
        x = dom.lmo(c * scale)
        np.testing.assert_allclose(x, _unique_optimum(verts, c, margin=0.0), atol=1e-9)


def test_birkhoff_at_the_float_limits():
    dom = BirkhoffPolytope(4)
    rng = np.random.default_rng(14)
    cost = rng.normal(size=16)
    cost /= np.abs(cost).max()
    want = dom.lmo(cost)
    np.testing.assert_array_equal(dom.lmo(cost * 1.7e308), want)
    np.testing.assert_array_equal(dom.lmo(np.ldexp(cost, -1000)), want)


# --- l_p balls beyond the catalogue ----------------------------------------------------------


@pytest.mark.parametrize("p", [1.5, 2.0, 3.0, 10.0], ids=["p1.5", "p2", "p3", "p10"])
@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_lp_ball_oracle_and_projection_at_any_scale(p, data):
    ball = LpBall(4, p, 1.5)
    c = data.draw(_rows(4), label="c")
    s = data.draw(SCALES, label="s")
    d = s * c
    x = ball.lmo(d)
    assert ball.norm(x) <= 1.5 * (1 + 1e-12)
    # Hoelder: the minimum is -r ||d||_q, attained by x
    dn = _normalised(d)
    q = ball.q
    assert dn @ x == pytest.approx(-1.5 * np.linalg.norm(dn, q), rel=1e-9, abs=1e-300)
    np.testing.assert_array_equal(ball.lmo(np.ldexp(c, 900)), ball.lmo(c))
    y = ball.project(d)
    assert ball.contains(y)
    if p <= 3 and s >= 1e30 and np.any(c):
        # a point R >= 1e30 r away projects, to within r (r / R)^(1 / |p - 2|) or better, to
        # the boundary point its direction exposes, the oracle's answer for -d
        np.testing.assert_allclose(y, ball.lmo(-d), atol=1e-9)


def test_lp_ball_min_linear_does_not_overflow_before_the_value_does():
    ball = LpBall(3, 2.0)
    d = np.array([1e200, -1e200, 1e200])
    assert ball.min_linear(d) == pytest.approx(-math.sqrt(3) * 1e200, rel=1e-15)
    assert ball.min_linear(np.array([1.7e308, 1.7e308, 0.0])) == -np.inf
    assert LpBall(3, 1.0001).min_linear(np.array([1.0, 1.0, 0.0])) < 0  # q near 10^4: no 2^q


# --- projections -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", PROJECTABLE, ids=[c.name for c in PROJECTABLE])
@FEW
@given(data=st.data())
def test_projection_of_a_point_of_any_size_is_a_member(case: Case, data):
    dom = _domain(case.name)
    c = data.draw(_rows(dom.dim), label="c")
    s = data.draw(SCALES, label="s")
    x = s * c
    y = dom.project(x)
    assert y.shape == x.shape and np.all(np.isfinite(y))
    assert dom.contains(y), (case.name, x, y)
    # a member comes back (to rounding) unchanged
    np.testing.assert_allclose(dom.project(y), y, atol=1e-9)
    # the projection is 1-Lipschitz: a member moved by at most 1e-3 comes back that close
    v = dom.lmo(c)
    step = min(s, 1e-3) * c
    assert np.linalg.norm(dom.project(v + step) - v) <= np.linalg.norm(step) + 1e-9


@pytest.mark.parametrize("case", PROJECTABLE, ids=[c.name for c in PROJECTABLE])
def test_projection_of_far_points_along_a_ray_settles(case: Case):
    """Far enough along a generic ray from the centre the projection stops moving: at 1e12,
    1e100 and 1e300 times the same direction the answers agree to 1e-6."""
    dom = _domain(case.name)
    rng = np.random.default_rng(15)
    for _ in range(4):
        u = rng.normal(size=dom.dim)
        far = [dom.project(dom.interior_point() + s * u) for s in (1e12, 1e100, 1e300)]
        for y in far:
            assert dom.contains(y)
        np.testing.assert_allclose(far[1], far[0], atol=1e-6)
        np.testing.assert_allclose(far[2], far[0], atol=1e-6)


# --- refusals --------------------------------------------------------------------------------


def _calls(dom: ConvexDomain):
    """(argument name, callable) for every entry point that takes an array."""
    out = [("direction", dom.lmo), ("direction", dom.min_linear), ("x", dom.contains)]
    if isinstance(dom, Projectable):
        out.append(("x", dom.project))
    return out


@pytest.mark.parametrize("case", CASES, ids=IDS)
@settings(max_examples=8, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_nan_and_infinity_are_refused_naming_the_argument_and_index(case: Case, data):
    dom = _domain(case.name)
    bad = data.draw(st.sampled_from([math.nan, math.inf, -math.inf]), label="bad")
    rows = data.draw(st.integers(1, 3), label="rows")
    i = data.draw(st.integers(0, rows - 1), label="i")
    j = data.draw(st.integers(0, dom.dim - 1), label="j")
    arr = np.zeros((rows, dom.dim))
    arr[i, j] = bad
    for name, call in _calls(dom):
        value = re.escape(repr(bad))
        want = rf"^{name} must be finite real numbers, got {value} at index \({i}, {j}\)$"
        with pytest.raises(ValueError, match=want):
            call(arr)
        with pytest.raises(
            ValueError, match=rf"^{name} must be finite real numbers, got .* at index {j}$"
        ):
            call(arr[i])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_complex_non_numeric_ragged_and_misshapen_input_is_refused(case: Case):
    dom = _domain(case.name)
    n = dom.dim
    # the refusals of the package's one array check (dponline.privacy.arguments), which the
    # domains' checks start with
    for name, call in _calls(dom):
        with pytest.raises(TypeError, match=rf"^{name} must be real, got complex values"):
            call(np.zeros(n, dtype=complex))
        with pytest.raises(TypeError, match=rf"^{name} must be real numbers, got 1j in "):
            call(np.array([1j] + [0.0] * (n - 1), dtype=object))
        with pytest.raises(TypeError, match=rf"^{name} must be real numbers, got <U3 values"):
            call(["1.0"] * n)
        with pytest.raises(TypeError, match=rf"^{name} must be real numbers, got None in "):
            call(np.array([None] * n, dtype=object))
        with pytest.raises(ValueError, match=rf"^{name} must be an array of real numbers, got"):
            call([[0.0] * n, [0.0] * (n + 1)])
        shape = re.escape(f"must have shape (..., {n}) (last axis of length {n})")
        for wrong in (np.zeros(n + 1), np.zeros((2, n + 3)), 0.5, np.zeros((n, 0))):
            with pytest.raises(ValueError, match=rf"^{name} {shape}, got shape"):
                call(wrong)
    # integers and booleans are real numbers; an empty batch gives an empty answer
    np.testing.assert_array_equal(dom.lmo(np.ones(n, dtype=int)), dom.lmo(np.ones(n)))
    np.testing.assert_array_equal(dom.lmo(np.ones(n, dtype=bool)), dom.lmo(np.ones(n)))
    assert dom.lmo(np.zeros((0, n))).shape == (0, n)


def test_one_check_for_every_message():
    """Every message is a single line."""
    dom = _domain("simplex")
    for bad in (np.array([np.nan, 0, 0, 0]), np.zeros(4, dtype=complex), np.zeros(5)):
        with pytest.raises((ValueError, TypeError)) as err:
            dom.project(bad)
        assert "\n" not in str(err.value)
