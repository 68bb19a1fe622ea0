"""Bandit convex optimisation over any decision set with a linear minimisation oracle (Ene,
Nguyen & Vladu 2021, Section 2): the learner plays a point x_t and sees only f_t(x_t).

Losses are oblivious sequences of one family, each centred so that it vanishes at the set's
interior point c (the paper's convention that every f_t vanishes somewhere in D, which bounds
|f_t| by L times the distance to c):

* :class:`LinearLosses`: f_t(x) = <theta_t, x - c>, L = max ||theta_t||;
* :class:`QuadraticLosses`: f_t(x) = (||x - a_t||^2 - ||c - a_t||^2) / 2, L = the largest
  distance from a target to a point within ``reach`` of the set.

Regret is against the best fixed point of the set in hindsight, at every round: for linear
losses one oracle call per round on the cumulative loss (exact), for quadratic ones the
projection of the running mean target, by the conditional gradient method to a certified
duality gap (the comparator's value is then within ``comparator_error`` of the true minimum).
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
from dponline.environments.oblivious import Stateless
from dponline.privacy.bounds import check_finite
from dponline.protocol import BanditFeedback, FeedbackKind

__all__ = [
    "DOMAIN_NAMES",
    "BanditConvexEnvironment",
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


@dataclass
class BanditConvexEnvironment(Stateless):
    """Oblivious convex ``losses`` over ``domain``, bandit feedback (module docstring)."""

    domain: ConvexDomain
    losses: LinearLosses | QuadraticLosses
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

    def regret(self, cumulative_loss: np.ndarray) -> np.ndarray:
        return np.asarray(cumulative_loss, dtype=float) - self.best_cumulative_loss()


# --- decision sets and loss streams for the catalogue ------------------------------------------

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
    """Synthetic bandit convex optimisation over ``make_domain(domain, dim, k)``.

    ``linear``: theta_t = a fixed random direction plus ``noise`` times a standard normal,
    rescaled into the unit l2 ball (declared bound 1). ``quadratic``: targets a_t = c + a fixed
    offset of length 1/2 plus ``noise`` / 2 times a standard normal, rescaled to within 1 of c
    (declared radius 1): the best point is near c + the offset's projection.
    """
    d = make_domain(domain, dim, k)
    n = d.dim
    c = np.asarray(d.interior_point(), dtype=float)
    mean = rng.standard_normal(n)
    mean /= np.linalg.norm(mean)
    g = rng.standard_normal((horizon, n))
    if losses == "linear":
        family: LinearLosses | QuadraticLosses = LinearLosses(
            _unit_rows(mean + noise * g), c, bound=1.0
        )
    elif losses == "quadratic":
        family = QuadraticLosses(c + _unit_rows(0.5 * mean + 0.5 * noise * g), c, radius=1.0)
    else:
        raise ValueError(f"losses must be 'linear' or 'quadratic', got {losses!r}")
    return BanditConvexEnvironment(d, family, name=f"bandit_convex:{domain}:{losses}")
