"""The empirical audit: it must not refute correct mechanisms and must refute under-noised ones.

Each non-refutation assertion fails by chance with probability at most alpha = 1e-3 (the
Clopper-Pearson level of the audit), 2 alpha where the claim states rho too (an epsilon test
and a rho test); the seeds are fixed, so the outcome is reproducible.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.continual import make_counter
from dponline.privacy.accounting import gaussian_sigma
from dponline.privacy.audit import (
    audit,
    clopper_pearson,
    counter_sampler,
    epsilon_lower_bound,
)
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget

T = 16
A = np.zeros((T, 1))
B = A.copy()
B[0, 0] = 1.0  # neighbouring stream: round 1 moves across the whole input set [0, 1]

CASES = [
    ("binary_tree", "gaussian"),
    ("padded_tree", "gaussian"),
    ("honaker", "gaussian"),
    ("sqrt_factorization", "gaussian"),
    ("blt", "gaussian"),
    ("binary_tree", "laplace"),
    ("padded_tree", "laplace"),
    ("honaker", "laplace"),
]


def _audit_counter(mech, noise, fraction, *, calibration="tight", seed=1):
    delta = 0.0 if noise == "laplace" else 1e-5
    ref = make_counter(
        mech,
        horizon=T,
        bounds=Box(0, 1, dim=1),
        budget=PrivacyBudget(1.0, delta, calibration, allow_weaker=calibration == "paper"),
        noise=noise,
    )
    cls, scaled = type(ref), ref.noise.scaled(fraction)

    def factory(replicas, rng):
        return cls(T, 1, scaled, replicas=replicas, rng=rng)

    return audit(
        counter_sampler(factory),
        A,
        B,
        claim=ref.privacy,
        trials=20_000,
        pilot_trials=5_000,
        alpha=1e-3,
        rng=seed,
    )


@pytest.mark.parametrize(("mech", "noise"), CASES)
def test_correct_counter_not_refuted(mech, noise):
    res = _audit_counter(mech, noise, 1.0)
    assert not res.any_refuted, str(res)


@pytest.mark.parametrize(("mech", "noise"), CASES)
def test_counter_with_a_tenth_of_the_noise_is_refuted(mech, noise):
    res = _audit_counter(mech, noise, 0.1)
    assert res.refuted, str(res)
    assert res.epsilon_lower > 3.0


@pytest.mark.filterwarnings("ignore::dponline.privacy.guarantee.PrivacyWarning")
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_paper_calibrated_trees_not_refuted(noise):
    # audited against what the calibration proves (Laplace at T = 16: 5 levels / log2 16 = 1.25)
    res = _audit_counter("padded_tree", noise, 1.0, calibration="paper")
    assert not res.any_refuted, str(res)


def test_gaussian_mechanism_audit_is_tight_enough_to_see_most_of_epsilon():
    """On a scalar Gaussian mechanism at eps = 2 the audit's bound reaches a fair share of it."""
    sigma = gaussian_sigma(1.0, 2.0, 1e-5)

    def sampler(data, n, rng):
        return data + rng.normal(0, sigma, size=(n, 1))

    res = audit(
        sampler,
        np.zeros(1),
        np.ones(1),
        claim=(2.0, 1e-5),
        trials=200_000,
        pilot_trials=20_000,
        rng=3,
    )
    assert not res.any_refuted
    assert res.epsilon_lower > 0.8, str(res)
    under = audit(
        sampler,
        np.zeros(1),
        np.ones(1),
        claim=(0.5, 1e-5),
        trials=200_000,
        pilot_trials=20_000,
        rng=3,
    )
    assert under.refuted


def test_clopper_pearson_known_values_and_coverage():
    lo, hi = clopper_pearson(0, 10, 0.025)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10))
    lo, hi = clopper_pearson(10, 10, 0.025)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10))
    # coverage: the one-sided upper bound holds for >= 1 - alpha of binomial draws
    rng = np.random.default_rng(0)
    p, n, alpha = 0.03, 500, 0.05
    ks = rng.binomial(n, p, size=2000)
    cover = np.mean([clopper_pearson(int(k), n, alpha)[1] >= p for k in ks])
    assert cover >= 1 - alpha - 0.02  # binomial sd of the coverage estimate ~0.005


def test_epsilon_lower_bound_splits_alpha_between_its_two_bounds():
    # closed form: all n runs in the event under one input, none under the other; each
    # Clopper-Pearson bound at alpha / 2 (a bound at alpha on each side refuted a correct
    # Laplace mechanism about one seed in five at alpha = 0.05, and no test saw it)
    n, alpha = 200, 0.05
    a = (alpha / 2) ** (1 / n)
    assert epsilon_lower_bound(n, n, 0, n, 0.0, alpha) == pytest.approx(math.log(a / (1 - a)))
    assert epsilon_lower_bound(n, n, 0, n, 0.01, alpha) == pytest.approx(
        math.log((a - 0.01) / (1 - a))
    )


def test_the_event_is_counted_on_fresh_runs_not_on_the_pilot():
    """A sampler whose pilot runs tell the inputs apart perfectly and whose later runs are
    one distribution for both: an event chosen and counted on the same runs would refute the
    claim; counted on fresh runs it finds nothing."""
    calls = []

    def sampler(data, n, rng):
        calls.append(n)
        if len(calls) <= 2:  # the pilot: each input its own output
            return np.full((n, 1), float(data[0]))
        return rng.normal(size=(n, 1))

    res = audit(sampler, np.zeros(1), np.ones(1), claim=(0.1, 0.0), trials=3000, pilot_trials=500)
    assert calls == [500, 500, 3000, 3000]
    assert res.pilot_epsilon > 2 and sum(res.counts[1::2]) == 6000
    assert not res.refuted and res.epsilon_lower < 0.1


def test_the_whole_pipeline_refutes_a_correct_mechanism_rarely():
    """A smoke test of the whole pipeline (pilot, event, fresh counts, bound) on randomised
    response and the Laplace mechanism at their claim of epsilon = 1, 300 seeds at
    alpha = 0.05: each seed refutes with chance <= 0.05, so more than 40 refutations of 300
    has chance < 1e-7 (false failure; measured: 1 and 0). It catches a gross error only: the
    event chosen and counted on the same 2,000 runs with each bound at alpha refuted the
    Laplace mechanism on 66 of 300 seeds; each of those flaws alone is caught by the two tests
    above, not by this one."""

    def response(data, n, rng):
        keep = rng.random(n) < np.exp(1.0) / (1.0 + np.exp(1.0))
        return np.where(keep, data[0], 1.0 - data[0])[:, None]

    def laplace(data, n, rng):
        return data + rng.laplace(0.0, 1.0, size=(n, 1))

    from scipy import stats

    assert stats.binom.sf(40, 300, 0.05) < 1e-7
    for sampler in (response, laplace):
        refuted = sum(
            audit(
                sampler, np.zeros(1), np.ones(1), claim=(1.0, 0.0), trials=2000,
                pilot_trials=500, alpha=0.05, rng=seed,
            ).refuted
            for seed in range(300)
        )  # fmt: skip
        assert refuted <= 40


def test_epsilon_lower_bound_is_zero_when_vacuous():
    assert epsilon_lower_bound(5, 100, 5, 100, 0.0, 1e-3) == 0.0
    assert epsilon_lower_bound(0, 100, 0, 100, 0.0, 1e-3) == 0.0
    assert epsilon_lower_bound(100, 100, 0, 100, 0.0, 1e-3) > 2.0


def test_the_event_is_described_as_the_pilot_chose_it():
    """Randomised response on one bit (epsilon = 1): the pilot picks an event more likely on
    one input; the description says it was chosen there (fresh runs may disagree)."""

    def response(data, n, rng):
        keep = rng.random(n) < np.exp(1.0) / (1.0 + np.exp(1.0))
        return np.where(keep, data[0], 1.0 - data[0])[:, None]

    res = audit(
        response, np.zeros(1), np.ones(1), claim=(1.0, 0.0), trials=4000, pilot_trials=1000, rng=0
    )
    assert res.pilot_epsilon > 0 and not res.refuted
    assert "chosen on the pilot as more likely on input" in res.event


def test_a_deterministic_release_is_not_refuted_and_alpha_is_checked():
    """Outputs that ignore the input and never vary: the Fisher statistic once failed on their
    zero covariance; now the audit runs and finds nothing. alpha outside (0, 1) is refused."""

    def constant(data, n, rng):
        return np.ones((n, 3))

    res = audit(
        constant, np.zeros(2), np.ones(2), claim=(0.0, 0.0), trials=200, pilot_trials=50, rng=0
    )
    assert not res.any_refuted and res.epsilon_lower == 0.0
    # the event is described as what it is: the pilot separated nothing
    assert res.pilot_epsilon == 0.0 and "the pilot found no event" in res.event
    for alpha in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="alpha"):
            audit(constant, np.zeros(2), np.ones(2), claim=(1.0, 0.0), alpha=alpha, rng=0)


# Generalized Gaussian trees: d = 20, sensitivity in l_inf (the l_inf diameter of [0, 1]^20 is 1,
# reached by the all-ones vector), smooth norm l_r with r = ln(20) ~ 3 (Han et al. Lemma 3.9).
GG_T, GG_D = 8, 20
GG_A = np.zeros((GG_T, GG_D))
GG_B = GG_A.copy()
GG_B[0] = 1.0


def _audit_gg(mech, fraction, seed=2):
    ref = make_counter(
        mech,
        horizon=GG_T,
        bounds=Box(0, 1, dim=GG_D),
        budget=PrivacyBudget(1.0, 1e-5),
        noise="generalized_gaussian",
        regular_norm=np.inf,
    )
    cls, scaled = type(ref), ref.noise.scaled(fraction)
    assert 2.9 < scaled.r < 3.1

    def factory(replicas, rng):
        return cls(GG_T, GG_D, scaled, replicas=replicas, rng=rng)

    return audit(
        counter_sampler(factory),
        GG_A,
        GG_B,
        claim=ref.privacy,
        trials=20_000,
        pilot_trials=5_000,
        alpha=1e-3,
        rng=seed,
    )


@pytest.mark.parametrize("mech", ["binary_tree", "padded_tree", "honaker"])
def test_generalized_gaussian_tree_not_refuted(mech):
    res = _audit_gg(mech, 1.0)
    assert not res.any_refuted, str(res)


@pytest.mark.parametrize("mech", ["binary_tree", "honaker"])
def test_generalized_gaussian_tree_with_a_tenth_of_the_noise_is_refuted(mech):
    # The padded tree is left out: its padding draws hide the tree's nodes from the releases,
    # and at a tenth of this (conservative, basic-composition) noise the audit's lower bound
    # only reaches ~1.04 with 100,000 trials, too close to the claim for a reliable test.
    res = _audit_gg(mech, 0.1)
    assert res.refuted, str(res)


def test_the_opposite_pair_moves_two_coordinates_as_far_as_an_l_inf_bound_allows():
    from dponline.experiments.learner_audit import neighbouring_streams
    from dponline.protocol import FeedbackKind
    from dponline.registry import AuditCase

    case = AuditCase(
        horizon=3, values=(0.0, 1.0), rest=0.25, changed_round=1, coordinates="opposite"
    )
    a, b = neighbouring_streams(FeedbackKind.LOSS_VECTOR, case, 3)
    np.testing.assert_array_equal(a, [[0.25, 0, 0], [0, 1, 0], [0.25, 0, 0]])
    np.testing.assert_array_equal(b, [[0.25, 0, 0], [1, 0, 0], [0.25, 0, 0]])
    assert np.abs(a - b).max() == 1.0  # an l_inf change of 1, in two coordinates
    with pytest.raises(ValueError, match="at least two coordinates"):
        neighbouring_streams(FeedbackKind.BANDIT, case, 1)
    with pytest.raises(ValueError, match=r"changes loss vectors .* 'a sample"):
        neighbouring_streams(FeedbackKind.SAMPLE, case, 3)
    with pytest.raises(ValueError, match="'first', 'all' or 'opposite'"):
        AuditCase(horizon=3, coordinates="both")
