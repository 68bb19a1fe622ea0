"""Empirical audit of a learner's privacy for one person (user-level neighbours).

One person contributes to at most k rounds, any two at least b apart (the unit of a user-level
:class:`~dponline.privacy.budget.PrivacyBudget`). Two neighbouring streams then differ in the
person's rounds: :func:`person_rounds` places k rounds exactly b apart (the worst case of the
Toeplitz strategies and, for the tree, among the worst), and :func:`person_streams` writes the
two streams, equal everywhere else. The learner is built by its registry factory with the budget
given (so a learner calibrated for one round and one calibrated for the person can be compared),
plays each stream as a fixed-stream environment through the round loop
(:func:`dponline.experiments.learner_audit.stream_runner`), and
:func:`dponline.privacy.audit.audit` compares what it released on the two streams. The claim is
read as a guarantee for the person of the rounds given, whatever the budget's unit: a learner
whose guarantee truly covers that person (its budget states at least that many participations,
and the rounds are at least its ``min_separation`` apart) is refuted with probability at most
``alpha``; one calibrated for a single round, or for a person of fewer or closer rounds, is
refuted when its claimed epsilon is read as this person's, and that refutation is no false
alarm. A claim given as a :class:`~dponline.privacy.guarantee.PrivacyGuarantee` that states rho
is tested twice (epsilon and rho, :attr:`~dponline.privacy.audit.AuditResult.any_refuted`): a
false alarm in either has chance at most 2 ``alpha``.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dponline.environments.catalogue import build_environment
from dponline.experiments.learner_audit import stream_runner
from dponline.privacy.audit import AuditResult, audit, learner_sampler
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyGuarantee, PrivacyWarning
from dponline.registry import LearnerEntry, check_options, learners

__all__ = ["audit_person", "checked_rounds", "person_rounds", "person_streams"]


def person_rounds(
    horizon: int, participations: int, min_separation: int, first: int = 0
) -> tuple[int, ...]:
    """The rounds (0-indexed) first, first + b, ..., first + (k - 1) b, all inside the horizon,
    else ValueError."""
    rounds = tuple(first + m * min_separation for m in range(participations))
    if first < 0 or min_separation < 1 or participations < 1 or rounds[-1] >= horizon:
        raise ValueError(
            f"{participations} rounds {min_separation} apart from round {first} do not fit in "
            f"{horizon} rounds"
        )
    return rounds


def checked_rounds(horizon: int, rounds: Sequence[int]) -> tuple[int, ...]:
    """The person's rounds as distinct integers in [0, horizon) (0-indexed), else ValueError: a
    negative index would change a round counted from the end, a repeated one fewer rounds than
    the person was given."""
    out = []
    for r in rounds:
        if isinstance(r, bool) or not isinstance(r, numbers.Integral):
            raise ValueError(f"rounds must be integers, got {r!r} in {tuple(rounds)!r}")
        if not 0 <= int(r) < horizon:
            raise ValueError(
                f"rounds must lie in 0..{horizon - 1} (0-indexed rounds of the horizon), got "
                f"{int(r)} in {tuple(rounds)!r}"
            )
        out.append(int(r))
    if not out or len(set(out)) != len(out):
        raise ValueError(f"rounds must be one or more distinct rounds, got {tuple(rounds)!r}")
    return tuple(out)


def person_streams(
    horizon: int,
    rounds: Sequence[int],
    value_a: Sequence[float],
    value_b: Sequence[float],
    rest: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Streams A and B of ``horizon`` rows: ``rest`` (default zeros) everywhere, ``value_a``
    (A) or ``value_b`` (B) in the person's ``rounds``."""
    va, vb = np.asarray(value_a, dtype=float), np.asarray(value_b, dtype=float)
    if va.shape != vb.shape or va.ndim != 1:
        raise ValueError(f"values must be two rows of one length, got {va.shape}, {vb.shape}")
    rounds = checked_rounds(horizon, rounds)
    row = np.zeros_like(va) if rest is None else np.asarray(rest, dtype=float)
    a = np.tile(row, (horizon, 1))
    b = a.copy()
    a[list(rounds)], b[list(rounds)] = va, vb
    return a, b


def audit_person(
    learner: str | LearnerEntry,
    *,
    budget: PrivacyBudget,
    environment: str,
    horizon: int,
    rounds: Sequence[int],
    value_a: Sequence[float],
    value_b: Sequence[float],
    claim: PrivacyGuarantee | tuple[float, float] | None = None,
    environment_options: dict[str, Any] | None = None,
    learner_options: dict[str, Any] | None = None,
    release: Callable[[Any], np.ndarray] | None = None,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    trials: int = 20_000,
    pilot_trials: int = 5_000,
    alpha: float = 1e-3,
    seed: int = 0,
) -> AuditResult:
    """Audit ``learner`` built with ``budget`` on streams that differ in one person's
    ``rounds`` (module docstring). ``claim`` defaults to the learner's own guarantee, tested
    as a guarantee for the person: its epsilon, and its rho where it states one (Gaussian
    noise: the rho test catches a cut in the noise the epsilon test misses, e.g. a learner
    calibrated for 2 rounds audited on 4; a true claim is then refuted with chance at most
    2 ``alpha``). Pass ``(epsilon, delta)`` to test epsilon alone. ``statistic`` maps the
    outputs (n, T, ...) to scores (Fisher's discriminant fitted on the pilot runs when
    ``None``)."""
    entry = learner if isinstance(learner, LearnerEntry) else learners()[learner]
    rounds = checked_rounds(horizon, rounds)
    if not entry.private:
        raise ValueError(f"learner {entry.name!r} is non-private: there is no claim to audit")
    env = build_environment(
        environment, horizon, np.random.default_rng(0), **(environment_options or {})
    )
    options = dict(learner_options or {})
    check_options(entry, options)  # the documented options only, as build_learner passes
    budgets = sorted({"delta", "participations", "min_separation"} & set(options))
    if budgets:
        raise ValueError(
            f"{', '.join(budgets)} belong to the budget the learner is audited with: build "
            "budget=PrivacyBudget(...) with them instead of passing them as options"
        )

    def factory(replicas: int, rng: np.random.Generator) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            return entry.factory(env, budget=budget, replicas=replicas, rng=rng, **options)

    privacy = factory(1, np.random.default_rng(0)).privacy
    if claim is None:
        if not isinstance(privacy, PrivacyGuarantee):
            raise TypeError(f"learner {entry.name!r} declares no PrivacyGuarantee")
        claim = privacy
    a, b = person_streams(horizon, rounds, value_a, value_b)
    dim = int(env.dim)
    sampler = learner_sampler(factory, stream_runner(entry.feedback_kind, dim, release))
    return audit(
        sampler,
        a,
        b,
        claim=claim,
        statistic=statistic,
        trials=trials,
        pilot_trials=pilot_trials,
        alpha=alpha,
        rng=seed,
    )
