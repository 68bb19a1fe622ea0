"""Differentially private multi-armed bandits: Agarwal & Singh (2017), Algorithm 4 (the
reduction that adds noise to the observed loss) around Algorithm 5 (EXP2 with exploration).

Each round, for every replica:

1. p_t = (1 - gamma) q_t + gamma mu, with mu uniform (Algorithm 5, line 3); play i_t ~ p_t;
2. observe the loss l_t(i_t) and forward l_t(i_t) + Z_t(i_t), Z_t ~ Lap(lambda) (Algorithm 4,
   lines 3-5; <Z_t, e_i> is one Laplace draw);
3. estimate l~_t = P_t^+ e_i e_i^T (l_t + Z_t), i.e. (l_t(i) + Z_t(i)) / p_t(i) at i_t, 0 elsewhere
   (Algorithm 5, line 4), and update q_{t+1}(i) proportional to exp(-eta l~_t(i)) q_t(i).

Privacy (Lemma 4.2): each round's loss enters the algorithm once, through one Laplace mechanism
on a scalar, so lambda = (sensitivity of one loss value) / epsilon gives epsilon-DP for the whole
sequence of arms played, event-level over loss sequences that differ in one round. The paper's
Theorem 4.1 takes lambda = 1/epsilon for losses with ||l_t||_inf <= 1; the exact sensitivity is
the width of the loss interval (1 for [0, 1], 2 for [-1, 1]), which ``calibration="tight"`` uses
and ``"paper"`` reports honestly.

Parameters (Theorem 4.1): eta = sqrt(log N / (2 N T (1 + 2 lambda^2 log NT))),
gamma = eta N sqrt(1 + 2 lambda^2 log NT).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dponline.privacy.bounds import Box, check_finite
from dponline.privacy.calibration import reduction_laplace
from dponline.privacy.noise import LaplaceNoise
from dponline.protocol import BanditFeedback, Feedback, FeedbackKind
from dponline.rng import RngLike, as_generator, generator_from_state, generator_state

__all__ = ["DPEXP2", "exp2_parameters", "exp2_regret_bound"]


def exp2_parameters(n_arms: int, horizon: int, laplace_scale: float) -> tuple[float, float]:
    """(eta, gamma) of Theorem 4.1 for N arms, horizon T and Laplace scale lambda."""
    n, t, lam = int(n_arms), int(horizon), float(laplace_scale)
    spread = 1.0 + 2.0 * lam**2 * math.log(n * t)
    eta = math.sqrt(math.log(n) / (2.0 * n * t * spread))
    gamma = eta * n * math.sqrt(spread)
    return eta, gamma


def exp2_regret_bound(n_arms: int, horizon: int, laplace_scale: float) -> float:
    """The explicit bound of the proof of Theorem 4.1 (Lemma 4.4 with its parameters), plus
    the failure event's contribution of 1:

        log N / eta + 2 eta T N (1 + lambda^2 log^2 NT) + 2 T gamma + 1.
    """
    n, t, lam = int(n_arms), int(horizon), float(laplace_scale)
    eta, gamma = exp2_parameters(n, t, lam)
    return (
        math.log(n) / eta
        + 2 * eta * t * n * (1 + lam**2 * math.log(n * t) ** 2)
        + 2 * t * gamma
        + 1.0
    )


class DPEXP2:
    """DP-EXP2 for N-armed bandits (see the module docstring).

    Parameters
    ----------
    n_arms, horizon:
        N and T.
    epsilon:
        Pure-DP budget; ``None`` runs the non-private EXP2 (lambda = 0, Theorem 4.1's
        parameters at lambda = 0).
    calibration:
        "tight": lambda = (high - low) / epsilon, the exact sensitivity of one loss value;
        "paper": lambda = max(|low|, |high|) / epsilon (Theorem 4.1's lambda = 1/epsilon for
        ||l||_inf <= 1), with its proven epsilon reported.
    loss_range:
        The declared interval of every loss value (default [0, 1]).
    eta, gamma:
        Override Theorem 4.1's parameters.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.BANDIT
    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 4 around Algorithm 5 (EXP2)"

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        epsilon: float | None = 1.0,
        calibration: str = "tight",
        loss_range: tuple[float, float] = (0.0, 1.0),
        eta: float | None = None,
        gamma: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        if int(n_arms) < 2:
            raise ValueError(f"n_arms must be at least 2, got {n_arms!r}")
        self.n_arms, self.horizon, self.replicas = int(n_arms), int(horizon), int(replicas)
        low, high = (float(v) for v in loss_range)
        self.bounds = Box(low, high, dim=1)
        self.clip = bool(clip)
        # a loss value moves by at most the width of the loss interval
        lam, self.privacy = reduction_laplace(
            high - low,
            max(abs(low), abs(high)),
            epsilon,
            calibration,
            "Agarwal & Singh (2017) Thm 4.1 (lambda = ||l||_inf / epsilon)",
        )
        self.laplace_scale = lam
        self.noise = LaplaceNoise(lam)
        default_eta, default_gamma = exp2_parameters(self.n_arms, self.horizon, lam)
        self.eta = default_eta if eta is None else float(eta)
        self.gamma = min(1.0, default_gamma if gamma is None else float(gamma))
        self._rng = as_generator(rng)
        self._log_q = np.zeros((self.replicas, self.n_arms))
        self._p = self._probabilities()
        self._arms = np.zeros(self.replicas, dtype=np.int64)
        self._acted = False
        self.t = 0

    def _probabilities(self) -> np.ndarray:
        z = self._log_q - self._log_q.max(axis=1, keepdims=True)
        q = np.exp(z)
        q /= q.sum(axis=1, keepdims=True)
        return (1.0 - self.gamma) * q + self.gamma / self.n_arms

    def probabilities(self) -> np.ndarray:
        """p_t = (1 - gamma) q_t + gamma / N, shape (replicas, N)."""
        return self._p.copy()

    def act(self) -> np.ndarray:
        """Play i_t ~ p_t per replica; returns arm indices, shape (replicas,)."""
        u = self._rng.random(self.replicas)
        cdf = np.cumsum(self._p, axis=1)
        arms = (u[:, None] > cdf).sum(axis=1)
        self._arms = np.minimum(arms, self.n_arms - 1)
        self._acted = True
        return self._arms.copy()

    def loss_estimate(self, noisy_loss: np.ndarray) -> np.ndarray:
        """l~_t = P_t^+ e_i e_i^T (l_t + Z_t): the noisy loss over p_t(i) at the played arm."""
        est = np.zeros((self.replicas, self.n_arms))
        rows = np.arange(self.replicas)
        est[rows, self._arms] = noisy_loss / self._p[rows, self._arms]
        return est

    def observe(self, feedback: Feedback) -> None:
        if not isinstance(feedback, BanditFeedback):
            raise TypeError(f"DPEXP2 observes BanditFeedback, got {type(feedback).__name__}")
        if not self._acted:
            raise ValueError("observe() must follow act(): no arm was played this round")
        loss = check_finite(feedback.loss, "bandit loss")
        if loss.shape != (self.replicas,):
            raise ValueError(f"bandit loss must have shape ({self.replicas},), got {loss.shape}")
        loss = self.bounds.check(loss[:, None], clip=self.clip, what="bandit loss")[:, 0]
        noisy = loss + self.noise.sample(self._rng, (self.replicas,))
        self._log_q -= self.eta * self.loss_estimate(noisy)
        self._p = self._probabilities()
        self._acted = False
        self.t += 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "log_q": self._log_q.copy(),
            "arms": self._arms.copy(),
            "acted": self._acted,
            "rng": generator_state(self._rng),
        }

    def _config(self) -> dict[str, Any]:
        return {
            "noise": repr(self.noise),
            "bounds": repr(self.bounds),
            "clip": self.clip,
            "eta": self.eta,
            "gamma": self.gamma,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("config") != self._config():
            raise ValueError(
                "state was saved from a DPEXP2 with a different noise, bounds, "
                "step sizes or guarantee; it cannot continue this one"
            )
        log_q = np.array(state["log_q"], dtype=float)
        if log_q.shape != self._log_q.shape:
            raise ValueError(
                f"saved weights have shape {log_q.shape}, expected {self._log_q.shape}"
            )
        self._log_q = log_q
        self._arms = np.array(state["arms"], dtype=np.int64)
        self._acted = bool(state["acted"])
        self._rng = generator_from_state(state["rng"])
        self.t = int(state["t"])
        self._p = self._probabilities()
