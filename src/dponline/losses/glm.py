"""Losses of generalized linear models on samples (x, r) for the streaming learners, with the
Lipschitz and smoothness constants their privacy rests on (Han et al., Section 4 and
Assumption 4.5), and the streaming squared loss's constants (:func:`squared_loss_constants`).

A GLM with inverse link zeta (a :class:`~dponline.losses.links.CanonicalLink`, called on z) has
mean reward E[r | x] = zeta(<x, theta*>). Its (quasi) negative log-likelihood with the canonical
link,

    f(theta; x, r) = b(<x, theta>) - r <x, theta>,   b' = zeta,

has gradient (zeta(<x, theta>) - r) x, zero at the synthetic sample (0, zeta(0)) that Han et al.
Algorithm 3 feeds to the arms it did not play (line 16), and its population minimiser is theta*.

Constants in l_1 geometry (theta in the l_1 ball of radius R, ||x||_inf <= X, r in [lo, hi]):
|<x, theta>| <= X R = C, so

* Lipschitz: ||grad f||_inf <= X max_{|z| <= C, lo <= r <= hi} |zeta(z) - r|
  = X max(zeta(C) - lo, hi - zeta(-C)) (zeta is increasing);
* smoothness: ||grad f(theta) - grad f(theta')||_inf = |zeta(<x, theta>) - zeta(<x, theta'>)| |x|
  <= beta_zeta X^2 ||theta - theta'||_1 with beta_zeta = max_{|z| <= C} zeta'(z).

The same bounds hold in l_p geometry with ||x||_q <= X (Hoelder), which is how they are stated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dponline.losses.links import LINKS, CanonicalLink
from dponline.privacy.arguments import checked_nonnegative

__all__ = ["GLMLoss", "SquaredLoss", "checked_rewards", "squared_loss_constants"]


def squared_loss_constants(x_bound: float, y_bound: float, radius: float) -> tuple[float, float]:
    """(L, beta) of f(theta; x, y) = (<x, theta> - y)^2 over an l_p ball of radius r for samples
    with ||x||_q <= X, |y| <= Y (q the dual exponent): grad f = 2 (<x, theta> - y) x has
    ||grad f||_q <= 2 (X r + Y) X = L, and ||grad f(theta) - grad f(theta')||_q
    = 2 |<x, theta - theta'>| ||x||_q <= 2 X^2 ||theta - theta'||_p, so beta = 2 X^2. The
    bounds and the radius must be non-negative (a negative one gave L <= 0)."""
    x_bound = checked_nonnegative("x_bound", x_bound)
    y_bound = checked_nonnegative("y_bound", y_bound)
    radius = checked_nonnegative("radius", radius)
    return 2.0 * (x_bound * radius + y_bound) * x_bound, 2.0 * x_bound**2


@dataclass(frozen=True)
class GLMLoss:
    """f(theta; x, r) = b(<x, theta>) - r <x, theta> with b' = zeta (see the module docstring).

    ``reward_range`` = (lo, hi) is the input contract on rewards: the privacy of a learner using
    this loss holds for rewards inside it.
    """

    link: CanonicalLink
    reward_range: tuple[float, float]

    def __post_init__(self) -> None:
        lo, hi = (float(v) for v in self.reward_range)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise ValueError(f"reward_range must be finite with lo <= hi, got {self.reward_range}")
        zero = float(self.link(np.float64(0.0)))
        if not lo <= zero <= hi:
            raise ValueError(
                f"the synthetic reward zeta(0) = {zero} must lie in "
                f"reward_range {self.reward_range}"
            )
        object.__setattr__(self, "reward_range", (lo, hi))

    @classmethod
    def named(cls, link: str, reward_range: tuple[float, float]) -> GLMLoss:
        if link not in LINKS:
            raise ValueError(f"link must be one of {sorted(LINKS)}, got {link!r}")
        return cls(LINKS[link], reward_range)

    def gradient(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(zeta(<x, theta>) - y) x per replica: theta (R, d); x (d,) or (R, d); y () or (R,)."""
        z = (theta * x).sum(axis=-1)
        return (self.link(z) - y)[:, None] * np.broadcast_to(x, theta.shape)

    def constants(self, x_bound: float, radius: float) -> tuple[float, float]:
        """(L, beta): Lipschitz and smoothness constants (module docstring); the bound and the
        radius must be non-negative."""
        x_bound = checked_nonnegative("x_bound", x_bound)
        c = x_bound * checked_nonnegative("radius", radius)
        lo, hi = self.reward_range
        lip = float(x_bound) * max(
            float(self.link(np.float64(c))) - lo, hi - float(self.link(np.float64(-c)))
        )
        return lip, self.link.derivative_range(c)[1] * float(x_bound) ** 2

    def check_reward(self, y: np.ndarray, clip: bool) -> np.ndarray:
        """Rewards inside ``reward_range`` (clipped into it with ``clip``), else ValueError."""
        return checked_rewards(y, self.reward_range, clip)

    def to_dict(self) -> dict[str, object]:
        return {"link": self.link.model, "reward_range": list(self.reward_range)}


@dataclass(frozen=True)
class SquaredLoss:
    """f(theta; x, y) = (<x, theta> - y)^2 with |y| <= ``y_bound`` (the streaming SCO loss)."""

    y_bound: float

    def gradient(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        z = (theta * x).sum(axis=-1)
        return 2.0 * (z - y)[:, None] * np.broadcast_to(x, theta.shape)

    def constants(self, x_bound: float, radius: float) -> tuple[float, float]:
        """L = 2 (X R + Y) X, beta = 2 X^2 (:func:`squared_loss_constants`)."""
        return squared_loss_constants(x_bound, self.y_bound, radius)

    def to_dict(self) -> dict[str, object]:
        return {"loss": "squared", "y_bound": self.y_bound}


def checked_rewards(y: np.ndarray, reward_range: tuple[float, float], clip: bool) -> np.ndarray:
    """Finite rewards inside ``reward_range`` (clipped into it with ``clip``), else
    ValueError naming the first offending value."""
    y = np.asarray(y, dtype=float)
    lo, hi = reward_range
    if not np.all(np.isfinite(y)):
        raise ValueError(f"rewards must be finite, got {y!r}")
    if np.any((y < lo) | (y > hi)):
        if not clip:
            bad = y[(y < lo) | (y > hi)].ravel()[0]
            raise ValueError(f"reward {bad!r} outside the declared range [{lo}, {hi}]")
        y = np.clip(y, lo, hi)
    return y
