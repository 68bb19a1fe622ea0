"""The noise of Ene, Nguyen & Vladu (2021) for PrivateBandit (Algorithm 1), ``paper`` and
``tight``: :class:`PrivateBanditCalibrator`.

What is protected. Two loss sequences that differ in one round t (Definition 2.1). The round's
loss enters only through one term of one batch sum (Algorithm 1, lines 10-11),
``(k / zeta) f_t(y_t) u_t``, where ``u_t`` is the learner's own unit perturbation in the
direction space V of the set's affine hull (independent of the data; it is released with the
action) and ``f_t(y_t)`` the loss value, which the learner requires to lie in a declared
interval [lo, hi]. The tree over the T_round batch sums releases every prefix sum; the actions
are post-processing of those releases and of the learner's own perturbations. No
high-probability event is needed: the failure probability Lemma 5.4 spends on Lemma 5.3's norm
bound does not arise, and the whole delta goes to the Gaussian mechanism.

``paper``: the paper's coordinate-wise noise on R^n, its per-coordinate scales exactly as
printed, on the tree of Appendix A (TreeBasedAgg, our ``padded_tree``): Laplace of Lemma 5.1,
``T^{1/2} n L log T / epsilon``, and Gaussian of Lemma 5.4. ``n`` there is the dimension of the
smoothing sphere (the ambient dimension for a full-dimensional set; the affine hull's dimension
otherwise, which is what the estimator's ``n / zeta`` becomes), ``log T`` is
:func:`~dponline.privacy.calibration.paper_log`, and the paper's ``log(.)`` elsewhere is
natural. The guarantee is what that noise proves under the sensitivity of the batch sums in
R^n, ``(k / zeta)(hi - lo)`` in l2 (exact) and ``(k / zeta)(hi - lo) sqrt(n)`` in l1
(``||u||_1 <= sqrt(n) ||u||_2``: exact for a full-dimensional set, an upper bound otherwise,
where the hull's own constant c_V of the lemma below can be smaller, so the epsilon stated is
then slightly above what the noise proves). Lemma 5.1's scale (it bounds the l1 norm of a whole
batch sum, T^{1/2} times one term) proves a smaller epsilon than asked except at short horizons
or in high dimension: asked epsilon = 1 with the default loss range, it proves 0.50 on [-1, 1]
and 1.24 on the simplex in R^50 at T = 100, 0.12 and 0.18 at T = 10,000, but 1.125 on [-1, 1] at
T = 16, which the calibration refuses unless the budget allows a weaker guarantee
(``allow_weaker``). Lemma 5.4's sigma proves far less than epsilon (at most 0.039 in the same
cases, asked (1, 1e-5)).

``tight``: the least noise proven for the budget on the chosen counter (default: the counter of
least error :func:`~dponline.continual.best_mechanism` picks for the batches, the k-ary tree
for Laplace and the rescaled square root for Gaussian at every horizon from 16 to 1e6 rounds on
the sets measured), with the counter summing the
batch sums in the k coordinates of an orthonormal basis B of V (``domain.hull_basis()``; the
standard coordinates of R^n for a full-dimensional set): exact sensitivity times the
mechanism's column norms, Laplace by its l1 sensitivity, Gaussian by the exact (analytic)
privacy profile (:class:`~dponline.continual.calibration.CounterCalibrator`). The derivation of
the sensitivity in V is ours, not the paper's:

Lemma (batch sums in the affine hull). Let B (n x k) have orthonormal columns spanning V and
P = B B^T.

(a) Nothing is lost. Every term (k / zeta) f u_t has u_t in V, so every batch sum g~_R and
    prefix sum s_R lies in V: s_R = B (B^T s_R). The counter releases y~_R = B^T s_R + W_R
    (W_R its noise in R^k) and the learner uses s~_R = B y~_R = s_R + B W_R. The learner uses
    s~ only in line 14, argmin_{x in D} ||x||^2 / 2 + eta <s~, x>, by the conditional gradient
    method: for x in D, <s~, x> = <P s~, x> + <(I - P) s~, x_0> (x_0 any point of D), a
    constant on D plus a term that sees P s~ only; every quantity the method computes (the
    oracle's argmin set, the duality gap <grad, x - v> and the line-search step, x and v in D)
    depends on s~ through P s~ alone. With noise Z in R^n the actions are therefore a function
    of s + P Z (ties in the oracle aside, which have probability zero under noise with a
    density on V): the component of the noise orthogonal to V never reaches the output, and
    drawing the noise in V changes only the noise, not the algorithm.

(b) Sensitivity in hull coordinates. With the perturbations fixed, neighbouring sequences move
    the counter's input in one batch by Delta = (k / zeta)(f - f') B^T u_t, |f - f'| <= hi - lo,
    and ||B^T u_t||_2 = ||u_t||_2 = 1 (u_t in V, B orthonormal). Hence

        l2:  ||Delta||_2 <= (k / zeta)(hi - lo),
        l1:  ||Delta||_1 <= (k / zeta)(hi - lo) max_{||w||_2 = 1} ||w||_1
                          = (k / zeta)(hi - lo) sqrt(k)          (Cauchy-Schwarz),

    both attained: f, f' = lo, hi and u_t = B sigma / sqrt(k), sigma in {-1, +1}^k, a unit
    vector of V around which the uniform law of u_t has positive density (the privacy loss is
    continuous in u_t, so the law of u_t cannot lower the sensitivity charged). Whatever the
    other rounds' terms are (they may depend on earlier releases: the counters are private
    under adaptively chosen inputs), this is the input set of a counter in R^k, the NormBall
    of radius (k / zeta)(hi - lo) / 2 (:meth:`PrivateBanditCalibrator.sensitivity_set`).

(c) Against R^n. Noise in the n ambient coordinates is charged l1 sensitivity
    (k / zeta)(hi - lo) sqrt(n), and even the exact constant c_V = max_{u in V, ||u|| = 1}
    ||u||_1 = max_{sigma in {-1,1}^n} ||P sigma||_2 is at least (E_sigma ||P sigma||^2)^{1/2}
    = (tr P)^{1/2} = sqrt(k). So the Laplace scale in hull coordinates is sqrt(k / n) times the
    ambient one (sqrt(k) / c_V times the best ambient one), and never larger. Among all linear
    coordinate systems of V (noise C W with C invertible, k x k in the basis B) the orthonormal
    one minimises E||C W||^2: it is proportional to ||C||_F^2 max_sigma ||C^{-T} sigma||^2 >=
    ||C||_F^2 ||C^{-1}||_F^2 >= k^2 (Cauchy-Schwarz on the singular values), and C = I
    attains k^2.

    For Gaussian noise the l2 sensitivity is the same in both coordinate systems, and B W with
    W ~ N(0, sigma^2 I_k) has the law of P Z with Z ~ N(0, sigma^2 I_n): by (a) the actions
    have the same law as with ambient noise; the counter only holds k coordinates instead of n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dponline.continual.calibration import CounterCalibrator
from dponline.continual.registry import get_mechanism
from dponline.continual.selection import choose_mechanism
from dponline.privacy.accounting import gaussian_epsilon, laplace_epsilon, zcdp_rho
from dponline.privacy.arguments import checked_positive, checked_probability
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, paper_log
from dponline.privacy.noise import GaussianNoise, LaplaceNoise

__all__ = ["PrivateBanditCalibrator", "ene_gaussian_sigma", "ene_laplace_scale"]


def ene_laplace_scale(horizon: int, dim: int, lipschitz: float, epsilon: float) -> float:
    """Ene, Nguyen & Vladu (2021) Lemma 5.1: Lap(T^{1/2} n L log T / epsilon) per coordinate."""
    return (
        math.sqrt(horizon)
        * int(dim)
        * checked_positive("L", lipschitz)
        * paper_log(horizon)
        / checked_positive("epsilon", epsilon)
    )


def ene_gaussian_sigma(
    horizon: int, dim: int, lipschitz: float, epsilon: float, delta: float
) -> float:
    """Ene, Nguyen & Vladu (2021) Lemma 5.4:

    sigma = T^{1/4} n^{1/2} L log T log(T/delta) / epsilon
            * (log((n+T)/delta) + sqrt((1 + T^{1/2}/n) log((n+T)/delta))).
    """
    t, n = float(horizon), float(dim)
    delta = checked_probability("delta", delta)
    lg = math.log((n + t) / delta)
    return (
        t**0.25
        * math.sqrt(n)
        * checked_positive("L", lipschitz)
        * paper_log(horizon)
        * math.log(t / delta)
        / checked_positive("epsilon", epsilon)
        * (lg + math.sqrt((1 + math.sqrt(t) / n) * lg))
    )


@dataclass(frozen=True)
class PrivateBanditCalibrator:
    """The tree noise of Algorithm 1 (module docstring).

    ``horizon`` T (the paper's formulas), ``batches`` T_round (the tree's length),
    ``sphere_dim`` k and ``ambient_dim`` n, ``lipschitz`` L, ``term_bound`` (k / zeta)(hi - lo)
    (the l2 sensitivity of the batch sums), ``noise`` "laplace" | "gaussian", the counter
    ``mechanism`` (None: padded tree for ``paper``, the best one for ``tight``) and
    ``noise_in_hull`` (``tight``: the counter sums hull coordinates; False keeps it in R^n with
    l1 sensitivity charged sqrt(n), the calibration before Lemma (b), for comparisons).

    It is a :class:`~dponline.privacy.calibration.Calibrator`: PrivateBandit builds the counter
    of line 13 with :func:`~dponline.continual.factory.build_counter` (``calibrator=`` this one,
    ``dim=`` :meth:`coordinates`), which calls :meth:`paper` or :meth:`tight` as the budget asks
    (:func:`~dponline.privacy.calibration.calibrate`); each chooses the mechanism once and
    proves once, and the counter is the mechanism the answer names, carrying its guarantee.
    """

    horizon: int
    batches: int
    sphere_dim: int
    ambient_dim: int
    lipschitz: float
    term_bound: float
    noise: str
    mechanism: str | None = None
    noise_in_hull: bool = True

    def __post_init__(self) -> None:
        if self.noise not in ("laplace", "gaussian"):
            raise ValueError(f"noise must be 'laplace' or 'gaussian', got {self.noise!r}")
        checked_positive("the batch sums' sensitivity", self.term_bound)
        if not 1 <= self.sphere_dim <= self.ambient_dim:
            raise ValueError(
                f"sphere_dim must lie in [1, ambient_dim = {self.ambient_dim}], "
                f"got {self.sphere_dim!r}"
            )

    def coordinates(self, calibration: str) -> int:
        """How many coordinates the counter sums: n for ``paper`` (the paper's noise on R^n),
        k for ``tight`` (an orthonormal basis of the affine hull's direction space; n with
        ``noise_in_hull=False``)."""
        if calibration == "paper" or not self.noise_in_hull:
            return self.ambient_dim
        return self.sphere_dim

    def sensitivity_set(self, calibration: str) -> NormBall:
        """A set whose l2 / l1 diameters are the counter input's sensitivities: one round moves
        one batch sum by (k / zeta)(f - f') u_t, within an l2 ball of diameter ``term_bound``
        of R^n (``paper``) or, in hull coordinates, of R^k (``tight``; Lemma (b))."""
        return NormBall(self.term_bound / 2.0, 2, self.coordinates(calibration))

    def mechanism_for(self, calibration: str) -> str:
        """The counter's registry name: the one asked for, else
        :func:`~dponline.continual.selection.choose_mechanism` for :meth:`coordinates` (the
        padded tree for ``paper``, the best counter for ``tight``)."""
        if self.mechanism is not None:
            return self.mechanism
        return choose_mechanism(
            calibration, self.batches, self.coordinates(calibration), self.noise
        )

    def paper(self, budget: PrivacyBudget) -> Calibration:
        """Lemma 5.1 (Laplace) or 5.4 (Gaussian) on the padded tree, proven under the exact
        sensitivity (module docstring)."""
        cls = get_mechanism(self.mechanism_for("paper"))
        if cls.name != "padded_tree":
            raise ValueError(
                "the paper calibration of PrivateBandit is stated for TreeBasedAgg (Appendix A, "
                f"our 'padded_tree'), not {cls.name!r}; use calibration='tight'"
            )
        l1f, l2f = cls.sensitivity_factors(self.batches)
        k, eps = self.sphere_dim, budget.epsilon
        ball = self.sensitivity_set("paper")
        s1, s2 = ball.diameter(1), ball.diameter(2)
        if self.noise == "laplace":
            b = ene_laplace_scale(self.horizon, k, self.lipschitz, eps)
            how = (
                f"Ene et al. (2021) Lemma 5.1: Laplace({b:.6g}) per coordinate of every tree "
                f"node; proven epsilon = {l1f:g} nodes per batch x l1 sensitivity {s1:.6g} of "
                "the batch sums (one round moves one term (k/zeta) f_t u_t) / scale"
            )
            g = budget.prove(laplace_epsilon(l1f * s1, b), 0.0, how)
            return Calibration(LaplaceNoise(b), g, "paper", cls.name)
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
        )
        return Calibration(GaussianNoise(sigma), g, "paper", cls.name)

    def tight(self, budget: PrivacyBudget) -> Calibration:
        """The least noise proven on the chosen counter, in hull coordinates (module
        docstring)."""
        cls = get_mechanism(self.mechanism_for("tight"))
        ball = self.sensitivity_set("tight")
        cal = CounterCalibrator(cls, self.batches, ball, self.noise).tight(budget)
        k, n, d = self.sphere_dim, self.ambient_dim, ball.dim
        if d == n:
            where = f"the standard coordinates of R^n, n = {n}"
            why = "l2 x sqrt(n)"
        else:
            where = (
                f"the k = {k} coordinates of an orthonormal basis of the affine hull's direction "
                f"space (n = {n}; the noise's component orthogonal to the hull never reaches the "
                "actions)"
            )
            why = "l2 x sqrt(k) (our derivation, not the paper's: bandits/ene_noise.py, Lemma (b))"
        how = (
            "batch sums of Ene et al. (2021) Algorithm 1 on a continual counter, summed in "
            f"{where}; one round moves one term (k/zeta) f_t u_t, u_t a unit vector of the hull: "
            f"l2 sensitivity {ball.diameter(2):.6g}, l1 sensitivity {ball.diameter(1):.6g} = "
            f"{why}; " + cal.guarantee.derivation
        )
        # the counter calibrator's proof, with the reason for its input set stated in front
        return replace(cal, guarantee=replace(cal.guarantee, derivation=how))
