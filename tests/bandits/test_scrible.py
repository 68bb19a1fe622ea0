"""DP-SCRiBLe (Agarwal & Singh 2017, Algorithm 4 around SCRiBLe, Theorem 4.5)."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits.scrible import DPSCRiBLe, scrible_regret_bound
from dponline.domains import (
    BallBarrier,
    Box,
    BoxBarrier,
    LpBall,
    Polytope,
    PolytopeBarrier,
    Simplex,
)
from dponline.privacy.audit import audit
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyWarning
from dponline.protocol import BanditFeedback
from tests.helpers import maybe_budget

POLY_A = np.r_[np.eye(3), -np.eye(3), np.ones((1, 3))]
POLY_B = np.r_[np.ones(3), np.ones(3), [1.5]]
DOMAINS = {"ball": LpBall(3, 2.0), "box": Box(3), "polytope": Polytope(POLY_A, POLY_B)}


def _losses(T, N, seed=0):
    rng = np.random.default_rng(seed)
    L = 0.3 * np.ones(N) / np.sqrt(N) + rng.normal(size=(T, N)) / np.sqrt(N)
    return L / np.maximum(np.linalg.norm(L, axis=1, keepdims=True) * (1 + 1e-12), 1.0)


def test_the_barrier_comes_from_the_domain():
    assert DOMAINS["ball"].barrier == BallBarrier(3)
    assert DOMAINS["box"].barrier == BoxBarrier(3)
    poly = DOMAINS["polytope"].barrier
    assert isinstance(poly, PolytopeBarrier) and repr(poly) == repr(PolytopeBarrier(POLY_A, POLY_B))
    for no_barrier in (
        LpBall(3, 1.5),
        Simplex(3),
        Polytope(-np.eye(3), np.zeros(3), [[1, 1, 1]], [1]),
    ):
        with pytest.raises(TypeError, match="self-concordant barrier"):
            DPSCRiBLe(no_barrier, 10, budget=PrivacyBudget(1.0))
    with pytest.raises(TypeError, match="ConvexDomain"):
        DPSCRiBLe(BallBarrier(3), 10, budget=PrivacyBudget(1.0))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", DOMAINS)
def test_dikin_points_stay_inside_and_ftrl_point_is_optimal(name):
    domain = DOMAINS[name]
    barrier = domain.barrier
    lr = DPSCRiBLe(domain, 200, budget=PrivacyBudget(1.0), replicas=8, rng=0)
    L = _losses(200, 3)
    for t in range(200):
        y = lr.act()
        assert barrier.contains(y).all() and domain.contains(y).all()
        lr.observe(BanditFeedback(y @ L[t]))
    # x_t minimises eta <L~, x> + R(x): the gradient vanishes
    g = lr.eta * lr.algorithm._cum + barrier.gradient(lr.algorithm._x)
    np.testing.assert_allclose(g, 0.0, atol=1e-6)


def test_loss_estimate_is_unbiased():
    """E[N <l, y> s lambda_i^{1/2} e_i] = l: Monte Carlo over 400,000 replicas."""
    R = 400_000
    lr = DPSCRiBLe(DOMAINS["box"], 10, budget=None, replicas=R, rng=2)
    lr.algorithm._x = np.tile([0.3, -0.2, 0.5], (R, 1))  # an off-centre point
    loss = np.array([0.5, -0.3, 0.2])
    y = lr.act()
    est = lr.dim * (y @ loss)[:, None] * lr.algorithm._direction
    # per-coordinate sd of the mean <= ~0.01 here; 0.05 is > 5 sd
    np.testing.assert_allclose(est.mean(axis=0), loss, atol=0.05)


def test_privacy_tight_and_paper():
    tight = DPSCRiBLe(DOMAINS["ball"], 100, budget=PrivacyBudget(0.5), rng=0)
    # unit l2 ball of losses: l1 diameter 2 sqrt(3)
    assert tight.laplace_scale == pytest.approx(2 * np.sqrt(3) / 0.5)
    assert tight.privacy.epsilon == pytest.approx(0.5)
    with pytest.warns(PrivacyWarning, match="proves only"):
        paper = DPSCRiBLe(
            DOMAINS["ball"], 100, budget=PrivacyBudget(0.5, 0.0, "paper", allow_weaker=True), rng=0
        )
    assert paper.laplace_scale == pytest.approx(np.sqrt(3) / 0.5)  # ||Y||_1 / eps
    assert paper.privacy.epsilon == pytest.approx(1.0)


def test_input_contract():
    lr = DPSCRiBLe(DOMAINS["ball"], 10, budget=PrivacyBudget(1.0), rng=0)
    with pytest.raises(ValueError, match="must follow act"):
        lr.observe(BanditFeedback(np.array([0.1])))
    y = lr.act()
    too_big = 2.0 * np.linalg.norm(y) + 1.0
    with pytest.raises(ValueError, match="outside the declared bounds"):
        lr.observe(BanditFeedback(np.array([too_big])))
    with pytest.raises(ValueError, match="finite"):
        lr.observe(BanditFeedback(np.array([np.inf])))


@pytest.mark.parametrize("name", DOMAINS)
@pytest.mark.parametrize("epsilon", [None, 1.0])
def test_regret_within_theorem_4_5(name, epsilon):
    domain, T, R = DOMAINS[name], 2000, 10
    barrier = domain.barrier
    L = _losses(T, 3)
    lr = DPSCRiBLe(domain, T, budget=maybe_budget(epsilon), replicas=R, rng=1)
    cum = np.zeros(R)
    for t in range(T):
        y = lr.act()
        lr.observe(BanditFeedback(y @ L[t]))
        cum += y @ L[t]
    regret = (cum - domain.min_linear(L.sum(axis=0))).mean()
    y1 = NormBall(1.0, 2, 3).max_norm(1)
    bound = scrible_regret_bound(barrier.nu, 3, T, lr.m, barrier.max_norm(), y1, epsilon)
    assert regret <= bound


def test_resume_bit_for_bit():
    L = _losses(30, 3)

    def run(lr, a, b):
        out = []
        for t in range(a, b):
            y = lr.act()
            out.append(y)
            lr.observe(BanditFeedback(y @ L[t]))
        return out

    full = run(DPSCRiBLe(DOMAINS["box"], 30, budget=PrivacyBudget(1.0), replicas=3, rng=5), 0, 30)
    part = DPSCRiBLe(DOMAINS["box"], 30, budget=PrivacyBudget(1.0), replicas=3, rng=5)
    run(part, 0, 11)
    resumed = DPSCRiBLe(DOMAINS["box"], 30, budget=PrivacyBudget(1.0), replicas=3, rng=5)
    resumed.load_state_dict(part.state_dict())
    for a, b in zip(run(resumed, 11, 30), full[11:], strict=True):
        np.testing.assert_array_equal(a, b)
    other = DPSCRiBLe(DOMAINS["box"], 30, budget=PrivacyBudget(2.0), replicas=3, rng=5)
    with pytest.raises(ValueError, match="different noise"):
        other.load_state_dict(part.state_dict())


def _sampler(fraction):
    """Two rounds on the interval [-1, 1] (N = 1) with a large step: round 1's loss moves the
    second point; the output is the second point played."""

    def sample(losses, n, rng):
        lr = DPSCRiBLe(
            Box(1),
            2,
            budget=PrivacyBudget(1.0),
            eta=3.0,
            replicas=n,
            rng=rng,
            loss_bounds=NormBall(1.0, 2, 1),
        )
        if fraction != 1.0:
            lr.scale_noise(fraction)  # the public handle
        out = []
        for t in range(2):
            y = lr.act()
            out.append(y[:, 0])
            lr.observe(BanditFeedback(y @ losses[t]))
        return np.stack(out, axis=1)

    return sample


def test_audit_not_refuted_and_a_tenth_of_the_noise_refuted():
    a = np.array([[-1.0], [0.0]])
    b = np.array([[1.0], [0.0]])
    claim = DPSCRiBLe(Box(1), 2, budget=PrivacyBudget(1.0), loss_bounds=NormBall(1.0, 2, 1)).privacy
    kw = dict(claim=claim, trials=100_000, pilot_trials=20_000, rng=6)
    ok = audit(_sampler(1.0), a, b, **kw)
    assert not ok.any_refuted, str(ok)  # false refutation chance <= 1e-3 per claim
    bad = audit(_sampler(0.1), a, b, **kw)
    assert bad.refuted, str(bad)


@pytest.mark.parametrize("epsilon", [None, 1.0])
def test_regret_within_theorem_4_5_on_an_adversarial_sequence(epsilon):
    """Losses that flip direction in blocks of 250 rounds (oblivious adversary), unit ball."""
    T, R, N = 2000, 10, 3
    base = np.ones(N) / np.sqrt(N)
    L = np.array([base if (t // 250) % 2 == 0 else -0.5 * base for t in range(T)])
    domain = DOMAINS["ball"]
    barrier = domain.barrier
    lr = DPSCRiBLe(domain, T, budget=maybe_budget(epsilon), replicas=R, rng=4)
    cum = np.zeros(R)
    for t in range(T):
        y = lr.act()
        lr.observe(BanditFeedback(y @ L[t]))
        cum += y @ L[t]
    regret = (cum - domain.min_linear(L.sum(axis=0))).mean()
    y1 = NormBall(1.0, 2, N).max_norm(1)
    assert regret <= scrible_regret_bound(barrier.nu, N, T, lr.m, barrier.max_norm(), y1, epsilon)


def test_value_check_uses_the_attainable_interval_of_a_lopsided_box():
    """Box(0, 1) losses at a positive point give values in [0, <1, y>]: a negative value could
    come from no loss in Y and would double the sensitivity, so it is refused."""
    from dponline.privacy.bounds import Box as LossBox

    lr = DPSCRiBLe(
        Box(1, 10.0, 11.0),
        10,
        budget=PrivacyBudget(1.0),
        loss_bounds=LossBox(0.0, 1.0, dim=1),
        rng=0,
    )
    y = lr.act()
    with pytest.raises(ValueError, match="outside the declared bounds"):
        lr.observe(BanditFeedback(-y[:, 0] * 0.5))
    lr.observe(BanditFeedback(y[:, 0] * 0.5))  # inside [0, y]


def test_huge_step_is_a_clear_error_not_nan():
    lr = DPSCRiBLe(DOMAINS["ball"], 100, budget=PrivacyBudget(1.0), eta=1e12, rng=0)
    with pytest.raises(ValueError, match="eta"):
        for _ in range(100):
            y = lr.act()
            lr.observe(BanditFeedback(y @ np.ones(3) / np.sqrt(3)))


def test_state_from_another_barrier_or_replica_count_is_refused():
    a = DPSCRiBLe(DOMAINS["ball"], 10, budget=PrivacyBudget(1.0), replicas=2, rng=0)
    with pytest.raises(ValueError, match="different"):
        DPSCRiBLe(DOMAINS["box"], 10, budget=PrivacyBudget(1.0), replicas=2, rng=0).load_state_dict(
            a.state_dict()
        )
    with pytest.raises(ValueError, match="different"):
        DPSCRiBLe(
            DOMAINS["ball"], 10, budget=PrivacyBudget(1.0), replicas=1, rng=0
        ).load_state_dict(a.state_dict())
    p1 = DPSCRiBLe(DOMAINS["polytope"], 10, budget=PrivacyBudget(1.0), rng=0)
    p2 = DPSCRiBLe(Polytope(POLY_A.copy(), POLY_B.copy()), 10, budget=PrivacyBudget(1.0), rng=0)
    p2.load_state_dict(p1.state_dict())  # equal polytopes are the same configuration


def test_eigenpairs_do_not_depend_on_the_basis_lapack_returns():
    """A repeated eigenvalue's eigenspace has no preferred basis and each vector no preferred
    sign: LAPACK builds differ (a numpy upgrade changed SCRiBLe's plays on the box at a fixed
    seed). Any rotation within the double eigenvalue's eigenspace and any sign flips give the
    same canonical eigenpairs, which stay orthonormal eigenvectors of the matrix; distinct
    eigenvalues keep their vectors up to sign."""
    from dponline.bandits.scrible import canonical_eigenpairs

    rng = np.random.default_rng(11)
    for _ in range(20):
        u = rng.normal(size=4)
        u /= np.linalg.norm(u)
        w = rng.normal(size=4)
        w -= (w @ u) * u
        w /= np.linalg.norm(w)
        h = 2.0 * np.eye(4) + 0.3 * np.outer(u, u) + 0.7 * np.outer(w, w)  # 2, 2, 2.3, 2.7
        vals, vecs = np.linalg.eigh(h)
        theta = rng.uniform(0.0, 2 * np.pi)
        rot = np.eye(4)
        rot[:2, :2] = [[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]]
        other = vecs @ rot * rng.choice([-1.0, 1.0], size=4)
        both = np.stack([vecs, other])
        cv, cvecs = canonical_eigenpairs(np.stack([vals, vals]), both)
        np.testing.assert_allclose(cvecs[0], cvecs[1], atol=1e-12)
        np.testing.assert_array_equal(cv[0], vals)
        np.testing.assert_allclose(h @ cvecs[0], cvecs[0] * vals, atol=1e-12)
        np.testing.assert_allclose(cvecs[0].T @ cvecs[0], np.eye(4), atol=1e-12)
        # the two distinct eigenvalues' vectors are eigh's up to sign
        np.testing.assert_allclose(np.abs(cvecs[0][:, 2:]), np.abs(vecs[:, 2:]), atol=1e-12)
