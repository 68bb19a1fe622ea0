"""The one-run lower bound (dponline.privacy.one_run): exact p-values, validity for an
epsilon-DP mechanism, convergence on randomised response, and the reference golden values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from dponline.privacy.one_run import (
    audit_canaries,
    epsilon_from_scores,
    epsilon_lower_bound,
    fdp_epsilon_lower_bound,
    fdp_rejects,
    guess_grid,
    p_value,
    tradeoff,
)


def _p_value_loop(m, r, v, eps, delta):
    """The p-value written out term by term (Steinke et al., Section 3)."""
    q = special.expit(eps)
    beta = sum(stats.binom.pmf(j, r, q) for j in range(v, r + 1))
    alpha, mass = 0.0, 0.0
    for i in range(1, v + 1):
        mass += stats.binom.pmf(v - i, r, q)
        alpha = max(alpha, mass / i)
    return min(1.0, beta + alpha * delta * 2 * m)


@pytest.mark.parametrize("delta", [0.0, 1e-6, 1e-3, 0.1])
@pytest.mark.parametrize(
    ("m", "r", "v", "eps"), [(10, 10, 9, 0.5), (100, 40, 30, 1.0), (50, 7, 0, 0.3)]
)
def test_p_value_matches_the_sum_written_out(m, r, v, eps, delta):
    expected = 1.0 if v == 0 else _p_value_loop(m, r, v, eps, delta)
    assert p_value(m, r, v, eps, delta) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_p_value_is_the_binomial_tail_without_delta():
    assert p_value(100, 20, 20, 0.0) == pytest.approx(0.5**20)
    assert p_value(100, 20, 15, 1.0) == pytest.approx(stats.binom.sf(14, 20, special.expit(1.0)))


def test_bound_sits_where_the_p_value_crosses_the_significance():
    m, r, v, s = 1000, 400, 330, 0.05
    eps = epsilon_lower_bound(m, r, v, s, 1e-5)
    assert 0 < eps < math.log(v / (r - v))  # below the raw precision's logit
    assert p_value(m, r, v, eps, 1e-5) <= s  # rejected at the bound
    assert p_value(m, r, v, eps + 1e-4, 1e-5) > s  # and not beyond it


@pytest.mark.parametrize("bound", [epsilon_lower_bound, fdp_epsilon_lower_bound])
def test_an_epsilon_dp_mechanism_exceeds_epsilon_with_probability_at_most_s(bound):
    """Exact, not simulated: randomised response with epsilon = 1 on m = 60 canaries, every
    canary guessed (its released bit): the chance that the bound exceeds 1 is the Binomial(60,
    q) mass of the counts whose bound does, and must be at most the significance."""
    m, eps, s = 60, 1.0, 0.05
    q = special.expit(eps)
    exceeding = [v for v in range(m + 1) if bound(m, m, v, s, 0.0) > eps]
    chance = float(stats.binom.pmf(exceeding, m, q).sum()) if exceeding else 0.0
    assert exceeding  # the test can fail: large counts do exceed
    assert chance <= s


@pytest.mark.parametrize("bound", [epsilon_lower_bound, fdp_epsilon_lower_bound])
@pytest.mark.parametrize(("m", "delta"), [(60, 1e-4), (200, 2e-5), (200, 1e-4)])
def test_an_epsilon_delta_dp_mechanism_exceeds_epsilon_with_probability_at_most_s(bound, m, delta):
    """Exact, with delta > 0: each canary's bit is released outright with probability delta,
    else by randomised response at epsilon = 1 (an (epsilon, delta)-DP release of each bit);
    every canary guessed, so the number right is Binomial(m, delta + (1 - delta) q), and the
    chance that the bound exceeds epsilon is that law's mass where it does."""
    eps, s = 1.0, 0.05
    right = delta + (1 - delta) * special.expit(eps)
    exceeding = [v for v in range(m + 1) if bound(m, m, v, s, delta) > eps]
    assert exceeding  # the test can fail: large counts do exceed
    assert float(stats.binom.pmf(exceeding, m, right).sum()) <= s


@pytest.mark.parametrize("bound", [epsilon_lower_bound, fdp_epsilon_lower_bound])
def test_randomised_response_bound_approaches_epsilon_as_m_grows(bound):
    """Randomised response at epsilon = 1, every canary guessed, v the expected number right:
    the bound rises towards epsilon and never passes it."""
    eps, s = 1.0, 0.05
    q = special.expit(eps)
    bounds = [bound(m, m, round(q * m), s, 0.0) for m in (100, 1_000, 10_000, 100_000)]
    assert all(b < eps for b in bounds)
    assert bounds == sorted(bounds)
    assert bounds[-1] > 0.95 * eps and bounds[0] < 0.7 * eps


def test_tradeoff_curves():
    f = tradeoff("privacy", 1.0, 0.0)
    assert f(0.0) == 1.0 and f(1.0) == 0.0
    assert f(0.1) == pytest.approx(1 - math.e * 0.1)
    g = tradeoff("gaussian", 1.0, 1e-5)
    assert 0 < g(0.5) < 0.5
    with pytest.raises(ValueError, match="curve"):
        tradeoff("laplace", 1.0, 0.0)
    assert not fdp_rejects(10, 4, 2, 0.05, f)


# --- golden values of the reference implementation's tests (10,000 in and 10,000 out canaries
# with deterministic normal-quantile scores, in-scores shifted by mu; significance 0.05,
# delta 1e-6; Bonferroni over the thresholds at the vertices of the upper hull of the ROC
# staircase; /work notes, section 6)


def _deterministic_normal(mu, n):
    return stats.norm.ppf(np.linspace(0, 1, n, endpoint=False) + 1 / (2 * n)) + mu


def _hull_thresholds(in_scores, out_scores):
    """Thresholds at the vertices of the upper convex hull of the points (false negatives,
    true negatives) over every threshold (our monotone-chain hull)."""
    thresholds = np.concatenate([np.union1d(in_scores, out_scores), [np.inf]])
    fn = np.searchsorted(np.sort(in_scores), thresholds, "left")
    tn = np.searchsorted(np.sort(out_scores), thresholds, "left")
    points = np.stack([fn, tn], axis=1).astype(float)
    hull: list[int] = []
    for i, p in enumerate(points):
        while len(hull) >= 2:
            o, a = points[hull[-2]], points[hull[-1]]
            if (a[0] - o[0]) * (p[1] - o[1]) - (a[1] - o[1]) * (p[0] - o[0]) >= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return thresholds[hull]


# each non-zero value takes a few seconds (hundreds of thresholds): marked slow
@pytest.mark.parametrize(
    ("method", "mu", "expected"),
    [
        ("steinke", 0, 0.0),
        pytest.param("steinke", 1, 1.13346, marks=pytest.mark.slow),
        pytest.param("steinke", 2, 2.311945, marks=pytest.mark.slow),
        pytest.param("steinke", 4, 4.395568, marks=pytest.mark.slow),
        ("fdp-gaussian", 0, 0.0),
        pytest.param("fdp-gaussian", 1, 2.164749, marks=pytest.mark.slow),
        pytest.param("fdp-gaussian", 2, 4.7218075, marks=pytest.mark.slow),
        pytest.param("fdp-gaussian", 4, 9.133752, marks=pytest.mark.slow),
    ],
)
def test_golden_values(method, mu, expected):
    n = 10_000
    a, b = _deterministic_normal(mu, n), _deterministic_normal(0, n)
    eps = epsilon_from_scores(a, b, 0.05, 1e-6, method=method, thresholds=_hull_thresholds(a, b))
    assert eps == pytest.approx(expected, rel=1e-5, abs=1e-9)


# --- the guesser with abstention


@pytest.mark.slow
def test_audit_canaries_randomised_response_over_seeds():
    """Randomised response at epsilon = 1 (the score is the released bit, ties broken
    independently of the labels), 200 seeds of m = 200: each seed's bound exceeds 1 with chance
    <= 0.05, so 25 or more exceedances out of 200 has chance < 1e-4 (false failure)."""
    eps, m = 1.0, 200
    q = special.expit(eps)
    exceed = 0
    rng = np.random.default_rng(7)
    for _ in range(200):
        s = rng.random(m) < 0.5
        released = np.where(rng.random(m) < q, s, ~s)
        res = audit_canaries(
            released.astype(float), s, significance=0.05, claimed_epsilon=eps, methods=("steinke",)
        )
        exceed += res.refuted
    assert exceed < 25


def test_every_candidate_runs_at_the_significance_split_among_all_candidates():
    """The best of len(guesses) x len(methods) candidates holds at 1 - significance because
    each runs at significance / (their number): the bound equals the best candidate's at
    that level, computed here by hand (without the split, or without the methods' factor, no
    fast test failed)."""
    rng = np.random.default_rng(3)
    m = 300
    s = rng.random(m) < 0.5
    scores = np.where(s, 1.0, 0.0) + rng.normal(0.0, 0.8, m)  # a guesser right about 3 in 4
    grid, methods, sig = (10, 40, 100), ("steinke", "fdp"), 0.05
    res = audit_canaries(scores, s, significance=sig, guesses=grid, methods=methods)
    order = np.argsort(scores, kind="stable")
    by_hand = []
    for k in grid:
        right = int(s[order[::-1][:k]].sum() + (~s[order[:k]]).sum())
        for bound in (epsilon_lower_bound, fdp_epsilon_lower_bound):
            by_hand.append(bound(m, 2 * k, right, sig / (len(grid) * len(methods))))
    assert res.candidates == 6 and res.epsilon_lower > 0.3
    assert res.epsilon_lower == pytest.approx(max(by_hand), abs=1e-6)
    # at the level without the methods' factor the best candidate proves more: the split is seen
    assert (
        max(
            bound(m, res.guesses, res.correct, sig / len(grid))
            for bound in (epsilon_lower_bound, fdp_epsilon_lower_bound)
        )
        > res.epsilon_lower + 1e-3
    )


def test_guesses_at_chance_prove_zero_on_every_curve():
    # the Gaussian curve's search starts at 1e-9, which it returned as the bound
    for curve in ("privacy", "gaussian"):
        assert fdp_epsilon_lower_bound(400, 100, 50, 0.05, 1e-6, curve=curve) == 0.0


def test_audit_canaries_perfect_guesser_and_result():
    rng = np.random.default_rng(0)
    s = rng.random(400) < 0.5
    res = audit_canaries(
        np.where(s, 1.0, -1.0) + rng.normal(0, 0.01, 400), s, significance=0.05, claimed_epsilon=1.0
    )
    assert res.correct == res.guesses > 200  # a perfect guesser guesses many, all right
    assert res.refuted and res.epsilon_lower > 2
    assert res.candidates == 2 * len(guess_grid(400))
    assert "REFUTED" in str(res)
    # the ceiling counts every guess of every k right, more than these unbalanced coins allow
    assert res.epsilon_lower <= res.ceiling and res.can_refute
    # a guesser that knows nothing proves nothing
    blind = audit_canaries(rng.normal(size=400), s, significance=0.05, claimed_epsilon=1.0)
    assert not blind.refuted


def test_a_delta_too_large_for_the_canaries_leaves_nothing_to_refute():
    """A bound over m canaries pays 2 m delta: at m = 800 and delta = 1e-3 even guesses all
    right prove nothing at confidence 0.999, and the result says the claim cannot be refuted
    rather than "not refuted"; at delta = 1e-6 the same guesses refute it."""
    s = np.arange(800) % 2 == 0
    perfect = np.where(s, 1.0, -1.0)
    vacuous = audit_canaries(perfect, s, significance=1e-3, delta=1e-3, claimed_epsilon=1.0)
    assert vacuous.ceiling == vacuous.epsilon_lower == 0.0
    assert not vacuous.can_refute and not vacuous.refuted
    assert "cannot be refuted here" in str(vacuous)
    small = audit_canaries(perfect, s, significance=1e-3, delta=1e-6, claimed_epsilon=1.0)
    assert small.can_refute and small.refuted and small.ceiling > 4
    assert small.epsilon_lower == small.ceiling  # balanced coins: every guess of every k right
    assert "REFUTED" in str(small)
    # without a claim there is nothing to refute, and nothing to warn about
    assert audit_canaries(perfect, s, significance=1e-3, delta=1e-3).can_refute


@pytest.mark.slow
def test_epsilon_from_scores_default_thresholds():
    a, b = _deterministic_normal(3, 500), _deterministic_normal(0, 500)
    eps = epsilon_from_scores(a, b, 0.05)
    assert eps > 0
    # by default every pooled score is a candidate, corrected as m = 1000 candidates
    pooled = np.concatenate([a, b])
    assert epsilon_from_scores(a, b, 0.05, thresholds=pooled) == pytest.approx(eps)
    assert 0 < epsilon_from_scores(a, b, 0.05, thresholds=[1.5])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: p_value(10, 11, 3, 1.0), "correct <= guesses <= m"),
        (lambda: p_value(10, 5, 3, -1.0), "epsilon"),
        (lambda: epsilon_lower_bound(10, 5, 3, 1.5), "significance"),
        (lambda: epsilon_lower_bound(10, 5, 3, 0.05, delta=1.0), "delta"),
        (lambda: audit_canaries([1.0, float("nan")], [True, False]), "finite"),
        (lambda: audit_canaries([1.0, 2.0], [True]), "one label per score"),
        (lambda: audit_canaries([1.0, 2.0], [True, False], guesses=[2]), r"\[1, 1\]"),
        (lambda: epsilon_from_scores([], [1.0], 0.05), "at least one"),
    ],
)
def test_bad_arguments_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_summary_says_when_nothing_was_found_or_nothing_is_claimed():
    """A run where no guess count beat chance reads as such (it printed '0 of 0 guesses'), and a
    learner whose noise was scaled claims no finite epsilon: the summary says to pass a claim."""
    import math

    from dponline.privacy.one_run import OneRunResult

    nothing = OneRunResult(0.0, "", 600, 0, 0, 0.05, 1e-5, 48, claimed_epsilon=1.0, ceiling=5.2)
    assert "no guess count's right guesses beat chance among 600" in str(nothing)
    assert "(claim 1: not refuted; guesses all right would prove 5.200)" in str(nothing)
    scaled = OneRunResult(3.8, "fdp", 600, 40, 39, 0.05, 1e-5, 48, claimed_epsilon=math.inf)
    assert "no finite epsilon claimed" in str(scaled) and "39 of 40 guesses" in str(scaled)
