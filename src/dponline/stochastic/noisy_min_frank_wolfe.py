"""Private streaming Frank-Wolfe for p = 1: Han et al., Algorithm 2 (report-noisy-min over the
vertices of a polytope), for the squared loss f(theta; x, y) = (<x, theta> - y)^2 or a GLM's loss.

Each round the recursive gradient d_t (the sum form of Eq. (1), which the privacy proof,
Appendix A.6, analyses; the text's start d_1 = grad f(theta_1; x_1) would double sample 1's
weight) is compared against every vertex v of the polytope, and the learner moves towards

    v_t = argmin_v <d_t, v> + n_v^t,   n_v^t ~ Lap(b_t),
    theta_{t+1} = theta_t + (v_t - theta_t) / (t+1).

Privacy. Neighbouring datasets differ in one sample; it moves d_t by at most 2 (beta D + L)/(t+1)
in l_inf (Appendix A.6), so every score <d_t, v> moves by at most s_t = m 2 (beta D + L)/(t+1)
with m = max_v ||v||_1 (the paper bounds m by D). Report-noisy-min with Lap(b) on scores of
sensitivity s is (2 s / b)-DP (Dwork & Roth 2014, Claim 3.9: s / b needs monotone scores, which
these are not), so step t is pure eps_t-DP with eps_t = 2 s_t / b_t, and the n adaptive steps
compose in zCDP: rho = sum_t eps_t^2 / 2 (Bun & Steinke 2016, Prop. 1.4), giving
(rho + 2 sqrt(rho log(1/delta)), delta)-DP (Prop. 1.3).

The ``paper`` calibration: Laplace noise, b_t = 4 D (beta D + L) sqrt(log n log(1/delta)) /
(epsilon sqrt t) (Algorithm 2, line 7), with the epsilon the argument above proves for it.
``tight``: Gumbel noise instead of Laplace. Report-noisy-min with Gumbel(b) noise is exactly the
exponential mechanism with epsilon_t = 2 s_t / b_t (the Gumbel-max trick), which is
epsilon_t-bounded-range (Durfee & Rogers 2019) and hence epsilon_t^2 / 8-zCDP (Cesar & Rogers
2021) -- a quarter of the zCDP of the pure-DP bound used for Laplace, so half the noise scale for
the same rho. Scales keep the paper's 1/sqrt(t) shape (b_t proportional to s_t sqrt(t)) and are
set so that the composed zCDP bound gives exactly epsilon.

Input contract: ||x||_inf <= X and |y| <= Y; L = 2 (X r + Y) X and beta = 2 X^2 with
r = max_v ||v||_1 (Lipschitz and smoothness in l_1 -> l_inf). With ``loss=GLMLoss(...)`` the
loss is a GLM's negative log-likelihood instead, rewards must lie in its ``reward_range`` and
(L, beta) are its constants (:mod:`dponline.losses.glm`); this is the per-arm
estimator of Algorithm 3.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.domains.hull import VertexHull
from dponline.losses import GLMLoss, SquaredLoss
from dponline.privacy.accounting import zcdp_renyi_epsilon, zcdp_rho_for
from dponline.privacy.arguments import (
    checked_generator,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    NoiseHandle,
    RoundDiscipline,
    checked_budget,
    checked_config,
    checked_count,
)
from dponline.rng import RngLike, as_generator, generator_state
from dponline.stochastic.frank_wolfe import checked_iterates
from dponline.stochastic.samples import checked_sample

__all__ = ["NoisyMinCalibrator", "NoisyMinFrankWolfe", "l1_ball_vertices"]


def l1_ball_vertices(dim: int, radius: float = 1.0) -> np.ndarray:
    """The 2d vertices +-r e_i of the l_1 ball."""
    eye = np.eye(int(dim)) * float(radius)
    return np.concatenate([eye, -eye])


def _require_origin_in_hull(vertices: np.ndarray) -> None:
    """theta_0 = 0 must lie in the polytope (the sensitivity bound uses ||theta_t -
    theta_{t-1}||_1 <= D / t, which needs every iterate in it): an LP feasibility check."""
    from scipy.optimize import linprog

    k = len(vertices)
    res = linprog(
        np.zeros(k),
        A_eq=np.vstack([vertices.T, np.ones((1, k))]),
        b_eq=np.r_[np.zeros(vertices.shape[1]), 1.0],
        bounds=[(0, None)] * k,
    )
    if res.status != 0:
        raise ValueError("the origin (theta_0 = 0) must lie in the convex hull of the vertices")


@dataclass(frozen=True, eq=False)
class NoisyMinCalibrator:
    """The noise schedule b_1..b_n of Algorithm 2 for per-step score sensitivities s_t
    (``sensitivities``) and the paper's line-7 constants (module docstring).

    ``paper``: Laplace, b_t = 4 D (beta D + L) sqrt(log n log(1/delta)) / (epsilon sqrt t);
    ``tight``: Gumbel, b_t = lam s_t sqrt(t) with lam set so that the composed zCDP bound gives
    exactly epsilon (through Canonne, Kamath & Steinke's conversion of zCDP to (epsilon, delta)
    by Renyi DP, :func:`~dponline.privacy.accounting.zcdp_renyi_epsilon`; Bun & Steinke's
    rho + 2 sqrt(rho log(1/delta)), used before 2026-11-26, needed 1.18x the noise at
    (1, 1e-6)). Both calibrations state the epsilon that conversion proves.
    ``Calibration.noise`` is ``(family, scales)``; ``Calibration.details``
    names the calibrator (``("calibrator", self)``), so that an estimator handed a calibration
    can check it is its own. Two calibrators are equal when their constants are.
    """

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NoisyMinCalibrator):
            return NotImplemented
        return bool(
            np.array_equal(self.sensitivities, other.sensitivities)
            and (self.diameter, self.smooth_lipschitz, self.m)
            == (other.diameter, other.smooth_lipschitz, other.m)
        )

    __hash__ = None  # type: ignore[assignment]

    sensitivities: np.ndarray
    diameter: float
    smooth_lipschitz: float  # beta D + L
    m: float  # max_v ||v||_1

    def _answer(self, budget: PrivacyBudget, family: str, scales: np.ndarray, how: str):  # type: ignore[no-untyped-def]
        eps_t = 2.0 * self.sensitivities / scales
        # pure eps_t-DP is eps_t^2/2-zCDP; eps_t-bounded range is eps_t^2/8-zCDP
        rho = float((eps_t**2).sum()) / (2.0 if family == "laplace" else 8.0)
        g = budget.prove(
            zcdp_renyi_epsilon(rho, budget.delta),
            budget.delta,
            f"{how}; step t is (2 s_t / b_t)-DP (report-noisy-min, s_t = {self.m:.4g} x "
            f"2(beta D + L)/(t+1)), {'pure' if family == 'laplace' else 'bounded range'}"
            f", composed in zCDP: rho = {rho:.4g}, converted through Renyi DP (Canonne, Kamath "
            "& Steinke 2020, Proposition 12)",
            rho=rho,
            neighbouring=Neighbouring.ONE_SAMPLE,
        )
        return Calibration(
            (family, scales), g, budget.calibration, "report-noisy-min", (("calibrator", self),)
        )

    def paper(self, budget: PrivacyBudget) -> Calibration:
        budget.require_delta("Algorithm 2")
        n = len(self.sensitivities)
        t = np.arange(1, n + 1, dtype=float)
        ln_n = math.log(n) if n > 1 else 1.0
        scales = (
            4.0
            * self.diameter
            * self.smooth_lipschitz
            * math.sqrt(ln_n * math.log(1 / budget.delta))
            / (budget.epsilon * np.sqrt(t))
        )
        return self._answer(budget, "laplace", scales, "Han et al. Algorithm 2, line 7")

    def tight(self, budget: PrivacyBudget) -> Calibration:
        budget.require_delta("Algorithm 2")
        n = len(self.sensitivities)
        t = np.arange(1, n + 1, dtype=float)
        # b_t = lam s_t sqrt(t): eps_t = 2 / (lam sqrt t), rho = sum eps_t^2 / 8 = H_n / (2 lam^2)
        rho_target = zcdp_rho_for(budget.epsilon, budget.delta)
        harmonic = float((1.0 / t).sum())
        lam = math.sqrt(harmonic / (2.0 * rho_target)) * (1 + 1e-12)
        how = "report-noisy-min with Gumbel noise (exponential mechanism), scales s_t sqrt(t)"
        return self._answer(budget, "gumbel", lam * self.sensitivities * np.sqrt(t), how)


class NoisyMinFrankWolfe(NoiseHandle, RoundDiscipline):
    """Han et al. Algorithm 2 over the convex hull of ``vertices`` (default the unit l_1 ball).

    ``budget``: (epsilon, delta) with delta > 0, calibrated by :class:`NoisyMinCalibrator`;
    ``None`` runs the non-private streaming Frank-Wolfe (no noise). ``calibration``: that
    calibration when it is already proven, for an estimator of the same constants and budget
    (the arms of Algorithm 3, :class:`~dponline.bandits.glm_bandit.DPGLMBandit`, are copies of
    one estimator: the guarantee is proven once); refused if it is another estimator's. The
    estimator's own is kept as ``calibration`` (``None`` without a budget).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.SAMPLE
    paper: ClassVar[str] = "Han et al., Algorithm 2 and Theorem 3.11"
    unit: ClassVar[str] = "sample"

    def __init__(
        self,
        dim: int,
        horizon: int,
        *,
        vertices: np.ndarray | None = None,
        x_bound: float = 1.0,
        y_bound: float = 1.0,
        budget: PrivacyBudget | None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
        loss: GLMLoss | None = None,
        calibration: Calibration | None = None,
    ) -> None:
        self.dim = checked_count("dim", dim)
        self._start_rounds(horizon)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget, Neighbouring.ONE_SAMPLE)
        self.vertices = (
            l1_ball_vertices(self.dim) if vertices is None else np.asarray(vertices, dtype=float)
        )
        if self.vertices.ndim != 2 or self.vertices.shape[1] != self.dim:
            raise ValueError(f"vertices must be (k, {self.dim}), got {self.vertices.shape}")
        _require_origin_in_hull(self.vertices)
        self.x_bound = checked_positive("x_bound", x_bound)
        self.y_bound = checked_positive("y_bound", y_bound)
        self.clip = bool(clip)
        self.loss: GLMLoss | SquaredLoss = SquaredLoss(self.y_bound) if loss is None else loss
        r = float(np.abs(self.vertices).sum(axis=1).max())  # max_v ||v||_1
        diffs = self.vertices[:, None, :] - self.vertices[None, :, :]
        self.diameter = float(np.abs(diffs).sum(axis=-1).max())  # l_1 diameter D
        self.lipschitz, self.beta = self.loss.constants(self.x_bound, r)
        base = 2.0 * (self.beta * self.diameter + self.lipschitz)  # l_inf change of g_i
        t = np.arange(1, self.horizon + 1, dtype=float)
        self._sens = r * base / (t + 1.0)  # s_t
        self.calibrator = NoisyMinCalibrator(
            self._sens, self.diameter, self.beta * self.diameter + self.lipschitz, r
        )
        self.privacy: PrivacyGuarantee | None = None
        self.calibration: Calibration | None = None
        if self.budget is None:
            self._scales = np.zeros(self.horizon)
            self.noise = "none"
        else:
            if calibration is None:
                calibration = calibrate(self.calibrator, self.budget)
            else:
                self._check_calibration(calibration)
            self.calibration = calibration
            (self.noise, self._scales), self.privacy = calibration.noise, calibration.guarantee
        self._rng = as_generator(rng)
        self.theta_prev = np.zeros((self.replicas, self.dim))
        self.theta = np.zeros((self.replicas, self.dim))
        self.grad_sum = np.zeros((self.replicas, self.dim))

    def _check_calibration(self, calibration: Any) -> None:
        """A calibration handed in must be this estimator's: computed by an equal calibrator
        for this budget's request, calibration family and neighbouring relation."""
        budget, g = self.budget, getattr(calibration, "guarantee", None)
        assert budget is not None
        if not (
            isinstance(calibration, Calibration)
            and dict(calibration.details).get("calibrator") == self.calibrator
            and calibration.calibration == budget.calibration
            and budget.answered_by(g)
        ):
            raise ValueError(
                "calibration is not this estimator's: it must be the NoisyMinCalibrator answer "
                f"for the same constants and the budget {budget!r}"
            )

    def noise_scale(self, t: int) -> float:
        """b_t, the Laplace or Gumbel scale of round t (1-indexed)."""
        return float(self._scales[t - 1])

    def _scale_noise(self, factor: float) -> None:
        self._scales = self._scales * factor

    def act(self) -> np.ndarray:
        """theta_t, shape (replicas, d)."""
        self._acted = True
        return self.theta.copy()

    def observe(self, feedback: Feedback) -> None:
        """Line 4-9 for one sample shared by every replica (after ``act``)."""
        self._check_round()
        if isinstance(self.loss, GLMLoss):
            x, y = checked_sample(feedback, self.dim, math.inf, self.x_bound, math.inf, self.clip)
            y = self.loss.check_reward(y, self.clip)
        else:
            x, y = checked_sample(
                feedback, self.dim, math.inf, self.x_bound, self.y_bound, self.clip
            )
        self._step(x, y)

    def observe_each(self, x: np.ndarray, y: np.ndarray) -> None:
        """One sample per replica: x of shape (replicas, d), y of shape (replicas,) (Algorithm 3
        feeds every replica the sample its own bandit run produced). Same contract as observe."""
        self._check_horizon()
        x = checked_real_array("samples x", x, (self.replicas, self.dim))
        y = checked_real_array("samples y", y, (self.replicas,), finite=False)  # named below
        norms = np.abs(x).max(axis=1)
        if np.any(norms > self.x_bound):
            if not self.clip:
                raise ValueError(
                    f"sample outside the declared bounds: ||x||_inf = {norms.max()!r} "
                    f"(bound {self.x_bound})"
                )
            scale = np.minimum(1.0, self.x_bound * (1 - 1e-12) / np.maximum(norms, 1e-300))
            x = x * scale[:, None]
        if isinstance(self.loss, GLMLoss):
            y = self.loss.check_reward(y, self.clip)
        elif np.any(~np.isfinite(y)) or np.any(np.abs(y) > self.y_bound):
            if not self.clip or np.any(~np.isfinite(y)):
                raise ValueError(
                    f"labels must be finite with |y| <= {self.y_bound}, got max |y| = "
                    f"{np.abs(y).max()!r}"
                )
            y = np.clip(y, -self.y_bound, self.y_bound)
        self._step(x, y)

    def _step(self, x: np.ndarray, y: np.ndarray | float) -> None:
        """Lines 4-9 of Algorithm 2 for validated samples (shared or one per replica)."""
        t = self.t + 1

        def grad(theta: np.ndarray) -> np.ndarray:
            return self.loss.gradient(theta, x, np.asarray(y, dtype=float))

        self.grad_sum += (t + 1) * grad(self.theta) - t * grad(self.theta_prev)
        d = self.grad_sum / (t + 1)
        scores = d @ self.vertices.T  # (replicas, k)
        b = self._scales[t - 1]
        if b > 0:
            if self.noise == "laplace":
                e = self._rng.standard_exponential(size=(2, *scores.shape))
                scores = scores + b * (e[0] - e[1])
            else:  # argmin(score - Gumbel) samples prop. to exp(-score / b)
                scores = scores - b * self._rng.gumbel(size=scores.shape)
        v = self.vertices[np.argmin(scores, axis=1)]
        self.theta_prev, self.theta = self.theta, self.theta + (v - self.theta) / (t + 1)
        self._end_round()

    def _config(self) -> dict[str, Any]:
        return {
            "scales": self._scales.tolist(),
            "x_bound": self.x_bound,
            "y_bound": self.y_bound,
            "vertices": self.vertices.tolist(),
            "replicas": self.replicas,
            "horizon": self.horizon,
            "clip": self.clip,
            "loss": self.loss.to_dict(),
            "noise": self.noise,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "theta": self.theta.copy(),
            "theta_prev": self.theta_prev.copy(),
            "grad_sum": self.grad_sum.copy(),
            "acted": self._acted,
            "rng": generator_state(self._rng),
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (configuration, round counter, iterates, gradient sum, RNG),
        then return the function that installs it."""
        checked_config(
            saved_field(state, "config"),
            self._config(),
            "NoisyMinFrankWolfe",
            "noise, bounds, vertices, shape or guarantee",
        )
        t, acted = self._checked_rounds(state)
        shape = (self.replicas, self.dim)
        arrays = {
            k: np.array(checked_real_array(f"saved {k}", saved_field(state, k), shape))
            for k in ("theta", "theta_prev", "grad_sum")
        }
        checked_iterates(VertexHull(self.vertices), arrays["theta"], arrays["theta_prev"], t)
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self._set_rounds(t, acted)
            for k, value in arrays.items():
                setattr(self, k, value)
            self._rng = rng

        return install
