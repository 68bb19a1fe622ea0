"""The robustness gaps a new user found (issue: one seam per idea), each pinned by a test that
failed before the change."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits.exp2 import DPEXP2
from dponline.bandits.glm_bandit import DPGLMBandit
from dponline.bandits.scrible import DPSCRiBLe
from dponline.continual import make_counter
from dponline.domains import LpBall
from dponline.online.ftpl import DPFTPL
from dponline.online.ftrl import DPFTRL
from dponline.privacy import Box, PrivacyBudget, PrivacyWarning, WeakerGuaranteeError
from dponline.protocol import BanditFeedback, ContextFeedback, RewardFeedback


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
    with pytest.raises(ValueError, match="built for 2 rounds; the loss of round 3"):
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
    with pytest.raises(ValueError, match="Laplace noise gives pure DP"):
        DPFTRL(3, 10, budget=PrivacyBudget(1.0, 1e-6), noise="laplace")
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
