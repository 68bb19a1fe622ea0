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
  reaches the map. With a ``basis`` B (orthonormal columns spanning a subspace V that holds
  every g~, the affine hull's direction space for :class:`SphericalSmoothing`) the counter sums
  the coordinates B^T g~ in R^k and the map gets B times its release: the same prefix sums,
  with noise drawn in V only (:mod:`dponline.bandits.ene_noise` says why nothing is lost).

:class:`NoisyOCO` runs them with the map *pipelined*: during round R the map works on s_{R-1}
(one unit per inner step) while round R plays the previous answer, which is Algorithm 1's
schedule (its NoisyMap is one round stale, Corollary C.5).

Every piece saves its state (``state_dict``) and checks a saved one whole before it changes
anything (``prepare_load``: it returns the function that installs the state, which cannot
fail); :meth:`NoisyOCO.prepare_load` composes its pieces', so a state corrupt in any one of
them is refused and leaves all of them as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.domains.base import ConvexDomain
from dponline.domains.conditional_gradient import QuadraticFrankWolfe
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_real_array,
    checked_round,
    saved_field,
)
from dponline.rng import generator_state

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

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check a saved state whole; return the function that installs it (cannot fail)."""


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

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check a saved state whole; return the function that installs it (cannot fail)."""


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

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the partial estimate, the directions and the RNG, and return the function
        that installs them. Each saved direction u must be a unit vector of the affine hull's
        direction space (or zero, before the first query): the next loss value is multiplied
        by it, and the privacy proof's sensitivity (k / zeta)(hi - lo) holds for ||u|| = 1 in
        the hull only (:mod:`dponline.bandits.ene_noise`, Lemma (b))."""
        shape = (self.replicas, self.dim)
        total = np.array(checked_real_array("saved sum", saved_field(state, "sum"), shape))
        u = np.array(checked_real_array("saved u", saved_field(state, "u"), shape))
        norms = np.linalg.norm(u, axis=1)
        off = np.linalg.norm(u - (u @ self._basis) @ self._basis.T, axis=1)
        bad = ~(((np.abs(norms - 1.0) <= 1e-9) & (off <= 1e-9)) | (norms == 0.0))
        if bad.any():
            j = int(np.argmax(bad))
            raise ArgumentError(
                f"saved u of replica {j} must be a unit vector of the affine hull (or zero), "
                f"got norm {norms[j]:.6g} at distance {off[j]:.3g} from the hull's directions"
            )
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self._sum, self._u, self.rng = total, u, rng

        return install

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`; a corrupt state raises and changes nothing."""
        self.prepare_load(state)()


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

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """The solver's whole state checked (:meth:`QuadraticFrankWolfe.prepare_load`)."""
        return self.solver.prepare_load(state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`; a corrupt state raises and changes nothing."""
        self.prepare_load(state)()


class NoisyOCO:
    """Algorithm 2 with a pipelined map (module docstring): ``rounds`` NoisyOCO rounds of
    ``inner`` steps each (the last may be shorter, ending at ``steps``), step ``eta``, prefix
    sums kept by ``aggregator`` and the first decision ``start``.

    Each inner step: :meth:`query` the points to play, :meth:`feed` their loss values. At the
    end of round R: s_R = aggregator.step(g~_R), the map's answer (computed during round R from
    s_{R-1}) becomes the decision of round R+1, and the map starts on -eta s_R.

    ``basis``: None (the aggregator sums g~ in R^n), or an (n, k) matrix B with orthonormal
    columns whose span holds every g~ the oracle returns: the aggregator, of dimension k, sums
    B^T g~ and the map starts on -eta B (its release). Since g~ = B B^T g~, the exact prefix
    sums are the same either way; only where the aggregator's noise lives changes.
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
        basis: np.ndarray | None = None,
    ) -> None:
        self.eta, self.inner, self.steps = float(eta), int(inner), int(steps)
        self.grad, self.map, self.aggregator = grad, noisy_map, aggregator
        self._center = np.array(start, dtype=float)  # x~_{R-1}
        self.basis = None if basis is None else np.asarray(basis, dtype=float)
        if self.basis is not None and (
            self.basis.ndim != 2 or self.basis.shape != (self._center.shape[-1], aggregator.dim)
        ):
            raise ValueError(
                f"basis must have shape (dim, aggregator dim) = ({self._center.shape[-1]}, "
                f"{aggregator.dim}), got {self.basis.shape}"
            )
        self.map.begin(-self.eta * self._lift(aggregator.initial_release()), self._center)
        self.t = 0

    def _lift(self, release: np.ndarray) -> np.ndarray:
        """A release of the aggregator as a point of R^n: B y, or y itself without a basis."""
        return release if self.basis is None else release @ self.basis.T

    def _coordinates(self, g: np.ndarray) -> np.ndarray:
        """What the aggregator sums: B^T g~, or g~ itself without a basis."""
        return g if self.basis is None else g @ self.basis

    @property
    def center(self) -> np.ndarray:
        """The current round's decision x~_{R-1} (a copy)."""
        return self._center.copy()

    def restart_map(self) -> None:
        """Restart the first round's map on the aggregator's initial release (after its noise
        was rescaled before the first step)."""
        self.map.begin(-self.eta * self._lift(self.aggregator.initial_release()), self._center)

    def query(self) -> np.ndarray:
        return self.grad.query(self._center)

    def feed(self, values: np.ndarray) -> None:
        self.grad.feed(values)
        self.map.advance()
        self.t += 1
        if self.t % self.inner == 0 or self.t == self.steps:
            prefix = self._lift(self.aggregator.step(self._coordinates(self.grad.take())))
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

    def rounds_done(self, t: int) -> int:
        """The NoisyOCO rounds ended (the aggregator's steps) after ``t`` inner steps."""
        return t // self.inner + (1 if t == self.steps and t % self.inner else 0)

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole of ``state``: the step counter (in [0, steps]), the decision, and
        the gradient oracle's, the map's and the aggregator's states through their own
        ``prepare_load`` (the aggregator at the round the step counter says), then return the
        function that installs all of them. A state corrupt in any part is refused before
        any part changes."""
        t = checked_round(saved_field(state, "t"), self.steps)
        center = np.array(
            checked_real_array("saved center", saved_field(state, "center"), self._center.shape)
        )
        install_grad = self.grad.prepare_load(saved_field(state, "grad"))
        install_map = self.map.prepare_load(saved_field(state, "map"))
        saved_aggregator = saved_field(state, "aggregator")
        install_aggregator = self.aggregator.prepare_load(saved_aggregator)
        rounds = self.rounds_done(t)
        if saved_field(saved_aggregator, "t") != rounds:
            raise ArgumentError(
                f"saved aggregator has summed {saved_aggregator['t']!r} rounds, but step {t} "
                f"of rounds of {self.inner} steps ends {rounds}: the states are from different "
                "runs"
            )

        def install() -> None:
            install_aggregator()
            install_map()
            install_grad()
            self._center, self.t = center, t

        return install

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`; a corrupt state raises and changes nothing."""
        self.prepare_load(state)()
