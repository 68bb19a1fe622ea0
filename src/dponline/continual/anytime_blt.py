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
of state) for memory that never grows. The parameters minimise the counter's own largest
variance up to :data:`DESIGN_HORIZON` rounds, Delta^2 (over all rounds, one round's or the
person's) times sum_{m<t} beta_m^2 (:func:`optimise_unbounded`, from
:func:`~dponline.continual.blt.optimise_blt`'s optimum with the sensitivity over t rounds,
which may hold a buffer with theta within 1e-6 of 1 and then an exploding Delta: 3,909 times
the variance at 64 rounds). Measured from the closed forms (``dponline mechanisms --anytime``
up to 2^20, ``benchmarks/bench_design_horizon.py`` beyond): with the default, its largest
variance up to t over the square root's built for t is 1.714 at t = 2^10, 1.336 at 2^14,
1.107 at 2^18, 1.035 at 2^20, 1.22 at 2^22, 2.22 at 2^24 and 6.00 at 2^26 (doubling blocks of
the square root: 4.6 to 7.9 from 2^10 to 2^20); the unbounded sensitivity is 1.0013 times the
sensitivity over the design horizon.
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import numpy as np
from scipy import optimize

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
    "optimise_unbounded",
    "unbounded_max_variance",
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
    one person's pattern there (:func:`optimise_unbounded`, cached)."""
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
        return optimise_unbounded(t)
    person = optimise_unbounded(t, k, b)
    if person.pattern_sums(UNBOUNDED_ROUNDS, k, b) is not None:
        return person
    # coefficients that may increase: the one-round optimum (none found among k in
    # {2, ..., 4096} and b in {1, ..., 10^5}; kept for safety); should its own coefficients
    # rise too, anytime_blt_sensitivity refuses it rather than under-calibrate
    return optimise_unbounded(t)


def unbounded_max_variance(
    parameters: BLTParameters, horizon: int, participations: int = 1, min_separation: int = 1
) -> float:
    """The counter's own largest release variance up to ``horizon`` at unit sensitivity:
    Delta^2 over all rounds (one round's, or the person's pattern's) times sum_{m<t} beta_m^2;
    inf for parameters it cannot run (an unstable inverse, a person's coefficients that may
    increase)."""
    if not parameters.is_invertible():
        return math.inf
    if participations == 1:
        sensitivity_sq = parameters.closed_form_sums(UNBOUNDED_ROUNDS)[1]
    else:
        sums = parameters.pattern_sums(UNBOUNDED_ROUNDS, participations, min_separation)
        if sums is None:
            return math.inf
        sensitivity_sq = sums[1]
    return sensitivity_sq * parameters.closed_form_sums(int(horizon))[2]


@functools.lru_cache(maxsize=64)
def optimise_unbounded(
    design_horizon: int, participations: int = 1, min_separation: int = 1
) -> BLTParameters:
    """The parameters whose :func:`unbounded_max_variance` at ``design_horizon`` is least: by
    Nelder-Mead on (logit theta, log omega) from :func:`~dponline.continual.blt.optimise_blt`'s
    optimum for that many rounds, kept unless the result is better. That optimum minimises the
    variance with the sensitivity over ``design_horizon`` rounds only, and may hold a buffer
    whose theta is within 1e-6 of 1 at a small weight: harmless within the horizon, it makes
    the sensitivity over all rounds, which the counter without a horizon is calibrated to,
    explode (1.7e11 times the variance at 90 rounds, 3,909 times at 64; 1.0058 at 2^20).
    Deterministic and cached."""
    t = int(design_horizon)
    k, b = int(participations), int(min_separation)
    start = optimise_blt(t) if k == 1 else optimise_blt(t, DEFAULT_BUFFERS, k, b)
    theta = np.clip(start.theta, 1e-12, 1.0 - 1e-12)
    x0 = np.concatenate([np.log(theta / (1.0 - theta)), np.log(np.maximum(start.omega, 1e-12))])

    def loss(x: np.ndarray) -> float:
        try:
            p = BLTParameters(1.0 / (1.0 + np.exp(-x[: x.size // 2])), np.exp(x[x.size // 2 :]))
        except ValueError:
            return math.inf
        value = unbounded_max_variance(p, t, k, b)
        return math.log(value) if 0 < value < math.inf else 1e300

    # a loss evaluation costs O(buffers^3) at every horizon (the closed forms)
    options = {"maxiter": 400 * x0.size, "xatol": 1e-6, "fatol": 1e-9}
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        best = optimize.minimize(loss, x0, method="Nelder-Mead", options=options)
        n = best.x.size // 2
        result = BLTParameters(1.0 / (1.0 + np.exp(-best.x[:n])), np.exp(best.x[n:]))
        if unbounded_max_variance(result, t, k, b) < unbounded_max_variance(start, t, k, b):
            return result
    return start


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
