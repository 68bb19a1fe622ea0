"""A Renyi-DP analysis of CTRL (Algorithm 1 of Agarwal, Kale, Singh & Thakurta 2023): what the
``tight`` calibration claims.

Theorem 6's proof bounds each round's privacy loss pointwise, except with a small probability,
and composes those bounds with advanced composition (Lemma 17). Its constants (losses 3G apart
in Claim 27, Phi = Phi'^2, a pointwise bound sqrt(2 d log(1 / delta')) standard deviations wide
at every switch) cost one to two orders of magnitude in sigma at the horizons we measured. Here
we bound each round's *Renyi divergence* instead and add them up (adaptive composition, Mironov
2017, Proposition 1); the algorithm is unchanged.

Setting and notation
--------------------
Two loss sequences differ in round k only. Both losses of round k are convex, G-Lipschitz and
beta-smooth, so c(x) = grad l'_k(x) - grad l_k(x) has norm at most Delta = 2G and
C(x) = Hess l'_k(x) - Hess l_k(x) lies between -beta I and beta I. J_t = J(l_{1:t-1}, .) (Eq.
3.1) is (1 / eta)-strongly convex; the neighbour's J'_t = J_t + l'_k - l_k for t > k; mu_t is the
law of x*(l_{1:t-1}, Z), Z ~ N(0, sigma^2 I), with Lemma 2's density
mu_t(x) = phi_sigma(grad J_t(x)) det Hess J_t(x).

Round t's kernel. Given the current point x_t = x and an unspent budget, Algorithm 1 keeps x
with probability q = (1 - p) clip(r_t(x), Phi^{-2}, 1), r_t = mu_{t+1}(x) / (Phi mu_t(x)), and
otherwise draws x_{t+1} from mu_{t+1}. Staying and switching are disjoint outcomes, so for the
neighbour's q' and mu'_{t+1}

    exp((a - 1) D_a(K_t || K'_t))
        = q^a q'^(1-a) + (1 - q)^a (1 - q')^(1-a) exp((a - 1) D_a(mu_{t+1} || mu'_{t+1})).    (R)

Before round k the kernels agree, and a spent budget makes both a point mass at x: the budget
B and the value of Phi only ever lower the divergence, so neither enters the proof.

Lemma A (the switch). For 2 (a - 1) beta eta < 1,

    D_a(mu || mu') <= Delta^2 / (2 sigma^2) (1 + (a - 1) / (1 - 2 (a - 1) beta eta))
                      + eta beta m + d / (2 (a - 1)) log(1 / (1 - 2 (a - 1) beta eta)),

with m = d for general losses and m = 1 for GLM losses f(<v, x>, y) (||v|| folded into G and
beta). Proof: at y = x*(J, Z) the log density ratio is (Lemma 2)

    L(y) = (||grad J(y) + c(y)||^2 - ||grad J(y)||^2) / (2 sigma^2) + log det H - log det (H + C),

and grad J(y) = -Z. Write y_0 = x*(J, 0) and c_0 = c(y_0), a fixed vector. Strong monotonicity
of grad J gives ||y - y_0|| <= eta ||Z||, and smoothness ||c(y) - c_0|| <= beta ||y - y_0||, so

    L(y) <= -<Z, c_0> / sigma^2 + beta eta ||Z||^2 / sigma^2 + Delta^2 / (2 sigma^2) + eta beta m,

the last term because H and H + C are both at least I / eta, so by concavity of log det,
|log det H - log det (H + C)| <= eta max(tr C_+, tr C_-) <= eta beta m (a GLM Hessian has rank
one and trace at most beta). Under mu, Z ~ N(0, sigma^2 I), and E exp((a - 1) L) is the Gaussian
integral E exp(b' W + s ||W||^2) = (1 - 2s)^{-d/2} exp(||b||^2 / (2 (1 - 2s))) with W = Z / sigma,
s = (a - 1) beta eta, ||b|| <= (a - 1) Delta / sigma. The same holds with the roles of the two
sequences exchanged. For a linear difference (c constant, C = 0) the divergence is the Gaussian
mechanism's a ||c||^2 / (2 sigma^2), and the bound exceeds it only by its beta eta terms.

Lemma B (the decision after round k). For t > k and any x,
|log r_t(x) - log r'_t(x)| <= gamma = Delta G / sigma^2 + eta^2 beta tr(Hess l_t)
(tr <= beta d, or beta for a GLM). Proof: with g = grad J_t(x), a = grad l_t(x), the Gaussian
parts of log r_t and log r'_t differ by <c, a> / sigma^2, and the log-determinant parts by
f(H) - f(H + C) with f(M) = log det (M + A) - log det M; along M = H + uC (at least I / eta),
|d f / du| = |tr((M^{-1} - (M + A)^{-1}) C)| <= beta tr(M^{-1} - (M + A)^{-1}) <= beta eta^2 tr A.
Clipping is monotone, so q and q' differ by at most a factor e^gamma.

At round k itself, mu_k = mu'_k and r_k / r'_k = mu_{k+1}(x) / mu'_{k+1}(x) can be anything: q
and q' are only known to lie in [(1 - p) Phi^{-2}, 1 - p] (this is why p > 0: the forced
switches of Asi et al. 2022).

Composition. The right side of (R) is jointly convex in (q, q') (each term is a perspective of
u -> u^a), so its largest value over the box (round k) or over the band |log q - log q'| <=
gamma inside the box (later rounds) is at a vertex, where we evaluate it. The worst changed
round is the first: the divergence of the whole run is at most D_k + (T - 1) D_after (counting
one round more than the T - 1 that produce a played point), converted to (epsilon, delta) by
dp_accounting's conversion (Canonne, Kamath & Steinke 2020, Proposition 12) at the orders of
:data:`ORDERS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

from dponline.privacy.accounting import RDP_ORDERS

if TYPE_CHECKING:
    from dponline.online.ctrl_parameters import CTRLParameters

__all__ = [
    "ORDERS",
    "RenyiPrivacy",
    "decision_gap",
    "renyi_curve",
    "renyi_privacy",
    "round_divergence",
    "switch_divergence",
]

#: Renyi orders of the analysis: the accountant's, with a few closer to 1 (Lemma A needs
#: 2 (a - 1) beta eta < 1; orders beyond that bound give infinity and are never chosen).
ORDERS: tuple[float, ...] = tuple(sorted({1.02, 1.05, 1.1, *RDP_ORDERS}))


def switch_divergence(
    orders: np.ndarray,
    *,
    sigma: float,
    eta: float,
    dim: int,
    lipschitz: float,
    smoothness: float,
    glm: bool,
) -> np.ndarray:
    """Lemma A of the module docstring: an upper bound on D_a(mu_{t+1} || mu'_{t+1}) at each
    order a of ``orders`` (infinite where 2 (a - 1) beta eta >= 1)."""
    a = np.asarray(orders, dtype=float)
    lam = a - 1.0
    delta_g = 2.0 * float(lipschitz)
    beta, s2 = float(smoothness), float(sigma) ** 2
    m = 1 if glm else int(dim)
    x = 2.0 * lam * beta * float(eta)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (
            delta_g**2 / (2.0 * s2) * (1.0 + lam / (1.0 - x))
            + float(eta) * beta * m
            + int(dim) / (2.0 * lam) * -np.log1p(-x)
        )
    return np.where(x < 1.0, out, np.inf)


def decision_gap(
    *, sigma: float, eta: float, dim: int, lipschitz: float, smoothness: float, glm: bool
) -> float:
    """Lemma B: gamma = Delta G / sigma^2 + eta^2 beta tr(Hess l_t), Delta = 2G, the most by which
    the log stay probabilities of the two sequences differ after the changed round."""
    g, beta = float(lipschitz), float(smoothness)
    trace = beta * (1 if glm else int(dim))
    return 2.0 * g * g / float(sigma) ** 2 + float(eta) ** 2 * beta * trace


def _log_mix(a: np.ndarray, u: float, w: float) -> np.ndarray:
    """log(u^a w^(1-a)) for a > 1, with 0^a w^(1-a) = 0 and u^a 0^(1-a) = inf for u > 0."""
    if u <= 0.0:
        return np.full_like(a, -np.inf)
    if w <= 0.0:
        return np.full_like(a, np.inf)
    return a * math.log(u) + (1.0 - a) * math.log(w)


def round_divergence(
    orders: np.ndarray, low: float, high: float, gap: float | None, switch: np.ndarray
) -> np.ndarray:
    """The largest D_a(K || K') of (R) over stay probabilities q, q' in [low, high] with
    |log q - log q'| <= ``gap`` (``None``: no constraint, round k), given the switch's bound
    ``switch`` at each order: the maximum over the region's vertices (the module docstring)."""
    a = np.asarray(orders, dtype=float)
    if gap is None:
        vertices = [(low, low), (low, high), (high, low), (high, high)]
    else:
        up = math.exp(gap)
        vertices = [
            (low, low),
            (high, high),
            (low, min(high, low * up)),
            (min(high, low * up), low),
            (high, max(low, high / up)),
            (max(low, high / up), high),
        ]
    best = np.full_like(a, -np.inf)
    for q, qp in vertices:
        stay = _log_mix(a, q, qp)
        split = _log_mix(a, 1.0 - q, 1.0 - qp)
        # a switch that cannot happen (1 - q = 0) contributes nothing, whatever its divergence
        with np.errstate(invalid="ignore"):  # -inf + inf, discarded by the where
            move = np.where(split == -np.inf, -np.inf, split + (a - 1.0) * switch)
        best = np.maximum(best, np.logaddexp(stay, move))
    return best / (a - 1.0)


def _constants(params: CTRLParameters) -> dict:
    """What Lemmas A and B take from a run's parameters."""
    return {
        "sigma": params.sigma,
        "eta": params.eta,
        "dim": params.dim,
        "lipschitz": params.lipschitz,
        "smoothness": params.smoothness,
        "glm": params.glm,
    }


def renyi_curve(params: CTRLParameters) -> tuple[np.ndarray, np.ndarray]:
    """The orders of :data:`ORDERS` and the Renyi divergence bound of a whole run at each:
    D_k + (T - 1) D_after (module docstring)."""
    a = np.asarray(ORDERS)
    constants = _constants(params)
    switch = switch_divergence(a, **constants)
    high = 1.0 - float(params.p)
    low = high * math.exp(-2.0 * float(params.log_phi))
    first = round_divergence(a, low, high, None, switch)
    after = round_divergence(a, low, high, decision_gap(**constants), switch)
    rounds_after = params.horizon - 1
    return a, first + rounds_after * after if rounds_after else first


@dataclass(frozen=True)
class RenyiPrivacy:
    """:func:`renyi_privacy`'s answer: (epsilon, delta), the order that gave it, and the
    per-switch divergence at that order."""

    epsilon: float
    delta: float
    order: float
    switch: float

    @property
    def derivation(self) -> str:
        return (
            "Renyi-DP analysis of Algorithm 1 (dponline.online.ctrl_renyi): each round's kernel "
            f"bounded exactly at its stay/switch split, a switch {self.switch:.3g} at order "
            f"{self.order:g} (objective perturbation with a Gaussian remainder), composed over "
            "the rounds and converted at delta (Canonne, Kamath & Steinke 2020)"
        )


def renyi_privacy(params: CTRLParameters, delta: float) -> RenyiPrivacy:
    """The (epsilon, ``delta``)-DP that the module's analysis proves for Algorithm 1 run with
    ``params`` (any eta, sigma, Phi, p, B); epsilon is inf when p = 0 (no forced switching)."""
    dl = float(delta)
    if not 0.0 < dl < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    orders, rdp = renyi_curve(params)
    finite = np.isfinite(rdp)
    if not finite.any():
        return RenyiPrivacy(math.inf, dl, math.nan, math.inf)
    eps, order = compute_epsilon(orders[finite], rdp[finite], dl)
    switch = switch_divergence(np.array([order]), **_constants(params))[0]
    return RenyiPrivacy(float(eps), dl, float(order), float(switch))
