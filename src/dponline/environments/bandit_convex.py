"""Bandit convex optimisation over any decision set with a linear minimisation oracle (Ene,
Nguyen & Vladu 2021, Section 2): the learner plays a point x_t and sees only f_t(x_t).

Losses are oblivious sequences of one family, each centred so that it vanishes at the set's
interior point c (the paper's convention that every f_t vanishes somewhere in D, which bounds
|f_t| by L times the distance to c):

* :class:`LinearLosses`: f_t(x) = <theta_t, x - c>, L = max ||theta_t||;
* :class:`QuadraticLosses`: f_t(x) = (||x - a_t||^2 - ||c - a_t||^2) / 2, L = the largest
  distance from a target to a point within ``reach`` of the set;
* :class:`LevelLosses`: f_t(x) = g_t(<a, x>) - g_t(<a, c>) with the piecewise-linear
  g_t(z) = over_t max(0, z - b_t) + under_t max(0, b_t - z): absolute deviation from a level
  (over = under = 1), hinge losses (one of them 0) and pinball losses; Lipschitz, not smooth.

Regret is against the best fixed point of the set in hindsight, at every round: for linear
losses one oracle call per round on the cumulative loss (exact), for quadratic ones the
projection of the running mean target, by the conditional gradient method to a certified
duality gap (the comparator's value is then within ``comparator_error`` of the true minimum);
for level losses exactly, by the running weighted median of the levels clipped to the range of
<a, x> over the set (two oracle calls and O(log T) per round).

Why the non-smooth family has one direction a: a sum of absolute values or hinges in *different*
directions is a polyhedral function whose minimum over an oracle-only set needs a linear
program (column generation) per round, O(T^2) work for the whole regret curve, and the
conditional gradient method has no certified accuracy on non-smooth sums. With one direction
the sum depends on x through z = <a, x> alone, so the comparator is exact at every round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dponline.domains.base import ConvexDomain, Projectable
from dponline.domains.box import Box
from dponline.domains.conditional_gradient import QuadraticFrankWolfe
from dponline.domains.lp_ball import LpBall
from dponline.domains.matroids import UniformMatroidBasePolytope
from dponline.domains.paths import PathPolytope
from dponline.domains.simplex import Simplex
from dponline.environments.base import at_rounds
from dponline.environments.oblivious import Stateless
from dponline.privacy.bounds import check_finite
from dponline.protocol import BanditFeedback, FeedbackKind

__all__ = [
    "DOMAIN_NAMES",
    "LOSS_NAMES",
    "BanditConvexEnvironment",
    "LevelLosses",
    "LinearLosses",
    "QuadraticLosses",
    "bandit_convex",
    "grid_dag",
    "make_domain",
]


def _rows(values: np.ndarray, dim: int, name: str) -> np.ndarray:
    a = check_finite(values, name)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] != dim:
        raise ValueError(f"{name} must be a (T, {dim}) array, got shape {a.shape}")
    return a


def _within(what: str, norms: np.ndarray, bound: float) -> None:
    b = float(bound)
    if not (np.isfinite(b) and b > 0):
        raise ValueError(f"the declared bound must be finite and positive, got {bound!r}")
    if norms.max() > b * (1 + 1e-12):
        t = int(np.argmax(norms))
        raise ValueError(f"round {t}: {what} {norms[t]:.6g} exceeds the declared bound {b:.6g}")


@dataclass(frozen=True)
class LinearLosses:
    """f_t(x) = <theta_t, x - c> for the rows theta_t of ``vectors`` (T, n), each of l2 norm
    at most the declared ``bound`` (checked; the learner's guarantee is stated from declared
    bounds, never from the data)."""

    vectors: np.ndarray
    center: np.ndarray
    bound: float = 1.0

    kind: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        c = check_finite(self.center, "center")
        object.__setattr__(self, "center", c)
        object.__setattr__(self, "vectors", _rows(self.vectors, c.shape[-1], "loss vectors"))
        _within("loss vector", np.linalg.norm(self.vectors, axis=1), self.bound)

    @property
    def horizon(self) -> int:
        return int(self.vectors.shape[0])

    def lipschitz(self, domain: ConvexDomain, reach: float = 0.0) -> float:
        """The declared bound on ||theta_t||_2."""
        return float(self.bound)

    def value(self, t: int, x: np.ndarray) -> np.ndarray:
        return (x - self.center) @ self.vectors[t]

    def best(self, domain: ConvexDomain) -> tuple[np.ndarray, float]:
        """min_x sum_{s<=t} f_s(x) for every t, exactly (one oracle call per round)."""
        cum = np.cumsum(self.vectors, axis=0)
        return domain.min_linear(cum) - cum @ self.center, 0.0


@dataclass(frozen=True)
class QuadraticLosses:
    """f_t(x) = (||x - a_t||^2 - ||c - a_t||^2) / 2 for the rows a_t of ``targets`` (T, n),
    each within the declared ``radius`` of c (checked)."""

    targets: np.ndarray
    center: np.ndarray
    radius: float = 1.0
    #: duality gap to which the comparator's projections are solved
    tolerance: float = 1e-9
    max_lmo_calls: int = 20_000

    kind: ClassVar[str] = "quadratic"

    def __post_init__(self) -> None:
        c = check_finite(self.center, "center")
        object.__setattr__(self, "center", c)
        object.__setattr__(self, "targets", _rows(self.targets, c.shape[-1], "targets"))
        _within(
            "target's distance to the centre", np.linalg.norm(self.targets - c, axis=1), self.radius
        )
        if not (self.tolerance > 0 and self.max_lmo_calls >= 1):
            raise ValueError(
                f"need tolerance > 0 and max_lmo_calls >= 1, got {self.tolerance!r}, "
                f"{self.max_lmo_calls!r}"
            )

    @property
    def horizon(self) -> int:
        return int(self.targets.shape[0])

    def lipschitz(self, domain: ConvexDomain, reach: float = 0.0) -> float:
        """sup ||x - a_t|| over x within ``reach`` of the set: <= radius + D + reach (c is in
        the set, so ||x - c|| <= D + reach)."""
        return float(self.radius) + float(domain.diameter) + float(reach)

    def value(self, t: int, x: np.ndarray) -> np.ndarray:
        a = self.targets[t]
        return 0.5 * (((x - a) ** 2).sum(axis=-1) - float(((self.center - a) ** 2).sum()))

    def best(self, domain: ConvexDomain) -> tuple[np.ndarray, float]:
        """min_x sum_{s<=t} f_s(x) = t min_x (||x - abar_t||^2 / 2) + const_t, abar_t the mean
        target: the projection of abar_t (the domain's own projection where it has one, else
        one conditional-gradient solve vectorised over t). Returns the values and a certified
        bound on their excess over the true minima (t times the solver's gap bound)."""
        n = np.arange(1, self.horizon + 1, dtype=float)
        mean = np.cumsum(self.targets, axis=0) / n[:, None]
        error = 0.0
        if isinstance(domain, Projectable):
            x = np.asarray(domain.project(mean), dtype=float)
        else:
            start = np.broadcast_to(np.asarray(domain.interior_point(), float), mean.shape)
            solver = QuadraticFrankWolfe(domain, start)
            solver.reset(mean, start=start)
            while solver.lmo_calls < self.max_lmo_calls:
                solver.step(threshold=self.tolerance)
                if solver.converged(self.tolerance).all():
                    break
            x = solver.x
            error = float((n * solver.bounds).max())  # certified: q(x) - q* <= bound
        # sum_{s<=t} f_s(x_t) = (t ||x_t||^2 - 2 <x_t, S_t> + Q_t) / 2 - C_t
        s_t = np.cumsum(self.targets, axis=0)
        q_t = np.cumsum((self.targets**2).sum(axis=1))
        c_t = 0.5 * np.cumsum(((self.center - self.targets) ** 2).sum(axis=1))
        values = 0.5 * (n * (x**2).sum(axis=1) - 2.0 * (x * s_t).sum(axis=1) + q_t) - c_t
        return values, error


def _weighted_median_minima(
    levels: np.ndarray, over: np.ndarray, under: np.ndarray, lo: float, hi: float
) -> np.ndarray:
    """min over z in [lo, hi] of G_t(z) = sum_{s<=t} over_s max(0, z - b_s) + under_s
    max(0, b_s - z), for every t.

    G_t is convex and piecewise linear with right derivative (A + B)_{<=z} - B_t, where
    (A + B)_{<=z} sums over_s + under_s over the levels b_s <= z and B_t sums every under_s: the
    smallest level at which it turns non-negative minimises G_t on the line, and clipping it to
    [lo, hi] minimises G_t on the interval. The levels are ranked once; Fenwick trees over the
    ranks hold the running sums of over, under, over * b and under * b, so each round costs
    O(log T) for the insertion, the search and the value.
    """
    n = len(levels)
    order = np.argsort(levels, kind="stable")
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(1, n + 1)
    ordered = levels[order]
    tree_a, tree_b = [0.0] * (n + 1), [0.0] * (n + 1)
    tree_ab, tree_bb = [0.0] * (n + 1), [0.0] * (n + 1)
    top = 1 << (n.bit_length() - 1)
    total_b = total_bb = 0.0
    out = np.empty(n)
    ranks_l, levels_l = ranks.tolist(), levels.tolist()
    over_l, under_l = over.tolist(), under.tolist()
    for t in range(n):
        a, b, level = over_l[t], under_l[t], levels_l[t]
        i = ranks_l[t]
        while i <= n:
            tree_a[i] += a
            tree_b[i] += b
            tree_ab[i] += a * level
            tree_bb[i] += b * level
            i += i & -i
        total_b += b
        total_bb += b * level
        if total_b <= 0.0:
            z = lo  # G_t is non-decreasing
        else:  # the largest rank whose prefix (A + B) is still below B_t, then one more
            pos, acc, step = 0, 0.0, top
            while step:
                nxt = pos + step
                if nxt <= n and acc + tree_a[nxt] + tree_b[nxt] < total_b:
                    pos = nxt
                    acc += tree_a[nxt] + tree_b[nxt]
                step >>= 1
            z = min(max(float(ordered[min(pos, n - 1)]), lo), hi)
        i = int(np.searchsorted(ordered, z, side="right"))
        a_le = b_le = ab_le = bb_le = 0.0
        while i > 0:
            a_le += tree_a[i]
            b_le += tree_b[i]
            ab_le += tree_ab[i]
            bb_le += tree_bb[i]
            i -= i & -i
        out[t] = (z * a_le - ab_le) + (total_bb - bb_le) - z * (total_b - b_le)
    return out


@dataclass(frozen=True)
class LevelLosses:
    """f_t(x) = g_t(<a, x>) - g_t(<a, c>), g_t(z) = over_t max(0, z - b_t) + under_t
    max(0, b_t - z): the cost of overshooting or undershooting the level b_t along the fixed
    ``direction`` a (module docstring).

    ``over = under = 1`` is the absolute deviation |<a, x> - b_t| (:meth:`absolute`); one of
    them 0 a hinge max(0, +-(<a, x> - b_t)) (:meth:`hinge`); over = tau, under = 1 - tau the
    pinball loss of the tau-quantile. Each f_t is Lipschitz with constant
    ||a|| max(over_t, under_t), at most the declared ``bound`` (checked), and not smooth.
    """

    direction: np.ndarray
    levels: np.ndarray
    center: np.ndarray
    over: np.ndarray
    under: np.ndarray
    bound: float = 1.0

    kind: ClassVar[str] = "level"

    def __post_init__(self) -> None:
        c = check_finite(self.center, "center")
        a = check_finite(self.direction, "direction")
        if c.ndim != 1 or a.shape != c.shape:
            raise ValueError(
                f"direction and center must be vectors of one length, got {a.shape}, {c.shape}"
            )
        b = check_finite(self.levels, "levels")
        if b.ndim != 1 or b.size < 1:
            raise ValueError(f"levels must be a non-empty (T,) array, got shape {b.shape}")
        weights = []
        for name in ("over", "under"):
            w = np.broadcast_to(
                check_finite(self.over if name == "over" else self.under, name), b.shape
            )
            if np.any(w < 0):
                raise ValueError(f"{name} weights must be non-negative, got min {w.min():.6g}")
            weights.append(np.array(w, dtype=float))
        for name, value in (("center", c), ("direction", a), ("levels", b)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "over", weights[0])
        object.__setattr__(self, "under", weights[1])
        _within(
            "Lipschitz constant ||a|| max(over, under)",
            np.linalg.norm(a) * np.maximum(*weights),
            self.bound,
        )

    @classmethod
    def absolute(
        cls, direction: np.ndarray, levels: np.ndarray, center: np.ndarray, bound: float = 1.0
    ) -> LevelLosses:
        """f_t(x) = |<a, x> - b_t| - |<a, c> - b_t|."""
        return cls(direction, levels, center, np.ones(1), np.ones(1), bound)

    @classmethod
    def hinge(
        cls,
        direction: np.ndarray,
        levels: np.ndarray,
        signs: np.ndarray,
        center: np.ndarray,
        bound: float = 1.0,
    ) -> LevelLosses:
        """f_t(x) = max(0, s_t (<a, x> - b_t)) - max(0, s_t (<a, c> - b_t)) for signs s_t in
        {-1, +1}: the classifier's hinge max(0, m - y <a, x>) is s = -y, b = y m."""
        s = check_finite(signs, "signs")
        if not np.all(np.isin(s, (-1.0, 1.0))):
            raise ValueError("signs must be -1 or +1")
        return cls(direction, levels, center, (s > 0).astype(float), (s < 0).astype(float), bound)

    @property
    def horizon(self) -> int:
        return int(self.levels.shape[0])

    def lipschitz(self, domain: ConvexDomain, reach: float = 0.0) -> float:
        """The declared bound on ||a|| max(over_t, under_t) (the same off the set)."""
        return float(self.bound)

    def _g(self, t: int, z: np.ndarray) -> np.ndarray:
        gap = z - self.levels[t]
        return self.over[t] * np.maximum(gap, 0.0) + self.under[t] * np.maximum(-gap, 0.0)

    def value(self, t: int, x: np.ndarray) -> np.ndarray:
        return self._g(t, x @ self.direction) - self._g(t, np.asarray(self.center @ self.direction))

    def best(self, domain: ConvexDomain) -> tuple[np.ndarray, float]:
        """min_x sum_{s<=t} f_s(x) for every t, exactly: <a, x> ranges over [lo, hi] =
        [min_D <a, x>, -min_D <-a, x>] (two oracle calls; every value between is attained on a
        segment of D), and the sum is a function of z = <a, x> alone
        (:func:`_weighted_median_minima`)."""
        lo, neg_hi = domain.min_linear(np.stack([self.direction, -self.direction]))
        zc = float(self.center @ self.direction)
        at_center = np.cumsum(
            self.over * np.maximum(zc - self.levels, 0.0)
            + self.under * np.maximum(self.levels - zc, 0.0)
        )
        minima = _weighted_median_minima(
            self.levels, self.over, self.under, float(lo), float(-neg_hi)
        )
        return minima - at_center, 0.0


@dataclass
class BanditConvexEnvironment(Stateless):
    """Oblivious convex ``losses`` over ``domain``, bandit feedback (module docstring)."""

    domain: ConvexDomain
    losses: LinearLosses | QuadraticLosses | LevelLosses
    name: str = "bandit convex"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.BANDIT, init=False)
    setting: str = field(default="bandit convex optimisation", init=False)

    def __post_init__(self) -> None:
        self._best: np.ndarray | None = None
        self.comparator_error = 0.0

    @property
    def horizon(self) -> int:
        return self.losses.horizon

    @property
    def dim(self) -> int:
        return int(self.domain.dim)

    def lipschitz(self, reach: float = 0.0) -> float:
        """A Lipschitz constant of every loss within ``reach`` of the set (declared from the
        family's construction, not from the rounds played)."""
        return self.losses.lipschitz(self.domain, reach)

    def round(self, t: int, action: np.ndarray) -> tuple[BanditFeedback, np.ndarray]:
        x = check_finite(action, "action")
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"actions must have shape (replicas, {self.dim}), got {x.shape}")
        value = self.losses.value(t, x)
        return BanditFeedback(value), value

    def best_cumulative_loss(self) -> np.ndarray:
        """min_x sum_{s<=t} f_s(x) for t = 1..T (computed once, on first use)."""
        if self._best is None:
            self._best, self.comparator_error = self.losses.best(self.domain)
        return self._best

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        best = at_rounds(self.best_cumulative_loss(), rounds)
        return np.asarray(cumulative_loss, dtype=float) - best


# --- decision sets and loss streams for the catalogue ------------------------------------------

#: the loss families :func:`bandit_convex` draws by name
LOSS_NAMES = ("linear", "quadratic", "absolute", "hinge")

#: the decision sets :func:`make_domain` builds by name
DOMAIN_NAMES = ("simplex", "box", "ball", "k_subsets", "grid_paths")


def grid_dag(rows: int, cols: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The directed grid: node (i, j) -> (i, j+1) and (i+1, j); rows (cols - 1) + (rows - 1) cols
    edges, sources (0, 0), sink (rows - 1, cols - 1) (monotone lattice paths)."""
    edges = []
    for i in range(rows):
        for j in range(cols):
            if j + 1 < cols:
                edges.append(((i, j), (i, j + 1)))
            if i + 1 < rows:
                edges.append(((i, j), (i + 1, j)))
    return edges


def make_domain(name: str, dim: int, k: int = 2) -> ConvexDomain:
    """A decision set by name: ``simplex``, ``box`` [-1, 1]^dim, ``ball`` (unit l2),
    ``k_subsets`` (k-subsets of dim items, the uniform matroid's base polytope) or
    ``grid_paths`` (monotone paths of the dim x dim grid DAG, 2 dim (dim - 1) edges)."""
    if name == "simplex":
        return Simplex(dim)
    if name == "box":
        return Box(dim)
    if name == "ball":
        return LpBall(dim, 2.0)
    if name == "k_subsets":
        return UniformMatroidBasePolytope(dim, k)
    if name == "grid_paths":
        return PathPolytope(grid_dag(dim, dim), (0, 0), (dim - 1, dim - 1))
    raise ValueError(f"domain must be one of {DOMAIN_NAMES}, got {name!r}")


def _unit_rows(rows: np.ndarray) -> np.ndarray:
    """Rows rescaled into the unit l2 ball (rows inside it are kept)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.maximum(norms, 1.0)


def bandit_convex(
    horizon: int,
    rng: np.random.Generator,
    domain: str = "simplex",
    dim: int = 4,
    losses: str = "linear",
    k: int = 2,
    noise: float = 1.0,
) -> BanditConvexEnvironment:
    """Synthetic bandit convex optimisation over ``make_domain(domain, dim, k)``, around a
    random unit direction a.

    ``linear``: theta_t = a plus ``noise`` times a standard normal, rescaled into the unit l2
    ball (declared bound 1). ``quadratic``: targets a_t = c + a / 2 plus ``noise`` / 2 times a
    standard normal, rescaled to within 1 of c (declared radius 1): the best point is near the
    projection of c + a / 2. ``absolute``: |<a, x> - b_t| with levels b_t = m + ``noise`` w g_t,
    where [lo, hi] is the range of <a, x> over the set, w = (hi - lo) / 4 and m the midpoint
    between <a, c> and hi; ``hinge``: max(0, s_t (<a, x> - b_t)) with the same levels and fair
    random signs s_t. For both the best point sits near <a, x> = m, away from the centre.
    """
    d = make_domain(domain, dim, k)
    n = d.dim
    c = np.asarray(d.interior_point(), dtype=float)
    mean = rng.standard_normal(n)
    mean /= np.linalg.norm(mean)
    g = rng.standard_normal((horizon, n))
    family: LinearLosses | QuadraticLosses | LevelLosses
    if losses == "linear":
        family = LinearLosses(_unit_rows(mean + noise * g), c, bound=1.0)
    elif losses == "quadratic":
        family = QuadraticLosses(c + _unit_rows(0.5 * mean + 0.5 * noise * g), c, radius=1.0)
    elif losses in ("absolute", "hinge"):
        lo, neg_hi = d.min_linear(np.stack([mean, -mean]))
        hi, zc = -float(neg_hi), float(c @ mean)
        levels = 0.5 * (zc + hi) + noise * 0.25 * (hi - float(lo)) * g[:, 0]
        if losses == "absolute":
            family = LevelLosses.absolute(mean, levels, c, bound=1.0)
        else:
            signs = np.where(rng.random(horizon) < 0.5, -1.0, 1.0)
            family = LevelLosses.hinge(mean, levels, signs, c, bound=1.0)
    else:
        raise ValueError(f"losses must be one of {LOSS_NAMES}, got {losses!r}")
    return BanditConvexEnvironment(d, family, name=f"bandit_convex:{domain}:{losses}")
