"""The batched conversion (Asi, Raman & Talwar 2025): calibration, the batch mechanics, the
partial last batch, an exact computation of the privacy loss on a small case, EXP2 as base
(tau = 1 is Agarwal & Singh's Algorithm 4), regret, state and replicas."""

from __future__ import annotations

import contextlib
import copy
import math
import re

import numpy as np
import pytest

from dponline.bandits import DPEXP2
from dponline.bandits.batched import (
    BatchedEXP2,
    BatchedEXP3,
    BatchedHTINF,
    batched_exp3_regret_bound,
    paper_batch,
)
from dponline.bandits.exp2 import exp2_proven_regret_bound
from dponline.bandits.exp3 import EXP3
from dponline.environments import BanditEnvironment
from dponline.environments.experts import stochastic_losses
from dponline.privacy.arguments import ArgumentError
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import BanditFeedback
from tests.bandits.stochastic_arms_helpers import assert_every_state_of_a_run_loads, same_state


def _budget(eps, calibration="tight"):
    return PrivacyBudget(eps, 0.0, calibration)


@pytest.mark.parametrize(
    "eps, tau", [(1.0, 1), (0.5, 2), (0.3, 4), (0.2, 5), (0.1, 10), (0.07, 15), (3.0, 1)]
)
def test_paper_calibration_is_corollary_2(eps, tau):
    lr = BatchedEXP3(4, 1000, budget=_budget(eps, "paper"), rng=0)
    assert lr.batch == tau == paper_batch(eps, 1000)
    assert lr.laplace_scale == pytest.approx(1 / (eps * tau))
    assert lr.privacy.epsilon == pytest.approx(eps) and lr.privacy.delta == 0
    assert lr.rounds == math.ceil(1000 / tau)
    assert "tau = ceil(1 / epsilon)" in lr.privacy.derivation


@pytest.mark.parametrize("eps", [1.0, 0.5, 0.1])
def test_tight_calibration_minimises_the_proven_bound(eps):
    k, t = 10, 20_000
    lr = BatchedEXP3(k, t, budget=_budget(eps), rng=0)
    bounds = {tau: batched_exp3_regret_bound(k, t, tau, 1 / (eps * tau)) for tau in range(1, 200)}
    assert lr.batch == min(bounds, key=bounds.get)
    assert lr.regret_bound() == pytest.approx(bounds[lr.batch])
    paper = BatchedEXP3(k, t, budget=_budget(eps, "paper"), rng=0)
    assert lr.regret_bound() <= paper.regret_bound()
    assert lr.privacy.epsilon == pytest.approx(eps)
    # epsilon = 1: tau = 1, as the paper's (the bound ties at tau = 2 and the least tau wins)
    if eps == 1.0:
        assert lr.batch == paper.batch == 1
    # a learning rate of the user's: tau minimises the bound at that rate
    fixed = BatchedEXP3(k, t, budget=_budget(eps), eta=0.002, rng=0)
    at = {tau: batched_exp3_regret_bound(k, t, tau, 1 / (eps * tau), eta=0.002) for tau in bounds}
    assert fixed.batch == min(at, key=at.get)
    assert fixed.regret_bound() == pytest.approx(at[fixed.batch])


def test_a_batch_plays_one_arm_and_feeds_sum_over_tau_plus_noise():
    fed = []
    lr = BatchedEXP3(3, 7, budget=_budget(0.5), batch=3, replicas=4000, rng=1)
    learn = lr.algorithm.learn
    lr.algorithm.learn = lambda v: (fed.append(np.array(v)), learn(v))  # type: ignore[method-assign]
    losses = np.random.default_rng(2).uniform(size=(7, 3))
    arms, sums = [], np.zeros(4000)
    for t in range(7):
        a = lr.act()
        np.testing.assert_array_equal(a, lr.act())  # act() again in a round: the same arm
        arms.append(a)
        lr.observe(BanditFeedback(losses[t, a]))
    arms = np.array(arms)
    # batches {1, 2, 3}, {4, 5, 6} and the partial {7}: one arm per batch
    assert (arms[0] == arms[1]).all() and (arms[1] == arms[2]).all()
    assert (arms[3] == arms[4]).all() and (arms[4] == arms[5]).all()
    assert len(fed) == 3 and lr.rounds == 3
    b = 1 / (0.5 * 3)
    for i, rounds in enumerate(([0, 1, 2], [3, 4, 5], [6])):
        sums = sum(losses[t, arms[t]] for t in rounds) / 3  # the partial batch too: over tau
        noise = fed[i] - sums
        # Laplace(b): mean |Z| = b, sd of |Z| = b; over 4000 draws 6 standard errors = 0.095 b
        assert abs(np.abs(noise).mean() - b) < 0.1 * b
        assert abs(np.median(noise)) < 0.1 * b


def test_without_privacy_a_batch_feeds_its_exact_sum_over_tau_to_plain_exp3():
    lr = BatchedEXP3(3, 5, budget=None, batch=2, replicas=2, rng=4)
    assert lr.privacy is None and lr.laplace_scale == 0 and lr.algorithm.threshold is None
    twin = EXP3(3, eta=lr.eta, replicas=2, rng=np.random.default_rng(4))
    losses = np.array([[0.2, 0.9, 0.5], [0.4, 0.1, 0.7], [0.3, 0.3, 0.3], [1.0, 0.0, 0.5],
                       [0.6, 0.6, 0.6]])  # fmt: skip
    for batch in ([0, 1], [2, 3], [4]):
        arms = twin.act()
        for t in batch:
            np.testing.assert_array_equal(lr.act(), arms)
            lr.observe(BanditFeedback(losses[t, arms]))
        twin.learn(sum(losses[t, arms] for t in batch) / 2)
        np.testing.assert_allclose(lr.probabilities(), twin.probabilities(), rtol=1e-13)


_NODES = np.polynomial.legendre.leggauss(200)  # exact for polynomials of degree < 400


def _gauss_expectation(response, s, b, lo_cut, hi_cut, outside):
    """E[response(s + Z)] for Z ~ Laplace(b): Gauss-Legendre on the smooth middle piece
    [lo_cut, hi_cut] (in z), ``outside`` (a constant) times the mass of the tails."""
    x, w = _NODES
    total = 0.0
    # the density has a kink at 0: integrate [lo, 0] and [0, hi] separately
    for a, c in ((lo_cut, min(0.0, hi_cut)), (max(0.0, lo_cut), hi_cut)):
        if c <= a:
            continue
        z = 0.5 * (c - a) * x + 0.5 * (c + a)
        dens = np.exp(-np.abs(z) / b) / (2 * b)
        total += 0.5 * (c - a) * np.sum(w * response(s + z) * dens)

    def cdf(z):
        return 0.5 * math.exp(z / b) if z < 0 else 1 - 0.5 * math.exp(-z / b)

    tails = cdf(lo_cut) + 1 - cdf(hi_cut)
    return total + outside * tails


def _next_arm_distribution(loss_of_batch, tau, divide_by, eps, eta=3.0, c=10.0):
    """P(J_1 = j, J_2 = k) for a 2-arm EXP3 base (uniform first action) whose batch value is
    (batch loss sum) / divide_by + Laplace(1 / (eps tau)), exactly up to quadrature: the
    base's response to each value is computed by the EXP3 class itself."""
    b = 1 / (eps * tau)
    out = np.zeros((2, 2))
    for j in range(2):
        s = loss_of_batch[j] / divide_by
        r = c * 0.5 / eta  # |value| beyond r is skipped: x = 1/2 for both arms at first

        def response(v, j=j):
            alg = EXP3(2, eta=eta, replicas=len(v), rng=np.random.default_rng(0), threshold=c)
            alg._chosen = np.full(len(v), j)
            alg.learn(v)
            return alg.probabilities()

        for k in range(2):
            p = _gauss_expectation(lambda v, k=k: response(v)[:, k], s, b, -r - s, r - s, 0.5)
            out[j, k] = 0.5 * p
    return out


@pytest.mark.parametrize("eps", [1.0, 0.5])
def test_exact_privacy_loss_of_a_batch_is_at_most_epsilon(eps):
    """Batches of tau = 2 rounds, 2 arms; the sequences differ in round 1 (loss 0 or 1 for
    both arms; round 2's loss 1/2). The distribution of the first two batches' actions, by
    quadrature over the Laplace noise: the largest log ratio is at most epsilon, and most of it
    is used (the base responds steeply), so the check could fail."""
    tau = 2
    a = _next_arm_distribution(np.array([0.0 + 0.5, 0.0 + 0.5]), tau, tau, eps)
    b = _next_arm_distribution(np.array([1.0 + 0.5, 1.0 + 0.5]), tau, tau, eps)
    assert a.sum() == pytest.approx(1.0) and b.sum() == pytest.approx(1.0)
    loss = np.abs(np.log(a / b)).max()
    assert loss <= eps * (1 + 1e-9)
    assert loss >= 0.5 * eps


def test_exact_privacy_of_the_partial_last_batch_needs_dividing_by_tau():
    """T = 3, tau = 2: the last batch is round 3 alone, and act() after the horizon reads its
    value. Dividing its sum by tau (what the conversion does) keeps the sequences that differ
    in round 3 within epsilon; dividing by its length m = 1 would not (the same noise, twice the
    sensitivity)."""
    eps, tau = 1.0, 2
    ok_a = _next_arm_distribution(np.array([0.0, 0.0]), tau, tau, eps)
    ok_b = _next_arm_distribution(np.array([1.0, 1.0]), tau, tau, eps)
    assert np.abs(np.log(ok_a / ok_b)).max() <= eps * (1 + 1e-9)
    bad_a = _next_arm_distribution(np.array([0.0, 0.0]), tau, 1, eps)
    bad_b = _next_arm_distribution(np.array([1.0, 1.0]), tau, 1, eps)
    assert np.abs(np.log(bad_a / bad_b)).max() > 1.2 * eps
    # and the learner does divide the partial batch by tau, and acts after the horizon
    fed = []
    lr = BatchedEXP3(2, 3, budget=_budget(eps), batch=2, rng=0)
    lr.scale_noise(1e-9)  # (the noise is irrelevant here: only what is fed is looked at)
    learn = lr.algorithm.learn
    lr.algorithm.learn = lambda v: (fed.append(float(v[0])), learn(v))  # type: ignore[method-assign]
    for _ in range(3):
        lr.act()
        lr.observe(BanditFeedback(np.array([0.8])))
    assert fed == pytest.approx([0.8, 0.4], abs=1e-6)
    assert lr.act().shape == (1,)


def test_with_one_round_per_batch_batched_exp2_is_dp_exp2():
    """tau = 1: the conversion is Agarwal & Singh's Algorithm 4 (Laplace(1 / epsilon) on each
    loss) around the same EXP2 with the same proven step sizes: the same draws, bit for bit."""
    T = 60
    losses = np.random.default_rng(0).uniform(size=(T, 4))
    a = BatchedEXP2(4, T, budget=_budget(1.0), batch=1, replicas=3, rng=7)
    b = DPEXP2(4, T, budget=_budget(1.0), replicas=3, rng=7)
    assert (a.eta, a.gamma, a.laplace_scale) == (b.eta, b.gamma, b.laplace_scale)
    for t in range(T):
        x, y = a.act(), b.act()
        np.testing.assert_array_equal(x, y)
        a.observe(BanditFeedback(losses[t, x]))
        b.observe(BanditFeedback(losses[t, y]))


def test_batched_exp2_over_a_general_action_set():
    # the 2-subsets of 4 items: values <l, a> in [0, 2], width 2
    actions = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0], [0, 1, 0, 1],
                        [0, 0, 1, 1]], dtype=float)  # fmt: skip
    with pytest.raises(ValueError, match="give eta and gamma"):
        BatchedEXP2(4, 20, budget=_budget(0.5), actions=actions)
    lr = BatchedEXP2(4, 20, budget=_budget(0.5), actions=actions, eta=0.1, gamma=0.3, rng=0)
    assert lr.batch == 2 and lr.laplace_scale == pytest.approx(2 / (0.5 * 2))
    arm = lr.act()
    assert arm.shape == (1,) and 0 <= arm[0] < 6
    with pytest.raises(ValueError, match=r"outside the declared bounds \[0, 2\]"):
        lr.observe(BanditFeedback(np.array([2.5])))
    lr.observe(BanditFeedback(np.array([1.5])))
    assert lr.t == 1


def test_a_loss_inside_the_set_that_rounds_past_its_interval_is_accepted():
    # <l, a_0> for this l in [0, 1]^8 is 0.65 in floating point, its computed upper bound
    # 0.6499999999999999: the value is clipped back (the sensitivity stays the width)
    a0 = np.array([-0.38, 0.19, -1.46, 0.13, 0.18, -0.56, -0.43, 0.15])
    loss = (a0 > 0).astype(float)
    lr = BatchedEXP2(8, 10, budget=_budget(1.0), actions=np.stack([a0, -a0]), eta=0.1,
                     gamma=0.1, batch=2, rng=0)  # fmt: skip
    assert loss @ a0 > lr._value_high[0]
    while lr.act()[0] != 0:  # arm 1 (-a_0, values in [-0.65, 2.83]) until a batch of arm 0
        lr.observe(BanditFeedback(np.array([0.1])))
    lr.observe(BanditFeedback(np.array([loss @ a0])))  # the first round of arm 0's batch
    assert lr._sum[0] == lr._value_high[0]
    lr.act()
    with pytest.raises(ValueError, match="outside the declared bounds"):  # further out: refused
        lr.observe(BanditFeedback(np.array([lr._value_high[0] + 1e-9])))


def test_regret_within_the_proven_bound_on_an_oblivious_sequence():
    """epsilon = 0.2 (tau = 5, Laplace(1) on the batch value) on a fixed loss matrix with a
    best arm: the mean realised regret of 100 replicas is below the proven bound (2.5 times
    the mean, 585) and below uniform play's (726) by more than 5 standard errors (about 15 at
    these fixed seeds)."""
    T, K, R = 3000, 5, 100
    env = BanditEnvironment(stochastic_losses(T, np.r_[0.2, np.full(K - 1, 0.5)], rng=5))
    lr = BatchedEXP3(K, T, budget=_budget(0.2, "paper"), replicas=R, rng=3)
    assert lr.batch == 5
    cum = np.zeros(R)
    for t in range(T):
        fb, loss = env.round(t, lr.act())
        lr.observe(fb)
        cum += loss
    regret = cum - env.best_cumulative_loss()[-1]
    uniform = env.losses.sum() / K - env.best_cumulative_loss()[-1]
    assert regret.mean() <= lr.regret_bound()
    assert regret.mean() < uniform - 5 * regret.std(ddof=1) / math.sqrt(R)


def test_resume_mid_batch_bit_for_bit_and_refusals_leave_the_state():
    T = 20
    losses = np.random.default_rng(1).uniform(size=(T, 4))

    def run(lr, rounds):
        out = []
        for t in rounds:
            a = lr.act()
            out.append(a)
            lr.observe(BanditFeedback(losses[t, a]))
        return out

    def make(seed):
        return BatchedEXP3(4, T, budget=_budget(0.3), replicas=5, rng=seed)

    reference = run(make(3), range(T))
    part = make(3)
    first = run(part, range(6))  # tau = 4: mid-batch
    part.act()  # and mid-round: the arm of round 7 is drawn, not yet observed
    resumed = make(11)
    resumed.load_state_dict(part.state_dict())
    for a, b in zip(reference, first + run(resumed, range(6, T)), strict=True):
        np.testing.assert_array_equal(a, b)
    lr = make(3)
    run(lr, range(2))
    lr.act()
    before = lr.state_dict()
    with pytest.raises(ValueError, match=r"1\.5"):
        lr.observe(BanditFeedback(np.full(5, 1.5)))
    with pytest.raises(ValueError, match="batch length"):
        make(3).load_state_dict(dict(before, config={**before["config"], "batch": 2}))
    with pytest.raises(ValueError, match="acted this round but holds no arm"):
        make(3).load_state_dict(dict(before, arm=None))
    after = lr.state_dict()
    np.testing.assert_array_equal(after["sum"], before["sum"])
    assert after["t"] == before["t"]


def test_replicas_are_independent():
    lr = BatchedEXP3(6, 40, budget=_budget(0.5), replicas=5, rng=2)
    arms = []
    for _ in range(40):
        a = lr.act()
        arms.append(a)
        lr.observe(BanditFeedback(np.full(5, 0.5)))
    runs = np.stack(arms, axis=1)
    assert len({tuple(r) for r in runs}) == 5


_SUBSETS = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0]], dtype=float)


@pytest.mark.parametrize(
    "make",
    [
        lambda: BatchedEXP3(3, 11, budget=_budget(0.25), replicas=3, rng=0),  # tau 4, m = 3
        lambda: BatchedEXP3(3, 11, budget=None, batch=3, replicas=2, rng=0),
        lambda: BatchedHTINF(3, 11, budget=_budget(0.2), replicas=3, rng=0),  # tau 5, m = 1
        lambda: BatchedEXP2(3, 11, budget=_budget(0.3), batch=4, replicas=2, rng=0),
        lambda: BatchedEXP2(
            4,
            11,
            budget=_budget(0.5),
            actions=_SUBSETS,
            eta=0.3,
            gamma=0.2,
            batch=3,
            replicas=2,
            rng=0,
        ),
    ],
)
def test_every_state_of_a_real_run_loads(make):
    """States saved before and after every act(), at the horizon and after acting past it
    (mid-batch, at batch ends, in the partial last batch) all pass the cross-checks of
    prepare_load and load back as they were."""
    losses = np.random.default_rng(3).uniform(size=(11, 4))
    subsets = make().n_arms == 4  # the action set's learner: a loss per subset

    def loss(t, arm):
        return losses[t] @ _SUBSETS[arm].T if subsets else losses[t, arm]

    assert_every_state_of_a_run_loads(make, loss)


def _mid_batch():
    """BatchedEXP3 with tau = 4 after 2 rounds of its first batch (losses 1), acted on the
    third: (learner, state)."""
    lr = BatchedEXP3(3, 20, budget=_budget(0.25), batch=4, replicas=2, rng=0)
    for _ in range(2):
        lr.act()
        lr.observe(BanditFeedback(np.ones(2)))
    lr.act()
    return lr, lr.state_dict()


def _corrupt(state, **fields):
    bad = copy.deepcopy(state)
    bad.update(fields)
    return bad


def test_a_state_whose_parts_disagree_is_refused_and_changes_nothing():
    """Each part alone is well formed, but together they are not a state the learner can
    reach: the batch's action missing mid-batch (the base would act twice in one batch), a
    batch sum no run of the batch's rounds gives, a batch action other than the one the base
    drew (the batch value would be credited to an arm not played), an arm without act()."""
    _, state = _mid_batch()
    chosen = np.asarray(state["algorithm"]["chosen"])
    between = BatchedEXP3(3, 20, budget=_budget(0.25), batch=4, replicas=2, rng=0).state_dict()
    cases = [
        (_corrupt(state, choice=None, arm=None, acted=False, sum=np.full(2, -50.0)), "choice"),
        (_corrupt(state, choice=None, arm=None, acted=False), "choice is missing"),
        (_corrupt(state, sum=np.array([2.0, -0.5])), "saved sum -0.5"),
        (_corrupt(state, sum=np.array([2.0, 2.5])), "saved sum 2.5"),
        (_corrupt(between, sum=np.array([0.0, 0.3])), "saved sum must be 0"),
        (_corrupt(between, choice=chosen), "choice is present"),
        (_corrupt(state, choice=(chosen + 1) % 3, arm=(chosen + 1) % 3), "base algorithm drew"),
        (_corrupt(state, arm=(chosen + 1) % 3), "saved arm"),
        (_corrupt(state, acted=False), "saved arm is present"),
    ]
    for bad, match in cases:
        lr, _ = _mid_batch()
        before = lr.state_dict()
        with pytest.raises(ArgumentError, match=match):
            lr.load_state_dict(bad)
        assert same_state(lr.state_dict(), before)
    # a state at the horizon is between batches even when the last batch is partial
    lr = BatchedEXP3(2, 6, budget=_budget(0.25), batch=4, rng=0)  # batches of 4 and 2 rounds
    for _ in range(6):
        lr.act()
        lr.observe(BanditFeedback(np.ones(1)))
    end = lr.state_dict()
    assert lr.batch_position(6) == (2, 0) and np.all(end["sum"] == 0)
    with pytest.raises(ArgumentError, match="saved sum must be 0"):
        BatchedEXP3(2, 6, budget=_budget(0.25), batch=4, rng=0).load_state_dict(
            _corrupt(end, sum=np.array([2.0]))
        )


def _cited_bound(derivation):
    found = re.search(r"proven regret bound \(([^)]+)\)", derivation)
    return None if found is None else float(found.group(1))


@pytest.mark.parametrize(
    "options", [{}, {"eta": 1e-4, "gamma": 0.05}, {"eta": 1e-4}, {"gamma": 0.5}]
)
def test_tight_exp2_tau_minimises_the_bound_at_the_run_s_step_sizes(options):
    """The tau of batched EXP2's tight calibration minimises the proven bound at the eta and
    gamma the run uses (the user's where given), and the bound its derivation cites holds for
    the run: it is the bound at the run's own (eta, gamma, tau, b)."""
    n, t = 10, 100_000
    lr = BatchedEXP2(n, t, budget=_budget(1.0), **options)
    run_bound = lr.batch * exp2_proven_regret_bound(
        n, lr.rounds, lr.laplace_scale, 1.0, eta=lr.eta, gamma=lr.gamma
    )
    assert _cited_bound(lr.privacy.derivation) == pytest.approx(run_bound, rel=1e-3)
    if options == {"eta": 1e-4, "gamma": 0.05}:
        at = {}
        for tau in range(1, 33):
            with contextlib.suppress(ValueError):  # no proven bound at this tau
                at[tau] = tau * exp2_proven_regret_bound(
                    n, -(-t // tau), 1 / tau, 1.0, eta=1e-4, gamma=0.05
                )
        assert lr.batch == min(at, key=at.get) == 3  # not the default step sizes' 27
    if not options:
        assert lr.batch == 27


@pytest.mark.parametrize("options", [{"eta": 0.5, "gamma": 0.9}, {"eta": 1e-6, "gamma": 1e-9}])
def test_tight_exp2_without_a_proven_bound_takes_the_paper_s_tau_and_says_so(options):
    """Step sizes that violate the proof's condition for every tau: no proven bound to tune
    (as batched HTINF), so the paper's tau, and the derivation claims no bound."""
    lr = BatchedEXP2(10, 100_000, budget=_budget(0.25), **options)
    assert lr.batch == paper_batch(0.25, 100_000) == 4
    assert "no proven regret bound" in lr.privacy.derivation
    assert _cited_bound(lr.privacy.derivation) is None
    assert lr.privacy.epsilon == pytest.approx(0.25)
    with pytest.raises(ValueError, match="violate"):
        exp2_proven_regret_bound(10, lr.rounds, lr.laplace_scale, 1.0, eta=lr.eta, gamma=lr.gamma)
