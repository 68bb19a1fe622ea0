"""Which counter without a horizon tight takes for a person (dponline.continual.anytime_choice):
the one whose largest variance over a square root's is smaller at its worst."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits import DPUCB
from dponline.continual.anytime_choice import (
    BLT,
    CHOICE_MARGIN,
    CHOICE_MAX_PARTICIPATIONS,
    CHOICE_ROUNDS,
    FACTORISATION,
    anytime_choice,
    choice_rounds,
    person_variances,
)
from dponline.continual.factory import build_counter, make_counter
from dponline.experiments.anytime_table import anytime_person_table
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget


@pytest.mark.parametrize(
    "k,b,chosen",
    [(1, 1, FACTORISATION), (4, 1, FACTORISATION), (50, 10, BLT), (4, 256, BLT), (16, 1, None)],
)
def test_the_choice_is_the_smaller_worst_ratio_of_the_table(k, b, chosen):
    """The choice agrees with ``dponline mechanisms --anytime``'s worst column (50 rounds 10
    apart: 2.194 for the factorisation, 1.540 for the BLT, which a user had to find there); a
    near tie (16 rounds 1 apart: 1.549 against 1.558) keeps the factorisation."""
    v = person_variances(k, b)
    f, blt = v.worst(FACTORISATION), v.worst(BLT)
    if chosen is None:  # the near tie: the BLT's smaller, within the margin
        assert CHOICE_MARGIN * f < blt < f
        chosen = FACTORISATION
    assert anytime_choice(k, b) == chosen
    assert (blt < CHOICE_MARGIN * f) == (chosen == BLT)
    if k > 1:
        rows = {r["mechanism"]: r["worst_ratio"] for r in anytime_person_table(k, b)}
        factorisation = rows["tapered_sqrt, for the person (ours)"]
        blt = rows["anytime_blt, for the person (ours, O(d) memory)"]
        assert (factorisation, blt) == pytest.approx((v.worst(FACTORISATION), v.worst(BLT)))


def test_the_ratios_are_the_counters_own_variances():
    """At each compared t, the ratio is the built counters' largest variance up to t over a
    square root's built for t, both calibrated for the person (exact, same budget)."""
    budget = PrivacyBudget(1.0, 1e-6, participations=50, min_separation=10)
    bounds = Box(0.0, 1.0, dim=1)
    v = person_variances(50, 10)
    counter = make_counter(None, horizon=None, bounds=bounds, budget=budget)
    assert counter.name == BLT
    named = make_counter("anytime_blt", horizon=None, bounds=bounds, budget=budget)
    assert counter.noise == named.noise and counter.privacy == named.privacy  # the same proof
    for t in CHOICE_ROUNDS[:2]:
        root = make_counter("sqrt_factorization", horizon=t, bounds=bounds, budget=budget)
        want = counter.variances(t).max() / root.release_variances(t, root.noise, 1).max()
        assert v.ratios(BLT)[t] == pytest.approx(want, rel=1e-9)


def test_a_learner_without_a_horizon_takes_the_choice_for_its_person():
    """DP-UCB over 5 arms for 50 rounds 10 apart ran the tapered factorisation (2.19x a square
    root's variance at 2^10 rounds); it runs the BLT now, with the person's guarantee; for one
    round, and for 4 consecutive rounds, the factorisation stays."""
    person = PrivacyBudget(1.0, 1e-6, participations=50, min_separation=10)
    learner = DPUCB(5, None, budget=person, noise="gaussian", rng=0)
    assert learner.counter.name == BLT
    assert (learner.privacy.participations, learner.privacy.min_separation) == (50, 10)
    assert learner.privacy.epsilon <= 1.0 + 1e-9
    near = PrivacyBudget(1.0, 1e-6, participations=4, min_separation=1)
    assert DPUCB(5, None, budget=near, noise="gaussian", rng=0).counter.name == FACTORISATION
    one = PrivacyBudget(1.0, 1e-6)
    assert DPUCB(5, None, budget=one, noise="gaussian", rng=0).counter.name == FACTORISATION
    # the BLT chosen takes its design horizon (refused where the factorisation runs)
    bounds = Box(0.0, 1.0, dim=2)
    chosen = make_counter(None, horizon=None, bounds=bounds, budget=person, design_horizon=2**16)
    assert chosen.name == BLT
    with pytest.raises(ValueError, match="design_horizon"):
        make_counter(None, horizon=None, bounds=bounds, budget=near, design_horizon=2**24)
    np.testing.assert_array_equal(chosen.step([0.0, 0.0]).shape, (1, 2))


def test_past_the_limit_the_factorisation_stays_without_comparing(monkeypatch):
    """Comparing costs seconds past a thousand rounds a person (6.5 s at 4,096): the
    factorisation stays there, as before the choice, and the BLT is named to take it."""
    import dponline.continual.anytime_choice as choice

    def never(*args):
        raise AssertionError("compared past the limit")

    monkeypatch.setattr(choice, "person_variances", never)
    assert anytime_choice(CHOICE_MAX_PARTICIPATIONS + 1, 1) == FACTORISATION


def test_the_factorisation_can_be_named_as_the_blt_can():
    """Where the choice or the memory rule takes the BLT, ``mechanism="anytime_factorization"``
    asks for the tapered factorisation (it could not be named: a user who wanted it, or a
    state saved by it, had no way back); refused with a horizon, Laplace noise or a design
    horizon, as the BLT's name is where it does not apply."""
    from dponline.continual.anytime_factorization import make_anytime_counter

    person = PrivacyBudget(1.0, 1e-6, participations=50, min_separation=10)
    bounds = Box(0.0, 1.0, dim=12)  # past the memory rule too
    named = make_counter("anytime_factorization", horizon=None, bounds=bounds, budget=person)
    direct = make_anytime_counter(bounds, person)
    assert named.name == FACTORISATION and named.privacy == direct.privacy
    assert named.noise == direct.noise
    learner = DPUCB(5, None, budget=person, noise="gaussian", mechanism=FACTORISATION, rng=0)
    assert learner.counter.name == FACTORISATION and learner.privacy.participations == 50
    with pytest.raises(ValueError, match=r"runs without a horizon.*'sqrt_factorization'"):
        make_counter("anytime_factorization", horizon=100, bounds=bounds, budget=person)
    with pytest.raises(ValueError, match=r"runs without a horizon.*'sqrt_factorization'"):
        DPUCB(5, 100, budget=person, noise="gaussian", mechanism=FACTORISATION)
    for name, fixed in ((FACTORISATION, "sqrt_factorization"), (BLT, "blt")):
        with pytest.raises(ValueError, match=rf"runs without a horizon.*'{fixed}'"):
            build_counter(person, horizon=100, bounds=bounds, mechanism=name)  # said "unknown"
    with pytest.raises(ValueError, match="draws Gaussian noise"):
        make_counter(FACTORISATION, horizon=None, bounds=bounds, budget=PrivacyBudget(1.0))
    with pytest.raises(ValueError, match="draws Gaussian noise"):
        DPUCB(5, None, budget=PrivacyBudget(1.0), noise="laplace", mechanism=FACTORISATION)
    with pytest.raises(ValueError, match="design_horizon"):
        make_counter(FACTORISATION, horizon=None, bounds=bounds, budget=person, design_horizon=64)


def test_a_design_horizon_is_compared_up_to_itself():
    """The choice compared a BLT optimised for 2^20 rounds whatever design horizon was given;
    it compares the BLT optimised for n at the prefix lengths up to n (those to 2^20 for a
    longer n), for one round too: one round with n = 2^14 was refused (the factorisation ran
    and took no design horizon), though that BLT's worst ratio there is 1.267 against the
    factorisation's 1.397; it runs that BLT now. Where the factorisation still wins, the
    refusal says so."""
    from dponline.continual.anytime_blt import anytime_blt_parameters

    assert choice_rounds(2**14) == (2**10, 2**12, 2**14)
    assert choice_rounds(100) == (100,)
    assert choice_rounds(2**20) == choice_rounds(2**24) == CHOICE_ROUNDS
    v = person_variances(1, 1, choice_rounds(2**14), 2**14)
    assert v.worst(BLT) < CHOICE_MARGIN * v.worst(FACTORISATION)
    assert (anytime_choice(1, 1, 2**14), anytime_choice(1, 1)) == (BLT, FACTORISATION)
    one = PrivacyBudget(1.0, 1e-6)
    bounds = Box(0.0, 1.0, dim=2)
    counter = make_counter(None, horizon=None, bounds=bounds, budget=one, design_horizon=2**14)
    learner = DPUCB(5, None, budget=one, noise="gaussian", design_horizon=2**14, rng=0)
    for chosen in (counter, learner.counter):
        assert chosen.name == BLT
        np.testing.assert_array_equal(
            chosen.parameters.theta, anytime_blt_parameters(1, 1, 2**14).theta
        )
    with pytest.raises(ValueError, match="factorisation, whose largest variance"):
        DPUCB(5, None, budget=one, noise="gaussian", design_horizon=2**24, rng=0)
