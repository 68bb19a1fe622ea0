"""A user-level audit: DP-FTRL calibrated for one round is refuted when the neighbouring streams
differ in one person's 4 rounds, 4 apart; the same learner calibrated for the person is not.

Streams of 16 rounds over two experts; the person's rounds 1, 5, 9, 13 carry the loss (1, 0) in
stream A and (0, 1) in stream B (a difference of the l2 diameter of [0, 1]^2, the same in every
round: the worst case of the square-root counter DP-FTRL runs, k participations exactly b apart
from round 1), every other round (0, 0). Gaussian noise at (epsilon, delta) = (2, 1e-3); a small
learning rate keeps the decisions nearly linear in the noisy sums, so Fisher's discriminant sees
the whole Gaussian shift. Measured lower bounds (seed 1): 3.67 for the learner calibrated for one
round (claim 2: refuted), 1.29 for the one calibrated for the person (not refuted). Each audit
takes about 1.5 s.
"""

from __future__ import annotations

import numpy as np
import pytest

from dponline.experiments.person_audit import audit_person, person_rounds, person_streams
from dponline.privacy.budget import PrivacyBudget

T, K, B = 16, 4, 4
EPS, DELTA = 2.0, 1e-3
OPTIONS = {"eta": 0.02, "noise": "gaussian", "mechanism": "sqrt_factorization"}


#: DP-FTRL on two experts, the person's losses (1, 0) against (0, 1) (module docstring)
EXPERTS = ("dp-ftrl", "switching_best", {"n_experts": 2}, (1.0, 0.0), (0.0, 1.0))


def run(budget: PrivacyBudget, seed: int, pattern=(T, K, B), options=OPTIONS, setting=EXPERTS):  # type: ignore[no-untyped-def]
    """``setting`` = (learner, environment, its options, the person's loss in stream A, in
    stream B) audited on streams that differ in a person's rounds ``pattern`` = (horizon,
    participations, separation) from round 1."""
    horizon, k, b = pattern
    learner, environment, environment_options, value_a, value_b = setting
    return audit_person(
        learner,
        budget=budget,
        environment=environment,
        environment_options=environment_options,
        horizon=horizon,
        rounds=person_rounds(horizon, k, b),
        value_a=value_a,
        value_b=value_b,
        learner_options=options,
        trials=20_000,
        pilot_trials=5_000,
        seed=seed,
    )


def test_person_rounds_and_streams():
    assert person_rounds(16, 4, 4) == (0, 4, 8, 12)
    assert person_rounds(16, 2, 7, first=3) == (3, 10)
    with pytest.raises(ValueError, match="do not fit in 16 rounds"):
        person_rounds(16, 4, 6)
    a, b = person_streams(6, (1, 4), (1.0, 0.0), (0.0, 1.0))
    assert a.shape == b.shape == (6, 2)
    assert (a != b).any(axis=1).nonzero()[0].tolist() == [1, 4]


def test_round_calibration_is_refuted_for_a_person():
    # The claim is false for the person: the person's Gaussian shift is 2.66 times a round's
    # (the square root's sensitivity under the pattern), and the lower bound sits ~1.7 above the
    # claim. Not refuting would need the rare event's count on stream B ~8 times its mean of ~40
    # (or the pilot's choice to fail as badly): chance of a false failure far below 1e-12.
    result = run(PrivacyBudget(EPS, DELTA), seed=1)
    assert result.claimed_epsilon == pytest.approx(EPS)
    assert result.refuted, str(result)
    assert result.epsilon_lower > EPS + 1.0


def test_person_calibration_is_not_refuted():
    # The claim is true (tight calibration under the pattern): refuted with probability at most
    # alpha = 1e-3 (the audit's Clopper-Pearson guarantee); the seed is fixed.
    budget = PrivacyBudget(EPS, DELTA, participations=K, min_separation=B)
    result = run(budget, seed=1)
    assert result.claimed_epsilon == pytest.approx(EPS, rel=1e-6)
    assert not result.any_refuted, str(result)


# --- without a horizon: the tapered factorisation (DP-FTRL built with anytime=True) -------------
# 32 rounds, a person of 8 rounds 2 apart (rounds 1, 3, ..., 15), the same losses as above.
# Measured (seeds 1 and 2): lower bounds 5.66 and 5.48 calibrated for one round (claim 2),
# 0.54 and 0.59 calibrated for the person. The person's Gaussian shift over these 32 rounds is
# 4.0 times one round's bound (the norm of all of R's coefficients) but only 0.57 of the
# person's bound, which covers every prefix length: an audit of 32 rounds cannot come near that
# claim; the exact checks of the bound are in tests/continual/test_anytime_person.py.
AT, AK, AB = 32, 8, 2


def run_anytime(budget: PrivacyBudget, seed: int):  # type: ignore[no-untyped-def]
    return run(budget, seed, (AT, AK, AB), {**OPTIONS, "mechanism": None, "anytime": True})


def test_anytime_round_calibration_is_refuted_for_a_person():
    # The claim is false for the person (their shift is 4.0 times the sensitivity the noise
    # was calibrated for); the lower bound sits ~3.6 above the claim: chance of a false
    # failure far below 1e-12, as above.
    result = run_anytime(PrivacyBudget(EPS, DELTA), seed=1)
    assert result.refuted and result.epsilon_lower > EPS + 2.0, str(result)


def test_anytime_person_calibration_is_not_refuted():
    # The claim is true: refuted with probability at most alpha = 1e-3; the seed is fixed.
    budget = PrivacyBudget(EPS, DELTA, participations=AK, min_separation=AB)
    result = run_anytime(budget, seed=1)
    assert result.claimed_epsilon == pytest.approx(EPS, rel=1e-6)
    assert not result.any_refuted, str(result)


def test_the_person_rounds_are_checked():
    """A negative round changed a round counted from the end ((0, -1) wrote rows 0 and 5 of 6)
    and a repeated one gave the person fewer rounds than listed: both are refused, as are
    rounds past the horizon and non-integers, before any learner is built."""
    for bad, match in (
        ((0, -1), r"0\.\.5"),
        ((1, 6), r"0\.\.5"),
        ((2, 2), "distinct"),
        ((), "one or more"),
        ((1.0, 3), "integers"),
        ((True, 3), "integers"),
    ):
        with pytest.raises(ValueError, match=match):
            person_streams(6, bad, (1.0, 0.0), (0.0, 1.0))
        with pytest.raises(ValueError, match=match):
            audit_person(
                "dp-ftrl",
                budget=PrivacyBudget(EPS, DELTA),
                environment="no-such-environment",  # the rounds are checked first
                horizon=6,
                rounds=bad,
                value_a=(1.0, 0.0),
                value_b=(0.0, 1.0),
            )
    a, b = person_streams(6, np.array([1, 4]), (1.0, 0.0), (0.0, 1.0))  # numpy integers
    assert (a != b).any(axis=1).nonzero()[0].tolist() == [1, 4]


def test_the_default_claim_tests_rho_too():
    """DP-FTRL calibrated for a person of 2 rounds 4 apart, audited on 4 rounds 4 apart (the
    claim epsilon = 2 read for them is false: 3.53 is what the noise proves for 4 rounds). The
    epsilon test does not see it at these trials (lower bound 1.99 at seed 3); the rho test,
    which the default claim (the learner's whole guarantee) now runs, does (0.336 against the
    claimed 0.239). Power, at a fixed seed; a true claim is refuted with chance at most 2 alpha
    (test_person_calibration_is_not_refuted)."""
    budget = PrivacyBudget(EPS, DELTA, participations=2, min_separation=B)
    result = run(budget, seed=3)
    assert not result.refuted and result.rho is not None and result.rho.refuted, str(result)
    assert result.rho.claimed_rho == pytest.approx(0.239, abs=5e-4)


# --- DP-FTPL (a horizon, tight): its perturbation is the counter's noise --------------------------
# On the unit ball of R^2 (the decision -r L~ / ||L~||, continuous in the noisy sum), the person's
# rounds 1, 5, 9, 13 carry the loss e_1 in stream A and -e_1 in stream B (the ball's diameter),
# 16 rounds, (2, 1e-3). Measured (seed 1): calibrated for one round, the rho test's lower bound
# is 0.308 against the claimed 0.239 (refuted; the epsilon test's 1.70 is under its claim of 2);
# calibrated for the person, 0.033 (and 0.52 for epsilon): not refuted.


def run_ftpl(budget: PrivacyBudget, seed: int):  # type: ignore[no-untyped-def]
    ball = ("dp-ftpl", "linear", {"dim": 2}, (1.0, 0.0), (-1.0, 0.0))
    return run(budget, seed, options={}, setting=ball)


def test_ftpl_round_calibration_is_refuted_for_a_person():
    # Power at a fixed seed (the rho test sees the person's shift, 2.68 times a round's in
    # Honaker's tree for rounds 4 apart); deterministic.
    result = run_ftpl(PrivacyBudget(EPS, DELTA), seed=1)
    assert result.rho is not None and result.rho.refuted, str(result)


def test_ftpl_person_calibration_is_not_refuted():
    # The claim is true (the counter's tight calibration under the pattern, the decisions its
    # post-processing): refuted with probability at most 2 alpha = 2e-3; the seed is fixed.
    budget = PrivacyBudget(EPS, DELTA, participations=K, min_separation=B)
    result = run_ftpl(budget, seed=1)
    assert result.claimed_epsilon == pytest.approx(EPS, rel=1e-6)
    assert not result.any_refuted, str(result)


# --- Laplace noise on the smooth binary mechanism, which tight runs for this person -------------
# Eight rounds over two experts, every one of them the person's (k = 8, b = 1), losses (1, 0)
# against (0, 1); DP-FTRL with Laplace noise at epsilon = 1 on the smooth binary mechanism (one
# round's l1 factor 2, the person's 13, exact). Measured (seed 1): calibrated for one round, the
# lower bound is 2.12 against the claimed 1 (refuted); calibrated for the person, 0.17.
SMOOTH = (8, 8, 1)
SMOOTH_OPTIONS = {"eta": 0.02, "noise": "laplace", "mechanism": "smooth_binary"}


def test_tight_runs_the_smooth_binary_mechanism_for_this_person():
    from dponline.continual.selection import best_mechanism

    assert best_mechanism(8, 2, "laplace", participations=8) == "smooth_binary"


def test_smooth_binary_round_calibration_is_refuted_for_a_person():
    # Power at a fixed seed (the person moves 6.5 times the l1 a round does); deterministic.
    result = run(PrivacyBudget(1.0), seed=1, pattern=SMOOTH, options=SMOOTH_OPTIONS)
    assert result.refuted and result.epsilon_lower > 1.5, str(result)


def test_smooth_binary_person_calibration_is_not_refuted():
    # The claim is true (the exact l1 factor for the pattern): refuted with probability at most
    # alpha = 1e-3 (the audit's Clopper-Pearson guarantee); the seed is fixed.
    budget = PrivacyBudget(1.0, participations=8, min_separation=1)
    result = run(budget, seed=1, pattern=SMOOTH, options=SMOOTH_OPTIONS)
    assert result.claimed_epsilon == pytest.approx(1.0)
    assert not result.any_refuted, str(result)


# --- without a horizon, in O(d) memory: the BLT without a horizon (mechanism="anytime_blt") -----
# The same 32 rounds and person. Measured (seed 1): lower bound 5.29 calibrated for one round
# (claim 2: refuted), 0.50 calibrated for the person (not refuted); as for the tapered
# factorisation, the person's bound covers every prefix length, so 32 rounds stay far below it
# (the exact checks are in tests/continual/test_anytime_blt.py).


def run_anytime_blt(budget: PrivacyBudget, seed: int):  # type: ignore[no-untyped-def]
    return run(budget, seed, (AT, AK, AB), {**OPTIONS, "mechanism": "anytime_blt", "anytime": True})


def test_anytime_blt_round_calibration_is_refuted_for_a_person():
    # The claim is false for the person; the lower bound sits far above the claim: chance of a
    # false failure far below 1e-12, as above.
    result = run_anytime_blt(PrivacyBudget(EPS, DELTA), seed=1)
    assert result.refuted and result.epsilon_lower > EPS + 2.0, str(result)


def test_anytime_blt_person_calibration_is_not_refuted():
    # The claim is true: refuted with probability at most alpha = 1e-3; the seed is fixed.
    budget = PrivacyBudget(EPS, DELTA, participations=AK, min_separation=AB)
    result = run_anytime_blt(budget, seed=1)
    assert result.claimed_epsilon == pytest.approx(EPS, rel=1e-6)
    assert not result.any_refuted, str(result)


def test_the_audit_takes_the_learners_documented_options_and_its_budget_whole():
    """Options reach the factory as build_learner passes them (documented only), and the
    budget's own (delta, the person's pattern) belong in the budget, not among them."""
    common = dict(
        budget=PrivacyBudget(EPS, DELTA),
        environment="stochastic",
        environment_options={"n_experts": 2},
        horizon=6,
        rounds=(1, 4),
        value_a=(1.0, 0.0),
        value_b=(0.0, 1.0),
    )
    with pytest.raises(ValueError, match="learner 'dp-ftrl' has no option 'noise_growth'"):
        audit_person("dp-ftrl", learner_options={"noise_growth": True}, **common)
    with pytest.raises(ValueError, match=r"delta belong to the budget .* budget=PrivacyBudget"):
        audit_person("dp-ftrl", learner_options={"delta": 1e-6}, **common)
