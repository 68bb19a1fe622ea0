"""Regret lower bounds for stochastic K-armed bandits, with and without epsilon-global DP.

All are functions of the arms' means (Bernoulli rewards) and of epsilon, for drawing next to
regret curves. Notation: mu* = max mean, Delta_a = mu* - mu_a, kl the Bernoulli divergence,
d_eps the divergence of :func:`dponline.bandits.kl.d_eps`.

Problem-dependent (asymptotic) bounds: for every *consistent* policy (regret o(T^a) for every
a > 0 on every instance of the class), liminf_{T -> inf} Reg_T / log T >= C(means, eps), with

* :func:`lai_robbins_coefficient`, no privacy (Lai & Robbins 1985; Burnetas & Katehakis 1996):
  C = sum_{a: Delta_a > 0} Delta_a / kl(mu_a, mu*);
* :func:`azize_basu_2022_coefficient`, epsilon-global DP (Azize & Basu, NeurIPS 2022, arXiv
  2209.02570, Theorem 3; for Bernoulli laws t_inf = Delta_a and d_inf = kl(mu_a, mu*), "Consequences
  of Theorem 3", item 2): C = sum_a Delta_a / min(kl(mu_a, mu*), 6 eps Delta_a). Verified in the
  text of the NeurIPS 2022 submission version;
* :func:`azize_2025_coefficient`, epsilon-global DP (Azize, Wu, Honda, Orabona, Ito & Basu, arXiv
  2505.05613, Theorem 1): C = sum_a Delta_a / d_eps(mu_a, mu*). Read in a third-party summary
  of the NeurIPS 2025 version only (see :mod:`dponline.bandits.kl`). Since
  d_eps <= min(kl, eps Delta) <= min(kl, 6 eps Delta), it is never below the 2022 bound; when
  mu* < 1 it equals the Lai-Robbins coefficient for eps large enough (d_eps = kl once the
  constraint binds for every arm); when mu* = 1, kl(mu_a, 1) is infinite and Lai-Robbins' is 0
  while both private coefficients stay positive for every finite eps.

Minimax (finite T) bound, :func:`minimax_lower_bound`: for K > 1, T >= K - 1 and eps > 0,
inf_policy sup_instance Reg_T >= max(sqrt(T (K - 1)) / 27, (K - 1) / (131 eps)) (Azize & Basu
2022, Theorem 2, verified in the submission text; the first term is the non-private bound of
Lattimore & Szepesvári, Theorem 15.2). It is a worst case over instances, not a bound for the
given means, so :func:`regret_lower_bound_curve` does not mix it in.

Worked numbers, means (0.75, 0.625, 0.5, 0.375, 0.25) (Azize & Basu's experiment), computed
with these functions and pinned in ``tests/bandits/test_lower_bounds.py``:

======= ============= ============ ============
epsilon Lai-Robbins   2022 (Th. 3) 2025 (Th. 1)
======= ============= ============ ============
0.1     7.128         8.352        41.677
0.5     7.128         7.128        10.405
1       7.128         7.128        7.708
10      7.128         7.128        7.128
======= ============= ============ ============
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dponline.bandits.kl import bernoulli_kl, d_eps
from dponline.privacy.arguments import ArgumentError, checked_count, checked_real_array

__all__ = [
    "azize_2025_coefficient",
    "azize_basu_2022_coefficient",
    "lai_robbins_coefficient",
    "lower_bound_coefficients",
    "minimax_lower_bound",
    "regret_lower_bound_curve",
]


def _means(means: Any) -> np.ndarray:
    """The arms' means: a 1-d array of at least two finite numbers in [0, 1]."""
    m = checked_real_array("means", means)
    if m.ndim != 1 or m.size < 2:
        raise ArgumentError(f"means must be a 1-d array of at least 2 arms, got shape {m.shape}")
    if np.any((m < 0.0) | (m > 1.0)):
        raise ArgumentError(f"means must lie in [0, 1], got {m.tolist()}")
    return m


def _eps(eps: Any) -> float:
    """A privacy level in (0, inf]; inf means no privacy constraint."""
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise ArgumentError(f"eps must be a positive number (inf allowed), got {eps!r}") from None
    if isinstance(eps, bool) or not e > 0.0:
        raise ArgumentError(f"eps must be a positive number (inf allowed), got {eps!r}")
    return e


def _gaps(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The suboptimal arms' means and gaps, and mu*."""
    best = float(m.max())
    sub = m[m < best]
    return sub, best - sub, best


def _sum_ratio(gaps: np.ndarray, divergences: np.ndarray) -> float:
    """sum Delta_a / D_a (a term with D_a = inf, an arm no instance can confuse, adds 0)."""
    return float(np.sum(gaps / divergences)) if gaps.size else 0.0


def lai_robbins_coefficient(means: Any) -> float:
    """sum_{a: Delta_a > 0} Delta_a / kl(mu_a, mu*): the non-private asymptotic lower bound on
    Reg_T / log T of consistent policies (Bernoulli arms; Lai & Robbins 1985). 0 when all
    means are equal; an arm with kl = inf (mu* = 1) adds 0."""
    sub, gaps, best = _gaps(_means(means))
    return _sum_ratio(gaps, bernoulli_kl(sub, best))


def azize_basu_2022_coefficient(means: Any, eps: Any) -> float:
    """sum_{a: Delta_a > 0} Delta_a / min(kl(mu_a, mu*), 6 eps Delta_a): Azize & Basu 2022,
    Theorem 3, for Bernoulli arms (t_inf = Delta_a, d_inf = kl(mu_a, mu*)), consistent
    eps-global-DP policies. eps = inf gives the Lai-Robbins coefficient."""
    sub, gaps, best = _gaps(_means(means))
    e = _eps(eps)
    return _sum_ratio(gaps, np.minimum(bernoulli_kl(sub, best), 6.0 * e * gaps))


def azize_2025_coefficient(means: Any, eps: Any) -> float:
    """sum_{a: Delta_a > 0} Delta_a / d_eps(mu_a, mu*): Azize et al. 2025 (arXiv 2505.05613),
    Theorem 1, Bernoulli arms, consistent eps-global-DP policies (statement read in a secondary
    summary). eps = inf gives the Lai-Robbins coefficient."""
    sub, gaps, best = _gaps(_means(means))
    e = _eps(eps)
    return _sum_ratio(gaps, d_eps(sub, best, e))


def lower_bound_coefficients(means: Any, eps: Any) -> dict[str, float]:
    """The three problem-dependent coefficients by name: ``lai_robbins``, ``azize_basu_2022``
    and ``azize_2025`` (the last two equal the first for eps = inf)."""
    return {
        "lai_robbins": lai_robbins_coefficient(means),
        "azize_basu_2022": azize_basu_2022_coefficient(means, eps),
        "azize_2025": azize_2025_coefficient(means, eps),
    }


def minimax_lower_bound(horizon: Any, arms: Any, eps: Any) -> np.ndarray:
    """max(sqrt(T (K - 1)) / 27, (K - 1) / (131 eps)) for each T of ``horizon`` (Azize & Basu
    2022, Theorem 2: K > 1, T >= K - 1, eps > 0; eps = inf leaves the non-private term). A
    worst case over instances with K arms: no policy does better on all of them."""
    k = checked_count("arms", arms)
    if k < 2:
        raise ArgumentError(f"arms must be at least 2, got {k}")
    e = _eps(eps)
    t = checked_real_array("horizon", horizon)
    if np.any(t < k - 1):
        raise ArgumentError(f"horizon must be >= arms - 1 = {k - 1}, got {t.tolist()}")
    return np.maximum(np.sqrt(t * (k - 1)) / 27.0, (k - 1) / (131.0 * e))


def regret_lower_bound_curve(means: Any, eps: Any, rounds: Any) -> np.ndarray:
    """C * log T at each T of ``rounds`` (>= 1), C the largest applicable problem-dependent
    coefficient: the Lai-Robbins one for eps = inf (no privacy), else the largest of the three
    (in practice Azize et al. 2025's, which dominates the 2022 one).

    For orientation only: the bounds are asymptotic (liminf of Reg_T / log T as T -> inf), hold
    for consistent policies only, and say nothing about a finite T; a regret curve may lie
    below the line at small T. The minimax floor (:func:`minimax_lower_bound`) is another kind
    of bound and is not included."""
    t = checked_real_array("rounds", rounds)
    if np.any(t < 1.0):
        raise ArgumentError(f"rounds must be >= 1, got {t.tolist()}")
    c = max(lower_bound_coefficients(means, eps).values())
    return c * np.log(t)
