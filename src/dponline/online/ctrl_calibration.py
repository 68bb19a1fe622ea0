"""CTRL's two calibrations behind the calibration seam (:mod:`dponline.privacy.calibration`).

Algorithm 1 of Agarwal, Kale, Singh & Thakurta (2023) draws Gaussian perturbations, but what a
budget sets is five parameters together: the learning rate eta, the noise scale sigma, the
density-ratio scale Phi, the forced switching rate p and the switching budget B
(:class:`~dponline.online.ctrl_parameters.CTRLParameters`). :class:`CTRLCalibrator` answers a
:class:`~dponline.privacy.budget.PrivacyBudget` with them (the :class:`Calibration`'s ``noise``)
and the guarantee they prove, built once by :meth:`PrivacyBudget.prove`:

* ``paper``: Theorem 8's parameters (Theorem 11's for GLM losses),
  :func:`~dponline.online.ctrl_parameters.calibrate_paper`, claiming what Theorem 6's *proof*
  gives them (:func:`~dponline.online.ctrl_parameters.proven_privacy` with Lemma 17's
  delta'' = delta / 2); the derivation also quotes Theorem 6 as printed
  (:func:`~dponline.online.ctrl_parameters.theorem6_epsilon`), for comparison only. They can
  prove less than asked (short horizons): refused unless the budget allows it.
* ``tight``: the parameters of :func:`~dponline.online.ctrl_parameters.calibrate_tight` (the least
  sigma the Renyi-DP analysis of :mod:`dponline.online.ctrl_renyi` proves for the budget, at the
  (eta, p) with the least Theorem 4 bound), claiming what that analysis proves.

Both need delta > 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from dponline.online.ctrl_parameters import (
    CTRLParameters,
    calibrate_paper,
    calibrate_tight,
    proven_privacy,
    theorem6_epsilon,
)
from dponline.privacy.arguments import checked_positive
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration
from dponline.protocol import checked_count

__all__ = ["CTRLCalibrator"]

#: the :attr:`Calibration.mechanism` of CTRL's calibrations
MECHANISM = "CTRL (Algorithm 1)"


@dataclass(frozen=True)
class CTRLCalibrator:
    """The parameters of Algorithm 1 for T = ``horizon`` losses on a set of ``diameter`` D in
    R^``dim``, every loss G = ``lipschitz``-Lipschitz and beta = ``smoothness``-smooth over it
    (GLM losses f(<v, x>, y) of one link with ``glm``: Theorem 11 and Lemma 10 in place of
    Theorem 8 and Lemma 7). See the module docstring; ``Calibration.noise`` is the
    :class:`~dponline.online.ctrl_parameters.CTRLParameters`."""

    horizon: int
    dim: int
    lipschitz: float
    smoothness: float
    diameter: float
    glm: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "horizon", checked_count("horizon", self.horizon))
        object.__setattr__(self, "dim", checked_count("dim", self.dim))
        for name in ("lipschitz", "smoothness", "diameter"):
            object.__setattr__(self, name, checked_positive(name, getattr(self, name)))
        object.__setattr__(self, "glm", bool(self.glm))

    def _problem(self) -> dict:
        return {
            "horizon": self.horizon,
            "dim": self.dim,
            "lipschitz": self.lipschitz,
            "smoothness": self.smoothness,
            "diameter": self.diameter,
            "glm": self.glm,
        }

    @staticmethod
    def _checked(budget: PrivacyBudget) -> PrivacyBudget:
        return budget.require_delta("CTRL's Gaussian perturbation")

    def paper(self, budget: PrivacyBudget) -> Calibration:
        """Theorem 8 (Theorem 11 for GLMs), proven by Theorem 6's proof evaluated exactly."""
        b = self._checked(budget)
        params = calibrate_paper(b.epsilon, b.delta, **self._problem())
        proof = proven_privacy(params, b.delta / 2.0)
        eps6, delta6 = theorem6_epsilon(params, b.delta)
        derivation = (
            f"paper: Theorem {11 if self.glm else 8}'s eta and sigma, Theorem 6's Phi, "
            f"p = T^(-1/3), B = 3 p~ T (Theorem 6 as printed would give epsilon {eps6:.4g}, "
            f"delta {delta6:.3g}); proven: {proof.derivation}"
        )
        return self._answer(b, params, proof.epsilon, proof.delta, derivation)

    def tight(self, budget: PrivacyBudget) -> Calibration:
        """:func:`~dponline.online.ctrl_parameters.calibrate_tight`, proven by the Renyi-DP
        analysis of each round's stay-or-switch kernel."""
        b = self._checked(budget)
        params, proof = calibrate_tight(b.epsilon, b.delta, **self._problem())
        derivation = (
            "tight: the (eta, p) minimising Theorem 4's bound over a grid and the least sigma "
            f"meeting the budget; proven by the {proof.derivation}"
        )
        return self._answer(b, params, proof.epsilon, proof.delta, derivation)

    @staticmethod
    def _answer(
        budget: PrivacyBudget, params: CTRLParameters, epsilon: float, delta: float, how: str
    ) -> Calibration:
        guarantee = budget.prove(epsilon, delta, how)
        return Calibration(params, guarantee, budget.calibration, MECHANISM)
