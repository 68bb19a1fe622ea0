"""Online Lipschitz optimisation in one and two dimensions (Agarwal, Kale, Singh & Thakurta
2023, Section 4): losses that are G-Lipschitz on a box in R^1 or R^2 but need not be convex,
full information.

Two families of losses, each with its Lipschitz constant proven from its parameters:

* :class:`NearestCentreLoss`: l(x) = G min_j ||x - c_j||, the distance to the nearest of a few
  centres (non-convex as soon as there are two); a minimum of G-Lipschitz functions is
  G-Lipschitz.
* :class:`PortfolioLoss`: -log of the wealth relative of a portfolio of dim + 1 stocks whose
  weights the box [0, 1]^dim parametrises (one dimension: w and 1 - w; two: w_1, (1 - w_1) w_2
  and (1 - w_1)(1 - w_2), a non-convex map onto the simplex), on the shipped NYSE price
  relatives (:func:`stock_portfolio_low_dim`).

Regret is against the best point of a fine dyadic grid (``comparator_level``; non-convex sums
have no certified minimiser otherwise): the true best point can beat it by at most
``comparator_error(t)`` = t G h sqrt(dim) / 2, h the grid's step, and the report says so.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dponline.data import load_price_relatives
from dponline.environments.oblivious import Stateless
from dponline.privacy.bounds import check_finite
from dponline.protocol import FeedbackKind, LossFunctionFeedback

__all__ = [
    "LipschitzEnvironment",
    "LipschitzLoss",
    "NearestCentreLoss",
    "PortfolioLoss",
    "lipschitz_low_dim",
    "stock_portfolio_low_dim",
]


class LipschitzLoss(ABC):
    """A loss on points of R^dim, vectorised: ``loss(points)`` maps (..., dim) to (...);
    ``lipschitz`` is a proven bound on its l2-Lipschitz constant over the box."""

    dim: int
    lipschitz: float

    @abstractmethod
    def __call__(self, points: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class NearestCentreLoss(LipschitzLoss):
    """l(x) = scale min_j ||x - c_j|| for centres (m, dim): each distance is 1-Lipschitz and a
    minimum of L-Lipschitz functions is L-Lipschitz, so ``lipschitz`` = scale."""

    centres: np.ndarray
    scale: float = 1.0

    @property
    def dim(self) -> int:
        return int(self.centres.shape[1])

    @property
    def lipschitz(self) -> float:
        return float(self.scale)

    def __call__(self, points: np.ndarray) -> np.ndarray:
        x = np.asarray(points, dtype=float)
        gaps = x[..., None, :] - self.centres
        return self.scale * np.sqrt((gaps * gaps).sum(axis=-1)).min(axis=-1)


def _weights(points: np.ndarray) -> np.ndarray:
    """Portfolio weights (..., dim + 1) of box points (..., dim)."""
    x = np.asarray(points, dtype=float)
    if x.shape[-1] == 1:
        return np.concatenate([x, 1.0 - x], axis=-1)
    w1, w2 = x[..., :1], x[..., 1:2]
    return np.concatenate([w1, (1 - w1) * w2, (1 - w1) * (1 - w2)], axis=-1)


@dataclass(frozen=True, eq=False)
class PortfolioLoss(LipschitzLoss):
    """-log <w(x), r> for price relatives r (dim + 1,) > 0 and the box parametrisation w(x).

    Lipschitz bound: the wealth W = <w(x), r> lies in [min r, max r] (w(x) is in the simplex),
    and each partial derivative of W is a difference of two convex combinations of r times a
    factor in [0, 1] (one dimension: r_0 - r_1; two: r_0 - (w_2 r_1 + (1 - w_2) r_2) and
    (1 - w_1)(r_1 - r_2)), so |dW/dx_i| <= max r - min r and
    ||grad(-log W)|| <= sqrt(dim) (max r - min r) / min r."""

    relatives: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.relatives.shape[0]) - 1

    @property
    def lipschitz(self) -> float:
        r = self.relatives
        return math.sqrt(self.dim) * float(r.max() - r.min()) / float(r.min())

    def __call__(self, points: np.ndarray) -> np.ndarray:
        return -np.log(_weights(points) @ self.relatives)


@dataclass(eq=False)
class LipschitzEnvironment(Stateless):
    """Full-information rounds of Lipschitz losses on the box [lo, hi] (R^1 or R^2).

    ``kind`` is "nearest" (``params`` (T, m, dim): the centres of each round, ``scale`` G) or
    "portfolio" (``params`` (T, dim + 1): each day's price relatives). ``lipschitz`` is the
    largest of the rounds' proven constants. The comparator is the best point of the dyadic
    grid with 2^comparator_level + 1 points a side (default 12 in one dimension, 7 in two)."""

    kind: str
    params: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    scale: float = 1.0
    comparator_level: int | None = None
    name: str = "lipschitz"
    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_FUNCTION
    setting: ClassVar[str] = "online Lipschitz (non-convex) optimisation in 1-2D"
    lipschitz: float = field(init=False)

    def __post_init__(self) -> None:
        self.params = check_finite(self.params, "params")
        self.lo = np.atleast_1d(np.asarray(self.lo, dtype=float))
        self.hi = np.atleast_1d(np.asarray(self.hi, dtype=float))
        d = len(self.lo)
        if d not in (1, 2) or self.hi.shape != (d,) or not np.all(self.hi > self.lo):
            raise ValueError(f"need a box lo < hi in R^1 or R^2, got {self.lo}, {self.hi}")
        if self.kind == "nearest":
            if self.params.ndim != 3 or self.params.shape[2] != d:
                raise ValueError(f"nearest-centre params must be (T, m, {d})")
            if not (math.isfinite(self.scale) and self.scale > 0):
                raise ValueError(f"scale must be positive, got {self.scale!r}")
            self.lipschitz = float(self.scale)
        elif self.kind == "portfolio":
            if self.params.ndim != 2 or self.params.shape[1] != d + 1:
                raise ValueError(f"portfolio params must be (T, {d + 1}) price relatives")
            if np.any(self.params <= 0):
                raise ValueError("price relatives must be positive")
            if np.any(self.lo < 0) or np.any(self.hi > 1):
                raise ValueError("a portfolio's box must lie in [0, 1]^dim")
            r = self.params
            self.lipschitz = float(
                (math.sqrt(d) * (r.max(axis=1) - r.min(axis=1)) / r.min(axis=1)).max()
            )
        else:
            raise ValueError(f"kind must be 'nearest' or 'portfolio', got {self.kind!r}")
        if self.comparator_level is None:
            self.comparator_level = 12 if d == 1 else 7
        side = np.linspace(0.0, 1.0, 2**self.comparator_level + 1)
        axes = [self.lo[i] + side * (self.hi[i] - self.lo[i]) for i in range(d)]
        mesh = np.meshgrid(*axes, indexing="ij")
        self._grid = np.stack(mesh, axis=-1).reshape(-1, d)
        self._best: dict[int, float] = {}

    @property
    def horizon(self) -> int:
        return int(self.params.shape[0])

    @property
    def dim(self) -> int:
        return len(self.lo)

    @property
    def diameter(self) -> float:
        return float(np.linalg.norm(self.hi - self.lo))

    def loss(self, t: int) -> LipschitzLoss:
        if self.kind == "nearest":
            return NearestCentreLoss(self.params[t], self.scale)
        return PortfolioLoss(self.params[t])

    def loss_of(self, v: np.ndarray, y: float) -> LipschitzLoss:
        """G ||x - c|| with c = lo + y (hi - lo): the privacy audit's losses (y = 0 and 1 put
        the centre at opposite corners, the largest change one round can make); ``v`` unused."""
        centre = self.lo + float(y) * (self.hi - self.lo)
        return NearestCentreLoss(centre[None, :], self.lipschitz)

    def _values(self, start: int, stop: int, points: np.ndarray) -> np.ndarray:
        """Losses of rounds start..stop-1 at the points, (stop - start, n)."""
        if self.kind == "nearest":
            c = self.params[start:stop]  # (k, m, d)
            gaps = points[None, :, None, :] - c[:, None, :, :]
            return self.scale * np.sqrt((gaps * gaps).sum(axis=-1)).min(axis=-1)
        return -np.log(self.params[start:stop] @ _weights(points).T)

    def round(self, t: int, action: np.ndarray) -> tuple[LossFunctionFeedback, np.ndarray]:
        x = check_finite(action, "action")
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"actions must have shape (replicas, {self.dim}), got {x.shape}")
        outside = np.any((x < self.lo - 1e-12) | (x > self.hi + 1e-12), axis=1)
        if outside.any():
            i = int(np.argmax(outside))
            raise ValueError(
                f"replica {i} played {x[i].tolist()}, outside the box [{self.lo.tolist()}, "
                f"{self.hi.tolist()}]"
            )
        loss = self.loss(t)
        return LossFunctionFeedback(loss, None, loss=loss), loss(x)

    def comparator_error(self, t: int | np.ndarray) -> np.ndarray:
        """How far the true best point of the box can be below the grid's after t rounds:
        t G h sqrt(dim) / 2 (every point is within h sqrt(dim) / 2 of a grid point)."""
        h = float((self.hi - self.lo).max()) / 2**self.comparator_level
        return np.asarray(t, dtype=float) * self.lipschitz * h * math.sqrt(self.dim) / 2.0

    def best_cumulative_loss(self, rounds: np.ndarray | None = None) -> np.ndarray:
        """min over the comparator grid of sum_{s<=t} l_s at the 1-based ``rounds``; cached."""
        wanted = np.arange(1, self.horizon + 1) if rounds is None else np.asarray(rounds)
        missing = sorted({int(r) for r in wanted} - set(self._best))
        if missing:
            if missing[0] < 1 or missing[-1] > self.horizon:
                raise ValueError(f"rounds must lie in [1, {self.horizon}]")
            n = len(self._grid)
            width = self.params.shape[1] if self.kind == "nearest" else 1
            chunk = max(1, 2_000_000 // (n * width))
            total = np.zeros(n)
            done, pending = 0, list(missing)
            while pending:
                stop = min(pending[0], done + chunk)
                total += self._values(done, stop, self._grid).sum(axis=0)
                done = stop
                if done == pending[0]:
                    self._best[done] = float(total.min())
                    pending.pop(0)
        return np.array([self._best[int(r)] for r in wanted])

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(cumulative_loss, dtype=float) - self.best_cumulative_loss(rounds)

    def all_losses_on(
        self, points: np.ndarray, start: int = 0, stop: int | None = None
    ) -> np.ndarray:
        """The losses of rounds ``start`` to ``stop`` (default every round) at the points,
        (stop - start, n), for regret bounds on a learner's grid (take long streams in chunks:
        the array has a row per round)."""
        stop = self.horizon if stop is None else int(stop)
        if not 0 <= start <= stop <= self.horizon:
            raise ValueError(f"rounds {start}..{stop} are not within 0..{self.horizon}")
        return self._values(int(start), stop, np.asarray(points, dtype=float))


def lipschitz_low_dim(
    horizon: int,
    rng: np.random.Generator,
    dim: int = 1,
    kind: str = "stochastic",
    lipschitz: float = 1.0,
    centres: int = 3,
) -> LipschitzEnvironment:
    """Nearest-centre losses on [0, 1]^dim. ``stochastic``: each round's ``centres`` centres are
    drawn around fixed modes (one mode twice as likely, so a best region exists);
    ``adversarial``: the centres jump between two far corners in blocks of doubling length, so
    the best point in hindsight changes as the rounds go by."""
    if dim not in (1, 2):
        raise ValueError(f"dim must be 1 or 2, got {dim!r}")
    modes = rng.uniform(0.1, 0.9, size=(centres, dim))
    if kind == "stochastic":
        probs = np.r_[2.0, np.ones(centres - 1)]
        pick = rng.choice(centres, size=(horizon, centres), p=probs / probs.sum())
        c = np.clip(modes[pick] + 0.05 * rng.standard_normal((horizon, centres, dim)), 0, 1)
    elif kind == "adversarial":
        corners = np.array([np.full(dim, 0.15), np.full(dim, 0.85)])
        block = np.floor(np.log2(np.arange(1, horizon + 1))).astype(int) % 2
        c = np.repeat(corners[block][:, None, :], centres, axis=1)
        c = np.clip(c + 0.02 * rng.standard_normal(c.shape), 0, 1)
    else:
        raise ValueError(f"kind must be 'stochastic' or 'adversarial', got {kind!r}")
    return LipschitzEnvironment(
        "nearest", c, np.zeros(dim), np.ones(dim), scale=float(lipschitz),
        name=f"lipschitz_low_dim:{dim}d:{kind}",
    )  # fmt: skip


def stock_portfolio_low_dim(
    horizon: int | None,
    rng: np.random.Generator | None = None,
    dim: int = 1,
    assets: tuple[int, ...] | None = None,
    start: int = 0,
) -> LipschitzEnvironment:
    """Real data: a portfolio of dim + 1 NYSE stocks (the shipped "NYSE (O)" relatives, 5,651
    days) parametrised by [0, 1]^dim, the loss -log of the day's wealth relative, for the
    ``horizon`` days from ``start`` (``None``: every day from ``start``). ``assets`` picks the
    columns (default the first dim + 1)."""
    if dim not in (1, 2):
        raise ValueError(f"dim must be 1 or 2, got {dim!r}")
    rel, _ = load_price_relatives("nyse_o")
    cols = tuple(range(dim + 1)) if assets is None else tuple(int(a) for a in assets)
    if len(cols) != dim + 1:
        raise ValueError(f"a {dim}-dimensional portfolio needs {dim + 1} assets, got {cols}")
    if horizon is None:
        horizon = len(rel) - start
    if start < 0 or horizon < 1 or start + horizon > len(rel):
        raise ValueError(f"days {start}..{start + horizon} exceed the {len(rel)} days of NYSE (O)")
    return LipschitzEnvironment(
        "portfolio", rel[start : start + horizon][:, cols], np.zeros(dim), np.ones(dim),
        name=f"stock_portfolio_low_dim:{dim}d",
    )  # fmt: skip
