"""The calibration seam: one interface for every algorithm family's noise.

Every private algorithm gets its noise from a *calibrator* that sits beside it (the counters'
in :mod:`dponline.continual.calibration`, each learner's in its own module) and answers a
:class:`~dponline.privacy.budget.PrivacyBudget` in two ways:

* ``paper(budget)``: the paper's own noise formula, exactly (cited where it is written);
* ``tight(budget)``: the least noise dponline can prove for the same budget (exact
  sensitivities, exact Gaussian / zCDP / PLD accounting from :mod:`dponline.privacy.accounting`).

Both return a :class:`Calibration`: the noise and the guarantee *that noise proves*, built with
:meth:`PrivacyBudget.prove`, which refuses a ``paper`` formula that proves less than asked unless
the budget opts in (``allow_weaker=True``). :func:`calibrate` dispatches on
``budget.calibration``.

The unit of privacy: a user-level budget (one person, at most k rounds at least b apart,
:class:`~dponline.privacy.budget.PrivacyBudget`) is answered only by a calibrator that declares
``supports_participation = True`` and proves the person's guarantee (the continual counters'
:class:`~dponline.continual.calibration.CounterCalibrator`); :func:`calibrate` refuses it for
every other calibrator, naming it and the group-privacy way out, so that no learner states a
person-level guarantee it does not have.

This module holds only that machinery and the conventions shared by the papers' formulas; it
imports nothing outside :mod:`dponline.privacy`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from dponline.privacy.budget import PersonNotCovered, PrivacyBudget, group_privacy_hint
from dponline.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "Calibration",
    "Calibrator",
    "calibrate",
    "describe_calibrator",
    "paper_log",
]


@dataclass(frozen=True)
class Calibration:
    """A calibrator's answer: the noise to draw and the guarantee it proves.

    ``noise`` is a :class:`~dponline.privacy.noise.NoiseDistribution` for additive mechanisms, or
    what the algorithm needs otherwise (a schedule of scales for report-noisy-min); ``details``
    keeps the quantities the derivation used (sensitivities, node counts) for reports and tests.
    """

    noise: Any
    guarantee: PrivacyGuarantee
    calibration: str
    mechanism: str
    details: tuple[tuple[str, Any], ...] = ()


@runtime_checkable
class Calibrator(Protocol):
    """The noise of one algorithm family, in the paper's calibration and in the tight one.

    A calibrator that can answer a user-level budget (one person's k rounds) says so with a
    class attribute ``supports_participation = True``; without it, :func:`calibrate` refuses
    such budgets."""

    def paper(self, budget: PrivacyBudget) -> Calibration: ...

    def tight(self, budget: PrivacyBudget) -> Calibration: ...


def calibrate(calibrator: Calibrator, budget: PrivacyBudget) -> Calibration:
    """``calibrator.paper(budget)`` or ``calibrator.tight(budget)``, as the budget asks; a
    user-level budget only for a calibrator that declares ``supports_participation``
    (module docstring), else ValueError naming the calibrator."""
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a PrivacyBudget, got {type(budget).__name__}")
    if budget.is_user_level and getattr(calibrator, "supports_participation", False) is not True:
        raise PersonNotCovered(group_privacy_hint(describe_calibrator(calibrator), budget))
    if budget.calibration == "paper":
        return calibrator.paper(budget)
    return calibrator.tight(budget)


def describe_calibrator(calibrator: object) -> str:
    """``calibrator`` named for an error: its class and module, and its mechanism if it has
    one (the module names the learner family it calibrates)."""
    cls = type(calibrator)
    mechanism = getattr(calibrator, "mechanism", None)
    name = getattr(mechanism, "name", mechanism)
    extra = f" for mechanism {name!r}" if isinstance(name, str) else ""
    return f"calibrator {cls.__name__} ({cls.__module__}){extra}"


def paper_log(horizon: int) -> float:
    """The papers' ``log T`` for a tree over T rounds: log2(T), at least 1.

    The papers write ``log T`` for the depth of the binary tree they aggregate with; we read it
    as log2(T) and ``log(.)`` elsewhere as the natural logarithm.
    """
    return max(1.0, math.log2(int(horizon)))
