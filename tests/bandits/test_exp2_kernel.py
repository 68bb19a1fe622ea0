"""EXP2's compiled per-round arithmetic against its numpy form and the definitions."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits import exp2_kernel as k

GEN = np.random.default_rng(0)
LOG_Q = GEN.normal(scale=30.0, size=(5, 7))  # far apart: the max shift matters
EXPLORE = np.full(7, 0.1 / 7)


def _weights(fn):
    p, cdf = np.empty_like(LOG_Q), np.empty_like(LOG_Q)
    fn(LOG_Q, 0.1, EXPLORE, p, cdf)
    return p, cdf


def test_weights_are_the_exploration_mixed_softmax():
    q = np.exp(LOG_Q - LOG_Q.max(axis=1, keepdims=True))
    expected = 0.9 * q / q.sum(axis=1, keepdims=True) + EXPLORE
    for fn in (k.weights, k._weights_numpy, k._weights_loop):
        p, cdf = _weights(fn)
        np.testing.assert_allclose(p, expected, rtol=1e-13, atol=1e-16)
        np.testing.assert_allclose(cdf, np.cumsum(expected, axis=1), rtol=1e-13)


def test_pick_takes_the_first_arm_whose_running_sum_reaches_the_draw():
    cdf = np.array([[0.2, 0.5, 1.0], [0.2, 0.5, 1.0], [0.2, 0.5, 1.0], [0.2, 0.5, 0.9999]])
    u = np.array([0.1, 0.2, 0.5000001, 0.99999])
    for fn in (k.pick, k._pick_numpy, k._pick_loop):
        chosen = np.empty(4, dtype=np.int64)
        fn(cdf, u, chosen)
        assert chosen.tolist() == [0, 0, 2, 2]  # the last arm when rounding leaves u above


@pytest.mark.parametrize("fn", [k.charge, k._charge_numpy, k._charge_loop])
def test_charge_updates_the_played_arm_alone(fn):
    log_q = LOG_Q.copy()
    p, _ = _weights(k._weights_numpy)
    chosen = np.array([0, 6, 3, 3, 1])
    values = np.array([0.5, -0.2, 1.0, 0.0, 2.0])
    fn(log_q, p, chosen, values, 0.05)
    expected = LOG_Q.copy()
    expected[np.arange(5), chosen] -= 0.05 * values / p[np.arange(5), chosen]
    np.testing.assert_allclose(log_q, expected, rtol=1e-15)
