"""Replay evaluation of contextual bandit learners on a uniformly logged bandit log (Li, Chu,
Langford & Wang, "Unbiased offline evaluation of contextual-bandit-based news article
recommendation algorithms", WSDM 2011, Algorithm 1 "Policy_Evaluator").

The log's round i showed arm a_i, drawn uniformly from the K arms independently of everything
else, to a user with context x_i, and recorded the reward r_i. Replay walks the log in order and
at each round hands the learner the context (``ContextFeedback``) and asks for its arm
(``act``):

* if the arm equals a_i, the round is **kept**: the learner observes r_i (``RewardFeedback``)
  and moves to its next round;
* else the round is **dropped**: the learner observes nothing more, and the next logged round's
  context is handed to it as the context of the same learner round.

Li et al.'s Theorem 1: for users (contexts with their rewards) drawn i.i.d. and logging uniform
and independent of them (which the Open Bandit "random" log is: propensity 1/80 for every row;
that its impressions, in time order, are i.i.d. is the theorem's assumption), the kept rounds
are distributed as rounds of the learner played live on the same user population, so the mean
reward over the kept rounds estimates the learner's per-round reward (here its click rate).
Each round is kept with probability 1/K whatever the learner does (a_i is independent of its
choice), so over the draw of the log replay keeps Binomial(n, 1/K) of n logged rounds: about
125 of the Open Bandit sample's 10,000 with its 80 items. On the one log we have, a learner
that settles on one arm keeps about as many rounds as that arm has rows (96 to 160 per item).

**How the learners are driven.** A dropped round leaves the learner's state untouched: both
contextual learners of the catalogue accept a new context in place of an unrewarded one (a
context resets the round's context and action: ``DPGLMBandit._see``, ``UniformPlay.observe``)
and only a reward advances their round counter, their estimators and their privacy accounting;
their ``act`` reads no more than the released state and the current context. A learner's
replicas would choose different arms in the same logged round, whereas a reward is given to all
replicas at once; so replay runs one replica per learner (``replicas=1``) and repeats the run
with independent seeds. The learner is built for ``horizon`` rounds, the number of kept rounds
it may see; the walk stops when the learner reaches it or at the end of the log, whichever
comes first (the default horizon, :func:`replay_horizon`, is the mean plus four standard
deviations of the kept count: on the shipped log, 10,000 rounds over 80 items, a replay
reaches it before the end of the log with probability 6.8e-5).

**The interval.** A run's click rate is the mean of its kept rewards. Over S seeds we report
the mean of the runs' rates with the 95% Wilson score interval of one run of the mean kept
size n: the runs share the log and are identically distributed, so their mean varies no more
than one run does, and for a non-learning policy one run's rate is a mean of about n
independent Bernoulli rewards of the policy's click rate (Wilson's interval stays sensible at
rates near 0, where the normal one does not). For a learning policy the kept rewards'
means drift as it learns; the interval is then approximate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dponline.environments.open_bandit import (
    OpenBanditLog,
    expected_kept_rounds,
    open_bandit_log,
)
from dponline.protocol import ContextFeedback, FeedbackKind, RewardFeedback
from dponline.registry import (
    DEFAULT_EPSILON,
    NON_PRIVATE,
    LearnerEntry,
    build_learner,
    learners,
    resolved_epsilon,
)

__all__ = [
    "ReplayRun",
    "ReplayTarget",
    "replay",
    "replay_contextual_learners",
    "replay_horizon",
    "replay_learner",
    "replay_note",
    "replay_summary",
    "wilson_interval",
]

#: the l_1 radius of the GLM bandits' parameter set on the Open Bandit log: logit(0.0038) =
#: -5.57, so radius 6 lets the intercept alone reach the logged click rate (radius 1 would
#: keep every predicted rate above zeta(-1) = 0.27)
OPEN_BANDIT_RADIUS = 6.0


@dataclass(frozen=True)
class ReplayTarget:
    """What a learner's factory reads from its environment, for a replayed log: the context
    dimension, the arms, the horizon (kept rounds), the reward range, the GLM link and the
    parameter radius. The factories take no other environment attribute."""

    dim: int
    arms: int
    horizon: int
    reward_range: tuple[float, float] = (0.0, 1.0)
    link: str = "logistic"
    radius: float = OPEN_BANDIT_RADIUS
    reveals_context: bool = True
    feedback_kind: FeedbackKind = FeedbackKind.CONTEXTUAL_BANDIT
    name: str = "replayed log"


@dataclass(frozen=True)
class ReplayRun:
    """One replay: the logged rows read, the rows kept (indices into the log) and the
    rewards the learner observed on them."""

    label: str
    seed: int | None
    rows_read: int
    kept_rows: np.ndarray = field(repr=False)
    rewards: np.ndarray = field(repr=False)
    seconds: float = 0.0
    #: the learner's horizon (the most rounds it may keep; None: the whole log)
    horizon: int | None = None
    #: what the learner's noise proves (NaN for a non-private learner); delta often defaults
    #: to 1 / horizon, the kept rounds', so it belongs beside epsilon in every table
    epsilon: float = math.nan
    delta: float = math.nan

    @property
    def kept(self) -> int:
        return int(self.kept_rows.size)

    @property
    def clicks(self) -> float:
        return float(self.rewards.sum())

    @property
    def rate(self) -> float:
        """The mean reward on the kept rounds (NaN if none was kept)."""
        return float(self.rewards.mean()) if self.kept else math.nan


def replay_horizon(n_rounds: int, arms: int) -> int:
    """The default horizon of a replayed learner: the mean plus four standard deviations of
    the number of kept rounds, Binomial(n, 1/K), at most n. The chance that a replay reaches it
    before the log ends is the Binomial's upper tail there: 6.8e-5 for n = 10,000 and K = 80
    (the shipped log), above the normal tail's 3.2e-5 (a Binomial of small p is skewed)."""
    mean, sd = expected_kept_rounds(n_rounds, arms)
    return max(1, min(n_rounds, math.ceil(mean + 4.0 * sd)))


def replay(
    learner: Any, log: OpenBanditLog, *, label: str = "", seed: int | None = None
) -> ReplayRun:
    """Li et al.'s Algorithm 1: walk ``log`` with ``learner`` (a contextual bandit learner with
    one replica), keeping the rounds whose logged arm is the learner's choice (module
    docstring). Stops at the end of the log or when the learner has seen ``learner.horizon``
    kept rounds."""
    if getattr(learner, "feedback_kind", None) is not FeedbackKind.CONTEXTUAL_BANDIT:
        raise TypeError(
            f"replay needs a contextual bandit learner, got {type(learner).__name__} "
            f"({getattr(learner, 'feedback_kind', None)!r})"
        )
    if getattr(learner, "replicas", None) != 1:
        raise ValueError(
            "replay runs one replica per learner (replicas would choose different arms in one "
            f"logged round); got replicas={getattr(learner, 'replicas', None)!r}"
        )
    horizon = getattr(learner, "horizon", None)
    limit = log.n_rounds if horizon is None else int(horizon)
    contexts, actions, rewards = log.contexts, log.actions, log.rewards
    kept: list[int] = []
    read = 0
    start = time.perf_counter()
    for i in range(log.n_rounds):
        if len(kept) >= limit:
            break
        read += 1
        learner.observe(ContextFeedback(contexts[i]))
        if int(learner.act()[0]) == actions[i]:
            learner.observe(RewardFeedback(rewards[i : i + 1]))
            kept.append(i)
    rows = np.asarray(kept, dtype=np.int64)
    privacy = getattr(learner, "privacy", None)
    return ReplayRun(
        label,
        seed,
        read,
        rows,
        rewards[rows],
        time.perf_counter() - start,
        horizon=None if horizon is None else int(horizon),
        epsilon=math.nan if privacy is None else float(privacy.epsilon),
        delta=math.nan if privacy is None else float(privacy.delta),
    )


def expected_kept(n_rounds: int, arms: int, horizon: int | None = None) -> float:
    """E[min(Binomial(n, 1/K), h)]: the mean number of rounds replay keeps for a learner of
    horizon h on a uniformly logged log of n rounds and K arms (each round kept with chance
    1/K, independently, until h are kept)."""
    from scipy.stats import binom

    mean = n_rounds / arms
    if horizon is None or horizon >= n_rounds:
        return float(mean)
    h = int(horizon)
    k = np.arange(h)
    # E[min(X, h)] = sum_{k < h} P(X > k)
    return float(binom.sf(k, n_rounds, 1.0 / arms).sum())


def _contextual_entry(name: str | LearnerEntry) -> LearnerEntry:
    entry = name if isinstance(name, LearnerEntry) else learners().get(name)
    if entry is None:
        raise ValueError(f"unknown learner {name!r}")
    if entry.feedback_kind is not FeedbackKind.CONTEXTUAL_BANDIT:
        raise ValueError(f"replay needs a contextual bandit learner; {entry.name!r} is not one")
    return entry


def replay_learner(
    name: str | LearnerEntry,
    log: OpenBanditLog,
    *,
    seeds: int = 5,
    seed: int = 0,
    epsilon: Any = DEFAULT_EPSILON,
    calibration: str = "tight",
    horizon: int | None = None,
    radius: float = OPEN_BANDIT_RADIUS,
    label: str | None = None,
    **options: Any,
) -> list[ReplayRun]:
    """Replay the catalogue's learner ``name`` on ``log`` ``seeds`` times, each run one replica
    built by its factory (:func:`dponline.registry.build_learner`) for ``horizon`` kept rounds
    (default :func:`replay_horizon`) at ``epsilon`` (1.0 for a private learner unless given;
    :data:`~dponline.registry.NON_PRIVATE`: its non-private counterpart) with ``options``;
    run j draws from ``SeedSequence(seed).spawn(seeds)[j]``, so equal arguments give equal
    runs."""
    entry = _contextual_entry(name)
    h = replay_horizon(log.n_rounds, log.arms) if horizon is None else int(horizon)
    target = ReplayTarget(log.dim, log.arms, h, log.reward_range, radius=radius)
    eps = resolved_epsilon(entry, epsilon)  # a non-private learner refuses an epsilon
    if label is None:
        if eps is not None:
            label = f"{entry.name} eps={eps:g}"
        else:  # never a private learner's name on its non-private counterpart's row
            label = f"{entry.name} (non-private)" if entry.private else entry.name
    runs = []
    for j, child in enumerate(np.random.SeedSequence(seed).spawn(seeds)):
        learner = build_learner(
            entry,
            target,
            epsilon=NON_PRIVATE if eps is None else eps,
            calibration=calibration,
            replicas=1,
            rng=np.random.default_rng(child),
            **options,
        )
        runs.append(replay(learner, log, label=label, seed=j))
    return runs


def wilson_interval(rate: float, n: float, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval {p : |rate - p| <= z sqrt(p (1 - p) / n)} for a mean of n
    Bernoulli draws (95% for the default z); ``n`` may be fractional (a mean size)."""
    if not n > 0 or not 0.0 <= rate <= 1.0:
        return (math.nan, math.nan)
    z2 = z * z / n
    centre = (rate + z2 / 2.0) / (1.0 + z2)
    half = z * math.sqrt(rate * (1.0 - rate) / n + z * z / (4.0 * n * n)) / (1.0 + z2)
    lo = 0.0 if rate == 0.0 else max(0.0, centre - half)  # exact ends, not rounding's
    hi = 1.0 if rate == 1.0 else min(1.0, centre + half)
    return (lo, hi)


def replay_summary(runs: Iterable[ReplayRun], log: OpenBanditLog | None = None) -> pd.DataFrame:
    """One row per label: what a private learner's noise proves (``proven_epsilon`` and
    ``delta``: NaN when non-private), the seeds, the log rows read, the kept rounds (mean,
    min, max; and, when ``log`` is given, the expected number, :func:`expected_kept`, about
    n/K unless the horizon caps it), the clicks per run, the click rate (the mean of the runs'
    rates) with its interval (module docstring) and the seconds per run. With
    ``log``, a first row "logged policy" gives the log's own click rate with its Wilson
    interval over all its rounds."""
    groups: dict[str, list[ReplayRun]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    rows = []
    if log is not None:
        lo, hi = wilson_interval(log.click_rate, log.n_rounds)
        rows.append(
            {
                "learner": "logged policy (uniform)",
                "seeds": 0,
                "rows_read": log.n_rounds,
                "kept": float(log.n_rounds),
                "clicks": float(log.rewards.sum()),
                "click_rate": log.click_rate,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
    for label, group in groups.items():
        rates = np.array([r.rate for r in group if r.kept])
        kept = np.array([r.kept for r in group])
        rate = float(rates.mean()) if rates.size else math.nan
        lo, hi = wilson_interval(rate, float(kept.mean()))
        expected = (
            {"kept_expected": expected_kept(log.n_rounds, log.arms, group[0].horizon)}
            if log is not None
            else {}
        )
        rows.append(
            {
                "learner": label,
                "proven_epsilon": group[0].epsilon,
                "delta": group[0].delta,
                "seeds": len(group),
                "rows_read": float(np.mean([r.rows_read for r in group])),
                "kept": float(kept.mean()),
                "kept_min": int(kept.min()),
                "kept_max": int(kept.max()),
                "clicks": float(np.mean([r.clicks for r in group])),
                "click_rate": rate,
                "ci_low": lo,
                "ci_high": hi,
                "seconds": float(np.mean([r.seconds for r in group])),
                **expected,
            }
        )
    table = pd.DataFrame(rows)
    first = [c for c in ("learner", "proven_epsilon", "delta") if c in table]
    return table[first + [c for c in table.columns if c not in first]]


def replay_contextual_learners(
    log: OpenBanditLog | None = None,
    *,
    names: Sequence[str] | None = None,
    epsilons: Sequence[float] = (1.0,),
    seeds: int = 5,
    seed: int = 2026,
    calibration: str = "tight",
) -> tuple[pd.DataFrame, list[ReplayRun]]:
    """Replay every contextual bandit learner of the catalogue (or ``names``) on ``log``
    (default: the Open Bandit sample, all 80 items, :func:`~dponline.environments.open_bandit.
    open_bandit_log`): each private learner at every epsilon of ``epsilons``, each
    non-private one once, ``seeds`` runs each. Returns the summary (:func:`replay_summary`,
    with the logged policy's row first) and the runs."""
    log = open_bandit_log() if log is None else log
    catalogue = learners()
    chosen = (
        sorted(n for n, e in catalogue.items() if e.feedback_kind is FeedbackKind.CONTEXTUAL_BANDIT)
        if names is None
        else list(names)
    )
    runs: list[ReplayRun] = []
    for name in chosen:
        entry = _contextual_entry(name)
        for eps in epsilons if entry.private else (NON_PRIVATE,):
            runs += replay_learner(
                entry, log, seeds=seeds, seed=seed, epsilon=eps, calibration=calibration
            )
    return replay_summary(runs, log), runs


def replay_note(table: pd.DataFrame, log: OpenBanditLog) -> str:
    """One paragraph of plain text for a report: what was replayed and each learner's click
    rate with its interval (a :func:`replay_summary` table of ``log``)."""

    def pct(v: float) -> str:
        return f"{100 * v:.2f}%"

    def proves(r: Any) -> str:
        eps, delta = getattr(r, "proven_epsilon", math.nan), getattr(r, "delta", math.nan)
        if not eps == eps:  # NaN: non-private, or the logged policy
            return ""
        return f", ({eps:.3g}, {delta:.2g})-DP" if delta > 0 else f", {eps:.3g}-DP"

    parts = [
        f"{r.learner} {pct(r.click_rate)} [{pct(r.ci_low)}, {pct(r.ci_high)}]"
        + ("" if r.seeds == 0 else f" on {r.kept:.0f} kept rounds{proves(r)}")
        for r in table.itertuples()
    ]
    return (
        f"Replay (Li, Chu, Langford & Wang 2011) on the Open Bandit Dataset's uniformly logged "
        f"sample, {log.arms} items as arms, {log.n_rounds:,} logged impressions with "
        f"{log.rewards.sum():.0f} clicks: a round is kept when the learner picks the logged "
        f"item (about {log.n_rounds / log.arms:.0f} rounds expected). Click rates with 95% "
        f"intervals: {'; '.join(parts)}. "
        + (
            "The intervals all overlap: with so few clicks replay shows the learners running on "
            "real logged data, not a difference between them."
            if table["ci_low"].max() <= table["ci_high"].min()
            else "Not all intervals overlap."
        )
    )
