"""The noise of Ene, Nguyen & Vladu (2021) for PrivateBandit (Algorithm 1), ``paper`` and
``tight``: :class:`PrivateBanditCalibrator`.

What is protected. Two loss sequences that differ in one round t (Definition 2.1). The round's
loss enters only through one term of one batch sum (Algorithm 1, lines 10-11),
``(k / zeta) f_t(y_t) u_t``, where ``u_t`` is the learner's own unit perturbation (independent
of the data; it is released with the action) and ``f_t(y_t)`` the loss value, which the learner
requires to lie in a declared interval [lo, hi]. So the batch sums' sensitivity is, exactly,

    l2:  (k / zeta) (hi - lo)            l1:  (k / zeta) (hi - lo) sqrt(n),

(``||u||_1 <= sqrt(n) ||u||_2`` in R^n), whatever the other rounds are, and the tree over the
T_round batch sums releases every prefix sum; the actions are post-processing of those
releases and of the learner's own perturbations. No high-probability event is needed: the
failure probability Lemma 5.4 spends on Lemma 5.3's norm bound does not arise, and the whole
delta goes to the Gaussian mechanism.

``paper``: the paper's per-coordinate scales, exactly as printed, on the tree of Appendix A
(TreeBasedAgg, our ``padded_tree``): Laplace of Lemma 5.1, ``T^{1/2} n L log T / epsilon``, and
Gaussian of Lemma 5.4. ``n`` there is the dimension of the smoothing sphere (the ambient
dimension for a full-dimensional set; the affine hull's dimension otherwise, which is what the
estimator's ``n / zeta`` becomes), ``log T`` is :func:`~dponline.privacy.calibration.paper_log`,
and the paper's ``log(.)`` elsewhere is natural. The guarantee is what that noise proves under
the exact sensitivity above: Lemma 5.1's scale proves far less than epsilon for T >= 16 (it
bounds the l1 norm of a whole batch sum, T^{1/2} times one term), and Lemma 5.4's sigma likewise.

``tight``: the least noise proven for the budget on the chosen counter (default: Honaker's
estimator for Laplace, the square-root factorisation for Gaussian): exact sensitivity times the
mechanism's column norms, Laplace by its l1 sensitivity, Gaussian by the exact (analytic)
privacy profile (:class:`~dponline.continual.calibration.CounterCalibrator`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dponline.continual.calibration import CounterCalibrator
from dponline.continual.registry import get_mechanism
from dponline.continual.selection import best_mechanism
from dponline.privacy.accounting import gaussian_epsilon, laplace_epsilon, zcdp_rho
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, paper_log, positive, probability
from dponline.privacy.noise import GaussianNoise, LaplaceNoise

__all__ = ["PrivateBanditCalibrator", "ene_gaussian_sigma", "ene_laplace_scale"]


def ene_laplace_scale(horizon: int, dim: int, lipschitz: float, epsilon: float) -> float:
    """Ene, Nguyen & Vladu (2021) Lemma 5.1: Lap(T^{1/2} n L log T / epsilon) per coordinate."""
    return (
        math.sqrt(horizon)
        * int(dim)
        * positive("L", lipschitz)
        * paper_log(horizon)
        / positive("epsilon", epsilon)
    )


def ene_gaussian_sigma(
    horizon: int, dim: int, lipschitz: float, epsilon: float, delta: float
) -> float:
    """Ene, Nguyen & Vladu (2021) Lemma 5.4:

    sigma = T^{1/4} n^{1/2} L log T log(T/delta) / epsilon
            * (log((n+T)/delta) + sqrt((1 + T^{1/2}/n) log((n+T)/delta))).
    """
    t, n = float(horizon), float(dim)
    delta = probability("delta", delta)
    lg = math.log((n + t) / delta)
    return (
        t**0.25
        * math.sqrt(n)
        * positive("L", lipschitz)
        * paper_log(horizon)
        * math.log(t / delta)
        / positive("epsilon", epsilon)
        * (lg + math.sqrt((1 + math.sqrt(t) / n) * lg))
    )


@dataclass(frozen=True)
class PrivateBanditCalibrator:
    """The tree noise of Algorithm 1 (module docstring).

    ``horizon`` T (the paper's formulas), ``batches`` T_round (the tree's length),
    ``sphere_dim`` k and ``ambient_dim`` n, ``lipschitz`` L, ``term_bound`` (k / zeta)(hi - lo)
    (the l2 sensitivity of the batch sums), ``noise`` "laplace" | "gaussian" and the counter
    ``mechanism`` (None: padded tree for ``paper``, the best one for ``tight``).
    """

    horizon: int
    batches: int
    sphere_dim: int
    ambient_dim: int
    lipschitz: float
    term_bound: float
    noise: str
    mechanism: str | None = None

    def __post_init__(self) -> None:
        if self.noise not in ("laplace", "gaussian"):
            raise ValueError(f"noise must be 'laplace' or 'gaussian', got {self.noise!r}")
        positive("the batch sums' sensitivity", self.term_bound)

    @property
    def sensitivity_set(self) -> NormBall:
        """A set whose l2 / l1 diameters are the batch sums' sensitivities: one round moves
        one batch sum by (k / zeta)(f - f') u_t, within an l2 ball of that diameter."""
        return NormBall(self.term_bound / 2.0, 2, self.ambient_dim)

    def mechanism_for(self, calibration: str) -> str:
        if self.mechanism is not None:
            return self.mechanism
        if calibration == "paper":
            return "padded_tree"
        return best_mechanism(self.batches, self.ambient_dim, self.noise)

    def _counter_calibrator(self, calibration: str) -> CounterCalibrator:
        cls = get_mechanism(self.mechanism_for(calibration))
        return CounterCalibrator(cls, self.batches, self.sensitivity_set, self.noise)

    def paper(self, budget: PrivacyBudget) -> Calibration:
        """Lemma 5.1 (Laplace) or 5.4 (Gaussian), proven under the exact sensitivity."""
        counter = self._counter_calibrator("paper")
        if counter.mechanism.name != "padded_tree":
            raise ValueError(
                "the paper calibration of PrivateBandit is stated for TreeBasedAgg (Appendix A, "
                f"our 'padded_tree'), not {counter.mechanism.name!r}; use calibration='tight'"
            )
        l1f, l2f = counter.mechanism.sensitivity_factors(self.batches)
        k, eps = self.sphere_dim, budget.epsilon
        s2 = self.term_bound
        s1 = s2 * math.sqrt(self.ambient_dim)
        if self.noise == "laplace":
            budget.require_pure("Lemma 5.1's Laplace noise")
            b = ene_laplace_scale(self.horizon, k, self.lipschitz, eps)
            how = (
                f"Ene et al. (2021) Lemma 5.1: Laplace({b:.6g}) per coordinate of every tree "
                f"node; proven epsilon = {l1f:g} nodes per batch x l1 sensitivity {s1:.6g} of "
                "the batch sums (one round moves one term (k/zeta) f_t u_t) / scale"
            )
            g = budget.prove(laplace_epsilon(l1f * s1, b), 0.0, how, stacklevel=5)
            return Calibration(LaplaceNoise(b), g, "paper", "padded_tree")
        budget.require_delta("Lemma 5.4's Gaussian noise")
        sigma = ene_gaussian_sigma(self.horizon, k, self.lipschitz, eps, budget.delta)
        total = l2f * s2
        how = (
            f"Ene et al. (2021) Lemma 5.4: N(0, {sigma:.6g}^2) per coordinate of every tree "
            f"node; accounted exactly as one Gaussian mechanism of l2 sensitivity {l2f:.6g} "
            f"(column norm) x {s2:.6g} (one round moves one term (k/zeta) f_t u_t), with no "
            "failure probability (Lemma 5.3's event is not needed)"
        )
        g = budget.prove(
            gaussian_epsilon(budget.delta, total / sigma),
            budget.delta,
            how,
            rho=zcdp_rho(total, sigma),
            stacklevel=5,
        )
        return Calibration(GaussianNoise(sigma), g, "paper", "padded_tree")

    def tight(self, budget: PrivacyBudget) -> Calibration:
        """The least noise proven on the chosen counter (module docstring)."""
        cal = self._counter_calibrator("tight").tight(budget)
        g = cal.guarantee
        how = (
            "batch sums of Ene et al. (2021) Algorithm 1 on a continual counter: one round "
            f"moves one term (k/zeta) f_t u_t, l2 sensitivity {self.term_bound:.6g}; "
            + g.derivation
        )
        g = budget.prove(g.epsilon, g.delta, how, rho=g.rho, stacklevel=4)
        return Calibration(cal.noise, g, "tight", cal.mechanism)
