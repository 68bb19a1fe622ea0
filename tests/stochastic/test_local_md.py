"""LocalMD (Asi, Feldman, Koren & Talwar 2021, Algorithms 6 and 5), the second 1 < p <= 2
baseline of Han et al. App. C. Every random test uses fixed seeds, so none of them can fail by
chance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from dponline.domains.lp_ball import LpBall
from dponline.privacy.accounting import subsampled_gaussian_epsilon
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import Neighbouring, PrivacyWarning
from dponline.stochastic import local_md
from dponline.stochastic.local_md import conjugate_gradient, local_md_schedule
from tests.helpers import maybe_budget


def basis_data(n: int, d: int, theta: np.ndarray, seed: int, noise: float = 0.01):
    """x a random signed basis vector (||x||_q = 1 for every q), y = <x, theta> + noise."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, d))
    x[np.arange(n), rng.integers(0, d, n)] = rng.choice([-1.0, 1.0], n)
    return x, x @ theta + noise * rng.standard_normal(n)


def test_schedule_by_hand():
    phases = local_md_schedule(16, 4, 1.0, 2.0)
    assert [ph.samples for ph in phases] == [8, 4, 2, 1]  # floor(log2 16) = 4 phases
    assert [ph.epsilon for ph in phases] == [0.5, 0.25, 0.125, 0.0625]
    # b_1 = ceil(max(sqrt(8 / ln 4), sqrt(4 / 0.5))) = ceil(max(2.40, 2.83)) = 3
    assert [ph.batch for ph in phases] == [3, 4, 2, 1]  # later ones capped at n_i
    assert [ph.steps for ph in phases] == [8, 1, 1, 1]  # ceil(64 / 9) = 8
    assert [ph.step_factor for ph in phases] == [16.0**-i for i in range(1, 5)]
    assert [ph.radius for ph in phases] == [1.0, 0.5, 0.25, 0.125]
    # without noise only the first term: ceil(sqrt(8 / ln 4)) = 3, ceil(sqrt(4 / ln 4)) = 2
    assert [ph.batch for ph in local_md_schedule(16, 4, math.inf, 2.0)] == [3, 2, 2, 1]
    # ln d is floored at 1 for d <= 2
    assert local_md_schedule(9, 1, math.inf, 2.0)[0].batch == 2  # ceil(sqrt(4 / 1))
    assert local_md_schedule(16, 1, math.inf, 2.0)[0].batch == 3  # ceil(sqrt(8 / 1))


@pytest.mark.parametrize("p", [1.5, 1.2, 2.0])
def test_conjugate_gradient_inverts_the_mirror_map(p):
    q = p / (p - 1)
    z = np.random.default_rng(0).normal(size=(5, 4))
    u = conjugate_gradient(z, p)
    # grad h(u) = ||u||_p^(2-p) sign(u) |u|^(p-1) / (p - 1) maps it back
    norm_p = LpBall(4, p).norm(u)[:, None]
    back = norm_p ** (2 - p) * np.sign(u) * np.abs(u) ** (p - 1) / (p - 1)
    np.testing.assert_allclose(back, z, rtol=1e-10)
    np.testing.assert_allclose(norm_p[:, 0], (p - 1) * LpBall(4, q).norm(z), rtol=1e-12)
    assert np.all(conjugate_gradient(np.zeros((1, 4)), p) == 0.0)


def test_radial_scaling_is_the_bregman_projection_onto_the_ball():
    """argmin_{||u||_p <= R} h(u) - <z, u> is the unconstrained minimiser rescaled to norm R."""
    p, radius = 1.5, 0.3
    ball = LpBall(3, p)
    z = np.array([0.9, -0.4, 0.2])

    def objective(u):
        return ball.norm(u) ** 2 / (2 * (p - 1)) - z @ u

    u = conjugate_gradient(z[None], p)[0]
    assert ball.norm(u) > radius
    radial = u * radius / ball.norm(u)
    best = optimize.minimize(
        objective,
        np.zeros(3),
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda v: radius - ball.norm(v)}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert objective(radial) <= best.fun + 1e-9
    samples = np.random.default_rng(1).normal(size=(2000, 3))
    samples *= (
        radius * np.random.default_rng(2).uniform(size=(2000, 1)) / ball.norm(samples)[:, None]
    )
    assert objective(radial) <= min(objective(v) for v in samples)


def test_without_noise_it_converges():
    theta = np.array([0.5, -0.3, 0.2])
    theta *= 0.8 / np.linalg.norm(theta, 1.5)
    x, y = basis_data(200, 3, theta, 0)
    fit = local_md(
        x,
        y,
        p=1.5,
        x_bound=1.0,
        y_bound=2.0,
        budget=None,
        step_scales=(1.0, 4096.0),
        runs=2,
        rng=0,
    )
    assert fit.privacy is None and fit.theta.shape == (2, 2, 3)
    rel = ((fit.theta - theta) ** 2).sum(-1) / (theta**2).sum()
    assert rel[:, 1].max() < 5e-3  # the paper's eta_i = eta / 16^i needs a large scale here
    assert rel[:, 0].min() > 0.5


def reference_euclidean(x, y, gen, phases, sigmas, eta, radius):
    """Algorithm 6 around 5 for p = 2 written out directly: the mirror step is a gradient step,
    the Bregman projection onto the ball around the phase start a Euclidean one, and the move
    onto the domain along the ray towards the start solves a quadratic."""
    n, d = x.shape
    order = gen.permutation(n)
    start, used, hits = np.zeros(d), 0, 0
    for ph, sigma in zip(phases, sigmas, strict=True):
        own = order[used : used + ph.samples]
        used += ph.samples
        noise = sigma * gen.standard_normal((ph.steps, d)) if sigma > 0 else None
        theta, total = start.copy(), np.zeros(d)
        for t in range(ph.steps):
            batch = (
                own
                if ph.batch == ph.samples
                else own[gen.choice(ph.samples, size=ph.batch, replace=False)]
            )
            g = np.mean([2 * (x[i] @ theta - y[i]) * x[i] for i in batch], axis=0)
            if noise is not None:
                g = g + noise[t]
            u = theta - start - eta * ph.step_factor * g
            if np.linalg.norm(u) > ph.radius:
                u *= ph.radius / np.linalg.norm(u)
            if np.linalg.norm(start + u) > radius:  # ||start + t u|| = radius, 0 < t < 1
                a, b, c = u @ u, 2 * start @ u, start @ start - radius**2
                u *= (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
                hits += 1
            theta = start + u
            total += theta
        start = total / ph.steps
    return start, hits


@pytest.mark.parametrize("epsilon", [None, 1.0])
def test_matches_a_plain_statement_for_p_2(epsilon):
    x, y = basis_data(40, 3, np.array([0.6, -0.5, 0.3]), 3)
    kw = dict(
        p=2.0, radius=0.5, x_bound=1.0, y_bound=2.0, budget=maybe_budget(epsilon, 0.05, "paper")
    )
    fit = local_md(x, y, step_scales=(1.0, 3000.0), runs=2, rng=4, **kw)
    eps = math.inf if epsilon is None else epsilon
    phases = local_md_schedule(40, 3, eps, 1.0)
    sigmas = [fit.parameters.get(f"phase{ph.index}.sigma", 0.0) for ph in phases]
    hits = 0
    for k, gen in enumerate(np.random.default_rng(4).spawn(2)):
        state = gen.bit_generator.state
        for j, s in enumerate((1.0, 3000.0)):
            gen.bit_generator.state = state
            eta = fit.parameters[f"eta@{s:g}"]
            want, h = reference_euclidean(x, y, gen, phases, sigmas, eta, 0.5)
            np.testing.assert_allclose(fit.theta[k, j], want, rtol=1e-9, atol=1e-12)
            hits += h
    if epsilon is None:
        assert hits > 0  # the move onto the domain was exercised


def test_vectorised_runs_and_scales_equal_separate_calls():
    x, y = basis_data(32, 3, np.array([0.4, 0.1, -0.2]), 5)
    kw = dict(
        p=1.5,
        x_bound=1.0,
        y_bound=2.0,
        budget=PrivacyBudget(1.0, 0.05, "paper", allow_weaker=True),
        rng=6,
    )
    both = local_md(x, y, step_scales=(10.0, 1000.0), runs=3, **kw)
    for j, s in enumerate((10.0, 1000.0)):
        alone = local_md(x, y, step_scales=(s,), runs=3, **kw)
        np.testing.assert_allclose(both.theta[:, j], alone.theta[:, 0], rtol=1e-12, atol=1e-14)
    first = local_md(x, y, step_scales=(10.0, 1000.0), runs=1, **kw)
    np.testing.assert_allclose(both.theta[:1], first.theta, rtol=1e-12, atol=1e-14)


def test_privacy_tight_and_paper():
    n, d, delta = 64, 3, 1 / 64
    x, y = basis_data(n, d, np.array([0.4, 0.1, -0.2]), 7)
    kw = dict(p=1.5, x_bound=1.0, y_bound=2.0, budget=PrivacyBudget(1.0, delta))
    tight = local_md(x, y, **kw)
    paper = local_md(x, y, **{**kw, "budget": PrivacyBudget(1.0, delta, "paper")})
    g2 = d ** (0.5 - 1 / 3) * 2 * (1 + 2)  # l2 bound of a gradient: d^(1/2-1/q) L0
    phases = local_md_schedule(n, d, 1.0, 2.0)
    assert any(ph.batch < ph.samples for ph in phases)  # some phases are subsampled
    proofs = []
    for ph in phases:
        sig = paper.parameters[f"phase{ph.index}.sigma"]
        assert sig == pytest.approx(
            math.sqrt(8 * math.log(1 / delta)) * g2 / (ph.batch * ph.epsilon)
        )
        e = subsampled_gaussian_epsilon(
            sig * ph.batch / (2 * g2),
            population=ph.samples,
            sample=ph.batch,
            steps=ph.steps,
            delta=delta,
        )
        assert paper.parameters[f"phase{ph.index}.epsilon_proven"] == pytest.approx(e)
        proofs.append(e)
        # tight: recompute the phase's epsilon from the noise it used, independently of the
        # calibration; parallel composition lets every phase spend the whole budget, and 2%
        # less noise must prove more than 1 (the calibration is the least noise, not just some)
        tp = tight.parameters
        i = ph.index
        kw_t = dict(
            population=int(tp[f"phase{i}.samples"]),
            sample=int(tp[f"phase{i}.batch"]),
            steps=int(tp[f"phase{i}.steps"]),
            delta=delta,
        )
        mult = tp[f"phase{i}.sigma"] * tp[f"phase{i}.batch"] / (2 * g2)
        e_t = subsampled_gaussian_epsilon(mult, **kw_t)
        assert e_t == pytest.approx(tp[f"phase{i}.epsilon_proven"], rel=1e-9)
        assert e_t <= 1.0 < subsampled_gaussian_epsilon(0.98 * mult, **kw_t)
    assert paper.privacy.epsilon == pytest.approx(max(proofs))
    assert tight.privacy.epsilon == pytest.approx(
        max(tight.parameters[f"phase{ph.index}.epsilon_proven"] for ph in phases), rel=1e-12
    )
    assert tight.privacy.neighbouring is Neighbouring.ONE_SAMPLE
    assert tight.parameters["phase1.sigma"] < paper.parameters["phase1.sigma"]


def test_paper_proving_less_than_requested_warns():
    x, y = basis_data(64, 3, np.array([0.4, 0.1, -0.2]), 8)
    with pytest.warns(PrivacyWarning):
        fit = local_md(
            x,
            y,
            p=1.5,
            x_bound=1.0,
            y_bound=2.0,
            budget=PrivacyBudget(0.05, 1e-6, "paper", allow_weaker=True),
        )
    assert fit.privacy.epsilon > 0.05


def test_iterates_stay_in_the_domain():
    x, y = basis_data(64, 4, np.array([0.9, -0.9, 0.5, 0.5]), 9)
    fit = local_md(
        x,
        y,
        p=1.3,
        radius=0.5,
        x_bound=1.0,
        y_bound=3.0,
        budget=PrivacyBudget(0.5, 0.01, "paper", allow_weaker=True),
        step_scales=(1.0, 1e4, 1e8),
    )
    assert LpBall(4, 1.3).norm(fit.theta).max() <= 0.5 * (1 + 1e-9)


def test_inputs_are_checked():
    x, y = basis_data(10, 3, np.array([0.3, 0.1, 0.0]), 10)
    kw = dict(p=1.5, x_bound=1.0, y_bound=1.0, budget=maybe_budget(None, 0.1))
    big = y.copy()
    big[6] = 2.5
    with pytest.raises(ValueError, match=r"sample 6 .*\|y\| = 2\.5 > y_bound = 1\.0"):
        local_md(x, big, **kw)
    assert local_md(x, big, clip=True, **kw).theta.shape == (1, 1, 3)
    for p in (1.0, 3.0):
        with pytest.raises(ValueError, match="1 < p <= 2"):
            local_md(x, y, **{**kw, "p": p})
    inf = x.copy()
    inf[0, 0] = -np.inf
    with pytest.raises(ValueError, match="finite"):
        local_md(inf, y, clip=True, **kw)
