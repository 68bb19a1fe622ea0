"""The one helper that chooses and builds a learner's counter
(:func:`dponline.continual.factory.build_counter`): exact sums without a budget, the run's
mechanism (never a function of the number of replicas) calibrated to a budget otherwise.
Deterministic: fixed seeds and exact comparisons."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.continual import MECHANISMS, make_counter
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.continual.calibration import CounterCalibrator
from dponline.continual.factory import anytime_counter, build_counter, doubling_counter
from dponline.continual.honaker import HonakerCounter
from dponline.continual.kary_tree import KaryTreeCounter
from dponline.continual.selection import (
    MEMORY_BUDGET,
    best_mechanism,
    choose_mechanism,
    state_bytes,
)
from dponline.continual.unknown_horizon import BlockCalibration
from dponline.online import DPFTRL
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.noise import GaussianNoise, LaplaceNoise


@settings(max_examples=50, deadline=None)
@given(
    horizon=st.integers(1, 40),
    dim=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    block=st.booleans(),
)
def test_exact_sums_are_exact(horizon, dim, seed, block):
    """Integer-valued inputs: every release must equal the running sum exactly (a sum of
    integers below 2^53 is exact in any order), one step at a time or in one block."""
    gen = np.random.default_rng(seed)
    xs = gen.integers(-5, 6, size=(horizon, dim)).astype(float)
    counter = build_counter(None, horizon=horizon, bounds=Box(-5.0, 5.0, dim=dim), rng=seed)
    assert counter.privacy is None and counter.noise == GaussianNoise(0.0)
    if block:
        releases = counter.step_block(xs)[:, 0]
    else:
        releases = np.stack([counter.step(x)[0] for x in xs])
    np.testing.assert_array_equal(releases, np.cumsum(xs, axis=0))
    assert np.all(counter.variances() == 0.0)


def test_exact_sums_keep_the_private_counters_input_contract():
    bounds = Box(0.0, 1.0, dim=2)
    with pytest.raises(ValueError, match=r"1\.5"):
        build_counter(None, horizon=4, bounds=bounds).step([1.5, 0.0])
    clipped = build_counter(None, horizon=4, bounds=bounds, clip=True, replicas=2)
    np.testing.assert_array_equal(clipped.step([1.5, -1.0]), [[1.0, 0.0], [1.0, 0.0]])
    # without bounds (a learner that bounds its inputs itself): the dimension is given
    free = build_counter(None, horizon=3, dim=2)
    np.testing.assert_array_equal(free.step([7.0, -9.0]), [[7.0, -9.0]])


def test_a_budget_gets_the_runs_mechanism_calibrated():
    bounds = Box(0.0, 1.0, dim=3)
    for budget, noise, name in (
        (PrivacyBudget(1.0, 1e-6), "gaussian", "scaled_sqrt"),
        (PrivacyBudget(1.0), "laplace", "kary_tree"),
        (PrivacyBudget(1.0, 1e-6, "paper"), "gaussian", "padded_tree"),
    ):
        counter = build_counter(budget, horizon=16, bounds=bounds, noise=noise, rng=4)
        assert counter.name == name == choose_mechanism(budget.calibration, 16, 3, noise)
        # the same counter, noise and guarantee as the named mechanism's calibration
        named = make_counter(name, horizon=16, bounds=bounds, budget=budget, noise=noise, rng=4)
        assert counter.noise == named.noise and counter.privacy == named.privacy
        np.testing.assert_array_equal(counter.step([1.0, 0.0, 1.0]), named.step([1.0, 0.0, 1.0]))
    # a learner's own calibrator names the mechanism
    budget = PrivacyBudget(1.0, 1e-6)
    calibrator = CounterCalibrator(MECHANISMS["blt"], 16, bounds, "gaussian")
    own = build_counter(budget, horizon=16, bounds=bounds, calibrator=calibrator)
    assert own.name == "blt" and own.privacy == calibrator.tight(budget).guarantee


def test_build_counter_refuses_what_it_cannot_calibrate():
    budget = PrivacyBudget(1.0, 1e-6)
    with pytest.raises(ValueError, match="give bounds"):
        build_counter(budget, horizon=4, dim=2)
    with pytest.raises(ValueError, match="dim or bounds"):
        build_counter(None, horizon=4)
    with pytest.raises(ValueError, match="dim is 3 but bounds has dimension 2"):
        build_counter(None, horizon=4, dim=3, bounds=Box(0.0, 1.0, dim=2))
    calibrator = CounterCalibrator(MECHANISMS["blt"], 4, Box(0.0, 1.0, dim=2), "gaussian")
    with pytest.raises(ValueError, match="mechanism or calibrator, not both"):
        build_counter(budget, horizon=4, dim=2, mechanism="blt", calibrator=calibrator)
    with pytest.raises(TypeError, match="budget must be a PrivacyBudget or None"):
        build_counter(1.0, horizon=4, dim=2)  # type: ignore[arg-type]
    # a caller's calibrator without bounds: nobody would check the inputs, unless the caller
    # says it does (the gradient and batched-loss learners)
    for horizon, cal in ((4, calibrator), (None, lambda n: calibrator)):
        with pytest.raises(ValueError, match="caller_checks_inputs=True"):
            build_counter(budget, horizon=horizon, dim=2, calibrator=cal)
        counter = build_counter(
            budget, horizon=horizon, dim=2, calibrator=cal, caller_checks_inputs=True
        )
        assert counter.privacy is not None
    # the anytime helpers build_counter calls are public too
    with pytest.raises(ValueError, match="caller_checks_inputs=True"):
        anytime_counter(budget, dim=2, bounds=None, calibrator=lambda n: calibrator)

    def block(length):
        return BlockCalibration(
            BinaryTreeCounter, GaussianNoise(1.0), calibrator.tight(budget).guarantee
        )

    with pytest.raises(ValueError, match="caller_checks_inputs=True"):
        doubling_counter(block, dim=2, bounds=None, budget=budget)
    assert doubling_counter(block, dim=2, bounds=None, budget=budget, caller_checks_inputs=True)
    with pytest.raises(ValueError, match="calibration must be 'tight' or 'paper'"):
        choose_mechanism("loose", 4, 2, "gaussian")


def test_a_doubling_block_proving_less_than_the_stream_states_is_refused():
    """The stream states the first block's guarantee (tight); a block function that proves
    less at a later length (DP-FTPL's did: its regret term set the first blocks' noise) is
    refused when that block is built, before it releases anything."""
    budget = PrivacyBudget(1.0, 1e-6)
    calibrator = CounterCalibrator(BinaryTreeCounter, 1, Box(0, 1, dim=2), "gaussian")
    strong = calibrator.tight(PrivacyBudget(0.5, 1e-6)).guarantee  # more than asked
    weak = calibrator.tight(budget).guarantee

    def block(length):
        return BlockCalibration(
            BinaryTreeCounter, GaussianNoise(1.0), strong if length < 4 else weak
        )

    counter = doubling_counter(block, dim=2, bounds=Box(0, 1, dim=2), budget=budget)
    assert counter.privacy.epsilon == pytest.approx(0.5)
    counter.step_block(np.zeros((3, 2)))  # blocks of 1 and 2 rounds
    with pytest.raises(RuntimeError, match="the block of 4 rounds proves epsilon=1"):
        counter.step(np.zeros(2))
    assert counter.t == 3


def test_anytime_dp_ftpl_states_what_every_block_proves():
    """DP-FTPL's anytime blocks take max(regret term, the counter's tight sigma): the stream
    states the counter's tight guarantee, which every block proves (it stated the first
    block's epsilon 7.29 at a request of 8 while the blocks of 4 rounds and more proved 8)."""
    from dponline.online import DPFTPL
    from dponline.online.ftpl import FTPLCalibrator
    from dponline.privacy.calibration import calibrate

    budget = PrivacyBudget(8.0, 1e-6)
    learner = DPFTPL(4, None, budget=budget, rng=0)
    stated = learner.privacy
    assert stated.epsilon == pytest.approx(8.0) and stated.meets_request
    for k in range(12):
        cal = calibrate(FTPLCalibrator(HonakerCounter, 4, 2**k, Box(0, 1, dim=4)), budget).guarantee
        assert cal.epsilon <= stated.epsilon * (1 + 1e-9)
        assert cal.rho <= stated.rho * (1 + 1e-9)
    learner.play_block(np.full((64, 4), 0.5))  # every block up to 64 rounds checked
    assert learner.privacy is stated


class _Stop(Exception):
    """Raised by a counter's constructor in place of allocating its noise."""


def test_the_choice_is_the_runs_not_the_number_of_replicas(monkeypatch):
    """64 experts over 64 rounds: one run's square root holds 65 x 64 floats (33 KB). The choice
    used to count the noise of all replicas together: a BLT above 2,016 replicas and above
    21,845 the binary tree, whose largest release variance is 7.4x the BLT's at T = 64 (42.0
    against 5.71 at unit sensitivity), so a simulation with more seeds ran another mechanism."""
    assert state_bytes("sqrt_factorization", 64, 64) == 65 * 64 * 8
    assert state_bytes("blt", 64, 64, replicas=100_000) > MEMORY_BUDGET  # what the old rule saw
    assert best_mechanism(64, 64, "gaussian") == "scaled_sqrt"
    budget = PrivacyBudget(1.0, 1e-6)
    # one real build at a moderate number of replicas
    built = DPFTRL(64, 64, budget=budget, noise="gaussian", replicas=256, rng=0)
    assert built.counter.name == "scaled_sqrt" and built.counter.replicas == 256

    # 1 and 100,000 replicas: stop every counter's constructor before it allocates
    def stop(self, horizon, dim, noise, **kw):
        raise _Stop(type(self).name, kw["replicas"])

    for cls in MECHANISMS.values():
        monkeypatch.setattr(cls, "__init__", stop)
    for replicas in (1, 100_000):
        with pytest.raises(_Stop) as info:
            DPFTRL(64, 64, budget=budget, noise="gaussian", replicas=replicas, rng=0)
        assert info.value.args == ("scaled_sqrt", replicas)


@pytest.mark.parametrize(
    "mechanism, noise, budget",
    [
        ("honaker", "laplace", PrivacyBudget(1.0)),
        ("blt", "gaussian", PrivacyBudget(1.0, 1e-6)),
        ("binary_tree", "generalized_gaussian", PrivacyBudget(1.0, 1e-3)),
    ],
)
def test_the_tight_noise_before_its_proof_is_the_proven_noise(mechanism, noise, budget):
    """What learners compare candidate counters by (tight_noise) is what tight() then proves:
    the choice among candidates is made before the one proof."""
    bounds = Box(0.0, 1.0, dim=3)
    norm = 3.0 if noise == "generalized_gaussian" else None
    calibrator = CounterCalibrator(MECHANISMS[mechanism], 32, bounds, noise, norm)
    assert calibrator.tight_noise(budget) == calibrator.tight(budget).noise


def test_a_fixed_layout_tree_is_built_as_calibrated():
    """A k-ary tree with a fixed layout shares the name of the default layout: the factory once
    calibrated the fixed one (l1 factor 1) and built the default one (factor 3 at T = 1024),
    three times the stated epsilon. Fixed and anytime horizons alike."""
    fixed = KaryTreeCounter.with_layout(3, 1)
    bounds = Box(0.0, 1.0, dim=1)
    counter = build_counter(
        PrivacyBudget(1.0),
        horizon=1024,
        bounds=bounds,
        calibrator=CounterCalibrator(fixed, 1024, bounds, "laplace"),
    )
    assert type(counter) is fixed
    anytime = build_counter(
        PrivacyBudget(1.0),
        horizon=None,
        bounds=bounds,
        calibrator=lambda n: CounterCalibrator(fixed, n, bounds, "laplace"),
    )
    anytime.step_block(np.zeros((1500, 1)))
    assert type(anytime._block) is fixed


def test_make_counter_takes_its_noise_from_the_budget_unless_told():
    bounds = Box(0.0, 1.0, dim=2)
    with pytest.raises(ValueError, match=r"pure-DP budget .* needs Laplace noise"):
        make_counter(
            "honaker", horizon=10, bounds=bounds, budget=PrivacyBudget(1.0), noise="gaussian"
        )
    for noise in (None, "laplace"):
        laplace = make_counter(
            "honaker", horizon=10, bounds=bounds, budget=PrivacyBudget(1.0), noise=noise
        )
        assert isinstance(laplace.noise, LaplaceNoise) and laplace.privacy.delta == 0
    gaussian = make_counter("honaker", horizon=10, bounds=bounds, budget=PrivacyBudget(1.0, 1e-6))
    assert isinstance(gaussian.noise, GaussianNoise) and gaussian.privacy.delta == 1e-6
    with pytest.raises(TypeError, match=r"bounds must be an input set .* got \(0, 1\)"):
        make_counter("honaker", horizon=10, bounds=(0, 1), budget=PrivacyBudget(1.0))


@pytest.mark.parametrize("mechanism", ["binary_tree", "blt", None])
def test_anytime_counters_give_their_first_n_variances(mechanism):
    """Both anytime counters answer variances(n) (there is no T), equal to variance(t) for
    t = 1..n (a doubling counter had no variances at all)."""
    counter = make_counter(
        mechanism,
        horizon=None,
        bounds=Box(0, 1, dim=2),
        budget=PrivacyBudget(1.0, 1e-6),
        noise="gaussian",
    )
    for n in (1, 2, 37, 64):
        got = counter.variances(n)
        assert got.shape == (n,)
        assert np.allclose(got, [counter.variance(t) for t in range(1, n + 1)], rtol=1e-12)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        counter.variances(0)


@pytest.mark.parametrize(
    ("mechanism", "horizon", "budget"),
    [
        ("sqrt_factorization", 64, PrivacyBudget(1.0, 1e-6)),
        ("kary_tree", 64, PrivacyBudget(1.0, 1e-6)),
        (None, None, PrivacyBudget(1.0, 1e-6, participations=4, min_separation=8)),
        ("binary_tree", None, PrivacyBudget(1.0, 1e-6)),
    ],
    ids=["square-root", "k-ary-tree", "anytime-person", "doubling"],
)
def test_a_counter_whose_noise_is_cut_states_no_guarantee(mechanism, horizon, budget):
    """From a review: after scale_noise(0.01) the counters still stated epsilon 1 (392 is what
    that noise proves for the square root) while learners voided theirs. More noise keeps the
    claim; less voids it (epsilon = inf, rho dropped, the calibrated derivation kept)."""
    counter = make_counter(mechanism, horizon=horizon, bounds=Box(0.0, 1.0, dim=1), budget=budget)
    calibrated = counter.privacy
    counter.scale_noise(2.0)
    assert counter.privacy == calibrated
    counter.scale_noise(0.01)
    assert counter.privacy.epsilon == math.inf and counter.privacy.rho is None
    assert counter.privacy.derivation.endswith(calibrated.derivation)
