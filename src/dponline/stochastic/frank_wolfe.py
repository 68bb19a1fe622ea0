"""Streaming Frank-Wolfe with recursive gradients (Han et al., Algorithm 1 without noise;
Xie et al. 2020), over any convex domain reached through its linear minimisation oracle (the
l_p ball of the paper, or any :class:`~dponline.domains.base.ConvexDomain`).

With rho_t = eta_t = 1/(t+1) and theta_0 = theta_1 = c (the paper's 0 on the l_p ball; the
domain's interior point in general), the recursive gradient estimate

    d_t = grad f(theta_t; x_t) + (1 - rho_t) (d_{t-1} - grad f(theta_{t-1}; x_t)),   d_0 = 0

equals the normalised sum (Han et al. Eq. (1))

    d_t = (1 / (t+1)) sum_{i<=t} g_i,
    g_i = (i+1) grad f(theta_i; x_i) - i grad f(theta_{i-1}; x_i),

and the iterate moves towards the oracle's vertex: theta_{t+1} = theta_t + eta_t (v_t - theta_t),
v_t = LMO(d_t). This module is the non-private optimiser (the reference the private Algorithm 1
adds tree-aggregated generalized Gaussian noise to); it releases every iterate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dponline.domains.base import ConvexDomain
from dponline.privacy.arguments import (
    checked_count,
    checked_nonnegative_int,
    checked_real_array,
    saved_field,
)

__all__ = ["StreamingFrankWolfe", "checked_iterates", "recursive_gradient"]

Gradient = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def checked_iterates(
    domain: ConvexDomain, theta: np.ndarray, theta_prev: np.ndarray, t: int
) -> None:
    """Refuse saved iterates (rows: replicas) that no run reaches after ``t`` rounds. A step
    sets theta = theta_prev + (v - theta_prev) / (t + 1) with v in the domain (at t = 0 both
    are the start), so theta_prev and v = theta_prev + (t + 1) (theta - theta_prev) must lie
    in ``domain``; the private learners' sensitivity bounds assume both (the step is at most
    D / (t + 1) long). The tolerance, 1e-12 (t + 2) times the iterates' size, covers the
    rounding of t steps, which (t + 1) amplifies in v."""
    size = max(1.0, float(np.abs(theta).max()), float(np.abs(theta_prev).max()))
    tol = 1e-12 * (int(t) + 2) * size
    v = theta_prev + (int(t) + 1) * (theta - theta_prev)
    for name, points in (("theta_prev", theta_prev), ("the step's target point", v)):
        inside = np.asarray(domain.contains(points, tol=tol))
        if not inside.all():
            raise ValueError(
                f"saved iterates refused: {name} of replica {int(np.argmin(inside))} lies "
                f"outside the domain, so no run of {int(t)} rounds reached them (the "
                "sensitivity bound assumes it does)"
            )


def recursive_gradient(
    gradient: Gradient, thetas: np.ndarray, xs: np.ndarray, ys: np.ndarray
) -> np.ndarray:
    """d_1..d_n by the recursion for iterates thetas[t] = theta_t, t = 0..n.

    The recursion runs from d_0 = 0, as the expansion in the proof of Theorem 3.1 (Appendix A.1,
    Eq. (7)) does; that is what Eq. (1)'s sum equals. The text's initial d_1 = grad f(theta_1; x_1)
    differs from Eq. (1) at t = 1 (Eq. (1) gives grad f(theta_1; x_1) / 2 since
    theta_0 = theta_1), and Algorithm 1 uses Eq. (1).
    """
    n = len(xs)
    d = np.zeros((n, thetas.shape[-1]))
    prev = np.zeros(thetas.shape[-1])
    for t in range(1, n + 1):
        rho = 1.0 / (t + 1)
        now = gradient(thetas[t], xs[t - 1], ys[t - 1])
        before = gradient(thetas[t - 1], xs[t - 1], ys[t - 1])
        prev = now + (1 - rho) * (prev - before)
        d[t - 1] = prev
    return d


class StreamingFrankWolfe:
    """Non-private streaming Frank-Wolfe with recursive gradients over ``domain``.

    ``domain`` is any :class:`~dponline.domains.base.ConvexDomain`, used through ``lmo`` (the
    vertex v_t) and ``interior_point()`` (theta_0 = theta_1; 0 for the l_p ball, as in the
    paper); every iterate is a convex combination of points of the domain.
    ``gradient(theta, x, y)`` returns the sample gradient (vectorised over a leading replicas
    axis of ``theta``); ``step(x, y)`` consumes one sample and returns the released iterate.
    """

    def __init__(self, domain: ConvexDomain, gradient: Gradient, *, replicas: int = 1) -> None:
        if not isinstance(domain, ConvexDomain):
            raise TypeError(
                f"domain must be a ConvexDomain (dponline.domains), got {type(domain).__name__}"
            )
        self.domain = domain
        self.gradient = gradient
        self.replicas = checked_count("replicas", replicas)
        d = domain.dim
        start = np.asarray(domain.interior_point(), dtype=float)
        self.theta_prev = np.broadcast_to(start, (self.replicas, d)).copy()  # theta_{t-1}
        self.theta = np.broadcast_to(start, (self.replicas, d)).copy()  # theta_t
        self.grad_sum = np.zeros((self.replicas, d))  # G_t = sum_{i<=t} g_i
        self.t = 0

    def step(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        t = self.t + 1
        g = (t + 1) * self.gradient(self.theta, x, y) - t * self.gradient(self.theta_prev, x, y)
        self.grad_sum += g
        d = self.grad_sum / (t + 1)
        v = self.domain.lmo(d)
        eta = 1.0 / (t + 1)
        self.theta_prev, self.theta = self.theta, self.theta + eta * (v - self.theta)
        self.t = t
        return self.theta.copy()

    def state_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "theta_prev": self.theta_prev.copy(),
            "theta": self.theta.copy(),
            "grad_sum": self.grad_sum.copy(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`; the whole state is checked before anything changes."""
        t = checked_nonnegative_int("saved round counter t", saved_field(state, "t"))
        shape = (self.replicas, self.domain.dim)
        arrays = {
            k: np.array(checked_real_array(f"saved {k}", saved_field(state, k), shape))
            for k in ("theta_prev", "theta", "grad_sum")
        }
        self.t = t
        for k, value in arrays.items():
            setattr(self, k, value)
