"""The round loop: the one place where a learner plays an environment's rounds, for the runner
(:mod:`dponline.experiments.runner`, and through it the side-by-side comparison), the learner
battery (:func:`dponline.checks.play`) and the privacy audit
(:mod:`dponline.experiments.learner_audit`).

Round t (0-indexed) is: the context, where the environment reveals one (contextual bandits, 004
Section 4: the learner observes ``ContextFeedback(env.context(t))`` before it acts); the action
(``learner.act()``); the environment's round (``env.round(t, action)``: the feedback and each
replica's loss); the feedback (``learner.observe(feedback)``).

:func:`play` plays the rounds of a ``range`` and, as asked:

* returns what the learner released each round: a copy of its action, or ``release(learner)``
  after the round's feedback (the battery, the audit);
* records into a :class:`Tally` (the runner): each replica's cumulative loss after the rounds
  it records and, if asked, how many times its decision changed;
* calls ``checkpoint(t)`` after every ``checkpoint_every``-th round but the last (the runner
  saves the learner, the environment and the tally there; resuming plays the remaining rounds
  into the restored tally);
* with ``blocks``, plays an oblivious linear stream
  (:class:`~dponline.environments.base.ObliviousLinearLosses`) a block of rounds at a time
  when the learner can (:class:`~dponline.protocol.BlockPlayer`): blocks of at most
  :data:`BLOCK_FLOATS` decisions, ending at every ``checkpoint_every``-th round (whether a
  checkpoint is saved there or not). A block's decisions have the distribution of its rounds
  played one by one, and are the same numbers where the learner draws its noise in the same
  order either way;
* with ``blocks``, plays a stochastic K-armed environment (``StochasticArms``: mean rewards
  and sums of fresh rewards) a stretch of rounds at a time when the learner can
  (``StochasticArmsPlayer``: it jumps whole commitments, drawing each one's reward sum at
  once); a stretch ends at the next recorded round or checkpoint. The tally gets the exact
  expected loss of the arms played, as ``env.round`` reports it round by round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dponline.environments.base import ObliviousLinearLosses
from dponline.protocol import (
    BlockPlayer,
    ContextFeedback,
    StochasticArms,
    StochasticArmsPlayer,
)

__all__ = ["BLOCK_FLOATS", "Tally", "block_rounds", "play"]

#: floats of decisions one block of the fast path may hold (8 MiB)
BLOCK_FLOATS = 2**20


def block_rounds(width: int) -> int:
    """Rounds per block of the fast path: the largest power of two whose (rounds, width)
    decisions fit :data:`BLOCK_FLOATS` (powers of two keep the trees' blocks aligned)."""
    rounds = 1
    while 2 * rounds * width <= BLOCK_FLOATS:
        rounds *= 2
    return rounds


@dataclass
class Tally:
    """What the runner records of a pass, for ``replicas`` replicas.

    ``cumulative``: each replica's loss so far. After round t (1-based) it is recorded
    (``recorded_t``, ``recorded_loss``) when t is a multiple of ``record_every``, the ``last``
    round or one of ``rounds``. With ``switches`` (not ``None``), it also counts for each
    replica the rounds, from the second on, whose decision differs from the one before
    (``previous``), recorded at the same rounds (``recorded_switches``).
    """

    cumulative: np.ndarray
    record_every: int
    last: int
    rounds: frozenset[int] = frozenset()
    recorded_t: list[int] = field(default_factory=list)
    recorded_loss: list[np.ndarray] = field(default_factory=list)
    switches: np.ndarray | None = None
    recorded_switches: list[np.ndarray] = field(default_factory=list)
    previous: np.ndarray | None = None

    @classmethod
    def start(
        cls,
        replicas: int,
        *,
        last: int,
        record_every: int = 1,
        rounds: Iterable[int] = (),
        switches: bool = False,
    ) -> Tally:
        """An empty tally before the first round of a ``last``-round pass."""
        for name, value in (("replicas", replicas), ("last", last), ("record_every", record_every)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        chosen = frozenset(int(r) for r in rounds)
        outside = sorted(r for r in chosen if not 1 <= r <= last)
        if outside:
            raise ValueError(f"rounds to record must lie in [1, {last}], got {outside}")
        return cls(
            np.zeros(replicas),
            int(record_every),
            int(last),
            chosen,
            switches=np.zeros(replicas) if switches else None,
        )

    @property
    def replicas(self) -> int:
        return int(self.cumulative.shape[0])

    def loss_table(self) -> np.ndarray:
        """The recorded cumulative losses, shape (recorded rounds, replicas)."""
        return np.array(self.recorded_loss, dtype=float).reshape(
            len(self.recorded_t), self.replicas
        )

    def switch_table(self) -> np.ndarray | None:
        """The recorded switch counts, shape (recorded rounds, replicas); ``None`` when the
        tally does not count switches."""
        if self.switches is None:
            return None
        shape = (len(self.recorded_t), self.replicas)
        return np.array(self.recorded_switches, dtype=float).reshape(shape)

    def state(self) -> dict[str, Any]:
        """Everything needed to go on recording (for a checkpoint)."""
        out: dict[str, Any] = {
            "cumulative": self.cumulative,
            "recorded_t": np.array(self.recorded_t, dtype=np.int64),
            "recorded_loss": self.loss_table(),
        }
        if self.switches is not None:
            out["switches"] = self.switches
            out["recorded_switches"] = self.switch_table()
            out["previous"] = self.previous
        return out

    def load_state(self, state: dict[str, Any]) -> None:
        """Go on from :meth:`state` (a checkpoint of a pass recorded the same way)."""
        counting = self.switches is not None
        if counting != ("switches" in state):
            raise ValueError(
                "the saved tally "
                + ("does not count" if counting else "counts")
                + " switches, this pass "
                + ("does" if counting else "does not")
            )
        r = self.replicas
        cumulative = np.array(state["cumulative"], dtype=float)
        recorded_t = [int(t) for t in state["recorded_t"]]
        table = (len(recorded_t), r)
        recorded_loss = np.array(state["recorded_loss"], dtype=float)
        if cumulative.shape != (r,) or recorded_loss.shape != table:
            raise ValueError(
                f"the saved tally is of another shape (cumulative {cumulative.shape}, recorded "
                f"losses {recorded_loss.shape}; this pass: ({r},) and {table})"
            )
        if counting:
            switches = np.array(state["switches"], dtype=float)
            recorded_switches = np.array(state["recorded_switches"], dtype=float)
            if switches.shape != (r,) or recorded_switches.shape != table:
                raise ValueError("the saved tally's switch counts are of another shape")
            previous = state["previous"]
            self.switches, self.recorded_switches = switches, list(recorded_switches)
            self.previous = None if previous is None else np.array(previous)
        self.cumulative, self.recorded_t = cumulative, recorded_t
        self.recorded_loss = list(recorded_loss)


def play(
    env: Any,
    learner: Any,
    rounds: range,
    release: Callable[[Any], np.ndarray] | None = None,
    *,
    keep: bool = True,
    tally: Tally | None = None,
    blocks: bool = False,
    checkpoint_every: int | None = None,
    checkpoint: Callable[[int], None] | None = None,
    who: str = "the learner",
) -> list[np.ndarray]:
    """Play ``rounds`` (consecutive, 0-indexed) of ``env`` with ``learner`` (module docstring).

    Returns, with ``keep``, a copy of each round's action, or of ``release(learner)`` after the
    round's feedback (else an empty list). ``tally``: record cumulative losses (and switches)
    into it; the first action must then have the tally's replicas along its first axis.
    ``blocks``: play blocks of rounds where the environment and the learner allow it (not with
    ``release``). ``checkpoint(t)`` is called after round t (1-based count of rounds played)
    when ``checkpoint_every`` divides t and rounds remain, with the tally up to date. A block or
    stretch ends at those rounds whether or not ``checkpoint`` is given, so a run's numbers do
    not depend on whether it saves checkpoints (only on ``checkpoint_every``). ``who`` names
    the learner in errors.
    """
    if rounds.step != 1:
        raise ValueError(f"rounds must be consecutive (step 1), got {rounds!r}")
    every = 0
    if checkpoint is not None or checkpoint_every is not None:
        if (
            isinstance(checkpoint_every, bool)
            or not isinstance(checkpoint_every, (int, np.integer))
            or checkpoint_every < 1
        ):
            raise ValueError(
                f"checkpoint_every must be a positive integer, got {checkpoint_every!r}"
            )
        every = int(checkpoint_every)
    if (
        blocks
        and release is None
        and isinstance(env, ObliviousLinearLosses)
        and isinstance(learner, BlockPlayer)
    ):
        return _play_blocks(env, learner, rounds, keep, tally, every, checkpoint, who)
    if (
        blocks
        and release is None
        and not keep
        and (tally is None or tally.switches is None)
        and isinstance(env, StochasticArms)
        and env.rewards_in_unit_interval is True  # sums cannot show a reward outside [0, 1]
        and isinstance(learner, StochasticArmsPlayer)
    ):
        _play_stretches(env, learner, rounds, tally, every, checkpoint)
        return []
    return _play_steps(env, learner, rounds, release, keep, tally, every, checkpoint, who)


def _play_steps(
    env: Any,
    learner: Any,
    rounds: range,
    release: Callable[[Any], np.ndarray] | None,
    keep: bool,
    tally: Tally | None,
    every: int,
    checkpoint: Callable[[int], None] | None,
    who: str,
) -> list[np.ndarray]:
    """One round at a time; the tally's fields live in locals (the runner's hot loop)."""
    out: list[np.ndarray] = []
    start, stop = rounds.start, rounds.stop
    reveals_context = env.reveals_context
    keep_action = keep and release is None
    keep_release = keep and release is not None
    recording = tally is not None
    counting = False
    replicas = record_every = last = 0
    cumulative = switches = previous = None
    recorded_t: list[int] = []
    recorded_loss: list[np.ndarray] = []
    recorded_switches: list[np.ndarray] = []
    extra: frozenset[int] = frozenset()
    if tally is not None:
        replicas = tally.replicas
        cumulative, switches, previous = tally.cumulative, tally.switches, tally.previous
        recorded_t, recorded_loss = tally.recorded_t, tally.recorded_loss
        recorded_switches = tally.recorded_switches
        record_every, last, extra = tally.record_every, tally.last, tally.rounds
        counting = switches is not None
    t = start
    while t < stop:
        if reveals_context:
            learner.observe(ContextFeedback(env.context(t)))
        action = learner.act()
        if keep_action:
            out.append(np.array(action, copy=True))
        if recording and t == start and np.shape(action)[:1] != (replicas,):
            raise ValueError(
                f"{who} played actions of shape {np.shape(action)}; expected {replicas} "
                "replicas first"
            )
        if counting:
            now = np.array(action, copy=True).reshape(replicas, -1)
            if previous is not None:
                switches = switches + np.any(now != previous, axis=1)
            previous = now
        feedback, loss = env.round(t, action)
        learner.observe(feedback)
        if keep_release:
            out.append(np.array(release(learner), copy=True))  # type: ignore[misc]
        t += 1
        if recording:
            cumulative = cumulative + loss
            if t % record_every == 0 or t == last or t in extra:
                recorded_t.append(t)
                recorded_loss.append(cumulative.copy())
                if counting:
                    recorded_switches.append(switches.copy())
        if checkpoint is not None and every and t % every == 0 and t < stop:
            if tally is not None:
                tally.cumulative, tally.switches, tally.previous = cumulative, switches, previous
            checkpoint(t)
    if tally is not None:
        tally.cumulative, tally.switches, tally.previous = cumulative, switches, previous
    return out


def _play_blocks(
    env: Any,
    learner: Any,
    rounds: range,
    keep: bool,
    tally: Tally | None,
    every: int,
    checkpoint: Callable[[int], None] | None,
    who: str,
) -> list[np.ndarray]:
    """Blocks of rounds through ``learner.play_block`` (module docstring)."""
    out: list[np.ndarray] = []
    start, stop = rounds.start, rounds.stop
    replicas = tally.replicas if tally is not None else int(learner.replicas)
    block = block_rounds(replicas * int(env.dim))
    t = start
    while t < stop:
        end = min(stop, t + block)
        if every:
            end = min(end, (t // every + 1) * every)  # a checkpoint ends a block
        actions = learner.play_block(env.loss_vectors(t, end))
        if t == start and actions.shape[1:2] != (replicas,):
            raise ValueError(
                f"{who} played blocks of shape {actions.shape}; expected {replicas} replicas second"
            )
        if keep:
            out.extend(np.array(actions, copy=True))
        if tally is not None:
            _tally_block(tally, env, t, actions)
        t = end
        if checkpoint is not None and every and t % every == 0 and t < stop:
            checkpoint(t)
    return out


def _tally_block(tally: Tally, env: Any, t: int, actions: np.ndarray) -> None:
    """Record rounds t+1 .. t+b (1-based) of a block of ``actions`` (b, replicas, dim)."""
    b = actions.shape[0]
    running = tally.cumulative + np.cumsum(env.block_losses(t, actions), axis=0)
    counts = None
    if tally.switches is not None:
        flat = actions.reshape(b, tally.replicas, -1)
        changed = np.zeros((b, tally.replicas))
        if tally.previous is not None:
            changed[0] = np.any(flat[0] != tally.previous, axis=1)
        changed[1:] = np.any(flat[1:] != flat[:-1], axis=2)
        counts = tally.switches + np.cumsum(changed, axis=0)
        tally.switches, tally.previous = counts[-1].copy(), flat[-1].copy()
    after = np.arange(t + 1, t + b + 1)  # the block's rounds, 1-based
    recorded = (after % tally.record_every == 0) | (after == tally.last)
    if tally.rounds:
        recorded |= np.isin(after, list(tally.rounds))
    rows = np.flatnonzero(recorded)
    tally.recorded_t.extend(int(r) for r in after[rows])
    tally.recorded_loss.extend(running[rows])
    if counts is not None:
        tally.recorded_switches.extend(counts[rows])
    tally.cumulative = running[-1]


def _play_stretches(
    env: Any,
    learner: Any,
    rounds: range,
    tally: Tally | None,
    every: int,
    checkpoint: Callable[[int], None] | None,
) -> None:
    """Stretches of rounds through ``learner.play_stochastic`` (module docstring): each ends
    at the next round the tally records or the next checkpoint."""
    start, stop = rounds.start, rounds.stop
    expected_loss = 1.0 - np.asarray(env.means, dtype=float)
    t = start
    while t < stop:
        end = stop
        if tally is not None:
            end = min(end, (t // tally.record_every + 1) * tally.record_every)
            if tally.last > t:
                end = min(end, tally.last)
            later = [r for r in tally.rounds if r > t]
            if later:
                end = min(end, min(later))
        if every:
            end = min(end, (t // every + 1) * every)
        played = learner.play_stochastic(env, end - t)
        t = end
        if tally is not None:
            tally.cumulative = tally.cumulative + played.pulls @ expected_loss
            if t % tally.record_every == 0 or t == tally.last or t in tally.rounds:
                tally.recorded_t.append(t)
                tally.recorded_loss.append(tally.cumulative.copy())
        if checkpoint is not None and every and t % every == 0 and t < stop:
            checkpoint(t)
