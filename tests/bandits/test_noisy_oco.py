"""NoisyOCO's pieces (Ene, Nguyen & Vladu 2021, Algorithm 2 and Appendix C): the spherical
one-point estimate is unbiased for linear losses within the affine hull (Lemma 2.2), the
conditional-gradient map reaches the projection, the framework runs with another
gradient oracle plugged in, and summing the estimates in the affine hull's coordinates changes
nothing but where the counter's noise lives."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits.noisy_oco import (
    ConditionalGradientMap,
    NoisyOCO,
    SphericalSmoothing,
    sphere_directions,
)
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.domains.box import Box
from dponline.domains.paths import PathPolytope
from dponline.domains.simplex import Simplex
from dponline.environments.bandit_convex import grid_dag
from dponline.privacy.noise import GaussianNoise


def test_sphere_directions_are_unit_vectors_of_the_hull():
    d = Simplex(5)
    u = sphere_directions(np.random.default_rng(0), d.hull_basis(), 1000)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0)
    np.testing.assert_allclose(u.sum(axis=1), 0.0, atol=1e-12)  # directions of the hull
    # uniform on the sphere of the 4-dim hull: E[u u'] = P / 4, P the projector on the hull
    p = np.eye(5) - np.full((5, 5), 0.2)
    np.testing.assert_allclose(u.T @ u / 1000, p / 4, atol=0.03)


def test_one_point_estimate_is_unbiased_for_linear_losses():
    # E[(k / zeta) f(x + zeta u) u] = P theta for f(x) = <theta, x>; 200,000 draws: the
    # standard error per coordinate is about (k / zeta) |f| / sqrt(n k) < 0.01, so a 0.05
    # tolerance fails by chance with probability below 1e-6
    d = Simplex(4)
    theta = np.array([0.3, -0.2, 0.5, 0.1])
    n = 200_000
    s = SphericalSmoothing(d, 0.1, n, np.random.default_rng(1))
    x = s.query(np.broadcast_to(d.interior_point(), (n, 4)))
    s.feed(x @ theta)
    g = s.take().mean(axis=0)
    p = np.eye(4) - np.full((4, 4), 0.25)
    np.testing.assert_allclose(g, p @ theta, atol=0.05)
    np.testing.assert_array_equal(s.partial, 0.0)  # take() starts the next round


def test_conditional_gradient_map_reaches_the_projection():
    d = Box(3)
    v = np.array([[2.0, -0.3, -5.0], [0.1, 0.2, 0.3]])
    m = ConditionalGradientMap(d, np.zeros((2, 3)), precision=1e-4)
    m.begin(v, np.zeros((2, 3)))
    for _ in range(200):
        m.advance()
    np.testing.assert_allclose(m.result(), np.clip(v, -1, 1), atol=1e-4)
    assert m.lmo_calls == 200


class ExactGradient:
    """A full-information NoisyGrad: the gradient of f_t(x) = <theta, x>, one query a round."""

    def __init__(self, theta: np.ndarray) -> None:
        self.theta = theta
        self._sum = np.zeros_like(theta)

    def query(self, center):
        return center

    def feed(self, values):
        self._sum = self._sum + self.theta

    def take(self):
        g, self._sum = self._sum, np.zeros_like(self.theta)
        return g

    def state_dict(self):
        return {}

    def prepare_load(self, state):
        assert state == {}, "an exact gradient oracle keeps no state"
        return lambda: None


def test_noisy_oco_with_an_exact_gradient_oracle_finds_the_best_vertex():
    d = Box(2)
    theta = np.array([[1.0, -1.0]])
    counter = BinaryTreeCounter(50, 2, GaussianNoise(0.0), rng=0)  # exact prefix sums
    oco = NoisyOCO(
        eta=0.2,
        inner=4,
        steps=200,
        grad=ExactGradient(theta),
        noisy_map=ConditionalGradientMap(d, np.zeros((1, 2)), precision=1e-6),
        aggregator=counter,
        start=np.zeros((1, 2)),
    )
    centres = []
    for _ in range(200):
        oco.query()
        oco.feed(np.zeros(1))
        centres.append(oco.center)
    np.testing.assert_allclose(centres[-1], [[-1.0, 1.0]])
    assert counter.t == 50  # one aggregated sum per NoisyOCO round of 4 steps


# --- the hull basis (dponline.bandits.ene_noise, Lemma (a)) ---------------------------------


def grid_paths() -> PathPolytope:
    """Monotone paths of the 3 x 3 grid DAG: n = 12 edges, affine dimension k = 4."""
    return PathPolytope(grid_dag(3, 3), (0, 0), (2, 2))


def test_line_14_sees_the_dual_only_through_its_component_in_the_hull():
    # Lemma (a): adding to the dual any vector orthogonal to the hull's direction space moves
    # <dual, x> by a constant on D, so every iterate of the conditional gradient method is the
    # same (up to rounding): the noise's orthogonal component never reaches the actions
    d = grid_paths()
    basis = d.hull_basis()
    rng = np.random.default_rng(0)
    dual = rng.standard_normal((50, d.dim))
    ortho = rng.standard_normal((50, d.dim)) * 10.0
    ortho -= (ortho @ basis) @ basis.T
    start = np.broadcast_to(d.interior_point(), (50, d.dim))
    maps = [ConditionalGradientMap(d, start, precision=1e-8) for _ in range(2)]
    maps[0].begin(dual, start)
    maps[1].begin(dual + ortho, start)
    for _ in range(30):
        for m in maps:
            m.advance()
        np.testing.assert_allclose(maps[0].result(), maps[1].result(), atol=1e-9)


def test_batch_sums_lie_in_the_hull_and_the_basis_keeps_the_exact_prefix_sums():
    # every one-point estimate is a multiple of u_t in the hull's direction space, so
    # g~ = B B^T g~; NoisyOCO summing B^T g~ (exact counter) plays the same points as NoisyOCO
    # summing g~ in R^n
    d = grid_paths()
    basis = d.hull_basis()
    n, k = basis.shape
    theta = np.random.default_rng(1).standard_normal(n)
    runs = []
    for b in (None, basis):
        smoothing = SphericalSmoothing(d, 0.1, 3, np.random.default_rng(2))
        counter = BinaryTreeCounter(20, n if b is None else k, GaussianNoise(0.0), replicas=3)
        start = np.broadcast_to(d.interior_point(), (3, n)).copy()
        oco = NoisyOCO(
            eta=0.05,
            inner=5,
            steps=100,
            grad=smoothing,
            noisy_map=ConditionalGradientMap(d, start, precision=1e-3),
            aggregator=counter,
            start=start,
            basis=b,
        )
        played = []
        for _ in range(100):
            x = oco.query()
            played.append(x)
            g = smoothing.partial
            np.testing.assert_allclose((g @ basis) @ basis.T, g, atol=1e-12)
            oco.feed(x @ theta)
        runs.append(np.array(played))
    np.testing.assert_allclose(runs[0], runs[1], atol=1e-9)


def test_a_basis_of_the_wrong_shape_is_refused():
    d = grid_paths()
    counter = BinaryTreeCounter(4, 3, GaussianNoise(0.0))
    start = np.broadcast_to(d.interior_point(), (1, d.dim)).copy()
    with pytest.raises(ValueError, match="basis must have shape"):
        NoisyOCO(
            eta=0.1,
            inner=2,
            steps=8,
            grad=SphericalSmoothing(d, 0.1, 1, np.random.default_rng(0)),
            noisy_map=ConditionalGradientMap(d, start, precision=1e-3),
            aggregator=counter,
            start=start,
            basis=d.hull_basis(),
        )


# --- resuming: a state is checked whole before any piece changes ------------------------------


def _same(a, b) -> bool:
    """Deep equality of two saved states (arrays compared by shape and value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _noisy_oco(seed: int) -> NoisyOCO:
    """NoisyOCO of Algorithm 1 on the paths of the 3 x 3 grid: 20 steps in rounds of 4, a noisy
    tree counter in the hull's k = 4 coordinates, two replicas."""
    d = grid_paths()
    rng = np.random.default_rng(seed)
    start = np.broadcast_to(d.interior_point(), (2, d.dim)).copy()
    return NoisyOCO(
        eta=0.05,
        inner=4,
        steps=20,
        grad=SphericalSmoothing(d, 0.1, 2, rng.spawn(1)[0]),
        noisy_map=ConditionalGradientMap(d, start, precision=1e-3),
        aggregator=BinaryTreeCounter(5, 4, GaussianNoise(1.0), replicas=2, rng=seed),
        start=start,
        basis=d.hull_basis(),
    )


def _advance(oco: NoisyOCO, steps: int, theta: np.ndarray) -> None:
    for _ in range(steps):
        oco.feed(oco.query() @ theta)


def _corrupt(state: dict, part: str, key: str, edit) -> dict:
    bad = {**state, part: dict(state[part])}
    bad[part][key] = edit(np.array(bad[part][key]))
    return bad


def _nan_first(a):
    a[0, 0] = np.nan
    return a


@pytest.mark.parametrize(
    ("part", "key", "edit", "says"),
    [
        ("map", "x", _nan_first, "saved x must be finite"),
        ("map", "x", lambda a: a[:1], r"saved x must have shape \(2, 12\)"),
        ("map", "linear", lambda a: a[:, :3], "saved linear must have shape"),
        ("map", "moved", lambda a: a.astype(float), "saved moved must be booleans"),
        ("map", "steps", lambda a: -1, "saved steps must be a non-negative integer"),
        ("grad", "u", lambda a: 2.0 * a, "saved u of replica 0 must be a unit vector"),
        ("grad", "u", lambda a: np.roll(a, 1, axis=1), "must be a unit vector of the affine hull"),
        ("grad", "sum", _nan_first, "saved sum must be finite"),
    ],
)
def test_a_state_corrupt_only_in_the_map_or_the_gradient_is_refused_without_half_loading(
    part, key, edit, says
):
    # the old load installed the aggregator before it read the map (and the map before the
    # gradient): a map or gradient refused after that left another run's counter in place;
    # NaN iterates and directions of the wrong length were not refused at all
    theta = np.random.default_rng(4).standard_normal(12)
    source = _noisy_oco(seed=1)
    _advance(source, 10, theta)  # mid-round, two aggregator steps
    saved = source.state_dict()
    assert saved["aggregator"]["t"] == 2 and np.linalg.norm(saved["grad"]["u"][0]) > 0.5
    learner = _noisy_oco(seed=2)
    _advance(learner, 5, theta)  # another run, at another step
    before = learner.state_dict()
    with pytest.raises(ValueError, match=says) as err:
        learner.load_state_dict(_corrupt(saved, part, key, edit))
    assert "\n" not in str(err.value)
    assert _same(learner.state_dict(), before)
    learner.load_state_dict(saved)  # the uncorrupted state loads, and resumes bit for bit
    assert _same(learner.state_dict(), saved)
    _advance(source, 10, theta)
    _advance(learner, 10, theta)
    assert _same(learner.state_dict(), source.state_dict())


def test_a_step_counter_that_disagrees_with_the_aggregator_is_refused():
    # at step 10 of rounds of 4 the aggregator has summed 2 rounds; a step counter of 12 says 3
    theta = np.random.default_rng(4).standard_normal(12)
    source = _noisy_oco(seed=1)
    _advance(source, 10, theta)
    learner = _noisy_oco(seed=2)
    before = learner.state_dict()
    with pytest.raises(ValueError, match="saved aggregator has summed 2 rounds, but step 12"):
        learner.load_state_dict({**source.state_dict(), "t": 12})
    assert _same(learner.state_dict(), before)
