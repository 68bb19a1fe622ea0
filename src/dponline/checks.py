"""The learner battery: what every registered learner must do, checked from its registry entry
alone (DESIGN.md, "Seams"), in the manner of river's ``check_estimator``.

Each check takes a :class:`~dponline.registry.LearnerEntry` and one of its
:class:`~dponline.registry.LearnerTestCase` s, builds the learner by its factory on the case's
environment, and raises ``AssertionError`` naming the learner and what went wrong:

* :func:`check_fits_its_environment`: the entry's feedback kind and action space agree with its
  test environment's, and the built learner and environment say the same;
* :func:`check_guarantee_declared`: a private learner states a
  :class:`~dponline.privacy.guarantee.PrivacyGuarantee` (epsilon, delta, neighbouring relation,
  a derivation) in every calibration, ``tight`` meeting the request, and a tenth of its noise
  voids it; a non-private learner's ``privacy`` is ``None`` and it has no noise to scale;
* :func:`check_resume_bit_exact`: a state saved mid-run through a checkpoint file
  (:mod:`dponline.experiments.checkpoints`) and loaded into a learner built with another seed
  continues exactly as the uninterrupted run;
* :func:`check_replicas_independent`: a randomised learner's replicas differ pairwise (fed the
  same inputs), a deterministic learner's agree;
* :func:`check_rejects_invalid_inputs`: NaN, out-of-bound and wrong-shape feedback raises
  ``ValueError`` naming the value or shape, and leaves the state untouched;
* :func:`check_refuses_round_after_horizon`: round T+1 is refused;
* :func:`check_act_before_observe`: feedback before the round's action is refused;
* :func:`check_audit`: the empirical audit (:mod:`dponline.experiments.learner_audit`) does not
  refute the claim and refutes a tenth of the noise (each refutation of a correct claim has
  probability at most ``alpha``).

A test case's environment must give every replica the same feedback for the same action (an
oblivious or shared stream), so that replicas differ only by the learner's own randomness.
:func:`check_learner` runs them all.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from dponline.environments.catalogue import ENVIRONMENTS, build_environment
from dponline.environments.lipschitz import LipschitzLoss, NearestCentreLoss
from dponline.experiments.checkpoints import load_state, save_state
from dponline.experiments.learner_audit import audit_environment, audit_learner
from dponline.online.smooth_losses import SmoothLoss
from dponline.privacy.audit import AuditResult
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee, PrivacyWarning
from dponline.protocol import (
    BanditFeedback,
    ContextFeedback,
    Feedback,
    FeedbackKind,
    Learner,
    LossFunctionFeedback,
    LossVectorFeedback,
    RewardFeedback,
    SampleFeedback,
)
from dponline.registry import LearnerEntry, LearnerTestCase

__all__ = [
    "CHECKS",
    "build_case",
    "check_act_before_observe",
    "check_audit",
    "check_fits_its_environment",
    "check_guarantee_declared",
    "check_learner",
    "check_refuses_round_after_horizon",
    "check_rejects_invalid_inputs",
    "check_replicas_independent",
    "check_resume_bit_exact",
    "play",
]

#: An input no learner's declared bounds contain, exactly representable, easy to find in a
#: message.
OUT_OF_BOUNDS = 1234.5


def build_case(
    entry: LearnerEntry,
    case: LearnerTestCase,
    *,
    replicas: int = 3,
    seed: int = 2,
    env_seed: int = 1,
    calibration: str = "tight",
) -> tuple[Any, Any]:
    """(environment, learner) of a test case: the learner built by the entry's factory with the
    runner's keywords (``epsilon=None`` for a non-private learner)."""
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(env_seed), **case.environment_options
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        learner = entry.factory(
            env,
            epsilon=case.epsilon if entry.private else None,
            calibration=calibration if entry.private else "none",
            allow_weaker=calibration == "paper",
            replicas=replicas,
            rng=np.random.default_rng(seed),
            **case.learner_options,
        )
    return env, learner


def play(
    env: Any,
    learner: Any,
    rounds: range,
    release: Callable[[Any], np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Play ``rounds`` (context first where the environment reveals one); returns a copy of the
    action of each round, or of ``release(learner)`` after the round's feedback."""
    out = []
    for t in rounds:
        if env.reveals_context:
            learner.observe(ContextFeedback(env.context(t)))
        action = learner.act()
        played = np.array(action, copy=True)
        feedback, _ = env.round(t, action)
        learner.observe(feedback)
        out.append(played if release is None else np.array(release(learner), copy=True))
    return out


def _who(entry: LearnerEntry, case: LearnerTestCase) -> str:
    return f"{entry.name}" + (f" [{case.label}]" if case.label else "")


def _same_state(a: Any, b: Any, where: str = "state") -> str | None:
    """None when the two states are equal (arrays: same shape and values), else where not."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return where
        if a.shape != b.shape:
            return where
        nan_ok = a.dtype.kind in "fc" and b.dtype.kind in "fc"
        return None if np.array_equal(a, b, equal_nan=nan_ok) else where
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{where} (keys {sorted(map(str, a))} != {sorted(map(str, b))})"
        for k in a:
            bad = _same_state(a[k], b[k], f"{where}[{k!r}]")
            if bad:
                return bad
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            bad = _same_state(x, y, f"{where}[{i}]")
            if bad:
                return bad
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else where


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _names(message: str, value: float | tuple[int, ...]) -> bool:
    """Whether an error message names ``value`` (a number, NaN, or a shape)."""
    if isinstance(value, tuple):
        return str(value) in message
    if math.isnan(value):
        return "nan" in message.lower()
    return any(math.isclose(float(m), value, rel_tol=1e-9) for m in _NUMBER.findall(message))


def _refused(
    who: str, learner: Any, feedback: Feedback, what: str, named: float | tuple[int, ...] | None
) -> None:
    """``learner.observe(feedback)`` raises ValueError naming ``named`` and keeps its state."""
    before = learner.state_dict()
    try:
        learner.observe(feedback)
    except ValueError as exc:
        message = str(exc)
    else:
        raise AssertionError(f"{who}: {what} was accepted, expected ValueError")
    if named is not None and not _names(message, named):
        raise AssertionError(f"{who}: the error for {what} does not name {named!r}: {message!r}")
    bad = _same_state(before, learner.state_dict())
    if bad:
        raise AssertionError(f"{who}: refusing {what} changed the learner's {bad}")


def _e1(dim: int, value: float) -> np.ndarray:
    x = np.zeros(dim)
    x[0] = value
    return x


def _nan_first(x: np.ndarray) -> np.ndarray:
    out = np.array(x, dtype=float, copy=True)
    out.flat[0] = np.nan
    return out


def _bad_contexts(x: np.ndarray) -> Iterator[tuple[str, np.ndarray, float | tuple[int, ...]]]:
    d = x.shape[-1]
    yield "a NaN context", _nan_first(x), math.nan
    yield f"a context {OUT_OF_BOUNDS} e_1", _e1(d, OUT_OF_BOUNDS), OUT_OF_BOUNDS
    yield f"a context of shape ({d + 1},)", np.zeros(d + 1), (d + 1,)


def _loss_feedback(loss: Any) -> LossFunctionFeedback:
    return LossFunctionFeedback(loss, getattr(loss, "gradient", None), loss=loss)


def _bad_feedback(
    kind: FeedbackKind, valid: Feedback, replicas: int
) -> Iterator[tuple[str, Feedback, float | tuple[int, ...]]]:
    """NaN, out-of-bound and wrong-shape variants of a valid feedback, with what the error
    must name."""
    if kind is FeedbackKind.LOSS_VECTOR:
        assert isinstance(valid, LossVectorFeedback)
        d = np.shape(valid.loss)[-1]
        yield "a NaN loss", LossVectorFeedback(_nan_first(valid.loss)), math.nan
        out = LossVectorFeedback(_e1(d, OUT_OF_BOUNDS))
        yield f"the loss {OUT_OF_BOUNDS} e_1", out, OUT_OF_BOUNDS
        yield f"a loss of shape ({d + 1},)", LossVectorFeedback(np.zeros(d + 1)), (d + 1,)
    elif kind is FeedbackKind.BANDIT:
        assert isinstance(valid, BanditFeedback)
        yield "a NaN bandit loss", BanditFeedback(_nan_first(valid.loss)), math.nan
        out = BanditFeedback(np.full(replicas, OUT_OF_BOUNDS))
        yield f"the bandit loss {OUT_OF_BOUNDS}", out, OUT_OF_BOUNDS
        shape = (replicas + 1,)
        yield f"bandit losses of shape {shape}", BanditFeedback(np.zeros(shape)), shape
    elif kind is FeedbackKind.SAMPLE:
        assert isinstance(valid, SampleFeedback)
        x, y = np.asarray(valid.x, dtype=float), valid.y
        d = x.shape[-1]
        yield "a NaN sample", SampleFeedback(_nan_first(x), y), math.nan
        out_x = SampleFeedback(_e1(d, OUT_OF_BOUNDS), y)
        yield f"the sample x = {OUT_OF_BOUNDS} e_1", out_x, OUT_OF_BOUNDS
        yield f"the label y = {OUT_OF_BOUNDS}", SampleFeedback(x, OUT_OF_BOUNDS), OUT_OF_BOUNDS
        yield f"a sample x of shape ({d + 1},)", SampleFeedback(np.zeros(d + 1), y), (d + 1,)
    elif kind is FeedbackKind.LOSS_FUNCTION:
        assert isinstance(valid, LossFunctionFeedback)
        loss = valid.loss
        if isinstance(loss, LipschitzLoss):
            # losses known by their values: NaN somewhere, a 1234.5-Lipschitz one, another dim
            d = loss.dim
            g = loss.lipschitz
            nan = NearestCentreLoss(np.full((1, d), np.nan), g)
            yield "a loss that is NaN", _loss_feedback(nan), math.nan
            steep = NearestCentreLoss(np.zeros((1, d)), OUT_OF_BOUNDS)
            yield f"a {OUT_OF_BOUNDS}-Lipschitz loss", _loss_feedback(steep), OUT_OF_BOUNDS
            other = NearestCentreLoss(np.zeros((1, d + 1)), g)
            yield f"a loss on points of shape ({d + 1},)", _loss_feedback(other), (d + 1,)
            return
        # a structured loss (SmoothLoss) refuses NaN parameters when it is built, so there is
        # no NaN loss to hand a learner; out of bounds: the GLM direction (or the quadratic's
        # anchor) 1234.5 e_1, whose Lipschitz constant over the set exceeds any declared bound
        assert isinstance(loss, SmoothLoss)
        d = loss.dim
        if loss.link is not None:
            big = dataclasses.replace(loss, v=_e1(d, OUT_OF_BOUNDS))
            wrong = SmoothLoss.glm(loss.link, np.zeros(d + 1), loss.y)
        else:
            big = dataclasses.replace(loss, anchor=_e1(d, OUT_OF_BOUNDS))
            wrong = SmoothLoss.quadratic(1.0, np.zeros(d + 1))
        yield f"a loss with parameter {OUT_OF_BOUNDS} e_1", _loss_feedback(big), OUT_OF_BOUNDS
        yield f"a loss on points of shape ({d + 1},)", _loss_feedback(wrong), (d + 1,)
    elif kind is FeedbackKind.CONTEXTUAL_BANDIT:
        assert isinstance(valid, RewardFeedback)
        yield "a NaN reward", RewardFeedback(_nan_first(valid.reward)), math.nan
        out_r = RewardFeedback(np.full(replicas, OUT_OF_BOUNDS))
        yield f"the reward {OUT_OF_BOUNDS}", out_r, OUT_OF_BOUNDS
        shape = (replicas + 1,)
        yield f"rewards of shape {shape}", RewardFeedback(np.zeros(shape)), shape
    else:
        raise ValueError(f"no invalid-input cases for feedback {kind.value!r}")


# --- the checks ---------------------------------------------------------------------------------


def check_fits_its_environment(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """The test environment (and the audit's) gives the entry's feedback and accepts its
    actions; the built learner declares the entry's feedback kind and the Learner protocol."""
    who = _who(entry, case)
    env_entry = ENVIRONMENTS[case.environment]
    space = env_entry.action_space_for(case.environment_options)
    if not entry.runs_in(env_entry.feedback_kind, space):
        raise AssertionError(
            f"{who}: observes {entry.feedback_kind.name} and plays {entry.action_spaces}, its "
            f"test environment {case.environment!r} gives {env_entry.feedback_kind.name} and "
            f"accepts {space!r}"
        )
    env, learner = build_case(entry, case)
    if not isinstance(learner, Learner):
        raise AssertionError(f"{who}: {type(learner).__name__} does not implement the protocol")
    kinds = {getattr(learner, "feedback_kind", None), getattr(env, "feedback_kind", None)}
    if kinds != {entry.feedback_kind}:
        raise AssertionError(f"{who}: learner and environment declare {kinds}")
    if case.audit is not None:
        audit_environment(entry, case)  # raises unless it fits the learner


def check_guarantee_declared(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """Private: a full PrivacyGuarantee in every calibration, ``tight`` within the request,
    voided (epsilon = inf, derivation kept) by a tenth of the noise. Non-private: none."""
    who = _who(entry, case)
    if not entry.private:
        _, learner = build_case(entry, case, replicas=1)
        if learner.privacy is not None:
            raise AssertionError(f"{who}: non-private, yet declares {learner.privacy}")
        try:
            learner.scale_noise(0.1)
        except (ValueError, TypeError):
            return
        raise AssertionError(f"{who}: non-private, yet scale_noise(0.1) was accepted")
    for calibration in entry.calibrations:
        _, learner = build_case(entry, case, replicas=1, calibration=calibration)
        g = learner.privacy
        where = f"{who} ({calibration})"
        if not isinstance(g, PrivacyGuarantee):
            raise AssertionError(f"{where}: privacy is {g!r}, expected a PrivacyGuarantee")
        if not (0 < g.epsilon < math.inf and 0 <= g.delta < 1):
            raise AssertionError(f"{where}: implausible guarantee {g}")
        if not isinstance(g.neighbouring, Neighbouring):
            raise AssertionError(f"{where}: no neighbouring relation in {g!r}")
        if not (isinstance(g.derivation, str) and g.derivation.strip()):
            raise AssertionError(f"{where}: the guarantee has no derivation")
        if calibration == "tight" and g.epsilon > case.epsilon * (1 + 1e-9):
            raise AssertionError(f"{where}: proves epsilon {g.epsilon}, asked {case.epsilon}")
        learner.scale_noise(0.1)
        voided = learner.privacy
        if not (isinstance(voided, PrivacyGuarantee) and voided.epsilon == math.inf):
            raise AssertionError(f"{where}: a tenth of the noise still claims {voided}")
        if g.derivation not in voided.derivation:
            raise AssertionError(f"{where}: scaling the noise lost the calibrated derivation")


def check_resume_bit_exact(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """Half the rounds, a checkpoint file (learner and environment), a learner built with
    another seed loads it and plays the rest: exactly the uninterrupted run's actions."""
    who = _who(entry, case)
    horizon, half = case.horizon, case.horizon // 2
    env, whole = build_case(entry, case)
    reference = play(env, whole, range(horizon))
    env, learner = build_case(entry, case)
    first = play(env, learner, range(half))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "battery.ckpt.npz"
        state = {"learner": learner.state_dict(), "environment": env.state_dict()}
        save_state(path, state, task="battery")
        loaded = load_state(path, task="battery")
    env, learner = build_case(entry, case, seed=99)  # another noise stream, replaced by the state
    learner.load_state_dict(loaded["learner"])
    env.load_state_dict(loaded["environment"])
    rest = play(env, learner, range(half, horizon))
    for t, (a, b) in enumerate(zip(reference, first + rest, strict=True)):
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            raise AssertionError(f"{who}: the resumed run differs in round {t + 1}")
    # everything else it would release next, and its noise stream, must agree too
    diff = _same_state(whole.state_dict(), learner.state_dict())
    if diff is not None:
        raise AssertionError(f"{who}: after resuming, the final state differs: {diff}")


def check_replicas_independent(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """Four replicas fed the same inputs: pairwise different releases over the run when the
    learner randomises (``case.randomised``, default: private), identical otherwise."""
    who = _who(entry, case)
    replicas = 4
    env, learner = build_case(entry, case, replicas=replicas)
    outs = play(env, learner, range(case.horizon), release=case.release)
    per_replica = np.stack([np.asarray(o, dtype=float) for o in outs], axis=1)
    if per_replica.shape[0] != replicas:
        raise AssertionError(f"{who}: releases have shape {per_replica.shape}, not (4, ...)")
    runs = per_replica.reshape(replicas, -1)
    randomised = entry.private if case.randomised is None else case.randomised
    for j in range(replicas):
        for k in range(j + 1, replicas):
            same = np.array_equal(runs[j], runs[k])
            if randomised and same:
                raise AssertionError(f"{who}: replicas {j} and {k} released the same run")
            if not randomised and not same:
                raise AssertionError(f"{who}: deterministic, yet replicas {j} and {k} differ")


def check_rejects_invalid_inputs(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """After two rounds: NaN, out-of-bound (1234.5) and wrong-shape feedback (and
    contexts) raise ValueError naming the value or shape, the state unchanged; the round then
    goes on with the valid feedback."""
    who = _who(entry, case)
    env, learner = build_case(entry, case)
    play(env, learner, range(2))
    t = 2
    if env.reveals_context:
        x = np.asarray(env.context(t), dtype=float)
        for what, bad, named in _bad_contexts(x):
            _refused(who, learner, ContextFeedback(bad), what, named)
        learner.observe(ContextFeedback(x))
    action = learner.act()
    valid, _ = env.round(t, action)
    for what, feedback, named in _bad_feedback(entry.feedback_kind, valid, learner.replicas):
        _refused(who, learner, feedback, what, named)
    learner.observe(valid)


def check_refuses_round_after_horizon(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """After T rounds the input of round T+1 raises ValueError naming T+1 (state unchanged)."""
    who = _who(entry, case)
    env, learner = build_case(entry, case)
    horizon = case.horizon
    play(env, learner, range(horizon))
    if env.reveals_context:
        feedback: Feedback = ContextFeedback(env.context(horizon - 1))
    else:
        feedback = env.round(horizon - 1, learner.act())[0]
    _refused(who, learner, feedback, f"the input of round {horizon + 1}", float(horizon + 1))


def check_act_before_observe(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """Feedback before the round's action (and a second feedback for one action) raises
    ValueError, the state unchanged."""
    who = _who(entry, case)
    env, learner = build_case(entry, case)
    _, twin = build_case(entry, case)
    if env.reveals_context:
        context = ContextFeedback(env.context(0))
        twin.observe(context)
        reward, _ = env.round(0, twin.act())
        _refused(who, learner, reward, "a reward before any context", None)
        learner.observe(context)
        _refused(who, learner, reward, "a reward before act()", None)
        learner.act()
        learner.observe(reward)
        _refused(who, learner, reward, "a second reward for one action", None)
        return
    feedback, _ = env.round(0, twin.act())
    _refused(who, learner, feedback, "feedback before act()", None)
    learner.act()
    learner.observe(feedback)
    _refused(who, learner, feedback, "a second feedback for one action", None)


def check_audit(
    entry: LearnerEntry,
    case: LearnerTestCase,
    *,
    calibration: str = "tight",
    trials: int | None = None,
    pilot_trials: int | None = None,
    alpha: float = 1e-3,
    tenth_refuted: bool = True,
) -> tuple[AuditResult, AuditResult | None]:
    """The audit does not refute the claim at full noise (a correct claim fails with
    probability at most ``alpha``) and, with ``tenth_refuted``, refutes it with less noise: a
    tenth, or the audit case's ``refute_fraction`` where the entry documents a looser proof.
    Returns both results (the second ``None`` without ``tenth_refuted``)."""
    who = _who(entry, case)
    kw = dict(calibration=calibration, trials=trials, pilot_trials=pilot_trials, alpha=alpha)
    full = audit_learner(entry, case, noise_fraction=1.0, **kw)  # type: ignore[arg-type]
    if full.refuted:
        raise AssertionError(f"{who} ({calibration}): the audit refutes the claim: {full}")
    if not tenth_refuted:
        return full, None
    fraction = case.audit.refute_fraction if case.audit is not None else 0.1
    tenth = audit_learner(entry, case, noise_fraction=fraction, **kw)  # type: ignore[arg-type]
    if not tenth.refuted:
        raise AssertionError(
            f"{who} ({calibration}): {fraction:g} of the noise is not caught by the audit: {tenth}"
        )
    return full, tenth


#: The checks that run on every test case (the audit, slower and private only, apart).
CHECKS: tuple[Callable[[LearnerEntry, LearnerTestCase], None], ...] = (
    check_fits_its_environment,
    check_guarantee_declared,
    check_resume_bit_exact,
    check_replicas_independent,
    check_rejects_invalid_inputs,
    check_refuses_round_after_horizon,
    check_act_before_observe,
)


def check_learner(entry: LearnerEntry) -> None:
    """Every check on every test case of ``entry``, the audit included for a private learner."""
    for case in entry.test_cases:
        for check in CHECKS:
            check(entry, case)
        if entry.private:
            check_audit(entry, case)
