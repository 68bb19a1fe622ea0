"""The ConvexDomain contract, checked on every set of the catalogue against brute force over
its vertices (and scipy's linprog on an explicit H-representation where there is one). Every
random draw uses a fixed seed."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.optimize import linprog

from dponline.domains import ConvexDomain
from tests.domains.catalogue import CASES, Case

IDS = [c.name for c in CASES]


@functools.cache
def _domain(name: str) -> ConvexDomain:
    return next(c for c in CASES if c.name == name).make()


@functools.cache
def _vertices(name: str) -> np.ndarray:
    return next(c for c in CASES if c.name == name).vertices()


def _directions(n: int, seed: int = 0) -> np.ndarray:
    """Random directions, then degenerate ones: zero, all ties, entries in {-1, 0, 1} (many
    ties), repeated entries, a single non-zero entry."""
    rng = np.random.default_rng(seed)
    rows = [
        *rng.normal(size=(6, n)),
        np.zeros(n),
        np.ones(n),
        -np.ones(n),
        *rng.integers(-1, 2, size=(6, n)).astype(float),
        np.repeat(rng.normal(size=(n + 1) // 2), 2)[:n],
        np.eye(n)[0] * -2.0,
        np.eye(n)[-1] * 3.0,
    ]
    return np.array(rows)


def _unit_rows(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    u = rng.normal(size=(count, dim))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lmo_value_matches_brute_force_and_linprog(case: Case):
    dom, verts = _domain(case.name), _vertices(case.name)
    d = _directions(dom.dim)
    x = dom.lmo(d)
    assert x.shape == d.shape
    best = (d @ verts.T).min(axis=1)
    np.testing.assert_allclose((x * d).sum(axis=1), best, atol=1e-9)
    np.testing.assert_allclose(dom.min_linear(d), best, atol=1e-9)
    if case.hrep is not None:
        h = case.hrep()
        for row, value in zip(d, best, strict=True):
            res = linprog(row, h.a_ub, h.b_ub, h.a_eq, h.b_eq, bounds=h.bounds, method="highs")
            assert res.status == 0
            assert res.fun == pytest.approx(value, abs=1e-8)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lmo_returns_members_and_vertices(case: Case):
    dom, verts = _domain(case.name), _vertices(case.name)
    x = dom.lmo(_directions(dom.dim, seed=1))
    assert dom.contains(x).all()
    if case.vertex_answers:
        gap = np.linalg.norm(x[:, None, :] - verts[None, :, :], axis=-1).min(axis=1)
        assert (gap < 1e-9).all()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lmo_is_vectorised_and_deterministic(case: Case):
    dom = _domain(case.name)
    d = _directions(dom.dim, seed=2)[:5]
    batch = dom.lmo(d)
    np.testing.assert_array_equal(batch, np.array([dom.lmo(row) for row in d]))
    np.testing.assert_array_equal(dom.lmo(d.reshape(5, 1, dom.dim)), batch[:, None, :])
    # ties: the same degenerate direction, many times, gives the same vertex every time
    ties = np.tile(_directions(dom.dim, seed=2)[6:10], (3, 1))
    out = dom.lmo(ties)
    np.testing.assert_array_equal(out, np.tile(out[:4], (3, 1)))
    np.testing.assert_array_equal(out, dom.lmo(ties))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bad_directions_are_refused(case: Case):
    dom = _domain(case.name)
    with pytest.raises(ValueError, match="last axis"):
        dom.lmo(np.zeros(dom.dim + 1))
    with pytest.raises(ValueError, match="last axis"):
        dom.lmo(np.float64(1.0))
    bad = np.zeros((2, dom.dim))
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        dom.lmo(bad)
    bad[1, 0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        dom.min_linear(bad)
    with pytest.raises(ValueError, match="last axis"):
        dom.contains(np.zeros((3, dom.dim + 2)))
    # a point with a NaN is neither in nor out of a set: refused like a NaN direction
    pts = np.tile(dom.interior_point(), (2, 1))
    pts[1, 0] = np.nan
    with pytest.raises(
        ValueError, match=r"^x must be finite real numbers, got nan at index \(1, 0\)$"
    ):
        dom.contains(pts)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_diameter_against_all_vertex_pairs(case: Case):
    dom, verts = _domain(case.name), _vertices(case.name)
    true = np.sqrt(((verts[:, None, :] - verts[None, :, :]) ** 2).sum(axis=-1).max())
    if dom.diameter_is_exact:
        assert dom.diameter == pytest.approx(true, abs=1e-9)
    else:
        assert dom.diameter >= true - 1e-9


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_affine_hull(case: Case):
    dom, verts = _domain(case.name), _vertices(case.name)
    q = dom.hull_basis()
    assert q.shape == (dom.dim, dom.affine_dim)
    np.testing.assert_allclose(q.T @ q, np.eye(dom.affine_dim), atol=1e-10)
    c = dom.interior_point()
    assert c.shape == (dom.dim,)
    dev = verts - c
    np.testing.assert_allclose(dev - (dev @ q) @ q.T, 0.0, atol=1e-9)
    rank = np.linalg.matrix_rank(verts - verts[0], tol=1e-9) if len(verts) > 1 else 0
    assert dom.affine_dim == rank


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_inscribed_ball_is_inside(case: Case):
    dom = _domain(case.name)
    r, c, q = dom.inscribed_radius, dom.interior_point(), dom.hull_basis()
    assert r > 0 and np.isfinite(r)
    assert dom.contains(c)
    if dom.affine_dim == 0:
        return
    u = _unit_rows(np.random.default_rng(3), 12, dom.affine_dim) @ q.T
    axes = np.vstack([q.T, -q.T])  # the ball's points along the basis directions
    pts = c + r * np.vstack([u, axes])
    assert dom.contains(pts).all()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_contains_accepts_inside_and_refuses_just_outside(case: Case):
    dom, verts = _domain(case.name), _vertices(case.name)
    rng = np.random.default_rng(4)
    w = rng.dirichlet(np.ones(len(verts)), size=6)
    inside = np.vstack([w @ verts, verts[:3]])
    assert dom.contains(inside).all()
    # 1e-3 beyond a supporting hyperplane: at distance >= 1e-3
    d = rng.normal(size=(6, dom.dim))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    outside = dom.lmo(d) - 1e-3 * d
    assert not dom.contains(outside).any()
    assert dom.contains(outside, tol=2e-3).all()
    # 1e-3 off the affine hull, in a direction orthogonal to it
    q = dom.hull_basis()
    if dom.affine_dim < dom.dim:
        normal = rng.normal(size=dom.dim)
        normal -= q @ (q.T @ normal)
        normal /= np.linalg.norm(normal)
        assert not dom.contains(dom.interior_point() + 1e-3 * normal)
        assert dom.contains(dom.interior_point() + 1e-3 * normal, tol=1.01e-3)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_contains_shapes(case: Case):
    dom = _domain(case.name)
    c = dom.interior_point()
    assert dom.contains(c).shape == ()
    assert dom.contains(np.tile(c, (2, 3, 1))).shape == (2, 3)
    with pytest.raises(ValueError, match="tol"):
        dom.contains(c, tol=-1.0)
