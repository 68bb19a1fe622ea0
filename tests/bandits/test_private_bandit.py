"""PrivateBandit (Ene, Nguyen & Vladu 2021, Algorithm 1): schedule, smoothing in the affine
hull, the oracle budget, the sensitivity of the batch sums (Lemmas 5.1, 5.3, 5.4) on the actual
vectors, input bounds, calibrations and regret; the tight calibration's noise in the affine hull
(the lemma of ``bandits/ene_noise.py``: sensitivities by brute force on a path polytope, the
saving at the same epsilon, one lookup and one proof, an audit on a full-dimensional set)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from dponline.bandits.ene_noise import ene_gaussian_sigma, ene_laplace_scale
from dponline.bandits.noisy_oco import SphericalSmoothing
from dponline.bandits.private_bandit import PrivateBandit, batch_schedule, default_zeta
from dponline.domains.box import Box
from dponline.domains.lp_ball import LpBall
from dponline.domains.paths import PathPolytope
from dponline.domains.simplex import Simplex
from dponline.environments.bandit_convex import (
    BanditConvexEnvironment,
    LinearLosses,
    bandit_convex,
    grid_dag,
)
from dponline.privacy.accounting import gaussian_sigma
from dponline.privacy.budget import PrivacyBudget, WeakerGuaranteeError
from dponline.privacy.guarantee import PrivacyWarning
from dponline.protocol import BanditFeedback


class CountingDomain(Simplex):
    """The simplex, counting its oracle calls."""

    calls = 0

    def lmo(self, direction: np.ndarray) -> np.ndarray:
        type(self).calls += 1
        return super().lmo(direction)


def run(learner: PrivateBandit, env: BanditConvexEnvironment) -> tuple[np.ndarray, np.ndarray]:
    """Play the whole horizon; returns actions (T, replicas, n) and losses (T, replicas)."""
    actions, losses = [], []
    for t in range(env.horizon):
        x = learner.act()
        fb, loss = env.round(t, x)
        learner.observe(fb)
        actions.append(x)
        losses.append(loss)
    return np.array(actions), np.array(losses)


def linear_env(domain, horizon: int, seed: int = 0, bound: float = 1.0) -> BanditConvexEnvironment:
    rng = np.random.default_rng(seed)
    mean = rng.standard_normal(domain.dim)
    mean /= np.linalg.norm(mean)
    theta = mean + 0.3 * rng.standard_normal((horizon, domain.dim))
    theta /= np.maximum(np.linalg.norm(theta, axis=1, keepdims=True), 1.0)
    c = np.asarray(domain.interior_point(), dtype=float)
    return BanditConvexEnvironment(domain, LinearLosses(bound * theta, c, bound=bound))


@pytest.mark.parametrize(
    ("horizon", "batch", "expected"),
    [
        (16, None, (4, 4)),
        (17, None, (5, 4)),
        (100, None, (10, 10)),
        (10, 3, (3, 4)),
        (1, None, (1, 1)),
    ],
)
def test_batch_schedule(horizon, batch, expected):
    assert batch_schedule(horizon, batch) == expected


def test_line_1_parameters():
    d = Simplex(5)  # k = 4, D = sqrt(2)
    b = PrivateBandit(d, 10_000, budget=None, lipschitz=2.0)
    assert b.eta == pytest.approx(math.sqrt(2) / (10_000**0.75 * 2 * 2.0))
    assert b.zeta == pytest.approx(default_zeta(d, 10_000)) == pytest.approx(math.sqrt(2) * 2 / 10)
    assert (b.batch, b.batches) == (100, 100)


def test_actions_are_spherical_perturbations_inside_the_affine_hull():
    d = Simplex(4)
    b = PrivateBandit(d, 36, budget=None, replicas=7, rng=1)
    env = linear_env(d, 36)
    for t in range(36):
        centre = b.center
        x = b.act()
        assert np.allclose(x.sum(axis=1), 1.0)  # in the hull: coordinates sum to 1
        assert np.allclose(np.linalg.norm(x - centre, axis=1), b.zeta)  # on the sphere
        b.observe(env.round(t, x)[0])


def test_shrinking_keeps_every_query_inside_the_set():
    d = Box(3)
    b = PrivateBandit(d, 10_000, budget=None, zeta=0.5, shrink=True, replicas=50, rng=2)
    env = linear_env(d, 10_000)
    for t in range(300):
        x = b.act()
        assert d.contains(x).all()
        b.observe(env.round(t, x)[0])
    with pytest.raises(ValueError, match="zeta < r"):
        PrivateBandit(d, 100, budget=None, zeta=1.5, shrink=True)


def test_at_most_one_oracle_call_per_round():
    d = CountingDomain(6)
    b = PrivateBandit(d, 400, budget=PrivacyBudget(1.0), replicas=3, rng=0)
    env = linear_env(d, 400)
    CountingDomain.calls = 0
    for t in range(400):
        x = b.act()
        b.observe(env.round(t, x)[0])
        assert CountingDomain.calls <= t + 1  # Algorithm 1 charges one call per round
    assert b.lmo_calls == CountingDomain.calls


def test_line_14_descends_the_losses():
    # one fixed linear loss on [-1, 1]^2: without noise the centre must reach the minimiser
    d = Box(2)
    T = 4_000
    theta = np.tile([1.0, -0.5], (T, 1)) / math.hypot(1.0, 0.5)
    env = BanditConvexEnvironment(d, LinearLosses(theta, np.zeros(2)))
    b = PrivateBandit(d, T, budget=None, replicas=20, rng=3, eta=0.05)
    run(b, env)
    assert np.all(b.center[:, 0] < -0.9) and np.all(b.center[:, 1] > 0.9)


def neighbouring_batch_sums(budget, changed: int, seed: int = 5):
    """The batch sums g~_R of two runs with the same perturbations on loss sequences that
    differ in round ``changed`` (loss values -hi and +hi there)."""
    d = LpBall(3, 2.0)
    T = 64
    out = []
    for sign in (-1.0, 1.0):
        b = PrivateBandit(d, T, budget=budget, replicas=200, rng=seed)
        lo, hi = b.loss_range
        sums = []
        rng = np.random.default_rng(9)
        vals = rng.uniform(lo, hi, size=(T, 200))
        vals[changed] = sign * hi
        for t in range(T):
            b.act()
            before = b.batch_sum
            b.observe(BanditFeedback(vals[t]))
            if b.t % b.batch == 0:
                sums.append(
                    before + (b.sphere_dim / b.zeta) * vals[t][:, None] * b.smoothing.direction
                )
        out.append(np.array(sums))
    return b, out[0], out[1]


def test_batch_sum_sensitivity_is_one_term():
    b, a, c = neighbouring_batch_sums(None, changed=10)
    diff = c - a
    # only the batch holding round 10 differs, by (k / zeta)(hi - lo) in l2 at most
    assert np.allclose(np.delete(diff, 10 // b.batch, axis=0), 0.0)
    l2 = np.linalg.norm(diff, axis=-1).max()
    term = b.sphere_dim / b.zeta * (b.loss_range[1] - b.loss_range[0])
    assert l2 == pytest.approx(term)  # attained: the changed values are -hi and +hi
    l1 = np.abs(diff).sum(axis=-1).max()
    assert l1 <= term * math.sqrt(b.dim) + 1e-9
    # Lemma 5.1's l1 bound on a whole batch sum, T_batch n^{1/2} M with M = (n / zeta) max|f|
    m = b.sphere_dim / b.zeta * b.loss_range[1]
    assert np.abs(a).sum(axis=-1).max() <= b.batch * math.sqrt(b.dim) * m + 1e-9


def test_lemma_5_3_bound_holds_on_the_batch_sums():
    # ||sum_i c_i u_i|| <= 10 Delta (log((n+k)/delta) + sqrt((1 + k/n) log((n+k)/delta)))
    # with probability 1 - delta for each batch; delta = 1e-6 over 200 x 8 batch sums
    b, a, _ = neighbouring_batch_sums(None, changed=0)
    k, n, delta = b.batch, b.dim, 1e-6
    delta_norm = math.sqrt(k) * b.sphere_dim / b.zeta * b.loss_range[1]
    lg = math.log((n + k) / delta)
    bound = 10 * delta_norm * (lg + math.sqrt((1 + k / n) * lg))
    assert np.linalg.norm(a, axis=-1).max() <= bound


def test_out_of_range_loss_raises_and_leaves_the_state():
    d = Simplex(3)
    b = PrivateBandit(d, 16, budget=PrivacyBudget(1.0), rng=0)
    b.act()
    before = b.state_dict()
    hi = b.loss_range[1]
    for bad in ([hi * 1.01], [np.nan], [0.0, 0.0]):
        with pytest.raises(ValueError):
            b.observe(BanditFeedback(np.array(bad)))
    after = b.state_dict()
    assert after["t"] == before["t"]
    oco_a, oco_b = after["noisy_oco"], before["noisy_oco"]
    assert np.array_equal(oco_a["grad"]["sum"], oco_b["grad"]["sum"])
    assert oco_a["map"]["lmo_calls"] == oco_b["map"]["lmo_calls"]
    clipped = PrivateBandit(d, 16, budget=PrivacyBudget(1.0), rng=0, clip=True)
    clipped.act()
    clipped.observe(BanditFeedback(np.array([hi * 5])))
    assert clipped.t == 1


def test_paper_calibration_is_lemma_5_1_and_5_4():
    d = LpBall(4, 2.0)
    T = 10_000
    lap = PrivateBandit(d, T, budget=PrivacyBudget(0.5, calibration="paper"), lipschitz=2.0)
    assert lap.counter.noise.b == pytest.approx(ene_laplace_scale(T, 4, 2.0, 0.5))
    assert lap.counter.name == "padded_tree"
    gau = PrivateBandit(d, T, budget=PrivacyBudget(0.5, 1e-6, calibration="paper"), lipschitz=2.0)
    assert gau.counter.noise.sigma == pytest.approx(ene_gaussian_sigma(T, 4, 2.0, 0.5, 1e-6))
    # both over-noise at this horizon: they prove less than epsilon
    assert lap.privacy.epsilon < 0.5 and gau.privacy.epsilon < 0.5


def test_paper_laplace_at_a_short_horizon_proves_less_and_is_refused():
    # T = 16 on [-1, 1]: the proof charges 3 nodes x l1 sensitivity 6 against the paper's
    # scale 16 / epsilon: epsilon' = 1.125 epsilon
    d = Box(1)
    with pytest.raises(WeakerGuaranteeError):
        PrivateBandit(d, 16, budget=PrivacyBudget(1.0, calibration="paper"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        b = PrivateBandit(d, 16, budget=PrivacyBudget(1.0, calibration="paper", allow_weaker=True))
    assert b.privacy.epsilon == pytest.approx(1.125)


def test_tight_uses_less_noise_than_paper():
    d = Simplex(8)
    for budget in (PrivacyBudget(1.0), PrivacyBudget(1.0, 1e-6)):
        tight = PrivateBandit(d, 10_000, budget=budget)
        paper = PrivateBandit(
            d, 10_000, budget=PrivacyBudget(1.0, budget.delta, calibration="paper")
        )
        assert tight.privacy.epsilon == pytest.approx(1.0)
        tv = max(tight.counter.variance(r) for r in range(1, tight.batches + 1))
        pv = max(paper.counter.variance(r) for r in range(1, paper.batches + 1))
        assert tv < pv / 10


def test_regret_is_within_the_explicit_bound():
    d = Simplex(5)
    T = 2_500
    env = linear_env(d, T, seed=4)
    for budget in (None, PrivacyBudget(1.0), PrivacyBudget(1.0, 1e-6)):
        b = PrivateBandit(d, T, budget=budget, replicas=40, rng=8)
        _, losses = run(b, env)
        regret = env.regret(np.cumsum(losses, axis=0).T)[:, -1]
        # the bound is on the expected regret; the mean of 40 replicas is far below it
        assert regret.mean() <= b.regret_bound()["bound"]


@pytest.mark.parametrize("losses", ["absolute", "hinge"])
def test_regret_on_non_smooth_losses_is_within_the_bound_and_learns(losses):
    # Lipschitz, non-smooth level losses over an oracle-only matroid polytope: the learner
    # (built as the catalogue builds it) ends below its bound and beats the centre, which
    # scores exactly 0 against the comparator's strongly negative total
    T = 2_500
    env = bandit_convex(T, np.random.default_rng(3), domain="k_subsets", dim=6, losses=losses)
    for budget in (None, PrivacyBudget(4.0, 1e-6)):
        b = PrivateBandit(
            env.domain, T, budget=budget, lipschitz=env.lipschitz(), replicas=20, rng=9
        )
        _, played = run(b, env)
        total = played.sum(axis=0)
        regret = env.regret(np.cumsum(played, axis=0).T)[:, -1]
        assert regret.mean() <= b.regret_bound()["bound"]
        assert total.mean() < 0.0  # better than staying at the centre


def test_resume_mid_batch_is_bit_exact():
    d = Simplex(4)
    env = linear_env(d, 30)
    a = PrivateBandit(d, 30, budget=PrivacyBudget(1.0, 1e-5), replicas=3, rng=11)
    b = PrivateBandit(d, 30, budget=PrivacyBudget(1.0, 1e-5), replicas=3, rng=11)
    for t in range(13):
        x = a.act()
        a.observe(env.round(t, x)[0])
    b.load_state_dict(a.state_dict())
    for t in range(13, 30):
        xa, xb = a.act(), b.act()
        assert np.array_equal(xa, xb)
        a.observe(env.round(t, xa)[0])
        b.observe(env.round(t, xb)[0])


def _corrupt(state: dict, path: tuple, value) -> dict:
    """A copy of ``state`` with the entry at ``path`` replaced by ``value``."""
    out = dict(state)
    node = out
    for key in path[:-1]:
        node[key] = dict(node[key])
        node = node[key]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (("t",), 31, r"saved round counter t must be an integer in \[0, 30\]"),
        (("acted",), 1, "saved acted must be True or False"),
        (("noise_multiplier",), 0.0, "saved noise_multiplier must be positive"),
        (("played",), np.zeros((2, 4)), r"saved played must have shape \(3, 4\)"),
        (("played",), np.full((3, 4), np.nan), "saved played must be finite"),
        (("config", "zeta"), 0.5, "differently configured PrivateBandit.*differs in zeta"),
        (("noisy_oco", "t"), 12, "saved noisy_oco is at step 12 but the round counter t is 13"),
        (("noisy_oco", "map", "x"), np.zeros((3, 5)), r"saved x must have shape \(3, 4\)"),
        (("noisy_oco", "grad", "u"), np.ones((3, 4)), "saved u of replica 0 must be a unit"),
        (("noisy_oco", "aggregator", "t"), 9, r"saved round counter t must be an integer"),
    ],
)
def test_a_corrupt_state_is_refused_in_one_line_and_changes_nothing(path, value, says):
    # the whole state is checked (RoundDiscipline.load_state_dict runs prepare_load) before
    # anything is installed: the learner then resumes its own run as if nothing happened
    from dponline.checks import _same_state

    d = Simplex(4)
    env = linear_env(d, 30)
    source = PrivateBandit(d, 30, budget=PrivacyBudget(1.0, 1e-5), replicas=3, rng=11)
    twin = PrivateBandit(d, 30, budget=PrivacyBudget(1.0, 1e-5), replicas=3, rng=12)
    learner = PrivateBandit(d, 30, budget=PrivacyBudget(1.0, 1e-5), replicas=3, rng=12)
    for t in range(13):
        x = source.act()
        source.observe(env.round(t, x)[0])
    for t in range(6):
        for b in (twin, learner):
            b.observe(env.round(t, b.act())[0])
    learner.act()
    twin.act()
    with pytest.raises(ValueError, match=says) as err:
        learner.load_state_dict(_corrupt(source.state_dict(), path, value))
    assert "\n" not in str(err.value)
    assert _same_state(learner.state_dict(), twin.state_dict()) is None
    for t in range(6, 30):
        xa, xb = learner.act(), twin.act()
        assert np.array_equal(xa, xb)
        learner.observe(env.round(t, xa)[0])
        twin.observe(env.round(t, xb)[0])


@pytest.mark.parametrize("label", ["", "gaussian"])
def test_the_audit_does_not_refute_the_paper_calibration(label):
    # the battery audits the tight calibration; the paper one (Laplace of Lemma 5.1, Gaussian
    # of Lemma 5.4, proven under the exact sensitivity) claims what its noise proves. A correct
    # claim is refuted with probability at most alpha = 1e-3 (fixed seed).
    from dponline.experiments.learner_audit import audit_learner
    from dponline.registry import learners

    entry = learners()["private-bandit"]
    case = next(c for c in entry.test_cases if c.label == label)
    result = audit_learner(entry, case, calibration="paper", trials=20_000, pilot_trials=5_000)
    assert not result.any_refuted, result


# --- tight: the batch sums in the affine hull's coordinates (ene_noise, Lemma (a)-(c)) -------


def grid_paths() -> PathPolytope:
    """Monotone paths of the 3 x 3 grid DAG: n = 12 edges, affine dimension k = 4."""
    return PathPolytope(grid_dag(3, 3), (0, 0), (2, 2))


class GivenNormals:
    """Stands in for the smoothing's generator: its standard normal draws are the given rows,
    so :class:`SphericalSmoothing` plays u = B w / ||w|| for each row w (the real code path)."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    def standard_normal(self, shape: tuple[int, ...]) -> np.ndarray:
        assert shape == self.rows.shape
        return self.rows.copy()


def counter_inputs(b: PrivateBandit, rows: np.ndarray, value: float) -> np.ndarray:
    """What the counter sums (B^T g~, NoisyOCO with the hull basis) after one round played
    with directions B w / ||w||, w the given rows, and loss value ``value``."""
    s = SphericalSmoothing(b.domain, b.zeta, len(rows), GivenNormals(rows))
    s.query(np.broadcast_to(b.center_point, (len(rows), b.dim)))
    s.feed(np.full(len(rows), value))
    u = s.direction
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0)  # unit vectors of the hull
    np.testing.assert_allclose((u @ b.basis) @ b.basis.T, u, atol=1e-12)
    return s.take() @ b.basis


def test_hull_sensitivity_by_brute_force_on_a_path_polytope():
    d = grid_paths()
    b = PrivateBandit(d, 64, budget=PrivacyBudget(1.0), rng=0)
    n, k = d.dim, d.affine_dim
    assert (n, k) == (12, 4)
    assert b.counter.dim == k
    np.testing.assert_array_equal(b.basis, d.hull_basis())
    lo, hi = b.loss_range
    term = k / b.zeta * (hi - lo)
    # the extremes: the change is linear in the loss value (f, f' = lo, hi), and ||B^T u||_1 on
    # the unit sphere of the hull is largest at u = B sigma / sqrt(k), sigma in {-1, 1}^k
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=k)))
    delta = counter_inputs(b, signs, hi) - counter_inputs(b, signs, lo)
    np.testing.assert_allclose(np.linalg.norm(delta, axis=1), term, rtol=1e-12)
    np.testing.assert_allclose(np.abs(delta).sum(axis=1), term * math.sqrt(k), rtol=1e-12)
    # what the calibration charges is exactly that: attained at every sign vector
    ball = b.calibrator.sensitivity_set("tight")
    assert ball.dim == k
    assert ball.diameter(2) == pytest.approx(term, rel=1e-12)
    assert ball.diameter(1) == pytest.approx(term * math.sqrt(k), rel=1e-12)
    # at random directions the bound holds, and is approached: the uniform law of u_t puts
    # positive mass near every sign vector, so it cannot lower the charge (20,000 draws, fixed
    # seed: the largest is within 0.01% of the bound)
    w = np.random.default_rng(3).standard_normal((20_000, k))
    moved = counter_inputs(b, w, hi) - counter_inputs(b, w, lo)
    l1 = np.abs(moved).sum(axis=1)
    assert l1.max() <= term * math.sqrt(k) * (1 + 1e-12)
    assert l1.max() > term * math.sqrt(k) * 0.999
    np.testing.assert_allclose(np.linalg.norm(moved, axis=1), term, rtol=1e-12)


def test_the_ambient_l1_constant_by_brute_force_is_at_least_sqrt_k():
    # Lemma (c): noise in R^n needs c_V = max_{u in V, ||u|| = 1} ||u||_1 =
    # max_{sigma in {-1,1}^n} ||P sigma||_2 (the maximiser P sigma / ||P sigma|| attains it),
    # at least sqrt(k) = sqrt(tr P); the ambient calibration charges sqrt(n) >= c_V
    d = grid_paths()
    basis = d.hull_basis()
    n, k = basis.shape
    proj = basis @ basis.T
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))  # all 4,096
    norms = np.linalg.norm(signs @ proj, axis=1)
    c_v = norms.max()
    u = proj @ signs[int(np.argmax(norms))]
    u /= np.linalg.norm(u)
    assert np.abs(u).sum() == pytest.approx(c_v, rel=1e-12)
    assert np.mean(norms**2) == pytest.approx(k, rel=1e-12)  # E ||P sigma||^2 = tr P
    assert math.sqrt(k) < c_v < math.sqrt(n)  # 2 < 3.266 < 3.464
    # no unit vector of the hull beats the sign vectors (random ones, 20,000 of them)
    w = np.random.default_rng(4).standard_normal((20_000, k)) @ basis.T
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    assert np.abs(w).sum(axis=1).max() <= c_v * (1 + 1e-12)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_tight_noise_in_the_hull_at_the_same_epsilon(delta):
    d = grid_paths()
    n, k = d.dim, d.affine_dim
    budget = PrivacyBudget(1.0, delta)
    hull = PrivateBandit(d, 10_000, budget=budget, rng=0)
    ambient = PrivateBandit(d, 10_000, budget=budget, rng=0, noise_in_hull=False)
    assert (hull.counter.dim, ambient.counter.dim) == (k, n)
    assert ambient.basis is None
    assert hull.counter.name == ambient.counter.name
    assert hull.privacy.epsilon == ambient.privacy.epsilon == pytest.approx(1.0, abs=1e-6)
    assert hull.privacy.delta == ambient.privacy.delta == delta
    assert "our derivation, not the paper's" in hull.privacy.derivation
    lo, hi = hull.loss_range
    term = k / hull.zeta * (hi - lo)
    l1f, l2f = type(hull.counter).sensitivity_factors(hull.batches)
    if delta == 0:
        # Laplace: l1 sensitivity term sqrt(k) instead of term sqrt(n)
        assert hull.counter.noise.b == pytest.approx(l1f * term * math.sqrt(k), rel=1e-12)
        assert ambient.counter.noise.b == pytest.approx(l1f * term * math.sqrt(n), rel=1e-12)
    else:
        # Gaussian: the l2 sensitivity is the same in both coordinate systems
        assert hull.counter.noise.sigma == ambient.counter.noise.sigma
        assert hull.counter.noise.sigma == pytest.approx(
            gaussian_sigma(l2f * term, 1.0, delta), rel=1e-12
        )


def test_full_dimensional_sets_keep_the_standard_coordinates():
    d = LpBall(3, 2.0)
    for budget in (PrivacyBudget(1.0), PrivacyBudget(1.0, 1e-6)):
        b = PrivateBandit(d, 100, budget=budget, rng=0)
        assert b.basis is None and b.counter.dim == 3
    paper = PrivateBandit(grid_paths(), 100, budget=PrivacyBudget(1.0, 1e-6, calibration="paper"))
    assert paper.basis is None and paper.counter.dim == 12  # the paper's noise on R^n


def test_the_released_sums_of_a_tight_run_lie_in_the_hull():
    # s~ = B y~: the map never sees a component orthogonal to the hull, and the exact part of
    # the counter's input is B^T g~ with g~ = B B^T g~
    d = grid_paths()
    b = PrivateBandit(d, 100, budget=PrivacyBudget(1.0), replicas=4, rng=5)
    env = linear_env(d, 100)
    for t in range(100):
        x = b.act()
        g = b.batch_sum
        np.testing.assert_allclose((g @ b.basis) @ b.basis.T, g, atol=1e-9)
        b.observe(env.round(t, x)[0])
    v = b.noisy_map.solver.linear  # -eta s~ of the last map started
    np.testing.assert_allclose((v @ b.basis) @ b.basis.T, v, atol=1e-9)
    assert np.abs(v).max() > 1.0  # the noise is there


@pytest.mark.parametrize(
    "budget",
    [
        PrivacyBudget(1.0),
        PrivacyBudget(1.0, 1e-6),
        PrivacyBudget(1.0, calibration="paper", allow_weaker=True),
        PrivacyBudget(1.0, 1e-6, calibration="paper", allow_weaker=True),
    ],
)
def test_one_mechanism_lookup_and_one_proof(monkeypatch, budget):
    import dponline.bandits.ene_noise as ene

    calls = {"lookup": 0, "prove": 0}
    lookup, prove = ene.get_mechanism, PrivacyBudget.prove

    def counted_lookup(name):
        calls["lookup"] += 1
        return lookup(name)

    def counted_prove(self, *args, **kwargs):
        calls["prove"] += 1
        return prove(self, *args, **kwargs)

    monkeypatch.setattr(ene, "get_mechanism", counted_lookup)
    monkeypatch.setattr(PrivacyBudget, "prove", counted_prove)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        b = PrivateBandit(grid_paths(), 400, budget=budget, rng=0)
    assert calls == {"lookup": 1, "prove": 1}
    assert b.counter.privacy is b.privacy


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_the_audit_on_a_full_dimensional_set(delta):
    # the registry's audit runs on a path polytope (the hull); this one runs on [-1, 1]
    # (n = k = 1, the standard coordinates): round 1 plays +-zeta from the centre 0 and sees
    # the loss -+zeta u, the two ends of the declared range; s~_1 sets the third batch's
    # centre. A correct claim is refuted with probability at most alpha = 1e-3 (fixed seed),
    # and a tenth of the noise must be caught.
    from dponline.checks import check_audit
    from dponline.registry import AuditCase, LearnerTestCase, learners

    entry = learners()["private-bandit"]
    case = LearnerTestCase(
        "bandit_convex",
        horizon=9,
        environment_options={"domain": "box", "dim": 1},
        learner_options={"delta": delta},
        audit=AuditCase(
            horizon=9,
            values=(-1.0, 1.0),
            learner_options={"eta": 1.0, "zeta": 0.25, "loss_range": (-0.25, 0.25)},
            trials=40_000,
            pilot_trials=10_000,
            seed=6,
        ),
    )
    full, tenth = check_audit(entry, case)
    assert full.epsilon_lower > 0.05 and tenth.epsilon_lower > 1.0


@pytest.mark.filterwarnings("ignore::dponline.privacy.guarantee.PrivacyWarning")
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_a_loss_range_is_read_alike_with_and_without_a_horizon(calibration):
    """The anytime learner's paper calibration read ``loss_range`` with ``or`` (a numpy array
    raised "truth value ... ambiguous" at its first epoch): both learners now read it through
    one function, which takes any finite real pair with lo < hi and refuses the rest."""
    from dponline.bandits.private_bandit import anytime_private_bandit, default_loss_range

    env = bandit_convex(64, np.random.default_rng(0), domain="simplex", dim=4)
    budget = PrivacyBudget(1.0, calibration=calibration, allow_weaker=True)
    for given in ((-3.0, 3.0), [-3, 3], np.array([-3.0, 3.0])):
        learner = anytime_private_bandit(env, budget=budget, rng=1, loss_range=given)
        for t in range(5):
            feedback, _ = env.round(t, learner.act())
            learner.observe(feedback)
        assert PrivateBandit(env.domain, 16, budget=budget, loss_range=given).loss_range == (
            -3.0,
            3.0,
        )
    for bad in ((3.0, -3.0), (-1.0, math.inf), ("-1", "1"), (0.0, 1.0, 2.0)):
        with pytest.raises(ValueError, match="loss_range"):
            default_loss_range(env.domain, 1.0, 0.5, False, bad)
    d = env.domain.diameter
    assert default_loss_range(env.domain, 2.0, 0.5, False) == (-2.0 * (d + 0.5), 2.0 * (d + 0.5))
    assert default_loss_range(env.domain, 2.0, 0.5, True) == (-2.0 * d, 2.0 * d)
