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

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dponline.environments.bandits import BanditEnvironment
from dponline.environments.experts import switching_best_losses
from dponline.privacy.arguments import ArgumentError, checked_nonnegative_int, checked_real_array
from dponline.protocol import FeedbackKind, checked_count

__all__ = [
    "ADVICE_TOLERANCE",
    "ExpertAdviceBandit",
    "arm_experts",
    "checked_advice",
    "informed_expert_advice",
    "random_advice",
]


#: how far a row of advice may sum from 1
ADVICE_TOLERANCE = 1e-9


#: rounds of advice checked at a time (no temporary of the whole (T, N, K) array)
CHECK_ROWS = 4096

#: the arrays :func:`checked_advice` returned (private, read-only), by id: checked once
_CHECKED: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def _distinct_part(a: np.ndarray) -> np.ndarray:
    """The part of a (T, N, K) array that holds all its values: along the rounds and the
    experts, an axis a broadcast view repeats (stride 0, as :func:`arm_experts`) is cut to its
    first entry. Rows over the arms are kept whole (their sums are checked)."""
    cut = tuple(
        slice(0, 1) if axis < 2 and a.strides[axis] == 0 else slice(None) for axis in range(3)
    )
    return a[cut]


def _check_distributions(a: np.ndarray) -> None:
    """Refuse advice rows (over the last axis) that are not finite nonnegative distributions
    summing to 1 within :data:`ADVICE_TOLERANCE`, :data:`CHECK_ROWS` rounds at a time (the
    first offending row in row-major order is named)."""
    for start in range(0, a.shape[0], CHECK_ROWS):
        block = a[start : start + CHECK_ROWS]
        finite = np.isfinite(block)
        if not finite.all():
            bad = float(block[~finite].ravel()[0])
            raise ArgumentError(
                f"advice must be finite, got {bad!r} (NaN and infinity are never accepted)"
            )
        negative = block < 0
        if negative.any():
            t, j, i = np.unravel_index(int(np.argmax(negative)), block.shape)
            raise ValueError(
                f"advice must be nonnegative, got {float(block[t, j, i])!r} at round {start + t}, "
                f"expert {j}"
            )
        sums = block.sum(axis=2)
        off = np.abs(sums - 1.0) > ADVICE_TOLERANCE
        if off.any():
            t, j = np.unravel_index(int(np.argmax(off)), off.shape)
            raise ValueError(
                f"advice rows must sum to 1, got {float(sums[t, j])!r} at round {start + t}, "
                f"expert {j}"
            )


def _checked_copy(advice: Any) -> np.ndarray:
    """The learner's own read-only copy of ``advice`` (T, N, K), checked
    (:func:`checked_advice`): of a broadcast view, only the part it repeats is copied and
    checked (:func:`_distinct_part`), and the copy is broadcast back to (T, N, K)."""
    raw = (
        advice
        if isinstance(advice, np.ndarray)
        else checked_real_array("advice", advice, finite=False)
    )
    if raw.ndim != 3 or min(raw.shape) < 1 or raw.shape[2] < 2:
        raise ValueError(
            f"advice must be a (T, N, K) array with K >= 2 arms, got shape {raw.shape}"
        )
    part = checked_real_array("advice", _distinct_part(raw), finite=False)
    # a copy in immutable memory (bytes): the caller's array may change later, and a plain
    # read-only copy could be made writeable again, behind the learner's checked advice
    own = np.frombuffer(np.ascontiguousarray(part, dtype=float).tobytes(), dtype=float)
    own = own.reshape(part.shape)
    _check_distributions(own)
    out = own if own.shape == raw.shape else np.broadcast_to(own, raw.shape)
    _CHECKED[id(out)] = out
    return out


def checked_advice(
    advice: Any, horizon: int | None = None, n_arms: int | None = None
) -> np.ndarray:
    """``advice`` as a float array (T, N, K) of distributions over the K arms (finite,
    nonnegative, each row summing to 1 within 1e-9), with T = ``horizon`` and K = ``n_arms``
    when given; N >= 1 experts, K >= 2 arms.

    The result is the learner's own read-only copy, checked after copying: a caller that
    changes its array afterwards changes neither the advice the learner reads nor the digest
    its saved states record. A broadcast view (:func:`arm_experts`) stays a view of a copy of
    the part it repeats, which alone is checked: the whole (T, N, K) array is never built, nor
    a temporary of its size. An array this function returned is returned as it is (checked
    once: :class:`PrivateEXP4` hands its checked advice to :class:`EXP4`)."""
    if not (isinstance(advice, np.ndarray) and _CHECKED.get(id(advice)) is advice):
        advice = _checked_copy(advice)
    if horizon is not None and advice.shape[0] != horizon:
        raise ValueError(f"advice covers {advice.shape[0]} rounds, expected the horizon {horizon}")
    if n_arms is not None and advice.shape[2] != n_arms:
        raise ValueError(f"advice is over {advice.shape[2]} arms, expected {n_arms}")
    return advice


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
        t, k = self.losses.shape
        # the checked read-only copy the learners keep (they take it as it is, uncopied), so
        # neither the regret below nor a learner sees later changes to the caller's array
        a = self.advice = checked_advice(self.advice, horizon=t, n_arms=k)
        expert_losses = np.einsum("tjk,tk->tj", a, self.losses)  # <xi_t^j, l_t>
        self._best = np.cumsum(expert_losses, axis=0).min(axis=1)

    @property
    def n_experts(self) -> int:
        return int(self.advice.shape[1])

    @property
    def n_arms(self) -> int:
        return self.dim


def arm_experts(horizon: int, n_arms: int) -> np.ndarray:
    """K experts, expert j always advising arm j: a read-only (T, K, K) view of a read-only
    identity of its own (EXP4 over them is EXP3); :func:`checked_advice` copies only the
    identity, never the whole view."""
    t, k = checked_count("horizon", horizon), checked_count("n_arms", n_arms)
    eye = np.eye(k)
    eye.flags.writeable = False
    return np.broadcast_to(eye, (t, k, k))


def random_advice(horizon: int, n_experts: int, n_arms: int, seed: int = 0) -> np.ndarray:
    """N experts whose advice in every round is drawn from Dirichlet(1, ..., 1) over the K arms,
    up front from ``seed`` (fixed before the first round, independent of the losses)."""
    t = checked_count("horizon", horizon)
    n, k = checked_count("n_experts", n_experts), checked_count("n_arms", n_arms)
    gen = np.random.default_rng(checked_nonnegative_int("advice_seed", seed))
    return gen.dirichlet(np.ones(k), size=(t, n))


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
