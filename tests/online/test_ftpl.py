"""DP-FTPL (Agarwal & Singh 2017, Algorithm 3, Theorem 3.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from dponline.online.ftpl import DPFTPL, ftpl_sigma_paper, linear_oracle
from dponline.privacy.accounting import gaussian_epsilon
from dponline.protocol import LossVectorFeedback


@pytest.mark.parametrize("seed", range(5))
def test_linear_oracle_against_linprog(seed):
    c = np.random.default_rng(seed).normal(size=(1, 4))
    x = linear_oracle("simplex", c)[0]
    lp = linprog(c[0], A_eq=np.ones((1, 4)), b_eq=[1], bounds=[(0, 1)] * 4)
    assert x @ c[0] == pytest.approx(lp.fun)
    cube = linear_oracle("cube", c)[0]
    assert cube @ c[0] == pytest.approx(linprog(c[0], bounds=[(-1, 1)] * 4).fun)
    ball = linear_oracle("ball", c, radius=2.0)[0]
    assert ball @ c[0] == pytest.approx(-2.0 * np.linalg.norm(c[0]))
    assert np.linalg.norm(ball) == pytest.approx(2.0)


def test_theorem_3_5_sigma_by_hand():
    T, N, eps, delta = 1024, 16, 1.0, 1e-6
    lt = 10.0
    expected = max(4.0 * math.sqrt(T / (4.0 * lt)), 4.0 * lt * math.log(lt / delta) / eps)
    assert ftpl_sigma_paper(4.0, N, T, eps, delta) == pytest.approx(expected)
    lr = DPFTPL(N, T, epsilon=eps, delta=delta, calibration="paper", rng=0)
    assert lr.sigma == pytest.approx(expected)  # ||Y||_2 = sqrt(16) for [0, 1]^16
    assert lr.counter.name == "padded_tree"


def test_guarantee_is_what_sigma_proves():
    lr = DPFTPL(10, 10_000, epsilon=1.0, delta=1e-6, calibration="tight", rng=0)
    _, l2 = lr.counter.sensitivity_factors(10_000)
    total = l2 * math.sqrt(10)
    assert lr.privacy.epsilon == pytest.approx(gaussian_epsilon(1e-6, total / lr.sigma))
    assert lr.privacy.epsilon <= 1.0 + 1e-9
    paper = DPFTPL(10, 10_000, epsilon=1.0, delta=1e-6, calibration="paper", rng=0)
    assert paper.sigma > lr.sigma and paper.privacy.meets_request


def test_resume_and_contract():
    L = np.random.default_rng(2).uniform(size=(25, 3))

    def make():
        return DPFTPL(3, 25, epsilon=1.0, replicas=3, rng=4)

    full, ref = make(), []
    for t in range(25):
        ref.append(full.act())
        full.observe(LossVectorFeedback(L[t]))
    part = make()
    for t in range(10):
        part.act()
        part.observe(LossVectorFeedback(L[t]))
    resumed = make()
    resumed.load_state_dict(part.state_dict())
    for t in range(10, 25):
        np.testing.assert_array_equal(resumed.act(), ref[t])
        resumed.observe(LossVectorFeedback(L[t]))
    with pytest.raises(ValueError, match="outside the declared bounds"):
        make().observe(LossVectorFeedback(np.array([0.0, 2.0, 0.0])))
    with pytest.raises(ValueError, match="domain"):
        DPFTPL(3, 25, domain="sphere")
