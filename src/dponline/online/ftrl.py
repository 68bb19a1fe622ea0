"""Differentially private Follow-the-Regularized-Leader: Agarwal & Singh (2017), Algorithm 1.

Each round the learner plays

    x_t = argmin_{x in X}  eta <x, L~_{t-1}> + R(x),

where L~_{t-1} is a private estimate of the prefix sum of the loss vectors released by a
continual counter (Algorithm 2, TreeBasedAgg, in the paper's calibration; any mechanism of
:mod:`dponline.continual` in the tight one). The decisions are post-processing of the counter's
releases, so the learner has the counter's guarantee: event-level DP over loss sequences that
differ in one round (Definition 2.1), for losses inside the declared bounds.

Regularisers with closed-form argmins (Corollary 3.2):

* :class:`EntropicSimplex`: prediction with expert advice, R(x) = sum x_i log x_i, x = softmax;
* :class:`EuclideanBall`: OLO over the ball, R(x) = ||x||^2, x = projection of -eta L / 2;
* :class:`EuclideanCube`: OLO over the cube [-1, 1]^N, R(x) = ||x||^2, x = clip(-eta L / 2);
* :class:`PolytopeDomain`: a general compact convex set {A x <= b} with R(x) = ||x||^2, the
  argmin solved numerically (a projection, by SLSQP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.continual import BinaryTreeCounter, ContinualCounter, make_counter
from dponline.online.counter_learner import CounterLearner
from dponline.privacy.bounds import Box, InputBounds, NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.privacy.noise import GaussianNoise
from dponline.protocol import FeedbackKind, checked_budget, checked_count
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    budget_from_options,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike

__all__ = ["DPFTRL", "EntropicSimplex", "EuclideanBall", "EuclideanCube", "PolytopeDomain"]


@dataclass(frozen=True)
class EntropicSimplex:
    """The probability simplex with the negative-entropy regulariser (experts)."""

    name: ClassVar[str] = "simplex"

    def argmin(self, eta: float, cumulative: np.ndarray) -> np.ndarray:
        """softmax(-eta L) along the last axis, computed stably."""
        z = -eta * cumulative
        z = z - z.max(axis=-1, keepdims=True)
        w = np.exp(z)
        return w / w.sum(axis=-1, keepdims=True)

    def range_of_regulariser(self, dim: int) -> float:
        """D_R = max R - min R = log N."""
        return math.log(dim)

    def max_local_dual_norm_sq(self, loss: np.ndarray) -> np.ndarray:
        """max_x ||l||^2_{(nabla^2 R(x))^-1} = max_x sum_i x_i l_i^2 = max_i l_i^2."""
        return (loss**2).max(axis=-1)

    def noise_range(self, z: np.ndarray) -> np.ndarray:
        """max_x <Z, x> - min_x <Z, x> over the simplex = max_i Z_i - min_i Z_i."""
        return z.max(axis=-1) - z.min(axis=-1)


@dataclass(frozen=True)
class EuclideanBall:
    """The Euclidean ball of radius ``radius`` with R(x) = ||x||^2."""

    radius: float = 1.0
    name: ClassVar[str] = "ball"

    def argmin(self, eta: float, cumulative: np.ndarray) -> np.ndarray:
        x = -eta * cumulative / 2.0
        n = np.linalg.norm(x, axis=-1, keepdims=True)
        return x * np.minimum(1.0, self.radius / np.where(n > 0, n, 1.0))

    def range_of_regulariser(self, dim: int) -> float:
        return self.radius**2

    def max_local_dual_norm_sq(self, loss: np.ndarray) -> np.ndarray:
        """R = ||x||^2 has Hessian 2I: the dual local norm squared is ||l||^2 / 2."""
        return (loss**2).sum(axis=-1) / 2.0

    def noise_range(self, z: np.ndarray) -> np.ndarray:
        return 2.0 * self.radius * np.linalg.norm(z, axis=-1)


@dataclass(frozen=True)
class EuclideanCube:
    """The cube [-1, 1]^N with R(x) = ||x||^2."""

    name: ClassVar[str] = "cube"

    def argmin(self, eta: float, cumulative: np.ndarray) -> np.ndarray:
        return np.clip(-eta * cumulative / 2.0, -1.0, 1.0)

    def range_of_regulariser(self, dim: int) -> float:
        return float(dim)

    def max_local_dual_norm_sq(self, loss: np.ndarray) -> np.ndarray:
        return (loss**2).sum(axis=-1) / 2.0

    def noise_range(self, z: np.ndarray) -> np.ndarray:
        return 2.0 * np.abs(z).sum(axis=-1)


class DPFTRL(CounterLearner):
    """Private FTRL (Agarwal & Singh 2017, Algorithm 1) on a continual counter.

    Parameters
    ----------
    dim, horizon:
        Number of experts / coordinates N and rounds T.
    budget:
        The :class:`~dponline.privacy.budget.PrivacyBudget`; its calibration is "paper" (the
        paper's noise on the tree of Algorithm 2) or "tight" (least provable noise on
        ``mechanism``). ``None`` runs the non-private FTRL it privatises (exact sums).
    noise:
        "laplace" (pure DP, Theorem 3.1; the budget's delta must be 0) or "gaussian"
        (Theorem A.1; delta > 0).
    mechanism:
        Continual counter; defaults to "padded_tree" for "paper" and "honaker" for "tight".
    domain:
        :class:`EntropicSimplex` (default), :class:`EuclideanBall` or :class:`EuclideanCube`.
    loss_bounds:
        The declared loss set Y (default [0, 1]^N); inputs outside raise unless ``clip``.
    eta:
        Learning rate; defaults to sqrt(D_R / T) for losses of sup-norm at most 1.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR
    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 1 (with Algorithm 2)"

    def __init__(
        self,
        dim: int,
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        noise: str = "laplace",
        mechanism: str | None = None,
        domain: EntropicSimplex | EuclideanBall | EuclideanCube | PolytopeDomain | None = None,
        loss_bounds: InputBounds | None = None,
        eta: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self.dim = checked_count("dim", dim)
        self.horizon = checked_count("horizon", horizon)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget)
        self.domain = domain if domain is not None else EntropicSimplex()
        self.bounds = loss_bounds if loss_bounds is not None else Box(0.0, 1.0, dim=self.dim)
        if self.bounds.dim != self.dim:
            raise ValueError(f"loss_bounds has dimension {self.bounds.dim}, expected {self.dim}")
        if eta is None:
            eta = math.sqrt(max(self.domain.range_of_regulariser(self.dim), 1e-12) / self.horizon)
        if not (eta > 0 and math.isfinite(eta)):
            raise ValueError(f"eta must be a finite positive number, got {eta!r}")
        self.eta = float(eta)
        self.t = 0
        if self.budget is None:
            # the non-private FTRL: exact prefix sums, same input contract
            self.counter: ContinualCounter = BinaryTreeCounter(
                self.horizon,
                self.dim,
                GaussianNoise(0.0),
                replicas=self.replicas,
                rng=rng,
                bounds=self.bounds,
                clip=clip,
            )
            self.privacy: PrivacyGuarantee | None = None
        else:
            if mechanism is None:
                mechanism = "padded_tree" if self.budget.calibration == "paper" else "honaker"
            counter = make_counter(
                mechanism,
                horizon=self.horizon,
                bounds=self.bounds,
                budget=self.budget,
                noise=noise,
                replicas=self.replicas,
                rng=rng,
                clip=clip,
            )
            assert isinstance(counter, ContinualCounter)
            self.counter = counter
            self.privacy = counter.privacy
        self._cumulative = self.counter.initial_release()

    def regret_bound(self, losses: np.ndarray, *, samples: int = 20_000, seed: int = 0) -> dict:
        """Theorem 3.1 / 3.4 of Agarwal & Singh (2017) for the loss sequence ``losses`` (T, N).

        Returns ``theorem``: sqrt(D_R sum_t max_x ||l_t||*^2) + D, as the theorem states it, and
        ``explicit``: D_R / eta + 2 eta sum_t max_x ||l_t||*^2 + D, the proof's sum at this
        learner's eta (the FTL-BTL lemma plus the FTRL stability bound, Hazan 2016, Thm 5.2).
        D = E[max_x <Z, x> - min_x <Z, x>] for Z the noise of one release, estimated from
        ``samples`` draws with a fixed seed (0 for the non-private learner). The theorem is
        stated for Algorithm 2's identically distributed noise, so a private learner must run
        on the ``padded_tree``.
        """
        losses = np.asarray(losses, dtype=float)
        d_r = self.domain.range_of_regulariser(self.dim)
        stability = float(self.domain.max_local_dual_norm_sq(losses).sum())
        if self.budget is None:
            d_noise = 0.0
        else:
            if self.counter.name != "padded_tree":
                raise ValueError(
                    "Theorem 3.1 assumes Algorithm 2's identically distributed noise: build the "
                    f"learner with mechanism='padded_tree' (this one uses {self.counter.name!r})"
                )
            gen = np.random.default_rng(seed)
            z = self.counter.noise.sample_sum(gen, self.counter.draws, (samples, self.dim))
            d_noise = float(self.domain.noise_range(z).mean())
        return {
            "theorem": math.sqrt(d_r * stability) + d_noise,
            "explicit": d_r / self.eta + 2.0 * self.eta * stability + d_noise,
            "noise_term": d_noise,
        }

    def _decide(self) -> np.ndarray:
        """x_t = argmin eta <x, L~_{t-1}> + R(x), shape (replicas, dim)."""
        return self.domain.argmin(self.eta, self._cumulative)


class PolytopeDomain:
    """A general compact convex set {x : A x <= b} with the strongly convex regulariser
    R(x) = ||x||^2, the FTRL step solved numerically (Corollary 3.2's general case).

    Each argmin is the Euclidean projection of -eta L / 2 onto the polytope, a convex quadratic
    programme solved per replica by SLSQP (scaled by the target's size so that its tolerance is
    relative), started from the Chebyshev centre (so the result does not depend on history and
    a resumed run is bit for bit). A result that violates a constraint in floating point is
    pulled back towards the strictly interior centre by bisection, so every decision is
    feasible. It costs a QP per replica and round.
    """

    name: ClassVar[str] = "polytope"

    def __init__(self, a: np.ndarray, b: np.ndarray, tol: float = 1e-12) -> None:
        from scipy.optimize import linprog

        self.a = np.asarray(a, dtype=float)
        self.b = np.asarray(b, dtype=float)
        if self.a.ndim != 2 or self.b.shape != (self.a.shape[0],):
            raise ValueError(f"need A (m, N) and b (m,), got {self.a.shape} and {self.b.shape}")
        self.dim = self.a.shape[1]
        self.tol = float(tol)
        free = [(None, None)] * self.dim
        lo, hi = [], []
        for e in np.eye(self.dim):
            r1 = linprog(e, A_ub=self.a, b_ub=self.b, bounds=free)
            r2 = linprog(-e, A_ub=self.a, b_ub=self.b, bounds=free)
            if r1.status != 0 or r2.status != 0:
                raise ValueError("the polytope {A x <= b} must be bounded and non-empty")
            lo.append(r1.fun)
            hi.append(-r2.fun)
        self._box = (np.array(lo), np.array(hi))
        norms = np.linalg.norm(self.a, axis=1)
        cheb = linprog(
            np.r_[np.zeros(self.dim), -1.0],
            A_ub=np.c_[self.a, norms],
            b_ub=self.b,
            bounds=[*free, (0, None)],
        )
        if cheb.status != 0 or cheb.x[-1] <= 0:
            raise ValueError("the polytope {A x <= b} must have a non-empty interior")
        self.centre = cheb.x[:-1]

    def __repr__(self) -> str:
        return f"PolytopeDomain(a={self.a.tolist()!r}, b={self.b.tolist()!r})"

    def _feasible(self, x: np.ndarray) -> bool:
        return bool(np.all(self.a @ x <= self.b))

    def _project(self, target: np.ndarray) -> np.ndarray:
        from scipy.optimize import minimize

        scale = 1.0 + float(np.abs(target).max())
        t = target / scale  # solve in units of the target's size: relative tolerance
        a, b = self.a, self.b / scale
        res = minimize(
            lambda z: float(((z - t) ** 2).sum()),
            self.centre / scale,
            jac=lambda z: 2.0 * (z - t),
            constraints=[{"type": "ineq", "fun": lambda z: b - a @ z, "jac": lambda z: -a}],
            method="SLSQP",
            options={"ftol": self.tol, "maxiter": 500},
        )
        x = res.x * scale
        if not np.all(np.isfinite(x)):
            raise ValueError(f"the projection onto the polytope failed: {res.message}")
        if self._feasible(x):
            return x
        # bisection on the segment from the strictly interior centre to x
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2.0
            if self._feasible(self.centre + mid * (x - self.centre)):
                lo = mid
            else:
                hi = mid
        return self.centre + lo * (x - self.centre)

    def argmin(self, eta: float, cumulative: np.ndarray) -> np.ndarray:
        """argmin_{A x <= b} eta <x, L> + ||x||^2 = projection of -eta L / 2, row by row."""
        cum = np.atleast_2d(cumulative)
        out = np.array([self._project(-eta * c / 2.0) for c in cum])
        return out.reshape(np.shape(cumulative))

    def range_of_regulariser(self, dim: int) -> float:
        """max ||x||^2 - min ||x||^2 over the set (the max bounded by the bounding box)."""
        lo, hi = self._box
        max_sq = float((np.maximum(np.abs(lo), np.abs(hi)) ** 2).sum())
        min_sq = float((self._project(np.zeros(self.dim)) ** 2).sum())
        return max_sq - min_sq

    def max_local_dual_norm_sq(self, loss: np.ndarray) -> np.ndarray:
        return (loss**2).sum(axis=-1) / 2.0

    def noise_range(self, z: np.ndarray) -> np.ndarray:
        """max_x <z, x> - min_x <z, x> over the polytope, one pair of LPs per row."""
        from scipy.optimize import linprog

        free = [(None, None)] * self.dim
        out = []
        for row in np.atleast_2d(z):
            lo = linprog(row, A_ub=self.a, b_ub=self.b, bounds=free).fun
            hi = -linprog(-row, A_ub=self.a, b_ub=self.b, bounds=free).fun
            out.append(hi - lo)
        return np.array(out)


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _ftrl_geometry(env: Any) -> dict[str, Any]:
    """Decision set and loss set of Agarwal & Singh's Corollary 3.2 for an environment: the
    simplex with losses in [0, 1]^N (experts, the default), the ball with losses in the unit l2
    ball, the cube with losses in the unit l1 ball (||Y||_1 = 1)."""
    domain = getattr(env, "domain", "simplex")
    if domain == "ball":
        return {"domain": EuclideanBall(env.radius), "loss_bounds": NormBall(1.0, 2, env.dim)}
    if domain == "cube":
        return {"domain": EuclideanCube(), "loss_bounds": NormBall(1.0, 1, env.dim)}
    return {}


def _dp_ftrl(env: Any, **kw: Any) -> DPFTRL:
    """DP-FTRL on ``env``'s dimension, horizon and geometry (Laplace noise by default)."""
    noise = kw.pop("noise", "laplace")
    budget = budget_from_options(kw, 0.0 if noise == "laplace" else 1e-6)
    return DPFTRL(env.dim, env.horizon, budget=budget, noise=noise, **_ftrl_geometry(env), **kw)


def _ftrl_audit(noise: str, environment_options: dict[str, Any]) -> AuditCase:
    """Round 1's loss is 0 or e_1 (moved across the loss set); a large step so that one round
    visibly moves the decisions (the guarantee holds for any eta)."""
    return AuditCase(
        horizon=8,
        values=(0.0, 1.0),
        environment_options=environment_options,
        learner_options={"eta": 1.0, "noise": noise, "delta": 0.0 if noise == "laplace" else 1e-5},
        trials=40_000,
        pilot_trials=10_000,
        seed=3,
    )


_FTRL_SETTING = "experts; online linear optimisation over the ball or cube (full information)"

_DP_FTRL_ENTRY = register_learner(
    LearnerEntry(
        "dp-ftrl",
        _dp_ftrl,
        paper="Agarwal & Singh (2017), Algorithm 1 with Algorithm 2 (tree aggregation)",
        setting=_FTRL_SETTING,
        guarantee=(
            "event-level epsilon-DP (Laplace, Theorem 3.1) or (epsilon, delta)-DP "
            "(Gaussian, Theorem A.1) over loss sequences differing in one round, "
            "for losses in [0, 1]^N (experts), the unit l2 ball (ball) or the unit l1 "
            "ball (cube)"
        ),
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.LOSS_VECTOR,
        action_space=("simplex", "ball", "cube"),
        test_cases=(
            LearnerTestCase(
                "switching_best",
                environment_options={"n_experts": 4},
                label="laplace",
                audit=_ftrl_audit("laplace", {"n_experts": 2}),
            ),
            LearnerTestCase(
                "linear",
                environment_options={"dim": 3, "domain": "cube"},
                learner_options={"noise": "gaussian"},
                label="gaussian, cube",
                audit=_ftrl_audit("gaussian", {"dim": 2}),
            ),
        ),
        options={
            "noise": "laplace | gaussian",
            "delta": "for gaussian (default 1e-6)",
            "mechanism": "continual counter (default: padded_tree paper, honaker tight)",
            "eta": "learning rate (default sqrt(log N / T))",
        },
    )
)

register_learner(
    non_private_entry(
        _DP_FTRL_ENTRY,
        "ftrl",
        paper="Follow-the-Regularized-Leader with entropy (Hedge); the non-private "
        "counterpart of dp-ftrl",
        test_cases=(
            LearnerTestCase("switching_best", environment_options={"n_experts": 4}),
            LearnerTestCase("linear", environment_options={"dim": 3}, label="ball"),
        ),
        options={"eta": "learning rate (default sqrt(log N / T))"},
    )
)
