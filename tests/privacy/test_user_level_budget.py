"""The unit of privacy: PrivacyBudget(..., participations=k, min_separation=b), what a guarantee
records of it, and the refusals that keep event-level proofs from claiming a person."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dponline.environments.catalogue import build_environment
from dponline.privacy import Neighbouring, PrivacyBudget
from dponline.privacy.budget import group_privacy_hint
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.guarantee import PrivacyGuarantee, PrivacyNotion, unit_text
from dponline.registry import learners

PERSON = PrivacyBudget(1.0, 1e-6, participations=4, min_separation=256)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"participations": 0}, ValueError, "participations must be at least 1, got 0"),
        ({"participations": -2}, ValueError, "participations must be at least 1"),
        ({"participations": 2.0}, TypeError, "participations must be an integer, got 2.0"),
        ({"participations": True}, TypeError, "participations must be an integer, got True"),
        ({"participations": 2, "min_separation": 0}, ValueError, "min_separation must be at"),
        ({"participations": 2, "min_separation": "3"}, TypeError, "min_separation must be an"),
        (
            {"participations": 2, "neighbouring": Neighbouring.ONE_SAMPLE},
            ValueError,
            "defined over neighbouring ONE_ROUND, not ONE_SAMPLE",
        ),
    ],
)
def test_invalid_units_are_refused_with_the_value(kwargs, error, match):
    with pytest.raises(error, match=match):
        PrivacyBudget(1.0, **kwargs)


def test_the_default_unit_is_one_round_and_unchanged():
    b = PrivacyBudget(1.0, 1e-6)
    assert (b.participations, b.min_separation) == (1, 1) and not b.is_user_level
    assert repr(b) == (
        "PrivacyBudget(epsilon=1.0, delta=1e-06, calibration='tight', neighbouring=ONE_ROUND, "
        "allow_weaker=False)"
    )
    assert b.unit == Neighbouring.ONE_ROUND.value
    # one participation: the separation means nothing and is normalised
    assert PrivacyBudget(1.0, 1e-6, participations=1, min_separation=9) == b
    g = b.prove(1.0, 1e-6, "by hand")
    assert g.notion is PrivacyNotion.EVENT_LEVEL_DP and not g.is_user_level
    assert str(g).endswith("neighbours: streams differing in the input of one round")


def test_user_level_budget_is_a_value_with_its_unit():
    assert PERSON.is_user_level and PERSON == PrivacyBudget(
        1, 1e-6, participations=4, min_separation=256
    )
    assert "participations=4, min_separation=256" in repr(PERSON)
    assert PERSON.unit.startswith("one person: at most 4 rounds, at least 256 apart")
    with pytest.raises(AttributeError):
        PERSON.participations = 2  # type: ignore[misc]
    # b = 1 allows consecutive rounds
    assert PrivacyBudget(1.0, participations=3).min_separation == 1


def test_prove_states_a_person_only_when_the_proof_covers_one():
    with pytest.raises(ValueError, match=r"proves event-level privacy .* only"):
        PERSON.prove(1.0, 1e-6, "one round's proof")
    g = PERSON.prove(1.0, 1e-6, "a person's proof", per_person=True)
    assert (g.participations, g.min_separation) == (4, 256) and g.is_user_level
    assert g.notion is PrivacyNotion.USER_LEVEL_DP
    assert "neighbours: one person: at most 4 rounds, at least 256 apart" in str(g)
    d = g.to_dict()
    json.dumps(d)
    assert (d["participations"], d["min_separation"]) == (4, 256)
    assert d["unit"].startswith("one person: at most 4 rounds, at least 256 apart")
    assert d["neighbouring"] == d["unit"]  # never the one-round text for a person's guarantee
    assert d["per_input"] == "streams differing in the input of one round"
    assert d["notion"].startswith("user-level")


def test_guarantee_validates_its_unit():
    with pytest.raises(ValueError, match="participations must be at least 1"):
        PrivacyGuarantee(1.0, 0.0, participations=0)
    g = PrivacyGuarantee(1.0, 0.0, participations=2, min_separation=5)
    assert g.unit == unit_text(2, 5)
    assert PrivacyGuarantee(1.0, 0.0, participations=1, min_separation=5).min_separation == 1


def test_group_privacy_hint_numbers():
    # (e, d)-DP per round gives (k e, d sum_(j<k) e^(j e)) for k rounds: asking e/k and
    # d / sum_(j<k) e^(j e / k) protects the person at (e, d)
    msg = group_privacy_hint("X", PERSON)
    eps_k = 0.25
    delta_k = 1e-6 / sum(math.exp(j * eps_k) for j in range(4))
    assert f"asks one round for ({eps_k:.6g}, {delta_k:.3g})" in msg
    assert "budget.by_group_privacy()" in msg
    assert k_rounds_delta(eps_k, delta_k, 4) <= 1e-6 * (1 + 1e-12)


@pytest.mark.parametrize(
    ("epsilon", "delta", "k"), [(2.0, 1e-5, 3), (1.0, 1e-6, 4), (0.3, 3e-7, 7), (5.0, 1e-9, 2)]
)
def test_the_printed_group_budget_never_exceeds_the_person_s(epsilon, delta, k):
    """The hint's printed (rounded) one-round budget, over k rounds, stays within the person's
    (epsilon, delta) (rounded up, (2, 1e-5) over 3 rounds read (2.000001, 1.0004e-5)), and is
    what by_group_privacy() asks to the printed digits."""
    import re

    person = PrivacyBudget(epsilon, delta, participations=k)
    msg = group_privacy_hint("X", person)
    printed = re.search(r"asks one round for \(([^,]+), ([^)]+)\)", msg)
    assert printed is not None
    eps_k, delta_k = float(printed.group(1)), float(printed.group(2))
    assert k * eps_k <= epsilon
    assert k_rounds_delta(eps_k, delta_k, k) <= delta
    one = person.by_group_privacy()
    assert eps_k == pytest.approx(one.epsilon, rel=1e-5) and eps_k <= one.epsilon
    assert delta_k == pytest.approx(one.delta, rel=1e-2) and delta_k <= one.delta
    assert 0.99 * delta < k_rounds_delta(eps_k, delta_k, k)
    assert k * eps_k > 0.999 * epsilon


def k_rounds_delta(eps: float, delta: float, k: int) -> float:
    """delta of k rounds by induction: delta_k = sum_{j<k} e^(j eps) delta."""
    return sum(math.exp(j * eps) * delta for j in range(k))


class EventOnly:
    def paper(self, budget):
        return Calibration("p", budget.prove(budget.epsilon, 0.0, "p"), "paper", "m")

    def tight(self, budget):
        return Calibration("t", budget.prove(budget.epsilon, 0.0, "t"), "tight", "m")


class PersonToo(EventOnly):
    supports_participation = True

    def tight(self, budget):
        g = budget.prove(budget.epsilon, 0.0, "t", per_person=budget.is_user_level)
        return Calibration("t", g, "tight", "m")


def test_calibrate_refuses_a_person_unless_the_calibrator_declares_it():
    person = PrivacyBudget(1.0, participations=2, min_separation=3)
    with pytest.raises(ValueError, match=r"calibrator EventOnly \(.*\) proves event-level.*group"):
        calibrate(EventOnly(), person)
    assert calibrate(EventOnly(), PrivacyBudget(1.0)).noise == "t"  # event level unchanged
    g = calibrate(PersonToo(), person).guarantee
    assert g.participations == 2 and g.min_separation == 3


def test_a_learner_without_person_support_refuses_a_user_level_budget():
    # DP-EXP2 calibrates with its own calibrator, which does not declare persons (DP-FTPL's,
    # the example here before, now does: its noise is the counter's)
    entry = learners()["dp-exp2"]
    env = build_environment("bernoulli_bandit", 8, np.random.default_rng(0), n_arms=2)
    person = PrivacyBudget(1.0, 0.0, participations=2, min_separation=2)
    with pytest.raises(ValueError, match="does not support a user-level budget"):
        entry.factory(env, budget=person)
    assert entry.factory(env, budget=PrivacyBudget(1.0, 0.0)).privacy is not None


def test_a_counter_learner_states_the_person():
    entry = learners()["dp-ftrl"]
    env = build_environment("switching_best", 16, np.random.default_rng(0), n_experts=2)
    person = PrivacyBudget(1.0, 0.0, participations=4, min_separation=4)
    options = {"noise": "laplace", "mechanism": "honaker"}
    learner = entry.factory(env, budget=person, **options)
    g = learner.privacy
    assert g.is_user_level and (g.participations, g.min_separation) == (4, 4)
    event = entry.factory(env, budget=PrivacyBudget(1.0, 0.0), **options)
    assert not event.privacy.is_user_level
    # every one of the 16 rounds enters 5 tree nodes: the person's l1 factor is 4 x 5, the
    # round's 5 (l1 diameter 2 of [0, 1]^2, epsilon 1)
    assert event.counter.noise.b == pytest.approx(5 * 2)
    assert learner.counter.noise.b == pytest.approx(4 * 5 * 2)
