"""EXP3 and robust EXP3 (the skipping rule for noisy losses): hand cases, the bound's
constants, the bias lemma of the proof, regret against the bound, state and replicas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from dponline.bandits.exp3 import (
    DEFAULT_THRESHOLD,
    EXP3,
    exp3_parameters,
    exp3_regret_bound,
    laplace_second_moment,
    robust_exp3_parameters,
    robust_exp3_regret_bound,
    sample_rows,
    skip_constant,
)
from dponline.privacy.arguments import ArgumentError


def _exp3(k=3, replicas=2, eta=0.5, threshold=None, seed=0):
    return EXP3(k, eta=eta, replicas=replicas, rng=np.random.default_rng(seed), threshold=threshold)


def test_one_update_by_hand():
    alg = _exp3(k=3, replicas=2, eta=0.5)
    np.testing.assert_allclose(alg.probabilities(), 1 / 3)
    arms = alg.act()
    alg.learn(np.array([0.6, 0.3]))
    # l~ = y / x(I) = y * 3 at the arm played; x' proportional to exp(-eta l~)
    for r, (arm, y) in enumerate(zip(arms, [0.6, 0.3], strict=True)):
        w = np.ones(3)
        w[arm] = math.exp(-0.5 * y * 3)
        np.testing.assert_allclose(alg.probabilities()[r], w / w.sum(), rtol=1e-12)


def test_skipping_rule_is_two_sided_and_at_c_x_over_eta():
    # x(I) = 1/2, eta = 1, c = 1: values with |y| <= 0.5 are kept, the others skipped
    for y, kept in ((0.49, True), (-0.49, True), (0.51, False), (-3.0, False)):
        alg = _exp3(k=2, replicas=1, eta=1.0, threshold=1.0)
        alg.act()
        alg.learn(np.array([y]))
        moved = not np.allclose(alg.probabilities(), 0.5)
        assert moved == kept, y
    # a kept estimate moves the log-weight by at most c
    alg = _exp3(k=2, replicas=1, eta=1.0, threshold=1.0)
    arm = alg.act()[0]
    alg.learn(np.array([-0.5]))
    p = alg.probabilities()[0]
    assert math.log(p[arm] / p[1 - arm]) == pytest.approx(1.0)


def test_constants_by_hand():
    assert exp3_parameters(10, 1000) == pytest.approx(math.sqrt(2 * math.log(10) / 10_000))
    assert exp3_regret_bound(10, 1000) == pytest.approx(math.sqrt(2 * 1000 * 10 * math.log(10)))
    c = 1.3
    assert skip_constant(c) == pytest.approx((math.exp(c) - 1 - c) / c**2 + 1 / c)
    # h is least at c = 2 (1 - e^-c) = 1.594, value 1.544; the default threshold is next to it
    cs = np.linspace(0.5, 3.0, 2501)
    hs = [skip_constant(x) for x in cs]
    assert cs[int(np.argmin(hs))] == pytest.approx(1.594, abs=2e-3)
    assert min(hs) == pytest.approx(1.544, abs=1e-3)
    assert skip_constant(DEFAULT_THRESHOLD) < min(hs) + 1e-4
    assert laplace_second_moment(1.0) == 3.0 and laplace_second_moment(0.5, 2.0) == 4.5


def test_robust_rate_minimises_the_bound():
    k, n, s2 = 10, 5000, 3.0
    eta = robust_exp3_parameters(k, n, s2)
    best = robust_exp3_regret_bound(k, n, s2)
    assert best == pytest.approx(2 * math.sqrt(n * k * s2 * skip_constant(1.6) * math.log(k)))
    for f in (0.8, 1.25):
        assert robust_exp3_regret_bound(k, n, s2, eta=eta * f) > best


@pytest.mark.parametrize("s", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("r", [0.2, 1.0, 4.0])
def test_skipped_mass_has_nonnegative_mean_for_symmetric_noise(s, r):
    """Step (2) of the proof: E[(s + Z) 1{|s + Z| > r}] >= 0 for s >= 0 and Z ~ Laplace(b),
    computed by quadrature (it is what makes skipping never favour the comparator), and at
    most E[(s + Z)^2] / r (the bias bound)."""
    for b in (0.3, 1.0, 3.0):
        f = lambda z, b=b: (s + z) * math.exp(-abs(z) / b) / (2 * b)  # noqa: E731
        mean = integrate.quad(f, r - s, math.inf)[0] + integrate.quad(f, -math.inf, -r - s)[0]
        assert mean >= -1e-12
        assert abs(mean) <= (s * s + 2 * b * b) / r + 1e-12


def test_sampler_never_picks_a_zero_probability_arm():
    p = np.array([[0.5, 0.5, 0.0]] * 3)
    u = np.array([0.0, 0.4999, 1.0 - 1e-16])
    assert sample_rows(p, u).tolist() == [0, 0, 1]


def test_regret_within_robust_bound_under_laplace_noise():
    """Robust EXP3 fed y = l + Lap(1) on an adversarial switching sequence: the mean realised
    regret of 200 replicas stays below the proven bound (the bound is ~10x the mean, so a false
    failure would need a 10-sigma excursion), and below uniform play's."""
    from dponline.environments.experts import switching_best_losses

    T, K, R = 2000, 5, 200
    losses = switching_best_losses(T, K, switches=2, gap=0.3, rng=3)
    s2 = laplace_second_moment(1.0)
    alg = EXP3(K, eta=robust_exp3_parameters(K, T, s2), replicas=R,
               rng=np.random.default_rng(1), threshold=DEFAULT_THRESHOLD)  # fmt: skip
    noise = np.random.default_rng(2)
    cum = np.zeros(R)
    for t in range(T):
        arms = alg.act()
        cum += losses[t, arms]
        alg.learn(losses[t, arms] + noise.laplace(0.0, 1.0, R))
    regret = cum - losses.sum(axis=0).min()
    uniform = losses.sum() / K - losses.sum(axis=0).min()
    assert regret.mean() <= robust_exp3_regret_bound(K, T, s2)
    assert regret.mean() < uniform


def test_state_resumes_bit_for_bit_and_corrupt_state_is_refused():
    values = np.random.default_rng(0).normal(0.5, 1.0, (10, 4))

    def run(alg, rounds):
        out = []
        for t in rounds:
            out.append(alg.act())
            alg.learn(values[t])
        return out

    reference = run(_exp3(k=4, replicas=4, threshold=1.6, seed=3), range(10))
    part = _exp3(k=4, replicas=4, threshold=1.6, seed=3)
    first = run(part, range(5))
    saved = part.state_dict()
    resumed = _exp3(k=4, replicas=4, threshold=1.6, seed=99)
    resumed.load_state_dict(saved)
    for a, b in zip(reference, first + run(resumed, range(5, 10)), strict=True):
        np.testing.assert_array_equal(a, b)
    before = resumed.state_dict()
    with pytest.raises(ArgumentError, match="log_w"):
        resumed.load_state_dict(dict(saved, log_w=np.zeros((4, 5))))
    with pytest.raises(ArgumentError, match="chosen"):
        resumed.load_state_dict(dict(saved, chosen=np.full(4, 7)))
    with pytest.raises(ArgumentError, match="other arms or step sizes"):
        _exp3(k=4, replicas=4, eta=0.1).load_state_dict(saved)
    np.testing.assert_array_equal(resumed.state_dict()["log_w"], before["log_w"])


def test_replicas_are_independent():
    alg = _exp3(k=5, replicas=6, eta=0.3)
    arms = np.stack([alg.act() for _ in range(30)], axis=1)
    assert len({tuple(r) for r in arms}) == 6
