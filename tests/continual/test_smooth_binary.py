"""The smooth binary mechanism (Andersson & Pagh 2023)."""

import itertools
import math

import numpy as np
import pytest

from dponline.continual.smooth_binary import (
    SmoothBinaryCounter,
    _leaves_all,
    smooth_binary_depth,
    smooth_binary_leaves,
    smooth_binary_matrices,
    smooth_binary_node_counts,
)
from dponline.privacy.noise import GaussianNoise, LaplaceNoise


@pytest.mark.parametrize("horizon", [1, 2, 3, 6, 19, 20, 21, 70, 71, 300])
def test_b_c_is_the_prefix_sum_matrix_and_counts_are_column_norms(horizon):
    big_b, big_c = smooth_binary_matrices(horizon)
    assert np.array_equal(big_b @ big_c, np.tril(np.ones((horizon, horizon))))
    assert np.array_equal(SmoothBinaryCounter.strategy_matrix(horizon), big_c)
    counts = smooth_binary_node_counts(horizon)
    assert np.array_equal(counts, big_c.sum(axis=0))
    d = smooth_binary_depth(horizon)
    assert np.all(big_b.sum(axis=1) == d // 2)  # every release sums d/2 nodes
    l1, l2 = SmoothBinaryCounter.sensitivity_factors(horizon)
    assert l1 == counts.max() <= d // 2 and l2 == pytest.approx(math.sqrt(l1))


def test_the_leaf_table_is_every_integer_with_that_many_bits_in_order():
    for bits in range(11):
        for ones in range(bits + 1):
            want = sorted(sum(1 << i for i in c) for c in itertools.combinations(range(bits), ones))
            assert _leaves_all(bits, ones).tolist() == want
    assert _leaves_all.cache_info().maxsize <= 4  # only results are kept, not every sub-table


@pytest.mark.parametrize("horizon", [1, 2, 3, 4, 5, 7, 8, 9, 34, 35, 251, 252, 253, 2000])
def test_node_counts_match_the_used_nodes_counted_one_by_one(horizon):
    """Brute force: a level-b node (p's bits above b, bit b clear) is used iff some leaf
    l_1..l_T has those bits above b and bit b set."""
    leaves = [int(x) for x in smooth_binary_leaves(horizon)]
    used = {(b, leaf >> (b + 1)) for leaf in leaves[1:] for b in range(64) if leaf >> b & 1}
    d = smooth_binary_depth(horizon)
    want = [
        sum(1 for b in range(d) if not p >> b & 1 and (b, p >> (b + 1)) in used)
        for p in leaves[:-1]
    ]
    assert smooth_binary_node_counts(horizon).tolist() == want


def test_depth_and_leaves():
    assert [smooth_binary_depth(t) for t in (1, 2, 5, 6, 19, 20, 2**10, 2**20)] == [
        2,
        4,
        4,
        6,
        6,
        8,
        14,
        24,
    ]
    leaves = smooth_binary_leaves(40)
    assert leaves.size == 41 and np.all(np.diff(leaves) > 0)
    assert all(bin(int(x)).count("1") == 4 for x in leaves)
    # the exact column norm is below the d/2 that the public code charges at T = 2^20
    assert smooth_binary_node_counts(2**20).max() == 11


def test_variance_is_constant_and_matches_simulation():
    # 20000 replicas: sample variances within 5% with probability 1 - 1e-12 each (chi-square)
    c = SmoothBinaryCounter(100, 1, GaussianNoise(1.0), rng=1, replicas=20000)
    out = np.array([c.step([0.0]) for _ in range(100)])
    assert np.allclose(out.var(axis=1)[:, 0], 5.0, rtol=0.05)
    assert c.variance(37) == 5.0 and np.all(c.variances() == 5.0)
    # node noises of consecutive releases are shared as the tree dictates: Cov = B B^T
    big_b, _ = smooth_binary_matrices(100)
    cov = np.cov(out[:8, :, 0])
    assert np.allclose(cov, (big_b @ big_b.T)[:8, :8], atol=0.2)


@pytest.mark.parametrize("noise", [GaussianNoise(1.0), LaplaceNoise(1.0)])
def test_resume_and_blocks(noise):
    xs = np.random.default_rng(0).uniform(size=(50, 2))
    a = SmoothBinaryCounter(50, 2, noise, rng=4, replicas=2)
    first = np.array([a.step(x) for x in xs[:20]])
    state = a.state_dict()
    rest = np.array([a.step(x) for x in xs[20:]])
    b = SmoothBinaryCounter(50, 2, noise, rng=11, replicas=2)
    b.load_state_dict(state)
    assert np.array_equal(b.step_block(xs[20:]), rest)
    c = SmoothBinaryCounter(50, 2, noise, rng=4, replicas=2)
    assert np.allclose(c.step_block(xs[:20]), first)
    exact = SmoothBinaryCounter(50, 2, GaussianNoise(0.0))
    assert np.allclose(exact.step_block(xs)[:, 0], np.cumsum(xs, axis=0))
