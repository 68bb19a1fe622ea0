"""The audit's test of a claim's rho-zCDP (:func:`dponline.privacy.audit.rho_lower_bound`).

Exact checks of the Bernoulli Renyi divergence and of the lemma the bound's proof rests on
(moving the two probabilities apart never lowers the divergence), a coverage check of the
confidence statement, and audits of a scalar Gaussian mechanism and of the Gaussian counters:
not refuted at their rho, refuted at half their noise where the epsilon test is not.

Statistical assertions use fixed seeds; each states its chance of a false failure.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dponline.continual import make_counter
from dponline.privacy.accounting import gaussian_sigma
from dponline.privacy.audit import (
    RHO_ORDERS,
    audit,
    bernoulli_renyi,
    clopper_pearson,
    counter_sampler,
    rho_lower_bound,
)
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyGuarantee


def _direct(p: float, q: float, a: float) -> float:
    """The divergence summed as written, in 60-digit decimals (no overflow at large orders)."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    p_, q_, a_ = Decimal(p), Decimal(q), Decimal(a)
    one = p_**a_ * q_ ** (1 - a_)
    zero = (1 - p_) ** a_ * (1 - q_) ** (1 - a_)
    return float((one + zero).ln() / (a_ - 1))


def test_bernoulli_renyi_closed_forms():
    # order 2: log(1 + chi^2), chi^2(P || Q) = (p - q)^2 / (q (1 - q))
    for p, q in [(0.6, 0.4), (0.9, 0.1), (0.01, 0.5), (0.5, 0.999)]:
        chi2 = (p - q) ** 2 / (q * (1 - q))
        assert bernoulli_renyi(p, q, 2.0) == pytest.approx(math.log1p(chi2), rel=1e-12)
        for a in (1.5, 3.0, 20.0):
            assert bernoulli_renyi(p, q, a) == pytest.approx(_direct(p, q, a), rel=1e-10)
        # order -> 1: the KL divergence
        kl = p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
        assert bernoulli_renyi(p, q, 1 + 1e-7) == pytest.approx(kl, rel=1e-5)
    assert bernoulli_renyi(0.3, 0.3, 5.0) == pytest.approx(0.0, abs=1e-15)
    # the log domain keeps tiny probabilities and large orders finite
    assert np.isfinite(bernoulli_renyi(1e-12, 0.5, 1001.0))
    assert np.isfinite(bernoulli_renyi(0.5, 1e-12, 1001.0))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(1e-6, 1 - 1e-6), min_size=4, max_size=4, unique=True),
    st.sampled_from([1.001, 1.5, 2.0, 7.0, 100.0]),
)
def test_moving_the_probabilities_apart_never_lowers_the_divergence(four, a):
    """The lemma behind the confidence bound: for p' >= p > q >= q', the divergence of
    (Bern(p'), Bern(q')) is at least that of (Bern(p), Bern(q)), in both directions."""
    q2, q, p, p2 = sorted(four)
    for big, small in [
        (bernoulli_renyi(p2, q2, a), bernoulli_renyi(p, q, a)),
        (bernoulli_renyi(q2, p2, a), bernoulli_renyi(q, p, a)),
    ]:
        assert big >= small * (1 - 1e-9) - 1e-12


def test_rho_lower_bound_is_the_divergence_at_the_confidence_corner():
    # an asymmetric pair: D(P || Q) and D(Q || P) differ, so both directions are needed
    k_a, k_b, n, alpha = 200, 20, 1000, 1e-3
    p_lo, _ = clopper_pearson(k_a, n, alpha / 2)
    _, q_hi = clopper_pearson(k_b, n, alpha / 2)
    best = max(max(_direct(p_lo, q_hi, a), _direct(q_hi, p_lo, a)) / a for a in RHO_ORDERS.tolist())
    assert rho_lower_bound(k_a, n, k_b, n, alpha) == pytest.approx(best, rel=1e-9)
    # vacuous where the intervals overlap, and when the event is likelier on B than on A
    assert rho_lower_bound(520, 1000, 480, 1000, alpha) == 0.0
    assert rho_lower_bound(0, 1000, 0, 1000, alpha) == 0.0
    assert rho_lower_bound(k_b, n, k_a, n, alpha) == 0.0  # the event is likelier on A only


def test_the_bound_covers_the_divergence_it_estimates():
    """Binomial counts at fixed probabilities: the bound exceeds the Bernoulli pair's own
    max_a D_a / a (what it bounds from below) in at most a fraction alpha of draws. alpha = 0.2,
    3,000 draws of n = 300: Clopper-Pearson is conservative, so the rate is below 0.2; the
    assertion (0.2 plus four binomial standard deviations, 0.029) fails by chance with
    probability below 1e-4 for a correct bound."""
    rng = np.random.default_rng(11)
    p, q, n, alpha = 0.62, 0.41, 300, 0.2
    truth = max(
        max(_direct(p, q, a), _direct(q, p, a)) / a for a in np.geomspace(1.0001, 1e4, 2000)
    )
    k_a, k_b = rng.binomial(n, p, 3000), rng.binomial(n, q, 3000)
    over = np.mean(
        [
            rho_lower_bound(int(x), n, int(y), n, alpha) > truth
            for x, y in zip(k_a, k_b, strict=True)
        ]
    )
    assert over <= alpha + 4 * math.sqrt(alpha * (1 - alpha) / 3000), over


def _gaussian_mechanism(sigma):
    def sampler(data, n, rng):
        return data + rng.normal(0.0, sigma, size=(n, 1))

    return sampler


def test_a_gaussian_mechanism_at_its_rho_and_at_half_its_noise():
    """A scalar Gaussian mechanism of sensitivity 1 calibrated to (1, 1e-5): its rho
    (1 / (2 sigma^2)) is not refuted (false failure <= alpha = 1e-3 per claim); at half the
    noise the mechanism has 4 rho and the rho test refutes the claim 2.1x over it at this seed,
    where the epsilon test, which must find events of probability near delta, is at 1.02x
    (the best it can reach at these trials)."""
    sigma = gaussian_sigma(1.0, 1.0, 1e-5)
    claim = PrivacyGuarantee(1.0, 1e-5, rho=1 / (2 * sigma**2), derivation="the test's")
    kw = dict(claim=claim, trials=40_000, pilot_trials=10_000, rng=5)
    full = audit(_gaussian_mechanism(sigma), np.zeros(1), np.ones(1), **kw)
    assert full.rho is not None and not full.any_refuted, str(full)
    half = audit(_gaussian_mechanism(sigma / 2), np.zeros(1), np.ones(1), **kw)
    assert half.rho is not None and half.rho.refuted and half.any_refuted, str(half)
    rho_margin, epsilon_margin = half.rho.rho_lower / claim.rho, half.epsilon_lower / claim.epsilon
    assert rho_margin > 1.5 and rho_margin > epsilon_margin + 0.5, str(half)
    assert "rho >=" in str(half) and half.rho.counts[1] == 40_000


def test_no_rho_test_without_a_rho():
    sampler = _gaussian_mechanism(1.0)
    res = audit(sampler, np.zeros(1), np.ones(1), claim=(1.0, 1e-5), trials=2000, rng=0)
    assert res.rho is None and res.any_refuted == res.refuted
    pure = PrivacyGuarantee(1.0, 0.0)
    res = audit(sampler, np.zeros(1), np.ones(1), claim=pure, trials=2000, rng=0)
    assert res.rho is None


T = 16
A = np.zeros((T, 1))
B = A.copy()
B[0, 0] = 1.0


@pytest.mark.parametrize("mech", ["binary_tree", "honaker", "sqrt_factorization", "blt"])
def test_gaussian_counters_at_their_rho_and_at_half_their_noise(mech):
    """Round 1 moved across [0, 1] (the counters' whole sensitivity): each counter's rho is
    not refuted at its noise (false failure <= alpha = 1e-3) and refuted at half of it (at
    this seed 1.8x-2.3x over the claim; the epsilon test's bounds there are 1.03-1.10)."""
    ref = make_counter(
        mech, horizon=T, bounds=Box(0, 1, dim=1), budget=PrivacyBudget(1.0, 1e-5), noise="gaussian"
    )
    assert ref.privacy.rho is not None
    results = []
    for fraction in (1.0, 0.5):
        cls, scaled = type(ref), ref.noise.scaled(fraction)

        def factory(replicas, rng, cls=cls, scaled=scaled):
            return cls(T, 1, scaled, replicas=replicas, rng=rng)

        results.append(
            audit(
                counter_sampler(factory),
                A,
                B,
                claim=ref.privacy,
                trials=50_000,
                pilot_trials=12_500,
                rng=1,
            )
        )
    full, half = results
    assert not full.any_refuted, str(full)
    assert half.rho is not None and half.rho.refuted, str(half)


def test_the_rho_orders_reach_the_best_order_of_a_separated_pair():
    """The grid's best order is within 1% of a continuous optimum for pairs an audit meets."""
    for p, q in [(0.55, 0.45), (0.7, 0.3), (0.2, 0.01), (0.99, 0.5)]:
        fine = np.geomspace(1.0001, 1e4, 20_000)
        cont = max(
            np.max(bernoulli_renyi(p, q, fine) / fine), np.max(bernoulli_renyi(q, p, fine) / fine)
        )
        grid = max(
            np.max(bernoulli_renyi(p, q, RHO_ORDERS) / RHO_ORDERS),
            np.max(bernoulli_renyi(q, p, RHO_ORDERS) / RHO_ORDERS),
        )
        assert grid <= cont * (1 + 1e-12) and grid >= 0.99 * cont, (p, q, grid, cont)
