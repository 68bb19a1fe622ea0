"""ContinualCounter.scale_noise: a counter whose noise is scaled before its first step releases
exactly what a counter built with the scaled noise releases from the same seed, including the
noise some mechanisms draw ahead (the square-root factorisation's correlated noise, the padded
tree's initial release). The audit's "tenth of the noise" goes through this handle."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.continual.registry import get_mechanism
from dponline.privacy.noise import GaussianNoise, LaplaceNoise


@pytest.mark.parametrize(
    ("mechanism", "noise"),
    [
        ("binary_tree", LaplaceNoise(2.0)),
        ("padded_tree", GaussianNoise(2.0)),
        ("honaker", LaplaceNoise(2.0)),
        ("sqrt_factorization", GaussianNoise(2.0)),
        ("blt", GaussianNoise(2.0)),
    ],
)
def test_scaled_counter_equals_counter_built_with_scaled_noise(mechanism, noise):
    cls = get_mechanism(mechanism)
    scaled = cls(16, 3, noise, replicas=4, rng=7)
    scaled.scale_noise(0.1)
    built = cls(16, 3, noise.scaled(0.1), replicas=4, rng=7)
    assert scaled.noise == built.noise
    np.testing.assert_allclose(scaled.initial_release(), built.initial_release(), rtol=1e-12)
    xs = np.random.default_rng(0).uniform(-1, 1, size=(16, 3))
    for x in xs:
        np.testing.assert_allclose(scaled.step(x), built.step(x), rtol=1e-12, atol=1e-12)


def test_scale_noise_after_the_first_step_is_refused():
    counter = get_mechanism("sqrt_factorization")(8, 2, GaussianNoise(1.0), rng=0)
    counter.step(np.zeros(2))
    with pytest.raises(ValueError, match="before the first step"):
        counter.scale_noise(0.5)
    with pytest.raises(ValueError, match="finite positive"):
        get_mechanism("binary_tree")(8, 2, GaussianNoise(1.0), rng=0).scale_noise(0.0)
