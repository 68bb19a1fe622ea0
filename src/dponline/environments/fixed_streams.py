"""Fixed input streams: one row of inputs per round, written down before the first round and
handed to the learner as the feedback of its kind. The privacy audit
(:mod:`dponline.experiments.learner_audit`) plays a learner on two of them that differ in one
round (:func:`~dponline.experiments.learner_audit.neighbouring_streams`) through the round loop
(:func:`dponline.experiments.rounds.play`) and compares what it released.

One class per feedback kind, over the row layouts of :class:`~dponline.registry.AuditCase`:

* :class:`LossVectorStream`: rows l_t, shape (T, dim); round t shows l_t and charges each
  replica <x, l_t>;
* :class:`BanditStream`: rows l_t, shape (T, dim); round t shows and charges the loss of the
  action played: l_t at the arm played, or <x, l_t> for a point;
* :class:`SampleStream`: rows (x_t, y_t), shape (T, dim + 1); round t shows the sample and
  charges the squared loss (<x_t, theta> - y_t)^2 of the iterate theta played (Han et al.,
  Section 2);
* :class:`LossFunctionStream`: rows (v_t, y_t), shape (T, dim + 1), and a loss maker (an
  environment's ``loss_of``); round t shows the loss f_t = ``loss_of(v_t, y_t)`` and charges
  f_t(x);
* :class:`ContextualRewardStream`: rows (x_t, r_t), shape (T, dim + arms); the context x_t
  before the learner acts, then the reward r_t[a] of the arm a played, charged the round's
  regret max(r_t) - r_t[a].

They are inputs to play, not experiments to score: without the learner's decision set there is
no best fixed decision, so they implement the round loop's part of the environment protocol
(:class:`~dponline.environments.base.Rounds`), with the empty state of a stream fixed in
advance, and no ``regret``. :func:`fixed_stream` builds the one for a feedback kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.environments.oblivious import Stateless
from dponline.privacy.bounds import check_finite
from dponline.protocol import (
    BanditFeedback,
    FeedbackKind,
    LossFunctionFeedback,
    LossVectorFeedback,
    RewardFeedback,
    SampleFeedback,
    checked_count,
)

__all__ = [
    "BanditStream",
    "ContextualRewardStream",
    "FixedStream",
    "LossFunctionStream",
    "LossVectorStream",
    "SampleStream",
    "fixed_stream",
]


class FixedStream(Stateless):
    """Rows of inputs, one per round (module docstring). ``dim``: the learner's dimension,
    where a row splits into two parts (a sample's x and y, a context and the arms' rewards)."""

    feedback_kind: ClassVar[FeedbackKind]
    #: columns of a row beyond ``dim``: 0 (the row is a vector of ``dim``), 1 (a label), or
    #: None (any number: the arms' rewards)
    extra_columns: ClassVar[int | None] = 0

    def __init__(self, rows: Any, dim: int, *, name: str = "") -> None:
        self.dim = checked_count("dim", dim)
        self.name = name or type(self).__name__
        self.rows = check_finite(rows, f"rows of {self.name!r}")
        shape = self.rows.shape
        if self.extra_columns is None:  # dim + at least one more column
            fits, layout = len(shape) == 2 and shape[1] > self.dim, f"(T, {self.dim} + arms)"
        else:
            width = self.dim + self.extra_columns
            fits, layout = len(shape) == 2 and shape[1] == width, f"(T, {width})"
        if not (fits and shape[0] >= 1):
            raise ValueError(f"rows of {self.name!r} must have shape {layout}, got {shape}")

    @property
    def horizon(self) -> int:
        return int(self.rows.shape[0])


class LossVectorStream(FixedStream):
    """Full information: round t shows the row l_t and charges each replica <x, l_t>."""

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR

    def round(self, t: int, action: np.ndarray) -> tuple[LossVectorFeedback, np.ndarray]:
        row = self.rows[t]
        return LossVectorFeedback(row), np.asarray(action) @ row


class BanditStream(FixedStream):
    """Bandit feedback on the rows l_t: the loss l_t[a] of the arm a played (integer actions),
    or <x, l_t> of the point x played, shown and charged."""

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.BANDIT

    def round(self, t: int, action: np.ndarray) -> tuple[BanditFeedback, np.ndarray]:
        row, action = self.rows[t], np.asarray(action)
        value = row[action] if np.issubdtype(action.dtype, np.integer) else action @ row
        return BanditFeedback(value), value


class SampleStream(FixedStream):
    """Samples (x_t, y_t): round t shows the sample and charges each replica's iterate theta
    the squared loss (<x_t, theta> - y_t)^2 (Han et al., Section 2)."""

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.SAMPLE
    extra_columns: ClassVar[int | None] = 1

    def round(self, t: int, action: np.ndarray) -> tuple[SampleFeedback, np.ndarray]:
        x, y = self.rows[t, : self.dim], self.rows[t, self.dim]
        return SampleFeedback(x, y), (np.asarray(action) @ x - y) ** 2


class LossFunctionStream(FixedStream):
    """Full information with loss functions: round t shows f_t = ``make_loss(v_t, y_t)`` (an
    environment's ``loss_of``, a GLM loss f(<v_t, x>, y_t) say) and charges f_t(x)."""

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_FUNCTION
    extra_columns: ClassVar[int | None] = 1

    def __init__(
        self, rows: Any, dim: int, make_loss: Callable[[np.ndarray, float], Any], *, name: str = ""
    ) -> None:
        if not callable(make_loss):
            raise TypeError(f"make_loss must be callable (v, y) -> loss, got {make_loss!r}")
        super().__init__(rows, dim, name=name)
        self.make_loss = make_loss

    def round(self, t: int, action: np.ndarray) -> tuple[LossFunctionFeedback, np.ndarray]:
        loss = self.make_loss(self.rows[t, : self.dim], float(self.rows[t, self.dim]))
        feedback = LossFunctionFeedback(loss, getattr(loss, "gradient", None), loss)
        return feedback, np.asarray(loss(action))


class ContextualRewardStream(FixedStream):
    """Contextual bandit rows (x_t, r_t): the context x_t before the learner acts
    (:meth:`context`), then the reward r_t[a] of the arm a each replica played, charged the
    round's regret max(r_t) - r_t[a]."""

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.CONTEXTUAL_BANDIT
    reveals_context: ClassVar[bool] = True  # type: ignore[misc]
    extra_columns: ClassVar[int | None] = None

    @property
    def arms(self) -> int:
        return int(self.rows.shape[1] - self.dim)

    def context(self, t: int) -> np.ndarray:
        """Round t's context x_t, shape (dim,)."""
        return self.rows[t, : self.dim]

    def round(self, t: int, action: np.ndarray) -> tuple[RewardFeedback, np.ndarray]:
        rewards = self.rows[t, self.dim :]
        reward = rewards[action]
        return RewardFeedback(reward), rewards.max() - reward


_STREAMS: dict[FeedbackKind, type[FixedStream]] = {
    s.feedback_kind: s
    for s in (
        LossVectorStream,
        BanditStream,
        SampleStream,
        LossFunctionStream,
        ContextualRewardStream,
    )
}


def fixed_stream(
    kind: FeedbackKind,
    rows: Any,
    dim: int,
    *,
    make_loss: Callable[[np.ndarray, float], Any] | None = None,
    name: str = "",
) -> FixedStream:
    """The fixed stream of ``rows`` that gives feedback of ``kind`` (module docstring);
    ``make_loss(v, y)`` makes a loss-function stream's losses."""
    if kind not in _STREAMS:
        raise ValueError(f"no fixed stream gives feedback {kind.value!r}")
    if kind is FeedbackKind.LOSS_FUNCTION:
        if make_loss is None:
            raise ValueError("a stream of loss functions needs make_loss(v, y), the environment's")
        return LossFunctionStream(rows, dim, make_loss, name=name)
    return _STREAMS[kind](rows, dim, name=name)
