"""Independent privacy checks of the newer counters: the k-ary tree, the smooth binary mechanism,
the rescaled square root, the anytime factorisations (tapered square root, Jacobsen & Fawaz), and
every registered counter's sensitivity when one person contributes several rounds.

Nothing here reuses the counters' own factor computations to check them. The structure of each
counter is read off its *streaming* implementation:

* M (what the releases do with the data) from unit impulses with zero noise;
* B (what the releases do with the noise) by a noise distribution whose n-th draw, in the order
  the counter asks for draws, is the basis vector e_n of R^dim: coordinate n of release t is then
  the weight of draw n in release t.

The mechanism releases M x + B z. If some C has B C = M, the releases are B (C x + z), a
post-processing of C x + z, whose l1 / l2 sensitivity is the largest l1 / l2 column norm of C.
The checks: M is the prefix-sum matrix, B is the class's stated factor up to the order of the
draws (so the class's C applies to the noise the counter really draws), and the claimed factors
are at least C's column norms and at least the exact Gaussian sensitivity of the release
distribution, max_j m_j^T (B B^T)^+ m_j (m_j column j of M), which no valid C can beat.

Then empirical audits (Clopper-Pearson, :mod:`dponline.privacy.audit`) of counters the
``dponline audit`` table does not cover: the anytime counter (not a registered mechanism), and the
k-ary tree and smooth binary mechanism at other horizons and other changed rounds than its
T = 16, round 1. Each must not refute its claim at the calibrated noise and must refute it at a
tenth of that noise.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dponline.continual import make_counter
from dponline.continual.anytime_factorization import (
    AnytimeFactorizationCounter,
    JacobsenFawaz,
    TaperedSqrt,
    make_anytime_counter,
    make_anytime_factorization,
)
from dponline.continual.factory import anytime_counter
from dponline.continual.kary_tree import KaryTreeCounter, kary_factors, kary_layout
from dponline.continual.matrix_factorization import sqrt_coefficients
from dponline.continual.registry import MECHANISMS
from dponline.continual.scaled_sqrt import ScaledSqrtCounter, scaled_sqrt_diagonal
from dponline.continual.smooth_binary import SmoothBinaryCounter, smooth_binary_matrices
from dponline.privacy.audit import audit, counter_sampler
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.noise import GaussianNoise

# --------------------------------------------------------------------------- the probe


class _BasisNoise(GaussianNoise):
    """Draw n (in the order the counter asks) is e_n of R^dim; one replica. Not a real noise:
    a probe of which draws each release adds, and with which weight."""

    def sample(self, rng, shape):  # type: ignore[no-untyped-def]
        out = np.zeros(shape)
        flat = out.reshape(-1, shape[-2], shape[-1])
        for row in flat:
            n = self._drawn[0]
            self._drawn[0] += 1
            assert n < shape[-1], "the probe's dimension is too small for the draws"
            row[0, n] = 1.0
        return out

    def scaled(self, factor: float) -> GaussianNoise:
        return self


def _probe() -> _BasisNoise:
    noise = _BasisNoise(1.0)
    object.__setattr__(noise, "_drawn", [0])
    return noise


def _run(counter, xs: np.ndarray, block: bool) -> np.ndarray:  # type: ignore[no-untyped-def]
    if block:
        return counter.step_block(xs)[:, 0, :]
    return np.array([counter.step(x)[0] for x in xs])


def _impulses(cls, horizon: int, block: bool) -> np.ndarray:  # type: ignore[no-untyped-def]
    """M read off the counter: coordinate j of the input is a unit impulse at round j (x_t =
    e_t in R^T), no noise (all draws zero); coordinate j of release t is then M[t, j]."""
    return _run(cls(horizon, horizon, GaussianNoise(0.0)), np.eye(horizon), block)


def _noise_map(cls, horizon: int, block: bool) -> tuple[np.ndarray, int]:  # type: ignore[no-untyped-def]
    """B read off the counter (releases x draws), and the number of draws made."""
    noise = _probe()
    width = 6 * horizon + 64
    b = _run(cls(horizon, width, noise), np.zeros((horizon, width)), block)
    return b[:, : noise._drawn[0]], noise._drawn[0]


def _same_columns(b_emp: np.ndarray, b_cls: np.ndarray) -> bool:
    """The draws that enter some release are the class's columns, in some order."""
    used = b_emp[:, np.abs(b_emp).sum(axis=0) > 0]
    if used.shape[1] != b_cls.shape[1]:
        return False
    return sorted(map(tuple, used.T.round(9))) == sorted(map(tuple, b_cls.T.round(9)))


def _gaussian_sensitivity(m: np.ndarray, b: np.ndarray) -> float:
    """max_j sqrt(m_j^T (B B^T)^+ m_j): the exact l2 sensitivity of N(M x, B B^T) to one round
    (each column of M lies in B's range here, checked)."""
    gram = b @ b.T
    resid = m - b @ np.linalg.lstsq(b, m, rcond=None)[0]
    assert np.abs(resid).max() < 1e-9
    q = np.linalg.pinv(gram, rcond=1e-12)
    return float(np.sqrt(np.max(np.einsum("ij,ik,kj->j", m, q, m))))


def _factors_of(cls, horizon: int):  # type: ignore[no-untyped-def]
    if issubclass(cls, KaryTreeCounter):
        return kary_factors(horizon, *cls.layout(horizon))
    if cls is SmoothBinaryCounter:
        return smooth_binary_matrices(horizon)
    assert cls is ScaledSqrtCounter
    c = sqrt_coefficients(horizon)
    lags = np.subtract.outer(np.arange(horizon), np.arange(horizon))
    root = np.where(lags >= 0, c[np.clip(lags, 0, None)], 0.0)
    d = scaled_sqrt_diagonal(horizon)
    return root * d[None, :], root / d[:, None]


HORIZONS = (1, 2, 3, 5, 13, 14, 27, 28, 40, 41)
#: more horizons, up to three levels of the k-ary tree's own layout (slow: T^2 steps each)
SLOW_HORIZONS = (82, 121, 250, 1000)
NEW_COUNTERS = (
    KaryTreeCounter,
    KaryTreeCounter.with_layout(3, 3),
    KaryTreeCounter.with_layout(5, 2),
    SmoothBinaryCounter,
    ScaledSqrtCounter,
)


def _check_streaming(cls, block: bool, horizons: tuple[int, ...]) -> None:  # type: ignore[no-untyped-def]
    for horizon in horizons:
        prefix = np.tril(np.ones((horizon, horizon)))
        big_b, big_c = _factors_of(cls, horizon)
        np.testing.assert_allclose(big_b @ big_c, prefix, atol=1e-12)
        np.testing.assert_allclose(_impulses(cls, horizon, block), prefix, atol=1e-12)
        b_emp, _ = _noise_map(cls, horizon, block)
        assert _same_columns(b_emp, big_b), (cls.__name__, horizon)
        l1, l2 = cls.sensitivity_factors(horizon)
        assert l1 >= np.abs(big_c).sum(axis=0).max() - 1e-12, (cls.__name__, horizon)
        assert l2 >= np.sqrt((big_c**2).sum(axis=0).max()) - 1e-12, (cls.__name__, horizon)
        assert l2 >= _gaussian_sensitivity(prefix, b_emp) * (1 - 1e-9), (cls.__name__, horizon)
        # the strategy matrix user-level sensitivities read is that C
        strategy = cls.strategy_matrix(horizon)
        assert sorted(map(tuple, strategy.round(12))) == sorted(map(tuple, big_c.round(12)))


@pytest.mark.parametrize("cls", NEW_COUNTERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("block", [False, True], ids=["step", "step_block"])
def test_streaming_noise_is_the_stated_factorisation(cls, block):  # type: ignore[no-untyped-def]
    _check_streaming(cls, block, HORIZONS)


@pytest.mark.slow
@pytest.mark.parametrize("cls", NEW_COUNTERS, ids=lambda c: c.__name__)
def test_streaming_noise_is_the_stated_factorisation_long(cls):  # type: ignore[no-untyped-def]
    _check_streaming(cls, False, SLOW_HORIZONS[:-1])
    _check_streaming(cls, True, SLOW_HORIZONS[-1:])


def test_kary_layouts_used_are_multi_level():
    # the horizons above reach layouts with two and three levels and a top digit that grows
    assert {kary_layout(t)[1] for t in HORIZONS} == {1, 2}
    assert {kary_layout(t)[1] for t in SLOW_HORIZONS} >= {2, 3}
    assert {KaryTreeCounter.with_layout(3, 3).layout(t)[1] for t in HORIZONS} == {3}
    assert KaryTreeCounter.sensitivity_factors(40)[0] == 2.0


# --------------------------------------------------------------------------- anytime: structure


def _toeplitz(first: np.ndarray) -> np.ndarray:
    lags = np.subtract.outer(np.arange(first.size), np.arange(first.size))
    return np.where(lags >= 0, first[np.clip(lags, 0, None)], 0.0)


def _anytime_noise_map(horizon: int, mode: str, strategy=None) -> tuple[np.ndarray, int]:  # type: ignore[no-untyped-def]
    noise = _probe()
    width = 2 * horizon + 2
    counter = AnytimeFactorizationCounter(width, noise, strategy=strategy)
    zeros = np.zeros((horizon, width))
    rows = []
    if mode == "step":
        rows = [counter.step(x)[0] for x in zeros]
    elif mode == "block":
        rows = list(counter.step_block(zeros)[:, 0, :])
    elif mode == "mixed":
        sizes = itertools.cycle((1, 3, 2, 7, 1, 5))
        s = 0
        while s < horizon:
            b = min(next(sizes), horizon - s)
            rows += list(counter.step_block(zeros[s : s + b])[:, 0, :])
            s += b
    else:  # save and resume into a fresh counter every third round
        for s, x in enumerate(zeros):
            if s % 3 == 1:
                fresh = AnytimeFactorizationCounter(width, noise, strategy=strategy)
                fresh.load_state_dict(counter.state_dict())
                counter = fresh
            rows.append(counter.step(x)[0])
    return np.array(rows), noise._drawn[0]


@pytest.mark.parametrize("mode", ["step", "block", "mixed", "resume"])
@pytest.mark.parametrize("strategy", [TaperedSqrt(), JacobsenFawaz()], ids=repr)
def test_anytime_noise_is_l_times_fresh_draws(mode, strategy):  # type: ignore[no-untyped-def]
    for horizon in (1, 2, 3, 4, 5, 8, 17, 64, 100):
        b_emp, drawn = _anytime_noise_map(horizon, mode, strategy)
        # draws are made in doubling chunks: 2^(m+1) - 1 after t in [2^m, 2^(m+1))
        assert drawn == 2 ** horizon.bit_length() - 1
        l_coef = strategy.l_coefficients(horizon)
        np.testing.assert_allclose(b_emp[:, :horizon], _toeplitz(l_coef), atol=1e-13)
        # (FFT rounding leaves ~1e-17 of later draws in earlier releases: noise, not data)
        assert np.abs(b_emp[:, horizon:]).max(initial=0.0) < 1e-13, "a later round's draw"


@pytest.mark.parametrize("strategy", [TaperedSqrt(), JacobsenFawaz()], ids=repr)
def test_anytime_l_times_r_is_the_prefix_sum_matrix(strategy):  # type: ignore[no-untyped-def]
    # (1 - z) l(z) r(z) = 1, i.e. sum_{i<=t} l_i r_{t-i} = 1 for every t: L R = M at every size
    n = 2**16
    r, l_coef = strategy.r_coefficients(n), strategy.l_coefficients(n)
    from scipy import signal

    assert np.abs(signal.fftconvolve(r, l_coef)[:n] - 1.0).max() < 1e-12
    assert np.abs(np.convolve(r[:3000], l_coef[:3000])[:3000] - 1.0).max() < 1e-13
    assert r[0] == pytest.approx(1.0, abs=1e-14)


def _tapered_bounds(strategy: TaperedSqrt, terms: int) -> tuple[float, float]:
    """(lower, upper) on sum_k r_k^2, computed independently: c_k^2 by the ratio recurrence in
    extended precision over ``terms`` terms, then the class docstring's tail bounds from there."""
    k = np.arange(1, terms, dtype=np.longdouble)
    c = np.concatenate([[np.longdouble(1)], np.cumprod((2 * k - 1) / (2 * k))])
    u = np.log1p(np.arange(terms, dtype=np.longdouble))
    a, p, b, q = (np.longdouble(v) for v in (strategy.a, strategy.p, strategy.b, strategy.q))
    mid = (a / np.maximum(u, a)) ** p
    tail = (a / b) ** p * (b / np.maximum(u, b)) ** (1 + q)
    w = np.where(u <= a, 1, np.where(u <= b, mid, tail))
    partial = np.sum(c * c * w)
    v = np.log1p(np.longdouble(terms))
    assert v >= b
    integral = (a / b) ** p * b ** (1 + q) * v ** (-q) / q
    pi = np.longdouble(math.pi)
    first = (a / b) ** p * (b / v) ** (1 + q) / (pi * terms)
    return float(partial + integral / pi), float(partial + first + (1 + 1 / terms) * integral / pi)


def test_tapered_sensitivity_bounds_the_infinite_column_fast():
    # sum_k r_k^2 >= (partial sum to 2^20) + the proven lower tail: the calibrated Delta^2 must
    # not be below it
    s = TaperedSqrt()
    lower, upper = _tapered_bounds(s, 2**20)
    delta_sq = s.sensitivity() ** 2
    assert delta_sq >= lower
    assert delta_sq <= upper * (1 + 1e-6)  # and not needlessly far above
    assert AnytimeFactorizationCounter(1, GaussianNoise(1.0)).sensitivity_factor == s.sensitivity()


@pytest.mark.slow
def test_tapered_sensitivity_bounds_the_infinite_column_2_pow_24():
    # the same with 2^24 terms summed in extended precision (about 20 s): the claimed Delta^2
    # = 4.3628162 is above this lower bound, 4.36281584, by 7.6e-8 (relative), and the bounds
    # at 2^24 are 1.6e-8 apart
    s = TaperedSqrt()
    lower, upper = _tapered_bounds(s, 2**24)
    assert s.sensitivity() ** 2 >= lower
    assert upper - lower < 1e-7
    for params in [(3.0, 1.0, 8.0, 1.0), (4.69, 0.0, 4.69, 0.5), (2.0, 2.0, 12.0, 3.0)]:
        other = TaperedSqrt(*params)
        assert other.sensitivity() ** 2 >= _tapered_bounds(other, 2**21)[0], params


# --------------------------------------------------------------------------- anytime: noise law


def test_anytime_release_noise_has_the_stated_covariance():
    """The releases' noise, whitened by L^-1, must be i.i.d. N(0, sigma^2) with sigma the
    calibrated one: through step, step_block of odd lengths and a save/resume mid-chunk (a
    redrawn or reused draw would show as a wrong variance or a correlation).

    Fixed seed, n = 20,000 runs, T = 40 (chunks 1, 2, 4, ..., 32). Each of the 820 entries of
    the whitened sample covariance / sigma^2 has standard error sqrt(1/n) (off the diagonal)
    or sqrt(2/n) (on it); the test fails beyond 6 standard errors: chance of a false failure
    below 820 x 2e-9 < 2e-6."""
    budget = PrivacyBudget(1.0, 1e-6)
    bounds = Box(0.0, 1.0, dim=1)
    n, horizon = 20_000, 40
    counter = make_anytime_counter(bounds, budget, replicas=n, rng=2024)
    sigma = counter.noise.sigma
    data = np.random.default_rng(7).random((horizon, 1))
    out = [counter.step_block(data[:5]), counter.step(data[5])[None]]
    state = counter.state_dict()
    resumed = make_anytime_counter(bounds, budget, replicas=n, rng=99)
    resumed.load_state_dict(state)
    out += [resumed.step_block(data[6:13]), resumed.step_block(data[13:31])]
    out += [resumed.step(x)[None] for x in data[31:]]
    releases = np.concatenate(out)[:, :, 0]  # (T, n)
    noise = releases - np.cumsum(data[:, 0])[:, None]
    big_l = _toeplitz(TaperedSqrt().l_coefficients(horizon))
    white = np.linalg.solve(big_l, noise) / sigma  # should be i.i.d. N(0, 1)
    cov = white @ white.T / n
    se = np.where(np.eye(horizon, dtype=bool), math.sqrt(2 / n), math.sqrt(1 / n))
    z = (cov - np.eye(horizon)) / se
    assert np.abs(z).max() < 6.0, float(np.abs(z).max())
    # the variances the counter states are those of its releases: sigma^2 sum_{k<t} l_k^2
    stated = np.array([resumed.variance(t) for t in range(1, horizon + 1)])
    np.testing.assert_allclose(stated, sigma**2 * (big_l**2).sum(axis=1), rtol=1e-12)


def test_anytime_resume_and_blocks_are_bit_identical():
    budget = PrivacyBudget(1.0, 1e-6)
    bounds = Box(0.0, 1.0, dim=2)
    data = np.random.default_rng(3).random((70, 2))
    ref = make_anytime_counter(bounds, budget, replicas=3, rng=11)
    want = np.array([ref.step(x) for x in data])
    for cut in (1, 2, 3, 7, 8, 33, 64):
        c = make_anytime_counter(bounds, budget, replicas=3, rng=11)
        first = c.step_block(data[:cut])
        fresh = make_anytime_counter(bounds, budget, replicas=3, rng=12345)
        fresh.load_state_dict(c.state_dict())
        rest = fresh.step_block(data[cut:])
        np.testing.assert_array_equal(np.concatenate([first, rest]), want)


def test_anytime_counter_of_the_factory_is_the_tapered_square_root():
    c = anytime_counter(PrivacyBudget(1.0, 1e-6), dim=1, bounds=Box(0.0, 1.0, dim=1))
    assert isinstance(c, AnytimeFactorizationCounter)
    assert isinstance(c.strategy, TaperedSqrt)
    # a person-level budget is given the person's bound (tests/continual/test_anytime_person.py),
    # never the factorisation's one-round proof
    person = PrivacyBudget(1.0, 1e-6, participations=2, min_separation=3)
    for built in (
        make_anytime_counter(Box(0.0, 1.0, dim=1), person),
        anytime_counter(person, dim=1, bounds=Box(0.0, 1.0, dim=1)),
    ):
        assert (built.privacy.participations, built.privacy.min_separation) == (2, 3)
        assert built.noise.sigma > c.noise.sigma


# --------------------------------------------------------------------------- audits


def _audit(factory, claim, a: np.ndarray, b: np.ndarray, seed: int):  # type: ignore[no-untyped-def]
    return audit(
        counter_sampler(factory),
        a,
        b,
        claim=claim,
        trials=20_000,
        pilot_trials=5_000,
        alpha=1e-3,
        rng=seed,
    )


def _streams(horizon: int, changed: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.zeros((horizon, 1))
    b = a.copy()
    b[changed, 0] = 1.0  # one round moved across the whole input set [0, 1]
    return a, b


# Each "not refuted" case below is a true claim: the audit refutes a true claim with probability
# at most alpha = 1e-3 (Clopper-Pearson), and the seeds are fixed. Each "refuted" case has a
# tenth of the calibrated noise; its lower bound (seed as given) sits far above the claim of 1.

ANYTIME_CASES = [
    ("tapered", 16, 0),
    pytest.param("tapered", 16, 15, marks=pytest.mark.slow),
    pytest.param("tapered", 33, 0, marks=pytest.mark.slow),
    pytest.param("jacobsen_fawaz", 16, 0, marks=pytest.mark.slow),
]


def _anytime_ref(kind: str):  # type: ignore[no-untyped-def]
    bounds, budget = Box(0.0, 1.0, dim=1), PrivacyBudget(1.0, 1e-5)
    if kind == "tapered":
        return make_anytime_counter(bounds, budget)
    return make_anytime_factorization(bounds, budget)


@pytest.mark.parametrize(("kind", "horizon", "changed"), ANYTIME_CASES)
def test_anytime_counter_audit(kind, horizon, changed):  # type: ignore[no-untyped-def]
    ref = _anytime_ref(kind)
    a, b = _streams(horizon, changed)
    results = {}
    for fraction in (1.0, 0.1):
        noise = ref.noise.scaled(fraction)

        def factory(replicas, rng, noise=noise, strategy=ref.strategy):  # type: ignore[no-untyped-def]
            return AnytimeFactorizationCounter(
                1, noise, strategy=strategy, replicas=replicas, rng=rng
            )

        results[fraction] = _audit(factory, ref.privacy, a, b, seed=5)
    assert not results[1.0].any_refuted, str(results[1.0])
    assert results[0.1].refuted, str(results[0.1])


@pytest.mark.parametrize(
    ("horizon", "changed"), [(16, 0), pytest.param(16, 15, marks=pytest.mark.slow)]
)
def test_anytime_blt_audit(horizon, changed):  # type: ignore[no-untyped-def]
    """The BLT without a horizon (ours): its claim for one round at every prefix is not
    refuted; a tenth of its noise is."""
    from dponline.continual.anytime_blt import AnytimeBLTCounter, make_anytime_blt

    ref = make_anytime_blt(Box(0.0, 1.0, dim=1), PrivacyBudget(1.0, 1e-5))
    a, b = _streams(horizon, changed)
    results = {}
    for fraction in (1.0, 0.1):
        noise = ref.noise.scaled(fraction)

        def factory(replicas, rng, noise=noise, params=ref.parameters):  # type: ignore[no-untyped-def]
            return AnytimeBLTCounter(1, noise, parameters=params, replicas=replicas, rng=rng)

        results[fraction] = _audit(factory, ref.privacy, a, b, seed=5)
    assert not results[1.0].any_refuted, str(results[1.0])
    assert results[0.1].refuted, str(results[0.1])


def _kary_worst_round(horizon: int) -> int:
    from dponline.continual.kary_tree import kary_column_norms

    return int(np.argmax(kary_column_norms(horizon, *kary_layout(horizon))))


_slow = pytest.mark.slow
FIXED_CASES = [
    ("kary_tree", "laplace", 40, None),  # two levels: the round with the largest column
    pytest.param("kary_tree", "laplace", 40, 39, marks=_slow),
    pytest.param("kary_tree", "gaussian", 40, None, marks=_slow),
    ("smooth_binary", "gaussian", 13, 12),
    pytest.param("smooth_binary", "gaussian", 13, 0, marks=_slow),
    pytest.param("smooth_binary", "laplace", 13, 6, marks=_slow),
    pytest.param("scaled_sqrt", "gaussian", 27, 26, marks=_slow),
]


@pytest.mark.parametrize(("name", "noise", "horizon", "changed"), FIXED_CASES)
def test_new_counter_audit(name, noise, horizon, changed):  # type: ignore[no-untyped-def]
    if changed is None:
        changed = _kary_worst_round(horizon)
    delta = 0.0 if noise == "laplace" else 1e-5
    ref = make_counter(
        name,
        horizon=horizon,
        bounds=Box(0.0, 1.0, dim=1),
        budget=PrivacyBudget(1.0, delta),
        noise=noise,
    )
    cls = MECHANISMS[name]
    a, b = _streams(horizon, changed)
    results = {}
    for fraction in (1.0, 0.1):
        scaled = ref.noise.scaled(fraction)

        def factory(replicas, rng, scaled=scaled):  # type: ignore[no-untyped-def]
            return cls(horizon, 1, scaled, replicas=replicas, rng=rng)

        results[fraction] = _audit(factory, ref.privacy, a, b, seed=3)
    assert not results[1.0].any_refuted, str(results[1.0])
    assert results[0.1].refuted, str(results[0.1])


# --------------------------------------------------------------------------- one person


def _patterns(horizon: int, k: int, b: int):  # type: ignore[no-untyped-def]
    """Every non-empty set of at most k rounds of range(horizon), pairwise >= b apart (own
    recursion, not the library's enumeration)."""

    def grow(start: int, left: int):  # type: ignore[no-untyped-def]
        for i in range(start, horizon):
            yield (i,)
            if left > 1:
                for rest in grow(i + b, left - 1):
                    yield (i, *rest)

    yield from grow(0, k)


def _person_brute(c: np.ndarray, k: int, b: int) -> tuple[float, float]:
    """max over patterns and signs of ||sum_i s_i C_i|| in l1 and l2: scalar inputs in [0, 1]
    (the worst case needs no other directions for these nonnegative Gram matrices, and any
    direction gives a lower bound on the true sensitivity)."""
    best1 = best2 = 0.0
    for rounds in _patterns(c.shape[1], k, b):
        cols = c[:, list(rounds)]
        for signs in itertools.product((1.0, -1.0), repeat=len(rounds) - 1):
            v = cols @ np.array((1.0, *signs))
            best1, best2 = max(best1, float(np.abs(v).sum())), max(best2, float(v @ v))
    return best1, math.sqrt(best2)


#: (k, b): b = 1, k above T / b (k_eff = ceil(T / b) < k), b above T
PERSON_PATTERNS = [(2, 1), (2, 4), (3, 2), (3, 5), (4, 3), (12, 1), (12, 5), (5, 12)]


def _check_person(name: str, horizons: tuple[int, ...]) -> None:
    cls = MECHANISMS[name]
    for horizon in horizons:
        for k, b in PERSON_PATTERNS:
            if horizon == 11 and b * (k - 1) < 11 and k > 3:
                continue  # 2^10 patterns x 2^(k-1) signs: covered at T = 8
            c = cls.participation_strategy_matrix(horizon, k, b)
            got = cls.participation_sensitivity_factors(horizon, k, b)
            l1, l2 = _person_brute(c, k, b)
            assert got.l1 >= l1 * (1 - 1e-9), (name, horizon, k, b, got, l1)
            assert got.l2 >= l2 * (1 - 1e-9), (name, horizon, k, b, got, l2)
            if got.l2_exact:
                assert got.l2 == pytest.approx(l2, rel=1e-9), (name, horizon, k, b)


@pytest.mark.parametrize(
    "name", [n if n != "blt" else pytest.param(n, marks=pytest.mark.slow) for n in MECHANISMS]
)
def test_person_sensitivity_is_at_least_brute_force(name):  # type: ignore[no-untyped-def]
    _check_person(name, (1, 2, 5, 6))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_person_sensitivity_is_at_least_brute_force_longer(name):  # type: ignore[no-untyped-def]
    _check_person(name, (8, 11))


@pytest.mark.parametrize("name", ["blt", "kary_tree", "smooth_binary", "scaled_sqrt"])
def test_person_calibration_covers_the_counter_it_builds(name):  # type: ignore[no-untyped-def]
    """The counter make_counter builds for a person-level budget, read off its streaming noise
    (B square and invertible, or the class's factors): its person sensitivity by brute force is
    at most the factor the calibration charged."""
    horizon, k, b = 11, 3, 3
    budget = PrivacyBudget(1.0, 1e-6, participations=k, min_separation=b)
    noise = "gaussian"
    counter = make_counter(
        name, horizon=horizon, bounds=Box(0.0, 1.0, dim=1), budget=budget, noise=noise
    )
    assert counter.privacy.participations == k and counter.privacy.min_separation == b
    cls = type(counter)
    probe = _probe()
    width = 6 * horizon + 64
    kwargs = {"parameters": counter.parameters} if name == "blt" else {}
    built = cls(horizon, width, probe, **kwargs)
    b_emp = _run(built, np.zeros((horizon, width)), False)[:, : probe._drawn[0]]
    prefix = np.tril(np.ones((horizon, horizon)))
    if b_emp.shape[1] == horizon:
        c = np.linalg.solve(b_emp, prefix)
    else:
        big_b, c = _factors_of(cls, horizon)
        assert _same_columns(b_emp, big_b)
    _, l2 = _person_brute(c, k, b)
    charged = cls.participation_sensitivity_factors(horizon, k, b).l2
    assert charged >= l2 * (1 - 1e-9), (name, charged, l2)
    sigma = counter.noise.sigma
    from dponline.privacy.accounting import gaussian_sigma

    assert sigma >= gaussian_sigma(l2, 1.0, 1e-6) * (1 - 1e-9)
