"""Input contract (bounds, NaN/inf, clipping) and bit-for-bit resume from state_dict."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dponline.continual import DoublingCounter, make_counter
from dponline.privacy.bounds import Box, NormBall
from dponline.privacy.budget import PrivacyBudget

MECHS = ["binary_tree", "padded_tree", "honaker", "sqrt_factorization", "blt"]


def _make(mech, T=37, **kw):
    kw.setdefault("noise", "gaussian")
    delta = kw.pop("delta", 0.0 if kw["noise"] == "laplace" else 1e-6)
    return make_counter(
        mech,
        horizon=T,
        bounds=Box(-1, 1, dim=3),
        budget=PrivacyBudget(1.0, delta),
        replicas=2,
        rng=123,
        **kw,
    )


@pytest.mark.parametrize("mech", MECHS)
@pytest.mark.parametrize("cut", [0, 1, 13, 36])
def test_resume_continues_the_same_stream_bit_for_bit(mech, cut):
    T = 37
    xs = np.random.default_rng(0).uniform(-1, 1, size=(T, 3))
    full = _make(mech, T)
    ref = [full.step(x) for x in xs]
    first = _make(mech, T)
    for x in xs[:cut]:
        first.step(x)
    state = pickle.loads(pickle.dumps(first.state_dict()))  # survives serialisation
    resumed = _make(mech, T)
    resumed.load_state_dict(state)
    for x, expected in zip(xs[cut:], ref[cut:], strict=True):
        np.testing.assert_array_equal(resumed.step(x), expected)


def test_resume_unknown_horizon_bit_for_bit():
    xs = np.random.default_rng(1).uniform(0, 1, size=(40, 2))

    def mk():
        return make_counter(
            "binary_tree",
            horizon=None,
            bounds=Box(0, 1, dim=2),
            budget=PrivacyBudget(1.0),
            noise="laplace",
            rng=9,
        )

    full = mk()
    ref = [full.step(x) for x in xs]
    part = mk()
    for x in xs[:11]:
        part.step(x)
    state = pickle.loads(pickle.dumps(part.state_dict()))
    resumed = mk()
    resumed.load_state_dict(state)
    for x, expected in zip(xs[11:], ref[11:], strict=True):
        np.testing.assert_array_equal(resumed.step(x), expected)


def test_load_state_rejects_a_different_counter():
    a = _make("binary_tree", 37)
    b = _make("binary_tree", 38)
    with pytest.raises(ValueError, match="horizon"):
        b.load_state_dict(a.state_dict())
    c = _make("honaker", 37)
    with pytest.raises(ValueError, match="mechanism"):
        c.load_state_dict(a.state_dict())


@pytest.mark.parametrize("mech", MECHS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_always_rejected(mech, bad):
    c = _make(mech, clip=True)
    with pytest.raises(ValueError, match="finite"):
        c.step([0.0, bad, 0.0])


@pytest.mark.parametrize("mech", MECHS)
def test_out_of_bounds_rejected_with_value_and_bound(mech):
    c = _make(mech)
    with pytest.raises(ValueError, match=r"1\.5.*\[-1\.0, 1\.0\]"):
        c.step([0.0, 1.5, 0.0])
    assert c.t == 0  # a rejected input does not advance the counter


def test_clipping_when_asked():
    c = make_counter(
        "binary_tree",
        horizon=4,
        bounds=Box(0, 1, dim=2),
        budget=PrivacyBudget(1.0),
        noise="laplace",
        rng=0,
        clip=True,
    )
    c0 = make_counter(
        "binary_tree",
        horizon=4,
        bounds=Box(0, 1, dim=2),
        budget=PrivacyBudget(1.0),
        noise="laplace",
        rng=0,
    )
    np.testing.assert_array_equal(c.step([5.0, -3.0]), c0.step([1.0, 0.0]))


def test_norm_ball_contract_and_diameters():
    ball = NormBall(2.0, 2, dim=4)
    with pytest.raises(ValueError, match="l2 norm"):
        ball.check(np.array([2.0, 1.0, 0.0, 0.0]))
    np.testing.assert_allclose(ball.check(np.array([4.0, 0, 0, 0]), clip=True), [2.0, 0, 0, 0])
    assert ball.diameter(2) == 4.0
    assert ball.diameter(1) == pytest.approx(4.0 * 2.0)  # 2 r sqrt(d)
    assert ball.max_norm("linf") == 2.0
    box = Box(-1, 1, dim=10)
    assert box.diameter(1) == 20.0 and box.max_norm(1) == 10.0
    assert box.diameter(2) == pytest.approx(2 * np.sqrt(10))


def test_shape_errors_name_the_shape():
    c = _make("binary_tree")
    with pytest.raises(ValueError, match=r"shape \(3,\) or \(2, 3\)"):
        c.step(np.zeros(4))
    with pytest.raises(ValueError, match=r"shape \(3,\) or \(2, 3\), got \(\)"):
        c.step(0.5)  # a plain number is one coordinate's value


def test_a_one_coordinate_counter_takes_a_plain_number():
    one = make_counter(
        "binary_tree", horizon=4, bounds=Box(0, 1, dim=1), budget=PrivacyBudget(1.0), rng=0
    )
    twin = make_counter(
        "binary_tree", horizon=4, bounds=Box(0, 1, dim=1), budget=PrivacyBudget(1.0), rng=0
    )
    np.testing.assert_array_equal(one.step(0.5), twin.step([0.5]))
    with pytest.raises(ValueError, match="outside"):
        one.step(2.0)


def test_constructor_validation():
    from dponline.continual import BinaryTreeCounter, SqrtFactorizationCounter
    from dponline.privacy.noise import GaussianNoise, LaplaceNoise

    with pytest.raises(ValueError, match="horizon must be a positive integer"):
        BinaryTreeCounter(0, 1, GaussianNoise(1.0))
    with pytest.raises(TypeError, match="supports"):
        SqrtFactorizationCounter(4, 1, LaplaceNoise(1.0))
    with pytest.raises(TypeError, match="rng"):
        BinaryTreeCounter(4, 1, GaussianNoise(1.0), rng="seed")
    with pytest.raises(ValueError, match="sigma"):
        GaussianNoise(-1.0)


def test_unknown_horizon_never_refuses_and_reports_exact_variance():
    c = make_counter(
        "honaker",
        horizon=None,
        bounds=Box(0, 1, dim=1),
        budget=PrivacyBudget(1.0, 1e-6),
        rng=3,
        replicas=20_000,
    )
    assert isinstance(c, DoublingCounter)
    xs = np.ones((50, 1))
    out = np.stack([c.step(x) for x in xs])[:, :, 0]
    assert c.t == 50
    # unbiased; empirical variance matches the exact one (6 sd: false failure < 1e-7 per t)
    exact = np.array([c.variance(t) for t in range(1, 51)])
    R = out.shape[1]
    assert np.all(np.abs(out.mean(axis=1) - np.arange(1, 51)) < 6 * np.sqrt(exact / R))
    np.testing.assert_allclose(out.var(axis=1), exact, rtol=6 * np.sqrt(2 / R))
    # variance grows with log t: block k's noise is calibrated for its own length
    assert exact[-1] > exact[0]
    assert c.privacy is not None and c.privacy.epsilon == pytest.approx(1.0)


def test_unknown_horizon_guarantee_states_the_doubling_argument():
    import warnings as _w

    from dponline.privacy.guarantee import PrivacyWarning

    c = make_counter(
        "binary_tree",
        horizon=None,
        bounds=Box(0, 1, dim=3),
        budget=PrivacyBudget(0.5),
        noise="laplace",
    )
    assert c.privacy.epsilon == 0.5 and "doubling blocks" in c.privacy.derivation
    # the paper's Laplace formula on a block of length 2: 2 levels but log2(2) = 1 -> 2 eps
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always", PrivacyWarning)
        p = make_counter(
            "binary_tree",
            horizon=None,
            bounds=Box(0, 1, dim=3),
            budget=PrivacyBudget(0.5, 0.0, "paper", allow_weaker=True),
            noise="laplace",
        )
    assert p.privacy.epsilon == pytest.approx(1.0)
    assert any(issubclass(w.category, PrivacyWarning) for w in caught)


def test_state_from_a_differently_calibrated_counter_is_refused():
    """Reusing noise calibrated for a weaker guarantee would void this counter's guarantee."""
    weak = make_counter(
        "sqrt_factorization",
        horizon=16,
        bounds=Box(0, 1, dim=1),
        budget=PrivacyBudget(50.0, 1e-6),
        rng=0,
    )
    strong = make_counter(
        "sqrt_factorization",
        horizon=16,
        bounds=Box(0, 1, dim=1),
        budget=PrivacyBudget(0.1, 1e-6),
        rng=0,
    )
    with pytest.raises(ValueError, match="different noise"):
        strong.load_state_dict(weak.state_dict())
    wide = make_counter(
        "binary_tree",
        horizon=8,
        bounds=Box(0, 100, dim=1),
        budget=PrivacyBudget(1.0),
        noise="laplace",
    )
    narrow = make_counter(
        "binary_tree",
        horizon=8,
        bounds=Box(0, 1, dim=1),
        budget=PrivacyBudget(1.0),
        noise="laplace",
    )
    with pytest.raises(ValueError, match="bounds"):
        narrow.load_state_dict(wide.state_dict())
    a = make_counter(
        "honaker", horizon=None, bounds=Box(0, 1, dim=1), budget=PrivacyBudget(1.0), noise="laplace"
    )
    b = make_counter(
        "honaker", horizon=None, bounds=Box(0, 1, dim=1), budget=PrivacyBudget(2.0), noise="laplace"
    )
    a.step([0.5])
    with pytest.raises(ValueError, match="different guarantee"):
        b.load_state_dict(a.state_dict())


def test_norm_ball_is_exact_and_clipping_lands_inside():
    ball = NormBall(1.0, 1, dim=2)
    with pytest.raises(ValueError, match=r"exceeds 1.0 \(built with clip=True"):
        ball.check(np.array([0.5, 0.5 + 1e-9]))
    # a hair past (rounding: a gradient scaled to unit norm) is clipped into the ball, not
    # refused mid-stream; the value used lies in the ball, so the sensitivity is unchanged
    snapped = ball.check(np.array([0.5, 0.5 + 1e-13]))
    assert np.abs(snapped).sum() <= 1.0
    unit = np.array([0.6, 0.8]) / np.linalg.norm([0.6, 0.8])
    two = NormBall(1.0, 2, dim=2)
    assert np.linalg.norm(two.check(unit / (1 - 2e-16))) <= 1.0
    box = Box(0.0, 1.0, dim=2)
    assert box.check(np.array([1 + 1e-13, -1e-13])).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="outside"):
        box.check(np.array([1 + 1e-9, 0.0]))
    clipped = ball.check(np.array([[3.0, 1e-9], [0.7, 0.7]]), clip=True)
    assert np.all(np.abs(clipped).sum(axis=1) <= 1.0)
    assert ball.check(clipped) is not None


def test_complex_and_degenerate_inputs_are_refused():
    c = _make("binary_tree")
    with pytest.raises(TypeError, match="real"):
        c.step(np.array([0.0, 1j, 0.0]))
    from dponline.continual.calibration import calibrate_counter

    with pytest.raises(ValueError, match="horizon must be a positive integer"):
        calibrate_counter(
            "binary_tree",
            horizon=0,
            bounds=Box(0, 1, dim=1),
            budget=PrivacyBudget(1.0),
            noise="laplace",
        )
    with pytest.raises(ValueError, match="horizon must be a positive integer"):
        calibrate_counter(
            "binary_tree",
            horizon=2.7,
            bounds=Box(0, 1, dim=1),
            budget=PrivacyBudget(1.0),
            noise="laplace",
        )
    with pytest.raises(ValueError, match="zero diameter"):
        calibrate_counter(
            "binary_tree", horizon=4, bounds=Box(1, 1, dim=1), budget=PrivacyBudget(1.0, 1e-6)
        )
