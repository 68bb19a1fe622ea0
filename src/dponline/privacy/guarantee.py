"""What a mechanism or learner promises: :class:`PrivacyGuarantee`.

A guarantee names the privacy parameters, the neighbouring relation they are over, the notion of
privacy (event-level DP, joint DP, ...) and how it was derived (which lemma or which accountant).
It is a value: frozen, comparable, printable, and serialisable with
:meth:`PrivacyGuarantee.to_dict`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

__all__ = ["Neighbouring", "PrivacyGuarantee", "PrivacyNotion", "PrivacyWarning"]


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


class PrivacyNotion(StrEnum):
    """The notion of privacy a guarantee is stated in."""

    EVENT_LEVEL_DP = "event-level differential privacy under continual observation"
    JOINT_DP = "joint differential privacy under continual observation"


@dataclass(frozen=True)
class PrivacyGuarantee:
    """An (epsilon, delta) guarantee with its meaning and its derivation.

    Parameters
    ----------
    epsilon, delta:
        The proven privacy parameters (``delta == 0`` is pure DP).
    neighbouring:
        The neighbouring relation the parameters hold over.
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
    """

    epsilon: float
    delta: float
    neighbouring: Neighbouring = Neighbouring.ONE_ROUND
    notion: PrivacyNotion = PrivacyNotion.EVENT_LEVEL_DP
    derivation: str = ""
    rho: float | None = None
    requested_epsilon: float | None = None
    requested_delta: float | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.epsilon, (int, float)) and self.epsilon >= 0):
            raise ValueError(f"epsilon must be a non-negative number, got {self.epsilon!r}")
        if math.isnan(self.epsilon):
            raise ValueError("epsilon must not be NaN")
        if not (0.0 <= self.delta < 1.0):
            raise ValueError(f"delta must lie in [0, 1), got {self.delta!r}")
        if self.rho is not None and not (self.rho >= 0):
            raise ValueError(f"rho must be non-negative, got {self.rho!r}")

    @property
    def is_pure(self) -> bool:
        """True for pure epsilon-DP (delta == 0)."""
        return self.delta == 0.0

    @property
    def meets_request(self) -> bool:
        """True when the proven parameters are at least as strong as the requested ones."""
        eps_ok = self.requested_epsilon is None or self.epsilon <= self.requested_epsilon * (
            1 + 1e-9
        )
        delta_ok = self.requested_delta is None or self.delta <= self.requested_delta * (1 + 1e-9)
        return eps_ok and delta_ok

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        out = asdict(self)
        out["neighbouring"] = self.neighbouring.value
        out["notion"] = self.notion.value
        return out

    def __str__(self) -> str:
        core = (
            f"({self.epsilon:.4g}, {self.delta:.3g})-DP"
            if self.delta
            else (f"{self.epsilon:.4g}-DP (pure)")
        )
        if self.rho is not None:
            core += f", {self.rho:.4g}-zCDP"
        return f"{core}; {self.notion.value}; neighbours: {self.neighbouring.value}"
