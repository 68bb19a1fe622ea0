"""Differentially private bandit linear optimisation: Agarwal & Singh (2017), Algorithm 4 around
SCRiBLe (Abernethy, Hazan & Rakhlin 2012), Theorem 4.5.

SCRiBLe keeps an FTRL point with a nu-self-concordant barrier R of the decision set K,

    x_t = argmin_{x} eta <L~_{t-1}, x> + R(x)          (damped Newton, warm-started),

and plays a point of its Dikin ellipsoid: with nabla^2 R(x_t) = sum_i lambda_i e_i e_i^T, draw
i uniform in [N] and s = +-1, play y_t = x_t + s lambda_i^{-1/2} e_i (inside K). It sees only
the loss value <l_t, y_t>; Algorithm 4 forwards <l_t, y_t> + <Z_t, y_t>, Z_t ~ Lap^N(lambda), and
SCRiBLe's estimate is l~_t = N (forwarded value) s lambda_i^{1/2} e_i.

Privacy (Lemma 4.2): the forwarded value is post-processing of the fictitious loss l^F + Z_t,
where l^F puts <l_t, y_t> / y_{t,i*} on the largest coordinate i* of y_t; neighbouring loss
sequences move l^F by at most sup |<l - l', y>| / ||y||_inf <= the l1 diameter of the loss set
Y. ``calibration="tight"`` takes lambda = diam_1(Y) / epsilon; ``"paper"`` takes Theorem 4.5's
lambda = ||Y||_1 / epsilon, which proves diam_1(Y) / ||Y||_1 times epsilon (2 epsilon for a
symmetric Y) and is reported as such.

Theorem 4.5's step: eta = sqrt(nu log T / (2 N^2 T (M^2 + lambda^2 N ||K||_2^2))), with
M = sup |<l, x>| over Y x K (bounded here by sup ||l||_2 sup ||x||_2).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dponline.domains.barriers import SelfConcordantBarrier
from dponline.privacy.bounds import InputBounds, NormBall, check_finite
from dponline.privacy.calibration import reduction_laplace
from dponline.privacy.noise import LaplaceNoise
from dponline.protocol import BanditFeedback, Feedback, FeedbackKind
from dponline.rng import RngLike, as_generator, generator_from_state, generator_state

__all__ = ["DPSCRiBLe", "scrible_regret_bound"]


def _value_range(bounds: InputBounds, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[min, max] of <l, y> over l in the loss set Y, per replica (a norm ball or a box)."""
    from dponline.privacy.bounds import Box

    if isinstance(bounds, NormBall):
        q = bounds.q
        dual = math.inf if q == 1 else (1.0 if q == math.inf else q / (q - 1.0))
        norm = (
            np.abs(y).max(axis=-1)
            if dual == math.inf
            else (np.abs(y) ** dual).sum(axis=-1) ** (1.0 / dual)
        )
        return -bounds.radius * norm, bounds.radius * norm
    if isinstance(bounds, Box):
        lo, hi = bounds._lo, bounds._hi
        return np.minimum(lo * y, hi * y).sum(axis=-1), np.maximum(lo * y, hi * y).sum(axis=-1)
    raise TypeError(f"loss set must be a NormBall or a Box, got {type(bounds).__name__}")


def scrible_regret_bound(
    nu: float,
    dim: int,
    horizon: int,
    m: float,
    x_norm: float,
    y1_norm: float,
    epsilon: float | None,
) -> float:
    """Theorem 4.5's bound with the O(.) constant taken as 1:
    sqrt(T log T) sqrt(N^2 nu (M^2 + N ||X||_2^2 ||Y||_1^2 / epsilon^2))."""
    priv = 0.0 if epsilon is None else dim * x_norm**2 * y1_norm**2 / epsilon**2
    return math.sqrt(horizon * math.log(horizon)) * math.sqrt(dim**2 * nu * (m**2 + priv))


class DPSCRiBLe:
    """DP bandit linear optimisation over a set with a self-concordant barrier.

    Parameters
    ----------
    barrier:
        The decision set's barrier (:mod:`dponline.domains.barriers`).
    horizon:
        T.
    epsilon:
        Pure-DP budget; ``None`` runs the non-private SCRiBLe.
    loss_bounds:
        The loss set Y (a NormBall or Box in R^N; default the unit l2 ball). The observed loss
        value must lie within sup_{l in Y} |<l, y_t>|, else ValueError (or clipping).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.BANDIT
    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 4 around SCRiBLe, Theorem 4.5"

    def __init__(
        self,
        barrier: SelfConcordantBarrier,
        horizon: int,
        *,
        epsilon: float | None = 1.0,
        calibration: str = "tight",
        loss_bounds: InputBounds | None = None,
        eta: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
        newton_tol: float = 1e-9,
    ) -> None:
        self.barrier = barrier
        self.dim, self.horizon, self.replicas = barrier.dim, int(horizon), int(replicas)
        self.bounds = loss_bounds if loss_bounds is not None else NormBall(1.0, 2, self.dim)
        if self.bounds.dim != self.dim:
            raise ValueError(f"loss_bounds has dimension {self.bounds.dim}, expected {self.dim}")
        self.clip = bool(clip)
        self.newton_tol = float(newton_tol)
        # the fictitious-loss argument of Lemma 4.2: l1 sensitivity diam_1(Y)
        lam, self.privacy = reduction_laplace(
            self.bounds.diameter(1),
            self.bounds.max_norm(1),
            epsilon,
            calibration,
            "Agarwal & Singh (2017) Thm 4.5 (lambda = ||Y||_1 / epsilon)",
        )
        self.laplace_scale = lam
        self.noise = LaplaceNoise(lam)
        x_norm = barrier.max_norm()
        self.m = self.bounds.max_norm(2) * x_norm
        if eta is None:
            denom = 2 * self.dim**2 * self.horizon * (self.m**2 + lam**2 * self.dim * x_norm**2)
            eta = math.sqrt(barrier.nu * math.log(max(self.horizon, 2)) / denom)
        self.eta = float(eta)
        self._rng = as_generator(rng)
        self._cum = np.zeros((self.replicas, self.dim))
        self._x = np.broadcast_to(barrier.analytic_center(), (self.replicas, self.dim)).copy()
        self._played = np.zeros((self.replicas, self.dim))
        self._direction = np.zeros((self.replicas, self.dim))  # s lambda_i^{1/2} e_i
        self._acted = False
        self.t = 0

    def _ftrl_point(self) -> None:
        """Damped Newton on eta <L~, x> + R(x), warm-started at the previous point."""
        x = self._x
        dec = np.full(self.replicas, np.inf)
        for _ in range(100):
            g = self.eta * self._cum + self.barrier.gradient(x)
            h = self.barrier.hessian(x)
            step = np.linalg.solve(h, g[..., None])[..., 0]
            dec = np.sqrt(np.maximum((g * step).sum(axis=-1), 0.0))
            new = x - step / (1.0 + dec)[:, None]
            # a damped Newton step stays inside for a self-concordant barrier; guard against
            # rounding when eta * |L~| is huge
            bad = ~(np.isfinite(new).all(axis=1) & self.barrier.contains(new))
            if np.any(bad):
                raise ValueError(
                    "DP-SCRiBLe's FTRL point left the decision set in floating point: eta times "
                    "the cumulative loss estimate is too large (use a smaller eta)"
                )
            x = new
            if dec.max() < self.newton_tol:
                break
        if not dec.max() < 1e-6:
            raise ValueError(
                f"DP-SCRiBLe's Newton iterations did not converge (decrement {dec.max():.3g}); "
                "eta times the cumulative loss estimate is too large for double precision"
            )
        self._x = x

    def act(self) -> np.ndarray:
        """y_t = x_t + s lambda_i^{-1/2} e_i on the Dikin ellipsoid, shape (replicas, N)."""
        vals, vecs = np.linalg.eigh(self.barrier.hessian(self._x))
        i = self._rng.integers(0, self.dim, size=self.replicas)
        s = np.where(self._rng.random(self.replicas) < 0.5, -1.0, 1.0)
        rows = np.arange(self.replicas)
        lam_i, e_i = vals[rows, i], vecs[rows, :, i]
        self._played = self._x + (s / np.sqrt(lam_i))[:, None] * e_i
        self._direction = (s * np.sqrt(lam_i))[:, None] * e_i
        self._acted = True
        return self._played.copy()

    def observe(self, feedback: Feedback) -> None:
        if not isinstance(feedback, BanditFeedback):
            raise TypeError(f"DPSCRiBLe observes BanditFeedback, got {type(feedback).__name__}")
        if not self._acted:
            raise ValueError("observe() must follow act(): no point was played this round")
        value = check_finite(feedback.loss, "bandit loss")
        if value.shape != (self.replicas,):
            raise ValueError(f"bandit loss must have shape ({self.replicas},), got {value.shape}")
        low, high = _value_range(self.bounds, self._played)
        slack = 1e-12 * np.maximum(np.abs(low), np.abs(high))
        inside = (value >= low - slack) & (value <= high + slack)
        if not np.all(inside):
            if not self.clip:
                j = int(np.argmin(inside))
                raise ValueError(
                    f"bandit loss {value[j]!r} of replica {j} is outside the declared bounds: "
                    f"losses in the loss set give values in [{low[j]:.6g}, {high[j]:.6g}] at "
                    "the point played"
                )
            value = np.clip(value, low, high)
        noisy = value + (
            self.noise.sample(self._rng, (self.replicas, self.dim)) * self._played
        ).sum(axis=-1)
        self._cum += self.dim * noisy[:, None] * self._direction
        self._ftrl_point()
        self._acted = False
        self.t += 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": {
                "noise": repr(self.noise),
                "bounds": repr(self.bounds),
                "barrier": repr(self.barrier),
                "replicas": self.replicas,
                "horizon": self.horizon,
                "eta": self.eta,
                "privacy": None if self.privacy is None else self.privacy.to_dict(),
            },
            "t": self.t,
            "cum": self._cum.copy(),
            "x": self._x.copy(),
            "played": self._played.copy(),
            "direction": self._direction.copy(),
            "acted": self._acted,
            "rng": generator_state(self._rng),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["config"] != self.state_dict()["config"]:
            raise ValueError(
                "state was saved from a DPSCRiBLe with a different noise, loss "
                "set, step or guarantee; it cannot continue this one"
            )
        for key in ("cum", "x", "played", "direction"):
            setattr(self, f"_{key}", np.array(state[key], dtype=float))
        self._acted = bool(state["acted"])
        self._rng = generator_from_state(state["rng"])
        self.t = int(state["t"])
