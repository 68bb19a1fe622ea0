"""``step_block``: a block of rounds at once, the same distribution and state as single steps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dponline.continual.base import HorizonExceededError
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.continual.blt import BLTCounter
from dponline.continual.dyadic_blocks import MIN_BLOCK, dyadic_spans
from dponline.continual.honaker import HonakerCounter
from dponline.continual.matrix_factorization import SqrtFactorizationCounter
from dponline.continual.padded_tree import PaddedTreeCounter
from dponline.privacy.bounds import Box
from dponline.privacy.noise import GaussianNoise, LaplaceNoise

ALL = (BinaryTreeCounter, HonakerCounter, PaddedTreeCounter, SqrtFactorizationCounter, BLTCounter)


def _stepped_and_blocked(cls, xs, cut, noise, replicas, seeds=(0, 1)):
    """Releases of two counters: one step by step, one by single steps before ``cut[0]``, a
    block to ``cut[1]`` and single steps after it."""
    horizon, dim = xs.shape
    a = cls(horizon, dim, noise, replicas=replicas, rng=seeds[0])
    b = cls(horizon, dim, noise, replicas=replicas, rng=seeds[1])
    stepped = np.stack([a.step(x) for x in xs])
    parts = [b.step(x)[None] for x in xs[: cut[0]]]
    parts.append(b.step_block(xs[cut[0] : cut[1]]))
    parts += [b.step(x)[None] for x in xs[cut[1] :]]
    return a, b, stepped, np.concatenate(parts)


@given(t0=st.integers(0, 5000), count=st.integers(0, 3000), longest_log=st.integers(3, 12))
def test_spans_cover_the_rounds_with_aligned_powers_of_two(t0, count, longest_log):
    longest = 2**longest_log
    spans = list(dyadic_spans(t0, count, longest))
    assert sum(size for _, size in spans) == count
    pos = 0
    for offset, size in spans:
        assert offset == pos
        assert size == 1 or (MIN_BLOCK <= size <= longest and (t0 + offset) % size == 0)
        assert size & (size - 1) == 0
        pos += size


@pytest.mark.parametrize("cls", ALL)
def test_without_noise_a_block_releases_the_exact_prefix_sums(cls):
    xs = np.random.default_rng(3).uniform(-1, 1, size=(77, 3))
    counter = cls(100, 3, GaussianNoise(0.0), replicas=2, rng=0)
    counter.step(xs[0])
    out = counter.step_block(xs[1:])
    np.testing.assert_allclose(out, np.cumsum(xs, axis=0)[1:, None, :].repeat(2, 1), atol=1e-12)
    assert counter.t == 77


@pytest.mark.parametrize("cls", (SqrtFactorizationCounter, BLTCounter))
def test_factorisations_draw_the_same_noise_as_single_steps(cls):
    # the same draws in the same order: the releases and the state agree up to rounding
    xs = np.random.default_rng(4).uniform(size=(150, 2))
    a, b, stepped, blocked = _stepped_and_blocked(cls, xs, (1, 120), GaussianNoise(1.5), 3, (7, 7))
    np.testing.assert_allclose(blocked, stepped, rtol=0, atol=1e-10)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa["rng"] == sb["rng"]
    for k in sa["arrays"]:
        np.testing.assert_allclose(sb["arrays"][k], sa["arrays"][k], atol=1e-10)


@pytest.mark.parametrize("cls", (BinaryTreeCounter, HonakerCounter, PaddedTreeCounter))
@pytest.mark.parametrize("cut", [(0, 64), (3, 70), (5, 6)])
def test_tree_blocks_have_the_noise_covariance_of_single_steps(cls, cut):
    # Both paths are linear maps of i.i.d. Gaussian draws, so equal covariance of the T noise
    # values is equality in distribution. Each entry's difference of empirical covariances,
    # over its standard error, is about N(0, 1); 4,950 entries at |z| > 5.5 fail by chance
    # with probability <= 4,950 x 3.8e-8 < 2e-4 per case. A misplaced or missing node moves
    # an entry by one draw's variance, ~70 standard errors at these 20,000 replicas.
    horizon, replicas = 99, 20_000
    xs = np.random.default_rng(5).uniform(size=(horizon, 1))
    _, _, stepped, blocked = _stepped_and_blocked(cls, xs, cut, GaussianNoise(1.0), replicas)
    sums = np.cumsum(xs, axis=0)[:, None, :]
    na, nb = (stepped - sums)[..., 0], (blocked - sums)[..., 0]  # (T, R), mean 0
    ca, cb = na @ na.T / replicas, nb @ nb.T / replicas  # mean products, entry (s, t)
    va = (na**2) @ (na**2).T / replicas - ca**2  # variance of the products
    vb = (nb**2) @ (nb**2).T / replicas - cb**2
    z = (ca - cb) / np.sqrt((va + vb) / replicas)
    iu = np.triu_indices(horizon)
    assert np.abs(z[iu]).max() < 5.5
    assert np.abs(nb.mean(axis=1) / np.sqrt(nb.var(axis=1) / replicas)).max() < 5.5


@pytest.mark.parametrize("cls", (BinaryTreeCounter, HonakerCounter, PaddedTreeCounter))
def test_tree_blocks_with_laplace_noise_have_the_exact_variances(cls):
    # Var(release t) is stated exactly; the sample variance of 20,000 Laplace sums has a
    # relative standard error <= sqrt((kurtosis - 1) / R) < 0.03 (a sum's excess kurtosis is
    # at most a single draw's, 3): 6 standard errors over 99 rounds fail with p < 1e-6.
    horizon, replicas = 99, 20_000
    xs = np.zeros((horizon, 1))
    counter = cls(horizon, 1, LaplaceNoise(0.7), replicas=replicas, rng=2)
    noise = counter.step_block(xs)[..., 0]
    rel = noise.var(axis=1) / counter.variances() - 1.0
    assert np.abs(rel).max() < 6 * np.sqrt(5.0 / replicas)


@pytest.mark.parametrize("cls", ALL)
def test_a_block_leaves_a_state_that_resumes_bit_for_bit(cls):
    xs = np.random.default_rng(6).uniform(size=(90, 2))
    counter = cls(90, 2, GaussianNoise(1.0), replicas=2, rng=8)
    counter.step_block(xs[:37])
    twin = cls(90, 2, GaussianNoise(1.0), replicas=2, rng=99)
    twin.load_state_dict(counter.state_dict())
    np.testing.assert_array_equal(twin.step_block(xs[37:]), counter.step_block(xs[37:]))


@pytest.mark.parametrize("cls", ALL)
def test_a_block_past_the_horizon_is_refused_before_anything_is_released(cls):
    counter = cls(20, 1, GaussianNoise(1.0), rng=0)
    counter.step_block(np.zeros((15, 1)))
    state = counter.state_dict()
    with pytest.raises(HorizonExceededError, match="a block of 6 steps would pass it"):
        counter.step_block(np.zeros((6, 1)))
    assert counter.state_dict()["t"] == state["t"] == 15
    assert counter.state_dict()["rng"] == state["rng"]


def test_a_block_is_checked_against_the_bounds_as_a_whole():
    counter = HonakerCounter(40, 2, LaplaceNoise(1.0), bounds=Box(0.0, 1.0, dim=2), rng=0)
    xs = np.full((10, 2), 0.5)
    xs[6, 1] = 1.5
    with pytest.raises(ValueError, match=r"steps 1\.\.10 input.*1\.5\)? at index \(6, 1\)"):
        counter.step_block(xs)
    xs[6, 1] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        counter.step_block(xs)
    assert counter.t == 0
    with pytest.raises(ValueError, match=r"shape \(b, 2\) or \(b, 1, 2\), got \(10, 3\)"):
        counter.step_block(np.zeros((10, 3)))
    clipping = BinaryTreeCounter(
        40, 2, GaussianNoise(0.0), bounds=Box(0.0, 1.0, dim=2), clip=True, rng=0
    )
    xs[6, 1] = 1.5
    assert clipping.step_block(xs)[-1, 0, 1] == pytest.approx(5.5)  # 9 x 0.5 + the clipped 1


def test_per_replica_blocks():
    xs = np.random.default_rng(9).uniform(size=(40, 3, 2))
    for cls in ALL:
        out = cls(40, 2, GaussianNoise(0.0), replicas=3, rng=0).step_block(xs)
        np.testing.assert_allclose(out, np.cumsum(xs, axis=0), atol=1e-12)


def test_strings_are_refused_on_every_path():
    # from a review: numpy parses "0.5" as a number; observe refused strings but a counter's
    # step and step_block (and a learner's play_block on them) took them
    from dponline.continual.factory import build_counter
    from dponline.online.ftrl import DPFTRL
    from dponline.privacy.bounds import Box
    from dponline.privacy.budget import PrivacyBudget

    budget = PrivacyBudget(1.0)
    for horizon in (8, None):
        counter = build_counter(budget, horizon=horizon, bounds=Box(0, 1, dim=2), noise="laplace")
        with pytest.raises(ValueError, match="must be real numbers"):
            counter.step(["1", "0"])
        with pytest.raises(ValueError, match="must be real numbers"):
            counter.step_block([["1", "0"]])
        assert counter.t == 0
    learner = DPFTRL(2, 8, budget=budget, rng=0)
    with pytest.raises(ValueError, match="must be real numbers"):
        learner.play_block(np.array([["0.5", "1"], ["1", "0"]]))
    assert learner.t == 0
