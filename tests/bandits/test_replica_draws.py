"""Gamma and Beta draws for many replicas at once (dponline.bandits.replica_draws): the laws
(Kolmogorov-Smirnov against scipy), one attempt by hand, each replica's numbers from its own
generator only, and the saved state."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dponline.bandits.k_armed import replica_generators
from dponline.bandits.replica_draws import ReplicaDraws
from dponline.privacy.arguments import ArgumentError


def _draw_many(kind: str, params: tuple[float, ...], n: int, seed: int = 0) -> np.ndarray:
    gens = replica_generators(seed, 4)
    draws = ReplicaDraws(4, 16)
    rows = np.arange(4)
    out = []
    for _ in range(n // (4 * 8)):
        shape = (4, 8)
        if kind == "gamma":
            out.append(draws.gamma(gens, rows, np.full(shape, params[0])))
        else:
            a, b = (np.full(shape, p) for p in params)
            out.append(draws.beta(gens, rows, a, b))
    return np.concatenate(out).ravel()


# Each KS test rejects a correct sampler with probability 1e-3; the seeds are fixed, so a
# failure is reproducible. 20,000 draws detect a law off by about 0.014 in CDF.
@pytest.mark.parametrize("shape", [1.0, 1.7, 9.0, 120.0])
def test_gamma_law(shape):
    x = _draw_many("gamma", (shape,), 20_000)
    assert stats.kstest(x, stats.gamma(shape).cdf).pvalue > 1e-3


@pytest.mark.parametrize("a, b", [(1.0, 1.0), (3.0, 7.0), (50.5, 2.0), (1.0, 400.0)])
def test_beta_law(a, b):
    x = _draw_many("beta", (a, b), 20_000, seed=1)
    assert stats.kstest(x, stats.beta(a, b).cdf).pvalue > 1e-3


def test_one_attempt_by_hand():
    # the first variable reads the replica's first normal and first uniform
    gens = replica_generators(5, 1)
    twin = replica_generators(5, 1)[0]
    normals = twin.standard_normal(ReplicaDraws(1, 1).block)
    uniforms = twin.random(ReplicaDraws(1, 1).block)
    value = ReplicaDraws(1, 1).gamma(gens, np.array([0]), np.array([[2.0]]))[0, 0]
    d = 2.0 - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    for x, u in zip(normals, uniforms, strict=True):  # the first accepted attempt
        v = (1.0 + c * x) ** 3
        if v > 0 and math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
            assert value == pytest.approx(d * v, rel=1e-12)
            break
    else:
        pytest.fail("no attempt accepted in a whole block")


def test_each_replica_reads_only_its_own_generator():
    # replica 1's draws are the same whether it runs alone in rows or beside others, with or
    # without replicas 0 and 2 drawing in between (with different parameters)
    rng = np.random.default_rng(9)
    params = [rng.uniform(1.0, 30.0, size=(3, 6)) for _ in range(400)]
    together = ReplicaDraws(3, 6)
    gens = replica_generators(2, 3)
    alone = ReplicaDraws(3, 6)
    gens_alone = replica_generators(2, 3)
    for p in params:
        both = together.gamma(gens, np.arange(3), p)
        one = alone.gamma(gens_alone, np.array([1]), p[1:2])
        assert both[1].tolist() == one[0].tolist()


def test_saved_state_resumes_the_same_numbers():
    gens = replica_generators(4, 2)
    draws = ReplicaDraws(2, 5)
    a = np.full((2, 5), 3.0)
    draws.beta(gens, np.arange(2), a, a)
    state = draws.state()
    saved_gens = [np.random.Generator(np.random.PCG64()) for _ in gens]
    for g, s in zip(saved_gens, gens, strict=True):
        g.bit_generator.state = s.bit_generator.state
    expected = [draws.beta(gens, np.arange(2), a, a) for _ in range(300)]
    resumed = ReplicaDraws(2, 5)
    resumed.prepare_load(state)()
    got = [resumed.beta(saved_gens, np.arange(2), a, a) for _ in range(300)]
    assert all(np.array_equal(x, y) for x, y in zip(expected, got, strict=True))


def test_refusals():
    draws = ReplicaDraws(2, 3)
    gens = replica_generators(0, 2)
    for bad in (0.5, np.inf, np.nan, 2e15):  # infinity once looped forever (NaN test)
        with pytest.raises(ValueError, match=r"in \[1, 1e\+15\]"):
            draws.gamma(gens, np.arange(2), np.full((2, 3), bad))
    with pytest.raises(ValueError, match="distinct"):
        draws.gamma(gens, np.array([0, 0]), np.ones((2, 3)))
    with pytest.raises(ValueError, match="shape"):
        draws.gamma(gens, np.arange(2), np.ones(3))
    state = draws.state()
    state["draw_uniform"] = np.full_like(state["draw_uniform"], 1.0)
    with pytest.raises(ArgumentError, match="draw_uniform"):
        draws.prepare_load(state)
    state = draws.state()
    state["draw_used"] = np.array([0, draws.block + 1])
    with pytest.raises(ArgumentError, match="draw_used"):
        draws.prepare_load(state)
