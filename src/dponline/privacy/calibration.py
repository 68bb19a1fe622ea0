"""Noise calibrations in two families: ``paper`` and ``tight``.

``paper`` functions reproduce each paper's own noise formula exactly (cited per function). The
papers write ``log T`` for the tree depth; we read it as log2(T) (at least 1), the depth of the
binary tree they aggregate with, and log(.) elsewhere as the natural logarithm.

``tight`` functions give the least noise we can prove for the same budget: the exact sensitivity
of one round (the input set's diameter, :mod:`dponline.privacy.bounds`), the exact number of
tree nodes a round enters, Laplace through exact l1 sensitivity, and Gaussian noise through the
exact (analytic) Gaussian privacy profile, checked against dp_accounting's PLD accountant.

Both families return a :class:`Calibration` whose guarantee is *what can be proven for the noise
actually used*: a paper formula that under-noises (for example losses in [-1, 1]^N, whose
sensitivity is twice ||Y||_1, or a tree deeper than log2 T) gets its real, larger epsilon, and a
:class:`~dponline.privacy.guarantee.PrivacyWarning` is raised.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dponline.privacy.accounting import (
    gaussian_epsilon,
    gaussian_sigma,
    laplace_epsilon,
    zcdp_rho,
)
from dponline.privacy.bounds import InputBounds
from dponline.privacy.guarantee import (
    Neighbouring,
    PrivacyGuarantee,
    PrivacyNotion,
    PrivacyWarning,
)
from dponline.privacy.noise import GaussianNoise, LaplaceNoise, NoiseDistribution

if TYPE_CHECKING:
    from dponline.continual.base import ContinualCounter

__all__ = [
    "CALIBRATIONS",
    "NOISE_FAMILIES",
    "Calibration",
    "agarwal_singh_gaussian_sigma",
    "agarwal_singh_laplace_scale",
    "calibrate_counter",
    "ene_gaussian_sigma",
    "ene_laplace_scale",
    "generalized_gaussian_sigma",
    "han_sigma_plus",
    "paper_log",
    "proven_guarantee",
    "reduction_laplace",
]

CALIBRATIONS = ("tight", "paper")
NOISE_FAMILIES = ("gaussian", "laplace", "generalized_gaussian")

#: Lemma 2.7 of Han et al. (from Bassily et al. 2021) is applied only for epsilon <= 1 per use:
#: at r = 2 (where it is the Gaussian mechanism) exact accounting refutes it at epsilon = 10.
GG_MAX_EPSILON = 1.0
GG_MAX_DELTA = 0.5


@dataclass(frozen=True)
class Calibration:
    """The noise of one draw and the guarantee it proves for a mechanism and input set."""

    noise: NoiseDistribution
    guarantee: PrivacyGuarantee
    calibration: str
    mechanism: str


def _pos(name: str, v: float) -> float:
    x = float(v)
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a finite positive number, got {v!r}")
    return x


def _prob(name: str, v: float) -> float:
    x = float(v)
    if not (0 < x < 1):
        raise ValueError(f"{name} must lie in (0, 1), got {v!r}")
    return x


def paper_log(horizon: int) -> float:
    """The papers' ``log T`` for a tree over T rounds: log2(T), at least 1."""
    return max(1.0, math.log2(int(horizon)))


# ---------------------------------------------------------------- paper formulas
def agarwal_singh_laplace_scale(y1_norm: float, horizon: int, epsilon: float) -> float:
    """Laplace scale per tree node, lambda = ||Y||_1 log T / epsilon.

    Agarwal & Singh (2017), Theorem 3.1 and Lemma 3.3; Corollary 3.2 uses ||Y||_1 = N (experts),
    sqrt(N) (sphere), 1 (cube). Ene et al. (2021) Theorem 2.3 states the same.
    """
    return _pos("||Y||_1", y1_norm) * paper_log(horizon) / _pos("epsilon", epsilon)


def agarwal_singh_gaussian_sigma(
    y2_norm: float, horizon: int, epsilon: float, delta: float
) -> float:
    """Gaussian sigma per tree node, sigma^2 = ||Y||_2^2 log^2 T log^2(log T / delta) / eps^2.

    Agarwal & Singh (2017), Theorem A.1; Ene et al. (2021) Theorem 2.3.
    """
    lt = paper_log(horizon)
    return (
        _pos("||Y||_2", y2_norm)
        * lt
        * math.log(lt / _prob("delta", delta))
        / _pos("epsilon", epsilon)
    )


def ene_laplace_scale(horizon: int, dim: int, lipschitz: float, epsilon: float) -> float:
    """Ene, Nguyen & Vladu (2021) Lemma 5.1: Lap(T^{1/2} n L log T / epsilon) per coordinate."""
    return (
        math.sqrt(horizon)
        * int(dim)
        * _pos("L", lipschitz)
        * paper_log(horizon)
        / _pos("epsilon", epsilon)
    )


def ene_gaussian_sigma(
    horizon: int, dim: int, lipschitz: float, epsilon: float, delta: float
) -> float:
    """Ene, Nguyen & Vladu (2021) Lemma 5.4:

    sigma = T^{1/4} n^{1/2} L log T log(T/delta) / epsilon
            * (log((n+T)/delta) + sqrt((1 + T^{1/2}/n) log((n+T)/delta))).
    """
    t, n = float(horizon), float(dim)
    delta = _prob("delta", delta)
    lg = math.log((n + t) / delta)
    return (
        t**0.25
        * math.sqrt(n)
        * _pos("L", lipschitz)
        * paper_log(horizon)
        * math.log(t / delta)
        / _pos("epsilon", epsilon)
        * (lg + math.sqrt((1 + math.sqrt(t) / n) * lg))
    )


def generalized_gaussian_sigma(
    sensitivity: float, epsilon: float, delta: float, kappa: float
) -> float:
    """Han et al. Lemma 2.7 (Bassily et al. 2021): sigma^2 = 2 kappa log(1/delta) s^2 / eps^2.

    Applied only for epsilon <= 1 (see ``GG_MAX_EPSILON``).
    """
    epsilon = _pos("epsilon", epsilon)
    if epsilon > GG_MAX_EPSILON:
        raise ValueError(
            f"the generalized Gaussian mechanism (Lemma 2.7) is used here only for epsilon <= "
            f"{GG_MAX_EPSILON} per application, got {epsilon}; at r = 2 exact Gaussian "
            "accounting shows the lemma's formula fails at epsilon = 10"
        )
    if _prob("delta", delta) > GG_MAX_DELTA:
        raise ValueError(
            f"the generalized Gaussian mechanism (Lemma 2.7) is used here only for delta <= "
            f"{GG_MAX_DELTA}, got {delta}; at r = 2 exact accounting shows the formula fails "
            "for delta above about 0.98"
        )
    return (
        math.sqrt(2.0 * _pos("kappa", kappa) * math.log(1.0 / _prob("delta", delta)))
        * float(sensitivity)
        / epsilon
    )


def han_sigma_plus(
    n: int,
    kappa_q: float,
    beta: float,
    diameter: float,
    lipschitz: float,
    epsilon: float,
    delta: float,
) -> float:
    """Han et al. Theorem 3.1, Eq. (2):

    sigma_+^2 = 8 (ceil(log2 n) + 1)^2 kappa_q log((ceil(log2 n) + 1)/delta) (beta D + L)^2 / eps^2.
    """
    depth = math.ceil(math.log2(int(n))) + 1
    s = float(beta) * float(diameter) + float(lipschitz)
    return math.sqrt(
        8.0
        * depth**2
        * _pos("kappa_q", kappa_q)
        * math.log(depth / _prob("delta", delta))
        * s**2
        / _pos("epsilon", epsilon) ** 2
    )


# ---------------------------------------------------------------- counters
def proven_guarantee(
    epsilon: float,
    delta: float,
    derivation: str,
    *,
    requested: tuple[float, float],
    rho: float | None = None,
    neighbouring: Neighbouring = Neighbouring.ONE_ROUND,
    stacklevel: int = 3,
) -> PrivacyGuarantee:
    """The guarantee a noise proves, with what was requested; warns (PrivacyWarning) when the
    proof gives less than the request, so that no calibration overstates its privacy."""
    g = PrivacyGuarantee(
        epsilon=float(epsilon),
        delta=float(delta),
        neighbouring=neighbouring,
        notion=PrivacyNotion.EVENT_LEVEL_DP,
        derivation=derivation,
        rho=rho,
        requested_epsilon=requested[0],
        requested_delta=requested[1],
    )
    if not g.meets_request:
        warnings.warn(
            f"this calibration proves only epsilon={g.epsilon:.4g}, delta={g.delta:.3g}, "
            f"not the requested ({requested[0]:.4g}, {requested[1]:.3g}): {derivation}",
            PrivacyWarning,
            stacklevel=stacklevel,
        )
    return g


def calibrate_counter(
    mechanism: type[ContinualCounter] | str,
    *,
    horizon: int,
    bounds: InputBounds,
    epsilon: float,
    delta: float = 0.0,
    noise: str = "gaussian",
    calibration: str = "tight",
    regular_norm: float | None = None,
) -> Calibration:
    """Noise per draw for a continual counter over ``horizon`` rounds of inputs in ``bounds``.

    Parameters
    ----------
    mechanism:
        A counter class or its registry name ("binary_tree", "padded_tree", "honaker",
        "sqrt_factorization").
    noise:
        "laplace" (pure DP, delta must be 0), "gaussian" or "generalized_gaussian"
        (delta > 0; ``regular_norm`` q names the l_q norm the sensitivity is measured in, and the
        noise uses the smooth norm of Han et al. Lemmas 3.9/3.10).
    calibration:
        "tight" (default) or "paper" (tree mechanisms only: the formulas of Agarwal & Singh
        Theorem 3.1 / A.1 and Han et al. Theorem 3.1).
    """
    from dponline.continual.registry import get_mechanism

    cls = get_mechanism(mechanism) if isinstance(mechanism, str) else mechanism
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if noise not in NOISE_FAMILIES:
        raise ValueError(f"noise must be one of {NOISE_FAMILIES}, got {noise!r}")
    if noise not in cls.supported_noise:
        raise ValueError(
            f"mechanism {cls.name!r} supports noise {sorted(cls.supported_noise)}, got {noise!r}"
        )
    epsilon = _pos("epsilon", epsilon)
    if noise == "laplace":
        if delta != 0:
            raise ValueError(f"Laplace noise gives pure DP: delta must be 0, got {delta!r}")
    else:
        delta = _prob("delta", delta)
    if calibration == "paper" and cls.name not in ("binary_tree", "padded_tree"):
        raise ValueError(
            f"calibration='paper' is defined only for the tree mechanisms the papers use "
            f"('binary_tree', 'padded_tree'), not {cls.name!r}; use calibration='tight'"
        )
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
    horizon = int(horizon)
    l1f, l2f = cls.sensitivity_factors(horizon)
    n_draws = cls.draws_per_step(horizon)
    req = (epsilon, float(delta))

    if bounds.diameter(2) == 0:
        raise ValueError(
            "the input set has zero diameter: every stream is the same, so there is nothing to "
            "protect; declare the set the inputs really range over"
        )
    if noise == "laplace":
        d1 = bounds.diameter(1)
        if calibration == "paper":
            b = agarwal_singh_laplace_scale(bounds.max_norm(1), horizon, epsilon)
            eps = laplace_epsilon(l1f * d1, b)
            how = (
                "Agarwal & Singh (2017) Thm 3.1: Laplace(||Y||_1 log2 T / eps) per node; proven "
                f"epsilon = {l1f:g} nodes x l1 diameter {d1:g} / scale {b:.6g}"
            )
        else:
            b = l1f * d1 / epsilon
            eps = epsilon
            how = (
                f"Laplace mechanism on {l1f:g} draws per round x exact l1 diameter {d1:g} "
                f"of the input set: scale = {l1f:g} * {d1:g} / epsilon"
            )
        return Calibration(
            LaplaceNoise(b), proven_guarantee(eps, 0.0, how, requested=req), calibration, cls.name
        )

    if noise == "gaussian":
        d2 = bounds.diameter(2)
        total = l2f * d2
        if calibration == "paper":
            sigma = agarwal_singh_gaussian_sigma(bounds.max_norm(2), horizon, epsilon, delta)
            how = "Agarwal & Singh (2017) Thm A.1 noise per node; "
        else:
            sigma = gaussian_sigma(total, epsilon, delta)
            how = "least sigma by the analytic Gaussian mechanism (Balle & Wang 2018); "
        eps = gaussian_epsilon(delta, total / sigma)
        how += (
            f"accounted exactly as one Gaussian mechanism of l2 sensitivity {l2f:.6g} x "
            f"{d2:.6g} (column norm x l2 diameter) at sigma {sigma:.6g}"
        )
        return Calibration(
            GaussianNoise(sigma),
            proven_guarantee(eps, delta, how, requested=req, rho=zcdp_rho(total, sigma)),
            calibration,
            cls.name,
        )

    # generalized Gaussian: per-draw (epsilon/k, delta/k) by Lemma 2.7, basic composition over the
    # k tree nodes a round enters (Han et al. proof of Theorem 3.1).
    from dponline.privacy.generalized_gaussian import (
        GeneralizedGaussianNoise,
        exact_kappa,
        lq_regularity,
    )

    if regular_norm is None:
        raise ValueError("generalized_gaussian noise needs regular_norm=q (the sensitivity norm)")
    reg = lq_regularity(regular_norm, bounds.dim)
    dq = bounds.diameter(regular_norm)
    if calibration == "paper":
        k = math.ceil(math.log2(horizon)) + 1
        kappa = reg.kappa
        how = "Han et al. Thm 3.1: Lemma 2.7 per node at (eps/k, delta/k), k = ceil(log2 n)+1"
    else:
        k = n_draws
        kappa = exact_kappa(reg.q, reg.d, reg.r) if reg.norm_scale == 1.0 else reg.kappa
        how = (
            f"Lemma 2.7 per node at (eps/k, delta/k) with the exact k = {k} nodes per round and "
            "the least regularity constant kappa for the smooth norm"
        )
    sigma_plus = generalized_gaussian_sigma(dq, epsilon / k, delta / k, kappa)
    how += f"; l_{regular_norm:g} diameter {dq:.6g}, kappa {kappa:.6g}, smooth l_{reg.r:g} norm"
    # density exp(-(s ||z||_r)^2 / (2 sigma_+^2)) is the l_r generalized Gaussian at sigma_+/s.
    gg = GeneralizedGaussianNoise(sigma_plus / reg.norm_scale, reg.r)
    return Calibration(
        gg, proven_guarantee(epsilon, delta, how, requested=req), calibration, cls.name
    )


def reduction_laplace(
    sensitivity: float,
    paper_numerator: float,
    epsilon: float | None,
    calibration: str,
    paper_source: str,
) -> tuple[float, PrivacyGuarantee | None]:
    """Laplace scale and guarantee for Agarwal & Singh's Algorithm 4 (Lemma 4.2): noise added
    to every observed loss value, each value used once.

    ``"paper"``: lambda = ``paper_numerator`` / epsilon (the paper's ||Y||); ``"tight"``:
    lambda = ``sensitivity`` / epsilon with the exact sensitivity. Either way the guarantee is
    sensitivity / lambda (with a PrivacyWarning when that exceeds epsilon). ``epsilon=None``
    gives (0, None): the non-private algorithm.
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if epsilon is None:
        return 0.0, None
    epsilon = _pos("epsilon", epsilon)
    if calibration == "paper":
        lam = float(paper_numerator) / epsilon
        how = f"{paper_source}: Laplace({lam:.6g}) on each observed loss value"
    else:
        lam = float(sensitivity) / epsilon
        how = f"Laplace({lam:.6g}) on each observed loss value, exact sensitivity"
    how += f" (Lemma 4.2; sensitivity {sensitivity:.6g})"
    return lam, proven_guarantee(
        sensitivity / lam, 0.0, how, requested=(epsilon, 0.0), stacklevel=4
    )
