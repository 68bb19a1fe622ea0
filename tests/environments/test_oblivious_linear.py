"""The protocol the round loop's fast path asks for
(:class:`~dponline.environments.base.ObliviousLinearLosses`): which environments have it, the
contract (a block is worth its rounds one at a time), and that the loop asks the protocol,
not a class."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.environments.base import ObliviousLinearLosses
from dponline.environments.catalogue import ENVIRONMENTS
from dponline.experiments.rounds import Tally, play
from dponline.protocol import LossVectorFeedback
from tests.helpers import catalogue_environment

#: the catalogue's environments over fixed linear loss matrices with full information
OBLIVIOUS_LINEAR = {
    "stocks",
    "alternating",
    "switching_best",
    "stochastic",
    "linear",
    "expert_losses",
}


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_the_oblivious_linear_environments_keep_the_contract(name, tmp_path):
    env = catalogue_environment(name, 30, np.random.default_rng(0), tmp_path)
    assert isinstance(env, ObliviousLinearLosses) == (name in OBLIVIOUS_LINEAR)
    if name not in OBLIVIOUS_LINEAR:
        return
    rng = np.random.default_rng(1)
    actions = rng.standard_normal((7, 3, env.dim))  # rounds 10..16, three replicas
    block = env.block_losses(10, actions)
    vectors = env.loss_vectors(10, 17)
    assert block.shape == (7, 3) and vectors.shape == (7, env.dim)
    for i, t in enumerate(range(10, 17)):
        feedback, loss = env.round(t, actions[i])
        assert isinstance(feedback, LossVectorFeedback)
        np.testing.assert_array_equal(feedback.loss, vectors[i])
        np.testing.assert_allclose(block[i], loss, rtol=1e-13, atol=1e-15)


class _Duck:
    """Not a subclass of any environment: linear losses of a fixed (T, 2) matrix."""

    reveals_context = False

    def __init__(self, losses: np.ndarray):
        self.losses, self.horizon, self.dim = losses, len(losses), losses.shape[1]
        self.blocks: list[tuple[int, int]] = []

    def loss_vectors(self, start: int, stop: int) -> np.ndarray:
        self.blocks.append((start, stop))
        return self.losses[start:stop]

    def block_losses(self, start: int, actions: np.ndarray) -> np.ndarray:
        return np.einsum("brn,bn->br", actions, self.losses[start : start + len(actions)])

    def round(self, t: int, action: np.ndarray):
        return LossVectorFeedback(self.losses[t]), action @ self.losses[t]


class _Leader:
    """Follow the leader over two experts, one replica; plays blocks too."""

    replicas = 1

    def __init__(self):
        self.total = np.zeros(2)

    def _decide(self, total: np.ndarray) -> np.ndarray:
        return np.eye(2)[[int(np.argmin(total))]]

    def act(self) -> np.ndarray:
        return self._decide(self.total)

    def observe(self, feedback: LossVectorFeedback) -> None:
        self.total = self.total + feedback.loss

    def play_block(self, losses: np.ndarray) -> np.ndarray:
        out = []
        for loss in losses:
            out.append(self._decide(self.total))
            self.total = self.total + loss
        return np.array(out)


def test_the_fast_path_asks_the_protocol_not_a_class():
    """An environment with the protocol's methods is played in blocks (and a block's record is
    the rounds' record); without ``blocks`` the same environment is played round by round."""
    losses = np.random.default_rng(2).random((50, 2))
    duck = _Duck(losses)
    assert isinstance(duck, ObliviousLinearLosses)
    fast = Tally.start(1, last=50, record_every=5, switches=True)
    play(duck, _Leader(), range(50), keep=False, tally=fast, blocks=True)
    assert duck.blocks == [(0, 50)]
    duck.blocks.clear()
    slow = Tally.start(1, last=50, record_every=5, switches=True)
    play(duck, _Leader(), range(50), keep=False, tally=slow)
    assert duck.blocks == []
    np.testing.assert_allclose(fast.loss_table(), slow.loss_table(), rtol=1e-13)
    np.testing.assert_array_equal(fast.switch_table(), slow.switch_table())
