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
    assert not audit(_sampler(calibration, 1.0), a, b, **kw).refuted
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
