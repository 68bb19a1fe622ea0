"""The noise formulas of Ene, Nguyen & Vladu (2021) for their PrivateBandit (Algorithm 1):
Laplace noise of Lemma 5.1 for (epsilon, 0)-DP and Gaussian noise of Lemma 5.4 for
(epsilon, delta)-DP, per coordinate of the batch-gradient sums its tree aggregates. They are the
``paper`` calibration of that algorithm; ``log T`` is read as in
:func:`dponline.privacy.calibration.paper_log`."""

from __future__ import annotations

import math

from dponline.privacy.calibration import paper_log, positive, probability

__all__ = ["ene_gaussian_sigma", "ene_laplace_scale"]


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
