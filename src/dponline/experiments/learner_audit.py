"""Empirical privacy audit of any registered learner, from its registry entry alone.

The entry's :class:`~dponline.registry.AuditCase` says how: the learner is built by its factory
(on an environment that only supplies its dimensions and geometry), two neighbouring input
streams that differ in one round are made per feedback kind (:func:`neighbouring_streams`), the
learner plays each as a fixed-stream environment (:mod:`dponline.environments.fixed_streams`)
through the round loop the runner and the battery play too (:func:`stream_runner`), with many
replicas at once, and :func:`dponline.privacy.audit.audit` compares what it released on the two
streams (:func:`dponline.privacy.audit.learner_sampler`). A correct claim is refuted with
probability at most ``alpha``; a learner with a tenth of its calibrated noise
(:meth:`NoiseHandle.scale_noise`) must be caught.

The neighbouring relations are those the learners' guarantees are over (docs/design.md, "Privacy
semantics"): loss sequences differing in one round (Agarwal & Singh 2017, Definition 2.1),
datasets differing in one sample (Han et al., Section 2.2) and user streams differing in one
user (Han et al., Definition 4.1; the output is what the joint-DP proof releases, the entry's
``release``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dponline.environments.catalogue import ENVIRONMENTS, build_environment
from dponline.environments.fixed_streams import fixed_stream
from dponline.experiments.rounds import play
from dponline.privacy.audit import AuditResult, audit, learner_sampler
from dponline.privacy.guarantee import PrivacyGuarantee, PrivacyWarning
from dponline.protocol import FeedbackKind
from dponline.registry import AuditCase, LearnerEntry, LearnerTestCase, build_learner, learners

__all__ = [
    "audit_environment",
    "audit_factory",
    "audit_learner",
    "audited_cases",
    "configured_case",
    "neighbouring_streams",
    "options_text",
    "stream_runner",
]


def configured_case(case: LearnerTestCase, options: Mapping[str, Any]) -> LearnerTestCase:
    """The audit case ``case`` with the learner built your way: ``epsilon`` in ``options``
    replaces the case's, every other option is passed to the learner's builder after the case's
    own (many-run and one-run alike). The neighbouring inputs, the event and the label (by
    which the one-run audit finds the case's plan and white box) are the case's; an option the
    learner does not take is refused when it is built."""
    if case.audit is None:
        raise ValueError(f"case {case.label!r} has no AuditCase")
    if "calibration" in options:
        raise ValueError("the calibration is the audit's argument (calibration=), not an option")
    rest = {k: v for k, v in options.items() if k != "epsilon"}
    epsilon = options.get("epsilon", case.epsilon)
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not epsilon > 0:
        raise ValueError(f"the option epsilon must be a number > 0, got {epsilon!r}")
    audit = dataclasses.replace(
        case.audit,
        learner_options={**case.audit.learner_options, **rest},
        one_run_options={**case.audit.one_run_options, **rest},
    )
    return dataclasses.replace(case, epsilon=float(epsilon), audit=audit)


def options_text(options: Mapping[str, Any] | None) -> str:
    """``options`` as the audit tables show them: "k=v, ..." (empty without any)."""
    return ", ".join(f"{k}={v!r}" for k, v in (options or {}).items())


def audited_cases(
    names: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[tuple[str, LearnerEntry, LearnerTestCase]]:
    """(name, entry, case) of every test case of every private learner of the catalogue, or of
    the learners ``names`` only (an unknown or non-private name is a ValueError); with
    ``options`` (only with ``names``), each case as :func:`configured_case` builds it."""
    if options and names is None:
        raise ValueError("learner options go with named learners (names=[...])")
    catalogue = learners()
    if names is not None:
        private = sorted(name for name, entry in catalogue.items() if entry.private)
        unknown = sorted(set(names) - set(catalogue))
        if unknown:
            raise ValueError(f"unknown learners {unknown}; expected some of {private}")
        public = sorted(set(names) - set(private))
        if public:
            raise ValueError(
                f"{public} {'is' if len(public) == 1 else 'are'} not private: the audit tests "
                f"privacy claims, expected some of {private}"
            )
    return [
        (name, entry, configured_case(case, options) if options else case)
        for name, entry in catalogue.items()
        if entry.private and (names is None or name in names)
        for case in entry.test_cases
    ]


def _audit_of(entry: LearnerEntry, case: LearnerTestCase) -> AuditCase:
    if case.audit is None:
        raise ValueError(f"learner {entry.name!r} (case {case.label!r}) has no AuditCase")
    return case.audit


def audit_environment(entry: LearnerEntry, case: LearnerTestCase) -> Any:
    """The environment the audited learner is built for (its dimensions and geometry): the
    audit's environment with its options, or the test case's with the audit's options merged
    over the case's, for the audit's horizon."""
    spec = _audit_of(entry, case)
    if spec.environment is None:
        name, options = case.environment, {**case.environment_options, **spec.environment_options}
    else:
        name, options = spec.environment, dict(spec.environment_options)
    env_entry = ENVIRONMENTS[name] if name in ENVIRONMENTS else None
    if env_entry is not None and env_entry.feedback_kind is not entry.feedback_kind:
        raise ValueError(
            f"learner {entry.name!r} observes {entry.feedback_kind.value!r}, its audit "
            f"environment {name!r} gives {env_entry.feedback_kind.value!r}"
        )
    return build_environment(name, spec.horizon, np.random.default_rng(0), **options)


def neighbouring_streams(
    kind: FeedbackKind, spec: AuditCase, dim: int, arms: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Streams A and B of ``spec.horizon`` rows that differ in row ``spec.changed_round`` only
    (the layouts of :class:`~dponline.registry.AuditCase`):

    * ``LOSS_VECTOR``, ``BANDIT``: loss vectors (T, dim), ``value * e_1`` or ``value * 1``,
      or with ``coordinates="opposite"`` the changed row ``v0 e_1 + v1 e_2`` against
      ``v1 e_1 + v0 e_2``;
    * ``SAMPLE``: rows (x, y) = (e_1, value), shape (T, dim + 1);
    * ``CONTEXTUAL_BANDIT``: rows (x, reward of each arm) = (e_1, value * 1), (T, dim + arms);
    * ``LOSS_FUNCTION``: rows (v, y) = (e_1, value), (T, dim + 1): the environment's loss
      ``env.loss_of(v, y)`` (:class:`~dponline.environments.fixed_streams.LossFunctionStream`).
    """
    horizon, i = spec.horizon, spec.changed_round
    e1 = np.zeros(dim)
    e1[0] = 1.0
    if kind in (FeedbackKind.LOSS_VECTOR, FeedbackKind.BANDIT):
        direction = np.ones(dim) if spec.coordinates == "all" else e1
        a = np.tile(spec.rest * direction, (horizon, 1))
        b = a.copy()
        a[i], b[i] = spec.values[0] * direction, spec.values[1] * direction
        if spec.coordinates == "opposite":
            if dim < 2:
                raise ValueError("coordinates='opposite' needs at least two coordinates")
            a[i, 1], b[i, 1] = spec.values[1], spec.values[0]
    elif spec.coordinates != "first":
        raise ValueError(
            f"coordinates={spec.coordinates!r} changes loss vectors (full information or "
            f"bandit); a {kind.value!r} audit changes a label or reward"
        )
    elif kind in (FeedbackKind.SAMPLE, FeedbackKind.LOSS_FUNCTION):
        a = np.tile(np.r_[e1, spec.rest], (horizon, 1))
        b = a.copy()
        a[i, dim], b[i, dim] = spec.values
    elif kind is FeedbackKind.CONTEXTUAL_BANDIT:
        if arms is None:
            raise ValueError("a contextual bandit's streams need the number of arms")
        a = np.tile(np.r_[e1, np.full(arms, spec.rest)], (horizon, 1))
        b = a.copy()
        a[i, dim:], b[i, dim:] = spec.values[0], spec.values[1]
    else:
        raise ValueError(f"no generic neighbouring streams for feedback {kind.value!r}")
    return a, b


def stream_runner(
    kind: FeedbackKind,
    dim: int,
    release: Callable[[Any], np.ndarray] | None = None,
    make_loss: Callable[[np.ndarray, float], Any] | None = None,
) -> Callable[[Any, np.ndarray], np.ndarray]:
    """``run(learner, stream)``: the round loop (:func:`dponline.experiments.rounds.play`) over
    the stream's rows as the fixed-stream environment of feedback ``kind``
    (:func:`~dponline.environments.fixed_streams.fixed_stream`; a loss function row (v, y) is
    the environment's ``make_loss(v, y)``); returns what the learner released each round,
    shape (replicas, T, ...): the action it played, or ``release(learner)`` after the round's
    feedback."""
    if kind is FeedbackKind.LOSS_FUNCTION and make_loss is None:
        raise ValueError("a stream of loss functions needs the environment's loss_of(v, y)")

    def run(learner: Any, stream: np.ndarray) -> np.ndarray:
        env = fixed_stream(kind, stream, dim, make_loss=make_loss, name="audit stream")
        return np.stack(play(env, learner, range(env.horizon), release), axis=1).astype(float)

    return run


def audit_factory(
    entry: LearnerEntry,
    case: LearnerTestCase,
    env: Any,
    *,
    calibration: str = "tight",
    noise_fraction: float = 1.0,
) -> Callable[[int, np.random.Generator], Any]:
    """``factory(replicas, rng)``: the audited learner with the case's and the audit's options,
    built as the runner builds it (:func:`~dponline.registry.build_learner`: the budget from the
    case's epsilon, ``calibration`` and the learner's ``delta`` option or default delta), its
    noise scaled by ``noise_fraction`` (through its public handle) before the first round."""
    spec = _audit_of(entry, case)
    options = {**case.learner_options, **spec.learner_options}

    def build(replicas: int, rng: np.random.Generator) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            learner = build_learner(
                entry,
                env,
                epsilon=case.epsilon,
                calibration=calibration,
                allow_weaker=calibration == "paper",
                replicas=replicas,
                rng=rng,
                **options,
            )
        if noise_fraction != 1.0:
            learner.scale_noise(noise_fraction)
        return learner

    return build


def audit_learner(
    entry: LearnerEntry,
    case: LearnerTestCase | None = None,
    *,
    calibration: str = "tight",
    noise_fraction: float = 1.0,
    trials: int | None = None,
    pilot_trials: int | None = None,
    alpha: float = 1e-3,
    seed: int | None = None,
) -> AuditResult:
    """Audit ``entry`` (its ``case``, default the first) against the guarantee it claims with
    its full calibrated noise, run with ``noise_fraction`` of that noise.

    ``trials`` and ``pilot_trials`` per input default to the audit case's (a ``trials`` given
    alone takes a quarter as many pilot runs); ``seed`` to the case's. With probability at most
    ``alpha`` a correct claim is refuted.
    """
    if not entry.private:
        raise ValueError(f"learner {entry.name!r} is non-private: there is no claim to audit")
    case = entry.test_case if case is None else case
    spec = _audit_of(entry, case)
    if trials is None:
        trials, pilot = spec.trials, spec.pilot_trials
    else:
        pilot = max(10, trials // 4)
    if pilot_trials is not None:
        pilot = pilot_trials
    env = audit_environment(entry, case)
    claim = audit_factory(entry, case, env, calibration=calibration)(1, np.random.default_rng(0))
    privacy = claim.privacy
    if not isinstance(privacy, PrivacyGuarantee):
        raise TypeError(f"learner {entry.name!r} declares no PrivacyGuarantee, got {privacy!r}")
    if privacy.participations > 1:
        raise ValueError(
            f"learner {entry.name!r} claims epsilon {privacy.epsilon:.4g} for a person's "
            f"{privacy.participations} rounds; the many-run audit changes one round, which tests "
            "less than the claim: audit it in one run (--one-run, one_run_audit), whose canaries "
            "are a person's rounds"
        )
    dim = int(env.dim)
    a, b = neighbouring_streams(entry.feedback_kind, spec, dim, getattr(env, "arms", None))
    sampler = learner_sampler(
        audit_factory(entry, case, env, calibration=calibration, noise_fraction=noise_fraction),
        stream_runner(entry.feedback_kind, dim, case.release, getattr(env, "loss_of", None)),
    )
    return audit(
        sampler,
        a,
        b,
        claim=privacy,
        statistic=spec.statistic,
        trials=trials,
        pilot_trials=pilot,
        alpha=alpha,
        rng=spec.seed if seed is None else seed,
    )
