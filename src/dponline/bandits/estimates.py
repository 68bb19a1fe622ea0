"""Each arm's mean reward from all of its recorded outcomes, privately, at a budget of its own:
the end-of-trial estimate better than the released ones.

A K-armed learner's :meth:`~dponline.bandits.k_armed.KArmedLearner.released_means` cost
nothing beyond its guarantee, but each rests on the data of the statistic last released (a
phase, an episode, an epoch): an arm pulled little rests on few outcomes, and a phase's
noisy mean lags the data. :func:`laplace_arm_means` releases each arm's total of all its
recorded outcomes with Laplace noise: each outcome, a reward in [0, 1], lies in one arm's
total, so the K totals together are one Laplace mechanism of l1 sensitivity 1 (a person's k
outcomes: k, by group privacy), epsilon-DP for the outcomes at scale 1 / epsilon (the
calibration of :class:`~dponline.bandits.dp_phases.RewardSumCalibrator`). With the
allocations' guarantee the two compose: (epsilon + epsilon_estimates) in all (basic
composition). The counts of outcomes per arm are taken as public: they follow from the
allocations and from which outcomes were recorded, which the allocations' guarantee already
assumes independent of their values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dponline.bandits.dp_phases import RewardSumCalibrator
from dponline.privacy.arguments import ArgumentError, checked_real_array
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import calibrate
from dponline.privacy.floating_point import snapped
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.rng import RngLike, as_generator

__all__ = ["ArmEstimates", "laplace_arm_means"]


@dataclass(frozen=True)
class ArmEstimates:
    """Each arm's private mean (clipped to [0, 1]; NaN for an arm without outcomes), the
    standard deviation of its noise (sqrt(2) b / count for Laplace scale b), the counts it
    rests on, and the guarantee of the release."""

    means: np.ndarray
    noise_sd: np.ndarray
    counts: np.ndarray
    privacy: PrivacyGuarantee

    def interval(self, z: float = 1.96, *, sampling: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Each mean plus or minus ``z`` standard deviations, clipped to [0, 1], a normal
        approximation: of the noise and, with ``sampling`` (the default), of the outcomes'
        sampling, sqrt(m (1 - m) / count) at the private mean m (the largest variance a reward
        in [0, 1] of mean m can have; computed from released values only), for an interval on
        the arm's true mean; ``sampling=False``: the noise's part alone."""
        var = self.noise_sd**2
        if sampling:
            with np.errstate(invalid="ignore", divide="ignore"):
                var = var + self.means * (1.0 - self.means) / self.counts
        half = z * np.sqrt(var)
        return np.clip(self.means - half, 0.0, 1.0), np.clip(self.means + half, 0.0, 1.0)


def laplace_arm_means(
    totals: Any,
    counts: Any,
    epsilon: float,
    *,
    participations: int = 1,
    rng: RngLike = None,
) -> ArmEstimates:
    """Each arm's mean of its recorded outcomes, ``totals[a] / counts[a]`` with Laplace noise on
    the totals (module docstring): ``totals``, the sums of the outcomes (rewards in [0, 1]) per
    arm, kept by the caller (a learner's ``sums`` hold only what it has read, and are as secret
    as the data); ``counts``, how many outcomes each total holds; ``epsilon``, this release's
    budget; ``participations``: the most outcomes one person contributes (group privacy)."""
    total = checked_real_array("totals", totals)
    count = np.asarray(counts)
    if total.ndim != 1 or count.shape != total.shape:
        raise ArgumentError(
            f"totals and counts must be two arrays of one value per arm, got shapes "
            f"{total.shape} and {count.shape}"
        )
    whole = np.issubdtype(count.dtype, np.integer) or (
        np.issubdtype(count.dtype, np.floating)
        and np.all(np.isfinite(count))
        and np.all(count == np.round(count))
    )
    if not whole or np.any(count < 0):
        raise ArgumentError(f"counts must be whole numbers >= 0, got {count.tolist()}")
    count = count.astype(np.int64)  # whole numbers held as floats (a count kept in np.zeros)
    if np.any(total < 0) or np.any(total > count):
        raise ArgumentError(
            "each total must lie in [0, its count]: outcomes are rewards in [0, 1] (rescale "
            "with bounds fixed in advance)"
        )
    budget = PrivacyBudget(float(epsilon), participations=participations)
    calibration = calibrate(
        RewardSumCalibrator(
            "each arm's total of its recorded outcomes",
            "one release of the K totals, each outcome in one",
        ),
        budget.by_group_privacy(),
    )
    scale = float(calibration.noise.scale)
    noisy = total + as_generator(rng).laplace(0.0, scale, size=total.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        # rounded to 2^-16: a mean's last bits would carry the data (privacy.floating_point)
        means = snapped(np.where(count > 0, np.clip(noisy / count, 0.0, 1.0), np.nan))
        sd = np.where(count > 0, np.sqrt(2.0) * scale / count, np.nan)
    return ArmEstimates(means, sd, count.astype(np.int64), calibration.guarantee)
