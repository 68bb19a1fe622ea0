"""The k-ary tree with negative digits (:mod:`dponline.continual.kary_tree`): the factorisation
B C = M, its sensitivity and variances against materialised matrices, the streaming draws
against the factorisation, blocks, resume, the layout choice."""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass

import numpy as np
import pytest

from dponline.continual import HonakerCounter, KaryTreeCounter, kary_tree, make_counter
from dponline.continual.base import HorizonExceededError
from dponline.continual.calibration import CounterCalibrator
from dponline.continual.kary_tree import (
    _layout_cost,
    kary_column_norms,
    kary_digits,
    kary_factors,
    kary_layout,
    kary_max_column_norm,
)
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.noise import GaussianNoise, LaplaceNoise, NoiseDistribution
from tests.helpers import CountingNoise

LAYOUTS = [None, (3, 1), (3, 2), (3, 4), (5, 2), (7, 3), (13, 3)]


def _cls(layout):
    return KaryTreeCounter if layout is None else KaryTreeCounter.with_layout(*layout)


@dataclass(frozen=True)
class OneHotNoise(NoiseDistribution):
    """Scalar number ``index`` of all draws (in drawing order) is 1, every other is 0."""

    index: int
    drawn: list  # one-element list, mutated: scalars drawn so far

    @property
    def scale(self) -> float:
        return 1.0

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        out = np.zeros(int(np.prod(shape)))
        pos = self.index - self.drawn[0]
        if 0 <= pos < out.size:
            out[pos] = 1.0
        self.drawn[0] += out.size
        return out.reshape(shape)

    def coordinate_variance(self, dim: int) -> float:
        return 1.0

    def scaled(self, factor: float) -> OneHotNoise:
        raise NotImplementedError


def _balanced(t: int, k: int) -> list[int]:
    """Balanced base-k digits of t, lowest first (by repeated division)."""
    digits = []
    while t:
        d = t % k
        if d > k // 2:
            d -= k
        digits.append(d)
        t = (t - d) // k
    return digits


@pytest.mark.parametrize("k", [3, 5, 7, 13])
def test_digits_are_balanced_base_k_with_an_unbounded_top_digit(k):
    t = np.arange(1, 600)
    for h in (1, 2, 3, 6):
        d = kary_digits(t, k, h)
        assert np.array_equal((d * k ** np.arange(h)[:, None]).sum(axis=0), t)
        assert np.all(np.abs(d[:-1]) <= (k - 1) // 2) and np.all(d[-1] >= 0)
    for s in (1, 2, 17, 599):
        ref = _balanced(s, k)
        got = kary_digits(s, k, len(ref) + 1)
        assert list(got[: len(ref)]) == ref and got[-1] == 0


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("T", [1, 2, 7, 20, 61])
def test_the_factorisation_is_exact_and_states_its_norms(layout, T):
    cls = _cls(layout)
    B, C = kary_factors(T, *cls.layout(T))
    assert np.array_equal(B @ C, np.tril(np.ones((T, T))))  # B C = M exactly (integers)
    assert set(np.unique(C)) <= {0.0, 1.0} and set(np.unique(B)) <= {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(cls.strategy_matrix(T), C)
    l1, l2 = cls.sensitivity_factors(T)
    assert l1 == np.abs(C).sum(axis=0).max() <= cls.layout(T)[1]
    assert l2 == pytest.approx(np.sqrt((C**2).sum(axis=0)).max(), rel=1e-15)
    np.testing.assert_array_equal(kary_column_norms(T, *cls.layout(T)), C.sum(axis=0))
    var = cls.release_variances(T, LaplaceNoise(1.5), 3)
    np.testing.assert_allclose(var, 2 * 1.5**2 * (B**2).sum(axis=1), rtol=1e-15)
    counter = cls(T, 3, LaplaceNoise(1.5))
    assert [counter.variance(t) for t in range(T + 1)] == [0.0, *var.tolist()]


@pytest.mark.parametrize("layout", [None, (3, 3), (5, 2), (3, 4)])
def test_the_streamed_noise_is_the_factorisations(layout):
    """Release noise is linear in the draws: feeding one unit draw at a time recovers the map A
    (releases x draws). A is B up to unused draws and the order of its columns: entries in
    {-1, 0, 1} and A A^T = B B^T, so the noise covariance (and, the draws being i.i.d., the
    whole noise distribution) is exactly the factorisation's."""
    cls, T = _cls(layout), 40
    count = [0]
    cls(T, 1, CountingNoise(count)).step_block(np.zeros((T, 1)))
    columns = []
    for i in range(count[0]):
        counter = cls(T, 1, OneHotNoise(i, [0]))
        columns.append(np.array([counter.step([0.0])[0, 0] for _ in range(T)]))
    A = np.stack(columns, axis=1)
    B, _ = kary_factors(T, *cls.layout(T))
    assert set(np.unique(A)) <= {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(A @ A.T, B @ B.T)
    # every used cell is one draw: as many non-zero columns as rows of C
    assert np.count_nonzero(np.abs(A).sum(axis=0)) == B.shape[1]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_without_noise_it_releases_the_prefix_sums_and_keeps_its_stated_state(layout):
    cls = _cls(layout)
    xs = np.random.default_rng(0).uniform(-1, 1, size=(50, 2))
    counter = cls(50, 2, GaussianNoise(0.0), replicas=3)
    out = np.concatenate([counter.step_block(xs[:17]), [counter.step(x) for x in xs[17:]]])
    np.testing.assert_allclose(out, np.cumsum(xs, axis=0)[:, None].repeat(3, 1), atol=1e-12)
    k, h = counter.arity, counter.levels
    floats = sum(a.size for a in counter.state_dict()["arrays"].values())
    assert floats == ((h - 1) * k + 2) * 3 * 2  # O(k log T): (h - 1) groups, top, prefix


@pytest.mark.parametrize("layout", [None, (3, 4), (5, 2)])
@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_blocks_draw_the_same_noise_as_single_steps(layout, chunk, monkeypatch):
    if chunk is not None:  # chunks of about `chunk` rounds: long blocks are split
        monkeypatch.setattr("dponline.continual.kary_tree._BLOCK_FLOATS", chunk * 3 * 2 * 13)
    cls = _cls(layout)
    xs = np.random.default_rng(1).uniform(size=(120, 2))
    a = cls(120, 2, GaussianNoise(1.3), replicas=3, rng=7)
    b = cls(120, 2, GaussianNoise(1.3), replicas=3, rng=7)
    stepped = np.stack([a.step(x) for x in xs])
    blocked = np.concatenate([b.step(xs[0])[None], b.step_block(xs[1:90]), b.step_block(xs[90:])])
    np.testing.assert_allclose(blocked, stepped, rtol=0, atol=1e-10)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa["rng"] == sb["rng"] and sa["t"] == sb["t"] == 120


@pytest.mark.parametrize("cut", [0, 1, 13, 59])
def test_resume_bit_for_bit_and_refuse_another_layout(cut):
    T = 60
    xs = np.random.default_rng(2).uniform(0, 1, size=(T, 3))

    def make():
        return make_counter(
            "kary_tree",
            horizon=T,
            bounds=Box(0, 1, dim=3),
            budget=PrivacyBudget(1.0),
            noise="laplace",
            replicas=2,
            rng=5,
        )

    full = make()
    ref = [full.step(x) for x in xs]
    part = make()
    for x in xs[:cut]:
        part.step(x)
    state = pickle.loads(pickle.dumps(part.state_dict()))
    resumed = make()
    resumed.load_state_dict(state)
    for x, expected in zip(xs[cut:], ref[cut:], strict=True):
        np.testing.assert_array_equal(resumed.step(x), expected)
    other = KaryTreeCounter.with_layout(3, 4)(T, 3, full.noise, replicas=2)
    with pytest.raises(ValueError, match="layout"):
        other.load_state_dict(state)


def test_scale_noise_equals_a_counter_built_with_the_scaled_noise():
    scaled = KaryTreeCounter(30, 2, LaplaceNoise(2.0), replicas=3, rng=4)
    scaled.scale_noise(0.1)
    built = KaryTreeCounter(30, 2, LaplaceNoise(0.2), replicas=3, rng=4)
    xs = np.random.default_rng(3).uniform(size=(30, 2))
    for x in xs:
        np.testing.assert_allclose(scaled.step(x), built.step(x), rtol=1e-12, atol=1e-12)


def test_laplace_releases_have_the_stated_variances():
    # 20,000 replicas: a sample variance of Laplace sums has relative standard error
    # <= sqrt((kurtosis - 1) / R) < 0.015 (a sum's excess kurtosis is at most one draw's, 3);
    # 6 standard errors over 99 rounds fail by chance with probability < 1e-6. A missing or
    # double-counted cell moves a variance by >= 1/18 of it (release digit sums are <= 18).
    T, R = 99, 20_000
    counter = KaryTreeCounter.with_layout(5, 3)(T, 1, LaplaceNoise(0.7), replicas=R, rng=2)
    noise = counter.step_block(np.zeros((T, 1)))[..., 0]
    rel = noise.var(axis=1) / counter.variances() - 1.0
    assert np.abs(rel).max() < 6 * math.sqrt(4.0 / R)
    assert np.abs(noise.mean(axis=1) / np.sqrt(counter.variances() / R)).max() < 6


def test_the_layout_at_T_1024_and_against_honaker():
    assert kary_layout(1024) == (13, 3)
    assert KaryTreeCounter.sensitivity_factors(1024) == (3.0, math.sqrt(3.0))
    # Laplace at epsilon = 1, unit l1 sensitivity: b = 3, 2 b^2 = 18 per cell, 18 cells at most
    kary = KaryTreeCounter.release_variances(1024, LaplaceNoise(3.0), 1)
    assert kary.max() == 324.0
    honaker = HonakerCounter.release_variances(1024, LaplaceNoise(11.0), 1)
    assert honaker.max() == pytest.approx(1404.29, abs=0.01)
    assert kary.max() / honaker.max() <= 0.5  # the target; 0.231 here
    assert kary.mean() / honaker.mean() < 0.25


@pytest.mark.parametrize("layout", [(3, 1), (3, 4), (5, 2), (7, 3)])
def test_chunked_computations_match_the_materialised_matrices(layout, monkeypatch):
    # the horizon-long computations work in chunks of rounds (memory O(T / k)); chunks of 7
    # rounds cut groups, anchors and top cells at every place a chunk boundary can fall
    T = 130
    B, C = kary_factors(T, *layout)
    kary_max_column_norm.cache_clear()
    kary_tree._used_cells.cache_clear()
    monkeypatch.setattr(kary_tree, "_CHUNK", 7)
    try:
        np.testing.assert_array_equal(kary_column_norms(T, *layout), C.sum(axis=0))
        assert kary_max_column_norm(T, *layout) == C.sum(axis=0).max()
        counts = (B**2).sum(axis=1)
        assert _layout_cost(T, *layout) == pytest.approx(
            (
                C.sum(axis=0).max() ** 2 * counts.max(),
                C.sum(axis=0).max() ** 2 * counts.mean(),
                (layout[1] - 1) * layout[0],
            ),
            rel=1e-15,
        )
        var = KaryTreeCounter.with_layout(*layout).release_variances(T, LaplaceNoise(1.0), 1)
        np.testing.assert_allclose(var, 2 * counts, rtol=1e-15)
    finally:
        kary_max_column_norm.cache_clear()
        kary_tree._used_cells.cache_clear()


@pytest.mark.parametrize("T", [10, 64, 1024])
def test_the_layout_is_the_best_of_every_small_one(T):
    best = _layout_cost(T, *kary_layout(T))
    for k in range(3, 50, 2):
        for h in range(1, 8):
            if k ** (h - 1) < 2 * T:  # a top level that some release uses
                assert _layout_cost(T, k, h)[0] >= best[0]


def test_calibration_uses_the_exact_column_norm():
    budget = PrivacyBudget(0.5)
    counter = make_counter(
        "kary_tree", horizon=1024, bounds=Box(0, 1, dim=4), budget=budget, noise="laplace"
    )
    assert counter.noise.b == 3 * 4 / 0.5  # 3 cells per round x l1 diameter 4 / epsilon
    assert counter.privacy.epsilon == 0.5
    gauss = make_counter(
        "kary_tree", horizon=1024, bounds=Box(0, 1, dim=4), budget=PrivacyBudget(1.0, 1e-6)
    )
    assert gauss.noise.sigma > 0


@pytest.mark.parametrize("layout", [None, (3, 3)])
def test_contract_horizon_replicas_and_bad_layouts(layout):
    cls = _cls(layout)
    c = cls(3, 1, GaussianNoise(1.0), rng=0)
    for _ in range(3):
        c.step([0.0])
    with pytest.raises(HorizonExceededError, match="horizon T=3"):
        c.step([0.0])
    out = cls(8, 3, GaussianNoise(1.0), replicas=4, rng=1).step_block(np.zeros((8, 3)))
    assert out.shape == (8, 4, 3) and len({tuple(out[-1, r]) for r in range(4)}) == 4
    per_replica = np.random.default_rng(9).uniform(size=(40, 3, 2))
    out = cls(40, 2, GaussianNoise(0.0), replicas=3).step_block(per_replica)
    np.testing.assert_allclose(out, np.cumsum(per_replica, axis=0), atol=1e-12)
    for bad in (2, 1, 4, True):
        with pytest.raises((ValueError, TypeError), match="arity"):
            KaryTreeCounter.with_layout(bad, 2)
    with pytest.raises(ValueError, match="levels"):
        KaryTreeCounter.with_layout(3, 0)


def test_generalized_gaussian_noise_is_refused():
    """Only Laplace and Gaussian noise have the module's adaptive-input proof."""
    with pytest.raises(ValueError, match="supports noise"):
        CounterCalibrator(KaryTreeCounter, 64, Box(0.0, 1.0, dim=3), "generalized_gaussian", 3.0)


def test_past_the_exact_horizon_the_levels_bound_the_column_norms(monkeypatch):
    """Past EXACT_HORIZON the sensitivity factor is the number of levels, at least the exact
    largest column norm (a round lies in at most one cell per level; equal at these horizons),
    and the layout the bound's best, without the O(T) evaluations (a 10^12-round layout)."""
    import dponline.continual.kary_tree as kary

    exact = {t: kary.kary_max_column_norm(t, *kary.kary_layout(t)) for t in (1000, 5000, 30000)}
    monkeypatch.setattr(kary, "EXACT_HORIZON", 1)
    for t, norm in exact.items():
        layout = kary.kary_layout.__wrapped__(t)
        assert kary.kary_max_column_norm.__wrapped__(t, *layout) == layout[1] >= norm
    arity, levels = kary.kary_layout(10**12)
    assert (
        arity ** (levels - 1) < 2 * 10**12
        and kary.kary_max_column_norm(10**12, arity, levels) == levels
    )
