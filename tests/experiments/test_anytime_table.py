"""The anytime table: exact variance ratios against the square root built for the horizon."""

import numpy as np
import pytest

from dponline.continual.anytime_factorization import TaperedSqrt, strategy_sensitivity
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.experiments.anytime_table import anytime_table, block_lengths, doubling_variances


def test_doubling_variances_by_hand():
    assert block_lengths(2.0, 7) == [1, 2, 4]
    # sqrt blocks at rho = 1/2: block n has Var_i = S_n S_i, S_n = sum_{k<n} c_k^2
    s = np.cumsum(sqrt_coefficients(4) ** 2)
    got = doubling_variances(lambda n: s[n - 1] * s[:n], 2.0, 4)
    assert np.allclose(
        got, [1.0, 1.0 + s[1] * s[0], 1.0 + s[1] ** 2, 1.0 + s[1] ** 2 + s[3] * s[0]]
    )


def test_small_table_rows_and_ratio_definition():
    rows = anytime_table(exponents=[4, 6], jacobsen_fawaz=())
    tapered = rows[0]
    s = np.cumsum(sqrt_coefficients(64) ** 2)
    var = strategy_sensitivity(TaperedSqrt()) ** 2 * TaperedSqrt().release_factors(64)
    assert tapered["ratio_to_fixed_horizon_sqrt"][64] == pytest.approx(var[-1] / s[-1] ** 2)
    assert all(r["worst_ratio"] >= 1.0 for r in rows)  # nobody beats knowing the horizon here


@pytest.mark.slow
def test_key_number_best_anytime_within_1_5_up_to_2_20():
    rows = anytime_table()
    best = min(rows, key=lambda r: r["worst_ratio"])
    assert best["mechanism"].startswith("tapered_sqrt")
    assert best["worst_ratio"] <= 1.5
    assert set(best["ratio_to_fixed_horizon_sqrt"]) == {2**e for e in range(10, 21, 2)}
