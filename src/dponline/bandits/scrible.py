"""Differentially private bandit linear optimisation: Agarwal & Singh (2017), Algorithm 4 around
SCRiBLe (Abernethy, Hazan & Rakhlin 2012), Theorem 4.5.

SCRiBLe keeps an FTRL point with a nu-self-concordant barrier R of the decision set K (a
:class:`~dponline.domains.base.ConvexDomain` with a ``barrier``,
:class:`~dponline.domains.base.HasBarrier`: the box, the Euclidean ball, a full-dimensional
polytope),

    x_t = argmin_{x} eta <L~_{t-1}, x> + R(x)          (damped Newton, warm-started),

and plays a point of its Dikin ellipsoid: with nabla^2 R(x_t) = sum_i lambda_i e_i e_i^T, draw
i uniform in [N] and s = +-1, play y_t = x_t + s lambda_i^{-1/2} e_i (inside K). It sees only
the loss value <l_t, y_t>; Algorithm 4 forwards <l_t, y_t> + <Z_t, y_t>, Z_t ~ Lap^N(lambda), and
SCRiBLe's estimate is l~_t = N (forwarded value) s lambda_i^{1/2} e_i.

Privacy (Lemma 4.2, derived once for every bandit algorithm in
:mod:`~dponline.bandits.private_reduction`): neighbouring loss sequences move the forwarded value
by at most sup |<l - l', y>| / ||y||_inf <= the l1 diameter of the loss set Y times the noise's
scale at the largest coordinate of y. The ``tight`` calibration takes lambda = diam_1(Y) /
epsilon; the ``paper`` one takes Theorem 4.5's lambda = ||Y||_1 / epsilon, which proves
diam_1(Y) / ||Y||_1 times epsilon (2 epsilon for a symmetric Y): refused unless the budget
allows a weaker paper calibration.

Theorem 4.5's step: eta = sqrt(nu log T / (2 N^2 T (M^2 + lambda^2 N ||K||_2^2))), with
M = sup |<l, x>| over Y x K (bounded here by sup ||l||_2 sup ||x||_2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.private_reduction import PrivateBanditReduction
from dponline.domains.barriers import SelfConcordantBarrier
from dponline.domains.base import ConvexDomain
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import InputBounds, NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import FeedbackKind, checked_count
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike, generator_state

__all__ = ["DPSCRiBLe", "SCRiBLe", "domain_barrier", "scrible_regret_bound"]


def domain_barrier(domain: ConvexDomain) -> SelfConcordantBarrier:
    """The self-concordant barrier of ``domain`` (``domain.barrier``,
    :class:`~dponline.domains.base.HasBarrier`); TypeError for a domain without one."""
    if not isinstance(domain, ConvexDomain):
        raise TypeError(
            f"domain must be a ConvexDomain (dponline.domains), got {type(domain).__name__}"
        )
    barrier = getattr(domain, "barrier", None)
    if not isinstance(barrier, SelfConcordantBarrier):
        raise TypeError(
            f"SCRiBLe needs a decision set with a self-concordant barrier (HasBarrier: Box, "
            f"LpBall with p = 2, a full-dimensional Polytope); {domain!r} has none"
        )
    if barrier.dim != domain.dim:
        raise ValueError(f"the barrier has dimension {barrier.dim}, the domain {domain.dim}")
    return barrier


def scrible_regret_bound(
    nu: float,
    dim: int,
    horizon: int,
    m: float,
    x_norm: float,
    y1_norm: float,
    epsilon: float | None,
) -> float:
    """Theorem 4.5's bound with the O(.) constant taken as 1:
    sqrt(T log T) sqrt(N^2 nu (M^2 + N ||X||_2^2 ||Y||_1^2 / epsilon^2))."""
    priv = 0.0 if epsilon is None else dim * x_norm**2 * y1_norm**2 / epsilon**2
    return math.sqrt(horizon * math.log(horizon)) * math.sqrt(dim**2 * nu * (m**2 + priv))


def canonical_eigenpairs(vals: np.ndarray, vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eigenpairs of ``numpy.linalg.eigh`` (shapes (..., n) and (..., n, n), columns the
    vectors, eigenvalues ascending) made independent of the LAPACK build.

    LAPACK may return any orthonormal basis of a repeated eigenvalue's eigenspace and either
    sign of each vector: a numpy upgrade changed SCRiBLe's plays at a fixed seed on the box,
    whose barrier's Hessian has a double eigenvalue at every point of the test stream. Here a
    cluster of eigenvalues equal to 1e-9 of the largest gets the basis V_c W, W the
    eigenvectors of V_c^T D V_c for D = diag(1, ..., n): a change of V_c's basis, V_c R, turns
    that matrix into R^T (V_c^T D V_c) R and leaves V_c W unchanged up to signs (for distinct
    eigenvalues of the compressed D, the generic case). Each vector's first entry within 1e-9
    of its largest magnitude is then made positive. SCRiBLe draws a vector uniformly and its
    sign fairly, and any orthonormal eigenbasis makes its estimate unbiased, so this changes
    no guarantee: only which basis a seed's draws read."""
    n = vals.shape[-1]
    scale = np.maximum(np.abs(vals).max(axis=-1, keepdims=True), 1e-300)
    new_cluster = np.diff(vals, axis=-1) > 1e-9 * scale
    cluster = np.concatenate(
        [np.zeros((*vals.shape[:-1], 1), dtype=np.int64), np.cumsum(new_cluster, axis=-1)],
        axis=-1,
    )
    if (cluster[..., -1] < n - 1).any():  # some eigenvalue repeats: canonical bases
        d = np.arange(1.0, n + 1.0)
        compressed = np.swapaxes(vecs, -1, -2) @ (d[:, None] * vecs)
        same = cluster[..., :, None] == cluster[..., None, :]
        # clusters kept apart by offsets larger than D's spread, in their ascending order
        offsets = (2.0 * n) * cluster.astype(float)
        blocks = np.where(same, compressed, 0.0) + offsets[..., None] * np.eye(n)
        _, w = np.linalg.eigh(blocks)
        vecs = vecs @ w
    mags = np.abs(vecs)
    lead = np.argmax(mags >= mags.max(axis=-2, keepdims=True) - 1e-9, axis=-2)
    sign = np.take_along_axis(vecs, lead[..., None, :], axis=-2)
    return vals, vecs * np.where(sign < 0.0, -1.0, 1.0)


class SCRiBLe:
    """SCRiBLe (Abernethy, Hazan & Rakhlin 2012) for the values Algorithm 4 forwards: an FTRL
    point with the barrier of ``domain``, played on its Dikin ellipsoid (module docstring)."""

    one_hot = False

    def __init__(
        self,
        domain: ConvexDomain,
        *,
        eta: float,
        replicas: int,
        rng: np.random.Generator,
        newton_tol: float = 1e-9,
    ) -> None:
        eta = checked_positive("eta", eta)
        barrier = domain_barrier(domain)
        self.domain, self.barrier = domain, barrier
        self.eta, self.replicas, self.rng = eta, replicas, rng
        self.dim = barrier.dim
        self.newton_tol = float(newton_tol)
        self._cum = np.zeros((self.replicas, self.dim))
        self._x = np.broadcast_to(barrier.analytic_center(), (self.replicas, self.dim)).copy()
        self._played = np.zeros((self.replicas, self.dim))
        self._direction = np.zeros((self.replicas, self.dim))  # s lambda_i^{1/2} e_i

    def _ftrl_point(self) -> None:
        """Damped Newton on eta <L~, x> + R(x), warm-started at the previous point."""
        x = self._x
        dec = np.full(self.replicas, np.inf)
        for _ in range(100):
            g = self.eta * self._cum + self.barrier.gradient(x)
            h = self.barrier.hessian(x)
            step = np.linalg.solve(h, g[..., None])[..., 0]
            dec = np.sqrt(np.maximum((g * step).sum(axis=-1), 0.0))
            new = x - step / (1.0 + dec)[:, None]
            # a damped Newton step stays inside for a self-concordant barrier; guard against
            # rounding when eta * |L~| is huge
            bad = ~(np.isfinite(new).all(axis=1) & self.barrier.contains(new))
            if np.any(bad):
                raise ValueError(
                    "DP-SCRiBLe's FTRL point left the decision set in floating point: eta times "
                    "the cumulative loss estimate is too large (use a smaller eta)"
                )
            x = new
            if dec.max() < self.newton_tol:
                break
        if not dec.max() < 1e-6:
            raise ValueError(
                f"DP-SCRiBLe's Newton iterations did not converge (decrement {dec.max():.3g}); "
                "eta times the cumulative loss estimate is too large for double precision"
            )
        self._x = x

    def act(self) -> np.ndarray:
        """y_t = x_t + s lambda_i^{-1/2} e_i on the Dikin ellipsoid, shape (replicas, N)."""
        vals, vecs = canonical_eigenpairs(*np.linalg.eigh(self.barrier.hessian(self._x)))
        i = self.rng.integers(0, self.dim, size=self.replicas)
        s = np.where(self.rng.random(self.replicas) < 0.5, -1.0, 1.0)
        rows = np.arange(self.replicas)
        lam_i, e_i = vals[rows, i], vecs[rows, :, i]
        self._played = self._x + (s / np.sqrt(lam_i))[:, None] * e_i
        self._direction = (s * np.sqrt(lam_i))[:, None] * e_i
        return self._played.copy()

    def played(self) -> np.ndarray:
        return self._played

    def learn(self, values: np.ndarray) -> None:
        """l~_t = N v_t s lambda_i^{1/2} e_i; then the next FTRL point."""
        self._cum += self.dim * values[:, None] * self._direction
        self._ftrl_point()

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": {"barrier": repr(self.barrier), "eta": self.eta},
            "cum": self._cum.copy(),
            "x": self._x.copy(),
            "played": self._played.copy(),
            "direction": self._direction.copy(),
            "rng": generator_state(self.rng),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`; a corrupt state raises and changes nothing."""
        self.prepare_load(state)()

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (barrier and step, the arrays, the FTRL point strictly inside
        the set, the RNG) and return the function that installs it."""
        if saved_field(state, "config") != {"barrier": repr(self.barrier), "eta": self.eta}:
            raise ArgumentError("state was saved from a SCRiBLe with a different barrier or step")
        shape = (self.replicas, self.dim)
        arrays = {
            key: np.array(checked_real_array(f"saved {key}", saved_field(state, key), shape))
            for key in ("cum", "x", "played", "direction")
        }
        if not np.all(self.barrier.contains(arrays["x"])):
            raise ArgumentError("saved FTRL point x must lie strictly inside the decision set")
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            for key, value in arrays.items():
                setattr(self, f"_{key}", value)
            self.rng = rng

        return install


class DPSCRiBLe(PrivateBanditReduction):
    """DP bandit linear optimisation over a set with a self-concordant barrier: Algorithm 4
    around :class:`SCRiBLe` (Theorem 4.5).

    Parameters
    ----------
    domain:
        The decision set K, a :class:`~dponline.domains.base.ConvexDomain` with a ``barrier``
        (:class:`~dponline.domains.base.HasBarrier`: :class:`~dponline.domains.box.Box`,
        ``LpBall(n, 2)``, a full-dimensional :class:`~dponline.domains.polytope.Polytope`);
        anything else is a TypeError.
    horizon:
        T.
    budget:
        Pure-DP budget; ``None`` runs the non-private SCRiBLe.
    loss_bounds:
        The loss set Y (a NormBall or Box in R^N; default the unit l2 ball). The observed loss
        value must lie within {<l, y_t> : l in Y}, else ValueError (or clipping).
    eta:
        Step (default: Theorem 4.5's).
    """

    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 4 around SCRiBLe, Theorem 4.5"

    def __init__(
        self,
        domain: ConvexDomain,
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        loss_bounds: InputBounds | None = None,
        eta: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
        newton_tol: float = 1e-9,
    ) -> None:
        barrier = domain_barrier(domain)
        self.domain, self.barrier = domain, barrier
        dim = barrier.dim
        horizon = checked_count("horizon", horizon)
        replicas = checked_count("replicas", replicas)
        bounds = loss_bounds if loss_bounds is not None else NormBall(1.0, 2, dim)
        if bounds.dim != dim:
            raise ValueError(f"loss_bounds has dimension {bounds.dim}, expected {dim}")
        x_norm = barrier.max_norm()
        self.m = bounds.max_norm(2) * x_norm

        def make(lam: float, gen: np.random.Generator) -> SCRiBLe:
            step = eta
            if step is None:
                denom = 2 * dim**2 * horizon * (self.m**2 + lam**2 * dim * x_norm**2)
                step = math.sqrt(barrier.nu * math.log(max(horizon, 2)) / denom)
            return SCRiBLe(domain, eta=step, replicas=replicas, rng=gen, newton_tol=newton_tol)

        # the fictitious-loss argument of Lemma 4.2: l1 sensitivity diam_1(Y)
        super().__init__(
            make,
            horizon,
            budget=budget,
            loss_bounds=bounds,
            sensitivity=bounds.diameter(1),
            paper_numerator=bounds.max_norm(1),
            paper_source="Agarwal & Singh (2017) Thm 4.5 (lambda = ||Y||_1 / epsilon)",
            replicas=replicas,
            rng=rng,
            clip=clip,
        )


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _dp_scrible(env: Any, *, budget: PrivacyBudget | None, **kw: Any) -> DPSCRiBLe:
    """DP-SCRiBLe over ``env``'s decision set (``env.domain``, which must have a barrier) and
    horizon, with the loss set the environment declares (``env.loss_bounds``) if any."""
    if getattr(env, "loss_bounds", None) is not None:
        kw.setdefault("loss_bounds", env.loss_bounds)
    return DPSCRiBLe(env.domain, env.horizon, budget=budget, **kw)


_SCRIBLE_SETTING = "bandit linear optimisation over a set with a self-concordant barrier"

_DP_SCRIBLE_ENTRY = register_learner(
    LearnerEntry(
        "dp-scrible",
        _dp_scrible,
        paper="Agarwal & Singh (2017), Algorithm 4 around SCRiBLe (Abernethy, Hazan & "
        "Rakhlin 2012), Theorem 4.5",
        setting=_SCRIBLE_SETTING,
        guarantee=(
            "event-level epsilon-DP (Laplace on the observed loss value, Lemma 4.2) over "
            "loss sequences differing in one round, for losses in the unit l2 ball"
        ),
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="barrier set",
        test_cases=(
            LearnerTestCase(
                "bandit_linear",
                environment_options={"dim": 3, "domain": "box"},
                audit=AuditCase(
                    # two rounds on [-1, 1] (N = 1): round 1's loss -1 or +1 (across the unit
                    # ball), a large step so that it moves the second point played
                    horizon=2,
                    values=(-1.0, 1.0),
                    environment_options={"dim": 1},
                    learner_options={"eta": 3.0},
                    trials=60_000,
                    pilot_trials=15_000,
                    seed=6,
                ),
            ),
        ),
        options={"eta": "step (default: Theorem 4.5)"},
        default_delta=0.0,
    )
)

register_learner(
    non_private_entry(
        _DP_SCRIBLE_ENTRY,
        "scrible",
        paper="SCRiBLe (Abernethy, Hazan & Rakhlin 2012); the non-private counterpart of "
        "dp-scrible",
        test_cases=(
            LearnerTestCase(
                "bandit_linear", environment_options={"dim": 3, "domain": "ball"}, randomised=True
            ),
        ),
        options={"eta": "step (default: Theorem 4.5 at lambda = 0)"},
    )
)
