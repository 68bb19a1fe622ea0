"""The robustness gaps a new user found (issue: one seam per idea), each pinned by a test that
failed before the change."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dponline.bandits.exp2 import DPEXP2
from dponline.bandits.glm_bandit import DPGLMBandit
from dponline.bandits.scrible import DPSCRiBLe
from dponline.checks import build_case, play
from dponline.continual import make_counter
from dponline.domains import LpBall
from dponline.online.dyadic_hedge import DyadicHedge
from dponline.online.ftpl import DPFTPL
from dponline.online.ftrl import DPFTRL
from dponline.online.linearised_ftrl import LinearisedFTRL
from dponline.privacy import Box, PrivacyBudget, PrivacyWarning, WeakerGuaranteeError
from dponline.protocol import (
    BanditFeedback,
    ContextFeedback,
    FeedbackKind,
    LossFunctionFeedback,
    LossVectorFeedback,
    RewardFeedback,
)
from dponline.registry import learners


@pytest.mark.parametrize("horizon", [0, -3, 2.5, True])
def test_a_non_positive_horizon_is_a_clear_error(horizon):
    # DPFTRL(10, 0, ...) raised ZeroDivisionError from its default eta
    with pytest.raises((ValueError, TypeError), match="horizon must be a positive integer"):
        DPFTRL(10, horizon, budget=PrivacyBudget(1.0))


@pytest.mark.parametrize("make", ["exp2", "scrible"])
def test_bandits_refuse_rounds_past_their_horizon(make):
    budget = PrivacyBudget(1.0)
    if make == "exp2":
        lr = DPEXP2(3, 2, budget=budget, rng=0)
    else:
        lr = DPSCRiBLe(LpBall(2, 2.0), 2, budget=budget, rng=0)
    for _ in range(2):
        lr.act()
        lr.observe(BanditFeedback(np.zeros(1)))
    lr.act()
    with pytest.raises(
        ValueError, match=r"built for 2 rounds; round 3 is past it \(past the horizon"
    ):
        lr.observe(BanditFeedback(np.zeros(1)))
    assert lr.t == 2


def test_glm_bandit_refuses_a_context_outside_its_bound_before_any_update():
    lr = DPGLMBandit(3, 2, 50, h_sub=0.1, warmup=2, budget=PrivacyBudget(1.0, 1e-3), rng=0)
    before = [e.state_dict() for e in lr.estimators]
    with pytest.raises(ValueError, match=r"\|\|x\|\|_inf = 3.0 exceeds x_bound = 1.0"):
        lr.observe(ContextFeedback(np.array([1.0, 3.0, 0.0])))
    with pytest.raises(ValueError, match="needs this round's context"):
        lr.act()  # the refused context was not kept
    for est, saved in zip(lr.estimators, before, strict=True):
        assert est.t == saved["t"]
    # clipping is the explicit alternative
    clipped = DPGLMBandit(
        3, 2, 50, h_sub=0.1, warmup=2, budget=PrivacyBudget(1.0, 1e-3), rng=0, clip=True
    )
    clipped.observe(ContextFeedback(np.array([1.0, 3.0, 0.0])))
    clipped.act()
    clipped.observe(RewardFeedback(np.array([1.0])))
    assert clipped.t == 1


def test_every_private_learner_has_a_public_noise_handle():
    learners = [
        DPFTRL(3, 10, budget=PrivacyBudget(1.0), rng=0),
        DPFTPL(3, 10, budget=PrivacyBudget(1.0, 1e-6), rng=0),
        DPEXP2(3, 10, budget=PrivacyBudget(1.0), rng=0),
        DPSCRiBLe(LpBall(2, 2.0), 10, budget=PrivacyBudget(1.0), rng=0),
    ]
    for lr in learners:
        claimed = lr.privacy.epsilon
        lr.scale_noise(2.0)  # more noise: the guarantee still holds
        assert lr.privacy.epsilon == claimed and lr.noise_multiplier == 2.0
        lr.scale_noise(0.05)
        assert lr.privacy.epsilon == np.inf and "multiplied by 0.1" in lr.privacy.derivation
    lr = DPEXP2(3, 10, budget=PrivacyBudget(1.0), rng=0)
    lr.act()
    lr.observe(BanditFeedback(np.zeros(1)))
    with pytest.raises(ValueError, match="before the first round"):
        lr.scale_noise(0.5)
    with pytest.raises(ValueError, match="non-private"):
        DPEXP2(3, 10, budget=None).scale_noise(0.5)


@pytest.mark.parametrize(
    "build",
    [
        # DP-EXP2's Theorem 4.1 lambda = ||l||_inf / epsilon for signed losses: twice epsilon
        lambda b: DPEXP2(4, 100, budget=b, loss_range=(-1.0, 1.0)),
        # DP-SCRiBLe's Theorem 4.5 lambda = ||Y||_1 / epsilon for a symmetric loss set
        lambda b: DPSCRiBLe(LpBall(3, 2.0), 100, budget=b),
        # Agarwal & Singh Thm 3.1 counts log2 T levels; the tree has ceil(log2(T+1))
        lambda b: DPFTRL(10, 1000, budget=b, noise="laplace"),
    ],
)
def test_a_paper_calibration_proving_less_raises_unless_allowed(build):
    with pytest.raises(WeakerGuaranteeError, match="allow_weaker=True"):
        build(PrivacyBudget(1.0, 0.0, "paper"))
    with pytest.warns(PrivacyWarning):
        lr = build(PrivacyBudget(1.0, 0.0, "paper", allow_weaker=True))
    g = lr.privacy
    assert g.epsilon > 1.0 and g.requested_epsilon == 1.0 and not g.meets_request


def test_ftpl_paper_calibration_records_the_request_beside_the_proof():
    # it used to report the epsilon its sigma proves with nothing to compare it with
    lr = DPFTPL(10, 10_000, budget=PrivacyBudget(1.0, 1e-6, "paper"))
    g = lr.privacy
    assert g.requested_epsilon == 1.0 and g.epsilon < 1.0 and g.meets_request
    assert "Thm 3.5" in g.derivation


def test_doubling_counter_paper_calibration_is_checked_once_for_the_stream():
    kw = dict(horizon=None, bounds=Box(0, 1, dim=3), noise="laplace")
    with pytest.raises(WeakerGuaranteeError, match="doubling blocks"):
        make_counter("binary_tree", budget=PrivacyBudget(0.5, 0.0, "paper"), **kw)


def test_learners_refuse_a_budget_of_the_wrong_kind():
    with pytest.raises(TypeError, match=r"budget must be a dponline\.privacy\.PrivacyBudget"):
        DPFTRL(3, 10, budget=1.0)  # type: ignore[arg-type]
    # Laplace noise asked by name meets a request with delta > 0 by pure DP (it was refused)
    laplace = DPFTRL(3, 10, budget=PrivacyBudget(1.0, 1e-6), noise="laplace").privacy
    assert (laplace.epsilon, laplace.delta) == (1.0, 0.0)
    # the noise, unless named, is the budget's: Gaussian for delta > 0, Laplace for delta = 0
    assert DPFTRL(3, 10, budget=PrivacyBudget(1.0, 1e-6)).privacy.delta == 1e-6
    assert DPFTRL(3, 10, budget=PrivacyBudget(1.0)).privacy.delta == 0
    with pytest.raises(ValueError, match="delta must lie in \\(0, 1\\), got 0"):
        DPFTPL(3, 10, budget=PrivacyBudget(1.0))
    with pytest.raises(TypeError, match="budget"):
        DPFTRL(3, 10)  # type: ignore[call-arg]  # no silent default: private or None, say which


def test_scaling_the_noise_voids_the_counters_claim_too():
    lr = DPFTRL(3, 10, budget=PrivacyBudget(1.0), rng=0)
    lr.scale_noise(0.1)
    assert lr.privacy.epsilon == np.inf and lr.counter.privacy.epsilon == np.inf


@pytest.mark.parametrize(
    "build",
    [
        lambda: DPFTRL(3, 4, budget=PrivacyBudget(1.0), rng=0),
        lambda: DPEXP2(3, 4, budget=PrivacyBudget(1.0), rng=0),
        lambda: DPGLMBandit(3, 2, 30, h_sub=0.1, warmup=2, budget=PrivacyBudget(1.0, 1e-3)),
    ],
)
@pytest.mark.parametrize("t", [-3, 10_000, 1.5])
def test_a_state_past_the_horizon_is_refused(build, t):
    # an edited checkpoint must not let a learner release more than its guarantee covers
    state = build().state_dict()
    state["t"] = t
    with pytest.raises(ValueError, match="saved round counter t must be an integer"):
        build().load_state_dict(state)


def test_a_budget_over_another_relation_is_refused():
    from dponline.privacy import Neighbouring

    with pytest.raises(ValueError, match="guarantee is over 'streams differing in the input"):
        DPEXP2(3, 10, budget=PrivacyBudget(1.0, neighbouring=Neighbouring.ONE_USER))
    glm = DPGLMBandit(3, 2, 30, h_sub=0.1, warmup=2, budget=PrivacyBudget(1.0, 1e-3))
    assert glm.privacy.neighbouring is Neighbouring.ONE_USER
    with pytest.raises(TypeError, match="allow_weaker must be True or False, got 'no'"):
        PrivacyBudget(1.0, 0.0, "paper", allow_weaker="no")  # type: ignore[arg-type]


def test_degenerate_loss_sets_and_zero_actions():
    with pytest.raises(ValueError, match="zero width leaves nothing to protect"):
        DPEXP2(3, 10, budget=PrivacyBudget(1.0), loss_range=(0.5, 0.5))
    actions = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # the zero action reveals nothing
    lr = DPEXP2(2, 10, budget=PrivacyBudget(1.0), actions=actions, eta=0.1, gamma=0.5)
    assert lr.calibrator.sensitivity == 1.0
    with pytest.raises(ValueError, match=r"actions must have shape \(K, n_arms\) = \(K, 3\)"):
        DPEXP2(3, 10, budget=PrivacyBudget(1.0), actions=actions, eta=0.1, gamma=0.5)


def test_the_error_names_the_replica_that_is_out_of_bounds():
    lr = DPSCRiBLe(LpBall(2, 2.0), 10, budget=PrivacyBudget(1.0), replicas=2, rng=0)
    y = lr.act()
    top = np.linalg.norm(y, axis=1)  # the largest <l, y> over the unit ball
    with pytest.raises(ValueError, match=r"bandit loss 50.0 of replica 1 is outside"):
        lr.observe(BanditFeedback(np.array([top[0] * (1 + 1e-13), 50.0])))


# --- one round discipline, one place for argument checks, states checked whole ---------------

CASES = [
    pytest.param(entry, case, id=f"{name}[{case.label}]" if case.label else name)
    for name, entry in learners().items()
    for case in entry.test_cases
]


def _message(call) -> str:
    with pytest.raises(ValueError) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("entry, case", CASES)
def test_every_learner_gives_the_one_message_of_each_misuse(entry, case):
    """Feedback before act(), a contextual act() before the context and the input of round
    T+1 get the same message from every learner, its name and round filled in
    (dponline.protocol.RoundDiscipline), and act() after the last round stays allowed."""
    env, learner = build_case(entry, case)
    name, horizon = type(learner).__name__, case.horizon
    unit = "sample" if entry.feedback_kind is FeedbackKind.SAMPLE else "round"
    _, twin = build_case(entry, case)
    if env.reveals_context:
        context = ContextFeedback(env.context(0))
        said = _message(learner.act)
        assert said == (
            f"act() needs this round's context first: {name} has not observed a "
            "ContextFeedback in round 1"
        )
        twin.observe(context)
        feedback = env.round(0, twin.act())[0]
        learner.observe(context)
        order = " (a reward comes after a context and an action)"
    else:
        feedback, order = env.round(0, twin.act())[0], ""
    said = _message(lambda: learner.observe(feedback))
    assert said == (
        f"observe() must follow act(): {name} got feedback before act() in {unit} 1{order}"
    )
    play(env, learner, range(horizon))
    if env.reveals_context:
        late = lambda: learner.observe(ContextFeedback(env.context(horizon - 1)))  # noqa: E731
    else:
        late_feedback = env.round(horizon - 1, learner.act())[0]  # acting after T is allowed
        late = lambda: learner.observe(late_feedback)  # noqa: E731
    assert _message(late) == (
        f"{name} was built for {horizon} {unit}s; {unit} {horizon + 1} is past it (past the "
        "horizon the guarantee is void)"
    )


@pytest.mark.parametrize("entry, case", CASES)
def test_every_learner_class_is_exported_by_its_package(entry, case):
    _, learner = build_case(entry, case, replicas=1)
    cls = type(learner)
    package = importlib.import_module(cls.__module__.rsplit(".", 1)[0])
    assert cls.__name__ in package.__all__ and getattr(package, cls.__name__) is cls


def test_the_bases_and_wrapped_algorithms_are_exported_too():
    import dponline.bandits as bandits
    import dponline.online as online
    import dponline.stochastic as stochastic

    assert {"EXP2", "SCRiBLe", "PrivateBanditReduction", "UniformPlay"} <= set(bandits.__all__)
    assert {"CounterLearner", "DyadicHedge"} <= set(online.__all__)
    assert {"StreamingFrankWolfe", "BatchLearner"} <= set(stochastic.__all__)


def _loss_vector_rounds(learner, rounds):
    for _ in range(rounds):
        learner.act()
        learner.observe(LossVectorFeedback(np.array([0.2, 0.9, 0.4])))


def test_a_corrupt_checkpoint_never_half_loads_dp_ftrl():
    # DP-FTRL used to load the counter and the last release before it checked t: refused, it
    # was left playing another run's release and stopped a round early
    source = DPFTRL(3, 4, budget=PrivacyBudget(1.0), rng=0)
    _loss_vector_rounds(source, 2)
    corrupt = source.state_dict()
    corrupt["t"] = 5
    corrupt["cumulative"] = corrupt["cumulative"] + 1.0
    arrays = corrupt["counter"]["arrays"]
    corrupt["counter"]["arrays"] = {k: v + 1.0 for k, v in arrays.items()}
    learner = DPFTRL(3, 4, budget=PrivacyBudget(1.0), rng=1)
    _loss_vector_rounds(learner, 1)
    before, decision = learner.state_dict(), learner.act()
    with pytest.raises(ValueError, match=r"^saved round counter t must be an integer in \[0, 4\]"):
        learner.load_state_dict(corrupt)
    assert learner.act().tobytes() == decision.tobytes()
    learner.observe(LossVectorFeedback(np.zeros(3)))
    assert learner.counter.t == before["counter"]["t"] + 1 == 2
    _loss_vector_rounds(learner, 2)  # its own last two rounds
    learner.act()
    with pytest.raises(ValueError, match="round 5 is past it"):
        learner.observe(LossVectorFeedback(np.zeros(3)))


def test_a_state_corrupt_only_at_its_end_is_refused_before_anything_changes():
    # validation reaches the counter's arrays and RNG state before the first assignment
    source = DPFTPL(3, 6, budget=PrivacyBudget(1.0, 1e-6), rng=0)
    _loss_vector_rounds(source, 3)
    learner = DPFTPL(3, 6, budget=PrivacyBudget(1.0, 1e-6), rng=1)
    before = learner.state_dict()
    for key, value in (("rng", {"bit_generator": "PCG64"}), ("t", 7)):
        corrupt = source.state_dict()
        corrupt["counter"][key] = value
        with pytest.raises(ValueError, match=r"saved r(ng|ound counter t)"):
            learner.load_state_dict(corrupt)
        assert learner.state_dict()["counter"]["t"] == before["counter"]["t"] == 0
        assert learner.t == 0 and learner._cumulative.tobytes() == before["cumulative"].tobytes()


@pytest.mark.parametrize(
    "mechanism", ["binary_tree", "padded_tree", "honaker", "sqrt_factorization", "blt", None]
)
def test_counters_check_a_whole_state_before_they_change(mechanism):
    kw = dict(bounds=Box(0, 1, dim=2), budget=PrivacyBudget(1.0, 1e-6), noise="gaussian")
    name, horizon = (mechanism, 8) if mechanism else ("binary_tree", None)
    source = make_counter(name, horizon=horizon, rng=0, **kw)
    for _ in range(3):
        source.step(np.array([0.5, 0.5]))
    counter = make_counter(name, horizon=horizon, rng=1, **kw)
    counter.step(np.array([1.0, 0.0]))
    before = counter.state_dict()
    state = source.state_dict()
    if mechanism is None:  # the doubling counter: its block must agree with the stream's t
        corrupt = [{**state, "t": 7}, {**state, "block": {**state["block"], "rng": None}}]
    else:
        last = list(state["arrays"])[-1]
        too_long = {**state["arrays"], last: np.zeros((1, *state["arrays"][last].shape))}
        corrupt = [{**state, "t": 9}, {**state, "arrays": too_long}, {**state, "rng": [1]}]
    for bad in corrupt:
        with pytest.raises(ValueError) as err:
            counter.load_state_dict(bad)
        assert "\n" not in str(err.value)
        after = counter.state_dict()
        assert after["t"] == before["t"] == 1 and after["rng"] == before["rng"]
    counter.load_state_dict(state)
    assert counter.step(np.zeros(2)).tobytes() == source.step(np.zeros(2)).tobytes()


def test_complex_string_and_wrong_shape_gradients_are_refused_by_dp_ftrl_oco():
    # complex gradients were cast to their real part (a ComplexWarning) and learned from
    lr = LinearisedFTRL(LpBall(2, 2.0), 5, lipschitz=1.0, budget=PrivacyBudget(1.0, 1e-6), rng=0)
    before = lr.state_dict()
    x = lr.act()
    for gradient, says in (
        (lambda p: np.zeros_like(p) + 0.1j, "must be real, got complex values"),
        (lambda p: np.full(p.shape, "0.1"), "must be real numbers, got <U3 values"),
        (lambda p: np.zeros(3), r"must have shape \(2,\) or \(1, 2\), got \(3,\)"),
    ):
        with pytest.raises(ValueError, match=rf"^gradient {says}"):
            lr.observe(LossFunctionFeedback(lambda p: 0.0, gradient))
    with pytest.raises(TypeError, match="needs the loss's gradient, a function of the points"):
        lr.observe(LossFunctionFeedback("0.1", "0.1", loss="0.1"))
    assert lr.t == 0 and lr.act().tobytes() == x.tobytes()
    assert lr.counter.t == before["inner"]["counter"]["t"] == 0
    assert lr.state_dict()["inner"]["counter"]["rng"] == before["inner"]["counter"]["rng"]


class _ComplexLoss:
    dim, lipschitz = 1, 1.0

    def __call__(self, points):
        return np.abs(points[..., 0] - 0.5) + 0.5j


def test_complex_and_string_losses_are_refused_by_the_dyadic_hedge():
    lr = DyadicHedge([0.0], [1.0], 8, lipschitz=1.0, budget=PrivacyBudget(1.0, 1e-6), rng=0)
    lr.act()
    n = lr.grid.size
    with pytest.raises(
        ValueError, match=rf"^the loss's values at the {n} grid points must be real"
    ):
        lr.observe(LossFunctionFeedback(_ComplexLoss(), None, loss=_ComplexLoss()))
    with pytest.raises(TypeError, match="got the loss 'abc'"):
        lr.observe(LossFunctionFeedback("abc", "abc", loss="abc"))
    assert lr.t == 0 and lr.counter.t == 0


def test_string_feedback_is_one_line_naming_the_argument_never_a_numpy_error():
    ftrl = DPFTRL(3, 4, budget=PrivacyBudget(1.0), rng=0)
    ftrl.act()
    with pytest.raises(ValueError, match=r"^loss must be real numbers, got <U3 values"):
        ftrl.observe(LossVectorFeedback(np.array(["0.1", "0.2", "0.3"])))
    with pytest.raises(ValueError, match=r"^loss must have shape \(3,\) or \(1, 3\), got \(2, 3\)"):
        ftrl.observe(LossVectorFeedback(np.zeros((2, 3))))
    exp2 = DPEXP2(3, 4, budget=PrivacyBudget(1.0), rng=0)
    exp2.act()
    with pytest.raises(ValueError, match=r"^bandit loss must be real numbers, got the string"):
        exp2.observe(BanditFeedback("0.5"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^bandit loss must be real, got complex values"):
        exp2.observe(BanditFeedback(np.array([0.5 + 0j])))
    assert ftrl.t == exp2.t == 0


def test_one_name_one_meaning_for_the_budget_checks():
    # protocol.checked_budget checks a learner's budget against its relation; the baselines'
    # check (delta > 0, one sample) has its own name
    from dponline import protocol
    from dponline.stochastic import baseline_fit

    assert (
        getattr(baseline_fit, "checked_budget", protocol.checked_budget) is protocol.checked_budget
    )
    assert baseline_fit.checked_sample_budget(None) is None
    with pytest.raises(ValueError, match="delta"):
        baseline_fit.checked_sample_budget(PrivacyBudget(1.0))
