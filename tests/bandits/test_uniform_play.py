"""Uniform random play: arms uniformly at random, whatever the inputs, which it still checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dponline.bandits.uniform_play import UniformPlay
from dponline.protocol import ContextFeedback, RewardFeedback


def _round(player, context, reward=0.0):
    player.observe(ContextFeedback(context))
    arms = player.act()
    player.observe(RewardFeedback(np.full(player.replicas, reward)))
    return arms


def test_arms_are_uniform_and_do_not_depend_on_the_inputs():
    # 500 rounds x 40 replicas over 5 arms: chi-square against uniform, false failure 1e-4
    a = UniformPlay(3, 5, 500, replicas=40, rng=7)
    b = UniformPlay(3, 5, 500, replicas=40, rng=7)
    gen = np.random.default_rng(0)
    seen_a, seen_b = [], []
    for _ in range(500):
        seen_a.append(_round(a, gen.uniform(-1, 1, 3), 1.0))
        seen_b.append(_round(b, np.zeros(3), 0.0))  # other contexts, other rewards
    np.testing.assert_array_equal(seen_a, seen_b)
    counts = np.bincount(np.concatenate(seen_a), minlength=5)
    assert stats.chisquare(counts).pvalue > 1e-4


def test_it_checks_its_inputs_like_the_bandits_beside_it():
    player = UniformPlay(2, 3, 4, reward_range=(0.0, 1.0), replicas=2, rng=0)
    with pytest.raises(ValueError, match="needs this round's context"):
        player.act()
    with pytest.raises(ValueError, match="exceeds x_bound"):
        player.observe(ContextFeedback(np.array([2.0, 0.0])))
    player.observe(ContextFeedback(np.array([0.5, 0.0])))
    with pytest.raises(ValueError, match="after a context and an action"):
        player.observe(RewardFeedback(np.zeros(2)))
    player.act()
    with pytest.raises(ValueError, match="outside the declared range"):
        player.observe(RewardFeedback(np.array([0.5, 1.5])))
    with pytest.raises(TypeError, match="no privacy noise"):
        player.scale_noise(0.1)
    player.observe(RewardFeedback(np.zeros(2)))  # the refused reward left the round open
    for _ in range(3):
        _round(player, np.zeros(2))
    assert player.t == 4
    with pytest.raises(ValueError, match="round 5 is past it"):
        player.observe(ContextFeedback(np.zeros(2)))
