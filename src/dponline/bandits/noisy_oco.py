"""NoisyOCO: Ene, Nguyen & Vladu (2021), Algorithm 2 -- online mirror descent with a noisy
gradient oracle and a noisy mirror map, the framework their PrivateBandit (Algorithm 1) is an
instance of (Section 4.2, Appendix C).

With the mirror map omega(x) = ||x||^2 / 2 on a set D, NoisyOCO plays

    x~_t = NoisyMap(-eta s_{t-1}),    g~_t = NoisyGrad(f_t, x~_t),    s_t = s_{t-1} + g~_t,

where NoisyGrad is unbiased with E||g~||^2 <= kappa^2 and NoisyMap is within gamma of
grad omega*(-eta s) = argmin_{x in D} ||x||^2 / 2 + <eta s, x> in expectation; Lemma 4.1 bounds
its regret by O(T^{1/2} kappa D_omega + T kappa gamma). The pieces are pluggable:

* a :class:`NoisyGrad` estimates one NoisyOCO round's gradient from the values of the points it
  asks to be played during that round (:class:`SphericalSmoothing`: Algorithm 1 lines 8-11, a
  batch of one-point estimates, Lemma 2.2);
* a :class:`NoisyMap` computes the map incrementally, one unit of work (one oracle call) at a
  time (:class:`ConditionalGradientMap`: line 14);
* the prefix sums s_t come from a continual counter: exact sums (the non-private algorithm) or a
  private one (the tree of line 13 or a better one), whose release is the only way the data
  reaches the map.

:class:`NoisyOCO` runs them with the map *pipelined*: during round R the map works on s_{R-1}
(one unit per inner step) while round R plays the previous answer, which is Algorithm 1's
schedule (its NoisyMap is one round stale, Corollary C.5).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.domains.base import ConvexDomain
from dponline.domains.conditional_gradient import QuadraticFrankWolfe
from dponline.rng import generator_from_state, generator_state

__all__ = [
    "ConditionalGradientMap",
    "NoisyGrad",
    "NoisyMap",
    "NoisyOCO",
    "SphericalSmoothing",
    "sphere_directions",
]


def sphere_directions(rng: np.random.Generator, basis: np.ndarray, replicas: int) -> np.ndarray:
    """``replicas`` independent uniform unit vectors of the subspace spanned by the orthonormal
    columns of ``basis`` (n, k), as points of R^n: a normalised standard Gaussian in R^k."""
    k = basis.shape[1]
    w = rng.standard_normal((replicas, k))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    return w @ basis.T


class NoisyGrad(Protocol):
    """A NoisyOCO round's gradient oracle, queried through the points it has played."""

    def query(self, center: np.ndarray) -> np.ndarray:
        """The point each replica plays next, around the round's decision ``center``."""

    def feed(self, values: np.ndarray) -> None:
        """The loss value of the point just played, per replica."""

    def take(self) -> np.ndarray:
        """The round's gradient estimate g~, shape (replicas, dim); starts the next round."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class NoisyMap(Protocol):
    """grad omega*(dual) computed a unit of work at a time."""

    lmo_calls: int

    def begin(self, dual: np.ndarray, start: np.ndarray) -> None:
        """Start computing argmin_{x in D} ||x||^2 / 2 - <dual, x>, from ``start``."""

    def advance(self) -> None:
        """One unit of work (one oracle call)."""

    def result(self) -> np.ndarray:
        """The current answer, shape (replicas, dim), a point of D."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class SphericalSmoothing:
    """Algorithm 1 lines 8-11 (NoisyGrad of Appendix C): each inner step plays
    x_t = center + zeta u_t, u_t uniform on the unit sphere of the set's affine hull (dimension
    k), and adds (k / zeta) f_t(x_t) u_t to the estimate, an unbiased estimate of the gradient of
    the smoothed loss (Lemma 2.2). With ``shrink`` (Appendix D) the loss is queried at
    c + (1 - zeta / r)(x_t - c) instead, a point of the set."""

    def __init__(
        self,
        domain: ConvexDomain,
        zeta: float,
        replicas: int,
        rng: np.random.Generator,
        *,
        shrink: bool = False,
    ) -> None:
        self.dim, self.sphere_dim = int(domain.dim), int(domain.affine_dim)
        self.zeta, self.replicas, self.rng, self.shrink = float(zeta), int(replicas), rng, shrink
        self._basis = np.asarray(domain.hull_basis(), dtype=float)
        self._full = self.sphere_dim == self.dim
        self.center_point = np.asarray(domain.interior_point(), dtype=float)
        self.radius = float(domain.inscribed_radius)
        if self.shrink and not self.zeta < self.radius:
            raise ValueError(
                f"domain shrinking (Appendix D) needs zeta < r: zeta = {self.zeta:.6g}, inscribed "
                f"radius r = {self.radius:.6g}; pass a smaller zeta or a longer horizon"
            )
        self.scale = self.sphere_dim / self.zeta  # k / zeta of line 10
        self._sum = np.zeros((self.replicas, self.dim))
        self._u = np.zeros((self.replicas, self.dim))

    def query(self, center: np.ndarray) -> np.ndarray:
        if self._full:
            u = self.rng.standard_normal((self.replicas, self.dim))
            u /= np.linalg.norm(u, axis=1, keepdims=True)
        else:
            u = sphere_directions(self.rng, self._basis, self.replicas)
        self._u = u
        x = center + self.zeta * u
        if self.shrink:
            x = self.center_point + (1.0 - self.zeta / self.radius) * (x - self.center_point)
        return x

    def feed(self, values: np.ndarray) -> None:
        self._sum += (self.scale * values)[:, None] * self._u

    def take(self) -> np.ndarray:
        g, self._sum = self._sum, np.zeros((self.replicas, self.dim))
        return g

    @property
    def partial(self) -> np.ndarray:
        """The estimate of the current round so far (a copy)."""
        return self._sum.copy()

    @property
    def direction(self) -> np.ndarray:
        """u_t of the point just played (a copy)."""
        return self._u.copy()

    def state_dict(self) -> dict[str, Any]:
        return {"sum": self._sum.copy(), "u": self._u.copy(), "rng": generator_state(self.rng)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._sum = np.array(state["sum"], dtype=float)
        self._u = np.array(state["u"], dtype=float)
        self.rng = generator_from_state(state["rng"])


class ConditionalGradientMap:
    """Algorithm 1 line 14 (NoisyMap of Appendix C): the conditional gradient method on
    ||x||^2 / 2 - <dual, x> over D, exact line search, warm-started, one oracle call per
    :meth:`advance`; a replica stops moving once its duality gap certifies ``precision`` in
    distance (1-strong convexity: ||x - x*|| <= sqrt(2 gap); Lemma C.4)."""

    def __init__(self, domain: ConvexDomain, start: np.ndarray, *, precision: float) -> None:
        self.solver = QuadraticFrankWolfe(domain, start)
        self.precision = float(precision)

    @property
    def lmo_calls(self) -> int:
        return self.solver.lmo_calls

    def begin(self, dual: np.ndarray, start: np.ndarray) -> None:
        self.solver.reset(dual, start=start)

    def advance(self) -> None:
        self.solver.step(threshold=0.5 * self.precision**2)

    def result(self) -> np.ndarray:
        return self.solver.x

    def state_dict(self) -> dict[str, Any]:
        return self.solver.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.solver.load_state_dict(state)


class NoisyOCO:
    """Algorithm 2 with a pipelined map (module docstring): ``rounds`` NoisyOCO rounds of
    ``inner`` steps each (the last may be shorter, ending at ``steps``), step ``eta``, prefix
    sums kept by ``aggregator`` and the first decision ``start``.

    Each inner step: :meth:`query` the points to play, :meth:`feed` their loss values. At the
    end of round R: s_R = aggregator.step(g~_R), the map's answer (computed during round R from
    s_{R-1}) becomes the decision of round R+1, and the map starts on -eta s_R.
    """

    def __init__(
        self,
        *,
        eta: float,
        inner: int,
        steps: int,
        grad: NoisyGrad,
        noisy_map: NoisyMap,
        aggregator: ContinualCounter,
        start: np.ndarray,
    ) -> None:
        self.eta, self.inner, self.steps = float(eta), int(inner), int(steps)
        self.grad, self.map, self.aggregator = grad, noisy_map, aggregator
        self._center = np.array(start, dtype=float)  # x~_{R-1}
        self.map.begin(-self.eta * aggregator.initial_release(), self._center)  # on s~_0
        self.t = 0

    @property
    def center(self) -> np.ndarray:
        """The current round's decision x~_{R-1} (a copy)."""
        return self._center.copy()

    def restart_map(self) -> None:
        """Restart the first round's map on the aggregator's initial release (after its noise
        was rescaled before the first step)."""
        self.map.begin(-self.eta * self.aggregator.initial_release(), self._center)

    def query(self) -> np.ndarray:
        return self.grad.query(self._center)

    def feed(self, values: np.ndarray) -> None:
        self.grad.feed(values)
        self.map.advance()
        self.t += 1
        if self.t % self.inner == 0 or self.t == self.steps:
            prefix = self.aggregator.step(self.grad.take())
            self._center = self.map.result()
            if self.t < self.steps:
                self.map.begin(-self.eta * prefix, self._center)

    def state_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "center": self._center.copy(),
            "grad": self.grad.state_dict(),
            "map": self.map.state_dict(),
            "aggregator": self.aggregator.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.aggregator.load_state_dict(state["aggregator"])
        self.map.load_state_dict(state["map"])
        self.grad.load_state_dict(state["grad"])
        self._center = np.array(state["center"], dtype=float)
        self.t = int(state["t"])
