"""SmoothLoss's quadratic part: the curvature matrix is checked for symmetry relative to its
size and then symmetrised, so that the value, the gradient and the Hessian describe one convex
quadratic (a review found an asymmetry of 1e-5 of the entries accepted, with a gradient that
disagreed with the value and an indefinite quadratic reported convex)."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.losses.smooth import SmoothLoss


@pytest.mark.parametrize("scale", [1.0, 1e5])
def test_an_asymmetric_curvature_is_refused_relative_to_its_size(scale):
    a = scale * np.array([[1.0, 1.0 + 1e-5], [1.0, 1.0]])
    with pytest.raises(ValueError, match="symmetric"):
        SmoothLoss.quadratic(a, np.zeros(2))
    # an indefinite symmetric part is refused as well once symmetric (the old check read only
    # the lower triangle of [[1, 1 + 1e-5], [1, 1]], which is PSD)
    with pytest.raises(ValueError, match="positive semi-definite"):
        SmoothLoss.quadratic(scale * np.array([[1.0, 2.0], [2.0, 1.0]]), np.zeros(2))


def test_rounding_level_asymmetry_is_accepted_and_symmetrised():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(4, 4))
    a = m.T @ m
    a[0, 1] += 1e-14 * np.abs(a).max()  # rounding level
    loss = SmoothLoss.quadratic(a, np.zeros(4))
    sym = 0.5 * (a + a.T)
    x = rng.normal(size=(3, 4))
    np.testing.assert_allclose(loss.value(x), 0.5 * np.einsum("ri,ij,rj->r", x, sym, x))
    # the gradient is the value's: central differences
    h = 1e-6
    fd = np.stack(
        [(loss.value(x + h * e) - loss.value(x - h * e)) / (2 * h) for e in np.eye(4)], axis=-1
    )
    np.testing.assert_allclose(loss.gradient(x), fd, rtol=1e-6, atol=1e-6)
