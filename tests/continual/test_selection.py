"""The tight calibrations' choice of counter (:mod:`dponline.continual.selection`)."""

import numpy as np
import pytest

from dponline.continual import MECHANISMS, best_mechanism
from dponline.continual.selection import state_bytes
from dponline.online import DPFTRL
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.noise import GaussianNoise


@pytest.mark.parametrize("horizon", [64, 1024])
def test_the_ranking_is_by_largest_variance_at_equal_sensitivity(horizon):
    # Gaussian noise at unit l2 sensitivity: sigma = the l2 factor of each mechanism
    def worst(name: str) -> float:
        cls = MECHANISMS[name]
        _, l2 = cls.sensitivity_factors(horizon)
        return float(cls.release_variances(horizon, GaussianNoise(l2), 1).max())

    ranked = ["sqrt_factorization", "blt", "honaker", "binary_tree"]
    values = [worst(n) for n in ranked]
    assert values[0] <= values[1] <= 1.1 * values[0]
    assert values[1] < values[2] < values[3]


def test_the_best_mechanism_that_fits_the_memory():
    assert best_mechanism(1000, 10, "gaussian") == "sqrt_factorization"
    # T = 1e6, d = 1000: the square root would hold 7.5 GiB; the BLT 48 KB
    assert state_bytes("sqrt_factorization", 10**6, 1000) > 7 * 2**30
    assert best_mechanism(10**6, 1000, "gaussian") == "blt"
    assert best_mechanism(10**6, 1000, "laplace") == "honaker"
    assert best_mechanism(10, 10, "gaussian", memory_budget=100) == "binary_tree"
    with pytest.raises(ValueError, match="noise"):
        best_mechanism(10, 10, "cauchy")


def test_tight_dp_ftrl_takes_it():
    small = DPFTRL(10, 1000, budget=PrivacyBudget(1.0, 1e-6), noise="gaussian", rng=0)
    assert small.counter.name == "sqrt_factorization"
    # one run's square root would hold 1e5 x 100 noise values (76 MiB): a BLT, for any replicas
    wide = DPFTRL(100, 10**5, budget=PrivacyBudget(1.0, 1e-6), noise="gaussian")
    assert wide.counter.name == "blt"
    pure = DPFTRL(10, 1000, budget=PrivacyBudget(1.0), noise="laplace", rng=0)
    assert pure.counter.name == "honaker"
    np.testing.assert_array_equal(small.act().shape, (1, 10))
