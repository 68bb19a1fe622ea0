"""Bandits with expert advice: an oblivious loss matrix over K arms and the advice of N experts,
both fixed before the first round (Auer et al. 2002, the setting of EXP4).

Each round t, expert j advises a distribution xi_t^j over the arms; the environment exposes the
whole advice array as ``advice`` (T, N, K), public, which a learner for this setting is built
with and reads row by row (:mod:`dponline.bandits.exp4`). The learner plays an arm per replica
and sees its loss, as in every multi-armed bandit, so any learner of arms can play it too.

Regret is against the best expert in hindsight, exactly, at every round:

    sum_{s<=t} l_s(a_s) - min_j sum_{s<=t} <xi_s^j, l_s>,

the realised loss of the arms played against the expert's expected loss (its advice is a
distribution). With the K "arm" experts among the N (expert j advising arm j) the best expert
is at least as good as the best arm.

:func:`informed_expert_advice` builds a small benchmark: Bernoulli losses whose best arm
switches (:func:`~dponline.environments.experts.switching_best_losses`), one expert that knows
the current best arm (with probability ``accuracy``, else uniform), the K arm experts, and
experts with random Dirichlet(1) advice: the best expert then beats every fixed arm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dponline.environments.bandits import BanditEnvironment
from dponline.environments.experts import switching_best_losses
from dponline.privacy.bounds import check_finite
from dponline.protocol import FeedbackKind

__all__ = ["ExpertAdviceBandit", "informed_expert_advice"]


@dataclass
class ExpertAdviceBandit(BanditEnvironment):
    """Adversarial (oblivious) bandit over ``losses`` (T, K) in [0, 1] with the experts'
    ``advice`` (T, N, K): distributions over the arms (each row nonnegative, summing to 1
    within 1e-9). Regret is against the best expert (module docstring)."""

    advice: Any = None
    name: str = "expert advice"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.BANDIT, init=False)
    setting: str = field(default="bandit with expert advice", init=False)

    def __post_init__(self) -> None:
        self._validate_losses(0.0, 1.0)
        a = check_finite(self.advice, f"advice of {self.name!r}")
        t, k = self.losses.shape
        if a.ndim != 3 or a.shape[0] != t or a.shape[2] != k or a.shape[1] < 1:
            raise ValueError(
                f"advice must be a (T, N, K) = ({t}, N, {k}) array with N >= 1, got {a.shape}"
            )
        if a.min() < 0 or np.abs(a.sum(axis=2) - 1.0).max() > 1e-9:
            raise ValueError("every row of advice must be a distribution over the arms")
        self.advice = a
        expert_losses = np.einsum("tjk,tk->tj", a, self.losses)  # <xi_t^j, l_t>
        self._best = np.cumsum(expert_losses, axis=0).min(axis=1)

    @property
    def n_experts(self) -> int:
        return int(self.advice.shape[1])

    @property
    def n_arms(self) -> int:
        return self.dim


def informed_expert_advice(
    horizon: int,
    rng: np.random.Generator | int | None = 0,
    n_arms: int = 10,
    n_experts: int = 20,
    switches: int = 4,
    gap: float = 0.2,
    accuracy: float = 0.8,
) -> ExpertAdviceBandit:
    """Bernoulli losses (means 1/2, the current best arm 1/2 - ``gap``) whose best arm changes
    ``switches`` times; ``n_experts`` experts (at least K + 1): expert 0 advises the current
    best arm with probability ``accuracy`` (else uniform), experts 1..K advise one arm each,
    the others random Dirichlet(1) distributions. Losses and advice are drawn from ``rng``."""
    if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer) or horizon < 1:
        raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
    if not (isinstance(n_arms, int | np.integer) and n_arms >= 2):
        raise ValueError(f"n_arms must be an integer >= 2, got {n_arms!r}")
    if not (isinstance(n_experts, int | np.integer) and n_experts >= n_arms + 1):
        raise ValueError(f"n_experts must be an integer >= n_arms + 1 = {n_arms + 1}")
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must lie in [0, 1], got {accuracy!r}")
    gen = np.random.default_rng(rng)
    t, k, n = int(horizon), int(n_arms), int(n_experts)
    losses = switching_best_losses(t, k, switches, gap, gen)
    advice = np.empty((t, n, k))
    bounds = np.linspace(0, t, switches + 2).astype(int)
    best = np.zeros(t, dtype=np.int64)
    for s in range(switches + 1):
        best[bounds[s] : bounds[s + 1]] = s % k  # the arm switching_best_losses favours
    advice[:, 0, :] = (1.0 - accuracy) / k
    advice[np.arange(t), 0, best] += accuracy
    advice[:, 1 : k + 1, :] = np.eye(k)
    if n > k + 1:
        advice[:, k + 1 :, :] = gen.dirichlet(np.ones(k), size=(t, n - k - 1))
    return ExpertAdviceBandit(losses, name="expert_advice", advice=advice)
