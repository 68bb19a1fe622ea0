"""dponline.experiments.participation_table: every registered Gaussian mechanism's largest
variance when one person contributes to several rounds, beside its single-round one."""

from __future__ import annotations

import pytest

from dponline.continual.participation import tree_participation_sq
from dponline.continual.registry import MECHANISMS
from dponline.experiments.participation_table import (
    participation_laplace_table,
    participation_table,
)


def test_every_gaussian_mechanism_has_a_row_and_a_person_costs_at_least_a_round():
    t, k, b = 16, 3, 4
    rows = participation_table(t, k, b)
    expected = {name for name, cls in MECHANISMS.items() if "gaussian" in cls.supported_noise}
    assert {r["mechanism"] for r in rows} == expected
    values = [r["participation_max_variance"] for r in rows]
    assert values == sorted(values)
    for r in rows:
        assert r["participation_max_variance"] >= r["single_max_variance"] * (1 - 1e-9)
        assert r["participation_l2_factor"] >= r["single_l2_factor"] * (1 - 1e-12)
        assert r["effective_participations"] == 3
    tree = next(r for r in rows if r["mechanism"] == "binary_tree")
    # the same tree, noise scaled by the ratio of sensitivities: rounds 1, 5, 9 of 16 (alone
    # in their nodes of sizes 1, 2, 4; two in the first node of size 8, three in the root)
    # against one round's 5 nodes
    assert tree_participation_sq(t, k, b) == 3 * 3 + 4 + 1 + 9
    assert tree["ratio"] == pytest.approx(tree_participation_sq(t, k, b) / 5)
    assert tree["l2_exact"]


def test_rho_scales_every_variance_and_bad_arguments_are_refused():
    one, two = participation_table(8, 2, 3, rho=0.5), participation_table(8, 2, 3, rho=1.0)
    for a, b in zip(one, two, strict=True):
        assert b["participation_max_variance"] == pytest.approx(a["participation_max_variance"] / 2)
    with pytest.raises(ValueError, match="rho"):
        participation_table(8, 2, 3, rho=0.0)
    with pytest.raises(ValueError, match="min_separation"):
        participation_table(8, 2, 0)


def test_the_laplace_table_scales_each_mechanism_to_its_l1_factor_for_the_person():
    """Every Laplace mechanism has a row, sorted, a person never below a round; the binary
    tree's l1 factor for rounds 1, 5, 9 of 16 is the nodes they enter, 5 each (all columns of
    a full tree have l1 norm 5): 15, so its variance is 9x one round's; epsilon scales every
    variance by 1 / epsilon^2."""
    rows = participation_laplace_table(16, 3, 4)
    expected = {name for name, cls in MECHANISMS.items() if "laplace" in cls.supported_noise}
    assert {r["mechanism"] for r in rows} == expected
    values = [r["participation_max_variance"] for r in rows]
    assert values == sorted(values)
    for r in rows:
        assert r["participation_max_variance"] >= r["single_max_variance"] * (1 - 1e-9)
    tree = next(r for r in rows if r["mechanism"] == "binary_tree")
    assert (tree["participation_l1_factor"], tree["l1_exact"]) == (15.0, True)
    assert tree["ratio"] == pytest.approx(9.0)
    half = participation_laplace_table(16, 3, 4, epsilon=0.5)
    for a, b in zip(rows, half, strict=True):
        assert b["participation_max_variance"] == pytest.approx(4 * a["participation_max_variance"])
    with pytest.raises(ValueError, match="epsilon"):
        participation_laplace_table(16, 3, 4, epsilon=0.0)
