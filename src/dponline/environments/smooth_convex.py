"""Full-information online convex optimisation with smooth losses (Agarwal, Kale, Singh &
Thakurta 2023, Assumption 1): every round the learner plays x_t in a full-dimensional set K and
then sees the whole loss l_t (value, gradient, Hessian:
:class:`~dponline.losses.smooth.SmoothLoss`).

Streams are GLM losses f(<v_t, x>, y_t) with a fixed link (logistic, squared, Huber), optionally
plus lam ||x - a_t||^2 / 2 (strongly convex). Synthetic streams (:func:`smooth_convex`) and a
real one (:func:`digits_logistic`: online logistic regression on the bundled handwritten
digits).

Regret is against the best fixed point of K in hindsight, min_x sum_{s<=t} l_s(x), at the
rounds asked for (the runner asks for the rounds it records: a minimisation over the sum of t
losses costs O(t d^2) per Newton step, too much for every round of a long stream). It is solved
by the barrier method: Newton on sum_s l_s(x) + mu R(x) along mu = 1e-2, 1e-4, 1e-6, 1e-8
(R the set's nu-self-concordant barrier), whose answer is within mu (nu + 1) of the minimum
(Nesterov & Nemirovski 1994: a point with Newton decrement lam <= 1e-7 for f / mu + R is within
mu (nu + O(lam)) of it). ``comparator_error`` states that bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dponline.data import load_digits
from dponline.domains.base import ConvexDomain, HasBarrier, checked_domain
from dponline.domains.box import Box
from dponline.domains.lp_ball import LpBall
from dponline.environments.oblivious import Stateless
from dponline.losses import GLMLink, LossSum, SmoothLoss, link_by_name
from dponline.privacy.arguments import ArgumentError, checked_count
from dponline.privacy.bounds import check_finite
from dponline.protocol import FeedbackKind, LossFunctionFeedback

__all__ = ["SmoothConvexEnvironment", "barrier_minimum", "digits_logistic", "smooth_convex"]

#: the barrier weights of the comparator's path and its certified accuracy per unit of nu
_PATH = (1e-2, 1e-4, 1e-6, 1e-8)


def barrier_minimum(
    losses: LossSum, domain: ConvexDomain, start: np.ndarray
) -> tuple[float, np.ndarray, float]:
    """min over ``domain`` of ``losses`` by the barrier method (module docstring): the value at
    the point found, the point, and the certified bound on its excess over the minimum."""
    barrier = domain.barrier
    x = np.array(start, dtype=float)[None, :]
    # start the path where f / mu is of order one (a sum of many losses: mu ~ f), so that damped
    # Newton is not asked to cross the set in one stage, then divide by 100 down to _PATH
    scale = max(float(abs(losses.value(x)[0])), _PATH[0])
    path = [scale * 1e-2**k for k in range(12) if scale * 1e-2**k > _PATH[0]] + list(_PATH)
    converged = True
    for mu in path:
        done, previous = False, math.inf
        # Newton on f / mu + R (self-concordant in its barrier part): damped step 1 / (1 + lam)
        # with lam the decrement of that scaled function, backtracking to stay inside and
        # descend, full steps once lam^2 < 1e-6, until lam^2 < 1e-14 (smaller is below what
        # double precision resolves when the minimum is on the boundary)
        for _ in range(200):
            g = losses.gradient(x) / mu + barrier.gradient(x)
            h = losses.hessian(x) / mu + barrier.hessian(x)
            try:
                step = -np.linalg.solve(h, g[..., None])[..., 0]
            except np.linalg.LinAlgError:
                # a minimum on the boundary: the barrier's radial curvature (~1e30) swamps the
                # rest in double precision and LU sees a singular matrix; the least-squares
                # step (SVD) still resolves every direction it can
                step = -np.linalg.lstsq(h[0], g[0], rcond=None)[0][None, :]
            dec2 = float(-(g * step).sum())
            # converged, or at the floor of double precision (below 1e-8 the decrement squares
            # each step; when it stops falling, rounding is all that is left)
            if dec2 < 1e-14 or (dec2 < 1e-8 and dec2 > 0.25 * previous):
                done = True
                break
            previous = dec2
            alpha = 1.0 if dec2 < 1e-6 else 1.0 / (1.0 + math.sqrt(dec2))
            f0 = float(losses.value(x)[0] / mu + barrier.value(x)[0])
            moved = False
            for _ in range(60):
                cand = x + alpha * step
                if barrier.contains(cand)[0]:
                    fc = float(losses.value(cand)[0] / mu + barrier.value(cand)[0])
                    if dec2 < 1e-6 or fc <= f0 - 0.25 * alpha * dec2:
                        moved = True
                        break
                alpha *= 0.5
            if not moved:
                raise RuntimeError(
                    f"the comparator's Newton step found no descent at decrement^2 {dec2:.3g}"
                )
            x = cand
        converged = done
    # the certificate needs the last stage's Newton to have converged; otherwise say so
    error = _PATH[-1] * (float(barrier.nu) + 1.0) if converged else math.inf
    return float(losses.value(x)[0]), x[0], error


@dataclass
class SmoothConvexEnvironment(Stateless):
    """GLM losses f(<v_t, x>, y_t) (+ lam ||x - a_t||^2 / 2) over ``domain`` (a full-dimensional
    set with a barrier), full information. ``lipschitz``, ``smoothness`` and
    ``strong_convexity`` are the constants the stream declares for every loss over the set (the
    learner checks them on each loss)."""

    domain: ConvexDomain
    link: GLMLink
    v: np.ndarray
    y: np.ndarray
    curvature: float = 0.0
    anchors: np.ndarray | None = None
    name: str = "smooth convex"
    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_FUNCTION
    setting: ClassVar[str] = "online convex optimisation (full information, smooth losses)"
    lipschitz: float = field(init=False)
    smoothness: float = field(init=False)
    strong_convexity: float = field(init=False)

    def __post_init__(self) -> None:
        checked_domain(self.domain)
        if not isinstance(self.domain, HasBarrier) or self.domain.affine_dim != self.domain.dim:
            raise TypeError("a smooth convex stream needs a full-dimensional set with a barrier")
        d = self.domain.dim
        self.v = check_finite(self.v, "v")
        self.y = check_finite(self.y, "y")
        if self.v.ndim != 2 or self.v.shape[1] != d or self.y.shape != (self.v.shape[0],):
            raise ValueError(f"need v of shape (T, {d}) and y of shape (T,)")
        if self.v.shape[0] < 1:
            raise ArgumentError("horizon must be a positive integer, got 0 (v and y hold no round)")
        if not (math.isfinite(self.curvature) and self.curvature >= 0):
            raise ValueError(f"curvature must be >= 0, got {self.curvature!r}")
        if self.curvature > 0:
            a = np.zeros_like(self.v) if self.anchors is None else self.anchors
            self.anchors = check_finite(a, "anchors")
            if self.anchors.shape != self.v.shape:
                raise ValueError(f"anchors must have shape {self.v.shape}")
        radius = float(self.domain.barrier.max_norm())
        constants = np.array([self.loss(t).constants(radius) for t in range(self.horizon)])
        self.lipschitz = float(constants[:, 0].max())
        self.smoothness = float(constants[:, 1].max())
        self.strong_convexity = float(constants[:, 2].min())
        self._best: dict[int, float] = {}
        self.comparator_error = 0.0

    @property
    def horizon(self) -> int:
        return int(self.v.shape[0])

    @property
    def dim(self) -> int:
        return int(self.domain.dim)

    @property
    def is_glm(self) -> bool:
        return self.curvature == 0.0

    def loss(self, t: int) -> SmoothLoss:
        if self.curvature > 0:
            return SmoothLoss(
                self.dim, self.link, self.v[t], float(self.y[t]), self.curvature, self.anchors[t]
            )
        return SmoothLoss.glm(self.link, self.v[t], float(self.y[t]))

    def loss_of(self, v: np.ndarray, y: float) -> SmoothLoss:
        """The stream's GLM loss f(<v, x>, y) for a given row (the privacy audit's streams)."""
        return SmoothLoss.glm(self.link, np.asarray(v, dtype=float), float(y))

    def round(self, t: int, action: np.ndarray) -> tuple[LossFunctionFeedback, np.ndarray]:
        x = check_finite(action, "action")
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"actions must have shape (replicas, {self.dim}), got {x.shape}")
        loss = self.loss(t)
        return LossFunctionFeedback(loss.value, loss.gradient, loss=loss), loss.value(x)

    def best_cumulative_loss(self, rounds: np.ndarray | None = None) -> np.ndarray:
        """min_x sum_{s<=t} l_s(x) at the 1-based ``rounds`` (every round for None), within
        ``comparator_error`` above the true minima; cached."""
        wanted = np.arange(1, self.horizon + 1) if rounds is None else np.asarray(rounds)
        missing = sorted({int(r) for r in wanted} - set(self._best))
        if missing:
            if missing[0] < 1 or missing[-1] > self.horizon:
                raise ValueError(f"rounds must lie in [1, {self.horizon}]")
            total = LossSum(self.dim)
            centre = np.asarray(self.domain.barrier.analytic_center(), dtype=float)
            x = centre
            done = 0
            for r in missing:
                while done < r:
                    total.add(self.loss(done))
                    done += 1
                # warm start from the last minimiser, pulled off the boundary (a start where
                # the barrier's Hessian is ~1e16 leaves Newton's system singular in doubles)
                value, x, error = barrier_minimum(total, self.domain, centre + 0.99 * (x - centre))
                self._best[r] = value
                self.comparator_error = max(self.comparator_error, error)
        return np.array([self._best[int(r)] for r in wanted])

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(cumulative_loss, dtype=float) - self.best_cumulative_loss(rounds)


def _domain(name: str, dim: int, radius: float) -> ConvexDomain:
    if name == "ball":
        return LpBall(dim, 2.0, radius)
    if name == "box":
        return Box(dim, -radius, radius)
    raise ValueError(f"domain must be 'ball' or 'box', got {name!r}")


def smooth_convex(
    horizon: int,
    rng: np.random.Generator,
    domain: str = "ball",
    dim: int = 5,
    losses: str = "logistic",
    radius: float = 1.0,
    curvature: float = 0.0,
    noise: float = 0.5,
    kind: str = "stochastic",
) -> SmoothConvexEnvironment:
    """A synthetic stream around a random unit direction w: unit feature vectors v_t; labels
    y_t = sign(<w_t, v_t> + noise g_t) for ``logistic``, y_t = <w_t, v_t> / 2 + noise g_t / 2
    (clipped to [-1, 1]) for ``squared`` and ``huber``; ``curvature`` lam > 0 adds
    lam ||x - 0||^2 / 2 (strongly convex losses, Algorithm 2 of 003).

    ``kind = "stochastic"``: w_t = w every round (i.i.d. rounds). ``kind = "adversarial"``: an
    oblivious sequence that punishes following the leader, w_t = w on the blocks of rounds
    [4^k, 2 * 4^k) and -w on [2 * 4^k, 4^(k+1)) (1-based t; round 1 takes w, rounds 2-3 -w), so
    the leader keeps turning round as the blocks grow; the comparator is the best fixed point in
    hindsight as for every stream."""
    horizon = checked_count("horizon", horizon)
    k = _domain(domain, dim, radius)
    w = rng.standard_normal(dim)
    w /= np.linalg.norm(w)
    v = rng.standard_normal((horizon, dim))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    g = rng.standard_normal(horizon)
    if kind == "stochastic":
        signs = np.ones(horizon)
    elif kind == "adversarial":
        t = np.arange(1, horizon + 1)
        block = np.floor(np.log2(t)).astype(int)  # t in [2^b, 2^(b+1))
        signs = np.where(block % 2 == 0, 1.0, -1.0)
    else:
        raise ValueError(f"kind must be 'stochastic' or 'adversarial', got {kind!r}")
    margin = signs * (v @ w)
    if losses == "logistic":
        y = np.where(margin + noise * g >= 0, 1.0, -1.0)
    elif losses in ("squared", "huber"):
        y = np.clip(0.5 * margin + 0.5 * noise * g, -1.0, 1.0)
    else:
        raise ValueError(f"losses must be 'logistic', 'squared' or 'huber', got {losses!r}")
    return SmoothConvexEnvironment(
        k,
        link_by_name(losses),
        v,
        y,
        curvature=float(curvature),
        anchors=None,
        name=f"smooth_convex:{domain}:{losses}" + (":adversarial" if kind == "adversarial" else ""),
    )


def digits_logistic(
    horizon: int | None = None,
    rng: np.random.Generator | None = None,
    positive: tuple[int, ...] = (0, 1, 2, 3, 4),
    radius: float = 5.0,
    pool: int = 8,
) -> SmoothConvexEnvironment:
    """Online logistic regression on the bundled handwritten digits (1,797 images, 8 x 8
    pixels): v_t = the image's pixels scaled into the unit ball, y_t = +1 for a digit in
    ``positive`` and -1 otherwise, in the file's order; decisions in the Euclidean ball of
    ``radius`` in R^(pool^2).

    ``pool`` (8, 4, 2 or 1) average-pools the 8 x 8 image into pool x pool blocks: 64 features
    (the raw pixels), 16, 4 or 1. Pooling is a fixed map, the same for every image, so it does
    not touch privacy; it makes CTRL's Newton solves (O(d^3)) cheap enough for the demo."""
    if pool not in (1, 2, 4, 8):
        raise ValueError(f"pool must be 1, 2, 4 or 8, got {pool!r}")
    pixels, labels = load_digits()
    x = pixels.astype(float)
    if pool != 8:
        block = 8 // pool
        x = x.reshape(-1, pool, block, pool, block).mean(axis=(2, 4)).reshape(len(x), -1)
    x /= np.linalg.norm(x, axis=1, keepdims=True).max()
    y = np.where(np.isin(labels, positive), 1.0, -1.0)
    n = len(y) if horizon is None else int(horizon)
    if not 1 <= n <= len(y):
        raise ValueError(f"horizon must lie in [1, {len(y)}], got {horizon!r}")
    return SmoothConvexEnvironment(
        LpBall(x.shape[1], 2.0, radius), link_by_name("logistic"), x[:n], y[:n],
        name="digits_logistic",
    )  # fmt: skip
