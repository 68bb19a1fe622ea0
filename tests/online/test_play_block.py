"""``play_block``: the counter learners' decisions for a block of rounds of an oblivious stream."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dponline.continual.base import HorizonExceededError
from dponline.domains.box import Box as BoxDomain
from dponline.online import DPFTRL
from dponline.online.ctrl import CTRL
from dponline.online.ftpl import DPFTPL
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import BlockPlayer, LossVectorFeedback

T, N, R = 120, 4, 3
LOSSES = np.random.default_rng(0).uniform(size=(T, N))


def _one_at_a_time(learner, losses):
    out = []
    for loss in losses:
        out.append(learner.act())
        learner.observe(LossVectorFeedback(loss))
    return np.stack(out)


def _in_blocks(learner, losses, cuts):
    parts = [learner.play_block(losses[a:b]) for a, b in itertools.pairwise(cuts)]
    return np.concatenate(parts)


GAUSSIAN = {"budget": PrivacyBudget(1.0, 1e-5), "replicas": R}
BUILDERS = {
    "ftrl": lambda seed: DPFTRL(N, T, budget=None, replicas=R, rng=seed),
    "dp-ftrl blt": lambda seed: DPFTRL(
        N, T, noise="gaussian", mechanism="blt", rng=seed, **GAUSSIAN
    ),
    "dp-ftrl euclidean sqrt": lambda seed: DPFTRL(
        N,
        T,
        noise="gaussian",
        mechanism="sqrt_factorization",
        regulariser="euclidean",
        rng=seed,
        **GAUSSIAN,
    ),
    "dp-ftpl box": lambda seed: DPFTPL(
        N,
        T,
        mechanism="sqrt_factorization",
        domain=BoxDomain(N),
        loss_bounds=Box(0.0, 1.0, dim=N),
        rng=seed,
        **GAUSSIAN,
    ),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_blocks_make_the_decisions_of_single_rounds(name):
    # these counters draw the same noise in the same order either way (exact sums, the
    # factorisations): the decisions agree to rounding, and so does the state afterwards
    build = BUILDERS[name]
    single, blocked = build(7), build(7)
    expected = _one_at_a_time(single, LOSSES)
    got = _in_blocks(blocked, LOSSES, [0, 1, 50, 64, 119, 120])
    assert got.shape == (T, R, N)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(blocked.act(), single.act(), rtol=0, atol=1e-9)
    assert blocked.t == single.t == T


def test_counter_learners_are_block_players_and_ctrl_is_not():
    assert isinstance(BUILDERS["ftrl"](0), BlockPlayer)
    assert isinstance(BUILDERS["dp-ftpl box"](0), BlockPlayer)
    assert not issubclass(CTRL, BlockPlayer)  # its decisions feed its own rejection sampling


def test_a_block_starts_at_a_round_boundary_and_stays_within_the_horizon():
    learner = BUILDERS["dp-ftrl blt"](1)
    learner.play_block(LOSSES[:100])
    learner.act()
    with pytest.raises(ValueError, match="acted in round 101 without observing"):
        learner.play_block(LOSSES[100:110])
    learner.observe(LossVectorFeedback(LOSSES[100]))
    with pytest.raises(HorizonExceededError, match="a block of 20 steps would pass it"):
        learner.play_block(LOSSES[:20])
    assert learner.t == 101
    assert learner.play_block(LOSSES[:0]).shape == (0, R, N)
    with pytest.raises(ValueError, match="outside"):
        learner.play_block(LOSSES[:5] + 1.0)  # losses above the declared [0, 1]
    assert learner.t == 101
