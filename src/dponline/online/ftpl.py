"""Differentially private Follow-the-Perturbed-Leader: Agarwal & Singh (2017), Algorithm 3,
Theorem 3.5.

Each round the learner plays a minimiser of the noisy cumulative loss over the decision set,

    x_t = argmin_{x in X} <x, L~_{t-1}>,

through a linear optimisation oracle, where L~ is released by a Gaussian continual counter
(TreeBasedAgg, Algorithm 2). The Gaussian noise does two jobs: it is the FTPL perturbation that
gives O(sqrt T) regret, and it makes the sequence of decisions differentially private. Theorem
3.5 takes

    sigma = max{ ||Y||_2 sqrt(T / (sqrt(N) log T)),  sqrt(N) log T log(log T / delta) / epsilon }.

``calibration="paper"`` uses this sigma on the padded tree; ``"tight"`` keeps the regret term and
replaces the privacy term by the least sigma the exact Gaussian accounting proves on the chosen
counter. Either way the guarantee reported is what the sigma actually used proves.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.registry import get_mechanism
from dponline.online.counter_learner import CounterLearner
from dponline.privacy.accounting import gaussian_epsilon, gaussian_sigma, zcdp_rho
from dponline.privacy.bounds import Box, InputBounds
from dponline.privacy.calibration import paper_log
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.privacy.noise import GaussianNoise
from dponline.protocol import FeedbackKind
from dponline.rng import RngLike

__all__ = ["DPFTPL", "ftpl_sigma_paper", "linear_oracle"]


def linear_oracle(domain: str, cumulative: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """argmin_{x in X} <x, L> row by row: a vertex of the simplex, -r L/||L|| on the ball,
    -sign(L) on the cube (ties broken towards the first coordinate / +1)."""
    if domain == "simplex":
        out = np.zeros_like(cumulative)
        out[np.arange(len(cumulative)), np.argmin(cumulative, axis=1)] = 1.0
        return out
    if domain == "ball":
        n = np.linalg.norm(cumulative, axis=1, keepdims=True)
        return np.where(n > 0, -radius * cumulative / np.where(n > 0, n, 1.0), 0.0)
    if domain == "cube":
        return np.where(cumulative > 0, -1.0, 1.0)
    raise ValueError(f"domain must be 'simplex', 'ball' or 'cube', got {domain!r}")


def ftpl_sigma_paper(y2_norm: float, dim: int, horizon: int, epsilon: float, delta: float) -> float:
    """Theorem 3.5's sigma (log T read as log2 T, at least 1; log(.) natural)."""
    lt = paper_log(horizon)
    regret_term = y2_norm * math.sqrt(horizon / (math.sqrt(dim) * lt))
    privacy_term = math.sqrt(dim) * lt * math.log(lt / delta) / epsilon
    return max(regret_term, privacy_term)


class DPFTPL(CounterLearner):
    """Private FTPL (Agarwal & Singh 2017, Algorithm 3) with Gaussian tree noise.

    Parameters
    ----------
    dim, horizon:
        N and T.
    epsilon, delta:
        The budget (delta > 0: Gaussian noise).
    calibration:
        "paper" (Theorem 3.5's sigma on the padded tree) or "tight" (see the module docstring).
    mechanism:
        Continual counter; default "padded_tree" for "paper", "honaker" for "tight".
    domain:
        "simplex" (experts, losses in [0, 1]^N by default), "ball" (losses in the unit l2 ball)
        or "cube" (losses in the unit l1 ball).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR
    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 3, Theorem 3.5"

    def __init__(
        self,
        dim: int,
        horizon: int,
        *,
        epsilon: float | None = 1.0,
        delta: float = 1e-6,
        calibration: str = "tight",
        mechanism: str | None = None,
        domain: str = "simplex",
        radius: float = 1.0,
        loss_bounds: InputBounds | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        from dponline.privacy.bounds import NormBall

        self.dim, self.horizon, self.replicas = int(dim), int(horizon), int(replicas)
        self.privacy: PrivacyGuarantee | None
        self.domain, self.radius = domain, float(radius)
        linear_oracle(domain, np.zeros((1, self.dim)), self.radius)  # validates the domain
        if loss_bounds is None:
            loss_bounds = {
                "simplex": Box(0.0, 1.0, dim=self.dim),
                "ball": NormBall(1.0, 2, self.dim),
                "cube": NormBall(1.0, 1, self.dim),
            }[domain]
        self.bounds = loss_bounds
        if calibration not in ("tight", "paper"):
            raise ValueError(f"calibration must be 'tight' or 'paper', got {calibration!r}")
        if not (0 < delta < 1):
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        if mechanism is None:
            mechanism = "padded_tree" if calibration == "paper" else "honaker"
        cls = get_mechanism(mechanism)
        _, l2f = cls.sensitivity_factors(self.horizon)
        total = l2f * self.bounds.diameter(2)
        lt = paper_log(self.horizon)
        regret_term = self.bounds.max_norm(2) * math.sqrt(self.horizon / (math.sqrt(self.dim) * lt))
        if epsilon is None:
            # the non-private FTPL it privatises: the same Gaussian perturbation, regret term only
            self.sigma = regret_term
            self.privacy = None
            self.counter = cls(
                self.horizon,
                self.dim,
                GaussianNoise(regret_term),
                replicas=self.replicas,
                rng=rng,
                bounds=self.bounds,
                clip=clip,
            )
            self._cumulative = self.counter.initial_release()
            self.t = 0
            return
        if calibration == "paper":
            sigma = ftpl_sigma_paper(
                self.bounds.max_norm(2), self.dim, self.horizon, epsilon, delta
            )
            how = "Agarwal & Singh (2017) Thm 3.5 sigma"
        else:
            sigma = max(regret_term, gaussian_sigma(total, epsilon, delta))
            how = "max(Thm 3.5 regret term, least sigma of the analytic Gaussian mechanism)"
        self.sigma = sigma
        self.privacy = PrivacyGuarantee(
            epsilon=gaussian_epsilon(delta, total / sigma),
            delta=float(delta),
            derivation=(
                f"{how} = {sigma:.6g} per node of a {mechanism}; accounted exactly as "
                f"one Gaussian mechanism of l2 sensitivity {total:.6g}"
            ),
            rho=zcdp_rho(total, sigma),
            requested_epsilon=float(epsilon),
            requested_delta=float(delta),
        )
        self.counter: ContinualCounter = cls(
            self.horizon,
            self.dim,
            GaussianNoise(sigma),
            replicas=self.replicas,
            rng=rng,
            bounds=self.bounds,
            clip=clip,
            privacy=self.privacy,
        )
        self._cumulative = self.counter.initial_release()
        self.t = 0

    def act(self) -> np.ndarray:
        """x_t = argmin_{x in X} <x, L~_{t-1}>, shape (replicas, dim)."""
        return linear_oracle(self.domain, self._cumulative, self.radius)
