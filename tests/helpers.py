"""Test helpers: deterministic 'noise' that makes a mechanism's structure visible."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.noise import NoiseDistribution


def maybe_budget(
    epsilon: float | None, delta: float = 0.0, calibration: str = "tight", **kw
) -> PrivacyBudget | None:
    """``PrivacyBudget(epsilon, delta, calibration)``, or ``None`` when epsilon is None (the
    non-private counterpart), for tests parametrised over both. A ``paper`` calibration is a
    reproduction here, so it may prove less than asked (``allow_weaker`` unless given)."""
    if epsilon is None:
        return None
    kw.setdefault("allow_weaker", calibration == "paper")
    return PrivacyBudget(epsilon, delta, calibration, **kw)


@dataclass(frozen=True)
class ConstantNoise(NoiseDistribution):
    """Every draw is the constant ``value`` (variance reported as value^2 for bookkeeping)."""

    value: float = 1.0
    sensitivity_norm: str = "l2"

    @property
    def scale(self) -> float:
        return self.value

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return np.full(shape, self.value)

    def coordinate_variance(self, dim: int) -> float:
        return self.value**2

    def scaled(self, factor: float) -> ConstantNoise:
        return ConstantNoise(self.value * factor)


@dataclass(frozen=True)
class CountingNoise(NoiseDistribution):
    """Draws ones and counts how many scalars it has drawn (to count noise draws)."""

    counter: list  # one-element list, mutated
    sensitivity_norm: str = "l2"

    @property
    def scale(self) -> float:
        return 1.0

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        self.counter[0] += int(np.prod(shape))
        return np.ones(shape)

    def coordinate_variance(self, dim: int) -> float:
        return 1.0

    def scaled(self, factor: float) -> CountingNoise:
        return self


def with_noise_fraction(learner, fraction: float, rng: np.random.Generator | None = None):
    """The learner with ``fraction`` of its calibrated noise, through its public handle
    (the deliberately under-noised version the audits must catch)."""
    if fraction != 1.0:
        learner.scale_noise(fraction)
    return learner


def first_coordinate_decisions(learner, losses: np.ndarray) -> np.ndarray:
    """Run a full-information learner over ``losses`` and return its first decision coordinate
    each round, shape (replicas, T): the output an audit compares."""
    from dponline.protocol import LossVectorFeedback

    out = []
    for loss in losses:
        out.append(learner.act()[:, 0])
        learner.observe(LossVectorFeedback(loss))
    return np.stack(out, axis=1)


def label_flip_pair(n: int, d: int, label: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Two streams of n samples (x, y) rows: x = e_1 everywhere, y = 0, except sample 1's label,
    +label in the first stream and -label in the second (datasets differing in one sample).

    For the squared loss with ||x|| <= 1 = X and |y| <= Y = label, sample 1's recursive-gradient
    increment is grad f(0; x_1) = -2 y x_1 (theta_0 = theta_1 = 0), so the pair moves it by 4 Y,
    against the proven bound 2 (beta D + L) = 2 (2 D + 2 (r + Y)): with a large label the pair
    nearly attains the sensitivity (for r = 1, D = 2, Y = 100: 400 of 412)."""
    a = np.zeros((n, d + 1))
    a[:, 0] = 1.0
    b = a.copy()
    a[0, d], b[0, d] = label, -label
    return a, b


def iterates_on_stream(learner, data: np.ndarray) -> np.ndarray:
    """Feed rows (x, y) of ``data`` (shape (n, d + 1)) to a streaming learner as shared samples
    and return every released iterate, shape (replicas, n, d): the output an audit compares."""
    from dponline.protocol import SampleFeedback

    d = data.shape[1] - 1
    out = []
    learner.act()  # theta_0
    for i, row in enumerate(data):
        learner.observe(SampleFeedback(row[:d], row[d]))
        out.append(learner.theta.copy() if i + 1 == len(data) else learner.act())
    return np.stack(out, axis=1)


def catalogue_environment(name: str, horizon: int, rng: np.random.Generator, folder):
    """``build_environment(name, horizon, rng)``, an environment that reads a user's file
    (:data:`~dponline.environments.own_data.PATH_OPTIONS`) given one written in ``folder``: a
    (T, 4) loss matrix, and (T, 3, 4) advice for ``bandit_losses``."""
    from pathlib import Path

    from dponline.environments.catalogue import build_environment
    from dponline.environments.expert_advice import random_advice
    from dponline.environments.own_data import PATH_OPTIONS

    options = {}
    if name in PATH_OPTIONS:
        folder = Path(folder)
        data = np.random.default_rng(0).random((horizon, 4))
        np.save(folder / "losses.npy", data)
        options["path"] = str(folder / "losses.npy")
        if name == "bandit_losses":
            np.save(folder / "advice.npy", random_advice(horizon, 3, 4, seed=1))
            options["advice"] = str(folder / "advice.npy")
    return build_environment(name, horizon, rng, **options)
