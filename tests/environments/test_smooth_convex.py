"""The synthetic smooth convex streams of :mod:`dponline.environments.smooth_convex`."""

import numpy as np
import pytest

from dponline.environments.smooth_convex import smooth_convex


def test_adversarial_stream_flips_the_direction_on_doubling_blocks():
    # noise 0: y_t = <w_t, v_t> / 2 exactly, so y_t / <w, v_t> reads the sign of w_t
    env = smooth_convex(
        40, np.random.default_rng(3), losses="squared", noise=0.0, kind="adversarial"
    )
    ref = smooth_convex(40, np.random.default_rng(3), losses="squared", noise=0.0)
    ratio = env.y / ref.y
    # 1-based rounds: 1 -> +, 2-3 -> -, 4-7 -> +, 8-15 -> -, 16-31 -> +, 32-40 -> -
    expected = np.array([1] + [-1] * 2 + [1] * 4 + [-1] * 8 + [1] * 16 + [-1] * 9, dtype=float)
    np.testing.assert_allclose(ratio, expected)
    np.testing.assert_array_equal(env.v, ref.v)
    assert env.name.endswith(":adversarial")


def test_stream_kind_is_checked():
    with pytest.raises(ValueError, match="kind must be"):
        smooth_convex(10, np.random.default_rng(0), kind="worst")


def test_digits_pooling_averages_blocks_of_pixels():
    from dponline.data import load_digits
    from dponline.environments.smooth_convex import digits_logistic

    raw = digits_logistic(5, pool=8)
    pooled = digits_logistic(5, pool=4)
    assert raw.dim == 64 and pooled.dim == 16
    pixels = load_digits()[0][:5].astype(float).reshape(5, 8, 8)
    # feature (1, 2) of the 4 x 4 pooling: the mean of pixels rows 2..3, columns 4..5, then
    # the one scaling of the stream into the unit ball
    by_hand = pixels[:, 2:4, 4:6].mean(axis=(1, 2))
    assert by_hand.min() > 0
    ratio = pooled.v[:, 1 * 4 + 2] / by_hand
    np.testing.assert_allclose(ratio, ratio[0])  # one scale for the whole stream
    np.testing.assert_array_equal(raw.y, pooled.y)
    assert np.linalg.norm(pooled.v, axis=1).max() <= 1.0 + 1e-12
    with pytest.raises(ValueError, match="pool must be"):
        digits_logistic(5, pool=3)


@pytest.mark.parametrize("horizon", [0, -3])
def test_a_horizon_below_one_is_refused_naming_it(horizon):
    # horizon 0 used to build an empty stream that failed later with an IndexError
    with pytest.raises(ValueError, match=rf"^horizon must be a positive integer, got {horizon}$"):
        smooth_convex(horizon, np.random.default_rng(0))


def test_an_empty_stream_is_refused_naming_the_horizon():
    from dponline.domains.lp_ball import LpBall
    from dponline.environments.smooth_convex import SmoothConvexEnvironment
    from dponline.losses import link_by_name

    with pytest.raises(ValueError, match=r"^horizon must be a positive integer, got 0 \(v and y"):
        SmoothConvexEnvironment(
            LpBall(2, 2.0, 1.0), link_by_name("logistic"), np.zeros((0, 2)), np.zeros(0)
        )
