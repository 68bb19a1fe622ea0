"""HTINF (Huang, Dai & Huang, ICML 2022): Tsallis-INF for heavy-tailed losses, the base algorithm
Asi, Raman & Talwar (2025) put inside their batched conversion (:mod:`dponline.bandits.batched`).

**The setting.** Each round the learner plays an arm I_t and sees a value y_t whose conditional
mean given the arm is the arm's loss, signed and heavy-tailed: only a moment E|y_t|^alpha <=
sigma^alpha is known (1 < alpha <= 2). The batched conversion's values, a batch's mean loss in
[0, 1] plus Laplace(b) noise, have alpha = 2 and sigma^2 = 1 + 2 b^2
(:func:`~dponline.bandits.exp3.laplace_second_moment`).

**The algorithm** (alpha = 2, the case the conversion uses; the only one implemented). Follow the
regularised leader with the 1/2-Tsallis entropy:

    x_t = argmin_{x in the simplex} eta_t <L~_{t-1}, x> - 2 sum_i sqrt(x_i),
    eta_t = 1 / (sigma sqrt(t)),

whose solution is x_t(i) = (eta_t L~_{t-1}(i) + lambda)^-2 with the one lambda >
-eta_t min_i L~_{t-1}(i) that makes the weights sum to 1 (:func:`tsallis_weights`, Newton's
method). Play I_t ~ x_t; skip the value when |y_t| > r_t = theta x_t(I_t)^(1/2) / eta_t, with
theta = 1 - 2^(-1/3); else add y_t / x_t(I_t) to L~(I_t). No horizon enters (eta_t reads t).

**Sources.** The paper's abstract (HTINF, its setting with alpha and sigma known, its optimal
O(sigma K^(1 - 1/alpha) T^(1/alpha)) adversarial regret) was read; the objective, eta_t, the
skipping threshold and theta were read in a public third-party implementation of the algorithm,
not in the paper's text, and alpha = 2 with the conversion's sigma in a secondary account of
Asi, Raman & Talwar. No regret bound is claimed here, and none is used to tune anything: the
batched learner built on it (``batched-htinf``) takes the paper's batch length
tau = ceil(1 / epsilon) in both calibrations. Its privacy does not depend on the base at all
(the conversion's proof, :mod:`dponline.bandits.batched`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dponline.bandits.exp3 import SampledArms
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_int_array,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.rng import generator_state

__all__ = ["HTINF", "SKIP_CONSTANT", "tsallis_weights"]

#: theta of the skipping threshold for alpha = 2: 1 - 2^(-1/3)
SKIP_CONSTANT = 1.0 - 2.0 ** (-1.0 / 3.0)


def tsallis_weights(
    scaled: np.ndarray, start: np.ndarray | None = None, tol: float = 1e-12, max_steps: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """argmin over the simplex of <s, x> - 2 sum_i sqrt(x_i), per row of ``scaled`` (R, K) =
    eta L~: x_i = (s_i + lambda)^-2 with sum_i x_i = 1; returns (x, lambda), lambda of shape
    (R, 1). Newton's method on lambda, from ``start`` (a previous lambda) or from
    lambda_0 = 1 - min_i s_i, where the sum is at least 1, so the root is not below it. The sum
    is convex and decreasing in lambda: from the left every step stays left of the root and the
    iterates increase to it; from the right one step lands on the left (clamped to lambda_0).
    The iteration runs on s - min_i s_i (and lambda + min_i s_i), which has the same solution:
    with the common offset removed, s_i + lambda does not cancel when the offset is large."""
    s = np.asarray(scaled, dtype=float)
    offset = s.min(axis=1, keepdims=True)
    s = s - offset
    lam = np.ones_like(offset)  # lambda_0 = 1 - min_i s_i, shifted
    if start is not None:
        lam = np.maximum(np.asarray(start, dtype=float) + offset, 1.0)
    for _ in range(max_steps):
        d = s + lam
        excess = (d**-2).sum(axis=1, keepdims=True) - 1.0
        if np.all(np.abs(excess) <= tol):
            break
        lam = np.maximum(lam + excess / (2.0 * (d**-3).sum(axis=1, keepdims=True)), 1.0)
    x = (s + lam) ** -2
    return x / x.sum(axis=1, keepdims=True), lam - offset


class HTINF(SampledArms):
    """HTINF with alpha = 2 on ``n_arms`` arms, vectorised over ``replicas`` (module docstring).

    It offers what a wrapper needs of a bandit algorithm
    (:class:`~dponline.bandits.private_reduction.BanditAlgorithm`): ``act()``, ``learn(values)``,
    ``played()`` / ``played_arms()``, ``state_dict()`` and ``prepare_load()``, and
    ``learned_rounds(state)``, which a wrapper checks against its own round counter.

    Parameters
    ----------
    n_arms:
        K >= 2.
    sigma:
        The bound on the values' second moment's square root; eta_t = 1 / (sigma sqrt(t)).
    theta:
        The skipping constant (default :data:`SKIP_CONSTANT`); ``None`` never skips.
    """

    def __init__(
        self,
        n_arms: int,
        *,
        sigma: float,
        replicas: int,
        rng: np.random.Generator,
        theta: float | None = SKIP_CONSTANT,
    ) -> None:
        self._start_arms(n_arms, replicas, rng)
        self.sigma = checked_positive("sigma", sigma)
        self.theta = None if theta is None else checked_positive("theta", theta)
        self.t = 1  # the round about to be played (1-based)
        self._losses = np.zeros((self.replicas, self.n_arms))  # L~
        self._lam = np.ones((self.replicas, 1))  # the last normaliser (Newton's warm start)
        self._x: np.ndarray | None = None  # x_t once computed for this round

    @property
    def eta(self) -> float:
        """eta_t = 1 / (sigma sqrt(t)) of the round about to be played."""
        return 1.0 / (self.sigma * math.sqrt(self.t))

    def probabilities(self) -> np.ndarray:
        """x_t, shape (replicas, K) (:func:`tsallis_weights` of eta_t L~, from the last
        normaliser)."""
        if self._x is None:
            self._x, self._lam = tsallis_weights(self.eta * self._losses, self._lam)
        return self._x

    def estimates(self, values: np.ndarray) -> np.ndarray:
        """y / x_t(I_t) at the arm played, 0 where |y| > theta x_t(I_t)^(1/2) / eta_t."""
        values = np.asarray(values, dtype=float)
        p = self.probabilities()[self._rows, self._chosen]
        est = values / p
        if self.theta is not None:
            est = np.where(np.abs(values) * self.eta <= self.theta * np.sqrt(p), est, 0.0)
        return est

    def learn(self, values: np.ndarray) -> None:
        """Add each replica's estimate to the arm it played; the next round uses eta_{t+1}."""
        self._losses[self._rows, self._chosen] += self.estimates(values)
        self.t += 1
        self._x = None

    def _config(self) -> dict[str, Any]:
        return {"n_arms": self.n_arms, "sigma": self.sigma, "theta": self.theta}

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "losses": self._losses.copy(),
            "lam": self._lam.copy(),
            "chosen": self._chosen.copy(),
            "rng": generator_state(self.rng),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (configuration, round, estimates, arms, RNG) and return the
        function that installs it."""
        if saved_field(state, "config") != self._config():
            raise ArgumentError("state was saved from an HTINF with other arms or constants")
        t = saved_field(state, "t")
        if not isinstance(t, int | np.integer) or isinstance(t, bool) or t < 1:
            raise ArgumentError(f"saved t must be an integer >= 1, got {t!r}")
        shape = (self.replicas, self.n_arms)
        losses = np.array(checked_real_array("saved losses", saved_field(state, "losses"), shape))
        lam = np.array(
            checked_real_array("saved lam", saved_field(state, "lam"), (self.replicas, 1))
        )
        chosen = checked_int_array(
            "saved chosen", saved_field(state, "chosen"), (self.replicas,), 0, self.n_arms
        )
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self.t, self._losses, self._lam, self._chosen = int(t), losses, lam, chosen
            self.rng, self._x = rng, None

        return install

    def learned_rounds(self, state: dict[str, Any]) -> int:
        """The values a saved state (one :meth:`prepare_load` accepted) has learned from:
        t - 1, t being the 1-based round about to be played (``learn`` advances it), for a
        wrapper to check against its own round counter."""
        return int(saved_field(state, "t")) - 1
