"""Differentially private Follow-the-Regularized-Leader: Agarwal & Singh (2017), Algorithm 1.

Each round the learner plays

    x_t = argmin_{x in X}  eta <x, L~_{t-1}> + R(x),

where L~_{t-1} is a private estimate of the prefix sum of the loss vectors released by a
continual counter (Algorithm 2, TreeBasedAgg, in the paper's calibration; any mechanism of
:mod:`dponline.continual` in the tight one). The decisions are post-processing of the counter's
releases, so the learner has the counter's guarantee: event-level DP over loss sequences that
differ in one round (Definition 2.1), for losses inside the declared bounds.

The decision set X is a :class:`~dponline.domains.base.ConvexDomain` (default: the simplex);
the regulariser R is not a set but acts on one (Corollary 3.2):

* :class:`EntropicRegulariser`: R(x) = sum x_i log x_i on the probability simplex
  (prediction with expert advice), x = softmax(-eta L) in closed form;
* :class:`EuclideanRegulariser`: R(x) = ||x||^2 on any domain with a Euclidean projection
  (:class:`~dponline.domains.base.Projectable`: simplex, box, l_p balls, polytopes, matroid
  polytopes, permutahedron), x = the projection of -eta L / 2: clipping on the cube, radial
  scaling on the ball, an exact least distance programme on a polytope
  (:class:`~dponline.domains.polytope.Polytope`).

What the regret bound of Theorem 3.1 needs (the range D_R of R over X, the local dual norms of
the losses, the range of the noise over X) are methods of the regulariser, computed from the
domain.

Anytime DP-FTRL (``horizon=None``; the construction and its bound are ours). The counter is the
anytime one of :func:`~dponline.continual.factory.build_counter`, whose guarantee holds for the
releases up to every t, so the decisions up to every t have it (post-processing). The rate
needs no horizon: eta_t = c / sqrt(t) in round t, with c = sqrt(D_R) by default (the fixed-horizon
default sqrt(D_R / T) is eta_T). Regret at every T, for Gaussian noise and losses fixed in
advance, with v_t the counter's per-coordinate variance of release t (v_0 that of the initial
release) and s_t = sqrt(v_t):

    E Regret_T <= D_R / eta_{T+1} + (1/2) sum_{t<=T} eta_t max_x ||l_t||^2_{x,*}
                  + E[max_X <G, x> - min_X <G, x>] (s_T + sum_{t<=T} (s_{t-1} - s_t)^+),

G ~ N(0, I_N). Proof (ours). E<l_t, x_t> depends on the noise Z_{t-1} of release t - 1 only
through its law N(0, v_{t-1} I) (Gaussian mechanisms add a linear image of i.i.d. Gaussians to
each coordinate, and the losses do not react to the decisions), so the expected regret is that
of the coupling Z_{t-1} = s_{t-1} G with one G: FTRL with the time-varying regulariser
psi_t(x) = (R(x) - min R) / eta_t + s_{t-1} <G, x>. Orabona's FTRL equality (A Modern
Introduction to Online Learning, arXiv 1912.13213, Lemma 7.1) with his one-step bound for a
psi_t that is (1/eta_t)-strongly convex (Lemma 7.8) bounds the regret by
psi_{T+1}(u) - min psi_1 + sum_t [eta_t ||l_t||^2_* / 2 + psi_t(x_{t+1}) - psi_{t+1}(x_{t+1})].
The R parts of psi_t - psi_{t+1} are <= 0 (eta_t does not increase); the noise parts are
(s_{t-1} - s_t) <G, x_{t+1}>; writing <G, x> = m + r(x) with m = min_X <G, x> and
0 <= r <= max - min, every m cancels and what is left is at most
(max - min)(s_T + sum_t (s_{t-1} - s_t)^+). The dual norm squared of the strongly convex R is
max_x ||l||^2_{x,*} here for both regularisers (max_i l_i^2 for the entropy, 1-strongly convex
in l1 on the simplex; ||l||^2 / 2 for ||x||^2 with its modulus 2 in l2 folded in). With
||l_t||^2_* <= 1 and the default c the first two terms are at most 2 sqrt(D_R (T + 1)), against
1.5 sqrt(D_R T) for the fixed rate at its own T. :meth:`DPFTRL.regret_bound` evaluates this
bound (it also holds with a fixed rate, on any Gaussian counter).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.factory import build_counter
from dponline.domains.base import ConvexDomain, Projectable, checked_domain
from dponline.domains.simplex import Simplex
from dponline.online.counter_learner import CounterLearner, described
from dponline.privacy.arguments import checked_flag, checked_positive
from dponline.privacy.bounds import Box, InputBounds
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.privacy.noise import GaussianNoise
from dponline.protocol import FeedbackKind, checked_budget, checked_count
from dponline.registry import (
    DESIGN_HORIZON_OPTION,
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike

__all__ = [
    "DPFTRL",
    "EntropicRegulariser",
    "EuclideanRegulariser",
    "FTRLRegulariser",
    "make_regulariser",
]


class FTRLRegulariser(ABC):
    """A strongly convex regulariser R of FTRL, applied to a decision set passed in.

    ``argmin(domain, eta, L)`` solves argmin_{x in domain} eta <x, L> + R(x) row by row;
    ``range_of_regulariser``, ``max_local_dual_norm_sq`` and ``noise_range`` are the three
    quantities of Theorem 3.1's bound (:meth:`DPFTRL.regret_bound`).
    """

    name: ClassVar[str]

    @abstractmethod
    def check(self, domain: ConvexDomain) -> None:
        """Raise TypeError or ValueError if R cannot be used on ``domain``."""

    @abstractmethod
    def argmin(self, domain: ConvexDomain, eta: float, cumulative: np.ndarray) -> np.ndarray:
        """argmin_{x in domain} eta <x, L> + R(x) for each row L of ``cumulative``."""

    @abstractmethod
    def range_of_regulariser(self, domain: ConvexDomain) -> float:
        """D_R = max_X R - min_X R (or a proven upper bound)."""

    @abstractmethod
    def max_local_dual_norm_sq(self, domain: ConvexDomain, loss: np.ndarray) -> np.ndarray:
        """max_{x in X} ||l||^2_{(nabla^2 R(x))^-1} for each row l of ``loss``."""

    def noise_range(self, domain: ConvexDomain, z: np.ndarray) -> np.ndarray:
        """max_{x in X} <z, x> - min_{x in X} <z, x> for each row z, by two oracle calls."""
        z = np.asarray(z, dtype=float)
        return -domain.min_linear(-z) - domain.min_linear(z)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EntropicRegulariser(FTRLRegulariser):
    """R(x) = sum_i x_i log x_i on the probability simplex (prediction with expert advice)."""

    name: ClassVar[str] = "entropic"

    def check(self, domain: ConvexDomain) -> None:
        if not isinstance(domain, Simplex):
            raise ValueError(
                "the entropic regulariser is defined on the probability simplex only, got "
                f"{domain!r}; use EuclideanRegulariser on other domains"
            )

    def argmin(self, domain: ConvexDomain, eta: float, cumulative: np.ndarray) -> np.ndarray:
        """softmax(-eta L) along the last axis, computed stably (in one work array; the row
        sums as a matrix-vector product, which is faster than a reduction over a short axis)."""
        z = np.multiply(cumulative, -eta)
        z -= z.max(axis=-1, keepdims=True)
        np.exp(z, out=z)
        z /= (z @ np.ones(z.shape[-1]))[..., None]
        return z

    def range_of_regulariser(self, domain: ConvexDomain) -> float:
        """D_R = max R - min R = 0 - (-log N) = log N."""
        return math.log(domain.dim)

    def max_local_dual_norm_sq(self, domain: ConvexDomain, loss: np.ndarray) -> np.ndarray:
        """max_x ||l||^2_{(nabla^2 R(x))^-1} = max_x sum_i x_i l_i^2 = max_i l_i^2."""
        return (loss**2).max(axis=-1)


class EuclideanRegulariser(FTRLRegulariser):
    """R(x) = ||x||^2 on a domain with a Euclidean projection: the FTRL step is the projection
    of -eta L / 2 (``domain.project``). Domains without a projection are refused (DP-FTPL needs
    only the linear minimisation oracle)."""

    name: ClassVar[str] = "euclidean"

    def check(self, domain: ConvexDomain) -> None:
        if not isinstance(domain, Projectable):
            raise TypeError(
                f"the Euclidean regulariser needs the Euclidean projection onto the domain, and "
                f"{domain!r} has none (domains with `project`: Simplex, CornerSimplex, Box, "
                "LpBall, Polytope, the matroid polytopes, Permutahedron); DP-FTPL needs only "
                "the linear minimisation oracle"
            )

    def argmin(self, domain: ConvexDomain, eta: float, cumulative: np.ndarray) -> np.ndarray:
        """argmin_X eta <x, L> + ||x||^2 = the projection of -eta L / 2 onto X, row by row."""
        assert isinstance(domain, Projectable)
        return domain.project(-eta * cumulative / 2.0)

    def range_of_regulariser(self, domain: ConvexDomain) -> float:
        """max_X ||x||^2 - min_X ||x||^2. The max is the domain's ``max_euclidean_norm``
        squared where it states one (LpBall: exact), else the bounding-box bound
        sum_i max(lo_i^2, hi_i^2) with lo_i, hi_i the extremes of x_i over X (2 N oracle calls;
        exact for boxes); the min is ||Pi_X(0)||^2, exactly."""
        assert isinstance(domain, Projectable)
        stated = getattr(domain, "max_euclidean_norm", None)
        if stated is not None:
            max_sq = float(stated) ** 2
        else:
            eye = np.eye(domain.dim)
            lo = domain.min_linear(eye)
            hi = -domain.min_linear(-eye)
            max_sq = float((np.maximum(np.abs(lo), np.abs(hi)) ** 2).sum())
        min_sq = float((domain.project(np.zeros((1, domain.dim)))[0] ** 2).sum())
        return max_sq - min_sq

    def max_local_dual_norm_sq(self, domain: ConvexDomain, loss: np.ndarray) -> np.ndarray:
        """R = ||x||^2 has Hessian 2I: the dual local norm squared is ||l||^2 / 2."""
        return (loss**2).sum(axis=-1) / 2.0


#: the regularisers by name (``make_regulariser``)
REGULARISERS: dict[str, type[FTRLRegulariser]] = {
    "entropic": EntropicRegulariser,
    "euclidean": EuclideanRegulariser,
}


def make_regulariser(
    regulariser: FTRLRegulariser | str | None, domain: ConvexDomain
) -> FTRLRegulariser:
    """The regulariser for ``domain``, checked: ``None`` gives the entropic one on the simplex
    (Hedge, Corollary 3.2's experts case) and the Euclidean one elsewhere; a name is one of
    :data:`REGULARISERS`."""
    if regulariser is None:
        regulariser = "entropic" if isinstance(domain, Simplex) else "euclidean"
    if isinstance(regulariser, str):
        if regulariser not in REGULARISERS:
            raise ValueError(
                f"regulariser must be one of {sorted(REGULARISERS)}, got {regulariser!r}"
            )
        regulariser = REGULARISERS[regulariser]()
    if not isinstance(regulariser, FTRLRegulariser):
        raise TypeError(
            "regulariser must be an FTRLRegulariser, a name in "
            f"{sorted(REGULARISERS)} or None, got {type(regulariser).__name__}"
        )
    regulariser.check(domain)
    return regulariser


class DPFTRL(CounterLearner):
    """Private FTRL (Agarwal & Singh 2017, Algorithm 1) on a continual counter.

    The guarantee (``privacy``) is the counter's: (epsilon, delta)-DP of the whole sequence of
    plays over loss sequences that differ in one round's loss vector (or in one person's
    rounds, for a budget with ``participations``), the plays being post-processing of the
    counter's releases; with the derivation of its noise.

    Parameters
    ----------
    dim, horizon:
        Number of experts / coordinates N and rounds T. ``horizon=None`` builds the anytime
        learner (module docstring): the anytime counter, eta_t = c / sqrt(t), no round refused.
    budget:
        The :class:`~dponline.privacy.budget.PrivacyBudget`; its calibration is "paper" (the
        paper's noise on the tree of Algorithm 2) or "tight" (least provable noise on
        ``mechanism``). ``None`` runs the non-private FTRL it privatises (exact sums).
    noise:
        "laplace" (pure DP, Theorem 3.1, which meets every delta) or "gaussian"
        (Theorem A.1; delta > 0); by default the budget's: Laplace for delta = 0, Gaussian
        for delta > 0.
    mechanism:
        Continual counter; defaults to "padded_tree" for "paper" and, for "tight", the
        lowest-variance mechanism whose noise state for one run fits 64 MiB, whatever the
        number of replicas (:func:`~dponline.continual.selection.best_mechanism`: the rescaled
        square root, else a BLT, for Gaussian noise; the k-ary tree for Laplace; for a person's
        budget the one of least variance for the pattern). The counter is
        built by :func:`~dponline.continual.factory.build_counter`; without a budget it is
        exact (``mechanism`` unused).
    design_horizon:
        With the BLT without a horizon (``mechanism="anytime_blt"``, or the counter chosen
        for the budget; no horizon, Gaussian noise): the rounds it is optimised for (default
        2^20; the guarantee holds at every round, the variance past it grows about linearly).
        Refused with another counter.
    domain:
        The decision set X, a :class:`~dponline.domains.base.ConvexDomain` in R^N (default
        :class:`~dponline.domains.simplex.Simplex`: experts).
    regulariser:
        :class:`EntropicRegulariser` (simplex only), :class:`EuclideanRegulariser` (domains
        with a projection), or their names "entropic" / "euclidean"; default entropic on the
        simplex, Euclidean elsewhere (:func:`make_regulariser`).
    loss_bounds:
        The declared loss set Y (default [0, 1]^N); inputs outside raise unless ``clip``.
    eta:
        Learning rate, the same in every round; defaults to sqrt(D_R / T) for losses of
        sup-norm at most 1, and without a horizon to the anytime rate eta_t = c / sqrt(t).
    eta_constant:
        c of the anytime rate (``horizon=None`` and no ``eta``); default sqrt(D_R), for local
        dual norms of the losses at most 1.
    replicas, rng, clip:
        Independent copies along a leading axis; the generator (or seed; ``None``: fresh
        entropy, a deployment's choice); clip losses onto ``loss_bounds`` instead of refusing.

    Examples
    --------
    >>> import numpy as np
    >>> from dponline.privacy import PrivacyBudget
    >>> from dponline.protocol import LossVectorFeedback
    >>> learner = DPFTRL(3, 100, budget=PrivacyBudget(1.0, 1e-6), rng=0)  # Gaussian noise
    >>> learner.privacy.epsilon <= 1.0, learner.privacy.delta  # what its noise proves
    (True, 1e-06)
    >>> p = learner.act()  # a distribution over the 3 experts, one row per replica
    >>> p.shape, bool(np.isclose(p.sum(), 1.0))
    ((1, 3), True)
    >>> learner.observe(LossVectorFeedback([0.0, 1.0, 0.5]))
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR
    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 1 (with Algorithm 2)"

    def __init__(
        self,
        dim: int,
        horizon: int | None,
        *,
        budget: PrivacyBudget | None,
        noise: str | None = None,
        mechanism: str | None = None,
        domain: ConvexDomain | None = None,
        regulariser: FTRLRegulariser | str | None = None,
        loss_bounds: InputBounds | None = None,
        eta: float | None = None,
        eta_constant: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
        design_horizon: int | None = None,
    ) -> None:
        self.dim = checked_count("dim", dim)
        self._start_rounds(horizon, anytime=True)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget)
        self.domain = domain = checked_domain(
            Simplex(self.dim) if domain is None else domain, self.dim
        )
        self.regulariser = make_regulariser(regulariser, domain)
        self.bounds = loss_bounds if loss_bounds is not None else Box(0.0, 1.0, dim=self.dim)
        if self.bounds.dim != self.dim:
            raise ValueError(f"loss_bounds has dimension {self.bounds.dim}, expected {self.dim}")
        d_r = max(self.regulariser.range_of_regulariser(self.domain), 1e-12)
        self._eta: float | None = None  # a rate fixed for every round
        self.eta_constant: float | None = None  # c of the anytime rate c / sqrt(t)
        if eta_constant is not None and (eta is not None or self.horizon is not None):
            raise ValueError(
                "eta_constant sets the anytime rate c / sqrt(t), used only with horizon=None "
                "and no eta; "
                + ("give one of eta and eta_constant" if eta is not None else "drop it")
                + " (a fixed horizon's default rate is sqrt(D_R / T))"
            )
        if eta is not None:
            self._eta = checked_positive("eta", eta)
        elif self.horizon is not None:
            self._eta = math.sqrt(d_r / self.horizon)
        else:
            c = math.sqrt(d_r) if eta_constant is None else eta_constant
            self.eta_constant = checked_positive("eta_constant", c)
        # the counter chosen for the run and calibrated (exact prefix sums without a budget: the
        # non-private FTRL, same input contract); the learner states the counter's guarantee
        self.counter: ContinualCounter = build_counter(
            self.budget,
            horizon=self.horizon,
            bounds=self.bounds,
            noise=noise,
            mechanism=mechanism,
            replicas=self.replicas,
            rng=rng,
            clip=clip,
            design_horizon=design_horizon,
        )
        self.privacy: PrivacyGuarantee | None = self.counter.privacy
        self._cumulative = self.counter.initial_release()

    def _decision_config(self) -> dict[str, Any]:
        """The class, the domain, the regulariser and the step size (fixed, or the anytime
        rate's constant)."""
        return {
            **super()._decision_config(),
            "regulariser": described(self.regulariser),
            "eta": self._eta,
            "eta_constant": self.eta_constant,
        }

    def rate(self, rounds: Any) -> Any:
        """eta of round(s) ``rounds`` (1-based): the fixed rate, or c / sqrt(t) for the anytime
        learner."""
        if self._eta is not None:
            return self._eta if np.ndim(rounds) == 0 else np.full(np.shape(rounds), self._eta)
        assert self.eta_constant is not None
        return self.eta_constant / np.sqrt(rounds)

    @property
    def eta(self) -> float:
        """The rate of the round being played, t + 1."""
        return float(self.rate(self.t + 1))

    def _decide_block(self, before: np.ndarray) -> np.ndarray:
        """Rounds t+1 .. t+b at once: each row with its own round's rate (the anytime one)."""
        if self._eta is not None:
            return super()._decide_block(before)
        b = before.shape[0]
        etas = np.repeat(self.rate(np.arange(self.t + 1, self.t + b + 1)), self.replicas)
        flat = before.reshape(b * self.replicas, -1)
        return self.regulariser.argmin(self.domain, etas[:, None], flat)  # type: ignore[arg-type]

    def regret_bound(self, losses: np.ndarray, *, samples: int = 20_000, seed: int = 0) -> dict:
        """Theorem 3.1 / 3.4 of Agarwal & Singh (2017) for the loss sequence ``losses`` (T, N);
        for the anytime learner, the anytime bound of the module docstring (ours;
        :meth:`anytime_regret_bound`).

        Returns ``theorem``: sqrt(D_R sum_t max_x ||l_t||*^2) + D, as the theorem states it, and
        ``explicit``: D_R / eta + 2 eta sum_t max_x ||l_t||*^2 + D, the proof's sum at this
        learner's eta (the FTL-BTL lemma plus the FTRL stability bound, Hazan 2016, Thm 5.2).
        D = E[max_x <Z, x> - min_x <Z, x>] for Z the noise of one release, estimated from
        ``samples`` draws with a fixed seed (0 for the non-private learner). The theorem is
        stated for Algorithm 2's identically distributed noise, so a private learner must run
        on the ``padded_tree``.
        """
        if self.horizon is None:
            return self.anytime_regret_bound(losses, samples=samples, seed=seed)
        losses = np.asarray(losses, dtype=float)
        reg, domain = self.regulariser, self.domain
        d_r = reg.range_of_regulariser(domain)
        stability = float(reg.max_local_dual_norm_sq(domain, losses).sum())
        if self.budget is None:
            d_noise = 0.0
        else:
            if self.counter.name != "padded_tree":
                raise ValueError(
                    "Theorem 3.1 assumes Algorithm 2's identically distributed noise: build the "
                    f"learner with mechanism='padded_tree' (this one uses {self.counter.name!r})"
                )
            gen = np.random.default_rng(seed)
            z = self.counter.noise.sample_sum(gen, self.counter.draws, (samples, self.dim))
            d_noise = float(reg.noise_range(domain, z).mean())
        return {
            "theorem": math.sqrt(d_r * stability) + d_noise,
            "explicit": d_r / self.eta + 2.0 * self.eta * stability + d_noise,
            "noise_term": d_noise,
        }

    def anytime_regret_bound(
        self, losses: np.ndarray, *, samples: int = 20_000, seed: int = 0
    ) -> dict:
        """The bound of the module docstring (ours) for the loss sequence ``losses`` (T, N), at
        this learner's rates (anytime or fixed) and its counter's exact variances: ``explicit``
        = ``regulariser_term`` D_R / eta_{T+1} + ``stability`` (1/2) sum_t eta_t
        max_x ||l_t||^2_{x,*} + ``noise_term`` E[range of G over X] (s_T + sum_t
        (s_{t-1} - s_t)^+), the range estimated from ``samples`` draws of G ~ N(0, I) with a
        fixed seed. Gaussian noise only (the proof couples Gaussian releases)."""
        losses = np.asarray(losses, dtype=float)
        horizon = len(losses)
        reg, domain = self.regulariser, self.domain
        etas = np.asarray(self.rate(np.arange(1, horizon + 2)), dtype=float)
        regulariser_term = reg.range_of_regulariser(domain) / float(etas[horizon])
        dual = reg.max_local_dual_norm_sq(domain, losses)
        stability = 0.5 * float((etas[:horizon] * dual).sum())
        noise_term = 0.0
        if self.budget is not None:
            if not isinstance(self.counter.noise, GaussianNoise):
                raise ValueError(
                    "the anytime regret bound is proved for Gaussian noise; this learner draws "
                    f"{type(self.counter.noise).__name__}"
                )
            s = np.sqrt([self.counter.variance(k) for k in range(horizon + 1)])
            variation = float(s[-1] + np.clip(s[:-1] - s[1:], 0.0, None).sum())
            g = np.random.default_rng(seed).standard_normal((samples, self.dim))
            noise_term = float(reg.noise_range(domain, g).mean()) * variation
        return {
            "explicit": regulariser_term + stability + noise_term,
            "regulariser_term": regulariser_term,
            "stability": stability,
            "noise_term": noise_term,
        }

    def _decide(self, cumulative: np.ndarray) -> np.ndarray:
        """x_t = argmin eta <x, L~_{t-1}> + R(x) for each row L~_{t-1} of ``cumulative``."""
        return self.regulariser.argmin(self.domain, self.eta, cumulative)


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _ftrl_geometry(env: Any) -> dict[str, Any]:
    """The decision set and the loss set Y of Agarwal & Singh's Corollary 3.2 that ``env``
    states (``env.domain``, ``env.loss_bounds``): the linear environments state both (the ball
    with losses in the unit l2 ball, the cube with losses in the unit l1 ball); the experts
    environments neither, and the learner's defaults apply (the simplex, [0, 1]^N)."""
    out: dict[str, Any] = {}
    if getattr(env, "domain", None) is not None:
        out["domain"] = env.domain
    if getattr(env, "loss_bounds", None) is not None:
        out["loss_bounds"] = env.loss_bounds
    return out


def horizon_of(env: Any, anytime: Any) -> int | None:
    """The horizon a factory builds a learner for: ``env``'s, or ``None`` (the anytime learner,
    which ignores it) when the option ``anytime`` is true."""
    return None if checked_flag("anytime", anytime) else env.horizon


def _dp_ftrl(env: Any, *, budget: PrivacyBudget | None, anytime: bool = False, **kw: Any) -> DPFTRL:
    """DP-FTRL on ``env``'s dimension, horizon and geometry (Laplace noise by default);
    ``anytime=True`` builds it without a horizon."""
    horizon = horizon_of(env, anytime)
    return DPFTRL(env.dim, horizon, budget=budget, **_ftrl_geometry(env), **kw)


def noise_default_delta(default_noise: str) -> Callable[[Any, Mapping[str, Any]], float]:
    """The default delta (:attr:`~dponline.registry.LearnerEntry.default_delta`) of a learner
    whose ``noise`` option defaults to ``default_noise``: 0 (pure DP) for Laplace noise, 1e-6
    for Gaussian noise."""

    def delta(env: Any, options: Mapping[str, Any]) -> float:
        return 0.0 if options.get("noise", default_noise) == "laplace" else 1e-6

    return delta


def _ftrl_audit(
    noise: str,
    environment_options: dict[str, Any],
    values: tuple[float, float],
    coordinates: str = "first",
) -> AuditCase:
    """Round 1's loss moved across the loss set, so that the audit sees all of the
    sensitivity the noise is calibrated to: on two experts, (0, 1) or (1, 0)
    (``coordinates="opposite"``: l1 distance 2, the whole of [0, 1]^2's; moving e_1 alone
    showed half the noise's privacy loss at most: 0.297 against 0.654 now, and half the noise
    was not refuted); on the cube, ``values[0] e_1`` or ``values[1] e_1``, -e_1 to e_1 across
    its unit l1 ball, the whole l2 diameter. A large step so that one round visibly moves the
    decisions (the guarantee holds for any eta)."""
    return AuditCase(
        horizon=8,
        values=values,
        coordinates=coordinates,
        environment_options=environment_options,
        learner_options={"eta": 1.0, "noise": noise, "delta": 0.0 if noise == "laplace" else 1e-5},
        trials=40_000,
        pilot_trials=10_000,
        seed=3,
    )


#: the ``anytime`` option of every anytime learner's factory (``dponline list``)
ANYTIME_OPTION = (
    "true: no horizon (the environment's is ignored): anytime counter and step sizes, the "
    "guarantee for every t"
)

_FTRL_SETTING = "experts; online linear optimisation over the ball or cube (full information)"

_DP_FTRL_ENTRY = register_learner(
    LearnerEntry(
        "dp-ftrl",
        _dp_ftrl,
        paper="Agarwal & Singh (2017), Algorithm 1 with Algorithm 2 (tree aggregation)",
        setting=_FTRL_SETTING,
        guarantee=(
            "event-level epsilon-DP (Laplace, Theorem 3.1) or (epsilon, delta)-DP "
            "(Gaussian, Theorem A.1) over loss sequences differing in one round, "
            "for losses in [0, 1]^N (experts), the unit l2 ball (ball) or the unit l1 "
            "ball (cube)"
        ),
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.LOSS_VECTOR,
        action_space=("simplex", "ball", "cube"),
        test_cases=(
            LearnerTestCase(
                "switching_best",
                environment_options={"n_experts": 4},
                label="laplace",
                audit=_ftrl_audit("laplace", {"n_experts": 2}, (0.0, 1.0), "opposite"),
            ),
            LearnerTestCase(
                "linear",
                environment_options={"dim": 3, "domain": "cube"},
                learner_options={"noise": "gaussian"},
                label="gaussian, cube",
                audit=_ftrl_audit("gaussian", {"dim": 2}, (-1.0, 1.0)),
            ),
        ),
        options={
            "noise": "laplace | gaussian",
            "delta": "for gaussian (default 1e-6)",
            "mechanism": "continual counter (default: padded_tree for paper; for tight the "
            "lowest-variance one whose noise fits 64 MiB)",
            "eta": "learning rate (default sqrt(D_R / T); sqrt(log N / T) on the simplex)",
            "regulariser": "entropic (simplex only) | euclidean (default: entropic on the "
            "simplex, euclidean elsewhere)",
            "anytime": ANYTIME_OPTION,
            "eta_constant": "c of the anytime rate c / sqrt(t) (default sqrt(D_R))",
            "design_horizon": DESIGN_HORIZON_OPTION,
        },
        default_delta=noise_default_delta("laplace"),
        anytime=True,
        person_level=True,
    )
)

register_learner(
    non_private_entry(
        _DP_FTRL_ENTRY,
        "ftrl",
        paper="Follow-the-Regularized-Leader with entropy (Hedge); the non-private "
        "counterpart of dp-ftrl",
        test_cases=(
            LearnerTestCase("switching_best", environment_options={"n_experts": 4}),
            LearnerTestCase("linear", environment_options={"dim": 3}, label="ball"),
        ),
        options={
            "eta": "learning rate (default sqrt(D_R / T); sqrt(log N / T) on the simplex)",
            "regulariser": "entropic (simplex only) | euclidean",
            "eta_constant": "c of the anytime rate c / sqrt(t) (default sqrt(D_R))",
            "anytime": ANYTIME_OPTION,
        },
    )
)
