"""Fixed input streams (the privacy audit's neighbouring streams as environments): each kind's
feedback and loss by hand, the round loop plays them, and malformed rows are refused."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.environments.base import Environment, Rounds
from dponline.environments.fixed_streams import (
    BanditStream,
    ContextualRewardStream,
    LossFunctionStream,
    LossVectorStream,
    SampleStream,
    fixed_stream,
)
from dponline.experiments.rounds import play
from dponline.protocol import (
    BanditFeedback,
    ContextFeedback,
    FeedbackKind,
    LossFunctionFeedback,
    LossVectorFeedback,
    RewardFeedback,
    SampleFeedback,
)

ROWS = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
X = np.array([[1.0, 0.0], [0.5, -1.0]])  # two replicas' points in R^2


def test_loss_vectors_show_the_row_and_charge_the_inner_product():
    env = fixed_stream(FeedbackKind.LOSS_VECTOR, ROWS, 3)
    feedback, loss = env.round(1, np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]))
    assert isinstance(env, LossVectorStream) and isinstance(feedback, LossVectorFeedback)
    np.testing.assert_array_equal(feedback.loss, [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(loss, [4.0, 5.5])


def test_bandits_show_the_loss_of_the_arm_or_the_point_played():
    env = fixed_stream(FeedbackKind.BANDIT, ROWS, 3)
    feedback, loss = env.round(0, np.array([2, 0]))  # arms
    assert isinstance(env, BanditStream) and isinstance(feedback, BanditFeedback)
    np.testing.assert_array_equal(feedback.loss, [3.0, 1.0])
    np.testing.assert_array_equal(loss, [3.0, 1.0])
    feedback, loss = env.round(0, np.array([[1.0, 1.0, 0.0], [0.0, 0.0, -1.0]]))  # points
    np.testing.assert_array_equal(feedback.loss, [3.0, -3.0])
    np.testing.assert_array_equal(loss, [3.0, -3.0])


def test_samples_show_x_and_y_and_charge_the_squared_loss():
    env = fixed_stream(FeedbackKind.SAMPLE, ROWS, 2)
    feedback, loss = env.round(1, X)
    assert isinstance(env, SampleStream) and isinstance(feedback, SampleFeedback)
    np.testing.assert_array_equal(feedback.x, [4.0, 5.0])
    assert feedback.y == 6.0
    np.testing.assert_array_equal(loss, [(4.0 - 6.0) ** 2, (2.0 - 5.0 - 6.0) ** 2])


def test_loss_functions_are_the_environment_s_losses_of_the_rows():
    made = []

    def make_loss(v, y):  # f(x) = (<v, x> - y)^2, vectorised over replicas
        made.append((v.tolist(), y))

        def f(x):
            return (np.asarray(x) @ v - y) ** 2

        return f

    env = fixed_stream(FeedbackKind.LOSS_FUNCTION, ROWS, 2, make_loss=make_loss)
    feedback, loss = env.round(0, X)
    assert isinstance(env, LossFunctionStream) and isinstance(feedback, LossFunctionFeedback)
    assert made == [([1.0, 2.0], 3.0)] and isinstance(made[0][1], float)
    np.testing.assert_array_equal(loss, [(1.0 - 3.0) ** 2, (0.5 - 2.0 - 3.0) ** 2])
    np.testing.assert_array_equal(feedback.value(X), loss)


def test_contextual_streams_reveal_the_context_then_reward_the_arm_played():
    env = fixed_stream(FeedbackKind.CONTEXTUAL_BANDIT, ROWS, 1)  # context x_t, 2 arms
    assert isinstance(env, ContextualRewardStream) and env.reveals_context and env.arms == 2
    np.testing.assert_array_equal(env.context(1), [4.0])
    feedback, loss = env.round(1, np.array([0, 1]))
    assert isinstance(feedback, RewardFeedback)
    np.testing.assert_array_equal(feedback.reward, [5.0, 6.0])
    np.testing.assert_array_equal(loss, [1.0, 0.0])  # the round's regret against its best arm


def test_the_round_loop_plays_a_fixed_stream():
    """A learner that records its inputs: the context before each action, then the reward."""

    class Recorder:
        def __init__(self):
            self.seen = []

        def act(self):
            self.seen.append("act")
            return np.array([1, 0])

        def observe(self, feedback):
            if isinstance(feedback, ContextFeedback):
                self.seen.append(("context", feedback.context.tolist()))
            else:
                self.seen.append(("reward", feedback.reward.tolist()))

    env, learner = fixed_stream(FeedbackKind.CONTEXTUAL_BANDIT, ROWS, 1), Recorder()
    actions = play(env, learner, range(env.horizon))
    assert learner.seen == [
        ("context", [1.0]), "act", ("reward", [3.0, 2.0]),
        ("context", [4.0]), "act", ("reward", [6.0, 5.0]),
    ]  # fmt: skip
    assert [a.tolist() for a in actions] == [[1, 0], [1, 0]]


def test_fixed_streams_are_played_not_scored():
    """They have the round loop's part of the protocol and an empty state, and no regret (no
    decision set to measure it against)."""
    for kind, dim in (
        (FeedbackKind.LOSS_VECTOR, 3),
        (FeedbackKind.SAMPLE, 2),
        (FeedbackKind.CONTEXTUAL_BANDIT, 2),
    ):
        env = fixed_stream(kind, ROWS, dim)
        assert isinstance(env, Rounds) and not isinstance(env, Environment)
        assert env.horizon == 2 and env.state_dict() == {}
        env.load_state_dict({})
        with pytest.raises(ValueError, match="no state"):
            env.load_state_dict({"t": 1})


def test_malformed_streams_are_refused():
    with pytest.raises(ValueError, match=r"must have shape \(T, 2\), got \(2, 3\)"):
        fixed_stream(FeedbackKind.LOSS_VECTOR, ROWS, 2)
    with pytest.raises(ValueError, match=r"must have shape \(T, 3\), got \(3,\)"):
        fixed_stream(FeedbackKind.SAMPLE, ROWS[0], 2)
    with pytest.raises(ValueError, match=r"must have shape \(T, 3 \+ arms\), got \(2, 3\)"):
        fixed_stream(FeedbackKind.CONTEXTUAL_BANDIT, ROWS, 3)
    with pytest.raises(ValueError, match="nan"):
        fixed_stream(FeedbackKind.LOSS_VECTOR, [[np.nan, 1.0]], 2)
    with pytest.raises(ValueError, match="needs make_loss"):
        fixed_stream(FeedbackKind.LOSS_FUNCTION, ROWS, 2)
    with pytest.raises(TypeError, match="make_loss must be callable"):
        LossFunctionStream(ROWS, 2, make_loss=3.0)  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError), match="dim"):
        fixed_stream(FeedbackKind.BANDIT, ROWS, 0)
