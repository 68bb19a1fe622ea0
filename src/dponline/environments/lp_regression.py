"""The synthetic regression of Han et al. (2024), Appendix C: streaming SCO in l_p geometry with
held-out validation and test sets.

Squared loss f(theta; x, y) = (<x, theta> - y)^2 over the unit l_p ball, p in (1, inf]:

- theta* = (1, ..., 1) / ||(1, ..., 1)||_p, so ||theta*||_p = 1;
- x ~ N(0, nu^2 I_d) rescaled to unit l_q norm (q = p / (p - 1); q = 1 for p = inf), nu = 0.05;
- y = <x, theta*> + N(0, nu^2);
- SubOpt(theta) = (L(theta) - L(theta*)) / (L(0) - L(theta*)), L the empirical squared loss of a
  set of fresh points, so SubOpt(theta*) = 0 and SubOpt(0) = 1 exactly.

:class:`LpRegressionStream` draws the training stream (one sample per round), a validation set
(for choosing hyperparameters, :class:`~dponline.environments.base.HeldOutEvaluation`) and a test
set (for reporting) at construction, all independent. Each round's loss is the test SubOpt of the
iterate played; the regret is against theta* (test SubOpt 0), so it is the cumulative SubOpt.

Labels are unbounded Gaussians while every learner's privacy rests on |y| <= Y. The environment
declares ``y_bound`` = 1 + 5 nu (the largest noiseless label is |<x, theta*>| <= ||x||_q
||theta*||_p = 1, plus five standard deviations of label noise): learners built for it with
``clip=True`` clip a label beyond it themselves, as part of the private mechanism, so their
guarantee holds for every input (:attr:`LpRegressionStream.clipped_labels` counts them); without
clipping they refuse such a sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.domains.lp_ball import LpBall, dual_exponent
from dponline.protocol import FeedbackKind, SampleFeedback, checked_count

__all__ = [
    "NOISE_SD",
    "LpRegressionStream",
    "Risk",
    "draw_samples",
    "p_label",
    "subopt",
    "true_parameter",
]

#: Standard deviation nu of the design before rescaling and of the label noise (App. C).
NOISE_SD = 0.05


def p_label(p: float) -> str:
    """'1.5' or 'inf' (JSON and TOML files have no infinity)."""
    return "inf" if p == math.inf else f"{p:g}"


def true_parameter(d: int, p: float) -> np.ndarray:
    """theta* = ones normalised to unit l_p norm (App. C)."""
    ones = np.ones(d)
    return ones / float(LpBall(d, p).norm(ones))


def draw_samples(
    n: int, theta_star: np.ndarray, p: float, rng: np.random.Generator, noise_sd: float = NOISE_SD
) -> tuple[np.ndarray, np.ndarray]:
    """n samples of App. C: x ~ N(0, nu^2 I_d) rescaled to unit l_q norm,
    y = <x, theta*> + N(0, nu^2)."""
    d = theta_star.shape[0]
    x = rng.normal(0.0, noise_sd, size=(n, d))
    x /= LpBall(d, dual_exponent(p)).norm(x)[:, None]
    y = x @ theta_star + rng.normal(0.0, noise_sd, size=n)
    return x, y


@dataclass(frozen=True)
class Risk:
    """The empirical squared loss L(theta) = mean_i (<x_i, theta> - y_i)^2 of a sample set,
    kept as the quadratic form theta' G theta - 2 b' theta + c (G = X'X/n, b = X'y/n,
    c = mean y^2), so that it is cheap for many thetas at once."""

    gram: np.ndarray
    cross: np.ndarray
    mean_square: float
    size: int

    @classmethod
    def from_samples(cls, x: np.ndarray, y: np.ndarray) -> Risk:
        n = x.shape[0]
        return cls(x.T @ x / n, x.T @ y / n, float(y @ y / n), n)

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        """L(theta) for theta of shape (..., d)."""
        theta = np.asarray(theta, dtype=float)
        quad = np.einsum("...i,ij,...j->...", theta, self.gram, theta)
        return quad - 2.0 * theta @ self.cross + self.mean_square


def subopt(theta: np.ndarray, risk: Risk, theta_star: np.ndarray) -> np.ndarray:
    """(L(theta) - L(theta*)) / (L(0) - L(theta*)) for theta of shape (..., d)."""
    best = float(risk(theta_star))
    return (risk(theta) - best) / (risk.mean_square - best)


class LpRegressionStream:
    """Han et al. (2024) App. C regression in dimension ``dim`` over the unit l_p ball, one
    training sample per round for ``horizon`` rounds (see the module docstring).

    ``rng`` draws, in this order, the training stream, the validation set (``n_validation``
    points) and the test set (``n_test`` points). Losses are test SubOpt; :meth:`test_loss` and
    :meth:`validation_loss` score any iterate on the held-out sets.
    """

    reveals_context: ClassVar[bool] = False
    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.SAMPLE
    setting: ClassVar[str] = "stochastic optimisation"

    def __init__(
        self,
        dim: int,
        horizon: int,
        p: float,
        rng: np.random.Generator,
        *,
        n_validation: int = 10_000,
        n_test: int = 10_000,
        noise_sd: float = NOISE_SD,
    ) -> None:
        self.horizon = checked_count("horizon", horizon)
        self.dim = checked_count("dim", dim)
        if self.horizon < 1 or self.dim < 1:
            raise ValueError(f"need horizon >= 1 and dim >= 1, got {horizon!r} and {dim!r}")
        p = float(p)
        if not p > 1.0:
            raise ValueError(f"p must lie in (1, inf], got {p!r}")
        self.p = p
        self.q = dual_exponent(p)
        for name, n in (("n_validation", n_validation), ("n_test", n_test)):
            if checked_count(name, n) < 2:
                raise ValueError(f"{name} must be at least 2, got {n!r}")
        if not (math.isfinite(noise_sd) and noise_sd > 0):
            raise ValueError(f"noise_sd must be finite and positive, got {noise_sd!r}")
        self.noise_sd = float(noise_sd)
        self.name = f"lp_regression:p={p_label(p)},d={dim}"
        self.theta_star = true_parameter(self.dim, p)
        self.x, self.y = draw_samples(self.horizon, self.theta_star, p, rng, self.noise_sd)
        validation = draw_samples(int(n_validation), self.theta_star, p, rng, self.noise_sd)
        test = draw_samples(int(n_test), self.theta_star, p, rng, self.noise_sd)
        self.validation = Risk.from_samples(*validation)
        self.test = Risk.from_samples(*test)

    @property
    def y_bound(self) -> float:
        """The label bound learners are built with: 1 + 5 nu (labels beyond it are clipped by
        the learner, see the module docstring)."""
        return 1.0 + 5.0 * self.noise_sd

    def x_bound(self, q: float) -> float:
        """sup ||x||_q' of the design in the l_q' norm asked for: 1 in the experiment's own
        q (every x is rescaled to it), 1 for q' >= q, d^(1/q' - 1/q) for q' < q."""
        q_asked = float(q)
        if not q_asked >= 1.0:
            raise ValueError(f"q must be at least 1, got {q!r}")
        if q_asked >= self.q:
            return 1.0
        inv = 0.0 if self.q == math.inf else 1.0 / self.q
        return float(self.dim ** (1.0 / q_asked - inv))

    @property
    def clipped_labels(self) -> int:
        """How many training labels lie beyond :attr:`y_bound` (a learner with ``clip=True``
        clips them)."""
        return int(np.count_nonzero(np.abs(self.y) > self.y_bound))

    def round(self, t: int, action: np.ndarray) -> tuple[SampleFeedback, np.ndarray]:
        """Round t: the iterates (replicas, d) are scored by test SubOpt, then sample t."""
        if not 0 <= t < self.horizon:
            raise ValueError(f"round must lie in [0, {self.horizon}), got {t!r}")
        return SampleFeedback(self.x[t], float(self.y[t])), self.test_loss(action)

    def test_loss(self, action: np.ndarray) -> np.ndarray:
        """Test SubOpt of each replica's iterate, shape (replicas,)."""
        return np.asarray(subopt(action, self.test, self.theta_star), dtype=float)

    def validation_loss(self, action: np.ndarray) -> np.ndarray:
        """Validation SubOpt of each replica's iterate, shape (replicas,)."""
        return np.asarray(subopt(action, self.validation, self.theta_star), dtype=float)

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        """Cumulative test SubOpt: the regret against theta*, whose test SubOpt is 0."""
        return np.asarray(cumulative_loss, dtype=float)

    def state_dict(self) -> dict[str, Any]:
        """Empty: every set is drawn at construction, so nothing changes from round to round."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            raise ValueError(f"LpRegressionStream keeps no state, got keys {sorted(state)}")
