"""NoisyOCO's pieces (Ene, Nguyen & Vladu 2021, Algorithm 2 and Appendix C): the spherical
one-point estimate is unbiased for linear losses within the affine hull (Lemma 2.2), the
conditional-gradient map reaches the projection, and the framework runs with another
gradient oracle plugged in."""

from __future__ import annotations

import numpy as np

from dponline.bandits.noisy_oco import (
    ConditionalGradientMap,
    NoisyOCO,
    SphericalSmoothing,
    sphere_directions,
)
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.domains.box import Box
from dponline.domains.simplex import Simplex
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

    def load_state_dict(self, state):
        assert state == {}, "an exact gradient oracle keeps no state"


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
