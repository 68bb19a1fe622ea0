"""What a mechanism or learner promises: :class:`PrivacyGuarantee`.

A guarantee names the privacy parameters, the neighbouring relation they are over, the notion of
privacy (event-level DP, joint DP, ...) and how it was derived (which lemma or which accountant).
It is a value: frozen, comparable, printable, and serialisable with
:meth:`PrivacyGuarantee.to_dict`.

The unit of privacy: by default one round (event level: neighbouring streams differ in the input
of one round). A user-level guarantee protects one person who contributes to at most
``participations`` = k rounds, any two of them at least ``min_separation`` = b rounds apart
(rounds i and j of one person satisfy |i - j| >= b; b = 1 allows consecutive rounds: the
min-separation convention of Choquette-Choo et al. 2023 and jax_privacy, whose b is one more than
TensorFlow Privacy's ``min_separation``, the count of rounds strictly between). Neighbouring
streams then differ in the inputs of those k rounds, each within the input set.
:func:`unit_text` says it in words: "one person: at most k rounds, at least b apart".
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any

from dponline.privacy.arguments import (
    ArgumentError,
    checked_nonnegative,
    checked_positive,
    checked_probability,
)

__all__ = [
    "Neighbouring",
    "PrivacyGuarantee",
    "PrivacyNotion",
    "PrivacyWarning",
    "check_participation",
    "group_delta_factor",
    "group_guarantee",
    "proves_less",
    "restated",
    "scaled_guarantee",
    "unit_text",
]


class PrivacyWarning(UserWarning):
    """A calibration proves less privacy than was asked for (for example a paper's formula)."""


class Neighbouring(StrEnum):
    """Which inputs count as neighbours (docs/design.md, "Privacy semantics")."""

    #: Two streams that differ in the value of one round (loss vector, gradient, count).
    #: Agarwal & Singh (2017) Definition 2.1; Ene et al. (2021) Definition 2.1.
    ONE_ROUND = "streams differing in the input of one round"
    #: Two datasets that differ in one sample; every released iterate is output
    #: (Han et al., Section 2.2, continual release).
    ONE_SAMPLE = "datasets differing in one sample"
    #: Two streams of users that differ in one user's context and rewards; the output is every
    #: other user's action (Han et al., Definition 4.1, joint DP).
    ONE_USER = "streams differing in one user's context and rewards"


def proves_less(
    proven: PrivacyGuarantee | None, stated: PrivacyGuarantee, slack: float = 1e-9
) -> bool:
    """Whether ``proven`` (one part's guarantee: a doubling block's, an epoch's) falls short of
    the ``stated`` one: missing, over another neighbouring relation, for a smaller unit (fewer
    of a person's rounds, or rounds further apart, than stated), or with a larger epsilon,
    delta or (where ``stated`` gives one) rho beyond the relative ``slack`` of root finding.
    A person's guarantee derived by group privacy is compared by the one-input guarantees both
    were lifted from (for the same number of inputs): a part weaker for one input is weaker
    for the person, and parts no weaker for one input make a whole that the stated lift
    covers."""
    if stated.one_input is not None:
        return (
            proven is None
            or proven.one_input is None
            or proven.participations != stated.participations
            or proven.neighbouring is not stated.neighbouring
            or proven.notion is not stated.notion
            or (math.isinf(proven.epsilon) and not math.isinf(stated.epsilon))
            or proves_less(proven.one_input, stated.one_input, slack)
        )
    factor = 1 + slack
    return (
        proven is None
        or proven.participations < stated.participations
        or (stated.is_user_level and proven.min_separation > stated.min_separation)
        or proven.neighbouring is not stated.neighbouring
        or proven.epsilon > stated.epsilon * factor
        or proven.delta > stated.delta * factor
        or (stated.rho is not None and (proven.rho is None or proven.rho > stated.rho * factor))
    )


def check_participation(participations: Any, min_separation: Any) -> tuple[int, int]:
    """``(k, b)`` validated: integers with k >= 1 and b >= 1 (bools refused), else an error
    naming the value. With one participation the separation means nothing and is returned as 1,
    so that every event-level unit is the same value."""
    for name, value in (("participations", participations), ("min_separation", min_separation)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value!r}")
    k, b = int(participations), int(min_separation)
    return (k, b) if k > 1 else (1, 1)


def unit_text(
    participations: int, min_separation: int, neighbouring: Neighbouring | None = None
) -> str:
    """The unit of privacy in words: the neighbouring relation's own text for one round
    (``neighbouring``, default one round), "one person: at most k rounds, at least b apart"
    otherwise ("at most k samples" or "users" over those relations)."""
    k, b = check_participation(participations, min_separation)
    if k == 1:
        return (Neighbouring.ONE_ROUND if neighbouring is None else neighbouring).value
    if neighbouring in _INPUTS:
        what = _INPUTS[neighbouring]
        return f"one person: at most {k} {what} (differing in the person's {what})"
    return (
        f"one person: at most {k} rounds, at least {b} apart (streams differing in the inputs "
        "of those rounds: what the person's rounds hold, not whether they took part)"
    )


def group_delta_factor(epsilon: float, k: int) -> float:
    """sum_{i < k} e^(i epsilon) = (e^(k epsilon) - 1) / (e^epsilon - 1): the factor by which
    group privacy multiplies delta. An (epsilon, delta)-DP mechanism is (k epsilon,
    delta sum_{i < k} e^(i epsilon))-DP for inputs that differ in k places: change them one at a
    time, P[M(x_0) in S] <= e^epsilon P[M(x_1) in S] + delta, and by induction over the k steps
    delta_k = e^epsilon delta_(k-1) + delta (Dwork & Roth 2014, Theorem 2.2 for delta = 0; the
    factor is at most k e^((k-1) epsilon), the looser form often quoted). k for epsilon = 0,
    inf past the float range."""
    k = int(k)
    if k < 1:
        raise ValueError(f"a group has at least one member, got k = {k}")
    e = checked_nonnegative("epsilon", epsilon, infinite_ok=True)
    if e == 0.0:
        return float(k)
    if math.isinf(e):
        return 1.0 if k == 1 else math.inf
    try:
        return math.expm1(k * e) / math.expm1(e)
    except OverflowError:
        return math.inf


def group_guarantee(
    guarantee: PrivacyGuarantee,
    k: int,
    *,
    requested_epsilon: float | None = None,
    requested_delta: float | None = None,
) -> PrivacyGuarantee:
    """``guarantee``, proven for one input (a round's, a sample's, a user's), stated for one
    person who owns any ``k`` of the inputs, by group privacy: (k epsilon, delta
    :func:`group_delta_factor`) (Dwork & Roth 2014, Theorem 2.2, and its (epsilon, delta) form),
    and for a guarantee that gives rho, k^2 rho-zCDP (Bun & Steinke 2016, Proposition 1.9), whose
    epsilon at the same delta (:func:`~dponline.privacy.accounting.zcdp_renyi_epsilon`) is
    stated when smaller. Both hold for any k inputs whatever their separation (the path from one
    stream to the other changes one input at a time, each step a neighbour), so the person's
    ``min_separation`` is 1. An event-level notion becomes user-level; joint DP stays joint
    (outputs to those outside the group are post-processing at every step). A vacuous result
    (delta >= 1) is stated as epsilon = inf. ``requested_*`` record the person's request.

    >>> g = PrivacyGuarantee(0.1, 0.0, derivation="Laplace")
    >>> lifted = group_guarantee(g, 5, requested_epsilon=0.5, requested_delta=0.0)
    >>> (round(lifted.epsilon, 12), lifted.participations, lifted.meets_request)
    (0.5, 5, True)
    """
    if guarantee.participations != 1:
        raise ValueError(
            f"group privacy lifts a guarantee for one input; this one is already over "
            f"{guarantee.unit}"
        )
    k = int(k)
    if k == 1:
        return guarantee
    eps1, delta1 = guarantee.epsilon, guarantee.delta
    epsilon = k * eps1
    delta = delta1 * group_delta_factor(eps1, k) if delta1 > 0 else 0.0
    rho = None if guarantee.rho is None else k * k * guarantee.rho
    how = (
        f"group privacy over any {k} of its inputs, whatever their separation: "
        f"({eps1:.6g}, {delta1:.3g}) for one input gives (k epsilon, delta sum_(i<k) "
        "e^(i epsilon)) for k of them (Dwork & Roth 2014, Theorem 2.2, by induction over the "
        "inputs changed one at a time)"
    )
    if rho is not None and 0.0 < delta < 1.0 and math.isfinite(rho):
        from dponline.privacy.accounting import zcdp_renyi_epsilon

        by_rho = zcdp_renyi_epsilon(rho, delta)
        how += f"; and {rho:.6g}-zCDP (k^2 rho, Bun & Steinke 2016, Proposition 1.9)"
        if by_rho < epsilon:
            epsilon = by_rho
            how += f", whose epsilon at that delta, {by_rho:.6g}, is stated"
    if not delta < 1.0:
        epsilon, delta = math.inf, delta1
        how += ": vacuous (delta would reach 1)"
    notion = _lifted_notion(guarantee.notion)
    return replace(
        guarantee,
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        notion=notion,
        derivation=f"{how}. For one input: {guarantee.derivation}",
        requested_epsilon=requested_epsilon,
        requested_delta=requested_delta,
        participations=k,
        min_separation=1,
        one_input=guarantee,
    )


def _lifted_notion(notion: PrivacyNotion) -> PrivacyNotion:
    """The notion of a guarantee lifted from one input's by group privacy: event-level DP
    becomes user-level; joint DP stays joint."""
    return PrivacyNotion.USER_LEVEL_DP if notion is PrivacyNotion.EVENT_LEVEL_DP else notion


def restated(
    guarantee: PrivacyGuarantee,
    *,
    neighbouring: Neighbouring | None = None,
    notion: PrivacyNotion | None = None,
    derivation: str | None = None,
) -> PrivacyGuarantee:
    """``guarantee`` over another relation or notion, or with another derivation (a learner
    saying what its parts' guarantee means for it, e.g. joint DP over users from estimators'
    DP over samples), its one-input guarantee restated alike when it was lifted by group
    privacy: a relation or notion changed outside only would leave the one-input guarantee,
    which compositions read (:func:`proves_less`), saying something else. A lifted guarantee's
    notion is given as the person's (user-level or joint)."""
    changes: dict[str, Any] = {}
    if neighbouring is not None:
        changes["neighbouring"] = neighbouring
    if notion is not None:
        changes["notion"] = notion
    if derivation is not None:
        changes["derivation"] = derivation
    one = guarantee.one_input
    if one is not None and (neighbouring is not None or notion is not None):
        inner: dict[str, Any] = {} if neighbouring is None else {"neighbouring": neighbouring}
        if notion is not None:
            inner["notion"] = (
                PrivacyNotion.EVENT_LEVEL_DP if notion is PrivacyNotion.USER_LEVEL_DP else notion
            )
        changes["one_input"] = replace(one, **inner)
    return replace(guarantee, **changes)


#: a person's inputs under the relations that are not over rounds (a user-level guarantee over
#: them comes from group privacy, :func:`group_guarantee`)
_INPUTS = {Neighbouring.ONE_SAMPLE: "samples", Neighbouring.ONE_USER: "users"}


class PrivacyNotion(StrEnum):
    """The notion of privacy a guarantee is stated in."""

    EVENT_LEVEL_DP = "event-level differential privacy under continual observation"
    #: Neighbours differ in one person's rounds (at most k, at least b apart).
    USER_LEVEL_DP = "user-level differential privacy under continual observation"
    JOINT_DP = "joint differential privacy under continual observation"


@dataclass(frozen=True)
class PrivacyGuarantee:
    """An (epsilon, delta) guarantee with its meaning and its derivation.

    Parameters
    ----------
    epsilon, delta:
        The proven privacy parameters (``delta == 0`` is pure DP).
    neighbouring:
        The relation between one input and its replacement (one round's, sample's or user's
        input). The parameters hold over it for one input; a user-level guarantee
        (:attr:`is_user_level`, ``participations`` > 1) holds over a person's inputs, so
        ``neighbouring`` alone does not say the unit: :attr:`unit` does (and ``to_dict()``'s
        ``neighbouring``).
    notion:
        Event-level or joint DP.
    derivation:
        How the numbers were obtained, citing the lemma or the accountant.
    rho:
        The zero-concentrated DP parameter when the mechanism is Gaussian (``None`` otherwise).
    requested_epsilon, requested_delta:
        What the user asked for (set by every calibration, through
        :meth:`dponline.privacy.budget.PrivacyBudget.prove`), beside what is proven: a paper's
        calibration can prove less than it claims (see :class:`PrivacyWarning`) or more.
    participations, min_separation:
        The unit of privacy (module docstring): one round (1, 1, the default) or one person with
        at most ``participations`` rounds, any two at least ``min_separation`` apart.
    one_input:
        For a person's guarantee derived by group privacy (:func:`group_guarantee`), the
        guarantee for one input it was derived from (what a composition over disjoint rounds,
        such as the doubling trick's epochs, combines before lifting once); ``None`` otherwise.
    assumes:
        What the guarantee takes for granted of the deployment beyond its inputs' bounds, in
        words ("" for nothing more): printed by ``str()`` beside the numbers, since a
        deployment that breaks it has no guarantee (a wrapper's, such as
        :class:`~dponline.bandits.delayed.DelayedPolicy`'s outcome timing).
    """

    epsilon: float
    delta: float
    neighbouring: Neighbouring = Neighbouring.ONE_ROUND
    notion: PrivacyNotion = PrivacyNotion.EVENT_LEVEL_DP
    derivation: str = ""
    rho: float | None = None
    requested_epsilon: float | None = None
    requested_delta: float | None = None
    participations: int = 1
    min_separation: int = 1
    one_input: PrivacyGuarantee | None = None
    assumes: str = ""

    def __post_init__(self) -> None:
        k, b = check_participation(self.participations, self.min_separation)
        if self.one_input is not None:
            one = self.one_input
            if not isinstance(one, PrivacyGuarantee) or one.is_user_level:
                raise ArgumentError(f"one_input must be a guarantee for one input, got {one!r}")
            if (
                k == 1
                or one.neighbouring is not self.neighbouring
                or self.notion is not (_lifted_notion(one.notion))
            ):
                raise ArgumentError(
                    "a guarantee lifted by group privacy states a person (participations > 1), "
                    "over its one-input guarantee's relation, in the notion lifted from it "
                    f"(restate both with restated()); got {self.notion.name} over "
                    f"{self.neighbouring.name} for participations {k}, one input "
                    f"{one.notion.name} over {one.neighbouring.name}"
                )
        object.__setattr__(self, "participations", k)
        object.__setattr__(self, "min_separation", b)
        if not isinstance(self.assumes, str):
            raise ArgumentError(f"assumes must be words (a str), got {self.assumes!r}")
        # epsilon may be inf (a voided guarantee: scale_noise below the calibrated noise)
        epsilon = checked_nonnegative("epsilon", self.epsilon, infinite_ok=True)
        object.__setattr__(self, "epsilon", epsilon)
        delta = checked_probability("delta", self.delta, closed=True)
        if delta == 1.0:
            raise ArgumentError(f"delta must lie in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", delta)
        if self.rho is not None:
            rho = checked_nonnegative("rho", self.rho, infinite_ok=True)
            object.__setattr__(self, "rho", rho)

    @property
    def is_pure(self) -> bool:
        """True for pure epsilon-DP (delta == 0)."""
        return self.delta == 0.0

    @property
    def is_user_level(self) -> bool:
        """True when the unit of privacy is one person with several rounds."""
        return self.participations > 1

    @property
    def unit(self) -> str:
        """The unit of privacy in words (:func:`unit_text`)."""
        return unit_text(self.participations, self.min_separation, self.neighbouring)

    @property
    def meets_request(self) -> bool:
        """True when the proven parameters are at least as strong as the requested ones."""
        eps_ok = self.requested_epsilon is None or self.epsilon <= self.requested_epsilon * (
            1 + 1e-9
        )
        delta_ok = self.requested_delta is None or self.delta <= self.requested_delta * (1 + 1e-9)
        return eps_ok and delta_ok

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict. ``neighbouring`` and ``unit`` are the whole relation in
        words (one person's rounds for a user-level guarantee, else one round's, sample's or
        user's input); ``per_input`` is the relation between one input and another, which a
        user-level guarantee extends to ``participations`` of them."""
        out = asdict(self)
        out["one_input"] = None if self.one_input is None else self.one_input.to_dict()
        out["neighbouring"] = self.unit
        out["per_input"] = self.neighbouring.value
        out["notion"] = self.notion.value
        out["unit"] = self.unit
        return out

    def __str__(self) -> str:
        core = (
            f"({self.epsilon:.4g}, {self.delta:.3g})-DP"
            if self.delta
            else (f"{self.epsilon:.4g}-DP (pure)")
        )
        if self.rho is not None:
            core += f", {self.rho:.4g}-zCDP"
        text = f"{core}; {self.notion.value}; neighbours: {self.unit}"
        return f"{text}; assumes {self.assumes}" if self.assumes else text


def scaled_guarantee(
    privacy: PrivacyGuarantee | None, noise_multiplier: float
) -> PrivacyGuarantee | None:
    """The guarantee of a mechanism whose calibrated noise was multiplied by
    ``noise_multiplier`` (an audit's handle): unchanged at a multiplier >= 1 (more noise proves
    at least as much), none (epsilon = inf, the calibrated derivation kept) below 1. Learners
    (:meth:`~dponline.protocol.NoiseHandle.scale_noise`), counters and the batch fits all state
    it so."""
    m = checked_positive("noise_multiplier", noise_multiplier)
    if privacy is None or m >= 1.0:
        return privacy
    return replace(
        privacy,
        epsilon=math.inf,
        rho=None,
        one_input=scaled_guarantee(privacy.one_input, m),
        derivation=(
            f"noise multiplied by {m:g} after calibration: no guarantee (for audits). As "
            f"calibrated: {privacy.derivation}"
        ),
    )
