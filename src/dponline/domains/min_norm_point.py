"""Wolfe's minimum-norm-point algorithm over a polytope known through its linear oracle, and the
exact membership test built on it.

Wolfe (1976) finds the point of least Euclidean norm in a polytope Q = conv(V) touching V only
through ``argmin_{v in Q} <y, v>``: it keeps a *corral* S of affinely independent vertices and
the current point y = sum lambda_i s_i (lambda in the simplex); each major cycle adds the
oracle's vertex for y, each minor cycle moves y towards the affine minimiser of S and drops the
vertices whose weight reaches 0. It terminates after finitely many steps in exact arithmetic.

With Q = P - x this gives the distance from x to P, and at every step a *certified* bracket:
for y in Q and v = LMO(y),

    dist(x, P) = min_{z in Q} ||z||  <=  ||y||                     (y is a point of Q)
    dist(x, P) >= <y, z*> / ||y|| >= min_{v in Q} <y, v> / ||y||  (Cauchy-Schwarz, z* optimal)

so :func:`lmo_contains` stops as soon as the bracket decides ``dist <= tol`` either way; when the
algorithm has converged (Wolfe gap ``||y||^2 - <y, v>`` at rounding level) the distance is
``||y||`` up to rounding, and a point is accepted if ``||y|| <= tol + 1e-12 * scale``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["MinNormResult", "contains_rows", "lmo_contains", "min_norm_point"]

Oracle = Callable[[np.ndarray], np.ndarray]


class MinNormResult:
    """Output of :func:`min_norm_point`: the nearest point found, its distance bracket, and
    whether the algorithm converged."""

    __slots__ = ("converged", "iterations", "lower", "point", "upper")

    def __init__(
        self, point: np.ndarray, lower: float, upper: float, converged: bool, iterations: int
    ) -> None:
        self.point = point
        self.lower = lower
        self.upper = upper
        self.converged = converged
        self.iterations = iterations


def _affine_minimiser(corral: np.ndarray) -> np.ndarray:
    """argmin ||sum a_i s_i|| over sum a_i = 1 (the rows s_i of ``corral``), by the KKT system
    [[G, 1], [1^T, 0]] (a, mu) = (0, 1), G the Gram matrix (least squares if near-singular)."""
    k = corral.shape[0]
    if k == 1:
        return np.ones(1)
    kkt = np.zeros((k + 1, k + 1))
    kkt[:k, :k] = corral @ corral.T
    kkt[:k, k] = kkt[k, :k] = 1.0
    rhs = np.zeros(k + 1)
    rhs[k] = 1.0
    try:
        sol = np.linalg.solve(kkt, rhs)
    except np.linalg.LinAlgError:
        sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
    a = sol[:k]
    return a / a.sum()


def min_norm_point(
    lmo: Oracle,
    x: np.ndarray,
    start: np.ndarray,
    *,
    stop: Callable[[float, float], bool] | None = None,
    max_iter: int = 10_000,
) -> MinNormResult:
    """The point of P nearest to ``x`` (P given by ``lmo``, a map (dim,) -> vertex of P), by
    Wolfe's algorithm on P - x started at the vertex ``start``. ``stop(lower, upper)`` may end
    the run early once the distance bracket is enough for the caller."""
    x = np.asarray(x, dtype=float)
    s0 = np.asarray(start, dtype=float) - x
    scale = max(1.0, float(np.abs(s0).max()), float(np.abs(x).max()))
    corral = s0[None, :]
    lam = np.ones(1)
    y = s0
    lower, upper = 0.0, float(np.linalg.norm(y))
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        v = np.asarray(lmo(y), dtype=float) - x
        yy = float(y @ y)
        yv = float(y @ v)
        upper = float(np.sqrt(yy))
        if upper > 0:
            lower = max(lower, yv / upper)
        if stop is not None and stop(lower, upper):
            break
        big = max(float((corral * corral).sum(axis=1).max()), float(v @ v))
        if yy - yv <= 1e-12 * big or upper == 0:
            converged = True
            break
        if np.any(np.all(np.abs(corral - v) <= 1e-12 * scale, axis=1)):
            converged = True  # the oracle returns a corral vertex: optimal up to rounding
            break
        corral = np.vstack([corral, v])
        lam = np.append(lam, 0.0)
        while True:  # minor cycles
            alpha = _affine_minimiser(corral)
            if np.all(alpha > 1e-14):
                lam = alpha
                break
            neg = alpha <= 1e-14
            denom = lam[neg] - alpha[neg]
            ratios = np.where(denom > 0, lam[neg] / np.where(denom > 0, denom, 1.0), np.inf)
            theta = float(min(1.0, ratios.min()))
            lam = theta * alpha + (1.0 - theta) * lam
            keep = lam > 1e-14
            if keep.all():  # rounding: drop the smallest weight to make progress
                keep[int(np.argmin(lam))] = False
            corral, lam = corral[keep], lam[keep]
            lam = lam / lam.sum()
            if corral.shape[0] == 1:
                break
        y = lam @ corral
    upper = float(np.linalg.norm(y))
    return MinNormResult(x + y, min(lower, upper), upper, converged, it)


def lmo_contains(
    lmo: Oracle,
    x: np.ndarray,
    start: np.ndarray,
    tol: float,
    *,
    max_iter: int = 10_000,
) -> bool:
    """Whether ``dist(x, P) <= tol``, decided by the certified bracket of
    :func:`min_norm_point` (see the module docstring)."""
    x = np.asarray(x, dtype=float)
    res = min_norm_point(
        lmo, x, start, stop=lambda lo, up: up <= tol or lo > tol, max_iter=max_iter
    )
    if res.upper <= tol:
        return True
    if res.lower > tol:
        return False
    scale = max(1.0, float(np.abs(x).max()))
    return res.upper <= tol + 1e-12 * scale


Bounds = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def contains_rows(
    x: np.ndarray,
    tol: float,
    lmo: Oracle,
    centre: np.ndarray,
    bounds: Bounds | None = None,
) -> np.ndarray:
    """Membership of each row of ``x`` (shape (..., dim)) up to Euclidean distance ``tol``:
    rows with a non-finite entry are not members; ``bounds`` (certified lower and upper bounds
    on the distance, for a 2-d array of finite rows) decides the clear cases, and
    :func:`lmo_contains` (Wolfe started at LMO(centre - x), the vertex furthest towards x)
    decides the rest exactly."""
    n = x.shape[-1]
    flat = x.reshape(-1, n)
    out = np.zeros(flat.shape[0], dtype=bool)
    finite = np.all(np.isfinite(flat), axis=1)
    idx = np.flatnonzero(finite)
    if idx.size:
        rows = flat[idx]
        if bounds is None:
            undecided = np.ones(idx.size, dtype=bool)
        else:
            lower, upper = bounds(rows)
            out[idx[upper <= tol]] = True
            undecided = (upper > tol) & (lower <= tol)
        for i in np.flatnonzero(undecided):
            row = rows[i]
            start = np.asarray(lmo(centre - row), dtype=float)
            out[idx[i]] = lmo_contains(lmo, row, start, tol)
    return out.reshape(x.shape[:-1])
