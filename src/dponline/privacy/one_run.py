"""Privacy auditing in one run: a lower bound on epsilon from canaries included at random.

The auditor picks m *canaries* (for an online learner: m rounds whose input is one of two
values) and includes each independently with probability 1/2 (S_i in {0, 1}); the mechanism
runs **once**; a guesser that sees only the output (never S) guesses S_i for some canaries and
abstains on the rest: r guesses, v of them correct. If the mechanism is (epsilon, delta)-DP with
respect to the inclusion of each single canary, then (Steinke, Nasr & Jagielski, "Privacy
auditing with one (1) training run", NeurIPS 2023, Theorem 3.1 for delta = 0 and its extension
to delta > 0, Section 3 and Appendix B) the number of correct guesses is nearly dominated by a
Binomial(r, q) with q = e^epsilon / (1 + e^epsilon):

    p(epsilon) = P[B >= v] + 2 m delta max_{i = 1..v} P[v - i <= B < v] / i,  B ~ Binomial(r, q)

is a p-value for the hypothesis "the mechanism is (epsilon, delta)-DP" (:func:`p_value`), and
the largest epsilon rejected at significance s (p(epsilon) <= s) is a lower bound on the
mechanism's epsilon with confidence 1 - s (:func:`epsilon_lower_bound`). p increases with
epsilon; the bound is found by bracketing (doubling) and :func:`scipy.optimize.brentq`.

The f-DP bound of Mahloujifar, Melis & Chaudhuri ("Auditing f-differential privacy in one run",
2024, Algorithm "audit with reconstruction and cap", the recursion of their Theorem 9 for
abstaining guessers) tests the claim "the mechanism is f-DP" for a trade-off function f and is
often tighter for the same counts (:func:`fdp_rejects`, :func:`fdp_epsilon_lower_bound`). Two
families of curves: the (epsilon, delta)-DP curve itself (``curve="privacy"``, Kairouz et al.'s
f_{epsilon,delta}), which every (epsilon, delta)-DP mechanism satisfies, so the bound is a
bound on the claim as stated; and the Gaussian curve through (epsilon, delta)
(``curve="gaussian"``), a stronger hypothesis (mu-GDP) that only a Gaussian mechanism's claim
implies: a rejection of it does not refute an (epsilon, delta) claim of any other mechanism.

Thresholds: a guesser that scores canaries and guesses above a threshold must not choose the
threshold from the labels. :func:`audit_canaries` tries a grid of guess counts fixed before the
run (the top k scores guessed "in", and with ``two_sided`` the bottom k "out") and pays for the
choice by Bonferroni (significance / number of candidates x methods).
:func:`epsilon_from_scores` takes in/out scores and a set of thresholds given in advance, with the
same correction.

Every function here is exact for the given numbers of canaries, guesses and correct guesses: no
normal approximation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from dponline.privacy.accounting import gaussian_mu_for
from dponline.privacy.arguments import (
    checked_count,
    checked_nonnegative_int,
    checked_probability,
    checked_real_array,
)

__all__ = [
    "METHODS",
    "OneRunResult",
    "audit_canaries",
    "epsilon_from_scores",
    "epsilon_lower_bound",
    "fdp_epsilon_lower_bound",
    "fdp_rejects",
    "guess_grid",
    "p_value",
    "tradeoff",
]

#: The bounds :func:`audit_canaries` can take the best of: Steinke et al.'s and the f-DP one on
#: the (epsilon, delta)-DP curve (both valid for every (epsilon, delta)-DP mechanism).
METHODS = ("steinke", "fdp")

#: Bracketing stops here: a bound above this is reported as this (the counts can then not tell
#: larger epsilons apart at any useful precision).
_EPS_MAX = 64.0


def _q(epsilon: float) -> float:
    """e^epsilon / (1 + e^epsilon) for epsilon >= 0: the chance of a right guess under the null."""
    return 1.0 / (1.0 + math.exp(-epsilon))


def _counts(m: int, guesses: int, correct: int) -> tuple[int, int, int]:
    m = checked_count("m", m)
    r = checked_nonnegative_int("guesses", guesses)
    v = checked_nonnegative_int("correct", correct)
    if not v <= r <= m:
        raise ValueError(
            f"need correct <= guesses <= m (canaries), got correct={v}, guesses={r}, m={m}"
        )
    return m, r, v


def _delta(delta: float) -> float:
    d = float(delta)
    if not (math.isfinite(d) and 0 <= d < 1):
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
    return d


def p_value(m: int, guesses: int, correct: int, epsilon: float, delta: float = 0.0) -> float:
    """Steinke et al.'s p-value of ``correct`` right guesses out of ``guesses`` among ``m``
    canaries under the hypothesis "(epsilon, delta)-DP" (module docstring)."""
    m, r, v = _counts(m, guesses, correct)
    delta = _delta(delta)
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and non-negative, got {epsilon!r}")
    if v == 0:
        return 1.0
    q = _q(epsilon)
    beta = float(stats.binom.sf(v - 1, r, q))
    if delta == 0:
        return beta
    i = np.arange(1, v + 1)
    # P[v - i <= B < v] = P[B >= v - i] - P[B >= v]
    between = stats.binom.sf(v - i - 1, r, q) - beta
    alpha = float(np.max(between / i))
    return min(1.0, beta + alpha * delta * 2 * m)


def _largest_rejected(reject_margin: Callable[[float], float], lo: float = 0.0) -> float:
    """The largest epsilon >= lo with ``reject_margin(epsilon) > 0`` (a margin decreasing in
    epsilon), 0 when there is none (the Gaussian curve starts at a tiny lo > 0, where nothing
    rejected is still a bound of 0); bracketing by doubling, then brentq."""
    if reject_margin(lo) <= 0:
        return 0.0
    hi = max(1.0, 2 * lo)
    while reject_margin(hi) > 0:
        lo, hi = hi, 2 * hi
        if hi > _EPS_MAX:
            return _EPS_MAX
    root = optimize.brentq(reject_margin, lo, hi, xtol=1e-7)
    # stay on the rejected side: the bound never exceeds what the counts prove
    while root > lo and reject_margin(root) <= 0:
        root = max(lo, root - 1e-7)
    return float(root)


def epsilon_lower_bound(
    m: int,
    guesses: int,
    correct: int,
    significance: float,
    delta: float = 0.0,
) -> float:
    """Steinke et al.'s lower bound: the largest epsilon whose p-value (:func:`p_value`) is at
    most ``significance`` (0 when even epsilon = 0 is not rejected). With probability at least
    1 - significance it does not exceed the epsilon of an (epsilon, delta)-DP mechanism."""
    m, r, v = _counts(m, guesses, correct)
    s = checked_probability("significance", significance)
    delta = _delta(delta)
    if v == 0 or p_value(m, r, v, 0.0, 0.0) > s:  # delta only adds to the p-value
        return 0.0
    return _largest_rejected(lambda e: s - p_value(m, r, v, e, delta))


def tradeoff(curve: str, epsilon: float, delta: float) -> Callable[[float], float]:
    """The trade-off function f (type II error at type I error alpha) of a claim:
    ``"privacy"``: (epsilon, delta)-DP, f(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a))
    (Kairouz, Oh & Viswanath 2015; Dong, Roth & Su 2022, Proposition 2.5); ``"gaussian"``: the
    mu-GDP curve f(a) = Phi(Phi^-1(1 - a) - mu) with mu the largest for which a Gaussian
    mechanism is (epsilon, delta)-DP (Balle & Wang 2018, Theorem 8)."""
    if curve == "privacy":
        e = math.exp(epsilon)

        def f(a: float) -> float:
            return max(0.0, 1 - delta - e * a, (1 - delta - a) / e)

        return f
    if curve == "gaussian":
        if delta <= 0:
            raise ValueError("the Gaussian curve through (epsilon, 0) is not defined: delta > 0")
        mu = gaussian_mu_for(max(epsilon, 1e-12), delta)

        def g(a: float) -> float:
            return float(special.ndtr(special.ndtri(1 - a) - mu))

        return g
    raise ValueError(f"curve must be 'privacy' or 'gaussian', got {curve!r}")


def _fdp_margin(m: int, r: int, v: int, s: float, f: Callable[[float], float]) -> float:
    """Mahloujifar et al.'s test of an f-DP claim from v correct out of r guesses among m
    canaries at significance s: positive when the claim is rejected.

    The recursion bounds the probability mass of outcomes with i correct guesses: it starts from
    the mass s v / m (correct) and s (r - v) / m (wrong) the observed outcome would need, and for
    i = v - 1 down to 0 grows the wrong mass to what f forces, h = max(h, f(1 - c)) with c the
    correct mass, spreading the growth to the correct mass in the ratio i / (r - i). The claim is
    rejected when the masses exceed what r guesses can hold, c + h > r / m."""
    c = s * v / m
    h = s * (r - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(h, f(1.0 - c))
        if h_new == h:
            break
        c = min(c + (i / (r - i)) * (h_new - h), 1.0)
        h = h_new
    return c + h - r / m


def fdp_rejects(
    m: int, guesses: int, correct: int, significance: float, f: Callable[[float], float]
) -> bool:
    """Whether the counts reject "f-DP with respect to each canary" at ``significance``
    (Mahloujifar et al.; f from :func:`tradeoff`)."""
    m, r, v = _counts(m, guesses, correct)
    s = checked_probability("significance", significance)
    return v > 0 and _fdp_margin(m, r, v, s, f) > 0


def fdp_epsilon_lower_bound(
    m: int,
    guesses: int,
    correct: int,
    significance: float,
    delta: float = 0.0,
    *,
    curve: str = "privacy",
) -> float:
    """The largest epsilon whose ``curve`` claim at ``delta`` (:func:`tradeoff`) the counts
    reject at ``significance`` (0 when none is). With ``curve="privacy"`` a lower bound on the
    epsilon of any (epsilon, delta)-DP mechanism, with confidence 1 - significance; with
    ``"gaussian"`` a lower bound on the (epsilon, delta) of the Gaussian curve the mechanism
    lies on (valid only for mu-GDP mechanisms, module docstring)."""
    m, r, v = _counts(m, guesses, correct)
    s = checked_probability("significance", significance)
    delta = _delta(delta)
    if curve == "gaussian" and delta == 0:
        raise ValueError("the Gaussian curve needs delta > 0")
    if v == 0:
        return 0.0

    def margin(e: float) -> float:
        return _fdp_margin(m, r, v, s, tradeoff(curve, e, delta))

    return _largest_rejected(margin, 1e-9 if curve == "gaussian" else 0.0)


def _bound(method: str, m: int, r: int, v: int, s: float, delta: float) -> float:
    if method == "steinke":
        return epsilon_lower_bound(m, r, v, s, delta)
    if method == "fdp":
        return fdp_epsilon_lower_bound(m, r, v, s, delta, curve="privacy")
    if method == "fdp-gaussian":
        return fdp_epsilon_lower_bound(m, r, v, s, delta, curve="gaussian")
    raise ValueError(f"method must be one of {(*METHODS, 'fdp-gaussian')}, got {method!r}")


def _max_over(
    counts: Sequence[tuple[int, int]], m: int, s: float, delta: float, method: str
) -> tuple[float, int]:
    """The best bound over candidate (guesses, correct) pairs, each at significance s, and the
    index of the best (-1 when none is positive). Candidates are tried in order of decreasing
    precision; one whose raw precision v / r is at most e^b / (1 + e^b) of the best bound b so
    far cannot beat it (both bounds are below logit(v / r)) and is skipped."""
    order = sorted(range(len(counts)), key=lambda j: -(counts[j][1] / max(counts[j][0], 1)))
    best, arg = 0.0, -1
    for j in order:
        r, v = counts[j]
        if r == 0 or v / r <= _q(best):
            continue
        b = _bound(method, m, r, v, s, delta)
        if b > best:
            best, arg = b, j
    return best, arg


def epsilon_from_scores(
    in_scores: Sequence[float],
    out_scores: Sequence[float],
    significance: float,
    delta: float = 0.0,
    *,
    method: str = "steinke",
    thresholds: Sequence[float] | None = None,
) -> float:
    """A one-sided lower bound from the scores of included (``in``) and excluded (``out``)
    canaries: guess "in" for every score >= t, for each candidate threshold t, at significance
    ``significance`` / (number of candidates) (Bonferroni). ``thresholds`` must be fixed before
    the labels are seen (a grid, or the pooled scores); by default every distinct pooled score,
    corrected as m candidates (the m guessers "top k", k = 1..m, fixed in advance, contain
    them). ``method``: ``"steinke"``, ``"fdp"`` (the (epsilon, delta) curve) or
    ``"fdp-gaussian"`` (module docstring)."""
    a = checked_real_array("in_scores", in_scores).ravel()
    b = checked_real_array("out_scores", out_scores).ravel()
    s = checked_probability("significance", significance)
    delta = _delta(delta)
    m = a.size + b.size
    if a.size == 0 or b.size == 0:
        raise ValueError("need at least one included and one excluded canary")
    if thresholds is None:
        cand = np.unique(np.concatenate([a, b]))
        correction = m
    else:
        cand = np.asarray(thresholds, dtype=float).ravel()
        correction = max(1, cand.size)
    sa, sb = np.sort(a), np.sort(b)
    tp = a.size - np.searchsorted(sa, cand, "left")
    fp = b.size - np.searchsorted(sb, cand, "left")
    counts = [(int(t + f), int(t)) for t, f in zip(tp, fp, strict=True)]
    return _max_over(counts, m, s / correction, delta, method)[0]


def guess_grid(m: int, two_sided: bool = True, size: int = 24) -> tuple[int, ...]:
    """Guess counts fixed before a run of m canaries: about ``size`` values of k, geometric
    from 1 to m (m / 2 with ``two_sided``, k guesses at each end)."""
    top = m // 2 if two_sided else m
    top = max(top, 1)
    grid = np.unique(np.round(np.geomspace(1, top, num=size)).astype(int))
    return tuple(int(k) for k in grid)


@dataclass(frozen=True)
class OneRunResult:
    """The outcome of :func:`audit_canaries`."""

    epsilon_lower: float  #: lower bound on epsilon at ``delta``, confidence 1 - significance
    method: str  #: the bound that gave it ("steinke" or "fdp"; "" when 0)
    canaries: int  #: m
    guesses: int  #: r of the best candidate
    correct: int  #: v of the best candidate
    significance: float
    delta: float
    candidates: int  #: the Bonferroni factor (guess counts x methods)
    claimed_epsilon: float | None = None
    #: the bound if every guess of every guess count were right (at these m, delta and
    #: significance): the most this audit can show, whatever the learner and the coins do
    ceiling: float = math.inf

    @property
    def refuted(self) -> bool:
        """The lower bound exceeds the claim (``False`` when there is no claim)."""
        return self.claimed_epsilon is not None and self.epsilon_lower > self.claimed_epsilon

    @property
    def can_refute(self) -> bool:
        """Some outcome could refute the claim: its ceiling lies above it (``True`` when there
        is no claim). With delta large for the number of canaries (2 m delta near the
        significance) even perfect guesses prove nothing, and "not refuted" says nothing."""
        return self.claimed_epsilon is None or self.ceiling > self.claimed_epsilon

    def __str__(self) -> str:
        claim = ""
        if self.claimed_epsilon is not None and math.isinf(self.claimed_epsilon):
            claim = " (no finite epsilon claimed, e.g. after scale_noise: pass a claim to test)"
        elif self.claimed_epsilon is not None:
            if self.refuted:
                verdict = "REFUTED"
            elif self.can_refute:
                verdict = f"not refuted; guesses all right would prove {self.ceiling:.3f}"
            else:
                verdict = (
                    f"cannot be refuted here: guesses all right would prove only {self.ceiling:.3f}"
                )
            claim = f" (claim {self.claimed_epsilon:.4g}: {verdict})"
        if self.guesses == 0:  # no guess count beat chance enough to bound anything
            found = "no guess count's right guesses beat chance"
        else:
            found = f"{self.correct} of {self.guesses} guesses right"
        return (
            f"one-run audit: epsilon >= {self.epsilon_lower:.3f} at delta {self.delta:.3g} with "
            f"confidence {1 - self.significance:g}{claim}; {found} among {self.canaries} "
            "canaries"
        )


def audit_canaries(
    scores: Sequence[float],
    included: Sequence[bool],
    *,
    significance: float = 1e-3,
    delta: float = 0.0,
    claimed_epsilon: float | None = None,
    guesses: Sequence[int] | None = None,
    two_sided: bool = True,
    methods: Sequence[str] = METHODS,
    tie_seed: int = 0,
) -> OneRunResult:
    """The one-run lower bound from one score per canary (higher: more likely included).

    For each k of ``guesses`` (default :func:`guess_grid`, which depends on m only) the guesser
    says "included" for the k highest scores and, with ``two_sided``, "excluded" for the k
    lowest; ties are broken by a random order drawn from ``tie_seed`` (independent of the
    labels). Every candidate and every method of ``methods`` runs at significance
    ``significance / (len(guesses) * len(methods))``, so the best of them holds with confidence
    1 - significance. ``included``: the canaries' coins S_i, used only to count correct
    guesses."""
    x = checked_real_array("scores", scores).ravel()
    labels = np.asarray(included, dtype=bool).ravel()
    if labels.shape != x.shape:
        raise ValueError(f"need one label per score, got {labels.size} labels, {x.size} scores")
    m = checked_count("canaries", x.size)
    s = checked_probability("significance", significance)
    delta = _delta(delta)
    grid = guess_grid(m, two_sided) if guesses is None else tuple(guesses)
    limit = m // 2 if two_sided else m
    if not grid or any(not 1 <= int(k) <= limit for k in grid):
        raise ValueError(f"guess counts must lie in [1, {limit}], got {grid!r}")
    methods = tuple(methods)
    if not methods:
        raise ValueError("need at least one method")
    tie = np.random.default_rng(tie_seed).random(m)
    rank = np.lexsort((tie, x))  # ascending scores, random order among ties
    hits_top = np.cumsum(labels[rank[::-1]])  # right "included" guesses among the top k
    hits_bottom = np.cumsum(~labels[rank])  # right "excluded" guesses among the bottom k
    counts = []
    for k in grid:
        k = int(k)
        right = int(hits_top[k - 1]) + (int(hits_bottom[k - 1]) if two_sided else 0)
        counts.append(((2 if two_sided else 1) * k, right))
    level = s / (len(grid) * len(methods))
    best, best_method, best_j = 0.0, "", -1
    for method in methods:
        b, j = _max_over(counts, m, level, delta, method)
        if b > best:
            best, best_method, best_j = b, method, j
    r, v = counts[best_j] if best_j >= 0 else (0, 0)
    perfect = [(guessed, guessed) for guessed, _ in counts]
    ceiling = max(_max_over(perfect, m, level, delta, method)[0] for method in methods)
    return OneRunResult(
        epsilon_lower=best,
        method=best_method,
        canaries=m,
        guesses=r,
        correct=v,
        significance=s,
        delta=delta,
        candidates=len(grid) * len(methods),
        claimed_epsilon=None if claimed_epsilon is None else float(claimed_epsilon),
        ceiling=ceiling,
    )
