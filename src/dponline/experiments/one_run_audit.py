"""Audit a running learner in one run: canary rounds, a guesser that reads only the actions,
and the one-run lower bound of :mod:`dponline.privacy.one_run`.

**Canaries.** The auditor chooses m rounds of a stream, spaced ``gap`` rounds apart (so that
their effects on the actions separate). Canary i's round takes one of two inputs, ``row_a`` or
``row_b``, by an independent fair coin S_i (S_i = 1: ``row_b``, "included"); every other round
is the stream's own row, fixed before the run. Two streams that differ in one coin differ in one
round, so an event-level (epsilon, delta)-DP learner (docs/design.md, "Privacy semantics") is
(epsilon, delta)-DP with respect to each coin, which is what the one-run theorem asks
(Steinke, Nasr & Jagielski 2023). A canary may also own several rounds (``participations``
rounds ``separation`` apart, all set by its one coin): the unit of a guarantee over a person's
rounds; an event-level learner is audited with one round per canary.

**One run.** The learner (one replica) plays the whole stream once through the round loop
(:func:`dponline.experiments.rounds.play`) on the fixed-stream environment of its feedback kind
(:mod:`dponline.environments.fixed_streams`). Only its actions are kept.

**The guesser** reads only the actions. Canary i's features (:func:`canary_features`) are, at
its round c, the mean change of action a_{c+l} - a_c over dyadic bins of the next ``window``
rounds (a_c is decided before the canary's input is seen), the same over the rounds back to the
previous canary (they hold the same other canaries), and for actions with few values (an arm a
round) the share of those rounds that repeat a_c; softmax actions are read as centred
log-weights, where the noisy losses enter linearly. Its score is Fisher's linear discriminant of
these features (as :func:`dponline.privacy.audit.fisher_statistic`, with a ridge), fitted on the
first ``fit`` canaries of the same run with their coins known: those rounds then count as the
stream's own data (the theorem holds conditionally on them), and only the remaining m - fit
canaries are audited. A caller may give its own ``score(features)`` instead (then every canary
is audited). The bound (:func:`dponline.privacy.one_run.audit_canaries`) guesses the top and
bottom k scores for a grid of k fixed in advance.

**White-box scores** (:func:`release_scores`, ours). For a counter learner whose actions show
its counter's release (DP-FTRL with entropic weights: log x_1 - log x_0 = eta (L~_0 - L~_1)),
an auditor who knows the algorithm and its public parameters (the counter's class, horizon and
noise distribution, eta), never its noise draws, reads the release back, subtracts the known
inputs and scores each canary by the generalised least squares estimate of its shift on the
window up to its neighbours, with the noise's covariance simulated from the counter's class on
zero inputs and a seed of the auditor's (:class:`ReleaseModel`). For a K-armed learner that
releases per-arm statistics on a public schedule, the auditor reads them from the order in which
the learner returns to arms pulled equally often (:class:`ArmOrderModel`, ours: on a stream
that loads every arm alike, only the noise and the canaries set that order). The registry audit
uses them for the learners of :data:`WHITE_BOX`; every canary is then audited.

**What it proves.** With probability at least 1 - significance the bound does not exceed the
epsilon of an (epsilon, delta)-DP learner at the claim's delta: a bound above the claim refutes
it. A bound below the claim says nothing more than "not refuted": one run sees m canaries, a
weak guesser, a learner whose worst case is not these inputs (docs/one-run-audit.md).

:func:`one_run_audit` audits a learner built by the caller on the caller's own stream;
:func:`audit_registered` runs it on a registry entry's audit case (its neighbouring streams
define the two inputs of a canary round) and :func:`one_run_table` on every private learner.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from dponline.bandits.elimination import dp_se_constants, midpoint_loss
from dponline.bandits.k_armed import PRIVATE_K_ARMED
from dponline.environments.fixed_streams import fixed_stream
from dponline.experiments.learner_audit import (
    audit_environment,
    audit_factory,
    audited_cases,
    neighbouring_streams,
    options_text,
)
from dponline.experiments.rounds import play
from dponline.privacy.arguments import checked_count, checked_nonnegative_int, checked_positive
from dponline.privacy.guarantee import PrivacyGuarantee, PrivacyNotion, PrivacyWarning
from dponline.privacy.one_run import METHODS, OneRunResult, audit_canaries
from dponline.protocol import FeedbackKind
from dponline.registry import LearnerEntry, LearnerTestCase
from dponline.warn import warn_caller

__all__ = [
    "COIN_STREAM",
    "POWER_FRACTIONS",
    "ArmOrderModel",
    "CanaryPlan",
    "OneRunAudit",
    "OneRunPower",
    "ReleaseModel",
    "WhiteBox",
    "arm_order_model",
    "audit_registered",
    "canary_features",
    "coin_generator",
    "doubling_release",
    "ftrl_release_model",
    "lazy_epoch_release",
    "long_run_case",
    "next_pull",
    "one_run_audit",
    "one_run_power",
    "one_run_table",
    "phase_release",
    "refuted_learners",
    "release_scores",
]


@dataclass(frozen=True)
class CanaryPlan:
    """Where the canaries go: canary i's rounds are ``first + i * gap + j * separation`` for
    j < ``participations`` (0-indexed), i < ``canaries``; its features read ``window`` rounds
    after each. A stream needs at least :attr:`horizon` rounds."""

    canaries: int
    gap: int = 2
    window: int = 1
    first: int = 1
    participations: int = 1
    separation: int = 1

    def __post_init__(self) -> None:
        checked_count("canaries", self.canaries)
        checked_count("gap", self.gap)
        checked_count("window", self.window)
        checked_nonnegative_int("first", self.first)
        checked_count("participations", self.participations)
        checked_count("separation", self.separation)
        span = (self.participations - 1) * self.separation + self.window
        if self.participations > 1 and self.gap <= (self.participations - 1) * self.separation:
            raise ValueError(
                f"gap ({self.gap}) must exceed (participations - 1) * separation "
                f"({(self.participations - 1) * self.separation}): a canary's rounds would "
                "reach the next canary's"
            )
        if self.participations > 1 and self.gap * self.canaries <= span:
            raise ValueError("a canary's rounds must fit in the stream")
        if self.participations == 1 and self.window > self.gap:
            raise ValueError(
                f"window ({self.window}) must not exceed gap ({self.gap}): a canary's features "
                "would read the next canary's round"
            )

    @property
    def rounds(self) -> np.ndarray:
        """The canaries' rounds, shape (canaries, participations)."""
        i = np.arange(self.canaries)[:, None]
        j = np.arange(self.participations)[None, :]
        return self.first + i * self.gap + j * self.separation

    @property
    def horizon(self) -> int:
        """The least number of rounds the plan needs."""
        return int(self.rounds.max()) + self.window + 1


@dataclass(frozen=True)
class OneRunAudit:
    """The outcome of :func:`one_run_audit`: the bound (``result``), the plan, the run."""

    result: OneRunResult
    plan: CanaryPlan
    horizon: int
    audited: int  #: canaries audited (m minus those the guesser was fitted on)
    fitted: int  #: canaries the guesser was fitted on
    seconds: float  #: wall time of the run and the bound

    @property
    def epsilon_lower(self) -> float:
        return self.result.epsilon_lower

    @property
    def refuted(self) -> bool:
        return self.result.refuted

    @property
    def can_refute(self) -> bool:
        """Some outcome of this audit could refute the claim (:attr:`OneRunResult.can_refute`)."""
        return self.result.can_refute


#: the spawn key of the coins' stream: an int seed s draws them from
#: ``SeedSequence(s, spawn_key=(COIN_STREAM,))``, a stream no ``default_rng(s)`` shares
COIN_STREAM = 0x636F696E


def coin_generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    """The generator of a one-run audit's coins: an int ``seed`` gives a stream of the coins'
    own (spawn key :data:`COIN_STREAM`), so a learner built with ``default_rng(seed)`` draws
    noise independent of them, as the bound requires; a Generator is used as given; None
    draws fresh entropy."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    entropy = checked_nonnegative_int("seed", seed)
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(COIN_STREAM,)))


class WhiteBox(Protocol):
    """A white-box guesser (:class:`ReleaseModel`, :class:`ArmOrderModel`): each canary's score
    (higher: ``row_b`` more likely) from the actions, the public stream (every canary round at
    ``row_a``) and the two inputs; it never sees a coin or a noise draw."""

    def scores(
        self,
        actions: np.ndarray,
        public: np.ndarray,
        row_a: np.ndarray,
        row_b: np.ndarray,
        plan: CanaryPlan,
    ) -> np.ndarray: ...


def _bins(width: int) -> list[tuple[int, int]]:
    """Lags 1..``width`` in dyadic bins [1, 1], [2, 3], [4, 7], ... (the last one cut at
    ``width``): a tree counter brings a round's node sums in at dyadic lags, and a sampled
    action's draws are averaged over a bin."""
    out, lo = [], 1
    while lo <= width:
        out.append((lo, min(2 * lo - 1, width)))
        lo *= 2
    return out


#: an action with at most this many distinct values over a run is read as a choice (an arm, a
#: vertex, a grid point): its features add "the same choice as at the canary's round"
_DISCRETE_VALUES = 16


def _release_coordinates(acts: np.ndarray) -> np.ndarray:
    """The actions in the coordinates where a learner's release enters linearly: where every
    action is a probability vector with at least two distinct rows per coordinate (a softmax
    learner's exp(-eta L) / Z), its centred logarithm (linear in the noisy losses; a weight
    that underflowed to 0 is read as the smallest positive float); otherwise the actions."""
    if acts.shape[1] > 1 and np.all(acts >= 0) and np.allclose(acts.sum(axis=1), 1.0):
        if len(np.unique(acts, axis=0)) > min(_DISCRETE_VALUES, len(acts) // 4):
            logs = np.log(np.maximum(acts, np.finfo(float).tiny))
            return logs - logs.mean(axis=1, keepdims=True)
    return acts


def canary_features(actions: np.ndarray, plan: CanaryPlan) -> np.ndarray:
    """Each canary's features from the actions (T, ...) of one replica, at each of its rounds c
    (probability vectors taken as centred log-weights, :func:`_release_coordinates`):

    * after: the mean of a_{c+l} - a_c over each dyadic bin of lags l in 1..``window``
      (a_c is decided before the canary's input is seen);
    * before: the mean of a_{c-l} - a_c over each dyadic bin of l in 1..min(window, gap - 1)
      (rounds after the previous canary: their actions hold the same other canaries, so they
      take out the state the canary's effect is added to);
    * for actions with few distinct values (a choice per round): the share of rounds in each
      of those bins whose action equals a_c (a bandit's canary loss moves the arm it played).

    Flattened; shape (canaries, features). Every feature reads the actions only."""
    raw = np.asarray(actions, dtype=float).reshape(len(actions), -1)
    acts = _release_coordinates(raw)
    horizon = len(acts)
    rounds = plan.rounds  # (m, k)
    now = acts[rounds]  # (m, k, width)
    before = min(plan.window, plan.gap - 1) if plan.participations == 1 else plan.window
    discrete = len(np.unique(raw, axis=0)) <= min(_DISCRETE_VALUES, horizon // 4)
    if discrete:
        codes = np.unique(raw, axis=0, return_inverse=True)[1].ravel()
        same_at = codes[rounds]
    parts = []
    for sign, width in ((1, plan.window), (-1, before)):
        for lo, hi in _bins(width):
            lags = sign * np.arange(lo, hi + 1)
            idx = np.clip(rounds[:, :, None] + lags[None, None, :], 0, horizon - 1)
            parts.append(acts[idx].mean(axis=2) - now)
            if discrete:
                parts.append((codes[idx] == same_at[:, :, None]).mean(axis=2)[:, :, None])
    return np.concatenate(parts, axis=2).reshape(plan.canaries, -1)


def _play_actions(
    learner: Any,
    kind: FeedbackKind,
    rows: np.ndarray,
    dim: int,
    make_loss: Callable[[np.ndarray, float], Any] | None,
) -> np.ndarray:
    env = fixed_stream(kind, rows, dim, make_loss=make_loss, name="one-run audit stream")
    actions = play(env, learner, range(env.horizon))
    out = np.stack(actions).astype(float)
    if out.shape[1] != 1:
        raise ValueError(
            f"a one-run audit runs one learner once: build it with replicas=1, got {out.shape[1]}"
        )
    return out[:, 0]


def one_run_audit(
    learner: Any,
    stream: Any,
    canary: tuple[Any, Any],
    plan: CanaryPlan,
    *,
    dim: int,
    kind: FeedbackKind | None = None,
    make_loss: Callable[[np.ndarray, float], Any] | None = None,
    score: Callable[[np.ndarray], np.ndarray] | None = None,
    fit: int | None = None,
    claim: PrivacyGuarantee | tuple[float, float] | None = None,
    significance: float = 1e-3,
    methods: Sequence[str] = METHODS,
    seed: int | np.random.Generator | None = 0,
    white_box: WhiteBox | None = None,
    noise_fraction: float = 1.0,
) -> OneRunAudit:
    """Audit ``learner`` in one run on the caller's ``stream`` with canaries (module docstring).

    ``learner``: a fresh learner of one replica (``replicas=1``), as deployed. ``stream``: the
    rows it plays, in the layout of the fixed stream of its feedback kind
    (:mod:`dponline.environments.fixed_streams`; ``dim`` splits a row, ``make_loss`` makes a
    loss-function row's loss); the canaries' rounds (``plan``) are overwritten by ``canary[0]``
    (coin 0) or ``canary[1]`` (coin 1), two rows of the same layout. ``score(features)``: the
    guesser's score of each canary (higher: ``canary[1]`` more likely) from
    :func:`canary_features`; by default Fisher's discriminant fitted on the first ``fit``
    canaries (default a third), which are then not audited. ``claim``: the guarantee to test,
    default ``learner.privacy`` as built (a person's unit included); its delta is the bound's.
    ``noise_fraction``: play with the learner's noise multiplied by this (``scale_noise``)
    and test the claim of its full noise: 0.1 asks whether the audit catches a tenth of the
    noise, the check that the audit can see this learner on this stream at all.
    ``significance``: the chance that the bound exceeds the true epsilon (1e-3, as
    ``dponline audit``'s). ``seed`` draws the coins (and breaks
    ties of scores): an int from a stream of the coins' own (:func:`coin_generator`), never
    the one ``np.random.default_rng(seed)`` would give a learner seeded alike (the bound needs
    coins independent of the learner's noise); a Generator as given (not the learner's);
    None, fresh entropy. ``white_box``: a guesser that knows the algorithm (:class:`ReleaseModel`,
    :class:`ArmOrderModel`, e.g. ``arm_order_model(learner)`` for a K-armed learner) in place
    of the features and ``score``; every canary is then audited.
    """
    started = time.perf_counter()
    if score is not None and white_box is not None:
        raise ValueError("give score (from the features) or white_box (from the actions), not both")
    kind = learner.feedback_kind if kind is None else FeedbackKind(kind)
    rows = np.array(stream, dtype=float, copy=True)
    if rows.ndim != 2 or rows.shape[0] < plan.horizon:
        raise ValueError(
            f"stream must be rows (T, width) with T >= {plan.horizon} (the plan's horizon), "
            f"got shape {rows.shape}"
        )
    row_a = np.broadcast_to(np.asarray(canary[0], dtype=float), rows.shape[1:])
    row_b = np.broadcast_to(np.asarray(canary[1], dtype=float), rows.shape[1:])
    if np.array_equal(row_a, row_b):
        raise ValueError("the two inputs of a canary round must differ")
    claim = learner.privacy if claim is None else claim  # before any scale_noise below
    fraction = checked_positive("noise_fraction", noise_fraction)
    if fraction != 1.0 and getattr(learner, "noise_multiplier", 1.0) != 1.0:
        raise ValueError(
            f"noise_fraction scales a learner's full noise, but this one's is already multiplied "
            f"by {learner.noise_multiplier!r} (its claim is no longer its full noise's): build a "
            "fresh learner"
        )
    joint = False
    if isinstance(claim, PrivacyGuarantee):
        claimed, delta = claim.epsilon, claim.delta
        unit = (claim.participations, claim.min_separation)
        joint = claim.notion is PrivacyNotion.JOINT_DP
    elif claim is None:
        raise ValueError("the learner declares no guarantee: give claim=(epsilon, delta)")
    else:
        claimed, delta = (float(c) for c in claim)
        unit = (1, 1)  # a bare (epsilon, delta): one round's
    if plan.participations > unit[0] or (plan.participations > 1 and plan.separation < unit[1]):
        raise ValueError(
            f"a canary sets {plan.participations} rounds {plan.separation} apart, but the claim "
            f"protects {_rounds(*unit)}: the audit would test a larger change than the claim "
            "covers (a bare (epsilon, delta) is one round's: give the PrivacyGuarantee of a "
            "person, or the learner's own, saved before scale_noise, or noise_fraction)"
        )
    if white_box is not None and plan.participations != 1 and not _reads_persons(white_box):
        raise ValueError(
            f"{type(white_box).__name__} reads one round per canary: audit canaries of several "
            "rounds with the default guesser (white_box=None) or an ArmOrderModel"
        )
    if plan.participations < unit[0]:
        warn_caller(
            f"each canary changes {plan.participations} of the {unit[0]} rounds (at least "
            f"{unit[1]} apart) the claim protects: the audit tests a smaller change than the "
            f"claim covers; CanaryPlan(participations={unit[0]}, separation={unit[1]}) tests "
            "its unit"
        )
    played = int(getattr(learner, "t", 0) or 0)
    if played:
        raise ValueError(
            f"the learner has already played {played} rounds: the audit needs a fresh one (its "
            "guarantee is for a run from round 1, every canary included); build a new learner"
        )
    horizon = getattr(learner, "horizon", None)
    if isinstance(horizon, int | np.integer) and horizon < rows.shape[0]:
        raise ValueError(
            f"the learner was built for {horizon} rounds and the stream has {rows.shape[0]}: "
            "build it for the stream's length (or pass the first rows)"
        )
    if isinstance(seed, np.random.Generator) and any(seed is g for g in _generators_of(learner)):
        raise ValueError(
            "seed is the learner's own generator: the coins must be independent of its noise; "
            "pass an int or a Generator of their own"
        )
    if fraction != 1.0:  # after every check: a refused audit leaves the learner as it was
        learner.scale_noise(fraction)
    gen = coin_generator(seed)
    coins = gen.random(plan.canaries) < 0.5
    rounds = plan.rounds
    public = rows.copy()  # the stream as the auditor knows it: every canary round at row_a
    public[rounds] = row_a
    rows[rounds[coins]] = row_b
    rows[rounds[~coins]] = row_a
    actions = _play_actions(learner, kind, rows, dim, make_loss)
    if joint:  # joint DP protects the other rounds' actions only: hide the canaries' own
        actions = _without_canary_actions(actions, rounds)
    if white_box is not None:
        fit = 0
        scores = white_box.scores(actions, public, row_a, row_b, plan)
        labels = coins
    elif score is None:
        features = canary_features(actions, plan)
        fit = max(plan.canaries // 3, 4) if fit is None else checked_count("fit", fit)
        if plan.canaries - fit < 2:
            raise ValueError(f"fit ({fit}) leaves fewer than 2 of {plan.canaries} canaries")
        train, test = slice(0, fit), slice(fit, None)
        fa, fb = features[train][~coins[train]], features[train][coins[train]]
        if len(fa) < 2 or len(fb) < 2:
            raise ValueError("the guesser needs at least two canaries of each kind to fit on")
        scores = features[test] @ _discriminant(fa, fb)
        labels = coins[test]
    else:
        fit = 0
        scores = np.asarray(score(canary_features(actions, plan)), dtype=float).ravel()
        labels = coins
    result = audit_canaries(
        scores,
        labels,
        significance=significance,
        delta=delta,
        claimed_epsilon=claimed,
        methods=methods,
        tie_seed=int(gen.integers(2**31)),
    )
    return OneRunAudit(
        result=result,
        plan=plan,
        horizon=int(rows.shape[0]),
        audited=int(labels.size),
        fitted=fit,
        seconds=time.perf_counter() - started,
    )


#: the noise fractions of :func:`one_run_power`: the claim, a tenth and a hundredth
POWER_FRACTIONS = (1.0, 0.1, 0.01)


@dataclass(frozen=True)
class OneRunPower:
    """The outcome of :func:`one_run_power`: one audit of the claim of the learner's full
    noise per noise fraction (``fractions[0]`` the learner as deployed)."""

    fractions: tuple[float, ...]
    audits: tuple[OneRunAudit, ...]

    @property
    def refuted(self) -> bool:
        """The learner as deployed (the first fraction) is refuted at its claim."""
        return self.audits[0].refuted

    @property
    def sees_nothing(self) -> bool:
        """No bound above 0 at any smaller noise tried (``False`` when none was): the audit has
        no power on this learner and stream, so "not refuted" says nothing about them."""
        pairs = zip(self.fractions, self.audits, strict=True)
        smaller = [a.epsilon_lower for f, a in pairs if f < 1]
        return bool(smaller) and all(bound == 0.0 for bound in smaller)

    @property
    def caught(self) -> float | None:
        """The largest fraction below 1 whose noise is refuted (``None``: none is)."""
        pairs = zip(self.fractions, self.audits, strict=True)
        refuted = [f for f, a in pairs if f < 1 and a.refuted]
        return max(refuted) if refuted else None

    def __str__(self) -> str:
        claim = self.audits[0].result.claimed_epsilon
        lines = [
            f"noise x {f:g}: epsilon >= {a.epsilon_lower:.3f}"
            + (" REFUTED" if a.refuted else "")
            + f" ({a.audited} canaries audited, {a.seconds:.1f} s)"
            for f, a in zip(self.fractions, self.audits, strict=True)
        ]
        if self.refuted:
            verdict = f"The claim of epsilon = {claim:.4g} is refuted as deployed."
        elif self.sees_nothing:
            verdict = (
                f"Saw nothing, not even at {min(self.fractions):g} of the noise: 'not refuted' "
                "says nothing about this learner on this stream (too few canaries, or a "
                "learner whose releases hide them); a stream built for the audit's power or a "
                "white-box guesser may see it (docs/one-run-audit.md)."
            )
        elif self.caught is not None:
            verdict = (
                f"Not refuted at its claim of epsilon = {claim:.4g}; {self.caught:g} of its "
                "noise is refuted, so the audit can see this learner on this stream."
            )
        elif not any(f < 1 for f in self.fractions):
            verdict = (
                f"Not refuted at its claim of epsilon = {claim:.4g}; no smaller noise was "
                "tried, so whether the audit can see this learner here is not known."
            )
        else:
            verdict = (
                f"Not refuted at its claim of epsilon = {claim:.4g}; less noise moved the bound "
                "but refuted no fraction tried: a weak audit here."
            )
        return "\n".join([*lines, verdict])


def one_run_power(
    make_learner: Callable[[], Any],
    stream: Any,
    canary: tuple[Any, Any],
    plan: CanaryPlan,
    *,
    fractions: Sequence[float] = POWER_FRACTIONS,
    white_box_for: Callable[[Any], WhiteBox | None] | None = None,
    seed: int = 0,
    **options: Any,
) -> OneRunPower:
    """:func:`one_run_audit` of a fresh learner from ``make_learner()`` at each noise fraction
    of ``fractions`` (the claim of the full noise each time; first 1, as deployed), on the same
    stream, canaries and coins (``seed``, an int): whether the claim is refuted, and whether
    the audit can see the learner on this stream at all (a tenth or a hundredth of its noise
    refuted, or nothing seen even then, as ``dponline audit --one-run`` says under its table).
    ``white_box_for(learner)``: the white-box guesser of each learner (for example
    :func:`arm_order_model`); ``options``: the rest of :func:`one_run_audit`'s."""
    fractions = tuple(float(f) for f in fractions)
    if (
        not fractions
        or fractions[0] != 1.0
        or any(not 0 < f <= 1 for f in fractions)
        or len(set(fractions)) != len(fractions)
    ):
        raise ValueError(
            f"fractions must start at 1 (the learner as deployed), lie in (0, 1] and differ, "
            f"got {fractions!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an int (the same coins at every fraction), got {seed!r}")
    audits = []
    for fraction in fractions:
        learner = make_learner()
        box = None if white_box_for is None else white_box_for(learner)
        audits.append(
            one_run_audit(
                learner,
                stream,
                canary,
                plan,
                noise_fraction=fraction,
                white_box=box,
                seed=seed,
                **options,
            )
        )
    return OneRunPower(fractions=fractions, audits=tuple(audits))


def _rounds(k: int, b: int) -> str:
    """A claim's unit in words."""
    return "one round" if k == 1 else f"a person's {k} rounds at least {b} apart"


def _reads_persons(white_box: Any) -> bool:
    """Whether a white box scores a canary of several rounds (its ``persons`` flag)."""
    return bool(getattr(white_box, "persons", False))


def _generators_of(obj: Any, depth: int = 5) -> list[np.random.Generator]:
    """The generators ``obj`` holds: in its attributes, and theirs, through the library's
    objects, lists, tuples and dicts, ``depth`` levels down."""
    found: list[np.random.Generator] = []
    seen: set[int] = set()

    def visit(x: Any, level: int) -> None:
        if id(x) in seen or level > depth:
            return
        seen.add(id(x))
        if isinstance(x, np.random.Generator):
            found.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                visit(v, level + 1)
        elif isinstance(x, list | tuple):
            for v in x:
                visit(v, level + 1)
        elif type(x).__module__.startswith("dponline") and hasattr(x, "__dict__"):
            for v in vars(x).values():
                visit(v, level + 1)

    visit(obj, 0)
    return found


def _without_canary_actions(actions: np.ndarray, rounds: np.ndarray) -> np.ndarray:
    """The actions with each canary round's own action replaced by the round's before (zeros
    for round 0), in increasing order of rounds: what a guesser may read under joint DP, whose
    guarantee covers every round's action but the canary's own (a contextual learner acts on
    the canary's context, which its row holds)."""
    out = np.array(actions, copy=True)
    for c in np.sort(np.asarray(rounds).ravel()):
        out[c] = out[c - 1] if c > 0 else 0
    return out


def _discriminant(fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """Fisher's linear discriminant w = (S + r I)^-1 (mean_b - mean_a), S the pooled
    covariance, r a small ridge (relative to its trace, and absolute for constant features)."""
    diff = fb.mean(axis=0) - fa.mean(axis=0)
    centred = np.vstack([fa - fa.mean(axis=0), fb - fb.mean(axis=0)])
    pooled = np.atleast_2d(np.cov(centred, rowvar=False))
    n = len(pooled)
    ridge = 1e-6 * np.trace(pooled) / n + 1e-12
    return np.linalg.solve(pooled + ridge * np.eye(n), diff)


# --- white-box scores: a counter learner's release read back from its actions ----------------


@dataclass(frozen=True)
class ReleaseModel:
    """What an auditor who knows a counter learner's algorithm and public parameters (never its
    noise draws) needs to read the counter's release back from the actions.

    ``read(actions)``: (T,) one coordinate (or a difference of two) of the release after t
    inputs, from round t's action (0-indexed), NaN where the action does not show it;
    ``load(rows, actions)``: (T,) what each round's input adds to that coordinate (a gradient
    input may depend on the action played); ``counter``, ``horizon``, ``noise``: the counter's
    class, horizon and noise distribution (at the run's scale), from which the noise's
    correlations are simulated with a seed of the auditor's; ``variance_factor``: how many
    independent coordinates of noise ``read`` adds up (2 for a difference)."""

    counter: type
    horizon: int
    noise: Any
    read: Callable[[np.ndarray], np.ndarray]
    load: Callable[[np.ndarray, np.ndarray], np.ndarray]
    variance_factor: float = 1.0
    replicas: int = 256
    seed: int = 20_260_317

    def scores(
        self,
        actions: np.ndarray,
        public: np.ndarray,
        row_a: np.ndarray,
        row_b: np.ndarray,
        plan: CanaryPlan,
    ) -> np.ndarray:
        """:func:`release_scores` (``row_a`` is already ``public``'s at the canaries)."""
        return release_scores(self, actions, public, row_b, plan)


def _noise_increments(model: ReleaseModel, horizon: int) -> np.ndarray:
    """(horizon - 1, replicas): the increments of the release's noise from t - 1 to t inputs
    (row j: input j, 0-indexed), simulated on a counter of the model's class with zero inputs
    and the auditor's own seed."""
    counter = model.counter(model.horizon, 1, model.noise, replicas=model.replicas, rng=model.seed)
    first = counter.initial_release()[:, 0]
    out = counter.step_block(np.zeros((horizon - 1, 1)))[:, :, 0]
    releases = np.vstack([first[None, :], out])
    return np.diff(releases, axis=0) * math.sqrt(model.variance_factor)


def release_scores(
    model: ReleaseModel,
    actions: np.ndarray,
    public: np.ndarray,
    row_b: np.ndarray,
    plan: CanaryPlan,
) -> np.ndarray:
    """Each canary's score from the release read back from the actions (white box, ours).

    The increments y_j = R_{j+1} - R_j - load_j (the release after j + 1 inputs less the known
    input of round j, the canary round taken at ``row_a`` as in ``public``) are the canary's
    shift delta (row_b's load less row_a's, known from the action) at its own round plus the
    counter's noise increments. On the window of rounds up to the neighbouring canaries (no
    other canary's input in it) their covariance Sigma is estimated from simulated runs of the
    counter on zero inputs; the score is the Gaussian log-likelihood ratio of "row_b" against
    "row_a", delta e^T Sigma^-1 y - delta^2 e^T Sigma^-1 e / 2 (the generalised least squares
    estimate of the shift, weighted by its precision). It uses the actions, the public stream
    and the model only: no coin."""
    if plan.participations != 1:
        raise ValueError("white-box scores read one round per canary")
    raw = np.asarray(actions, dtype=float).reshape(len(actions), -1)
    horizon = len(raw)
    released = np.asarray(model.read(raw), dtype=float)
    base = np.asarray(model.load(public, raw), dtype=float)
    alternative = public.copy()
    centre = plan.rounds[:, 0]
    alternative[centre] = row_b
    delta = (np.asarray(model.load(alternative, raw), dtype=float) - base)[centre]
    observed = np.diff(released) - base[:-1]  # index j: input j
    noise = _noise_increments(model, horizon)
    half = plan.gap - 1
    lags = np.arange(-half, half + 1)
    scores = np.empty(plan.canaries)
    for lo in range(0, plan.canaries, 256):
        c = centre[lo : lo + 256]
        idx = c[:, None] + lags[None, :]
        outside = (idx < 0) | (idx >= horizon - 1)
        idx = np.clip(idx, 0, horizon - 2)
        y = observed[idx]
        missing = outside | ~np.isfinite(y)
        y = np.where(missing, 0.0, y)
        w = noise[idx]  # (k, window, replicas)
        sigma = np.einsum("kir,kjr->kij", w, w) / w.shape[2]
        scale = np.trace(sigma, axis1=1, axis2=2)[:, None] / len(lags)
        diag = np.where(missing, 1e12, 1e-6) * scale
        sigma += diag[:, :, None] * np.eye(len(lags))[None]
        e = np.zeros((len(c), len(lags)))
        e[:, half] = 1.0
        u = np.linalg.solve(sigma, e[:, :, None])[:, :, 0]
        d = delta[lo : lo + 256]
        scores[lo : lo + 256] = d * (u * y).sum(axis=1) - 0.5 * d**2 * u[:, half]
    return scores


def _box_coordinate(domain: Any) -> tuple[float, float] | None:
    """(lo, hi) of the first coordinate of a box or of an interval (any domain of dimension 1),
    where the Euclidean projection clips that coordinate; else None."""
    from dponline.domains.box import Box

    if isinstance(domain, Box):
        return float(domain.lo[0]), float(domain.hi[0])
    if domain.dim == 1:
        return float(domain.min_linear(np.ones((1, 1)))[0]), -float(
            domain.min_linear(-np.ones((1, 1)))[0]
        )
    return None


def ftrl_release_model(
    learner: Any, make_loss: Callable[[np.ndarray, float], Any] | None = None
) -> ReleaseModel | None:
    """The :class:`ReleaseModel` of a DP-FTRL learner with a fixed rate eta (Agarwal & Singh
    2017, Algorithm 1: x_t = argmin eta <x, L~_{t-1}> + R(x)), or None where its actions do not
    show the release linearly:

    * the entropic regulariser on the simplex: log x_t,1 - log x_t,0 = eta (L~_0 - L~_1), the
      difference of the first two coordinates of the release;
    * the Euclidean one on a box: x_t,0 = clip(-eta L~_0 / 2), which shows L~_0 where it is
      not clipped;
    * DP-FTRL on linearised losses (``make_loss`` gives a round's loss, whose gradient at the
      action played is the counter's input).
    """
    from dponline.online.ftrl import DPFTRL, EntropicRegulariser, EuclideanRegulariser

    inner = getattr(learner, "inner", learner)
    if not isinstance(inner, DPFTRL) or inner.budget is None or inner._eta is None:
        return None
    eta = float(inner._eta)
    counter = inner.counter
    dim = inner.dim
    common = {"counter": type(counter), "horizon": int(counter.horizon), "noise": counter.noise}
    if inner is not learner:  # gradients of loss functions at the actions
        box = _box_coordinate(inner.domain)
        if make_loss is None or box is None:
            return None

        def gradient_load(rows: np.ndarray, acts: np.ndarray) -> np.ndarray:
            cache: dict[bytes, Any] = {}
            out = np.empty(len(rows))
            for t, row in enumerate(rows):
                key = row.tobytes()
                if key not in cache:
                    cache[key] = make_loss(row[:dim], float(row[dim]))
                grad = np.asarray(cache[key].gradient(acts[t : t + 1, :dim]), dtype=float)
                out[t] = grad.reshape(-1)[0]
            return out

        return ReleaseModel(read=_box_read(eta, box), load=gradient_load, **common)
    if isinstance(inner.regulariser, EntropicRegulariser) and dim >= 2:

        def log_ratio(acts: np.ndarray) -> np.ndarray:
            logs = np.log(np.maximum(acts[:, :2], np.finfo(float).tiny))
            return (logs[:, 1] - logs[:, 0]) / eta

        return ReleaseModel(
            read=log_ratio,
            load=lambda rows, acts: rows[:, 0] - rows[:, 1],
            variance_factor=2.0,
            **common,
        )
    box = _box_coordinate(inner.domain)
    if isinstance(inner.regulariser, EuclideanRegulariser) and box is not None:
        return ReleaseModel(read=_box_read(eta, box), load=lambda rows, acts: rows[:, 0], **common)
    return None


def _box_read(eta: float, box: tuple[float, float]) -> Callable[[np.ndarray], np.ndarray]:
    """L~_0 = -2 x_0 / eta where x_0 = clip(-eta L~_0 / 2, lo, hi) lies strictly inside."""
    lo, hi = box
    margin = 1e-9 * max(hi - lo, 1.0)

    def read(acts: np.ndarray) -> np.ndarray:
        x = acts[:, 0]
        inside = (x > lo + margin) & (x < hi - margin)
        return np.where(inside, -2.0 * x / eta, np.nan)

    return read


# --- white-box scores: the order in which a K-armed learner returns to its arms ---------------


def doubling_release(pulls: np.ndarray) -> np.ndarray:
    """Azize & Basu's doubling episodes: the pull count at whose end the statistic holding an
    arm's next pull (``pulls`` pulls before it) is released: 1 for the initial pull, else the
    next power of two above ``pulls``."""
    n = np.asarray(pulls, dtype=np.int64)
    nxt = np.left_shift(1, np.floor(np.log2(np.maximum(n, 1))).astype(np.int64) + 1)
    return np.where(n < 1, 1, nxt)


def lazy_epoch_release(pulls: np.ndarray) -> np.ndarray:
    """Lazy-DP-TS's epochs of 1, 2, 4, ... pulls: released at 1, 3, 7, ..., 2^j - 1 pulls."""
    n = np.asarray(pulls, dtype=np.int64)
    return np.left_shift(1, np.floor(np.log2(n + 1)).astype(np.int64) + 1) - 1


def phase_release(first: int, alpha: float) -> Callable[[np.ndarray], np.ndarray]:
    """DP-KLUCB and DP-IMED's geometric phases: the first ends at ``first`` pulls, the next at
    :func:`~dponline.bandits.dp_phases.next_phase_end` of the last."""
    from dponline.bandits.dp_phases import next_phase_end

    def release(pulls: np.ndarray) -> np.ndarray:
        n = np.asarray(pulls, dtype=np.int64)
        end = np.full(n.shape, int(first), dtype=np.int64)
        while np.any(end <= n):
            end = np.where(end <= n, next_phase_end(end, alpha), end)
        return end

    return release


def pulls_before(arms: np.ndarray) -> np.ndarray:
    """(T,): how many times round t's arm was played before round t."""
    arms = np.asarray(arms, dtype=np.int64)
    order = np.argsort(arms, kind="stable")
    sorted_arms = arms[order]
    first = np.searchsorted(sorted_arms, sorted_arms, side="left")
    out = np.empty(len(arms), dtype=np.int64)
    out[order] = np.arange(len(arms)) - first
    return out


@dataclass(frozen=True)
class ArmOrderModel:
    """What an auditor who knows a K-armed learner's release schedule (never its noise) needs
    to score canaries from the arms it plays (white box, ours).

    ``release(pulls)``: the pull count at which the private statistic holding an arm's next
    pull (``pulls`` pulls before it) is released (the end of its episode, phase or epoch);
    ``levels``: how many pull counts from there on are read (1 for a statistic that is replaced
    at the arm's next release; more for a running sum whose noise is redrawn every round).

    Canary i's round c plays arm a with n pulls before it, so its input enters the statistic
    released at M = ``release(n)`` pulls; from then on arm a competes with its peers through
    that statistic. At each level M, M + 1, ..., M + ``levels`` - 1 the score reads the rank of
    the round at which arm a gets its next pull among the rounds at which every arm gets that
    pull (arms that never get it share the ranks after the last that did); it is the mean of
    those ranks, centred, times the sign of row_b's loss on arm a less row_a's: a higher loss
    lowers the released mean, and the arm returns later than its peers. On a stream where every
    other round gives every arm the same loss, the arms of one level differ only in their noise
    and their canaries, and an index learner plays them in the order of their released means."""

    release: Callable[[np.ndarray], np.ndarray]
    levels: int = 1
    #: a canary of a person's several rounds (one coin) is scored by the sum of its rounds'
    #: scores, each read as above
    persons: ClassVar[bool] = True

    def scores(
        self,
        actions: np.ndarray,
        public: np.ndarray,
        row_a: np.ndarray,
        row_b: np.ndarray,
        plan: CanaryPlan,
    ) -> np.ndarray:
        arms = np.asarray(actions).reshape(len(actions), -1)[:, 0].astype(np.int64)
        horizon = len(arms)
        k = max(int(arms.max()) + 1, int(np.asarray(row_a).size))
        pulls = pulls_before(arms)
        centre = plan.rounds.ravel()  # canary i's rounds at i * participations + j
        arm = arms[centre]
        first = np.asarray(self.release(pulls[centre]), dtype=np.int64)
        loss_b = np.asarray(row_b, dtype=float).ravel()
        loss_a = np.asarray(row_a, dtype=float).ravel()
        sign = np.sign(loss_b[arm] - loss_a[arm])
        out = np.zeros(centre.size)
        for level in np.unique(first[:, None] + np.arange(self.levels)[None, :]):
            here = (first <= level) & (level < first + self.levels)
            returns = np.full(k, horizon)
            at = np.nonzero(pulls == level)[0]
            returns[arms[at]] = at
            ranks = np.empty(k)
            ranks[returns.argsort(kind="stable")] = np.arange(k)
            reached = int((returns < horizon).sum())
            ranks[returns >= horizon] = reached + (k - reached - 1) / 2
            out[here] += ranks[arm[here]] / max(k - 1, 1) - 0.5
        per_round = sign * out / self.levels
        return per_round.reshape(plan.canaries, plan.participations).sum(axis=1)


def arm_order_model(learner: Any, make_loss: Any = None) -> ArmOrderModel | None:
    """The :class:`ArmOrderModel` of a private K-armed learner whose statistics are released at
    the end of per-arm episodes (AdaP-UCB, AdaP-KLUCB, AdaC-UCB), phases (DP-KLUCB, DP-IMED),
    epochs (Lazy-DP-TS; DP-SE's first round robin) or after every pull (DP-UCB's running sums,
    read over :data:`DP_UCB_LEVELS` pull counts); None for any other learner, with a warning
    for a private K-armed learner of another class (a learner of yours: build
    ``ArmOrderModel(release)`` with its schedule). ``make_loss`` is unused (the signature of
    the readers of :data:`WHITE_BOX`)."""
    from dponline.bandits.adaptive_episodes import AdaptiveEpisodes
    from dponline.bandits.dp_phases import GeometricPhases
    from dponline.bandits.dp_ucb import DPUCB
    from dponline.bandits.elimination import DPSE
    from dponline.bandits.k_armed import KArmedLearner
    from dponline.bandits.thompson import LazyDPTS

    if isinstance(learner, AdaptiveEpisodes):
        return ArmOrderModel(doubling_release)
    if isinstance(learner, GeometricPhases):
        return ArmOrderModel(phase_release(learner.first_phase, learner.alpha))
    if isinstance(learner, LazyDPTS):
        return ArmOrderModel(lazy_epoch_release)
    if isinstance(learner, DPSE):
        return ArmOrderModel(first_epoch_release(learner))
    if isinstance(learner, DPUCB) and learner.privacy is not None:
        return ArmOrderModel(next_pull, levels=DP_UCB_LEVELS)
    if isinstance(learner, KArmedLearner) and learner.privacy is not None:
        warnings.warn(
            f"arm_order_model does not know the release schedule of {type(learner).__name__}: "
            "pass white_box=ArmOrderModel(release), release(pulls) the pull count at which the "
            "statistic holding an arm's next pull is released (doubling_release, "
            "phase_release(first, alpha), next_pull are the library's); without one the audit "
            "guesses with the fitted discriminant, which sees little of such a learner",
            UserWarning,
            stacklevel=2,
        )
    return None


#: pull counts read after a DP-UCB canary (its running sums' noise changes every round)
DP_UCB_LEVELS = 32


def next_pull(pulls: np.ndarray) -> np.ndarray:
    """A running sum released after every pull (DP-UCB): the next pull count."""
    return np.asarray(pulls, dtype=np.int64) + 1


def first_epoch_release(learner: Any) -> Callable[[np.ndarray], np.ndarray]:
    """DP-SE's first epoch (every arm active) ends at ceil(R_1) pulls, where its eliminations
    are released; the later epochs' lengths depend on how many arms stay, so a pull after the
    first epoch is scored at the arm's next pull."""
    from dponline.bandits.elimination import dp_se_constants

    r_1 = int(np.ceil(dp_se_constants(1, learner.n_arms, learner.beta, learner.epsilon)[0]))

    def release(pulls: np.ndarray) -> np.ndarray:
        n = np.asarray(pulls, dtype=np.int64)
        return np.where(n < r_1, r_1, n + 1)

    return release


#: learners (or "learner/case label") whose registry audit scores canaries with a white box
#: instead of the fitted discriminant: the reader of DP-FTRL's release (:func:`release_scores`;
#: tried and left out: DP-FTRL on the cube and DP-FTRL-OCO, whose points sit on the set's
#: boundary for most rounds, where the projection hides the release) and the order of a
#: K-armed learner's arms (:class:`ArmOrderModel`)
WHITE_BOX: dict[str, Callable[..., WhiteBox | None]] = {
    "dp-ftrl/laplace": ftrl_release_model,
    **dict.fromkeys(PRIVATE_K_ARMED, arm_order_model),
}


# --- the registry's learners ---------------------------------------------------------------

#: DP-SE's one-run audit: arms (one canary each but the reference)
_SE_ARMS = 100

#: Per learner (or "learner/case label"): the plan's ``gap`` (rounds from one canary to the
#: next), ``window`` (rounds read after each; default the gap) and ``filler`` (the stream's
#: other rows, :func:`_registered_inputs`). Learners not listed use :data:`DEFAULT_PLAN`.
#: ``canaries``: how many (default :data:`CANARIES`; more where a learner's rounds are cheap).
#: Over the audit case: ``arms`` (a bandit's number of arms), ``rest`` (the loss of the other
#: rounds), ``coordinates`` (which arms a canary's loss falls on) and ``horizon`` (at least this
#: many rounds). Chosen on runs of seed 1 at a tenth of the noise; the table reports seed 0.
_PLANS: dict[str, dict[str, Any]] = {
    # per-round Laplace noise on each observed loss, one arm drawn per round: the canary's
    # loss moves the arm it played for the next draws; zero losses elsewhere add no drift
    # (with their audit cases' ``one_run_options``: a moderate step)
    "batched-exp3": {"gap": 4, "filler": "neutral", "canaries": 4000},
    "private-exp4": {"gap": 4, "filler": "neutral", "canaries": 4000},
    "batched-exp4": {"gap": 4, "filler": "rest", "canaries": 4000},
    # UCB on running sums: many arms, the same loss on every arm between canaries; the order
    # in which the arms of one pull count come back shows their noisy sums (ArmOrderModel)
    "dp-ucb": {"filler": "rest", "canaries": 2000, "arms": 1000},
    "dp-ucb/laplace": {"gap": 8},
    "dp-ucb/gaussian": {"gap": 4},
    # flat losses between canaries keep the iterate off the interval's ends
    "dp-ftrl-oco": {"gap": 4, "filler": "neutral", "canaries": 8000},
    # a tree counter: the canary's own nodes are the levels up to log2(gap)
    "dp-ftrl/laplace": {"gap": 16, "canaries": 3000},
    # K-armed learners that release per-arm statistics at the end of episodes, phases or
    # epochs: many arms, every other round the same loss on every arm (1/2), so that the early
    # episodes hold at most one canary each and the arms of one level differ only in their
    # noise and their canaries (ArmOrderModel)
    **{
        name: {"gap": 8, "filler": "rest", "canaries": 2000, "arms": 1000, "rest": 0.5}
        for name in ("adap-ucb", "adap-klucb", "adac-ucb", "dp-klucb", "dp-imed", "lazy-dp-ts")
    },
    # at loss 1/2 DP-KLUCB's early indices all clip to 1 (log(tau) / n exceeds d_eps(1/2, 1)):
    # at loss 1 (reward 0) a canary's reward 1 lifts its arm's index, a reward 0 leaves it tied
    "dp-klucb": {"gap": 8, "filler": "rest", "canaries": 2000, "arms": 1000, "rest": 1.0},
    # successive elimination: arm 0 the reference (loss 0), the others at the loss that puts
    # the first epoch's threshold half way between a canary reward of 1 and of 0; round robin
    # puts canary i (gap K + 1) on arm i + 1, one canary per arm; the run ends just after the
    # first epoch's eliminations
    "dp-se": {
        "arms": _SE_ARMS,
        "coordinates": "all",
        "rest": midpoint_loss(_SE_ARMS),
        "filler": "reference",
        "gap": _SE_ARMS + 1,
        "canaries": _SE_ARMS - 1,
        "horizon": _SE_ARMS * (int(np.ceil(dp_se_constants(1, _SE_ARMS, 0.5, 1.0)[0])) + 2),
    },
}

#: the plan of a learner not in :data:`_PLANS`
DEFAULT_PLAN: dict[str, Any] = {"gap": 2, "filler": "blocks"}

#: Options of the audit case dropped for the longer run (their defaults scale with the horizon):
#: DP-SCRiBLe's eta = 3, chosen for a two-round audit, overflows its barrier's Newton steps over
#: thousands of rounds.
_DROPPED_OPTIONS: dict[str, tuple[str, ...]] = {"dp-scrible": ("eta",)}

#: Options of the audit case replaced for the longer run: the batch learners' audit cases claim
#: delta = 1e-3 on a stream of one sample, but a one-run bound over m canaries pays 2 m delta
#: (Steinke et al., Theorem 1), so over 800 canaries even guesses all right would prove
#: nothing; the one-run audit tests their claim at delta = 1e-6 instead.
_REPLACED_OPTIONS: dict[str, dict[str, Any]] = {
    name: {"delta": 1e-6} for name in ("noisy-sgd", "local-md", "noisy-sfw")
}

#: canaries of the registry audit (a third fit the guesser)
CANARIES = 1_200


def _shape_for(entry: LearnerEntry, case: LearnerTestCase) -> dict[str, Any]:
    """The plan's shape for a learner's case: :data:`DEFAULT_PLAN`, then the learner's entry of
    :data:`_PLANS`, then its case's, then the case's own ``AuditCase.one_run_plan`` (a
    learner of yours)."""
    return {
        **DEFAULT_PLAN,
        **_PLANS.get(entry.name, {}),
        **_PLANS.get(f"{entry.name}/{case.label}", {}),
        **(case.audit.one_run_plan if case.audit is not None else {}),
    }


def _plan_for(entry: LearnerEntry, case: LearnerTestCase, canaries: int) -> CanaryPlan:
    spec = case.audit
    assert spec is not None
    shape = _shape_for(entry, case)
    batch = int(spec.learner_options.get("batch", case.learner_options.get("batch", 1)) or 1)
    gap = max(int(shape["gap"]), batch + 1)
    window = min(int(shape.get("window", gap)), gap)
    return CanaryPlan(canaries=canaries, gap=gap, window=window, first=shape.get("first", 1))


#: the fillers :func:`_registered_inputs` can write
FILLERS = ("blocks", "alternate", "rest", "neutral", "reference")


def _registered_inputs(
    entry: LearnerEntry,
    case: LearnerTestCase,
    horizon: int,
    plan_gap: int = 1,
    filler: str = "blocks",
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """The environment the learner is built for (at ``horizon``), the two inputs of a canary
    round (the audit case's changed round in streams A and B) and the filler stream, fixed
    before the run so that it pushes the learner nowhere on average:

    * ``"blocks"``: the two inputs in turn, A for ``plan_gap`` rounds, then B, ...; where the
      canaries load the first coordinate of a loss vector, the canaries' mean load spread on
      the other coordinates instead (the softmax learners' log-weights stay balanced);
    * ``"alternate"``: A and B in turn every round (the same, with the spread load as above);
    * ``"rest"``: the audit case's row of the other rounds;
    * ``"neutral"``: an input that moves no learner: a zero loss vector, a sample (0, 0), a
      loss function of the zero vector (f(<0, x>, rest), flat), a context e_1 with rewards 0;
    * ``"reference"`` (bandits): arm 0 at loss 0, every other arm at the case's ``rest``.
    """
    if filler not in FILLERS:
        raise ValueError(f"filler must be one of {FILLERS}, got {filler!r}")
    spec = case.audit
    assert spec is not None
    longer = dataclasses.replace(spec, horizon=horizon, changed_round=0)
    case_t = dataclasses.replace(case, audit=longer)
    env = audit_environment(entry, case_t)
    a, b = neighbouring_streams(
        entry.feedback_kind, longer, int(env.dim), getattr(env, "arms", None)
    )
    row_a, row_b = a[0].copy(), b[0].copy()
    kind, dim = entry.feedback_kind, int(env.dim)
    if filler == "rest":
        return env, row_a, row_b, a[1:2].repeat(horizon, axis=0)
    if filler == "reference":
        if kind is not FeedbackKind.BANDIT:
            raise ValueError(
                "the 'reference' filler is a bandit's: arm 0 at loss 0, the others rest"
            )
        row = np.full(a.shape[1], float(spec.rest))
        row[0] = 0.0
        return env, row_a, row_b, np.tile(row, (horizon, 1))
    if filler == "neutral":
        row = np.zeros(a.shape[1])
        if kind is FeedbackKind.LOSS_FUNCTION:
            row[dim] = spec.rest
        elif kind is FeedbackKind.CONTEXTUAL_BANDIT:
            row[0] = 1.0
        return env, row_a, row_b, np.tile(row, (horizon, 1))
    period = plan_gap if filler == "blocks" else 1
    turn = (np.arange(horizon) // period) % 2 == 0
    fill = np.where(turn[:, None], row_a, row_b)
    if kind in (FeedbackKind.LOSS_VECTOR, FeedbackKind.BANDIT) and spec.coordinates == "first":
        mid = 0.5 * (spec.values[0] + spec.values[1])
        if mid != 0 and dim > 1:
            # the canaries load coordinate 1 by mid on average: load the others as much
            other = np.full(a.shape[1], mid / max(plan_gap - 1, 1))
            other[0] = 0.0
            fill = np.tile(other, (horizon, 1))
    return env, row_a, row_b, fill


def long_run_case(entry: LearnerEntry, case: LearnerTestCase) -> LearnerTestCase:
    """The test case as the one-run audit runs it over thousands of rounds: options of
    :data:`_DROPPED_OPTIONS` dropped and of :data:`_REPLACED_OPTIONS` replaced, the audit
    case's ``one_run_options`` merged over its options, and the plan's arms, loss between
    canaries and coordinates (:data:`_PLANS`) in place of the audit case's."""
    assert case.audit is not None
    dropped = _DROPPED_OPTIONS.get(entry.name, ())
    replaced = _REPLACED_OPTIONS.get(entry.name, {})
    if dropped or replaced:

        def adjust(options: Mapping[str, Any]) -> dict[str, Any]:
            kept = {k: v for k, v in options.items() if k not in dropped}
            return {**kept, **{k: v for k, v in replaced.items() if k in kept}}

        case = dataclasses.replace(
            case,
            learner_options=adjust(case.learner_options),
            audit=dataclasses.replace(
                case.audit, learner_options=adjust(case.audit.learner_options)
            ),
        )
    if case.audit.one_run_options:
        case = dataclasses.replace(
            case,
            audit=dataclasses.replace(
                case.audit,
                learner_options={**case.audit.learner_options, **case.audit.one_run_options},
            ),
        )
    shape = _shape_for(entry, case)
    if {"arms", "rest", "coordinates"} & set(shape):
        audit = case.audit
        case = dataclasses.replace(
            case,
            audit=dataclasses.replace(
                audit,
                environment_options={
                    **audit.environment_options,
                    **({"n_arms": shape["arms"]} if "arms" in shape else {}),
                },
                rest=float(shape.get("rest", audit.rest)),
                coordinates=shape.get("coordinates", audit.coordinates),
            ),
        )
    return case


def audit_registered(
    entry: LearnerEntry,
    case: LearnerTestCase | None = None,
    *,
    noise_fraction: float = 1.0,
    canaries: int | None = None,
    calibration: str = "tight",
    significance: float = 1e-3,
    seed: int = 0,
    plan: CanaryPlan | None = None,
    filler: str | None = None,
    white_box: bool = True,
) -> OneRunAudit:
    """The one-run audit of a registry entry's test case (default its first): the learner built
    as the many-run audit builds it (:func:`~dponline.experiments.learner_audit.audit_factory`,
    one replica, ``noise_fraction`` of its calibrated noise) for a horizon that fits
    ``canaries`` canaries (default the learner's plan's, :data:`_PLANS`, else
    :data:`CANARIES`), against the guarantee its full noise claims. A claim over a person's
    k rounds at least b apart (``participations`` of its guarantee) is audited with canaries of
    k rounds b apart, all set by one coin."""
    if not entry.private:
        raise ValueError(f"learner {entry.name!r} is non-private: there is no claim to audit")
    case = entry.test_case if case is None else case
    if case.audit is None:
        raise ValueError(f"learner {entry.name!r} (case {case.label!r}) has no AuditCase")
    case = long_run_case(entry, case)
    shape = _shape_for(entry, case)
    if canaries is None:
        canaries = int(shape.get("canaries", CANARIES))
    given = plan
    plan = _plan_for(entry, case, canaries) if plan is None else plan
    filler_kind = shape["filler"] if filler is None else filler
    for _ in range(2):  # a second pass only for a claim over a person's rounds
        horizon = max(plan.horizon, int(shape.get("horizon", 0)))
        env, row_a, row_b, filler_rows = _registered_inputs(
            entry, case, horizon, plan.gap, filler_kind
        )
        assert case.audit is not None
        case_t = dataclasses.replace(
            case, audit=dataclasses.replace(case.audit, horizon=horizon, changed_round=0)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            claim = audit_factory(entry, case_t, env, calibration=calibration)(
                1, np.random.default_rng(seed)
            ).privacy
        k = int(getattr(claim, "participations", 1))
        if given is not None or k == plan.participations:
            break
        # the claim protects a person's k rounds, b apart: one coin sets k rounds
        b = int(getattr(claim, "min_separation", 1))
        plan = CanaryPlan(
            canaries=canaries,
            gap=(k - 1) * b + plan.gap,
            window=plan.window,
            first=plan.first,
            participations=k,
            separation=b,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        learner = audit_factory(
            entry, case_t, env, calibration=calibration, noise_fraction=noise_fraction
        )(1, np.random.default_rng([seed, 1]))
    make_loss = getattr(env, "loss_of", None)
    reader = case.audit.one_run_white_box or WHITE_BOX.get(
        f"{entry.name}/{case.label}", WHITE_BOX.get(entry.name)
    )
    model = reader(learner, make_loss) if reader is not None and white_box else None
    if model is not None and plan.participations > 1 and not _reads_persons(model):
        model = None  # it reads one round per canary: a person's canary by the discriminant
    return one_run_audit(
        learner,
        filler_rows,
        (row_a, row_b),
        plan,
        dim=int(env.dim),
        kind=entry.feedback_kind,
        make_loss=make_loss,
        claim=claim,
        significance=significance,
        seed=np.random.default_rng(seed),  # the learner draws from default_rng([seed, 1])
        white_box=model,
    )


def one_run_table(
    *,
    names: Sequence[str] | None = None,
    canaries: int | None = None,
    significance: float = 1e-3,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    calibration: str = "tight",
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per private learner's test case (``names``: only these learners; ``options``:
    built with these learner options,
    :func:`~dponline.experiments.learner_audit.configured_case`; ``canaries``: for every
    learner, default each learner's plan's, :func:`audit_registered`): the one-run
    lower bound at the claim, at a tenth of the noise (the case's ``refute_fraction``) and at a
    hundredth, one run each (``seconds``: the three runs and their bounds); ``ceiling``: the
    bound guesses all right would give at the claim's delta (``can_refute``: above the claim);
    ``sees_nothing``: no bound above 0 at a tenth nor at a hundredth (the run has no power on
    the configuration). A warning the learners raise is passed on once, not once a build."""
    from dponline.experiments.progress import Progress

    cases = audited_cases(names, options)
    rows = []
    with (
        Progress(len(cases), unit="learners", enabled=progress) as bar,
        warnings.catch_warnings(record=True) as caught,
    ):
        # each audit builds its learners afresh (and resets the filters): a learner's warning
        # about its configuration came once per build, nine times a row; kept once below
        warnings.simplefilter("always")
        for name, entry, case in cases:
            assert case.audit is not None
            fraction = case.audit.refute_fraction
            kw: dict[str, Any] = dict(
                canaries=canaries, significance=significance, seed=seed, calibration=calibration
            )
            full = audit_registered(entry, case, noise_fraction=1.0, **kw)
            under = audit_registered(entry, case, noise_fraction=fraction, **kw)
            gross = audit_registered(entry, case, noise_fraction=fraction / 10, **kw)
            rows.append(
                {
                    "learner": name,
                    "case": case.label,
                    "options": options_text(options),
                    "claimed_epsilon": full.result.claimed_epsilon,
                    "delta": full.result.delta,
                    "lower_bound_at_claim": full.epsilon_lower,
                    "lower_bound_at_tenth": under.epsilon_lower,
                    "refuted_at_claim": full.refuted,
                    "ceiling": full.result.ceiling,
                    "can_refute": full.can_refute,
                    "refuted_at_tenth": under.refuted,
                    "noise_fraction": fraction,
                    "lower_bound_at_hundredth": gross.epsilon_lower,
                    "refuted_at_hundredth": gross.refuted,
                    "canaries": full.plan.canaries,
                    "participations": full.plan.participations,
                    "min_separation": full.plan.separation,
                    "audited_canaries": full.audited,
                    "guesser": "white box" if full.fitted == 0 else "fitted discriminant",
                    "horizon": full.horizon,
                    "gap": full.plan.gap,
                    "window": full.plan.window,
                    "guesses_at_tenth": under.result.guesses,
                    "correct_at_tenth": under.result.correct,
                    "method_at_tenth": under.result.method,
                    "significance": significance,
                    "seconds": full.seconds + under.seconds + gross.seconds,
                    # no bound above 0 even at a hundredth of the noise: the run has no power
                    # on this configuration, and "not refuted" at the claim says nothing
                    "sees_nothing": under.epsilon_lower == 0.0 and gross.epsilon_lower == 0.0,
                }
            )
            bar.update()
    shown = set()
    for w in caught:
        if (w.category, str(w.message)) not in shown:
            shown.add((w.category, str(w.message)))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return rows


def refuted_learners(rows: Sequence[dict[str, Any]], key: str) -> list[str]:
    """The learners (names, sorted) of :func:`one_run_table`'s ``rows`` with at least one case
    whose ``key`` (``"refuted_at_claim"``, ``"refuted_at_tenth"``, ...) is true."""
    return sorted({row["learner"] for row in rows if row[key]})
