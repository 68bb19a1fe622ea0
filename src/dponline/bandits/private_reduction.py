"""Agarwal & Singh (2017), Algorithm 4: any bandit algorithm made private by noise on the loss.

Each round the bandit algorithm A plays x_t; the reduction observes the loss value <l_t, x_t>,
and forwards <l_t + Z_t, x_t> to A, with Z_t ~ Lap^N(lambda) drawn afresh (lines 3-5). A never
sees a loss value twice, so the whole sequence of its decisions is post-processing of the noisy
values and the reduction's guarantee is derived once, here, for every A (Lemma 4.2):

    Condition on the coordinates of Z_t other than i* = argmax_i |x_{t,i}|: the forwarded value
    is then the Laplace mechanism with scale lambda |x_{t,i*}| on the scalar <l_t, x_t>, whose
    change between neighbouring loss sequences is at most sup_{l, l' in Y} |<l - l', x_t>|
    <= ``sensitivity`` * ||x_t||_inf. Hence each round is (sensitivity / lambda)-DP, each round's
    loss enters once, and the sequence of decisions is (sensitivity / lambda)-DP, event-level
    over loss sequences that differ in one round.

For a multi-armed bandit (x_t a standard basis vector) <Z_t, x_t> is one Laplace draw and the
sensitivity is the width of the loss interval; for a set with a self-concordant barrier it is
the l1 diameter of the loss set Y (the fictitious-loss argument of Lemma 4.2).

``paper`` calibration: lambda = (the paper's norm of Y) / epsilon (Theorem 4.1: ||l||_inf; Theorem
4.5: ||Y||_1); ``tight``: lambda = sensitivity / epsilon. The guarantee is sensitivity / lambda,
refused when it exceeds the budget unless the budget allows a weaker paper calibration.

The wrapped algorithm implements :class:`BanditAlgorithm`: it acts, learns from the (noisy)
values it is handed, and reports the point each replica played. Input bounds, the horizon, the
act/observe order and the noise live in :class:`PrivateBanditReduction`, once for every algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from dponline.privacy.arguments import ArgumentError, saved_field
from dponline.privacy.bounds import Box, InputBounds, NormBall, check_finite
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.privacy.noise import LaplaceNoise
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    NoiseHandle,
    RoundDiscipline,
    checked_bandit_loss,
    checked_budget,
    checked_config,
    checked_count,
)
from dponline.rng import RngLike, as_generator

__all__ = [
    "BanditAlgorithm",
    "PrivateBanditReduction",
    "ReductionCalibrator",
    "saved_learned_rounds",
    "value_range",
]


class BanditAlgorithm(Protocol):
    """What Algorithm 4 needs of the bandit algorithm it wraps.

    An algorithm that counts the values it has learned from (HTINF, whose learning rate reads
    its round; EXP4, which reads the advice of its round) also offers
    ``learned_rounds(state)``: that count as a saved state it accepted records. A wrapper
    then refuses a state whose count disagrees with its own round counter
    (:func:`saved_learned_rounds`)."""

    dim: int
    replicas: int
    eta: float  # the learning rate (its default may depend on the calibrated noise)
    #: True when every action is a standard basis vector (a multi-armed bandit); such an
    #: algorithm also gives ``played_arms()``, the index of each replica's arm.
    one_hot: bool

    def act(self) -> np.ndarray: ...

    def learn(self, values: np.ndarray) -> None:
        """Update on the forwarded (noisy) loss value of the action each replica played."""

    def played(self) -> np.ndarray:
        """The point x_t each replica played this round, shape (replicas, dim)."""

    def state_dict(self) -> dict[str, Any]: ...

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole saved state and return the function that installs it."""


def saved_learned_rounds(algorithm: Any, state: Any) -> int | None:
    """How many values a saved state of ``algorithm`` (one its ``prepare_load`` accepted)
    records having learned from, read by its optional ``learned_rounds(state)``; ``None`` for
    an algorithm that keeps no such count (EXP3, EXP2, SCRiBLe: nothing to cross-check)."""
    count = getattr(algorithm, "learned_rounds", None)
    return None if count is None else int(count(state))


def value_range(bounds: InputBounds, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[min, max] of <l, x> over l in the loss set Y, per row of ``x`` (a norm ball or a box)."""
    if isinstance(bounds, NormBall):
        q = bounds.q
        dual = math.inf if q == 1 else (1.0 if q == math.inf else q / (q - 1.0))
        norm = (
            np.abs(x).max(axis=-1)
            if dual == math.inf
            else (np.abs(x) ** dual).sum(axis=-1) ** (1.0 / dual)
        )
        return -bounds.radius * norm, bounds.radius * norm
    if isinstance(bounds, Box):
        lo, hi = bounds._lo, bounds._hi
        return np.minimum(lo * x, hi * x).sum(axis=-1), np.maximum(lo * x, hi * x).sum(axis=-1)
    raise TypeError(f"loss set must be a NormBall or a Box, got {type(bounds).__name__}")


def snapped(value: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``value`` with the entries within 1e-12 (relative) of [low, high] clipped into it: <l, x>
    of a loss inside the set can round a hair past the computed interval, and clipping such
    values keeps the sensitivity exactly the interval's width. Values further out (and NaN)
    are returned as they are, for the caller to refuse or clip."""
    slack = 1e-12 * np.maximum(np.abs(low), np.abs(high))
    near = (value >= low - slack) & (value <= high + slack)
    return np.where(near, np.clip(value, low, high), value)


@dataclass(frozen=True)
class ReductionCalibrator:
    """The Laplace scale lambda of Algorithm 4 (Lemma 4.2; see the module docstring)."""

    sensitivity: float
    paper_numerator: float
    paper_source: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sensitivity) and self.sensitivity > 0):
            raise ValueError(
                f"the loss values' sensitivity must be finite and positive, got "
                f"{self.sensitivity!r}: a loss set of zero width leaves nothing to protect; "
                "declare the range the losses really take"
            )

    def _answer(self, budget: PrivacyBudget, lam: float, how: str) -> Calibration:
        how += f" (Lemma 4.2; sensitivity {self.sensitivity:.6g})"
        g = budget.prove(self.sensitivity / lam, 0.0, how)
        return Calibration(LaplaceNoise(lam), g, budget.calibration, "Algorithm 4")

    def paper(self, budget: PrivacyBudget) -> Calibration:
        lam = float(self.paper_numerator) / budget.epsilon
        how = f"{self.paper_source}: Laplace({lam:.6g}) on each observed loss value"
        return self._answer(budget, lam, how)

    def tight(self, budget: PrivacyBudget) -> Calibration:
        lam = float(self.sensitivity) / budget.epsilon
        how = f"Laplace({lam:.6g}) on each observed loss value, exact sensitivity"
        return self._answer(budget, lam, how)


class PrivateBanditReduction(NoiseHandle, RoundDiscipline):
    """Algorithm 4 of Agarwal & Singh (2017) around any :class:`BanditAlgorithm`.

    Parameters
    ----------
    make_algorithm:
        Builds the wrapped algorithm from ``(laplace_scale, generator)``: the calibrated lambda
        (0 without privacy), which its step sizes may depend on (Theorems 4.1, 4.5), and the
        generator it draws its actions from (shared with the noise, so one state resumes both).
    horizon:
        T; round T+1 is refused.
    budget:
        Pure-DP budget (delta = 0); ``None`` runs the wrapped algorithm on the exact values.
    loss_bounds:
        The loss set Y; an observed value outside {<l, x_t> : l in Y} raises ValueError (or is
        clipped into it with ``clip=True``).
    sensitivity, paper_numerator, paper_source:
        The calibration (:class:`ReductionCalibrator`).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.BANDIT
    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 4"

    def __init__(
        self,
        make_algorithm: Callable[[float, np.random.Generator], BanditAlgorithm],
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        loss_bounds: InputBounds,
        sensitivity: float,
        paper_numerator: float,
        paper_source: str,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self._start_rounds(horizon)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget)
        self.bounds = loss_bounds
        self.clip = bool(clip)
        self.calibrator = ReductionCalibrator(float(sensitivity), paper_numerator, paper_source)
        self.privacy: PrivacyGuarantee | None = None
        lam = 0.0
        if self.budget is not None:
            cal = calibrate(self.calibrator, self.budget)
            lam, self.privacy = cal.noise.b, cal.guarantee
        self.noise = LaplaceNoise(lam)
        self.algorithm = make_algorithm(lam, as_generator(rng))
        if self.algorithm.replicas != self.replicas:
            raise ValueError(
                f"the wrapped algorithm has {self.algorithm.replicas} replicas, expected "
                f"{self.replicas}"
            )
        self.dim = self.algorithm.dim
        if self.bounds.dim != self.dim:
            raise ValueError(f"loss_bounds has dimension {self.bounds.dim}, expected {self.dim}")
        self._arm_bounds: tuple[np.ndarray, np.ndarray] | None = None
        if self.algorithm.one_hot and isinstance(self.bounds, Box):
            self._arm_bounds = (self.bounds._lo, self.bounds._hi)

    @property
    def eta(self) -> float:
        """The wrapped algorithm's learning rate."""
        return self.algorithm.eta  # type: ignore[attr-defined, no-any-return]

    @property
    def laplace_scale(self) -> float:
        """lambda, the Laplace scale of each noise coordinate (0 without privacy)."""
        return self.noise.b

    @property
    def _rng(self) -> np.random.Generator:
        return self.algorithm.rng  # type: ignore[attr-defined, no-any-return]

    def _scale_noise(self, factor: float) -> None:
        self.noise = self.noise.scaled(factor)

    def act(self) -> np.ndarray:
        """The wrapped algorithm's action for every replica, drawn once a round: asked again
        before :meth:`observe`, it returns the action already drawn (the loss is charged to
        the action played, and a second draw would spend the algorithm's randomness on an
        action nobody played)."""
        if self._acted:
            held = getattr(self.algorithm, "played_arms", None)
            return np.array(held() if held is not None else self.algorithm.played())
        out = self.algorithm.act()
        self._acted = True
        return out

    def observe(self, feedback: Feedback) -> None:
        """Check <l_t, x_t> against the loss set and forward <l_t + Z_t, x_t> (lines 3-5)."""
        if self._arm_bounds is not None:  # the arm's own interval (NaN fails it: checked below)
            value = checked_bandit_loss(self, feedback, acted=self._acted, finite=False)
            arms = self.algorithm.played_arms()  # type: ignore[attr-defined]
            low, high = self._arm_bounds[0][arms], self._arm_bounds[1][arms]
            value = snapped(value, low, high)  # a hair past by rounding: clipped in
        else:
            value = checked_bandit_loss(self, feedback, acted=self._acted)
            x = self.algorithm.played()
            low, high = value_range(self.bounds, x)
            value = snapped(value, low, high)
        inside = (value >= low) & (value <= high)
        if not inside.all():
            check_finite(value, "bandit loss")  # NaN and infinity are never accepted
            if not self.clip:
                j = int(np.argmin(inside))
                raise ValueError(
                    f"bandit loss {float(value[j])!r} of replica {j} is outside the declared "
                    "bounds: "
                    f"losses in the loss set give values in [{low[j]:.6g}, {high[j]:.6g}] at "
                    "the action played"
                )
            value = np.clip(value, low, high)
        if self.algorithm.one_hot:  # <Z, e_i> is one Laplace draw
            noise = self.noise.sample(self._rng, (self.replicas,))
        else:
            noise = (self.noise.sample(self._rng, (self.replicas, self.dim)) * x).sum(axis=-1)
        self.algorithm.learn(value + noise)
        self._end_round()

    def _config(self) -> dict[str, Any]:
        return {
            "noise": repr(self.noise),
            "bounds": repr(self.bounds),
            "clip": self.clip,
            "horizon": self.horizon,
            "replicas": self.replicas,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "acted": self._acted,
            "algorithm": self.algorithm.state_dict(),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the configuration, the round counter and the wrapped algorithm's whole state,
        and that they agree: each observed round hands the algorithm one value (line 5), so an
        algorithm that counts its values (:func:`saved_learned_rounds`: EXP4's step) must have
        learned from exactly t of them. Then return the function that installs them."""
        checked_config(
            saved_field(state, "config"),
            self._config(),
            type(self).__name__,
            "noise, loss set, horizon or guarantee",
        )
        t, acted = self._checked_rounds(state)
        saved_algorithm = saved_field(state, "algorithm")
        install_algorithm = self.algorithm.prepare_load(saved_algorithm)
        learned = saved_learned_rounds(self.algorithm, saved_algorithm)
        if learned is not None and learned != t:
            raise ArgumentError(
                f"saved algorithm has learned from {learned} values but the saved round counter "
                f"t is {t}: each observed round hands it one value, so the two must agree"
            )

        def install() -> None:
            install_algorithm()
            self._set_rounds(t, acted)

        return install
