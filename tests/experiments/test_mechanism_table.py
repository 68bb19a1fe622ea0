"""The comparison tables of continual counters (:mod:`dponline.experiments.mechanism_table`)."""

from __future__ import annotations

import pytest

from dponline.continual import MECHANISMS
from dponline.experiments.mechanism_table import laplace_table, mechanism_table
from dponline.privacy.noise import LaplaceNoise


def test_laplace_table_at_T_1024():
    rows = {r["mechanism"]: r for r in laplace_table(1024)}
    assert set(rows) == {n for n, c in MECHANISMS.items() if "laplace" in c.supported_noise}
    assert "kary_tree" in rows and "sqrt_factorization" not in rows
    # Honaker: 11 levels, b = 11, 2 b^2 = 242 per node; the k-ary tree: 3 levels, 18 cells
    assert rows["honaker"]["max_variance"] == pytest.approx(1404.29, abs=0.01)
    assert rows["binary_tree"]["max_variance"] == 2 * 11**2 * 10  # 10 nodes at most
    assert rows["kary_tree"]["max_variance"] == 324.0
    assert rows["kary_tree"]["max_variance_vs_honaker"] == pytest.approx(0.2307, abs=1e-4)
    assert rows["kary_tree"]["max_variance_vs_honaker"] <= 0.5  # the target
    assert rows["honaker"]["max_variance_vs_honaker"] == 1.0
    for name, r in rows.items():
        cls = MECHANISMS[name]
        var = cls.release_variances(1024, LaplaceNoise(r["l1_sensitivity_factor"]), 1)
        assert r["max_variance"] == var.max() and r["mean_variance"] == pytest.approx(var.mean())


def test_laplace_table_scales_with_epsilon_and_checks_it():
    one = {r["mechanism"]: r["max_variance"] for r in laplace_table(64)}
    two = {r["mechanism"]: r["max_variance"] for r in laplace_table(64, epsilon=2.0)}
    for name in one:
        assert two[name] == pytest.approx(one[name] / 4)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="epsilon"):
            laplace_table(64, epsilon=bad)


def test_mechanism_table_has_the_new_counters():
    rows = {r["mechanism"]: r for r in mechanism_table(1024)}
    assert rows["scaled_sqrt"]["max_variance"] <= 9.6  # the target; 9.4995
    assert rows["scaled_sqrt"]["max_variance"] < rows["sqrt_factorization"]["max_variance"]
    assert rows["kary_tree"]["max_variance"] == pytest.approx(54.0)  # 3 levels x 18 cells
    assert rows["kary_tree"]["max_variance"] < rows["honaker"]["max_variance"]
