"""Couple-The-Regularized-Leader (CTRL): Algorithms 1 and 2 of Agarwal, Kale, Singh & Thakurta
(2023), "Differentially Private and Lazy Online Convex Optimization".

The learner is follow-the-regularised-leader with a random linear perturbation,

    x*(l_{1:t}, Z) = argmin_x J(l_{1:t}, x) + <Z, x>,
    J(l, x) = l(x) + ||x - c||^2 / (2 eta) + B(x)                                   (Eq. 3.1)

over the interior of a full-dimensional set K with a barrier, Z ~ N(0, sigma^2 I), that moves
only when a rejection test says so. Its iterates keep (approximately) the distribution mu_t of
x*(l_{1:t-1}, Z), whose density is (Lemma 2)

    mu(x) = nu(-grad J(l, x)) det(Hess J(l, x)).

Each round, with x_t fixed, the learner adds the new loss's gradient and Hessian at x_t to the
running gradient and Hessian of J at x_t (O(d^2), plus one Cholesky factor for the
log-determinant: no solve), compares log mu_{t+1}(x_t) with log mu_t(x_t), and keeps x_t with
probability min{1, max{Phi^{-2}, mu_{t+1}(x_t) / (Phi mu_t(x_t))}} unless a forced switch
(probability p) fires; a switch (at most ``switch_budget`` of them) draws a fresh Z and solves
for x*(l_{1:t}, Z) by a damped Newton method on the sum of all losses so far, started at the
barrier's analytic centre (a warm start at the previous point is worse: with large noise the
minimisers sit close to the boundary in the direction of -Z, and Newton creeps along a curved
boundary by steps of the size of the slack; from the centre it moves out almost radially).

Conventions we chose where the paper leaves room (each is a change of coordinates or an
analysis-only device, not a change of the algorithm):

* The paper assumes 0 in K and regularises ||x||^2; we centre both the regulariser and the
  shrunk set K° = c + (1 - 1/T)(K - c) at c, the barrier's analytic centre.
* The barrier B = s (R - R(c)) is the set's log barrier R shifted to vanish at its minimiser
  and scaled so that 0 <= B <= G D on K° (Section 2). For a barrier R = -sum_j log g_j(x)
  with concave slacks g_j (the ball, boxes, polytopes), every x in K° is
  x = c/T + (1 - 1/T) y with y in K, so g_j(x) >= g_j(c)/T and R(x) - R(c) <= m log T:
  s = G D / (m log T), m the number of slacks.
* Algorithm 2 (strongly convex losses) uses sigma_t = sigma sqrt(t) (Theorem 13); with
  sigma_0 = 0 the first point would be deterministic and mu_1 would have no density, so the
  first noise uses sigma_1 (sigma_t = sigma sqrt(max(t, 1))).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.domains.base import ConvexDomain, HasBarrier, checked_domain
from dponline.losses import GLM_LINKS, GLMLink, LossSum, SmoothLoss, link_by_name
from dponline.online.ctrl_calibration import CTRLCalibrator
from dponline.online.ctrl_parameters import lazy_strongly_convex_parameters
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_int_array,
    checked_nonnegative,
    checked_nonnegative_int,
    checked_positive,
    checked_probability,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import calibrate
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.protocol import (
    FeedbackKind,
    LossFunctionFeedback,
    NoiseHandle,
    RoundDiscipline,
    checked_config,
    checked_count,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    register_learner,
)
from dponline.rng import RngLike, as_generator, generator_state

__all__ = ["CTRL", "NewtonResult", "barrier_scale", "lazy_parameters", "lazy_regret_bound"]

_LOG_2PI = math.log(2.0 * math.pi)


def barrier_scale(lipschitz: float, diameter: float, slacks: int, horizon: int) -> float:
    """s with 0 <= s (R - R(c)) <= G D on K° (module docstring): G D / (m log T), log T taken
    at T >= 2."""
    return float(lipschitz) * float(diameter) / (int(slacks) * math.log(max(int(horizon), 2)))


class NewtonResult:
    """Points, the gradient and Hessian of J (without the linear term) there, and the number
    of Newton iterations used."""

    def __init__(self, x: np.ndarray, grad_j: np.ndarray, hess_j: np.ndarray, iters: int):
        self.x, self.grad_j, self.hess_j, self.iters = x, grad_j, hess_j, iters


class CTRL(NoiseHandle, RoundDiscipline):
    """Algorithm 1 (``noise_growth=False``) or Algorithm 2 (``noise_growth=True``) of Agarwal,
    Kale, Singh & Thakurta (2023) over ``domain`` (full-dimensional, with a barrier).

    Parameters come from the calibrators of :mod:`dponline.online.ctrl_parameters`: ``eta``
    (``math.inf``: no quadratic regulariser), ``sigma``, ``log_phi`` (a number, or one value per
    round 1..T for Algorithm 2's Phi_t), ``p`` (forced switching rate), ``switch_budget`` (B),
    and the declared ``lipschitz`` G and ``smoothness`` beta of every loss over the set (checked
    on each loss from its parameters; also ``strong_convexity`` lam > 0 for Algorithm 2 and
    ``glm_link`` for the GLM setting, where every loss must be f(<v, x>, y) with that link).
    ``privacy`` is the guarantee the calibrator proved (None: the lazy, non-private use).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_FUNCTION

    def __init__(
        self,
        domain: ConvexDomain,
        horizon: int,
        *,
        eta: float,
        sigma: float,
        log_phi: float | np.ndarray,
        p: float,
        lipschitz: float,
        smoothness: float,
        switch_budget: float = math.inf,
        strong_convexity: float = 0.0,
        glm_link: GLMLink | None = None,
        noise_growth: bool = False,
        privacy: PrivacyGuarantee | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        newton_tolerance: float = 1e-22,
    ) -> None:
        self.domain = checked_domain(domain)
        if not isinstance(domain, HasBarrier) or domain.affine_dim != domain.dim:
            raise TypeError(
                f"CTRL needs a full-dimensional set with a barrier (ball, box, polytope), got "
                f"{type(domain).__name__}"
            )
        self.barrier = domain.barrier
        self._start_rounds(horizon)
        self.replicas = checked_count("replicas", replicas)
        self.dim = int(domain.dim)
        eta = checked_positive("eta (math.inf for none)", eta, infinite_ok=True)
        sigma = checked_positive("sigma", sigma)
        p = checked_probability("p", p, closed=True)
        if switch_budget != math.inf:
            switch_budget = checked_nonnegative("switch_budget (math.inf for none)", switch_budget)
        lipschitz = checked_positive("lipschitz", lipschitz)
        smoothness = checked_positive("smoothness", smoothness)
        strong_convexity = checked_nonnegative("strong_convexity", strong_convexity)
        if math.isinf(eta) and strong_convexity == 0:
            raise ValueError("eta = inf needs strongly convex losses (strong_convexity > 0)")
        phi = np.asarray(log_phi, dtype=float)
        if phi.ndim == 0:
            phi = np.full(self.horizon, float(phi))
        if phi.shape != (self.horizon,) or not np.all(np.isfinite(phi)) or np.any(phi < 0):
            raise ValueError(
                f"log_phi must be a non-negative number or {self.horizon} of them, got shape "
                f"{phi.shape}"
            )
        self.eta, self.sigma, self.p = float(eta), float(sigma), float(p)
        self.log_phi = phi
        self.switch_budget = float(switch_budget)
        self.lipschitz, self.smoothness = float(lipschitz), float(smoothness)
        self.strong_convexity = float(strong_convexity)
        self.glm_link = glm_link
        self.noise_growth = bool(noise_growth)
        self.privacy = privacy
        self.newton_tolerance = float(newton_tolerance)
        self.center = np.asarray(self.barrier.analytic_center(), dtype=float)
        slacks = int(np.asarray(self.barrier.slack(self.center[None, :])).shape[-1])
        self.barrier_scale = barrier_scale(lipschitz, domain.diameter, slacks, self.horizon)
        self.radius = float(self.barrier.max_norm())
        self._rng = as_generator(rng)
        self.losses = LossSum(self.dim)
        self.switches = np.zeros(self.replicas, dtype=np.int64)
        self.newton_iterations = 0
        self._first_points()

    def _first_points(self) -> None:
        """x_1 = x*(0, Z_0) for every replica."""
        z = self._rng.standard_normal((self.replicas, self.dim)) * self._sigma_at(0)
        start = np.broadcast_to(self.center, (self.replicas, self.dim))
        self._set_points(np.ones(self.replicas, dtype=bool), self.solve(start, z), 0)

    # --- the objective J and its Newton solver ---------------------------------------------
    def _sigma_at(self, n: int) -> float:
        """The noise scale of mu_{n+1} (the law of x*(l_{1:n}, Z))."""
        return self.sigma * math.sqrt(max(n, 1)) if self.noise_growth else self.sigma

    def _regulariser(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Value, gradient, Hessian of ||x - c||^2 / (2 eta) + s R(x) at the rows of x."""
        s = self.barrier_scale
        r = x - self.center
        inv = 0.0 if math.isinf(self.eta) else 1.0 / self.eta
        value = 0.5 * inv * (r * r).sum(axis=-1) + s * self.barrier.value(x)
        grad = inv * r + s * self.barrier.gradient(x)
        hess = s * self.barrier.hessian(x) + inv * np.eye(self.dim)
        return value, grad, hess

    def j_gradient_hessian(
        self, x: np.ndarray, losses: LossSum | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """grad J(l_{1:t}, x) and Hess J(l_{1:t}, x) for the losses seen so far (Eq. 3.1), or
        for the sum ``losses``."""
        _, g, h = self._regulariser(x)
        losses = self.losses if losses is None else losses
        return g + losses.gradient(x), h + losses.hessian(x)

    def j_value(self, x: np.ndarray) -> np.ndarray:
        return self._regulariser(x)[0] + self.losses.value(x)

    def solve(self, start: np.ndarray, z: np.ndarray, max_iterations: int = 200) -> NewtonResult:
        """x*(l_{1:t}, Z) for each row of ``z``, in two Newton stages from ``start`` (strictly
        inside K): first on the regulariser alone, ||x - c||^2 / (2 eta) + B(x) + <Z, x> (O(d^2)
        a step whatever the number of losses), then on the whole J + <Z, x> from there where the
        losses' gradient is under a tenth of ||Z|| (large noise: the losses perturb the first
        problem little, so the costly stage is short), from ``start`` elsewhere.
        Each stage halves its step until it stays strictly inside the barrier's domain and
        decreases the objective by a quarter of the predicted amount (Armijo) while the Newton
        decrement is large, takes full steps near the minimiser, and stops when the squared
        decrement g' H^{-1} g is below ``newton_tolerance`` or stops falling (the floor of
        double precision)."""
        start = np.array(start, dtype=float)
        first = self._newton(start, z, False, max_iterations).x
        # the first stage's point is a good start only where the losses' pull is small next to
        # the noise's; elsewhere it sits near the boundary in the wrong direction and Newton
        # would creep along the boundary by steps of the size of the slack: start as given
        pull = np.linalg.norm(self.losses.gradient(first), axis=-1)
        perturbation = pull <= 0.1 * np.linalg.norm(z, axis=-1)
        return self._newton(np.where(perturbation[:, None], first, start), z, True, max_iterations)

    def _newton(
        self, x: np.ndarray, z: np.ndarray, with_losses: bool, max_iterations: int
    ) -> NewtonResult:
        def parts(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            if with_losses:
                return self.j_gradient_hessian(points)
            return self._regulariser(points)[1:]

        def value(points: np.ndarray) -> np.ndarray:
            return self.j_value(points) if with_losses else self._regulariser(points)[0]

        iters = 0
        g, h = parts(x)
        previous = np.full(len(x), np.inf)
        f_x: np.ndarray | None = None  # the objective at x, kept from the accepted step
        for _ in range(max_iterations):
            grad = g + z
            step = -np.linalg.solve(h, grad[..., None])[..., 0]
            dec2 = -(grad * step).sum(axis=-1)
            # converged: below the tolerance, or at the floor of double precision (near the
            # minimiser the decrement squares each step; once it stops falling, rounding in
            # grad = grad J + Z, of relative size 1e-16 ||Z||, is all that is left)
            stalled = (dec2 < 1e-12) & (dec2 > 0.25 * previous)
            active = (dec2 > self.newton_tolerance) & ~stalled
            previous = np.where(active, dec2, previous)
            if not active.any():
                break
            iters += 1
            alpha = np.ones(len(x))
            near = dec2 < 1e-6
            # full steps near the minimiser need no objective values (only the domain check)
            armijo = bool((active & ~near).any())
            if armijo and f_x is None:
                f_x = value(x) + (z * x).sum(axis=-1)
            f = np.full(len(x), np.inf)
            for _ in range(60):
                cand = x + alpha[:, None] * step
                inside = self.barrier.contains(cand)
                f = np.full(len(x), np.inf)
                if armijo and inside.any():
                    c = cand[inside]
                    f[inside] = value(c) + (z[inside] * c).sum(axis=-1)
                accept = inside & (near | ~active)
                if armijo:
                    assert f_x is not None
                    accept |= inside & (f <= f_x - 0.25 * alpha * dec2)
                if accept.all():
                    break
                alpha = np.where(accept, alpha, 0.5 * alpha)
            moved = active & accept
            x = np.where(moved[:, None], cand, x)
            # the accepted candidates' values are the new f_x; rows that moved unevaluated
            # (near steps) lose theirs, which the next Armijo step recomputes
            if armijo and f_x is not None and bool(np.isfinite(f[moved]).all()):
                f_x = np.where(moved, f, f_x)
            else:
                f_x = None
            g, h = parts(x)
        if with_losses:
            self.newton_iterations += iters
        return NewtonResult(x, g, h, iters)

    # --- densities (Lemma 2) ----------------------------------------------------------------
    def log_density(self, grad_j: np.ndarray, hess_j: np.ndarray, n: int) -> np.ndarray:
        """log mu_{n+1}(x) = log nu(-grad J(l_{1:n}, x)) + log det Hess J(l_{1:n}, x)
        (Lemma 2), from the gradient and Hessian of J at the points."""
        var = self._sigma_at(n) ** 2
        chol = np.linalg.cholesky(hess_j)
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1)
        return (
            -(grad_j * grad_j).sum(axis=-1) / (2.0 * var)
            - 0.5 * self.dim * (_LOG_2PI + math.log(var))
            + logdet
        )

    def _set_points(self, mask: np.ndarray, result: NewtonResult, n: int) -> None:
        if n == 0:
            self.x = result.x.copy()
            self._grad = result.grad_j.copy()
            self._hess = result.hess_j.copy()
            self._log_mu = self.log_density(result.grad_j, result.hess_j, 0)
            return
        self.x[mask] = result.x
        self._grad[mask] = result.grad_j
        self._hess[mask] = result.hess_j
        self._log_mu[mask] = self.log_density(result.grad_j, result.hess_j, n)

    # --- the protocol -----------------------------------------------------------------------
    def act(self) -> np.ndarray:
        """x_{t+1}, shape (replicas, d)."""
        self._acted = True
        return self.x.copy()

    def checked_loss(self, feedback: Any) -> SmoothLoss:
        """The round's loss after the checks the guarantee needs: a structured smooth loss of
        the right dimension whose Lipschitz and smoothness constants over the set (from its
        parameters) are within the declared ones, strongly convex enough for Algorithm 2, and of
        the declared GLM link in the GLM setting."""
        what = "CTRL observes LossFunctionFeedback carrying a SmoothLoss (its Hessian and "
        if not isinstance(feedback, LossFunctionFeedback):
            raise TypeError(f"{what}declared constants), got {type(feedback).__name__}")
        self._check_round()
        if type(feedback.loss) is not SmoothLoss:
            # a subclass, or a link of its own, could report smaller constants than its own
            raise TypeError(f"{what}declared constants), got the loss {feedback.loss!r:.80}")
        loss = feedback.loss
        if loss.link is not None:
            if type(loss.link) is not GLM_LINKS.get(getattr(loss.link, "name", None)):
                raise TypeError(
                    f"CTRL's guarantee reads a link's constants from the link itself, so it takes "
                    f"the links of dponline.losses ({sorted(GLM_LINKS)}), got {loss.link!r:.80}"
                )
            # the sum keeps the link: a copy, so that the one checked here is the one summed
            fresh = link_by_name(loss.link.name, **loss.link.options())
            loss = dataclasses.replace(loss, link=fresh, v=np.array(loss.v))
        if loss.dim != self.dim:
            raise ValueError(
                f"a loss on points of shape ({loss.dim},), the learner plays ({self.dim},)"
            )
        g, beta, lam = loss.constants(self.radius)
        tol = 1.0 + 1e-9
        if g > self.lipschitz * tol:
            sizes = [f"||v|| = {np.linalg.norm(loss.v):.6g}"] if loss.link is not None else []
            if loss.curvature is not None:
                sizes.append(f"||a|| = {np.linalg.norm(loss.anchor):.6g}")
            raise ValueError(
                f"round {self.t + 1}: the loss's Lipschitz constant over the set {g:.6g} exceeds "
                f"the declared bound {self.lipschitz:.6g} ({', '.join(sizes)})"
            )
        if beta > self.smoothness * tol:
            raise ValueError(
                f"round {self.t + 1}: the loss's smoothness {beta:.6g} exceeds the declared "
                f"bound {self.smoothness:.6g}"
            )
        if lam < self.strong_convexity / tol:
            raise ValueError(
                f"round {self.t + 1}: the loss is {lam:.6g}-strongly convex, the learner "
                f"needs {self.strong_convexity:.6g}"
            )
        if self.glm_link is not None and not (loss.is_glm and loss.link == self.glm_link):
            raise ValueError(
                f"round {self.t + 1}: the GLM guarantee needs f(<v, x>, y) with the link "
                f"{self.glm_link!r} alone, got {loss!r}"
            )
        return loss

    def observe(self, feedback: Any) -> None:
        loss = self.checked_loss(feedback)
        u = self._rng.random((2, self.replicas))  # S_t and S'_t, drawn every round
        self.losses.add(loss)
        self._end_round()
        n = self.t
        self._grad += loss.gradient(self.x)
        self._hess += loss.hessian(self.x)
        log_next = self.log_density(self._grad, self._hess, n)
        if n == self.horizon:  # no decision follows the last loss
            self._log_mu = log_next
            return
        log_phi = float(self.log_phi[n - 1])
        log_ratio = log_next - self._log_mu - log_phi
        keep_prob = np.clip(np.exp(np.minimum(log_ratio, 0.0)), math.exp(-2.0 * log_phi), 1.0)
        s_zero = u[0] >= keep_prob  # S_t = 0: the test rejects
        forced = u[1] < self.p  # S'_t = 0
        switch = (self.switches < self.switch_budget) & (s_zero | forced)
        self._log_mu = log_next
        if switch.any():
            k = int(switch.sum())
            z = self._rng.standard_normal((k, self.dim)) * self._sigma_at(n)
            start = np.broadcast_to(self.center, (k, self.dim))
            self._set_points(switch, self.solve(start, z), n)
            self.switches[switch] += 1

    def _scale_noise(self, factor: float) -> None:
        """sigma times ``factor`` (the audit's handle, before round 1): x_1 is drawn again from
        mu_1 at the new scale, so that the run is the algorithm at that sigma."""
        self.sigma *= factor
        self._first_points()

    # --- resume ----------------------------------------------------------------------------
    def _config(self) -> dict[str, Any]:
        return {
            "horizon": self.horizon,
            "replicas": self.replicas,
            "dim": self.dim,
            "eta": self.eta,
            "p": self.p,
            "switch_budget": self.switch_budget,
            "lipschitz": self.lipschitz,
            "smoothness": self.smoothness,
            "strong_convexity": self.strong_convexity,
            "noise_growth": self.noise_growth,
            "glm_link": None if self.glm_link is None else self.glm_link.name,
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "acted": self._acted,
            "sigma": self.sigma,
            "noise_multiplier": self.noise_multiplier,
            "log_phi": self.log_phi.copy(),
            "x": self.x.copy(),
            "grad": self._grad.copy(),
            "hess": self._hess.copy(),
            "log_mu": self._log_mu.copy(),
            "switches": self.switches.copy(),
            "newton_iterations": self.newton_iterations,
            "losses": self.losses.state_dict(),
            "rng": generator_state(self._rng),
        }

    def _checked_losses(self, saved: Any) -> LossSum:
        """The saved sum of the losses seen, checked and loaded into a new sum (the learner's
        own is not touched): the quadratic statistics of shape (d, d), (d,) and a number, and
        per GLM link the rows v (n, d) and labels y (n,)."""
        d = self.dim
        checked_nonnegative_int("saved losses' count", saved_field(saved, "count"))
        checked_real_array("saved losses' a", saved_field(saved, "a"), (d, d))
        checked_real_array("saved losses' aa", saved_field(saved, "aa"), (d,))
        checked_real_array("saved losses' aaa", saved_field(saved, "aaa"), ())
        links, rows = saved_field(saved, "links"), saved_field(saved, "rows")
        if not (isinstance(links, list | tuple) and isinstance(rows, list | tuple)) or len(
            links
        ) != len(rows):
            raise ArgumentError("saved losses need as many GLM links as blocks of rows")
        for k, row in enumerate(rows):
            if not (isinstance(row, list | tuple) and len(row) == 2):
                raise ArgumentError(f"saved losses' rows[{k}] must be a pair (v, y)")
            y = checked_real_array(f"saved losses' rows[{k}] y", row[1])
            checked_real_array(f"saved losses' rows[{k}] v", row[0], (len(y), d))
            if y.ndim != 1:
                raise ArgumentError(f"saved losses' rows[{k}] y must be 1-D, got {y.shape}")
        if self.glm_link is not None and any(
            not (isinstance(link, list | tuple) and link and link[0] == self.glm_link.name)
            for link in links
        ):
            raise ArgumentError(
                f"saved losses hold rows of links {links!r:.120}; this learner's guarantee is "
                f"for the link {self.glm_link.name!r} alone"
            )
        losses = LossSum(d)
        try:
            losses.load_state_dict(saved)
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise ArgumentError(f"saved losses are not a sum of losses: {err!r:.200}") from None
        # a sum of convex losses: its quadratic part is symmetric positive semi-definite (the
        # proofs need Hess J >= I / eta)
        a = losses._a
        scale = max(1.0, float(np.abs(a).max()))
        if (
            not np.allclose(a, a.T, rtol=0.0, atol=1e-12 * scale)
            or np.linalg.eigvalsh(0.5 * (a + a.T)).min() < -1e-9 * scale
        ):
            raise ArgumentError(
                "saved losses' quadratic part is not positive semi-definite: not a sum of convex "
                "losses"
            )
        return losses

    def _check_points(
        self, losses: LossSum, x: np.ndarray, grad: np.ndarray, hess: np.ndarray, t: int
    ) -> None:
        """The saved gradient and Hessian of J at the points are those of the saved losses
        (the run adds each loss's to them, so they agree up to rounding): a state whose
        densities do not belong to its losses would steer the switching test."""
        g, h = self.j_gradient_hessian(x, losses)
        for name, saved, exact in (("gradient", grad, g), ("Hessian", hess, h)):
            size = max(1.0, float(np.abs(exact).max()))
            if not np.allclose(saved, exact, rtol=0.0, atol=1e-9 * (t + 1) * size):
                raise ArgumentError(
                    f"saved {name} of J is not that of the saved losses at the saved points "
                    f"(largest difference {float(np.abs(saved - exact).max()):.3g})"
                )

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (configuration, round counter, noise scale, the points played
        and the objective's gradient, Hessian and density there, switches, the losses' sum, the
        RNG) and return the function that installs it."""
        checked_config(
            saved_field(state, "config"),
            self._config(),
            "CTRL",
            "horizon, dimension, replicas or parameters",
        )
        t, acted = self._checked_rounds(state)
        r, d = self.replicas, self.dim
        sigma = checked_positive("saved sigma", saved_field(state, "sigma"))
        if sigma != self.sigma:
            raise ArgumentError(
                f"saved sigma {sigma!r} is not this learner's {self.sigma!r}: its noise was "
                "drawn at another scale"
            )
        multiplier = self._saved_multiplier(state)

        def array(key: str, *shape: int) -> np.ndarray:
            return np.array(checked_real_array(f"saved {key}", saved_field(state, key), shape))

        log_phi = array("log_phi", self.horizon)
        if not np.array_equal(log_phi, self.log_phi):
            raise ArgumentError(
                "saved log_phi is not this learner's: the switching test's slack is part of "
                "its calibration"
            )
        x, grad, hess = array("x", r, d), array("grad", r, d), array("hess", r, d, d)
        log_mu = array("log_mu", r)
        if not np.all(self.barrier.contains(x)):
            raise ArgumentError("saved points x must lie strictly inside the decision set")
        switches = checked_int_array("saved switches", saved_field(state, "switches"), (r,))
        iterations = checked_nonnegative_int(
            "saved newton_iterations", saved_field(state, "newton_iterations")
        )
        losses = self._checked_losses(saved_field(state, "losses"))
        if losses.count != t:
            raise ArgumentError(f"saved losses hold {losses.count} losses, the round counter {t}")
        self._check_points(losses, x, grad, hess, t)
        expected = self.log_density(grad, hess, t)
        if not np.allclose(log_mu, expected, rtol=1e-9, atol=1e-9):
            raise ArgumentError(
                "saved log_mu is not the density at the saved points (largest difference "
                f"{float(np.abs(log_mu - expected).max()):.3g})"
            )
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self._set_rounds(t, acted)
            self.sigma, self.noise_multiplier, self.log_phi = sigma, multiplier, log_phi
            self.x, self._grad, self._hess, self._log_mu = x, grad, hess, log_mu
            self.switches, self.newton_iterations = switches, iterations
            self.losses, self._rng = losses, rng

        return install


# --- lazy OCO (Theorems 9 and 12) and the catalogue entry (dponline.registry) ------------------


def _no_budget(name: str, budget: Any) -> None:
    """A non-private learner's factory is given no budget (the registry's contract)."""
    if budget is not None:
        raise ValueError(f"{name} is not private: its budget must be None, got {budget!r}")


def lazy_parameters(
    switches: int,
    horizon: int,
    dim: int,
    lipschitz: float,
    smoothness: float,
    diameter: float,
    glm: bool = False,
) -> dict[str, float]:
    """Algorithm 1's parameters for lazy OCO with at most ``switches`` = S switches in
    expectation: Theorem 9 (general losses) or Theorem 12 (GLMs), exactly as printed:
    delta = 2 / T^2, sigma = 12 G T sqrt(d log T) / S (no d for GLMs),
    eta = min(D / (2 G sqrt T), S / (6 beta d T)) (no d for GLMs),
    log Phi = eta beta d + (G^2 + 4 G sigma sqrt(d log T)) / (2 sigma^2) (no d for GLMs), p = 0
    and no budget (B = inf). Needs T >= 3 and 1 <= S <= T. The expected number of switches is
    at most (1 - Phi^-2) T <= 2 T log Phi (Lemma 5 with p = 0), which the proof of Theorem 9
    bounds by S."""
    t, s = checked_count("horizon", horizon), checked_count("switches", switches)
    if t < 3 or s > t:
        raise ValueError(f"lazy OCO needs T >= 3 and 1 <= S <= T, got T = {t}, S = {s}")
    g, beta, d = float(lipschitz), float(smoothness), 1 if glm else checked_count("dim", dim)
    log_t = math.log(t)
    sigma = 12.0 * g * t * math.sqrt(d * log_t) / s
    eta = min(float(diameter) / (2.0 * g * math.sqrt(t)), s / (6.0 * beta * d * t))
    log_phi = eta * beta * d + (g * g + 4.0 * g * sigma * math.sqrt(d * log_t)) / (2.0 * sigma**2)
    return {"eta": eta, "sigma": sigma, "log_phi": log_phi, "p": 0.0, "delta": 2.0 / t**2}


def lazy_regret_bound(
    switches: int,
    horizon: int,
    dim: int,
    lipschitz: float,
    smoothness: float,
    diameter: float,
    glm: bool = False,
    *,
    printed: bool = False,
) -> float:
    """Theorem 9's regret bound 2 G D sqrt T + (d T / S)(3 beta D^2 + 12 G D sqrt(log T)) + 14 G D,
    and for GLMs what Theorem 4 gives with Theorem 12's parameters:
    2 G D sqrt T + (T / S)(3 beta D^2 + 12 G D sqrt(d log T)) + 14 G D. Theorem 12 as printed
    (``printed=True``) has sqrt(log T) in place of sqrt(d log T): Theorem 4's noise term is
    sigma sqrt(d) D, and Theorem 12's sigma = 12 G T sqrt(log T) / S has no sqrt(d) to cancel it
    (Theorem 9's sigma has, which is where its d T / S comes from)."""
    t, s = int(horizon), int(switches)
    g, beta, dd = float(lipschitz), float(smoothness), float(diameter)
    log_t = math.log(t)
    if glm:
        spread = 1 if printed else int(dim)
        noise = (t / s) * (3 * beta * dd**2 + 12 * g * dd * math.sqrt(spread * log_t))
    else:
        noise = (int(dim) * t / s) * (3 * beta * dd**2 + 12 * g * dd * math.sqrt(log_t))
    return 2 * g * dd * math.sqrt(t) + noise + 14 * g * dd


def _lazy_ctrl(env: Any, *, budget: None = None, **kw: Any) -> CTRL:
    """CTRL with Theorem 9's parameters (Theorem 12's when the stream is a GLM stream and
    ``glm`` is left on) for ``switches`` S (default min(T, ceil(d sqrt T)), where Theorem 9's
    regret is O(sqrt T)), from the stream's declared constants. Not private: ``budget`` is
    ``None``."""
    horizon, dim = checked_count("horizon", env.horizon), env.dim  # before min(horizon, ...)
    _no_budget("lazy-ctrl", budget)
    switches = kw.pop("switches", None)
    if switches is None:
        switches = min(horizon, math.ceil(dim * math.sqrt(horizon)))
    glm = bool(kw.pop("glm", True)) and env.is_glm
    params = lazy_parameters(
        switches, max(horizon, 3), dim, env.lipschitz, env.smoothness, env.domain.diameter, glm
    )
    return CTRL(
        env.domain,
        horizon,
        eta=params["eta"],
        sigma=params["sigma"],
        log_phi=params["log_phi"],
        p=0.0,
        lipschitz=env.lipschitz,
        smoothness=env.smoothness,
        glm_link=env.link if glm else None,
        **kw,
    )


register_learner(
    LearnerEntry(
        "lazy-ctrl",
        _lazy_ctrl,
        paper="Agarwal, Kale, Singh & Thakurta (2023), Algorithm 1 with Theorem 9's parameters "
        "(Theorem 12's for GLM streams): lazy OCO with at most S switches in expectation",
        setting="online convex optimisation with smooth losses (full information), few switches",
        guarantee="none (lazy OCO: the switching budget, not privacy)",
        calibrations=(),
        private=False,
        feedback_kind=FeedbackKind.LOSS_FUNCTION,
        action_space="barrier set",
        test_cases=(
            LearnerTestCase("smooth_convex", environment_options={"dim": 3}, randomised=True),
            LearnerTestCase(
                "smooth_convex",
                environment_options={"dim": 2, "domain": "box", "losses": "huber"},
                learner_options={"switches": 4, "glm": False},
                randomised=True,
                label="box-huber",
            ),
        ),
        options={
            "switches": "S, the expected number of switches (default min(T, ceil(d sqrt T)))",
            "glm": "use Theorem 12's GLM parameters on a GLM stream (default true)",
        },
        counterpart_of=("ctrl", "ctrl-glm"),
        clips=False,
    )
)


# --- private CTRL (Theorems 6, 8 and 11) and Algorithm 2 (Theorem 13) ---------------------------


def _private_ctrl(env: Any, *, glm: bool, budget: PrivacyBudget | None, **kw: Any) -> CTRL:
    """CTRL calibrated for the budget by :class:`~dponline.online.ctrl_calibration.CTRLCalibrator`
    (``paper``: Theorem 8's parameters, Theorem 11's for GLMs, claiming what Theorem 6's proof
    gives them; ``tight``: :func:`~dponline.online.ctrl_parameters.calibrate_tight`, claiming
    what the Renyi-DP analysis of :mod:`dponline.online.ctrl_renyi` proves for them)."""
    name = "ctrl-glm" if glm else "ctrl"
    if budget is None:
        raise ValueError(f"{name} is private: give epsilon (lazy-ctrl is CTRL without privacy)")
    if glm and not env.is_glm:
        raise ValueError(
            f"{name} needs a GLM stream (every loss f(<v, x>, y) with one link and no quadratic "
            f"part); {getattr(env, 'name', env)!r} is not one: use ctrl"
        )
    calibrator = CTRLCalibrator(
        env.horizon, env.dim, env.lipschitz, env.smoothness, env.domain.diameter, glm
    )
    cal = calibrate(calibrator, budget)
    params = cal.noise
    return CTRL(
        env.domain,
        env.horizon,
        eta=params.eta,
        sigma=params.sigma,
        log_phi=params.log_phi,
        p=params.p,
        switch_budget=params.switch_budget,
        lipschitz=env.lipschitz,
        smoothness=env.smoothness,
        glm_link=env.link if glm else None,
        privacy=cal.guarantee,
        **kw,
    )


def _ctrl(env: Any, **kw: Any) -> CTRL:
    return _private_ctrl(env, glm=False, **kw)


def _ctrl_glm(env: Any, **kw: Any) -> CTRL:
    return _private_ctrl(env, glm=True, **kw)


def _ctrl_audit(values: tuple[float, float], rest: float, options: dict[str, Any]) -> AuditCase:
    """Round 1's label flips (logistic: y = -1 or +1 along e_1), so the minimisers of every later
    switch move by the gradient's change (a linear difference, 1.37 G here against the 2G the
    analysis allows); d = 1. The tight calibration's Renyi analysis is close enough for the
    audit to refute a tenth of its noise (Theorem 6's proof, the paper calibration's, is loose
    by one to two orders of magnitude in sigma)."""
    return AuditCase(
        horizon=6,
        values=values,
        rest=rest,
        environment_options=options,
        trials=20_000,
        pilot_trials=5_000,
        seed=5,
    )


_CTRL_OPTIONS = {"delta": "the budget's delta (default 1e-6)"}

register_learner(
    LearnerEntry(
        "ctrl",
        _ctrl,
        paper="Agarwal, Kale, Singh & Thakurta (2023), Algorithm 1 (CTRL) with Theorem 8's "
        "parameters (paper) or the least noise our Renyi-DP analysis of it supports (tight)",
        setting="online convex optimisation with smooth losses (full information)",
        guarantee="event-level (epsilon, delta)-DP over loss sequences differing in one round, "
        "for convex losses within the declared Lipschitz and smoothness constants (paper: "
        "Theorem 6's proof evaluated exactly; tight: a Renyi-DP analysis of each round's "
        "stay-or-switch kernel, dponline.online.ctrl_renyi)",
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.LOSS_FUNCTION,
        action_space="barrier set",
        test_cases=(
            LearnerTestCase(
                "smooth_convex",
                environment_options={"dim": 2, "losses": "huber"},
                randomised=True,
                audit=_ctrl_audit((-1.0, 1.0), 1.0, {"dim": 1, "losses": "logistic"}),
            ),
        ),
        options=_CTRL_OPTIONS,
        default_delta=1e-6,
        clips=False,
    )
)

register_learner(
    LearnerEntry(
        "ctrl-glm",
        _ctrl_glm,
        paper="Agarwal, Kale, Singh & Thakurta (2023), Algorithm 1 (CTRL) on GLM losses with "
        "Theorem 11's parameters (paper) or the least noise our Renyi-DP analysis supports (tight)",
        setting="online convex optimisation with GLM losses f(<v, x>, y) (full information)",
        guarantee="event-level (epsilon, delta)-DP over loss sequences differing in one round, "
        "for GLM losses of the stream's link within the declared constants (paper: Theorem 6's "
        "proof with Lemma 10 and the union bound over Claim 27's three directions; tight: the "
        "Renyi-DP analysis with rank-one Hessians)",
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.LOSS_FUNCTION,
        action_space="barrier set",
        test_cases=(
            LearnerTestCase(
                "smooth_convex",
                environment_options={"dim": 3, "losses": "logistic"},
                randomised=True,
                audit=_ctrl_audit((-1.0, 1.0), 1.0, {"dim": 1, "losses": "logistic"}),
            ),
        ),
        options=_CTRL_OPTIONS,
        default_delta=1e-6,
        clips=False,
    )
)


def _strongly_convex_ctrl(env: Any, *, budget: None = None, **kw: Any) -> CTRL:
    """Algorithm 2 with Theorem 13's parameters for ``switches`` S (default the least S the
    theorem allows, capped at T) on a strongly convex stream. Not private: ``budget`` is
    ``None``."""
    _no_budget("ctrl-strongly-convex", budget)
    lam = float(env.strong_convexity)
    if not lam > 0:
        raise ValueError(
            f"ctrl-strongly-convex needs strongly convex losses; {getattr(env, 'name', env)!r} "
            "declares strong convexity 0 (smooth_convex takes curvature > 0)"
        )
    horizon, dim = max(env.horizon, 3), env.dim
    switches = kw.pop("switches", None)
    if switches is None:
        log_t = math.log(horizon)
        least = (4.0 * env.smoothness * dim / lam + 16.0 * dim * log_t) * log_t
        switches = math.ceil(least)
    params = lazy_strongly_convex_parameters(
        switches, horizon, dim, env.lipschitz, env.smoothness, lam
    )
    log_phi = np.asarray(params["log_phi"])[: env.horizon]
    return CTRL(
        env.domain,
        env.horizon,
        eta=math.inf,
        sigma=float(params["sigma"]),
        log_phi=log_phi,
        p=0.0,
        lipschitz=env.lipschitz,
        smoothness=env.smoothness,
        strong_convexity=lam,
        noise_growth=True,
        **kw,
    )


register_learner(
    LearnerEntry(
        "ctrl-strongly-convex",
        _strongly_convex_ctrl,
        paper="Agarwal, Kale, Singh & Thakurta (2023), Algorithm 2 (growing noise) with "
        "Theorem 13's parameters: lazy OCO with strongly convex losses",
        setting="online convex optimisation with smooth strongly convex losses, few switches",
        guarantee="none (lazy OCO: the switching budget, not privacy)",
        calibrations=(),
        private=False,
        feedback_kind=FeedbackKind.LOSS_FUNCTION,
        action_space="barrier set",
        test_cases=(
            LearnerTestCase(
                "smooth_convex",
                environment_options={"dim": 2, "losses": "squared", "curvature": 1.0},
                randomised=True,
            ),
        ),
        options={
            "switches": "S, the expected number of switches (default the least Theorem 13 "
            "allows, (4 beta d / lambda + 16 d log T) log T)",
        },
        clips=False,
    )
)
