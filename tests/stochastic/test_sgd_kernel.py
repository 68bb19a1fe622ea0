"""NoisySGD's compiled steps (numba, dponline[fast]) against its numpy steps."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dponline.privacy.budget import PrivacyBudget
from dponline.stochastic.noisy_sgd import NoisySGDPlan

pytest.importorskip("numba")  # an optional extra; `make test` installs it
# the module (the package exports a function of the same name)
noisy_sgd_module = importlib.import_module("dponline.stochastic.noisy_sgd")


@pytest.mark.parametrize("sigma_budget", [None, PrivacyBudget(1.0, 1e-3)])
def test_compiled_and_numpy_steps_give_the_same_iterates(sigma_budget, monkeypatch):
    # the same draws in the same order and the same arithmetic: equal up to the inner
    # product's summation order; 3,000 steps cross a block boundary (2,048), and the step
    # scale 30 drives the iterates onto the box's faces (the clipping branches)
    gen = np.random.default_rng(0)
    n, d = 60, 4
    x = gen.uniform(-1, 1, (n, d))
    x /= np.abs(x).sum(axis=1, keepdims=True)
    y = gen.uniform(-1, 1, n)
    plan = NoisySGDPlan(
        n, d, x_bound=1.0, y_bound=1.0, budget=sigma_budget, step_scales=[0.1, 30.0], steps=3000
    )
    compiled = plan.fit(x, y, [np.random.default_rng(s) for s in range(3)])
    monkeypatch.setattr(noisy_sgd_module, "_FORCE_NUMPY", True)
    numpy_steps = plan.fit(x, y, [np.random.default_rng(s) for s in range(3)])
    np.testing.assert_allclose(compiled, numpy_steps, rtol=0, atol=1e-12)
