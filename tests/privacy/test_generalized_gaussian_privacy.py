"""The generalized Gaussian mechanism's guarantee for r != 2, checked by its privacy loss.

For an output z + x of noise z with density p(z) ~ exp(-||z||_r^2 / (2 sigma^2)), neighbours x
and x + Delta have privacy loss L(z) = (||z - Delta||_r^2 - ||z||_r^2) / (2 sigma^2) at z ~ p,
and the mechanism is (epsilon, delta)-DP for this pair exactly when
E[(1 - e^(epsilon - L))_+] <= delta (the hockey-stick divergence; the reverse pair has the same
law by z -> -z). The tests draw z with the library's sampler (whose law is tested against the
density in test_generalized_gaussian.py), at the noise Lemma 2.7 calibrates for the l_q
regularity of the space (Han et al.; Bassily, Guzman & Nandi 2021), for the two extreme
sensitivity vectors of the l_q unit ball (all coordinates equal, and one coordinate). The r = 2
case is the Gaussian, checked exactly elsewhere; here the smooth norm's r is about ln d.

Each "not refuted" assertion adds five standard errors to the estimate: a true delta(epsilon)
at the claim fails it with chance below 3e-7. For the flat vector (the calibration's worst case)
a tenth of the noise must be refuted (its estimate minus five standard errors above the claim),
so the test can fail; for one coordinate a tenth still keeps the claim (its l_r norm is far
below the l_q ball's worst case).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.privacy.generalized_gaussian import (
    GeneralizedGaussianNoise,
    lq_regularity,
    lr_norm,
)

EPSILON, DELTA = 1.0, 0.05  # a delta large enough to estimate by sampling


def _hockey_stick(noise: GeneralizedGaussianNoise, shift: np.ndarray, n: int, seed: int):
    """(estimate, standard error) of E[(1 - e^(epsilon - L))_+] over n draws."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(4):
        z = noise.sample(rng, (n // 4, shift.size))
        loss = (lr_norm(z - shift, noise.r) ** 2 - lr_norm(z, noise.r) ** 2) / (2 * noise.sigma**2)
        values.append(np.maximum(0.0, 1.0 - np.exp(EPSILON - loss)))
    v = np.concatenate(values)
    return float(v.mean()), float(v.std() / math.sqrt(v.size))


@pytest.mark.parametrize(("q", "d"), [(math.inf, 100), (4.0, 60)])
@pytest.mark.parametrize("shape", ["flat", "one coordinate"])
def test_lemma_2_7_noise_keeps_its_claim_and_a_tenth_of_it_does_not(q, d, shape):
    regularity = lq_regularity(q, d)
    assert regularity.r != 2  # the case the Gaussian checks do not cover
    noise = GeneralizedGaussianNoise.calibrated(1.0, EPSILON, DELTA, regularity)
    # the extreme points of the l_q unit ball (q >= 2): all coordinates d^(-1/q), or e_1
    shift = np.full(d, d ** (-1.0 / q)) if shape == "flat" else np.eye(d)[0]
    assert float(lr_norm(shift, q)) == pytest.approx(1.0)
    estimate, error = _hockey_stick(noise, shift, 100_000, seed=3)
    assert estimate + 5 * error <= DELTA
    if shape == "flat":  # the worst case of the calibration: a tenth of the noise breaks it
        weak = GeneralizedGaussianNoise(noise.sigma / 10, noise.r)
        estimate, error = _hockey_stick(weak, shift, 100_000, seed=4)
        assert estimate - 5 * error > DELTA
