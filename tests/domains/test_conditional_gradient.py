"""The Frank-Wolfe solver of dponline.domains.conditional_gradient: certified duality gaps within
the stated LMO budget, the gap as an upper bound on every iterate, the open-loop rate, replicas
versus row-by-row solves, bit-exact resume, and one oracle call per step."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from dponline.domains.base import ConvexDomain
from dponline.domains.conditional_gradient import (
    FrankWolfe,
    FrankWolfeResult,
    QuadraticFrankWolfe,
    frank_wolfe,
    frank_wolfe_projection,
    lmo_budget,
)
from dponline.domains.lp_ball import LpBall

# --- small domains with closed-form projections ------------------------------------------------


def project_simplex_rows(y: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Projection onto {x >= 0, sum x = total} (sort algorithm, Held, Wolfe & Crowder 1974)."""
    n = y.shape[-1]
    u = -np.sort(-y, axis=-1)
    css = np.cumsum(u, axis=-1) - total
    k = np.arange(1, n + 1)
    rho = np.maximum(np.count_nonzero(u - css / k > 0, axis=-1), 1)
    theta = np.take_along_axis(css, (rho - 1)[:, None], axis=-1) / rho[:, None]
    return np.maximum(y - theta, 0.0)


class SimplexDomain(ConvexDomain):
    """The probability simplex; LMO = e_i at the first smallest coordinate of the direction."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        d = np.asarray(direction, dtype=float)
        return np.eye(self.dim)[np.argmin(d, axis=-1)]

    @property
    def diameter(self) -> float:
        return math.sqrt(2.0)

    @property
    def affine_dim(self) -> int:
        return self.dim - 1

    def hull_basis(self) -> np.ndarray:
        u, _, _ = np.linalg.svd(np.eye(self.dim) - 1.0 / self.dim)
        return u[:, : self.dim - 1]

    def interior_point(self) -> np.ndarray:
        return np.full(self.dim, 1.0 / self.dim)

    @property
    def inscribed_radius(self) -> float:
        return 1.0 / math.sqrt(self.dim * (self.dim - 1))

    def project(self, x: np.ndarray) -> np.ndarray:
        return project_simplex_rows(np.atleast_2d(x))

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        x = np.atleast_2d(x)
        return np.linalg.norm(x - self.project(x), axis=-1) <= tol


class BoxDomain(ConvexDomain):
    """The box [lo, hi]^dim; LMO = hi where the direction is < 0, else lo."""

    def __init__(self, dim: int, lo: float, hi: float) -> None:
        self.dim, self.lo, self.hi = dim, lo, hi

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        d = np.asarray(direction, dtype=float)
        return np.where(d < 0, self.hi, self.lo)

    @property
    def diameter(self) -> float:
        return (self.hi - self.lo) * math.sqrt(self.dim)

    @property
    def affine_dim(self) -> int:
        return self.dim

    def hull_basis(self) -> np.ndarray:
        return np.eye(self.dim)

    def interior_point(self) -> np.ndarray:
        return np.full(self.dim, 0.5 * (self.lo + self.hi))

    @property
    def inscribed_radius(self) -> float:
        return 0.5 * (self.hi - self.lo)

    def project(self, x: np.ndarray) -> np.ndarray:
        return np.clip(x, self.lo, self.hi)

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        x = np.atleast_2d(x)
        return np.linalg.norm(x - self.project(x), axis=-1) <= tol


class Counting(ConvexDomain):
    """Wraps a domain and counts the calls of its oracle."""

    def __init__(self, inner) -> None:
        self.inner, self.dim, self.calls = inner, inner.dim, 0

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        self.calls += 1
        return self.inner.lmo(direction)

    @property
    def diameter(self) -> float:
        return self.inner.diameter

    @property
    def affine_dim(self) -> int:
        return self.inner.affine_dim

    def hull_basis(self) -> np.ndarray:
        return self.inner.hull_basis()

    def interior_point(self) -> np.ndarray:
        return self.inner.interior_point()

    @property
    def inscribed_radius(self) -> float:
        return self.inner.inscribed_radius

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return self.inner.contains(x, tol)


def _l1_projection(y: np.ndarray, r: float) -> np.ndarray:
    inside = np.abs(y).sum(axis=1, keepdims=True) <= r
    return np.where(inside, y, np.sign(y) * project_simplex_rows(np.abs(y), r))


def _l2_projection(y: np.ndarray, r: float) -> np.ndarray:
    n = np.linalg.norm(y, axis=1, keepdims=True)
    return np.where(n <= r, y, y * (r / np.maximum(n, r)))


class Case:
    """A domain, its Euclidean diameter (computed here), a start in it, and the exact
    Euclidean projection."""

    def __init__(self, name, domain, diameter, start, project) -> None:
        self.name, self.domain, self.diameter = name, domain, diameter
        self.start_point, self.project = np.asarray(start, dtype=float), project

    def start(self, replicas: int) -> np.ndarray:
        return np.tile(self.start_point, (replicas, 1))


DIM = 6


def _cases() -> list[Case]:
    r = 1.5
    return [
        Case("l2 ball", LpBall(DIM, 2, r), 2 * r, np.zeros(DIM), lambda y: _l2_projection(y, r)),
        Case(
            "linf ball",
            LpBall(DIM, math.inf, r),
            2 * r * math.sqrt(DIM),
            np.zeros(DIM),
            lambda y: np.clip(y, -r, r),
        ),
        Case("l1 ball", LpBall(DIM, 1, r), 2 * r, np.zeros(DIM), lambda y: _l1_projection(y, r)),
        Case(
            "simplex",
            SimplexDomain(DIM),
            math.sqrt(2.0),
            np.eye(DIM)[0],
            project_simplex_rows,
        ),
        Case(
            "box",
            BoxDomain(DIM, -0.5, 2.0),
            2.5 * math.sqrt(DIM),
            np.full(DIM, 2.0),
            lambda y: np.clip(y, -0.5, 2.0),
        ),
    ]


CASES = {c.name: c for c in _cases()}


def _points(seed: int, replicas: int, scale: float = 2.0) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal((replicas, DIM))


def _q(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """1/2 ||x - y||^2 row by row (= 1/2 ||x||^2 - <y, x> + const)."""
    return 0.5 * ((x - y) ** 2).sum(axis=-1)


# --- reaching the gap within the stated budget --------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("rule", ["exact_quadratic", "short", "open_loop", "projection"])
def test_reaches_gap_within_stated_budget_and_certifies_distance(name: str, rule: str) -> None:
    case = CASES[name]
    y = _points(seed=11, replicas=5)
    y[0] = case.project(y[:1])[0]  # one target already in the set
    x_star = case.project(y)
    tol = 2e-3
    budget = lmo_budget(case.diameter**2, tol)  # C_f <= L D^2 with L = 1
    start = case.start(5)
    if rule == "projection":
        res = frank_wolfe_projection(
            case.domain, y, tolerance=tol, max_lmo_calls=budget, start=start
        )
    else:
        res = frank_wolfe(
            case.domain,
            lambda x: x - y,
            start,
            tolerance=tol,
            max_lmo_calls=budget,
            step=rule,
            smoothness=1.0,
            hessian_vector=lambda d: d,
            value=lambda x: _q(x, y),
        )
    assert isinstance(res, FrankWolfeResult)
    assert res.all_converged and res.lmo_calls <= budget
    assert np.all(res.gap <= tol) and np.all(res.bound <= tol)
    # 1-strongly convex: ||x - x*|| <= sqrt(2 (f(x) - f*)) <= sqrt(2 gap)
    dist = np.linalg.norm(res.x - x_star, axis=1)
    assert np.all(dist <= np.sqrt(2.0 * np.maximum(res.gap, 0.0)) + 1e-12)
    assert np.all(_q(res.x, y) - _q(x_star, y) <= res.gap + 1e-12)
    shift = 0.5 * (y**2).sum(axis=1) if rule == "projection" else 0.0  # 1/2||x||^2 - <y, x>
    np.testing.assert_allclose(res.value, _q(res.x, y) - shift, atol=1e-12)
    with pytest.raises(ValueError):
        res.x[0, 0] = 1.0  # frozen arrays


def test_default_budget_is_the_stated_one() -> None:
    case = CASES["simplex"]
    y = _points(seed=3, replicas=4)
    tol = 1e-3
    res = frank_wolfe(
        case.domain, lambda x: x - y, case.start(4), tolerance=tol, step="short", smoothness=1.0
    )
    budget = lmo_budget(case.domain.diameter**2, tol)
    assert res.all_converged and res.lmo_calls <= budget
    solver = QuadraticFrankWolfe(case.domain, case.start(4), y)
    assert solver.budget(tol) == budget
    assert lmo_budget(1.0, 1e-2) == math.ceil(27 / (4 * 1e-2)) - 1 == 674
    assert lmo_budget(1.0, 1.0) == 6 and lmo_budget(0.0, 1.0) == 3


def test_general_quadratic_with_hessian_on_a_box() -> None:
    """f = 1/2 (x - y)' diag(q) (x - y) over a box: separable, so x* = clip(y); L = max q."""
    case = CASES["box"]
    rng = np.random.default_rng(5)
    y = _points(seed=6, replicas=4)
    q = rng.uniform(0.2, 3.0, DIM)
    x_star = np.clip(y, -0.5, 2.0)
    tol = 1e-2
    L = float(q.max())
    budget = lmo_budget(L * case.diameter**2, tol)
    for rule in ("exact_quadratic", "short"):
        res = frank_wolfe(
            case.domain,
            lambda x: q * (x - y),
            case.start(4),
            tolerance=tol,
            max_lmo_calls=budget,
            step=rule,
            smoothness=L,
            hessian_vector=lambda d: q * d,
        )
        assert res.all_converged and res.lmo_calls <= budget
        excess = 0.5 * (q * (res.x - y) ** 2).sum(1) - 0.5 * (q * (x_star - y) ** 2).sum(1)
        assert np.all(excess <= res.gap + 1e-12)
        # q_min-strongly convex
        dist = np.linalg.norm(res.x - x_star, axis=1)
        assert np.all(dist <= np.sqrt(2.0 * np.maximum(res.gap, 0) / q.min()) + 1e-12)


# --- the gap bounds f - f* on every iterate ------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("rule", ["open_loop", "short", "exact_quadratic"])
def test_gap_upper_bounds_suboptimality_on_every_iterate(name: str, rule: str) -> None:
    case = CASES[name]
    y = _points(seed=21, replicas=6)
    f_star = _q(case.project(y), y)
    solver = FrankWolfe(
        case.domain,
        lambda x: x - y,
        case.start(6),
        step=rule,
        smoothness=1.0,
        hessian_vector=lambda d: d,
    )
    for _ in range(150):
        before = solver.x
        gaps = solver.step(0.0)
        np.testing.assert_array_equal(gaps, solver.gaps)
        assert np.all(_q(before, y) - f_star <= gaps + 1e-12)  # gap at the iterate measured
        assert np.all(_q(solver.x, y) - f_star <= solver.bounds + 1e-12)  # bound at the new one
        assert np.all(case.domain.contains(solver.x, 1e-9))


# --- the open-loop rate ---------------------------------------------------------------------------


def _rate_instances():
    """(domain, D, grad, f - f*, L) for quadratics with known minimisers."""
    out = []
    for k, name in enumerate(CASES):
        case = CASES[name]
        y = _points(seed=100 + k, replicas=4, scale=3.0)
        x_star = case.project(y)
        out.append((case, lambda x, y=y: x - y, lambda x, y=y, s=x_star: _q(x, y) - _q(s, y), 1.0))
    case = CASES["box"]
    q = np.random.default_rng(7).uniform(0.5, 4.0, DIM)
    y = _points(seed=8, replicas=4, scale=3.0)
    x_star = np.clip(y, -0.5, 2.0)

    def excess(x, y=y, q=q, s=x_star):
        return 0.5 * (q * (x - y) ** 2).sum(1) - 0.5 * (q * (s - y) ** 2).sum(1)

    out.append((case, lambda x, y=y, q=q: q * (x - y), excess, float(q.max())))
    return out


@pytest.mark.parametrize("rule", ["open_loop", "short", "exact_quadratic"])
def test_primal_rate_two_curvature_over_k_plus_two(rule: str) -> None:
    """f(x_k) - f* <= 2 C_f / (k + 2) <= 2 L D^2 / (k + 2) for every k >= 1 (Jaggi, Theorem 1)."""
    for case, grad, excess, L in _rate_instances():
        solver = FrankWolfe(
            case.domain,
            grad,
            case.start(4),
            step=rule,
            smoothness=L,
            hessian_vector=lambda d, g=grad: g(d) - g(np.zeros_like(d)),
        )
        c = L * case.diameter**2
        for k in range(1, 301):
            solver.step(0.0)
            assert solver.steps == k
            assert np.all(excess(solver.x) <= 2.0 * c / (k + 2) + 1e-12), (case.name, k)


# --- replicas versus rows ------------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["open_loop", "short", "exact_quadratic"])
def test_replicas_equal_row_by_row_solves(rule: str) -> None:
    case = CASES["l1 ball"]
    y = _points(seed=31, replicas=5)
    q = np.random.default_rng(32).uniform(0.5, 2.0, DIM)
    kw = dict(tolerance=3e-3, max_lmo_calls=4000, step=rule, smoothness=float(q.max()))

    def run(rows):
        yy = y[rows]
        return frank_wolfe(
            case.domain,
            lambda x: q * (x - yy),
            case.start(len(rows)),
            hessian_vector=lambda d: q * d,
            **kw,
        )

    together = run(list(range(5)))
    alone = [run([i]) for i in range(5)]
    np.testing.assert_array_equal(together.x, np.vstack([a.x for a in alone]))
    np.testing.assert_array_equal(together.gap, np.concatenate([a.gap for a in alone]))
    np.testing.assert_array_equal(together.bound, np.concatenate([a.bound for a in alone]))
    np.testing.assert_array_equal(together.converged, [a.converged[0] for a in alone])
    assert together.lmo_calls == max(a.lmo_calls for a in alone)
    assert len({a.lmo_calls for a in alone}) > 1  # the replicas did stop at different steps

    proj_together = frank_wolfe_projection(case.domain, y, tolerance=1e-4, start=case.start(5))
    for i in range(5):
        a = frank_wolfe_projection(case.domain, y[i : i + 1], tolerance=1e-4, start=case.start(1))
        np.testing.assert_array_equal(proj_together.x[i], a.x[0])
        np.testing.assert_array_equal(proj_together.gap[i], a.gap[0])


# --- state round trip -----------------------------------------------------------------------------


def _assert_same(a, b) -> None:
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.gaps, b.gaps)
    np.testing.assert_array_equal(a.bounds, b.bounds)
    np.testing.assert_array_equal(a.moved, b.moved)
    assert (a.steps, a.lmo_calls) == (b.steps, b.lmo_calls)


def _plain(state) -> None:
    for key, value in state.items():
        assert type(value) is int or isinstance(value, np.ndarray), key


def test_quadratic_state_round_trip_resumes_bit_exactly() -> None:
    case = CASES["simplex"]
    y = _points(seed=41, replicas=4)
    a = QuadraticFrankWolfe(case.domain, case.start(4), y)
    for _ in range(7):
        a.step(1e-4)
    state = copy.deepcopy(a.state_dict())
    _plain(state)
    for _ in range(5):
        a.step(1e-4)
    a.reset(y[::-1])  # a new v mid-run, warm start
    for _ in range(9):
        a.step(1e-4)

    b = QuadraticFrankWolfe(case.domain, np.tile(np.eye(DIM)[3], (4, 1)))  # other start, v = 0
    b.load_state_dict(state)
    state["x"][:] = 0.0  # the solver holds its own copy
    for _ in range(5):
        b.step(1e-4)
    b.reset(y[::-1])
    for _ in range(9):
        b.step(1e-4)
    _assert_same(a, b)
    np.testing.assert_array_equal(a.linear, b.linear)


def test_general_state_round_trip_resumes_bit_exactly() -> None:
    case = CASES["l2 ball"]
    y = _points(seed=42, replicas=3)
    kw = dict(step="open_loop", smoothness=1.0)
    a = FrankWolfe(case.domain, lambda x: x - y, case.start(3), **kw)
    for _ in range(6):
        a.step(0.0)
    state = a.state_dict()
    _plain(state)
    b = FrankWolfe(case.domain, lambda x: x - y, case.start(3), **kw)
    b.load_state_dict(state)
    for _ in range(11):
        a.step(0.0)
        b.step(0.0)
    _assert_same(a, b)
    with pytest.raises(ValueError, match="shape"):
        FrankWolfe(case.domain, lambda x: x - y[:2], case.start(2), **kw).load_state_dict(state)


# --- one oracle call per step, warm starts ------------------------------------------------------


def test_step_makes_exactly_one_lmo_call() -> None:
    dom = Counting(LpBall(DIM, 1, 1.0))
    y = _points(seed=51, replicas=3)
    solver = QuadraticFrankWolfe(dom, np.zeros((3, DIM)), y)
    assert dom.calls == 0 and solver.lmo_calls == 0
    for n in range(1, 41):
        solver.step(threshold=1e-6)
        assert dom.calls == n == solver.lmo_calls
    # every replica converged: a step still makes exactly one call and moves nobody
    solver.step(threshold=1e9)
    x = solver.x
    solver.step(threshold=1e9)
    assert dom.calls == 42 == solver.lmo_calls
    np.testing.assert_array_equal(solver.x, x)
    assert solver.converged(1e9).all() and not solver.moved.any()
    # reset makes no call and keeps the counter and the iterate
    solver.reset(-y)
    assert dom.calls == 42 == solver.lmo_calls
    np.testing.assert_array_equal(solver.x, x)
    assert np.all(np.isinf(solver.gaps)) and not solver.converged(1e9).any()

    gen = FrankWolfe(dom, lambda x: x - y, np.zeros((3, DIM)), step="open_loop")
    before = dom.calls
    gen.step()
    assert dom.calls == before + 1 == before + gen.lmo_calls
    before = dom.calls
    res = frank_wolfe(dom, lambda x: x - y, np.zeros((3, DIM)), tolerance=1e-3, max_lmo_calls=50)
    assert dom.calls - before == res.lmo_calls <= 50


def test_online_use_one_call_per_round_with_warm_starts() -> None:
    """Ene et al. Algorithm 1 line 14: per batch a new v per replica, one oracle call per round,
    warm-started from the previous answer; a tiny move of v needs few calls."""
    case = CASES["l1 ball"]
    dom = Counting(case.domain)
    rng = np.random.default_rng(61)
    v = 2.0 * rng.standard_normal((4, DIM))
    solver = QuadraticFrankWolfe(dom, np.zeros((4, DIM)))
    eps = 1e-6
    for batch in range(6):
        solver.reset(v)
        rounds = 0
        while not solver.converged(eps).all():
            solver.step(threshold=eps)
            rounds += 1
        assert rounds <= solver.budget(eps)
        dist = np.linalg.norm(solver.x - case.project(v), axis=1)
        assert np.all(dist <= np.sqrt(2 * np.maximum(solver.gaps, 0.0)) + 1e-12)
        if batch == 0:
            cold = rounds
        else:
            assert rounds < cold
        v = v + 1e-3 * rng.standard_normal(v.shape)
    assert dom.calls == solver.lmo_calls


# --- validation ----------------------------------------------------------------------------------


def test_validation_errors() -> None:
    dom = LpBall(DIM, 2, 1.0)
    start = np.zeros((2, DIM))

    def grad(x):
        return x - 1.0

    with pytest.raises(ValueError, match="smoothness"):
        FrankWolfe(dom, grad, start, step="short")
    with pytest.raises(ValueError, match="smoothness"):
        frank_wolfe(dom, grad, start, tolerance=1e-3, max_lmo_calls=10, step="short")
    with pytest.raises(ValueError, match="smoothness"):
        FrankWolfe(dom, grad, start, step="short", smoothness=-1.0)
    with pytest.raises(ValueError, match="hessian_vector"):
        FrankWolfe(dom, grad, start, step="exact_quadratic")
    with pytest.raises(ValueError, match="step must be one of"):
        FrankWolfe(dom, grad, start, step="armijo")
    for bad in (-1e-3, math.nan, math.inf):
        with pytest.raises(ValueError, match="tolerance"):
            frank_wolfe(dom, grad, start, tolerance=bad, max_lmo_calls=10)
        with pytest.raises(ValueError, match="tolerance"):
            lmo_budget(1.0, bad)
    with pytest.raises(ValueError, match="tolerance"):
        lmo_budget(1.0, 0.0)
    with pytest.raises(TypeError, match="tolerance"):
        frank_wolfe(dom, grad, start, tolerance="small", max_lmo_calls=10)
    with pytest.raises(ValueError, match="max_lmo_calls"):
        frank_wolfe(dom, grad, start, tolerance=1e-3, max_lmo_calls=0)
    with pytest.raises(ValueError, match="max_lmo_calls=None"):
        frank_wolfe(dom, grad, start, tolerance=1e-3)
    for bad_start in (np.zeros(DIM), np.zeros((2, DIM + 1)), np.zeros((0, DIM))):
        with pytest.raises(ValueError, match="start must have shape"):
            frank_wolfe(dom, grad, bad_start, tolerance=1e-3, max_lmo_calls=10)
        with pytest.raises(ValueError, match="start must have shape"):
            QuadraticFrankWolfe(dom, bad_start)
    with pytest.raises(ValueError, match="finite"):
        QuadraticFrankWolfe(dom, np.full((2, DIM), np.nan))
    with pytest.raises(ValueError, match="non-finite"):
        frank_wolfe(dom, lambda x: x * np.nan, start, tolerance=1e-3, max_lmo_calls=10)
    with pytest.raises(ValueError, match="shape"):
        frank_wolfe(dom, lambda x: x[:, :2], start, tolerance=1e-3, max_lmo_calls=10)
    with pytest.raises(ValueError, match="threshold"):
        QuadraticFrankWolfe(dom, start).step(threshold=-1.0)
    with pytest.raises(ValueError, match="linear must have shape"):
        QuadraticFrankWolfe(dom, start).reset(np.zeros((3, DIM)))

    # a failed step leaves the solver unchanged
    calls = {"n": 0}

    def flaky(x):
        calls["n"] += 1
        return x - 1.0 if calls["n"] <= 3 else np.full_like(x, np.inf)

    solver = FrankWolfe(dom, flaky, start, step="open_loop")
    for _ in range(3):
        solver.step()
    saved = solver.state_dict()
    with pytest.raises(ValueError, match="non-finite"):
        solver.step()
    after = solver.state_dict()
    for key in saved:
        np.testing.assert_array_equal(saved[key], after[key])
