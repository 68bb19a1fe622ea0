"""A BLT without a horizon (ours): one buffered linear Toeplitz factorisation run for as long as
the stream lasts, in O(buffers x d) memory, its noise calibrated to all of its coefficients.

The mechanism is :class:`~dponline.continual.blt.BLTCounter`'s (Dvijotham et al. 2024): the
release at t is S_t plus the running sum of u = C^{-1} z, with C the lower-triangular Toeplitz
matrix of c_0 = 1, c_k = sum_i omega_i theta_i^(k-1), and z ~ N(0, s^2 I) per coordinate drawn
one round at a time. Nothing in the stream depends on a horizon; only the calibration did.

*Privacy at every prefix length* (ours). The first n releases are A_n (C_n^{-1} z_n) + A_n x_n
= A_n C_n^{-1} (C_n x_n + z_n): a post-processing of the Gaussian mechanism C_n x_n + z_n, with
C_n the leading n x n block of the infinite C (lower-triangular: the first n rounds of noise
and data make the first n releases). Column j of C_n is c_0 .. c_{n-j}, a prefix of the
infinite column, so its squared l2 norm is at most

    Delta^2 = sum_{k >= 0} c_k^2 = 1 + sum_{i,l} omega_i omega_l / (1 - theta_i theta_l)

(theta_i < 1), and Gaussian noise calibrated to Delta x (the inputs' l2 diameter) makes the
first n releases (epsilon, delta)-DP for every n at once; inputs chosen adaptively are covered
as for every lower-triangular factorisation (Denisov et al. 2022, Theorem 2.1, at each n). For
one person (at most k rounds at least b apart) the sum of the person's columns of C_n replaces
one column: with omega >= 0 and sum omega <= 1 the coefficients are nonnegative and
non-increasing, so at every n the pattern exactly b apart from round 1 is the worst (Kalinin &
Lampert 2024, Theorem 2) and its value grows with n to the limit we calibrate to,
:meth:`~dponline.continual.blt.BLTParameters.pattern_sums` at :data:`UNBOUNDED_ROUNDS` rounds
(every power theta^n is 0 there). For vector inputs the columns' inner products are
nonnegative (C >= 0), so the person's l2 sensitivity is that factor times the diameter, as for
one round. Parameters whose coefficients may increase or change sign are refused for a person.

*Variance*: release t has variance s^2 sum_{m<t} beta_m^2 (the BLT's closed form). The sums
beta_m of 1/c(z)'s coefficients tend to 1/c(1), so past the horizon the parameters were
optimised for the variance grows about linearly, t / c(1)^2: the counter trades the tapered
square root's slower growth (:mod:`dponline.continual.anytime_factorization`, O(t d) numbers
of state) for memory that never grows. The parameters are :func:`~dponline.continual.blt.
optimise_blt`'s for :data:`DESIGN_HORIZON` rounds (for a person, for the person's pattern
there). Measured from the closed forms (``dponline mechanisms --anytime`` up to 2^20): with the
default, its largest variance up to t over the square root's built for t is 1.715 at t = 2^10,
1.344 at 2^14, 1.125 at 2^18, 1.037 at 2^20, 1.17 at 2^22, 2.00 at 2^24 and 5.18 at 2^26
(doubling blocks of the square root: 4.6 to 7.9 from 2^10 to 2^20); the unbounded sensitivity
is 1.0058 times the sensitivity over the design horizon.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dponline.continual.anytime import AnytimeCounter, checked_prefix_gaussian
from dponline.continual.blt import DEFAULT_BUFFERS, BLTParameters, BLTStream, optimise_blt
from dponline.privacy.accounting import gaussian_epsilon, gaussian_sigma, zcdp_rho
from dponline.privacy.arguments import checked_count
from dponline.privacy.bounds import InputBounds
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration
from dponline.privacy.noise import GaussianNoise, NoiseDistribution
from dponline.rng import RngLike

__all__ = [
    "DESIGN_HORIZON",
    "MAX_DESIGN_HORIZON",
    "UNBOUNDED_ROUNDS",
    "AnytimeBLTCounter",
    "anytime_blt_parameters",
    "anytime_blt_sensitivity",
    "calibrate_anytime_blt",
    "make_anytime_blt",
]

#: the horizon the parameters are optimised for (module docstring: the variance stays within
#: 1.34x of the square root's built for t from 2^14 to 2^22 rounds, within 2x to 2^24)
DESIGN_HORIZON = 2**20
#: the largest design horizon (optimised buffers for 2^38 rounds have an unstable inverse)
MAX_DESIGN_HORIZON = 2**36
#: a number of rounds past which every power theta^n of the optimised parameters is 0 in double
#: precision: the closed forms evaluated there are the sums over all rounds
UNBOUNDED_ROUNDS = 2**62


def anytime_blt_parameters(
    participations: int = 1, min_separation: int = 1, design_horizon: int = DESIGN_HORIZON
) -> BLTParameters:
    """The BLT the counter runs: optimised for ``design_horizon`` rounds, for one round or for
    one person's pattern there (cached by :func:`~dponline.continual.blt.optimise_blt`)."""
    t = checked_count("design_horizon", design_horizon)
    if t > MAX_DESIGN_HORIZON:
        raise ValueError(
            f"design_horizon must be at most 2^36 = {MAX_DESIGN_HORIZON:,} rounds (beyond, the "
            f"optimised buffers' inverse is not stable in double precision), got {t:,}; the "
            "guarantee holds at every round whatever the design horizon"
        )
    k = checked_count("participations", participations)
    b = checked_count("min_separation", min_separation)
    if k == 1:
        return optimise_blt(t)
    person = optimise_blt(t, DEFAULT_BUFFERS, k, b)
    if person.pattern_sums(UNBOUNDED_ROUNDS, k, b) is not None:
        return person
    # coefficients that may increase: the one-round optimum, where the person's bound applies
    # (none found among k in {2, ..., 4096} and b in {1, ..., 10^5}; kept for safety)
    return optimise_blt(t)


def anytime_blt_sensitivity(
    parameters: BLTParameters, participations: int = 1, min_separation: int = 1
) -> float:
    """The l2 sensitivity factor of every prefix of the stream (module docstring): the norm of
    all of C's coefficients for one round, for one person (at most k rounds at least b apart)
    the norm of the sum of the person's columns b apart from round 1, over all rounds.
    ValueError for a person when the coefficients may increase or change sign."""
    k = checked_count("participations", participations)
    b = checked_count("min_separation", min_separation)
    if k == 1:
        return math.sqrt(parameters.closed_form_sums(UNBOUNDED_ROUNDS)[1])
    sums = parameters.pattern_sums(UNBOUNDED_ROUNDS, k, b)
    if sums is None:
        raise ValueError(
            "these BLT parameters have coefficients that increase or change sign: the sum of a "
            "person's columns has no closed form here; use the optimised parameters"
        )
    return math.sqrt(sums[1])


def calibrate_anytime_blt(
    bounds: InputBounds,
    budget: PrivacyBudget,
    design_horizon: int = DESIGN_HORIZON,
) -> tuple[Calibration, BLTParameters]:
    """The least Gaussian sigma for which every prefix of the counter is (epsilon, delta)-DP for
    inputs in ``bounds``, for one round or one person (the budget's unit), and the parameters
    it is calibrated for (``tight`` only: ours, module docstring)."""
    diam = checked_prefix_gaussian(
        budget,
        bounds,
        "the BLT's Gaussian noise",
        "the BLT without a horizon is ours: it has no paper calibration",
    )
    k, b = budget.participations, budget.min_separation
    params = anytime_blt_parameters(k, b, design_horizon)
    factor = anytime_blt_sensitivity(params, k, b)
    if budget.is_user_level:
        unit = (
            f"the sum of one person's at most {k} columns at least {b} apart (exactly {b} apart "
            "from round 1 is the worst: Kalinin & Lampert 2024, Theorem 2, coefficients "
            "nonnegative and non-increasing)"
        )
    else:
        unit = "one column"
    total = factor * diam
    sigma = gaussian_sigma(total, budget.epsilon, budget.delta)
    how = (
        f"BLT without a horizon (ours; {params.buffers} buffers optimised for "
        f"{int(design_horizon)} rounds): for every prefix length n the releases are a "
        "post-processing of C_n x + z_n, C_n the leading block of the infinite Toeplitz C, "
        f"whose l2 sensitivity is at most that of {unit} over all rounds, {factor:.8g} (closed "
        f"form), x l2 diameter {diam:.6g}; least sigma {sigma:.6g} by the analytic Gaussian "
        "mechanism (Balle & Wang 2018); the guarantee holds for every prefix length at once"
    )
    g = budget.prove(
        gaussian_epsilon(budget.delta, total / sigma),
        budget.delta,
        how,
        rho=zcdp_rho(total, sigma),
        per_person=budget.is_user_level,
    )
    return Calibration(GaussianNoise(sigma), g, "tight", AnytimeBLTCounter.name), params


class AnytimeBLTCounter(BLTStream, AnytimeCounter):
    """Prefix sums without a horizon through one BLT (module docstring): O(buffers x d) numbers
    of state at every t, Gaussian noise. ``parameters``: those the calibration returned
    (required with a ``privacy``); without a guarantee, :func:`anytime_blt_parameters`."""

    name: ClassVar[str] = "anytime_blt"
    gaussian_only: ClassVar[bool] = True
    summary: ClassVar[str] = "BLT without a horizon, O(buffers x d) memory (Gaussian)"

    def __init__(
        self,
        dim: int,
        noise: NoiseDistribution,
        *,
        parameters: BLTParameters | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(dim, noise, **kwargs)
        if parameters is None:
            if self.privacy is not None:
                # the guarantee holds for the parameters its calibration measured, which may be
                # for another design horizon: never guess them (an independent review built one
                # claiming epsilon 1 that proved 1.27)
                raise ValueError(
                    "a counter with a guarantee runs the parameters its calibration returned: "
                    "pass parameters= (calibrate_anytime_blt returns them; make_anytime_blt "
                    "builds the counter)"
                )
            parameters = anytime_blt_parameters()
        self._start_stream(parameters)

    def variance(self, t: int) -> float:
        t = self._check_t(t)
        if t == 0:
            return 0.0
        return self.parameters.closed_form_sums(t)[2] * self.noise.coordinate_variance(self.dim)

    def variances(self, n: int) -> np.ndarray:
        return self.parameters.release_factors(checked_count("n", n)) * (
            self.noise.coordinate_variance(self.dim)
        )

    # ---- state
    def _config(self) -> dict[str, Any]:
        return {
            **super()._config(),
            "theta": self.parameters.theta.tolist(),
            "omega": self.parameters.omega.tolist(),
        }

    def _state_shapes(self, t: int) -> dict[str, tuple[int, ...]]:
        shape = (self.replicas, self.dim)
        return {
            "buffers": (self.parameters.buffers, *shape),
            "prefix": shape,
            "noise_sum": shape,
        }

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"buffers": self._buffers, "prefix": self._prefix, "noise_sum": self._noise_sum}

    def _set_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self._buffers = arrays["buffers"]
        self._prefix = arrays["prefix"]
        self._noise_sum = arrays["noise_sum"]


def make_anytime_blt(
    bounds: InputBounds,
    budget: PrivacyBudget,
    *,
    design_horizon: int = DESIGN_HORIZON,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
) -> AnytimeBLTCounter:
    """The BLT without a horizon for inputs in ``bounds``, calibrated to ``budget`` (one round
    or one person), with the parameters it was calibrated for."""
    cal, params = calibrate_anytime_blt(bounds, budget, design_horizon)
    return AnytimeBLTCounter(
        bounds.dim,
        cal.noise,
        parameters=params,
        replicas=replicas,
        rng=rng,
        bounds=bounds,
        clip=clip,
        privacy=cal.guarantee,
    )
