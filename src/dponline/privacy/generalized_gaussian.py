"""The generalized Gaussian distribution for an l_r norm, and the regularity of l_q spaces.

* :class:`GeneralizedGaussianNoise`: the distribution on R^d with density proportional to
  ``exp(-||z||_r^2 / (2 sigma^2))``, the noise of the generalized Gaussian mechanism of
  Bassily, Guzmán & Nandi (COLT 2021), restated as Lemma 2.7 of Han et al. (ICML, "Optimal
  Private Streaming SCO in l_p-geometry").
* :func:`lq_regularity`: the regularity constants ``(kappa, kappa_+)`` of ``(R^d, ||.||_q)``
  and the smooth norm that realises them (Han et al. Lemmas 3.9 and 3.10, Definition 2.6).

How the noise is drawn
----------------------
A density of the form ``f(||z||)`` for a norm ``||.||`` (a "norm-radial" density) splits in
polar coordinates adapted to that norm: writing ``z = rho * theta`` with ``rho = ||z||`` and
``theta`` on the unit sphere ``S = {||theta|| = 1}``, the volume element is
``dz = d * vol(B) * rho^(d-1) d rho d mu(theta)``, where ``B`` is the unit ball and ``mu`` is the
*cone measure* of ``S`` (``mu(A) = vol({t a : a in A, 0 <= t <= 1}) / vol(B)``). This is because
the cone ``{t a : a in A, 0 <= t <= rho}`` is ``rho`` times the cone over ``A``, so its volume is
``rho^d mu(A) vol(B)``. The joint density of ``(rho, theta)`` is therefore the product
``rho^(d-1) f(rho) * 1``, so ``rho`` and ``theta`` are *independent*, ``theta`` has law ``mu`` and
``rho`` has density proportional to ``rho^(d-1) f(rho)``. For ``f(rho) = exp(-rho^2/(2 sigma^2))``
that is ``sigma`` times a chi variable with ``d`` degrees of freedom, whatever ``r`` is.

The cone measure of the unit l_r sphere is sampled with the Schechtman-Zinn representation
(Schechtman & Zinn 1990; Rachev & Rüschendorf 1991): if ``Y`` has i.i.d. coordinates with density
proportional to ``exp(-|y|^r)`` then ``Y / ||Y||_r`` has law ``mu`` and is independent of
``||Y||_r`` (the same polar argument applied to the norm-radial density ``exp(-||y||_r^r)``).
For ``r = inf`` ``Y`` is uniform on the cube ``[-1, 1]^d`` (density ``1{||y||_inf <= 1}``, again
norm-radial).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from scipy.special import poch

from dponline.privacy.arguments import checked_count
from dponline.privacy.noise import NoiseDistribution, validate_scale

__all__ = [
    "GG_MAX_DELTA",
    "GG_MAX_EPSILON",
    "GeneralizedGaussianNoise",
    "LqRegularity",
    "exact_kappa",
    "generalized_gaussian_sigma",
    "lq_regularity",
    "lr_norm",
    "paper_lq_constants",
]


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------


def _validate_exponent(name: str, value: float, minimum: float = 1.0) -> float:
    """A norm exponent: a real number ``>= minimum`` (``inf`` allowed), not NaN, not a bool."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if math.isnan(v) or v < minimum:
        raise ValueError(f"{name} must satisfy {minimum:g} <= {name} <= inf, got {value!r}")
    return v


def _validate_shape(shape: tuple[int, ...] | int) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        out = tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of non-negative integers, got {shape!r}") from None
    if len(out) == 0:
        raise ValueError(
            "shape must have at least one axis (the last axis is the dimension d), got ()"
        )
    for n in out:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"shape must be a tuple of non-negative integers, got {shape!r}")
    return tuple(int(n) for n in out)


# --------------------------------------------------------------------------------------------
# the l_r norm
# --------------------------------------------------------------------------------------------


def lr_norm(x: np.ndarray, r: float) -> np.ndarray:
    """The l_r norm of ``x`` along its last axis, for ``1 <= r <= inf``.

    Computed as ``m * (sum (|x_i| / m)^r)^(1/r)`` with ``m = max |x_i|`` so that it neither
    overflows nor underflows for large ``r`` (every ratio is at most 1 and the largest is 1).
    A zero vector has norm 0. Returns an array of shape ``x.shape[:-1]`` (a float for 1-D input).
    """
    r = _validate_exponent("r", r)
    a = np.abs(np.asarray(x, dtype=float))
    if a.ndim == 0:
        raise ValueError("x must have at least one axis (the vector axis), got a scalar")
    if r == 1.0:
        return a.sum(axis=-1)
    m = a.max(axis=-1, initial=0.0)
    if math.isinf(r):
        return m
    safe_m = np.where(m > 0, m, 1.0)
    s = np.sum((a / safe_m[..., None]) ** r, axis=-1)
    return np.where(m > 0, safe_m * s ** (1.0 / r), 0.0)[()]  # [()]: 0-d array -> scalar


# --------------------------------------------------------------------------------------------
# the distribution
# --------------------------------------------------------------------------------------------


def _direction_second_moment(r: float, d: int) -> float:
    """``E[theta_i^2]`` for ``theta`` cone-measure distributed on the unit l_r sphere of R^d.

    By Schechtman-Zinn, ``Y = ||Y||_r * theta`` with ``||Y||_r`` independent of ``theta``, so
    ``E[Y_i^2] = E[||Y||_r^2] E[theta_i^2]``. With ``|Y_i|^r = G_i ~ Gamma(1/r)`` and
    ``||Y||_r^r = sum G_i ~ Gamma(d/r)``: ``E[Y_i^2] = Gamma(3/r)/Gamma(1/r)`` and
    ``E[||Y||_r^2] = Gamma((d+2)/r)/Gamma(d/r)``. For ``r = inf`` (``Y`` uniform on the cube):
    ``E[Y_i^2] = 1/3`` and ``E[max |Y_i|^2] = d/(d+2)``.

    The Gamma ratios are Pochhammer symbols ``Gamma(x + a)/Gamma(x) = poch(x, a)``, which scipy
    evaluates to full precision for every ``x`` (no overflow: ``a = 2/r <= 2``), unlike
    ``exp(gammaln(x + a) - gammaln(x))``, whose cancellation costs about ``1e-11`` relative at
    ``d = 1e6`` and ``1e-6`` at ``d = 1e9``.
    """
    if math.isinf(r):
        return (d + 2.0) / (3.0 * d)
    a = 2.0 / r
    return float(poch(1.0 / r, a) / poch(d / r, a))


def _generalized_normal(rng: np.random.Generator, shape: tuple[int, ...], r: float) -> np.ndarray:
    """I.i.d. draws of density ``exp(-|y|^r) / (2 Gamma(1 + 1/r))`` (uniform on [-1, 1] at inf).

    ``|Y| = U * W^(1/r)`` with ``U`` uniform on ``(0, 1]`` and ``W ~ Gamma(1 + 1/r)``: the
    density of the product at ``y > 0`` is ``int_y^inf t^(-1) (t^r e^(-t^r) / Gamma(1 + 1/r)) dt
    = e^(-y^r) / Gamma(1 + 1/r)`` (``W^(1/r)`` has density ``t^r e^(-t^r) / Gamma(1 + 1/r)``).
    """
    u = 1.0 - rng.random(size=shape)  # uniform on (0, 1], so Y is never exactly 0
    if math.isinf(r):
        magnitude = u
    else:
        magnitude = u * rng.standard_gamma(1.0 + 1.0 / r, size=shape) ** (1.0 / r)
    sign = np.where(rng.integers(0, 2, size=shape) == 1, 1.0, -1.0)
    return sign * magnitude


@dataclass(frozen=True)
class GeneralizedGaussianNoise(NoiseDistribution):
    """The generalized Gaussian ``GG_{||.||_r, sigma}``: density on R^d proportional to
    ``exp(-||z||_r^2 / (2 sigma^2))``, ``1 <= r <= inf``.

    This is the noise of the generalized Gaussian mechanism of Bassily, Guzmán & Nandi (2021),
    used by Han et al. ("Optimal Private Streaming SCO in l_p-geometry", ICML) in Lemma 2.7 with
    ``||.||_r`` the smooth norm of a regular space (see :func:`lq_regularity`); its sensitivity is
    measured in that l_r norm (``sensitivity_norm == "lr"``). For ``r = 2`` it is exactly
    ``N(0, sigma^2 I_d)``, and for ``d = 1`` it is ``N(0, sigma^2)`` for every ``r``.

    Sampling (:meth:`sample`) is ``Z = R * theta`` with ``R = sigma * chi_d`` and ``theta``
    cone-measure distributed on the unit l_r sphere, independent of ``R``. Independence and the
    law of ``R`` follow from the polar decomposition of a norm-radial density: ``dz`` factors
    as ``d vol(B) rho^(d-1) d rho d mu(theta)`` because the cone of radius ``rho`` over a set
    ``A`` of the sphere is ``rho`` times the unit cone over ``A``, so the density
    ``exp(-rho^2/(2 sigma^2)) rho^(d-1)`` of ``(rho, theta)`` does not depend on ``theta``.
    Note that the density is *not* a product over coordinates unless ``r = 2``: drawing
    coordinates i.i.d. from ``exp(-|z|^r ...)`` gives a different distribution.

    Parameters
    ----------
    sigma:
        The scale, finite and non-negative; ``sigma == 0`` gives the point mass at 0.
    r:
        The norm exponent, ``1 <= r <= inf`` (``float('inf')`` allowed).
    """

    sigma: float
    r: float
    sensitivity_norm: str = "lr"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", validate_scale("generalized Gaussian sigma", self.sigma))
        object.__setattr__(self, "r", _validate_exponent("r", self.r))

    @property
    def scale(self) -> float:
        return self.sigma

    @classmethod
    def calibrated(
        cls, sensitivity: float, epsilon: float, delta: float, regularity: LqRegularity
    ) -> GeneralizedGaussianNoise:
        """Lemma 2.7 of Han et al.: noise in the smooth norm of ``regularity`` for a query of
        the given sensitivity in its l_q norm (epsilon <= 1, see
        :func:`generalized_gaussian_sigma`)."""
        sigma_plus = generalized_gaussian_sigma(sensitivity, epsilon, delta, regularity.kappa)
        return cls(sigma_plus / regularity.norm_scale, regularity.r)

    def norm(self, x: np.ndarray) -> np.ndarray:
        """The l_r norm of ``x`` along its last axis (see :func:`lr_norm`)."""
        return lr_norm(x, self.r)

    def sample_direction(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Draw directions from the cone measure of the unit l_r sphere; last axis is d.

        Uses ``Y / ||Y||_r`` with ``Y_i`` i.i.d. of density proportional to ``exp(-|y|^r)``
        (Schechtman & Zinn 1990). ``|Y_i|`` is drawn as ``U_i * W_i^(1/r)`` with ``U_i``
        uniform on ``(0, 1]`` and ``W_i ~ Gamma(1 + 1/r, 1)``: this equals ``G_i^(1/r)`` with
        ``G_i ~ Gamma(1/r, 1)`` in distribution (``Gamma(a) = Gamma(a+1) * U^(1/a)``, and
        ``U^(1/(a r)) = U`` for ``a = 1/r``) but never underflows to 0 for large ``r``, where a
        ``Gamma(1/r)`` draw is often below the smallest double. The sign is an independent fair
        coin. For ``r = inf`` ``|Y_i| = U_i`` (the same formula with ``1/r = 0``).
        Consumes the generator even though the result does not depend on ``sigma``.
        """
        shape = _validate_shape(shape)
        y = _generalized_normal(rng, shape, self.r)
        if y.size == 0:
            return y
        return y / lr_norm(y, self.r)[..., None]

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Draw independent vectors; ``shape[-1]`` is the dimension d, leading axes index draws.

        Draws the direction (:meth:`sample_direction`) first and then the radius
        ``sigma * sqrt(2 Gamma(d/2, 1))``, so with the same generator state
        ``Z / ||Z||_r`` equals ``sample_direction``'s output. ``sigma == 0`` returns zeros
        without touching the generator (as :class:`~dponline.privacy.noise.GaussianNoise`).
        """
        shape = _validate_shape(shape)
        if self.sigma == 0 or math.prod(shape) == 0:
            return np.zeros(shape)
        d = shape[-1]
        theta = self.sample_direction(rng, shape)
        radius = np.sqrt(2.0 * rng.standard_gamma(d / 2.0, size=shape[:-1]))
        return (self.sigma * radius)[..., None] * theta

    def coordinate_variance(self, dim: int) -> float:
        """Exact ``Var(Z_i) = sigma^2 * d * E[theta_i^2]`` for one d-dimensional draw.

        ``E[R^2] = sigma^2 d`` (chi_d) and ``E[theta_i^2]`` is
        ``[Gamma(3/r)/Gamma(1/r)] / [Gamma((d+2)/r)/Gamma(d/r)]`` (``(d+2)/(3d)`` for
        ``r = inf``) by Schechtman-Zinn independence. For ``r = 2`` this is ``1/d``, and
        ``sigma^2`` is returned exactly; for ``d = 1`` it is ``sigma^2`` for every ``r``.
        """
        d = checked_count("dim", dim)
        if self.r == 2.0 or d == 1:
            return self.sigma**2
        return self.sigma**2 * d * _direction_second_moment(self.r, d)

    def scaled(self, factor: float) -> GeneralizedGaussianNoise:
        if isinstance(factor, bool) or not isinstance(factor, numbers.Real):
            raise TypeError(f"factor must be a real number, got {factor!r}")
        return GeneralizedGaussianNoise(self.sigma * validate_scale("factor", abs(factor)), self.r)


# --------------------------------------------------------------------------------------------
# regularity of l_q spaces
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LqRegularity:
    """Regularity constants of ``(R^d, ||.||_q)`` in the sense of Han et al. Definition 2.6.

    The space is ``(kappa, kappa_plus)``-regular with smooth norm
    ``||x||_+ = norm_scale * ||x||_r``: ``||x||_+^2 / 2`` is ``kappa_plus``-smooth with respect
    to ``||.||_+`` (``kappa_plus = r - 1``, the 2-uniform smoothness constant of l_r, r >= 2) and
    ``||x||_q^2 <= ||x||_+^2 <= (kappa / kappa_plus) ||x||_q^2`` for every x.
    """

    q: float
    d: int
    kappa: float
    kappa_plus: float
    #: exponent of the smooth norm, ``2 <= r < inf``
    r: float
    #: multiplier in front of ``||.||_r`` (1 for ``q >= 2``)
    norm_scale: float

    def smooth_norm(self, x: np.ndarray) -> np.ndarray:
        """``||x||_+ = norm_scale * ||x||_r`` along the last axis."""
        return self.norm_scale * lr_norm(x, self.r)


def paper_lq_constants(q: float, d: int) -> tuple[float, float]:
    """``(kappa_q, kappa_{q,+})`` exactly as printed in Han et al. Lemmas 3.9 and 3.10.

    * ``2 <= q <= inf`` (Lemma 3.9): ``kappa_q = min{q - 1, e^2 (ln d - 1)}`` and
      ``kappa_{q,+} = min{q - 1, ln d - 1}``.
    * ``1 <= q < 2`` (Lemma 3.10): ``kappa_q = d^(1 - 2/p)`` with ``p = q/(q-1)``, i.e.
      ``d^(2/q - 1)``, and ``kappa_+ = 1``.

    No fallback or correction is applied: for ``q >= 2`` and ``d <= 7`` the values are below 1
    (even negative for ``d <= 2``) and meaningless. Use :func:`lq_regularity` for usable values.
    """
    q = _validate_exponent("q", q)
    d = checked_count("d", d)
    if q < 2:
        return float(d) ** (2.0 / q - 1.0), 1.0
    ln_d = math.log(d)
    return min(q - 1.0, math.e**2 * (ln_d - 1.0)), min(q - 1.0, ln_d - 1.0)


def exact_kappa(q: float, d: int, r: float) -> float:
    """The least ``kappa`` for which ``(R^d, ||.||_q)`` is ``(kappa, r - 1)``-regular with the
    smooth norm ``c ||.||_r`` (best ``c``), for ``2 <= r < inf`` (Definition 2.6).

    For ``r <= q`` (``c = 1``): ``||x||_q <= ||x||_r <= d^(1/r - 1/q) ||x||_q`` with equality for
    a 1-sparse vector on the left and a constant vector on the right, so the least ratio is
    ``d^(2/r - 2/q)`` and ``kappa = (r - 1) d^(2/r - 2/q)``. For ``r > q`` the norm must be scaled
    by ``c = d^(1/q - 1/r)`` and the same argument gives ``(r - 1) d^(2/q - 2/r)``; in general
    ``kappa = (r - 1) d^|2/r - 2/q|``.
    """
    q = _validate_exponent("q", q)
    d = checked_count("d", d)
    r = _validate_exponent("r", r, minimum=2.0)
    if math.isinf(r):
        raise ValueError("r must be finite: ||x||_inf^2 / 2 is not smooth, got r=inf")
    return (r - 1.0) * float(d) ** abs(2.0 / r - 2.0 / q)


def lq_regularity(q: float, d: int) -> LqRegularity:
    """Regularity constants of ``(R^d, ||.||_q)``: Han et al. Lemma 3.9 (q >= 2), 3.10 (q < 2).

    * ``1 <= q < 2`` (Lemma 3.10): ``kappa = d^(1 - 2/p)`` with the dual exponent
      ``p = q/(q-1)``, smooth norm ``d^(1/2 - 1/p) ||.||_2``, ``kappa_plus = 1``. This is exact
      (:func:`exact_kappa` with ``r = 2``).
    * ``2 <= q <= inf`` and ``ln d >= 2`` (Lemma 3.9): ``kappa_plus = min{q - 1, ln d - 1}`` and
      the smooth norm is ``||.||_r`` with ``r = kappa_plus + 1 = min{q, ln d}``. The lemma prints
      the norm as "||.||_{kappa_{q,+}}"; we read it as the l_r norm whose square is
      ``kappa_plus``-smooth, i.e. ``r = kappa_plus + 1``. ``kappa`` is
      ``max(min{q - 1, e^2 (ln d - 1)}, exact_kappa(q, d, r))``: see the comment in the body.
    * ``2 <= q <= inf`` and ``ln d < 2`` (``d <= 7``), where the lemma would give a smoothness
      exponent ``r < 2`` (``kappa_plus < 1``, negative for ``d <= 2``): the Euclidean fallback
      ``r = 2``, ``kappa_plus = 1``, ``kappa = d^(1 - 2/q)``, which is exact because
      ``||x||_q <= ||x||_2 <= d^(1/2 - 1/q) ||x||_q``.
    """
    q = _validate_exponent("q", q)
    d = checked_count("d", d)
    if q < 2:
        # Lemma 3.10. 1 - 2/p = 2/q - 1 and 1/2 - 1/p = 1/q - 1/2 (p = inf at q = 1).
        return LqRegularity(
            q=q,
            d=d,
            kappa=float(d) ** (2.0 / q - 1.0),
            kappa_plus=1.0,
            r=2.0,
            norm_scale=float(d) ** (1.0 / q - 0.5),
        )
    ln_d = math.log(d)
    if ln_d < 2.0:
        # Fallback: the lemma's smooth norm would be l_r with r = min{q, ln d} < 2, whose square
        # is not smooth (and kappa_+ < 1 is impossible); the Euclidean norm is exact here.
        return LqRegularity(
            q=q, d=d, kappa=float(d) ** (1.0 - 2.0 / q), kappa_plus=1.0, r=2.0, norm_scale=1.0
        )
    paper_kappa, kappa_plus = paper_lq_constants(q, d)
    r = kappa_plus + 1.0
    # The printed kappa_q = min{q - 1, e^2 (ln d - 1)} is SMALLER than the exact equivalence
    # constant (ln d - 1) d^(2/ln d - 2/q) = (ln d - 1) e^2 d^(-2/q) when ln d < q and
    # q - 1 < (ln d - 1) e^2 d^(-2/q): e.g. (q, d) = (3, 10): 2 < 2.07; (10, 100): 9 < 10.61;
    # (10, 1000): 9 < 10.96. (Writing t = ln d / q, q - 1 - exact vanishes at t = 1 with
    # derivative ln d - 2 >= 0 in t, so it is negative just above q = ln d.) A smaller kappa
    # would under-noise, so we use the max; it equals the paper's value (up to rounding)
    # whenever q <= ln d (both are q - 1) or q - 1 >= e^2 (ln d - 1) (including q = inf).
    kappa = max(paper_kappa, exact_kappa(q, d, r))
    return LqRegularity(q=q, d=d, kappa=kappa, kappa_plus=kappa_plus, r=r, norm_scale=1.0)


# --------------------------------------------------------------------------------------------
# calibration of the generalized Gaussian mechanism
# --------------------------------------------------------------------------------------------

#: Lemma 2.7 of Han et al. (from Bassily et al. 2021) is applied only for epsilon <= 1 per use:
#: at r = 2 (where it is the Gaussian mechanism) exact accounting refutes it at epsilon = 10.
GG_MAX_EPSILON = 1.0
GG_MAX_DELTA = 0.5


def generalized_gaussian_sigma(
    sensitivity: float, epsilon: float, delta: float, kappa: float
) -> float:
    """Han et al. Lemma 2.7 (Bassily et al. 2021): sigma^2 = 2 kappa log(1/delta) s^2 / eps^2.

    Applied only for epsilon <= 1 and delta <= 1/2 (see ``GG_MAX_EPSILON``).
    """
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite positive number, got {epsilon!r}")
    if epsilon > GG_MAX_EPSILON:
        raise ValueError(
            f"the generalized Gaussian mechanism (Lemma 2.7) is used here only for epsilon <= "
            f"{GG_MAX_EPSILON} per application, got {epsilon}; at r = 2 exact Gaussian "
            "accounting shows the lemma's formula fails at epsilon = 10"
        )
    delta = float(delta)
    if not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    if delta > GG_MAX_DELTA:
        raise ValueError(
            f"the generalized Gaussian mechanism (Lemma 2.7) is used here only for delta <= "
            f"{GG_MAX_DELTA}, got {delta}; at r = 2 exact accounting shows the formula fails "
            "for delta above about 0.98"
        )
    kappa = float(kappa)
    if not (math.isfinite(kappa) and kappa > 0):
        raise ValueError(f"kappa must be a finite positive number, got {kappa!r}")
    return math.sqrt(2.0 * kappa * math.log(1.0 / delta)) * float(sensitivity) / epsilon
