"""The batch-learner adapter (:mod:`dponline.stochastic.batch_learner`) over the three batch
baselines of Han et al. App. C (NoisySFW, noisy SGD, LocalMD), and the l_p geometry rule of the
sample learners. Every random test uses fixed seeds and compares exact numbers, so none of them
can fail by chance."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from dponline.domains.lp_ball import LpBall, dual_exponent
from dponline.environments.streams import LinearRegressionStream
from dponline.experiments.checkpoints import load_state, save_state
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyWarning
from dponline.protocol import Learner, SampleFeedback
from dponline.registry import NON_PRIVATE, build_learner, learners
from dponline.stochastic import local_md, noisy_sfw, noisy_sgd
from dponline.stochastic.batch_learner import BatchLearner, cached_plan
from dponline.stochastic.local_md import LocalMDPlan
from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe
from dponline.stochastic.noisy_sfw import NoisySFWPlan
from dponline.stochastic.noisy_sgd import NoisySGDPlan

FUNCTIONS = {"noisy-sfw": noisy_sfw, "noisy-sgd": noisy_sgd, "local-md": local_md}


def regression(horizon: int, dim: int = 3, seed: int = 0) -> LinearRegressionStream:
    return LinearRegressionStream(np.r_[0.5, -0.3, np.zeros(dim - 2)], horizon, rng=seed)


def build(name: str, env, *, calibration="paper", replicas=3, rng=7, **options):
    """The catalogue's learner at epsilon = 1 when private (a paper calibration may prove less:
    allowed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return build_learner(
            name,
            env,
            epsilon=1.0 if learners()[name].private else None,
            calibration=calibration,
            allow_weaker=True,
            replicas=replicas,
            rng=rng,
            **options,
        )


def batch_fit(name: str, env, x, y, *, calibration="paper", runs=3, rng=7, p=1.5, **kw):
    """The batch function on the same dataset and settings as :func:`build`'s learner."""
    q = 1.0 if name == "noisy-sgd" else dual_exponent(p)
    kw.setdefault("step_scales", (1.0,))
    if name != "noisy-sgd":
        kw["p"] = p
    budget = PrivacyBudget(1.0, 1.0 / x.shape[0], calibration, allow_weaker=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return FUNCTIONS[name](
            x,
            y,
            x_bound=env.x_bound(q),
            y_bound=env.y_bound,
            budget=budget,
            runs=runs,
            rng=rng,
            **kw,
        )


def feed(learner, x, y, rounds=None) -> list[np.ndarray]:
    """Act and observe the given rounds (all by default); the actions played."""
    played = []
    for t in range(len(x)) if rounds is None else rounds:
        played.append(learner.act())
        learner.observe(SampleFeedback(x[t], y[t]))
    return played


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("seed", [0, 11])
def test_the_final_output_is_the_batch_function_bit_for_bit(name, seed):
    env = regression(6, dim=3, seed=seed)
    x, y = env.sample(6)
    learner = build(name, env, rng=seed, step_scale=3.0)
    assert isinstance(learner, Learner) and isinstance(learner, BatchLearner)
    played = feed(learner, x, y)
    fit = batch_fit(name, env, x, y, rng=seed, step_scales=(3.0,))
    final = learner.act()
    assert final.shape == (3, 3) and final.tobytes() == fit.theta[:, 0].tobytes()
    assert learner.output.tobytes() == final.tobytes()
    # what it played before sample n: the start point 0 of every baseline, for every replica
    assert all(np.array_equal(a, np.zeros((3, 3))) for a in played)
    # the guarantee, known before any data, is the batch function's
    assert learner.privacy.epsilon == fit.privacy.epsilon
    assert learner.privacy.delta == fit.privacy.delta == 1 / 6
    assert learner.privacy.neighbouring is Neighbouring.ONE_SAMPLE
    assert fit.privacy.derivation in learner.privacy.derivation
    assert "batch-learner adapter" in learner.privacy.derivation


def test_tight_calibration_and_a_generator_seed_match_too():
    env = regression(4, dim=2, seed=3)
    x, y = env.sample(4)
    for name in sorted(FUNCTIONS):
        learner = build(name, env, calibration="tight", rng=np.random.default_rng(5))
        feed(learner, x, y)
        fit = batch_fit(name, env, x, y, calibration="tight", rng=np.random.default_rng(5))
        assert learner.act().tobytes() == fit.theta[:, 0].tobytes(), name
        assert learner.privacy.epsilon <= 1.0 + 1e-9


def test_sample_after_the_last_and_observe_without_act_are_refused():
    env = regression(4, dim=2)
    x, y = env.sample(5)
    learner = build("noisy-sfw", env)
    with pytest.raises(ValueError, match="must follow act"):
        learner.observe(SampleFeedback(x[0], y[0]))
    learner.act()
    learner.act()  # twice without observing: the same release
    feed(learner, x[:4], y[:4], rounds=range(4))
    final = learner.act()
    np.testing.assert_array_equal(learner.act(), final)  # act() after the last sample is allowed
    before = learner.state_dict()
    with pytest.raises(ValueError, match="built for 4 samples; sample 5"):
        learner.observe(SampleFeedback(x[4], y[4]))
    assert learner.state_dict()["t"] == before["t"] == 4
    np.testing.assert_array_equal(learner.act(), final)


def test_out_of_bounds_and_nan_samples_are_refused_with_the_state_untouched():
    env = regression(4, dim=3)
    x, y = env.sample(4)
    learner = build("local-md", env)
    feed(learner, x[:2], y[:2], rounds=range(2))
    learner.act()
    before = learner.state_dict()
    bound = env.x_bound(3.0)  # p = 1.5: ||x||_3 <= 3^(1/3)
    with pytest.raises(ValueError, match=r"\|\|x\|\|_3 = 3\.0 \(bound 1\.44"):
        learner.observe(SampleFeedback(np.array([3.0, 0.0, 0.0]), 0.1))
    with pytest.raises(ValueError, match=r"\|y\| = 9\.5 \(bound 0\.9"):
        learner.observe(SampleFeedback(x[2], 9.5))
    with pytest.raises(ValueError, match="finite"):
        learner.observe(SampleFeedback(np.array([np.nan, 0.0, 0.0]), 0.1))
    state = learner.state_dict()
    assert state["t"] == before["t"] == 2 and state["acted"]
    np.testing.assert_array_equal(state["x"], before["x"])
    assert state["rng"] == before["rng"]
    # with clip=True the sample is mapped into the bounds (and NaN is still refused)
    clipping = build("local-md", env, clip=True)
    feed(clipping, x[:2], y[:2], rounds=range(2))
    clipping.act()
    clipping.observe(SampleFeedback(np.array([3.0, 0.0, 0.0]), 9.5))
    kept = clipping.state_dict()
    assert LpBall(3, 3.0).norm(kept["x"][2]) <= bound and kept["y"][2] == env.y_bound
    clipping.act()
    with pytest.raises(ValueError, match="finite"):
        clipping.observe(SampleFeedback(np.array([np.nan, 0.0, 0.0]), 0.1))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_resume_mid_stream_through_a_checkpoint_is_bit_exact(name, tmp_path: Path):
    env = regression(6, dim=3, seed=2)
    x, y = env.sample(6)
    whole = build(name, env, rng=4)
    whole.scale_noise(0.5)
    feed(whole, x, y)
    learner = build(name, env, rng=4)
    learner.scale_noise(0.5)
    feed(learner, x, y, rounds=range(3))
    learner.act()  # saved between act and observe
    save_state(tmp_path / "b.npz", learner.state_dict(), task="t")
    resumed = build(name, env, rng=99)  # another noise stream, replaced by the state
    saved = load_state(tmp_path / "b.npz", task="t")
    with pytest.raises(ValueError, match=r"multiplied by 0\.5, this one by 1\.0"):
        resumed.load_state_dict(saved)  # its noise is at another scale than this learner's
    resumed.scale_noise(0.5)
    resumed.load_state_dict(saved)
    assert resumed.noise_multiplier == 0.5 and math.isinf(resumed.privacy.epsilon)
    resumed.observe(SampleFeedback(x[3], y[3]))
    feed(resumed, x, y, rounds=range(4, 6))
    assert resumed.act().tobytes() == whole.act().tobytes()
    assert resumed.state_dict()["rng"] == whole.state_dict()["rng"]


def test_malformed_states_are_refused_whole():
    env = regression(4, dim=2)
    x, y = env.sample(4)
    learner = build("noisy-sfw", env, replicas=2)
    feed(learner, x[:2], y[:2], rounds=range(2))
    good = learner.state_dict()
    fresh = build("noisy-sfw", env, replicas=2, rng=1)
    untouched = fresh.state_dict()
    bad_x = good["x"].copy()
    bad_x[0, 0] = 5.0  # outside ||x||_3 <= 2^(1/3): would void the guarantee
    for state, match in (
        ({**good, "t": 5}, "t must be an integer in"),
        ({**good, "x": good["x"][:1]}, "shapes"),
        ({**good, "x": bad_x}, "outside the declared bounds"),
        ({**good, "output": np.zeros((3, 2))}, "output must have shape"),
        ({**good, "rng": good["rng"][:1]}, "2 generator states"),
        ({**good, "noise_multiplier": 0.0}, "must be positive"),
    ):
        with pytest.raises(ValueError, match=match):
            fresh.load_state_dict(state)
        after = fresh.state_dict()
        assert after["t"] == 0 and after["rng"] == untouched["rng"]
    fresh.load_state_dict(good)
    assert fresh.state_dict()["t"] == 2


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_scale_noise_is_the_functions_noise_multiplier(name):
    env = regression(5, dim=2, seed=6)
    x, y = env.sample(5)
    learner = build(name, env, rng=8)
    calibrated = learner.privacy
    learner.scale_noise(0.25)
    feed(learner, x, y)
    scaled = batch_fit(name, env, x, y, rng=8, noise_multiplier=0.25)
    assert learner.act().tobytes() == scaled.theta[:, 0].tobytes()
    assert learner.noise_multiplier == 0.25 and scaled.parameters["noise_scaling"] == 0.25
    # a tenth or a quarter of the noise proves nothing; the calibrated derivation is kept
    assert math.isinf(learner.privacy.epsilon) and math.isinf(scaled.privacy.epsilon)
    assert calibrated.derivation in learner.privacy.derivation
    assert scaled.privacy.derivation.startswith("noise multiplied by 0.25 after calibration")
    # noise_multiplier = 1 is the function as it always was; more noise keeps the guarantee
    plain = batch_fit(name, env, x, y, rng=8)
    one = batch_fit(name, env, x, y, rng=8, noise_multiplier=1.0)
    assert one.theta.tobytes() == plain.theta.tobytes() and one.privacy == plain.privacy
    assert one.parameters == plain.parameters and "noise_scaling" not in plain.parameters
    assert batch_fit(name, env, x, y, rng=8, noise_multiplier=2.0).privacy == plain.privacy
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="noise_multiplier"):
            batch_fit(name, env, x, y, noise_multiplier=bad)
    with pytest.raises(TypeError, match="noise_multiplier"):
        batch_fit(name, env, x, y, noise_multiplier="half")


def test_the_multiplier_scales_the_noise_exactly():
    """Samples x = 0 carry no gradient: noisy SGD and LocalMD (p = 2, steps far inside their
    constraints) output a linear image of their noise alone, so m times the noise moves the
    output m times as far. NoisySFW's output is an LMO of a noisy estimate: at a multiplier of
    1e-12 it is the noiseless run's (same order of the samples)."""
    x, y = np.zeros((6, 2)), np.full(6, 0.5)
    budget = PrivacyBudget(1.0, 0.1, "paper", allow_weaker=True)  # the quickest to calibrate
    kw = dict(x_bound=1.0, y_bound=1.0, budget=budget, runs=2, rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        sgd = [noisy_sgd(x, y, noise_multiplier=m, step_scales=(0.01,), **kw) for m in (1, 3)]
        lmd = [local_md(x, y, p=2.0, noise_multiplier=m, **kw) for m in (1, 0.5)]
    np.testing.assert_allclose(sgd[1].theta, 3 * sgd[0].theta, rtol=1e-10)
    assert np.abs(sgd[0].theta).max() > 0
    np.testing.assert_allclose(lmd[1].theta, 0.5 * lmd[0].theta, rtol=1e-10)
    assert np.abs(lmd[0].theta).max() > 0
    env = regression(20, dim=3, seed=1)
    xs, ys = env.sample(20)
    sfw = dict(p=1.5, x_bound=env.x_bound(3.0), y_bound=env.y_bound, runs=2, rng=3)
    quiet = noisy_sfw(xs, ys, budget=PrivacyBudget(1.0, 0.05), noise_multiplier=1e-12, **sfw)
    noiseless = noisy_sfw(xs, ys, budget=None, **sfw)
    np.testing.assert_allclose(quiet.theta, noiseless.theta, atol=1e-9)
    loud = noisy_sfw(xs, ys, budget=PrivacyBudget(1.0, 0.05), **sfw)
    assert np.abs(loud.theta - noiseless.theta).max() > 1e-3


def test_a_non_private_learner_has_no_noise_to_scale():
    env = regression(4, dim=2)
    x, y = env.sample(4)
    learner = build_learner("noisy-sfw", env, epsilon=NON_PRIVATE, replicas=2, rng=1)
    assert learner.privacy is None
    with pytest.raises(ValueError, match="non-private"):
        learner.scale_noise(0.1)
    feed(learner, x, y)
    kw = dict(p=1.5, x_bound=env.x_bound(3.0), y_bound=env.y_bound, runs=2, rng=1)
    fit = noisy_sfw(x, y, budget=None, **kw)
    assert fit.privacy is None and learner.act().tobytes() == fit.theta[:, 0].tobytes()


def test_the_plans_are_cached_and_their_warnings_given_again():
    kw = dict(x_bound=1.0, y_bound=1.0, budget=PrivacyBudget(1.0, 0.2, "paper", allow_weaker=True))
    plans = []
    for _ in range(2):  # paper noisy SGD at delta = 0.2 proves epsilon 1.6 > 1: each build says so
        with pytest.warns(PrivacyWarning, match="proves only"):
            plans.append(cached_plan(NoisySGDPlan, 5, 2, **kw))
    plan = plans[0]
    assert plans[1] is plan and plan.privacy.epsilon > 1
    assert cached_plan(NoisySGDPlan, 6, 2, **{**kw, "budget": None}).privacy is None
    with pytest.raises(ValueError, match="read-only"):
        plan.etas[0] = 1.0
    with pytest.raises(TypeError):
        plan.parameters["eta"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_several_step_scales_play_as_blocks_equal_to_one_scale_each(name):
    # the runner's joint tuning (joint_options = ("step_scale",)): block j of the replicas is
    # the learner built with step_scales[j] alone: the same draws (common random numbers), the
    # same numbers up to the rounding of arithmetic vectorised over the scales
    assert learners()[name].joint_options == ("step_scale",)
    env = regression(6, dim=3, seed=2)
    x, y = env.sample(6)
    scales = [0.3, 1.0, 3.0]
    joint = build(name, env, rng=4, step_scale=scales)
    assert joint.replicas == 9 and joint.runs == 3 and joint.step_scale is None
    feed(joint, x, y)
    out = joint.act()
    for j, scale in enumerate(scales):
        alone = build(name, env, rng=4, step_scale=scale)
        feed(alone, x, y)
        np.testing.assert_allclose(out[3 * j : 3 * (j + 1)], alone.act(), rtol=0, atol=1e-13)


def test_plans_check_their_data():
    plan = NoisySFWPlan(4, 2, p=1.5, x_bound=1.0, y_bound=1.0, budget=None, step_scales=(1, 2))
    assert BatchLearner(plan, replicas=2).act().shape == (4, 2)
    with pytest.raises(ValueError, match="needs at least 2 samples"):
        LocalMDPlan(1, 2, p=1.5, x_bound=1.0, y_bound=1.0, budget=None)
    with pytest.raises(ValueError, match=r"x of shape \(4, 2\)"):
        plan.fit(np.zeros((3, 2)), np.zeros(3), np.random.default_rng(0).spawn(1))


def test_options_and_environment_bounds():
    env = regression(4, dim=3)
    learner = build("noisy-sfw", env, step_scale=2.0, radius=0.5)
    assert learner.step_scale == 2.0 and learner.plan.ball.radius == 0.5
    assert learner.x_bound == env.x_bound(3.0) and learner.y_bound == env.y_bound
    assert learner.budget.delta == 0.25  # default delta = 1/T
    own = build("noisy-sgd", env, x_bound=2.0, y_bound=3.0, delta=0.01, steps=7)
    assert (own.x_bound, own.y_bound, own.plan.steps) == (2.0, 3.0, 7)
    assert own.q == 1.0 and own.budget.delta == 0.01
    with pytest.raises(ValueError, match="learner 'noisy-sfw' has no option 'steps'"):
        build("noisy-sfw", env, steps=3)


# --- the l_p geometry of the sample learners: the environment's p wins ---------------------


def with_p(env: LinearRegressionStream, p: float | None) -> LinearRegressionStream:
    env.p = p
    return env


@pytest.mark.parametrize("name", ["noisy-sfw", "local-md", "dp-frank-wolfe", "frank-wolfe"])
def test_the_environments_p_is_the_learners(name):
    def p_of(learner) -> float:
        return learner.plan.p if isinstance(learner, BatchLearner) else learner.domain.p

    env = regression(4, dim=2)
    assert p_of(build(name, env)) == 1.5  # the default when the environment sets none
    assert p_of(build(name, env, p=1.25)) == 1.25
    env = with_p(regression(4, dim=2), 1.75)
    assert p_of(build(name, env)) == 1.75
    assert p_of(build(name, env, p=1.75)) == 1.75
    assert build(name, env).x_bound == env.x_bound(dual_exponent(1.75))
    with pytest.raises(
        ValueError, match=r"option p = 1\.5 disagrees with the environment's p = 1\.75"
    ):
        build(name, env, p=1.5)


def test_frank_wolfe_follows_an_l1_or_linf_environment():
    assert isinstance(build("dp-frank-wolfe", with_p(regression(4, 2), 1.0)), NoisyMinFrankWolfe)
    learner = build("dp-frank-wolfe", with_p(regression(4, 2), math.inf))
    assert learner.domain.p == math.inf and learner.x_bound == 2.0  # ||x||_1 <= d on the cube


def test_noisy_sgd_is_for_the_linf_ball_only():
    assert build("noisy-sgd", regression(4, 2)).plan.p == math.inf
    assert build("noisy-sgd", regression(4, 2), p=math.inf).q == 1.0
    assert build("noisy-sgd", with_p(regression(4, 2), math.inf), p="inf").q == 1.0
    with pytest.raises(ValueError, match=r"p must be inf, got p = 2"):
        build("noisy-sgd", regression(4, 2), p=2.0)
    with pytest.raises(ValueError, match=r"p must be inf, got p = 1\.5"):
        build("noisy-sgd", with_p(regression(4, 2), 1.5))
    with pytest.raises(ValueError, match="disagrees"):
        build("noisy-sgd", with_p(regression(4, 2), math.inf), p=2.0)
    for bad, error in ((0.5, ValueError), (math.nan, ValueError), ("ell", TypeError)):
        with pytest.raises(error, match="option p must be a number >= 1"):
            build("noisy-sfw", regression(4, 2), p=bad)


def test_fit_plan_checks_the_dataset_against_the_plan_s_bounds():
    # from a review: fit_plan (public) fitted a plan on |y| = 1e6 against a bound of 1 and
    # returned the plan's guarantee; NoisySGD clips no gradient, so its noise assumes the bound
    from dponline.stochastic.baseline_fit import fit_plan
    from dponline.stochastic.noisy_sgd import NoisySGDPlan

    n, d = 64, 2
    plan = NoisySGDPlan(n, d, x_bound=1.0, y_bound=1.0, budget=PrivacyBudget(1.0, 1e-5))
    x = np.zeros((n, d))
    x[:, 0] = 1.0
    y = np.zeros(n)
    assert fit_plan(plan, x, y, runs=2, rng=0).privacy.epsilon <= 1.0
    y[0] = 1e6
    with pytest.raises(ValueError, match=r"\|y\| = 1000000.0 > y_bound = 1.0"):
        fit_plan(plan, x, y, runs=2, rng=0)
    with pytest.raises(ValueError, match="the plan is for x of shape"):
        fit_plan(plan, x[:10], y[:10], runs=2, rng=0)
