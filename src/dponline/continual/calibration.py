"""Noise for a continual counter: :class:`CounterCalibrator` and :func:`calibrate_counter`.

``paper``: the formulas of the papers that aggregate with a tree, exactly as printed --
Agarwal & Singh (2017) Theorem 3.1 (Laplace) and Theorem A.1 (Gaussian), and Han et al.
Theorem 3.1 (generalized Gaussian per node, Lemma 2.7 at (epsilon/k, delta/k)). Defined for the
tree mechanisms only.

``tight``: the least noise we can prove for the same budget on any mechanism: the exact l1 / l2
sensitivity of one round (the input set's diameter times the mechanism's column norm,
``sensitivity_factors``), Laplace through exact l1 sensitivity, Gaussian noise through the exact
(analytic) Gaussian privacy profile, and the generalized Gaussian with the exact number of nodes
a round enters and the least regularity constant.

User level (a budget with ``participations=k, min_separation=b``: one person, at most k rounds at
least b apart): ``tight`` answers it with the mechanism's exact factors under the pattern
(``participation_sensitivity_factors``, :mod:`dponline.continual.participation`; an upper bound
where no exact routine applies, which the derivation then says): Gaussian noise through the l2
factor under the pattern (every contribution of the person enters one Gaussian mechanism of that
sensitivity), Laplace noise through the l1 factor under the pattern (at most k times the single
l1 factor; the proof is in :mod:`dponline.continual.participation`). The generalized Gaussian is
refused: Han et al.'s per-node composition (Lemma 2.7 over the k nodes a round enters) is not
proven for several rounds of one person in one node. ``paper`` refuses user-level budgets: the
papers' formulas are event-level.

Either way the guarantee is what the noise actually used proves (:meth:`PrivacyBudget.prove`): a
paper formula that under-noises (losses in [-1, 1]^N, whose sensitivity is twice ||Y||_1, or a
tree deeper than log2 T) has a larger epsilon, refused unless the budget allows it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from dponline.continual.base import ContinualCounter
from dponline.continual.participation import ParticipationSensitivity
from dponline.continual.registry import get_mechanism
from dponline.privacy.accounting import (
    gaussian_epsilon,
    gaussian_sigma,
    laplace_epsilon,
    zcdp_rho,
)
from dponline.privacy.arguments import checked_count, checked_positive, checked_probability
from dponline.privacy.bounds import InputBounds
from dponline.privacy.budget import PersonNotCovered, PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate, paper_log
from dponline.privacy.generalized_gaussian import (
    GeneralizedGaussianNoise,
    exact_kappa,
    generalized_gaussian_sigma,
    lq_regularity,
)
from dponline.privacy.noise import GaussianNoise, LaplaceNoise, NoiseDistribution

__all__ = [
    "NOISE_FAMILIES",
    "CounterCalibrator",
    "agarwal_singh_gaussian_sigma",
    "agarwal_singh_laplace_scale",
    "calibrate_counter",
]

NOISE_FAMILIES = ("gaussian", "laplace", "generalized_gaussian")
PAPER_MECHANISMS = ("binary_tree", "padded_tree")


def agarwal_singh_laplace_scale(y1_norm: float, horizon: int, epsilon: float) -> float:
    """Laplace scale per tree node, lambda = ||Y||_1 log T / epsilon.

    Agarwal & Singh (2017), Theorem 3.1 and Lemma 3.3; Corollary 3.2 uses ||Y||_1 = N (experts),
    sqrt(N) (sphere), 1 (cube). Ene et al. (2021) Theorem 2.3 states the same.
    """
    return (
        checked_positive("||Y||_1", y1_norm)
        * paper_log(horizon)
        / checked_positive("epsilon", epsilon)
    )


def agarwal_singh_gaussian_sigma(
    y2_norm: float, horizon: int, epsilon: float, delta: float
) -> float:
    """Gaussian sigma per tree node, sigma^2 = ||Y||_2^2 log^2 T log^2(log T / delta) / eps^2.

    Agarwal & Singh (2017), Theorem A.1; Ene et al. (2021) Theorem 2.3.
    """
    lt = paper_log(horizon)
    return (
        checked_positive("||Y||_2", y2_norm)
        * lt
        * math.log(lt / checked_probability("delta", delta))
        / checked_positive("epsilon", epsilon)
    )


@dataclass(frozen=True)
class CounterCalibrator:
    """The noise per draw of a counter ``mechanism`` over ``horizon`` rounds of inputs in
    ``bounds`` (see the module docstring).

    ``noise``: "laplace" (pure DP, which meets every delta), "gaussian" or
    "generalized_gaussian" (delta > 0; ``regular_norm`` q names the l_q norm the sensitivity is
    measured in, and the noise uses the smooth norm of Han et al. Lemmas 3.9/3.10).

    It answers user-level budgets (``supports_participation``): ``tight`` with the factors
    under the budget's participation pattern, for Laplace and Gaussian noise (module docstring).
    """

    #: the tight calibration proves one person's guarantee under a participation pattern
    supports_participation: ClassVar[bool] = True

    mechanism: type[ContinualCounter]
    horizon: int
    bounds: InputBounds
    noise: str = "gaussian"
    regular_norm: float | None = None

    def __post_init__(self) -> None:
        cls = self.mechanism
        if self.noise not in NOISE_FAMILIES:
            raise ValueError(f"noise must be one of {NOISE_FAMILIES}, got {self.noise!r}")
        if self.noise not in cls.supported_noise:
            raise ValueError(
                f"mechanism {cls.name!r} supports noise {sorted(cls.supported_noise)}, "
                f"got {self.noise!r}"
            )
        object.__setattr__(self, "horizon", checked_count("horizon", self.horizon))
        if self.bounds.diameter(2) == 0:
            raise ValueError(
                "the input set has zero diameter: every stream is the same, so there is nothing "
                "to protect; declare the set the inputs really range over"
            )
        if self.noise == "generalized_gaussian" and self.regular_norm is None:
            raise ValueError(
                "generalized_gaussian noise needs regular_norm=q (the sensitivity norm)"
            )

    def _check(self, budget: PrivacyBudget) -> None:
        if self.noise != "laplace":  # Laplace noise's pure DP meets every delta
            budget.require_delta(f"{self.noise} noise")
        if budget.is_user_level and self.noise == "generalized_gaussian":
            raise PersonNotCovered(
                f"generalized_gaussian noise on {self.mechanism.name!r} is calibrated per tree "
                "node by composition over the nodes one round enters (Han et al. Thm 3.1), which "
                f"is not proven for one person's several rounds ({budget.unit}); use Gaussian "
                "or Laplace noise for a user-level budget"
            )

    def participation(self, budget: PrivacyBudget) -> ParticipationSensitivity | None:
        """The mechanism's factors under the budget's participation pattern (None for one
        round)."""
        if not budget.is_user_level:
            return None
        return self.mechanism.participation_sensitivity_factors(
            self.horizon, budget.participations, budget.min_separation
        )

    def _factors(self, budget: PrivacyBudget) -> tuple[float, float]:
        """(l1, l2) factors of the budget's unit: one round's, or one person's."""
        pattern = self.participation(budget)
        if pattern is None:
            return self.mechanism.sensitivity_factors(self.horizon)
        return pattern.factors

    def _result(self, noise, guarantee, calibration: str) -> Calibration:  # type: ignore[no-untyped-def]
        return Calibration(noise, guarantee, calibration, self.mechanism.name)

    def paper(self, budget: PrivacyBudget) -> Calibration:
        """Agarwal & Singh Theorem 3.1 / A.1, or Han et al. Theorem 3.1 (tree mechanisms);
        event-level budgets only (the papers' formulas cover one round)."""
        self._check(budget)
        cls, horizon, bounds = self.mechanism, self.horizon, self.bounds
        if budget.is_user_level:
            raise PersonNotCovered(
                f"calibration='paper' on {cls.name!r} is the papers' event-level formula; it "
                f"does not cover {budget.unit}; use calibration='tight', which calibrates to "
                "the mechanism's sensitivity under the participation pattern"
            )
        if cls.name not in PAPER_MECHANISMS:
            raise ValueError(
                f"calibration='paper' is defined only for the tree mechanisms the papers use "
                f"{PAPER_MECHANISMS}, not {cls.name!r}; use calibration='tight'"
            )
        l1f, l2f = cls.sensitivity_factors(horizon)
        eps, delta = budget.epsilon, budget.delta
        if self.noise == "laplace":
            d1 = bounds.diameter(1)
            b = agarwal_singh_laplace_scale(bounds.max_norm(1), horizon, eps)
            how = (
                "Agarwal & Singh (2017) Thm 3.1: Laplace(||Y||_1 log2 T / eps) per node; proven "
                f"epsilon = {l1f:g} nodes x l1 diameter {d1:g} / scale {b:.6g}"
            )
            g = budget.prove(laplace_epsilon(l1f * d1, b), 0.0, how)
            return self._result(LaplaceNoise(b), g, "paper")
        if self.noise == "gaussian":
            total = l2f * bounds.diameter(2)
            sigma = agarwal_singh_gaussian_sigma(bounds.max_norm(2), horizon, eps, delta)
            how = "Agarwal & Singh (2017) Thm A.1 noise per node; " + self._gaussian_how(sigma, l2f)
            g = budget.prove(
                gaussian_epsilon(delta, total / sigma),
                delta,
                how,
                rho=zcdp_rho(total, sigma),
            )
            return self._result(GaussianNoise(sigma), g, "paper")
        k = math.ceil(math.log2(horizon)) + 1
        reg = lq_regularity(self.regular_norm, bounds.dim)  # type: ignore[arg-type]
        how = "Han et al. Thm 3.1: Lemma 2.7 per node at (eps/k, delta/k), k = ceil(log2 n)+1"
        return self._generalized(budget, k, reg.kappa, how, "paper")

    def tight_noise(self, budget: PrivacyBudget) -> NoiseDistribution:
        """The noise :meth:`tight` draws for ``budget``, not yet proven: what a learner compares
        candidate counters by before it proves the one it runs (once, with :meth:`tight`)."""
        self._check(budget)
        l1f, l2f = self._factors(budget)
        eps, delta = budget.epsilon, budget.delta
        if self.noise == "laplace":
            return LaplaceNoise(l1f * self.bounds.diameter(1) / eps)
        if self.noise == "gaussian":
            return GaussianNoise(gaussian_sigma(l2f * self.bounds.diameter(2), eps, delta))
        return self._generalized_noise(budget, *self._tight_nodes())

    def tight(self, budget: PrivacyBudget) -> Calibration:
        """The least noise proven for the budget on this mechanism (module docstring)."""
        noise = self.tight_noise(budget)
        bounds = self.bounds
        pattern = self.participation(budget)
        l1f, l2f = self._factors(budget)
        eps, delta = budget.epsilon, budget.delta
        person = "" if pattern is None else f"; {pattern.describe()}"
        per_person = pattern is not None
        if self.noise == "laplace":
            d1 = bounds.diameter(1)
            unit = "draws per round" if pattern is None else "l1 factor of one person's rounds"
            how = (
                f"Laplace mechanism on {l1f:g} {unit} x exact l1 diameter {d1:g} "
                f"of the input set: scale = {l1f:g} * {d1:g} / epsilon{person}"
            )
            g = budget.prove(eps, 0.0, how, per_person=per_person)
            return self._result(noise, g, "tight")
        if self.noise == "gaussian":
            total = l2f * bounds.diameter(2)
            sigma = noise.sigma  # type: ignore[attr-defined]
            how = "least sigma by the analytic Gaussian mechanism (Balle & Wang 2018); "
            g = budget.prove(
                gaussian_epsilon(delta, total / sigma),
                delta,
                how + self._gaussian_how(sigma, l2f) + person,
                rho=zcdp_rho(total, sigma),
                per_person=per_person,
            )
            return self._result(noise, g, "tight")
        k, kappa = self._tight_nodes()
        how = (
            f"Lemma 2.7 per node at (eps/k, delta/k) with the exact k = {k} nodes per round and "
            "the least regularity constant kappa for the smooth norm"
        )
        return self._generalized(budget, k, kappa, how, "tight")

    def _tight_nodes(self) -> tuple[int, float]:
        """(k, kappa) of the tight generalized Gaussian: the exact number of nodes a round
        enters and the least regularity constant of the smooth norm."""
        k = self.mechanism.draws_per_step(self.horizon)
        reg = lq_regularity(self.regular_norm, self.bounds.dim)  # type: ignore[arg-type]
        kappa = exact_kappa(reg.q, reg.d, reg.r) if reg.norm_scale == 1.0 else reg.kappa
        return k, kappa

    def _gaussian_how(self, sigma: float, l2f: float) -> str:
        return (
            f"accounted exactly as one Gaussian mechanism of l2 sensitivity {l2f:.6g} x "
            f"{self.bounds.diameter(2):.6g} (l2 factor x l2 diameter) at sigma {sigma:.6g}"
        )

    def _generalized(
        self, budget: PrivacyBudget, k: int, kappa: float, how: str, calibration: str
    ) -> Calibration:
        """Per-draw (epsilon/k, delta/k) by Lemma 2.7, basic composition over the k tree nodes
        a round enters (Han et al. proof of Theorem 3.1)."""
        q = float(self.regular_norm)  # type: ignore[arg-type]
        reg = lq_regularity(q, self.bounds.dim)
        dq = self.bounds.diameter(q)
        how += f"; l_{q:g} diameter {dq:.6g}, kappa {kappa:.6g}, smooth l_{reg.r:g} norm"
        gg = self._generalized_noise(budget, k, kappa)
        g = budget.prove(budget.epsilon, budget.delta, how)
        return self._result(gg, g, calibration)

    def _generalized_noise(
        self, budget: PrivacyBudget, k: int, kappa: float
    ) -> GeneralizedGaussianNoise:
        """Lemma 2.7's noise per draw at (epsilon/k, delta/k) for the l_q diameter."""
        q = float(self.regular_norm)  # type: ignore[arg-type]
        reg = lq_regularity(q, self.bounds.dim)
        dq = self.bounds.diameter(q)
        sigma_plus = generalized_gaussian_sigma(dq, budget.epsilon / k, budget.delta / k, kappa)
        # density exp(-(s ||z||_r)^2 / (2 sigma_+^2)) is the l_r generalized Gaussian at sigma_+/s
        return GeneralizedGaussianNoise(sigma_plus / reg.norm_scale, reg.r)


def calibrate_counter(
    mechanism: type[ContinualCounter] | str,
    *,
    horizon: int,
    bounds: InputBounds,
    budget: PrivacyBudget,
    noise: str = "gaussian",
    regular_norm: float | None = None,
) -> Calibration:
    """Noise per draw for a continual counter over ``horizon`` rounds of inputs in ``bounds``,
    in the budget's calibration (:class:`CounterCalibrator`).

    ``mechanism``: a counter class or its registry name ("binary_tree", "padded_tree",
    "honaker", "sqrt_factorization").
    """
    cls = get_mechanism(mechanism) if isinstance(mechanism, str) else mechanism
    return calibrate(CounterCalibrator(cls, horizon, bounds, noise, regular_norm), budget)
