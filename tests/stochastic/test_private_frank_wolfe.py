"""Private streaming Frank-Wolfe (Han et al., Algorithm 1) for the squared loss."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dponline.domains.lp_ball import LpBall
from dponline.privacy.audit import audit
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.generalized_gaussian import lq_regularity
from dponline.protocol import SampleFeedback
from dponline.stochastic import StreamingFrankWolfe
from dponline.stochastic.private_frank_wolfe import PrivateStreamingFrankWolfe, han_sigma_plus
from tests.helpers import iterates_on_stream, label_flip_pair, with_noise_fraction


def test_without_noise_it_is_the_streaming_frank_wolfe():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3))
    x /= np.abs(x).sum(axis=1, keepdims=True) * (1 + 1e-12)  # l_q norm 1 (q = 1, p = inf)
    y = rng.uniform(-1, 1, size=50)
    ref = StreamingFrankWolfe(
        LpBall(3, math.inf), lambda th, xx, yy: 2 * ((th @ xx) - yy)[..., None] * xx
    )
    lr = PrivateStreamingFrankWolfe(LpBall(3, math.inf), 50, budget=None)
    lr.act()
    for i in range(50):
        expected = ref.step(x[i], y[i])
        lr.observe(SampleFeedback(x[i], y[i]))
        np.testing.assert_allclose(lr.act(), expected, atol=1e-12)


def test_constants_and_paper_sigma():
    lr = PrivateStreamingFrankWolfe(
        LpBall(10, 1.5),
        2000,
        x_bound=1.0,
        y_bound=1.25,
        budget=PrivacyBudget(1.0, 1 / 2000, "paper", allow_weaker=True),
    )
    assert lr.lipschitz == pytest.approx(2 * (1 + 1.25))  # 2 (X r + Y) X
    assert lr.beta == 2.0 and lr.sensitivity == pytest.approx(2 * (2 * 2 + 4.5))
    reg = lq_regularity(3.0, 10)
    sigma_plus = han_sigma_plus(2000, reg.kappa, 2.0, 2.0, 4.5, 1.0, 1 / 2000)
    assert lr.noise.sigma * reg.norm_scale == pytest.approx(sigma_plus)
    assert lr.privacy.neighbouring.value.startswith("datasets differing in one sample")


def test_tight_noise_is_smaller_and_proven():
    kw = dict(x_bound=1.0, y_bound=1.0)
    for p in (1.5, math.inf):
        paper_budget = PrivacyBudget(1.0, 1e-4, "paper")
        paper = PrivateStreamingFrankWolfe(LpBall(5, p), 1000, budget=paper_budget, **kw)
        tight_budget = PrivacyBudget(1.0, 1e-4)
        tight = PrivateStreamingFrankWolfe(LpBall(5, p), 1000, budget=tight_budget, **kw)
        assert tight.privacy.epsilon <= 1.0 + 1e-9 and tight.privacy.delta == 1e-4
        probe = np.random.default_rng(1)
        q_norm = LpBall(5, LpBall(5, p).q).norm
        assert (
            q_norm(tight.noise.sample(probe, (2000, 5))).mean()
            < q_norm(paper.noise.sample(probe, (2000, 5))).mean()
        )


def test_input_contract():
    lr = PrivateStreamingFrankWolfe(
        LpBall(2, 2.0), 10, budget=PrivacyBudget(1.0, 1e-6), x_bound=1.0, y_bound=1.0, rng=0
    )
    lr.act()
    with pytest.raises(ValueError, match="outside the declared bounds"):
        lr.observe(SampleFeedback(np.array([2.0, 0.0]), 0.0))
    with pytest.raises(ValueError, match="finite"):
        lr.observe(SampleFeedback(np.array([0.1, np.nan]), 0.0))
    clipped = PrivateStreamingFrankWolfe(
        LpBall(2, 2.0), 10, budget=PrivacyBudget(1.0, 1e-6), clip=True, rng=0
    )
    clipped.act()
    clipped.observe(SampleFeedback(np.array([2.0, 0.0]), 5.0))
    assert clipped.t == 1
    with pytest.raises(ValueError, match="1 < p"):
        PrivateStreamingFrankWolfe(LpBall(2, 1.0), 10, budget=PrivacyBudget(1.0, 1e-6))
    from dponline.domains import Box

    with pytest.raises(TypeError, match="LpBall"):
        PrivateStreamingFrankWolfe(Box(2), 10, budget=PrivacyBudget(1.0, 1e-6))


AUDIT_LABEL = 100.0  # Y: the label-flip pair then moves g_1 by 400 of the proven 412


def _sampler(calibration, fraction, n=4, d=2):
    def sample(data, m, rng):
        lr = PrivateStreamingFrankWolfe(
            LpBall(d, 1.5),
            n,
            x_bound=1.0,
            y_bound=AUDIT_LABEL,
            budget=PrivacyBudget(1.0, 1e-5, calibration),
            replicas=m,
            rng=rng,
        )
        with_noise_fraction(lr, fraction, rng)
        return iterates_on_stream(lr, data)

    return sample


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_audit(calibration):
    """Datasets differing in sample 1's label (+Y vs -Y, Y = 100), a pair that moves g_1 by 4Y =
    400 against the proven sensitivity 2(beta D + L) = 412. Correct noise: not refuted (chance
    <= 1e-3; measured lower bounds 0.22 tight, 0.05 paper). A tenth of the noise: refuted
    (measured 4.2 tight, 1.6 paper)."""
    n, d = 4, 2
    a, b = label_flip_pair(n, d, AUDIT_LABEL)
    claim = PrivateStreamingFrankWolfe(
        LpBall(d, 1.5),
        n,
        x_bound=1.0,
        y_bound=AUDIT_LABEL,
        budget=PrivacyBudget(1.0, 1e-5, calibration),
    ).privacy
    kw = dict(claim=claim, trials=50_000, pilot_trials=10_000, rng=2)
    assert not audit(_sampler(calibration, 1.0), a, b, **kw).any_refuted
    assert audit(_sampler(calibration, 0.1), a, b, **kw).refuted


def test_large_epsilon_uses_exact_gaussian_accounting_and_paper_refuses():
    tight = PrivateStreamingFrankWolfe(LpBall(5, 1.5), 1000, budget=PrivacyBudget(30.0, 1e-3))
    assert tight.privacy.epsilon <= 30.0 and "Gaussian" in tight.privacy.derivation
    with pytest.raises(ValueError, match=r"Lemma 2\.7"):
        PrivateStreamingFrankWolfe(
            LpBall(5, 1.5),
            1000,
            budget=PrivacyBudget(30.0, 1e-3, "paper", allow_weaker=True),
        )


@pytest.mark.parametrize("name", ["logistic", "huber"])
def test_smooth_glm_losses_take_their_constants_and_gradients_from_the_link(name):
    from dponline.losses import link_by_name

    ball, x_bound, y_bound = LpBall(3, 2.0, 2.0), 1.0, 1.0
    lr = PrivateStreamingFrankWolfe(
        ball, 5, x_bound=x_bound, y_bound=y_bound, budget=None, loss=name, replicas=2
    )
    link = link_by_name(name)
    # L = sup |f'| X over |z| <= X r, beta = sup f'' X^2 (r = 2)
    assert lr.lipschitz == pytest.approx(link.max_d1(2.0, 1.0))
    assert lr.beta == pytest.approx(link.max_d2(1.0))
    if name == "logistic":
        assert lr.lipschitz == pytest.approx(1 / (1 + math.exp(-2.0)))
        assert lr.beta == 0.25
    else:
        assert (lr.lipschitz, lr.beta) == (1.0, 1.0)
    # one step by hand (no noise): theta_1 = 0, g_1 = 2 grad f(theta_1) - grad f(theta_0), d_1 =
    # g_1 / 2, v_1 = LMO(d_1), theta_2 = theta_1 + (v_1 - theta_1) / 2
    x, y = np.array([0.6, -0.8, 0.0]), 1.0
    theta = lr.act()
    lr.observe(SampleFeedback(x, y))
    g = link.d1(np.zeros(2), y)[:, None] * x[None, :]  # theta_0 = theta_1 = 0
    v = ball.lmo(g / 2)
    np.testing.assert_allclose(lr.act(), theta + (v - theta) / 2, atol=1e-12)
    # the sensitivity of Theorem 3.1's proof, 2 (beta D + L), sets the private noise
    private = PrivateStreamingFrankWolfe(
        ball, 50, x_bound=x_bound, y_bound=y_bound, budget=PrivacyBudget(1.0, 1e-5), loss=name
    )
    assert private.sensitivity == pytest.approx(2 * (private.beta * 4.0 + private.lipschitz))
    assert private.privacy.epsilon <= 1.0 + 1e-9


def test_logistic_labels_are_checked_and_the_logistic_algorithm_learns():
    ball = LpBall(2, 2.0, 3.0)
    lr = PrivateStreamingFrankWolfe(ball, 10, budget=None, loss="logistic")
    lr.act()
    with pytest.raises(ValueError, match="logistic labels"):
        lr.observe(SampleFeedback(np.array([0.5, 0.5]), 0.3))
    # separable data along w: the last iterate's mean logistic loss is well below log 2 (theta = 0)
    gen = np.random.default_rng(0)
    w = np.array([0.8, 0.6])
    xs = gen.normal(size=(2000, 2))
    xs /= np.maximum(np.linalg.norm(xs, axis=1, keepdims=True), 1.0) * (1 + 1e-12)
    ys = np.where(xs @ w >= 0, 1.0, -1.0)
    learner = PrivateStreamingFrankWolfe(ball, 2000, budget=None, loss="logistic")
    for x, y in zip(xs, ys, strict=True):
        learner.act()
        learner.observe(SampleFeedback(x, y))
    theta = learner.act()[0]
    assert np.mean(np.logaddexp(0.0, -ys * (xs @ theta))) < 0.5 * math.log(2.0)


def test_tight_picks_the_counter_whose_noisiest_release_is_smallest():
    # T = 1000, d = 5, p = 1.5 (Han et al.'s setting): the square root's release noise is about
    # 0.3x the tree's in l_q at the same proven (1, 1/T); the guarantee is the budget's
    ball = LpBall(5, 1.5)
    budget = PrivacyBudget(1.0, 1e-3)
    lr = PrivateStreamingFrankWolfe(ball, 1000, x_bound=1.0, y_bound=1.25, budget=budget)
    assert lr.counter.name == "scaled_sqrt"
    assert lr.privacy.epsilon <= 1.0 + 1e-9 and lr.privacy.delta <= 1e-3
    cal = lr.calibrator
    b = cal._neighbours(budget)
    tree = cal._counter("gaussian").tight(b)
    chosen = cal.tight(budget)
    ratio = cal.release_noise_size(chosen) / cal.release_noise_size(tree)
    assert 0.2 < ratio < 0.45
    # the release variance the counter reports is the one the size was computed from
    v = max(lr.counter.variance(t) for t in range(1, 1001))
    assert v == pytest.approx(lr.counter.variances().max())
