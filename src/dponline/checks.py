"""The learner battery: what every registered learner must do, checked from its registry entry
alone (docs/design.md, "The catalogue and the battery"), in the manner of river's
``check_estimator``.

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
  ``ValueError`` naming the value or shape; complex, string and wrong-shape feedback (and
  contexts) one line naming the argument; each leaves the state untouched;
* :func:`check_refuses_round_after_horizon`: round T+1 is refused;
* :func:`check_act_before_observe`: feedback before the round's action is refused;
* :func:`check_act_repeats`: ``act()`` asked again before the round's feedback returns the same
  action and draws nothing (its state unchanged);
* :func:`check_refuses_corrupt_state`: a state with its round counter past the horizon (every
  array changed too), or with its last array of the wrong shape, is refused by
  ``load_state_dict`` and leaves the learner exactly as it was;
* :func:`check_refuses_a_foreign_noise_multiplier`: a private learner refuses its own state
  with any one ``noise_multiplier`` entry changed (its noise would shrink under the same claim);
* :func:`check_unit_of_privacy`: a private learner built under a budget over a person states
  that unit: exactly (k, b) when its entry says ``person_level``, else any k rounds by group
  privacy, at most the person's epsilon;
* :func:`check_audit`: the empirical audit (:mod:`dponline.experiments.learner_audit`) does not
  refute the claim and refutes a tenth of the noise (each refutation of a correct claim has
  probability at most ``alpha``).

A test case's environment must give every replica the same feedback for the same action (an
oblivious or shared stream), so that replicas differ only by the learner's own randomness.
:func:`check_learner` runs them all. The checks play rounds with :func:`play`
(``play(env, learner, rounds, release=None)``: each round's action, or ``release(learner)``
after its feedback), the round loop of :mod:`dponline.experiments.rounds` that the runner and
the audit play too.
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
from dponline.experiments.rounds import play
from dponline.losses import SmoothLoss
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
from dponline.registry import LearnerEntry, LearnerTestCase, build_learner

__all__ = [
    "CHECKS",
    "build_case",
    "check_act_before_observe",
    "check_act_repeats",
    "check_audit",
    "check_fits_its_environment",
    "check_guarantee_declared",
    "check_learner",
    "check_refuses_a_foreign_noise_multiplier",
    "check_refuses_corrupt_state",
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
    """(environment, learner) of a test case: the learner built as the runner builds it
    (:func:`~dponline.registry.build_learner`: the budget from the case's epsilon, the
    ``calibration`` and the entry's default delta; none for a non-private learner)."""
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(env_seed), **case.environment_options
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        learner = build_learner(
            entry,
            env,
            epsilon=case.epsilon if entry.private else None,
            calibration=calibration,
            allow_weaker=calibration == "paper",
            replicas=replicas,
            rng=np.random.default_rng(seed),
            **case.learner_options,
        )
    return env, learner


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


def _refusal(
    who: str,
    learner: Any,
    call: Callable[[], Any],
    what: str,
    verb: str,
    errors: tuple[type[Exception], ...] = (ValueError,),
) -> str:
    """Run ``call`` (an ``observe`` or a ``load_state_dict`` of ``learner``), which must raise
    one of ``errors`` and leave the learner's state as it was; returns the error's message."""
    before = learner.state_dict()
    try:
        call()
    except errors as exc:
        message = str(exc)
    else:
        expected = " or ".join(e.__name__ for e in errors)
        raise AssertionError(f"{who}: {what} was {verb}, expected {expected}")
    bad = _same_state(before, learner.state_dict())
    if bad:
        raise AssertionError(f"{who}: refusing {what} changed the learner's {bad}")
    return message


def _refused(
    who: str, learner: Any, feedback: Feedback, what: str, named: float | tuple[int, ...] | None
) -> None:
    """``learner.observe(feedback)`` raises ValueError naming ``named`` and keeps its state."""
    message = _refusal(who, learner, lambda: learner.observe(feedback), what, "accepted")
    if named is not None and not _names(message, named):
        raise AssertionError(f"{who}: the error for {what} does not name {named!r}: {message!r}")


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


def _complex(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float) + 0.5j


def _strings(x: Any) -> np.ndarray:
    """The numbers of ``x`` written as strings ("0.5"), which numpy would parse as floats."""
    return np.asarray(x, dtype=float).astype(str)


def _one_more(x: Any) -> np.ndarray:
    """``x`` with its last axis one entry longer (a wrong shape)."""
    a = np.asarray(x, dtype=float)
    return np.concatenate([a, a[..., :1]], axis=-1)


class _MalformedLoss:
    """A loss function whose values and gradient are ``spoil`` of a valid loss's: complex,
    strings or one entry too many. It declares the valid loss's dimension and a Lipschitz
    constant within the learner's bound, so that only the malformed output is wrong."""

    def __init__(self, base: Any, spoil: Callable[[Any], Any]) -> None:
        self.base, self.spoil = base, spoil
        self.dim = base.dim
        self.lipschitz = float(getattr(base, "lipschitz", 0.0))

    def __call__(self, x: np.ndarray) -> Any:
        return self.spoil(self.base(x))

    def gradient(self, x: np.ndarray) -> Any:
        return self.spoil(self.base.gradient(x))


#: what the error for a malformed input of each kind must name (the argument), as a regex
_ARGUMENT = {
    FeedbackKind.LOSS_VECTOR: r"\bloss\b",
    FeedbackKind.BANDIT: r"bandit loss",
    FeedbackKind.SAMPLE: r"sample [xy]\b",
    FeedbackKind.LOSS_FUNCTION: r"\bloss\b|\bgradient\b",
    FeedbackKind.CONTEXTUAL_BANDIT: r"\breward\b",
}


def _malformed_contexts(x: np.ndarray, replicas: int) -> Iterator[tuple[str, Any]]:
    d = x.shape[-1]
    yield "a complex context", _complex(x)
    yield "a context of strings", _strings(x)
    yield "the context '0.5'", "0.5"
    yield f"a context of shape ({replicas + 1}, {d})", np.zeros((replicas + 1, d))


def _malformed_feedback(
    kind: FeedbackKind, valid: Feedback, replicas: int
) -> Iterator[tuple[str, Feedback]]:
    """Complex, string and wrong-shape variants of a valid feedback: each must be refused
    with one line naming the argument (``_ARGUMENT``), never accepted (complex values cast to
    their real part, numeric strings parsed) nor met by a raw numpy error."""
    if kind is FeedbackKind.LOSS_VECTOR:
        assert isinstance(valid, LossVectorFeedback)
        d = np.shape(valid.loss)[-1]
        yield "a complex loss", LossVectorFeedback(_complex(valid.loss))
        yield "a loss of strings", LossVectorFeedback(_strings(valid.loss))
        yield "the loss '0.5'", LossVectorFeedback("0.5")  # type: ignore[arg-type]
        shape = (replicas + 1, d)
        yield f"a loss of shape {shape}", LossVectorFeedback(np.zeros(shape))
    elif kind is FeedbackKind.BANDIT:
        assert isinstance(valid, BanditFeedback)
        yield "a complex bandit loss", BanditFeedback(_complex(valid.loss))
        yield "a bandit loss of strings", BanditFeedback(_strings(valid.loss))
        yield "the bandit loss '0.5'", BanditFeedback("0.5")  # type: ignore[arg-type]
        yield f"bandit losses of shape ({replicas}, 1)", BanditFeedback(np.zeros((replicas, 1)))
    elif kind is FeedbackKind.SAMPLE:
        assert isinstance(valid, SampleFeedback)
        x, y = valid.x, valid.y
        yield "a complex sample x", SampleFeedback(_complex(x), y)
        yield "a sample x of strings", SampleFeedback(_strings(x), y)
        yield "a complex label y", SampleFeedback(x, _complex(y))
        yield "the label y '0.5'", SampleFeedback(x, "0.5")  # type: ignore[arg-type]
        yield "labels y of shape (2,)", SampleFeedback(x, np.zeros(2))
        shape = (2, np.shape(x)[-1])
        yield f"a sample x of shape {shape}", SampleFeedback(np.zeros(shape), y)
    elif kind is FeedbackKind.LOSS_FUNCTION:
        assert isinstance(valid, LossFunctionFeedback)
        for what, spoil in (
            ("complex", _complex),
            ("string", _strings),
            ("one entry too many", _one_more),
        ):
            bad = _MalformedLoss(valid.loss, spoil)
            yield (
                f"a loss with {what} values and gradient",
                LossFunctionFeedback(bad, bad.gradient, loss=bad),
            )
        yield "the loss '0.5'", LossFunctionFeedback("0.5", "0.5", loss="0.5")
    elif kind is FeedbackKind.CONTEXTUAL_BANDIT:
        assert isinstance(valid, RewardFeedback)
        yield "a complex reward", RewardFeedback(_complex(valid.reward))
        yield "rewards of strings", RewardFeedback(_strings(valid.reward))
        yield "the reward '0.5'", RewardFeedback("0.5")  # type: ignore[arg-type]
        yield f"rewards of shape ({replicas}, 1)", RewardFeedback(np.zeros((replicas, 1)))
    else:
        raise ValueError(f"no malformed-input cases for feedback {kind.value!r}")


def _refused_malformed(
    who: str, learner: Any, feedback: Feedback, what: str, argument: str
) -> None:
    """``learner.observe(feedback)`` raises ValueError or TypeError in one line that names
    the argument (regex ``argument``), and keeps its state."""
    message = _refusal(
        who, learner, lambda: learner.observe(feedback), what, "accepted", (ValueError, TypeError)
    )
    if "\n" in message or not re.search(argument, message):
        raise AssertionError(
            f"{who}: the error for {what} is not one line naming /{argument}/: {message!r}"
        )


def _arrays_in(state: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(where, array) for every array of a state, in reading order."""
    if isinstance(state, np.ndarray):
        yield path, state
    elif isinstance(state, dict):
        for k, v in state.items():
            yield from _arrays_in(v, (*path, k))
    elif isinstance(state, list | tuple):
        for i, v in enumerate(state):
            yield from _arrays_in(v, (*path, i))


def _round_counter_path(state: Any) -> tuple[Any, ...] | None:
    """Where the learner's round counter sits in its state: the shallowest integer ``"t"``
    (a wrapper keeps it in the state of the learner it wraps)."""
    level: list[tuple[tuple[Any, ...], Any]] = [((), state)]
    while level:
        nested: list[tuple[tuple[Any, ...], Any]] = []
        for path, node in level:
            items = node.items() if isinstance(node, dict) else ()
            for k, v in items:
                if k == "t" and isinstance(v, int) and not isinstance(v, bool):
                    return (*path, k)
                if isinstance(v, dict | list | tuple):
                    nested.append(((*path, k), v))
            if isinstance(node, list | tuple):
                nested.extend(((*path, i), v) for i, v in enumerate(node))
        level = nested
    return None


def _rebuilt(state: Any, edit: Callable[[tuple[Any, ...], Any], Any], path: tuple = ()) -> Any:
    """A deep copy of ``state`` with ``edit(path, leaf)`` applied to every leaf."""
    if isinstance(state, dict):
        return {k: _rebuilt(v, edit, (*path, k)) for k, v in state.items()}
    if isinstance(state, list | tuple):
        return type(state)(_rebuilt(v, edit, (*path, i)) for i, v in enumerate(state))
    return edit(path, np.array(state, copy=True) if isinstance(state, np.ndarray) else state)


def _refused_state(who: str, learner: Any, state: Any, what: str) -> None:
    """``learner.load_state_dict(state)`` raises ValueError in one line and changes nothing."""
    message = _refusal(who, learner, lambda: learner.load_state_dict(state), what, "loaded")
    if "\n" in message:
        raise AssertionError(f"{who}: the error for {what} is not one line: {message!r}")


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
    if env.reveals_context:
        learner.observe(ContextFeedback(env.context(0)))
    action = learner.act()
    replicas = int(getattr(learner, "replicas", 0))
    if np.ndim(action) < 1 or np.shape(action)[0] != replicas:
        raise AssertionError(
            f"{who}: act() returned shape {np.shape(action)}; the protocol asks for the "
            f"{replicas} replicas' decisions along the first axis"
        )
    try:
        env.round(0, action)
    except (ValueError, TypeError) as exc:
        raise AssertionError(
            f"{who}: its environment {case.environment!r} ({space!r} actions) refuses the first "
            f"action, shape {np.shape(action)} of {np.asarray(action).dtype}: {exc}"
        ) from exc
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
    contexts) raise ValueError naming the value or shape; complex, string and other wrong-shape
    feedback and contexts raise ValueError or TypeError in one line naming the argument; the
    state unchanged each time. The round then goes on with the valid feedback."""
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
    argument = _ARGUMENT[entry.feedback_kind]
    for what, feedback in _malformed_feedback(entry.feedback_kind, valid, learner.replicas):
        _refused_malformed(who, learner, feedback, what, argument)
    learner.observe(valid)
    if env.reveals_context:  # the next round's context, malformed
        x = np.asarray(env.context(t + 1), dtype=float)
        for what, bad in _malformed_contexts(x, learner.replicas):
            _refused_malformed(who, learner, ContextFeedback(bad), what, r"\bcontext\b")


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


def check_act_repeats(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """After two rounds, ``act()`` asked twice before the round's feedback (a service that
    retries, a log that reads the decision again): the same action both times and the same
    state after the second call as after the first, so the feedback is charged to the action
    played and no randomness is spent on an action nobody played."""
    who = _who(entry, case)
    env, learner = build_case(entry, case)
    play(env, learner, range(2))
    if env.reveals_context:
        learner.observe(ContextFeedback(env.context(2)))
    first = np.asarray(learner.act())
    before = learner.state_dict()
    second = np.asarray(learner.act())
    if (
        first.dtype != second.dtype
        or first.shape != second.shape
        or not np.array_equal(first, second)
    ):
        raise AssertionError(f"{who}: act() asked again in round 3 returned another action")
    diff = _same_state(before, learner.state_dict())
    if diff is not None:
        raise AssertionError(f"{who}: act() asked again in round 3 changed the state: {diff}")
    learner.observe(env.round(2, second)[0])


def check_refuses_corrupt_state(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """A learner one round in is handed the state of another after two rounds, corrupted:
    (1) its round counter set past the horizon and every array moved by 0.5; (2) intact but for
    its last array, one entry too long. Each raises ValueError in one line, and the learner's
    ``state_dict()`` is exactly what it was: a corrupt checkpoint never half-loads a learner."""
    who = _who(entry, case)
    env, source = build_case(entry, case)
    play(env, source, range(2))
    saved = source.state_dict()
    env, learner = build_case(entry, case, seed=7)
    play(env, learner, range(1))
    where = _round_counter_path(saved)
    if where is None:
        raise AssertionError(f"{who}: its state has no round counter t")
    past = case.horizon + 1

    def past_the_horizon(path: tuple[Any, ...], leaf: Any) -> Any:
        if path == where:
            return past
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
            return leaf + 0.5
        return leaf

    what = f"a state with t = {past} (horizon {case.horizon}) and every array moved"
    _refused_state(who, learner, _rebuilt(saved, past_the_horizon), what)
    arrays = [(path, a) for path, a in _arrays_in(saved) if a.ndim]
    if not arrays:
        return
    last, shape = arrays[-1][0], arrays[-1][1].shape

    def last_too_long(path: tuple[Any, ...], leaf: Any) -> Any:
        return np.concatenate([leaf, leaf[..., :1]], axis=-1) if path == last else leaf

    what = f"a state whose last array ({'/'.join(map(str, last))}, shape {shape}) is one too long"
    _refused_state(who, learner, _rebuilt(saved, last_too_long), what)


def _paths_named(state: Any, key: str, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to an entry called ``key`` in a nested state."""
    if isinstance(state, dict):
        for k, v in state.items():
            if k == key:
                yield (*path, k)
            yield from _paths_named(v, key, (*path, k))
    elif isinstance(state, list | tuple):
        for i, v in enumerate(state):
            yield from _paths_named(v, key, (*path, i))


def check_refuses_a_foreign_noise_multiplier(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """A private learner refuses its own state with any one ``noise_multiplier`` entry (top
    level, configuration or nested learner) set to 1e-6: installing it would scale every later
    draw while the guarantee still claimed the calibrated epsilon (a crafted state removed the
    noise of eight K-armed learners that way)."""
    if not entry.private:
        return
    who = _who(entry, case)
    env, source = build_case(entry, case)
    play(env, source, range(2))
    saved = source.state_dict()
    for where in _paths_named(saved, "noise_multiplier"):
        env, learner = build_case(entry, case, seed=7)
        play(env, learner, range(1))
        crafted = _rebuilt(saved, lambda path, leaf, at=where: 1e-6 if path == at else leaf)
        what = f"its own state with {'/'.join(map(str, where))} = 1e-6"
        _refused_state(who, learner, crafted, what)


def check_unit_of_privacy(entry: LearnerEntry, case: LearnerTestCase) -> None:
    """A budget over a person (2 rounds at least 2 apart) builds a learner whose guarantee is
    the person's: that unit exactly when the entry is ``person_level`` (its calibration proves
    the pattern), else any 2 rounds by group privacy (the learner run at one round's budget,
    :meth:`~dponline.privacy.budget.PrivacyBudget.by_group_privacy`); either way within the
    person's (epsilon, delta) (the tight calibration)."""
    if not entry.private:
        return
    who = _who(entry, case)
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(1), **case.environment_options
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        g = build_learner(
            entry,
            env,
            epsilon=case.epsilon,
            participations=2,
            min_separation=2,
            replicas=1,
            rng=np.random.default_rng(2),
            **case.learner_options,
        ).privacy
    unit = (2, 2) if entry.person_level else (2, 1)
    if (g.participations, g.min_separation) != unit:
        raise AssertionError(f"{who}: a budget over 2 rounds 2 apart states {g.unit!r}")
    if not entry.person_level and "group privacy over any 2" not in g.derivation:
        raise AssertionError(f"{who}: a person's guarantee not derived by group privacy: {g}")
    if g.requested_epsilon != case.epsilon:
        raise AssertionError(f"{who}: the person's request is not recorded: {g!r}")
    if not g.meets_request:  # built with the tight calibration
        raise AssertionError(f"{who}: the person's guarantee {g} misses the request")


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
    """The audit refutes neither the claim's epsilon nor, when it states one, its rho at full
    noise (a correct claim fails with probability at most ``alpha``, ``2 alpha`` with a rho)
    and, with ``tenth_refuted``, refutes its epsilon with less noise: a tenth, or the audit
    case's ``refute_fraction`` where the entry documents a looser proof. Returns both results
    (the second ``None`` without ``tenth_refuted``)."""
    who = _who(entry, case)
    kw = dict(calibration=calibration, trials=trials, pilot_trials=pilot_trials, alpha=alpha)
    full = audit_learner(entry, case, noise_fraction=1.0, **kw)  # type: ignore[arg-type]
    if full.any_refuted:
        raise AssertionError(f"{who} ({calibration}): the audit refutes the claim: {full}")
    if not tenth_refuted:
        return full, None
    fraction = case.audit.refute_fraction if case.audit is not None else 0.1
    tenth = audit_learner(entry, case, noise_fraction=fraction, **kw)  # type: ignore[arg-type]
    if not tenth.refuted:
        raise AssertionError(
            f"{who} ({calibration}): {fraction:g} of the noise is not caught by the audit: "
            f"{tenth}. Either the audit case does not let a decision see the change in full "
            "(docs/extending.md, the audit case), or the noise does not follow scale_noise "
            "(noise drawn outside the learner's noise handle, e.g. from its generators directly "
            "rather than through _noise, is not scaled, and the learner audited had its full "
            "noise)"
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
    check_act_repeats,
    check_refuses_corrupt_state,
    check_refuses_a_foreign_noise_multiplier,
    check_unit_of_privacy,
)


def check_learner(entry: LearnerEntry) -> None:
    """Every check on every test case of ``entry``, the audit included for a private learner.
    A check that fails raises ``AssertionError`` naming the learner, its case and what went
    wrong; an error raised where a check did not expect one (a learner being written: a hook
    it lacks, an action of the wrong shape; or a test case the check cannot run) becomes one
    too, naming the check, with the error chained."""
    for case in entry.test_cases:
        checks = (*CHECKS, check_audit) if entry.private else CHECKS
        for check in checks:
            try:
                check(entry, case)
            except AssertionError:
                raise
            except Exception as exc:
                raise AssertionError(
                    f"{_who(entry, case)}: {check.__name__} stopped on {type(exc).__name__}: {exc}"
                ) from exc
