"""Published numbers carry no data in their last bits (Mironov 2012; privacy.floating_point).

Before the rounding, a released mean of an arm whose first reward is 1 lay in (0, 1/2) only on
the lattice of multiples of 2^-53 (``fl(1 + Y)`` is exact there); with a reward of 0, about one
draw in eight fell off it: an event of probability 0.13 under one input and 0 under its
neighbour (a reviewer's measurement, 20,000 replicas each). The tests count that event.
"""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits.adaptive_episodes import AdaPUCB
from dponline.bandits.dp_phases import DPIMED
from dponline.bandits.dp_ucb import DPUCB
from dponline.bandits.estimates import laplace_arm_means
from dponline.bandits.thompson import LazyDPTS
from dponline.privacy import PrivacyBudget
from dponline.privacy.floating_point import RELEASE_GRID, snapped
from dponline.protocol import BanditFeedback

REPLICAS = 20_000


def _off_the_lattice(values: np.ndarray) -> np.ndarray:
    """In (0, 1/2) and not a multiple of 2^-53: impossible for fl(1 + Y)."""
    inside = (values > 0) & (values < 0.5)
    return inside & (np.ldexp(values, 53) % 1.0 != 0)


def _first_mean(cls, first_reward: float, **options) -> np.ndarray:
    learner = cls(2, 2, budget=PrivacyBudget(1.0), replicas=REPLICAS, rng=123, **options)
    for loss in (1.0 - first_reward, 0.5):
        learner.act()
        learner.observe(BanditFeedback(np.full(REPLICAS, loss)))
    return learner.released_means()[:, 0]


@pytest.mark.parametrize(
    ("cls", "options"),
    [(AdaPUCB, {}), (DPIMED, {"first_phase": 1}), (LazyDPTS, {}), (DPUCB, {})],
)
def test_released_means_are_on_the_grid_whatever_the_reward(cls, options):
    """Both inputs give outputs on the 2^-16 grid only: the event the attack counts has
    probability 0 under each (it had 0.13 and 0 for AdaP-UCB; no false failure: the
    check is exact)."""
    for reward in (0.0, 1.0):
        means = _first_mean(cls, reward, **options)
        seen = means[np.isfinite(means)]
        assert seen.size > REPLICAS // 2
        assert not _off_the_lattice(seen).any()
        np.testing.assert_array_equal(seen, snapped(seen))


def test_laplace_arm_means_are_on_the_grid():
    gen = np.random.default_rng(5)
    for total in (0.0, 1.0):
        means = np.array(
            [laplace_arm_means([total, 0.0], [1, 1], 1.0, rng=gen).means[0] for _ in range(2000)]
        )
        assert not _off_the_lattice(means).any()
        assert np.all(np.ldexp(means, 16) % 1.0 == 0)


def test_the_rounding_by_hand():
    g = RELEASE_GRID
    assert g == 2.0**-16
    values = np.array([0.0, g * 0.49, g * 0.51, 1.0 + g * 1.5, -3 * g - g / 4, np.nan, np.inf])
    out = snapped(values)
    assert out[:5].tolist() == [0.0, 0.0, g, 1.0 + 2 * g, -3 * g]
    assert np.isnan(out[5]) and out[6] == np.inf
    assert snapped(0.3, grid=0.25) == 0.25
    with pytest.raises(ValueError, match="power of two"):
        snapped(0.3, grid=0.3)
