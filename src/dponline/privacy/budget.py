"""What a user asks for: :class:`PrivacyBudget`, and how a calibration answers it.

A budget is one frozen value, validated once, that every private learner takes:

* ``epsilon`` and ``delta`` (``delta == 0`` asks for pure DP);
* ``calibration``: ``"tight"`` (the least noise dponline can prove for the budget, the default) or
  ``"paper"`` (a paper's own noise formula, for reproduction);
* ``neighbouring``: the relation the guarantee is over (what a learner states; a learner whose
  relation differs, such as joint DP over users, records its own);
* ``participations`` and ``min_separation``: the unit of privacy. The default (1) is one round
  (event level). ``participations=k, min_separation=b`` asks to protect one person who
  contributes to at most k rounds, any two of them at least b rounds apart (|i - j| >= b for
  rounds i, j of one person; b = 1 allows consecutive rounds; the convention of jax_privacy,
  one more than TensorFlow Privacy's ``min_separation``). Only a calibration that declares it
  (``supports_participation``, see :func:`dponline.privacy.calibration.calibrate`) answers such
  a budget; :meth:`PrivacyBudget.prove` refuses to state a person-level guarantee from a proof
  that did not say it covers the person (``per_person=True``);
* ``allow_weaker``: a ``paper`` formula can prove *less* than it claims (a sensitivity it
  under-counts, a tree deeper than its ``log T``). Such a calibration raises
  :class:`WeakerGuaranteeError` unless the caller opts in with ``allow_weaker=True`` (to reproduce
  the paper's numbers); then it warns and the guarantee records both the request and the proof.

The answer of a calibration is a :class:`~dponline.privacy.guarantee.PrivacyGuarantee` built by
:meth:`PrivacyBudget.prove`: what the noise actually used proves, never the request.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any

from dponline.privacy.guarantee import (
    Neighbouring,
    PrivacyGuarantee,
    PrivacyNotion,
    PrivacyWarning,
    check_participation,
    group_delta_factor,
    group_guarantee,
    unit_text,
)
from dponline.warn import warn_caller

__all__ = [
    "CALIBRATIONS",
    "PersonNotCovered",
    "PrivacyBudget",
    "WeakerGuaranteeError",
    "check_calibration",
    "group_privacy_hint",
    "noise_for",
]

#: The two calibration families (docs/design.md, "What dponline is").
CALIBRATIONS = ("tight", "paper")


class WeakerGuaranteeError(ValueError):
    """A calibration proves less privacy than the budget asks for."""


class PersonNotCovered(ValueError):
    """A budget over a person (participations > 1) given to a calibration, a mechanism or a
    learner whose proof covers one round only. The message names the ways out; group privacy
    (:meth:`PrivacyBudget.by_group_privacy`) always is one, and
    :func:`~dponline.registry.build_learner` takes it by itself."""


def check_calibration(calibration: Any) -> str:
    """``calibration`` if it is ``"tight"`` or ``"paper"``, else ValueError naming it."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    return str(calibration)


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class PrivacyBudget:
    """An (epsilon, delta) request with its calibration family (see the module docstring).

    >>> PrivacyBudget(1.0, 1e-6)
    PrivacyBudget(epsilon=1.0, delta=1e-06, calibration='tight', ...)
    """

    epsilon: float
    delta: float = 0.0
    calibration: str = "tight"
    neighbouring: Neighbouring = Neighbouring.ONE_ROUND
    allow_weaker: bool = False
    participations: int = 1
    min_separation: int = 1
    #: The person's budget this one-round budget answers by group privacy
    #: (:meth:`by_group_privacy`): every proof of it is stated for the person; ``None`` for a
    #: budget asked for directly.
    group_of: PrivacyBudget | None = None

    def __post_init__(self) -> None:
        eps = _real("epsilon", self.epsilon)
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"epsilon must be a finite positive number, got {self.epsilon!r}")
        delta = _real("delta", self.delta)
        if not (0.0 <= delta < 1.0):
            raise ValueError(f"delta must lie in [0, 1), got {self.delta!r}")
        check_calibration(self.calibration)
        if not isinstance(self.neighbouring, Neighbouring):
            raise TypeError(f"neighbouring must be a Neighbouring, got {self.neighbouring!r}")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)
        if not isinstance(self.allow_weaker, bool):
            raise TypeError(f"allow_weaker must be True or False, got {self.allow_weaker!r}")
        k, b = check_participation(self.participations, self.min_separation)
        if k > 1 and self.neighbouring is not Neighbouring.ONE_ROUND:
            raise ValueError(
                f"participations={k} protects one person's rounds of a stream; it is defined "
                f"over neighbouring {Neighbouring.ONE_ROUND.name}, not {self.neighbouring.name} "
                f"({self.neighbouring.value})"
            )
        object.__setattr__(self, "participations", k)
        object.__setattr__(self, "min_separation", b)
        if self.group_of is not None:
            self._check_group()

    def _check_group(self) -> None:
        """A budget answering a person's by group privacy asks for one round, and little enough
        that the lift meets the person's request (:meth:`by_group_privacy`)."""
        person = self.group_of
        if not isinstance(person, PrivacyBudget) or not person.is_user_level:
            raise ValueError(
                f"group_of must be a budget over a person (participations > 1), got {person!r}"
            )
        if self.is_user_level or person.group_of is not None:
            raise ValueError("a budget answering a person's by group privacy is over one round")
        k = person.participations
        slack = 1 + 1e-12
        if (
            k * self.epsilon > person.epsilon * slack
            or self.delta * group_delta_factor(self.epsilon, k) > person.delta * slack
        ):
            raise ValueError(
                f"({self.epsilon:.6g}, {self.delta:.3g}) for one round does not protect "
                f"{person.unit} at ({person.epsilon:.6g}, {person.delta:.3g}) by group "
                "privacy; build it with person_budget.by_group_privacy()"
            )

    def __repr__(self) -> str:
        unit = (
            f", participations={self.participations}, min_separation={self.min_separation}"
            if self.is_user_level
            else ""
        )
        group = "" if self.group_of is None else f", group_of={self.group_of!r}"
        return (
            f"PrivacyBudget(epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"calibration={self.calibration!r}, neighbouring={self.neighbouring.name}, "
            f"allow_weaker={self.allow_weaker!r}{unit}{group})"
        )

    @property
    def is_user_level(self) -> bool:
        """True when the budget protects one person with several rounds (participations > 1)."""
        return self.participations > 1

    @property
    def unit(self) -> str:
        """The unit of privacy in words: "one person: at most k rounds, at least b apart", or
        the neighbouring relation of one round; for a budget answering a person's by group
        privacy, that person's."""
        if self.group_of is not None:
            return f"{self.group_of.unit}, by group privacy over one round's guarantee"
        return unit_text(self.participations, self.min_separation, self.neighbouring)

    def answered_by(self, guarantee: PrivacyGuarantee | None) -> bool:
        """Whether ``guarantee`` is a proof for this budget (a calibration handed in must be):
        proven for its (epsilon, delta) and relation, meeting it unless the budget allows a
        weaker proof, and for its unit: one round, its person's pattern, or for a budget
        answering a person's by group privacy, lifted from one round's proof of it to that
        person's k rounds."""
        one = self.per_input(guarantee)
        if guarantee is None or one is None:
            return False
        if not (guarantee.meets_request or self.allow_weaker):
            return False  # a paper formula's weaker proof, which this budget does not allow
        asked = (one.requested_epsilon, one.requested_delta, one.neighbouring)
        if asked != (self.epsilon, self.delta, self.neighbouring):
            return False
        if self.group_of is None:
            unit = (self.participations, self.min_separation)
            return (guarantee.participations, guarantee.min_separation) == unit
        person = self.group_of
        return (
            guarantee.requested_epsilon,
            guarantee.requested_delta,
            guarantee.participations,
        ) == (
            person.epsilon,
            person.delta,
            person.participations,
        )

    def per_input(self, guarantee: PrivacyGuarantee | None) -> PrivacyGuarantee | None:
        """What a guarantee proven for this budget says of one input: the guarantee itself, or
        for a budget answering a person's by group privacy, the one-input guarantee it was
        lifted from (``None`` if it was not lifted). A composition over disjoint rounds (the
        doubling trick's epochs and blocks) combines these, then proves the whole once (lifting
        it once: lifting each part and then the whole would state the person's epsilon k
        times over)."""
        if self.group_of is None or guarantee is None:
            return guarantee
        one = guarantee.one_input
        if one is not None and math.isinf(guarantee.epsilon) and math.isfinite(one.epsilon):
            # voided outside (noise cut below its calibration): void the one input too
            one = replace(one, epsilon=math.inf, rho=None)
        return one

    def by_group_privacy(self) -> PrivacyBudget:
        """The one-round budget that protects this budget's person by group privacy, for a
        learner that proves one round's privacy only; self for a one-round budget.

        A guarantee of (e, d) for one round is (k e, d sum_(i<k) e^(i e)) for any k rounds
        (:func:`~dponline.privacy.guarantee.group_delta_factor`), so one round is asked
        (epsilon / k, delta / sum_(i<k) e^(i epsilon / k)). The learner runs at that budget (its
        noise and its exploration are one round's at epsilon / k), and every guarantee it proves
        is stated for the person (:meth:`prove`, :func:`~dponline.privacy.guarantee.
        group_guarantee`): epsilon at most the person's, any k rounds whatever their separation.
        For pure DP and a learner that uses each round's input in one release (the K-armed
        learners' Laplace sums, the batched bandits' batch means), k epsilon is attained: a
        person's k rounds in one release shift it k times as far. A learner that proves a
        person's privacy itself (``person_level`` in ``dponline list``: the continual counters'
        learners, calibrated for the pattern) is tighter, and takes the person's budget as is.

        >>> person = PrivacyBudget(1.0, participations=4, min_separation=10)
        >>> person.by_group_privacy().epsilon
        0.25
        """
        if not self.is_user_level:
            return self
        k = self.participations
        eps = self.epsilon / k
        return PrivacyBudget(
            eps,
            self.delta / group_delta_factor(eps, k),
            self.calibration,
            self.neighbouring,
            self.allow_weaker,
            group_of=self,
        )

    def require_event_level(self, what: str) -> PrivacyBudget:
        """Self, or :class:`PersonNotCovered` when the budget is user-level and ``what`` (a
        learner, a calibrator) proves event-level privacy only. The message names the way out:
        group privacy (:meth:`by_group_privacy`)."""
        if not self.is_user_level:
            return self
        raise PersonNotCovered(group_privacy_hint(what, self))

    @property
    def is_pure(self) -> bool:
        """True when the budget asks for pure DP (delta == 0)."""
        return self.delta == 0.0

    @property
    def noise(self) -> str:
        """The noise this budget asks for when a learner or counter is not told one: "laplace"
        for pure DP (delta = 0), "gaussian" for delta > 0."""
        return "laplace" if self.is_pure else "gaussian"

    def require_delta(self, what: str) -> PrivacyBudget:
        """Self, or ValueError when ``what`` needs delta > 0 and the budget has delta == 0."""
        if self.is_pure:
            raise ValueError(
                f"{what} gives (epsilon, delta)-DP with delta > 0: the budget's delta must lie "
                "in (0, 1), got 0"
            )
        return self

    def prove(
        self,
        epsilon: float,
        delta: float,
        derivation: str,
        *,
        rho: float | None = None,
        neighbouring: Neighbouring | None = None,
        notion: PrivacyNotion = PrivacyNotion.EVENT_LEVEL_DP,
        per_person: bool = False,
    ) -> PrivacyGuarantee:
        """The guarantee that a calibration's noise proves, checked against this budget.

        A proof at least as strong as the request is returned as is. A weaker one raises
        :class:`WeakerGuaranteeError`, except for a ``paper`` calibration with
        ``allow_weaker=True``, which warns (:class:`PrivacyWarning`, attributed to the first caller
        outside dponline: the line that built the learner) and returns the weaker
        guarantee with the request recorded beside it. A ``tight`` calibration that proves less
        than asked is a bug in dponline and always raises.

        The guarantee's unit is the budget's. A user-level budget (``participations > 1``) needs
        ``per_person=True``: the caller's derivation covers one person's rounds; without it the
        proof is taken as event-level and refused (ValueError), so that no calibration states a
        person-level guarantee it did not prove.
        """
        if self.is_user_level and not per_person:
            raise PersonNotCovered(group_privacy_hint(f"the proof {derivation!r}", self))
        if self.is_user_level and notion is PrivacyNotion.EVENT_LEVEL_DP:
            notion = PrivacyNotion.USER_LEVEL_DP
        g = PrivacyGuarantee(
            epsilon=float(epsilon),
            delta=float(delta),
            neighbouring=self.neighbouring if neighbouring is None else neighbouring,
            notion=notion,
            derivation=derivation,
            rho=rho,
            requested_epsilon=self.epsilon,
            requested_delta=self.delta,
            participations=self.participations,
            min_separation=self.min_separation,
        )
        if self.group_of is not None:
            g = group_guarantee(
                g,
                self.group_of.participations,
                requested_epsilon=self.group_of.epsilon,
                requested_delta=self.group_of.delta,
            )
        if g.meets_request:
            return g
        message = (
            f"the {self.calibration!r} calibration proves only epsilon={g.epsilon:.4g}, "
            f"delta={g.delta:.3g}, not the requested ({g.requested_epsilon:.4g}, "
            f"{g.requested_delta:.3g}): {g.derivation}"
        )
        if self.calibration == "paper" and self.allow_weaker:
            warn_caller(message, PrivacyWarning)
            return g
        hint = (
            "; to reproduce the paper anyway, build the budget with allow_weaker=True "
            "(the guarantee then records what is proven)"
            if self.calibration == "paper"
            else ""
        )
        raise WeakerGuaranteeError(message + hint)


def _round_down(x: float, digits: int) -> float:
    """``x`` to ``digits`` significant digits, rounded towards 0 (a budget printed for the
    user to copy must not exceed what it was computed from)."""
    if x == 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(abs(x))))
    down = math.floor(x * scale) / scale
    return down if down <= x else math.nextafter(down, 0.0)


def group_privacy_hint(
    what: str,
    budget: PrivacyBudget,
    instead: str = "a learner whose `dponline list` entry says 'proves a person's k rounds "
    "... itself' takes a person's budget (those on the continual counters, calibration 'tight')",
) -> str:
    """The refusal of a user-level ``budget`` by ``what``, which proves event-level privacy only,
    with the group-privacy way out (:meth:`PrivacyBudget.by_group_privacy`: one round asked
    (epsilon / k, delta / sum_(i<k) e^(i epsilon / k)), every proof stated for the person)."""
    one = budget.by_group_privacy()
    return (
        f"{what} proves event-level privacy (one round) only and does not support a user-level "
        f"budget ({budget.unit}); {instead}, or rely on group privacy: pass "
        f"budget.by_group_privacy(), which asks one round for "
        f"({_round_down(one.epsilon, 6):.6g}, {_round_down(one.delta, 3):.3g}) and states the "
        f"guarantee for the person's {budget.participations} rounds at "
        f"({budget.epsilon:.6g}, {budget.delta:.3g}) (build_learner and specs do so by "
        "themselves)"
    )


def noise_for(budget: PrivacyBudget | None, noise: str | None, fallback: str) -> str:
    """``noise`` when given; else the budget's (:attr:`PrivacyBudget.noise`: Laplace for
    delta = 0, Gaussian for delta > 0), so that one budget builds every learner and counter
    that offers both; ``fallback`` without a budget (the non-private counterpart draws none)."""
    if noise is not None:
        return noise
    return budget.noise if isinstance(budget, PrivacyBudget) else fallback
