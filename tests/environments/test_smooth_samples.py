"""The samples view of a smooth convex stream: the same data as the loss-function view from the
same seed, each round's sample and loss, the same regret, and the bounds it declares."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.domains.lp_ball import LpBall
from dponline.environments.base import Environment
from dponline.environments.smooth_convex import SmoothConvexEnvironment, smooth_convex
from dponline.environments.smooth_samples import SmoothConvexSamples, smooth_convex_samples
from dponline.protocol import FeedbackKind, SampleFeedback


@pytest.mark.parametrize("kind", ["stochastic", "adversarial"])
def test_the_samples_are_the_stream_s_rounds_scored_by_its_losses(kind):
    view = smooth_convex_samples(40, np.random.default_rng(3), dim=3, losses="squared", kind=kind)
    stream = smooth_convex(40, np.random.default_rng(3), dim=3, losses="squared", kind=kind)
    assert isinstance(view, Environment) and view.feedback_kind is FeedbackKind.SAMPLE
    np.testing.assert_array_equal(view.stream.v, stream.v)
    np.testing.assert_array_equal(view.stream.y, stream.y)
    x = np.random.default_rng(4).standard_normal((2, 3)) / 3
    for t in (0, 17, 39):
        feedback, loss = view.round(t, x)
        assert isinstance(feedback, SampleFeedback)
        np.testing.assert_array_equal(feedback.x, stream.v[t])
        assert feedback.y == stream.y[t]
        # the squared link's loss (<v, x> - y)^2 / 2, by hand
        np.testing.assert_allclose(loss, (x @ stream.v[t] - stream.y[t]) ** 2 / 2, rtol=1e-14)
        np.testing.assert_array_equal(loss, stream.round(t, x)[1])
    rounds = np.array([5, 40])
    np.testing.assert_array_equal(
        view.regret(np.zeros((1, 2)), rounds), stream.regret(np.zeros((1, 2)), rounds)
    )
    assert view.name == stream.name + ":samples" and view.horizon == 40 and view.dim == 3


def test_its_declared_bounds_hold_every_sample():
    view = smooth_convex_samples(50, np.random.default_rng(0), dim=4, losses="squared")
    assert view.p == 2.0 and view.y_bound == 1.0 and view.state_dict() == {}
    assert view.x_bound(2.0) == view.x_bound(np.inf) == 1.0
    assert view.x_bound(1.0) == pytest.approx(2.0)  # sup ||v||_1 over the unit l2 ball: sqrt(4)
    for q in (1.0, 1.5, 2.0, 3.0, np.inf):
        norms = LpBall(4, q).norm(view.stream.v)
        assert norms.max() <= view.x_bound(q) * (1 + 1e-12)
    assert np.abs(view.stream.y).max() <= view.y_bound


def test_streams_it_cannot_speak_for_are_refused():
    v = np.array([[0.6, 0.8], [1.0, 0.0]])
    squared = smooth_convex(2, np.random.default_rng(0), dim=2, losses="squared").link
    with pytest.raises(ValueError, match="unit Euclidean ball"):
        SmoothConvexSamples(SmoothConvexEnvironment(LpBall(2, 2.0, 2.0), squared, v, np.zeros(2)))
    with pytest.raises(ValueError, match=r"curvature 0\.5"):
        SmoothConvexSamples(
            SmoothConvexEnvironment(LpBall(2, 2.0), squared, v, np.zeros(2), curvature=0.5)
        )
    with pytest.raises(ValueError, match=r"\|y_t\| <= 1.0, got 1.5"):
        SmoothConvexSamples(
            SmoothConvexEnvironment(LpBall(2, 2.0), squared, v, np.array([0.0, 1.5]))
        )
    with pytest.raises(ValueError, match=r"\|\|v_t\|\|_2 <= 1, got 2.0"):
        SmoothConvexSamples(SmoothConvexEnvironment(LpBall(2, 2.0), squared, 2 * v, np.zeros(2)))
    with pytest.raises(TypeError, match="SmoothConvexEnvironment"):
        SmoothConvexSamples(v)  # type: ignore[arg-type]
