"""Expert and bandit problems from real data shipped with dponline (no network)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from dponline.data import load_price_relatives
from dponline.domains.graphic_matroid import GraphicMatroidBasePolytope
from dponline.domains.matroids import UniformMatroidBasePolytope
from dponline.environments.bandit_convex import BanditConvexEnvironment, LinearLosses

__all__ = ["stock_basket", "stock_losses", "stock_tree"]


def stock_losses(dataset: str = "nyse_o", scale: float = 0.1) -> np.ndarray:
    """Losses in [0, 1] of holding each stock for a day: 1/2 - (relative - 1) / (2 scale),
    clipped, so a +``scale`` return costs 0, no change 1/2 and a -``scale`` return 1.

    NYSE (O): 5,651 days x 36 stocks; DJIA: 507 days x 30 stocks (see ``dponline/data``).
    """
    rel, _ = load_price_relatives(dataset)
    return np.clip(0.5 - (rel - 1.0) / (2.0 * scale), 0.0, 1.0)


def _cut(rows: np.ndarray, horizon: int | None) -> np.ndarray:
    if horizon is None:
        return rows
    if not 1 <= horizon <= len(rows):
        raise ValueError(f"horizon must lie in [1, {len(rows)}] for this data, got {horizon!r}")
    return rows[:horizon]


def stock_basket(
    horizon: int | None = None, dataset: str = "nyse_o", k: int = 5, scale: float = 0.1
) -> BanditConvexEnvironment:
    """Choose k of the stocks every day (the uniform matroid's base polytope: fractional
    k-baskets), seeing only the basket's loss. Day t's loss vector is the stocks' daily loss
    (:func:`stock_losses`) minus 1/2, so f_t(x) = <theta_t, x - c> compares the basket with the
    even basket c = (k/n, ..., k/n); theta_t lies in [-1/2, 1/2]^n (declared l2 bound
    sqrt(n)/2). Regret is against the best fixed basket in hindsight."""
    theta = _cut(stock_losses(dataset, scale) - 0.5, horizon)
    domain = UniformMatroidBasePolytope(theta.shape[1], k)
    c = np.asarray(domain.interior_point(), dtype=float)
    losses = LinearLosses(theta, c, bound=0.5 * math.sqrt(theta.shape[1]))
    return BanditConvexEnvironment(domain, losses, name=f"stock_basket:{dataset}:k={k}")


def stock_tree(
    horizon: int | None = None, dataset: str = "djia", stocks: int = 15, scale: float = 0.05
) -> BanditConvexEnvironment:
    """Choose a spanning tree of the complete graph on the first ``stocks`` stocks every day
    (the graphic matroid's base polytope; 105 edges for 15 stocks), seeing only the tree's
    loss: the sum over its edges of how far the two stocks' daily returns diverge,
    min(1, |r_i - r_j| / scale), centred at the polytope's interior point c. The best fixed
    tree in hindsight links stocks that move together (a Mantegna-style asset tree, learned
    from bandit feedback). theta_t lies in [0, 1]^m (declared l2 bound sqrt(m))."""
    rel, _ = load_price_relatives(dataset)
    if not 2 <= stocks <= rel.shape[1]:
        raise ValueError(f"stocks must lie in [2, {rel.shape[1]}], got {stocks!r}")
    r = _cut(rel[:, :stocks] - 1.0, horizon)
    pairs = list(itertools.combinations(range(stocks), 2))
    i, j = np.array(pairs).T
    theta = np.minimum(1.0, np.abs(r[:, i] - r[:, j]) / scale)
    domain = GraphicMatroidBasePolytope(pairs)
    c = np.asarray(domain.interior_point(), dtype=float)
    losses = LinearLosses(theta, c, bound=math.sqrt(len(pairs)))
    return BanditConvexEnvironment(domain, losses, name=f"stock_tree:{dataset}:{stocks}")
