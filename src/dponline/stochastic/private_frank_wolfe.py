"""Private streaming Frank-Wolfe: Han et al., Algorithm 1 (1 < p <= inf), for the squared loss
f(theta; x, y) = (<x, theta> - y)^2 over an l_p ball, and for any smooth convex GLM loss
f(<x, theta>, y) (``loss="logistic"``, ``"huber"`` or a link) with the constants its link gives.

Each round t the learner releases theta_t, receives a sample (x_t, y_t) and feeds

    g_t = (t+1) grad f(theta_t; x_t) - t grad f(theta_{t-1}; x_t)

to a binary-tree counter (Algorithm 4); with G~_t the noisy prefix sum it sets d_t = G~_t / (t+1),
v_t = LMO(d_t) and theta_{t+1} = theta_t + (v_t - theta_t) / (t+1) (rho_t = eta_t = 1/(t+1)).

Sensitivity. For the squared loss the increments obey ||g_t||_q <= L + beta D / t
(:func:`squared_increment_bound`: grad f is affine, so the two gradients of g_t combine), not
only Theorem 3.1's L + beta D; ``tight`` uses the bound at step k = ``bound_from_step`` for all
steps, clipping the increments of steps 1..k-1 to it, which halves the sensitivity at large n.
Every increment is clipped to the bound in use (from step k on a clip that never binds for the
run's own iterates), and a saved state is loaded only if some run reaches its iterates
(:func:`~dponline.stochastic.frank_wolfe.checked_iterates`), so no state feeds the counter more.

Input contract and constants. Samples must satisfy ||x||_q <= X and |y| <= Y (ValueError, or
clipping with ``clip=True``: x rescaled radially, y clipped). Over the l_p ball of radius r
(diameter D = 2r): ||grad f||_q <= 2 (X r + Y) X = L, and grad f is beta = 2 X^2 smooth from l_p
to l_q. Neighbouring datasets differ in one sample; the proof of Theorem 3.1 bounds the change of
that sample's g_i in l_q by 2 (beta D + L) (using ||theta_i - theta_{i-1}||_p <= D / i).

Noise (:class:`PrivateFrankWolfeCalibrator`). ``paper``: generalized Gaussian noise in the
smooth norm of l_q with sigma_+ of Theorem 3.1, Eq. (2). ``tight``: for p >= 2 (q <= 2),
||.||_2 <= ||.||_q, so the l2 sensitivity is at most 2 (beta D + L) and the tree is accounted
exactly as one Gaussian mechanism (analytic Gaussian, adaptive composition of Gaussian
releases); for 1 < p < 2 (q > 2) the smaller in l_q of that Gaussian noise (l2 sensitivity
d^(1/2 - 1/q) 2 (beta D + L)) and the generalized Gaussian per node with the exact number of
nodes and the least regularity constant. Both go through the counters' calibration
(:class:`~dponline.continual.calibration.CounterCalibrator`). The guarantee is (epsilon, delta)-DP
for the whole sequence of released iterates, over datasets that differ in one sample (continual
release, Han et al. Section 2.2).

Anytime (``horizon=None``, Algorithm 1 only; ours). The steps rho_t = 1/(t+1) need no horizon;
the counter is the anytime one of :func:`~dponline.continual.factory.build_counter`, doubling
blocks each calibrated by :class:`PrivateFrankWolfeCalibrator` for its own length at the full
budget, so the iterates released up to every t have the guarantee (parallel composition over
disjoint blocks; the increments are chosen adaptively, which each block's guarantee allows). The
increment bound and the sensitivity do not depend on the horizon. Utility: Theorem 3.1's proof
uses the noise of release t only through its size at t, so its bound at n = t holds with the
anytime counter's noise at t (the counter's ``variance(t)``) in place of the fixed tree's; that
noise is larger by the doubling blocks' carried noise (a sketch, not a checked proof).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.continual.binary_tree import BinaryTreeCounter, levels
from dponline.continual.calibration import CounterCalibrator
from dponline.continual.factory import build_counter
from dponline.continual.registry import get_mechanism
from dponline.continual.selection import best_mechanism
from dponline.domains.lp_ball import LpBall
from dponline.losses import GLMLink, link_by_name, squared_loss_constants
from dponline.privacy.arguments import (
    checked_flag,
    checked_positive,
    checked_probability,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee
from dponline.privacy.noise import GaussianNoise, NoiseDistribution
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    NoiseHandle,
    RoundDiscipline,
    checked_budget,
    checked_count,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    one_over_horizon,
    register_learner,
)
from dponline.rng import RngLike
from dponline.stochastic.frank_wolfe import checked_iterates
from dponline.stochastic.noisy_min_frank_wolfe import NoisyMinFrankWolfe
from dponline.stochastic.samples import (
    checked_sample,
    sample_geometry,
)

__all__ = [
    "PrivateFrankWolfeCalibrator",
    "PrivateStreamingFrankWolfe",
    "clip_lq",
    "han_sigma_plus",
    "squared_increment_bound",
]


def han_sigma_plus(
    n: int,
    kappa_q: float,
    beta: float,
    diameter: float,
    lipschitz: float,
    epsilon: float,
    delta: float,
) -> float:
    """Han et al. Theorem 3.1, Eq. (2):

    sigma_+^2 = 8 (ceil(log2 n) + 1)^2 kappa_q log((ceil(log2 n) + 1)/delta) (beta D + L)^2 / eps^2.
    """
    depth = math.ceil(math.log2(int(n))) + 1
    s = float(beta) * float(diameter) + float(lipschitz)
    return math.sqrt(
        8.0
        * depth**2
        * checked_positive("kappa_q", kappa_q)
        * math.log(depth / checked_probability("delta", delta))
        * s**2
        / checked_positive("epsilon", epsilon) ** 2
    )


#: the step from which ``tight`` uses the squared loss's exact increment bound
DEFAULT_BOUND_FROM_STEP = 32


def squared_increment_bound(lipschitz: float, beta: float, diameter: float, step: int) -> float:
    """L + beta D / t: the largest ||g_t||_q of Algorithm 1's recursive-gradient increment
    at step t >= 1 for the squared loss f(theta) = (<x, theta> - y)^2 over the l_p ball.

    Derivation. g_t = (t+1) grad f(theta_t) - t grad f(theta_{t-1}) = 2 x (<x, w> - y) with
    w = (t+1) theta_t - t theta_{t-1}, because grad f is affine in theta. The step
    theta_t = theta_{t-1} + (v_{t-1} - theta_{t-1}) / t gives w = v_{t-1} + (v_{t-1} -
    theta_{t-1}) / t, so ||w||_p <= r + D / t (v and theta in the ball of radius r, diameter
    D); at t = 1, theta_0 = theta_1 and w = theta_1. With ||x||_q <= X and |y| <= Y,
    ||g_t||_q <= 2 X (X (r + D / t) + Y) = L + beta D / t with L = 2 (X r + Y) X and
    beta = 2 X^2. Theorem 3.1's proof bounds the two gradients separately,
    ||g_t||_q <= L + t beta ||theta_t - theta_{t-1}||_p <= L + beta D, which loses the
    cancellation: at large t the exact bound is nearly half of it. The bound decreases in t,
    so the value at ``step`` holds for every later step."""
    return float(lipschitz) + float(beta) * float(diameter) / int(step)


def clip_lq(g: np.ndarray, q: float, bound: float) -> np.ndarray:
    """Each row of ``g`` scaled down to l_q norm at most ``bound`` (rows inside unchanged)."""
    norms = np.linalg.norm(g, ord=q, axis=1) if math.isfinite(q) else np.abs(g).max(axis=1)
    scale = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    return g * scale[:, None]


@dataclass(frozen=True)
class PrivateFrankWolfeCalibrator:
    """The tree noise of Algorithm 1: the counter calibration (:class:`CounterCalibrator` of a
    :class:`BinaryTreeCounter`) on the set the recursive-gradient increments lie in.

    Every increment g_t = (t+1) grad f(theta_t) - t grad f(theta_{t-1}) has ||g_t||_q <=
    ||grad f(theta_t)||_q + t beta ||theta_t - theta_{t-1}||_p <= L + beta D (the step moves
    theta by at most D / t), so the increments lie in the l_q ball of radius s / 2 with
    s = ``sensitivity`` = 2 (beta D + L), whose l_q diameter s is the proof's sensitivity of one
    sample (Theorem 3.1). Datasets that differ in one sample are the neighbours.

    ``paper``: Theorem 3.1, Eq. (2): Lemma 2.7's generalized Gaussian per node at (eps/k,
    delta/k), k = ceil(log2 n) + 1 (the counter's paper calibration is this formula,
    :func:`han_sigma_plus`). ``tight``: exact Gaussian accounting; for q > 2 also Lemma 2.7 with
    the exact node count and least kappa, keeping the noise that is smaller in l_q (what the
    Frank-Wolfe step feels).
    """

    horizon: int
    dim: int
    q: float
    sensitivity: float

    def _counter(
        self, noise: str, mechanism: type[ContinualCounter] = BinaryTreeCounter
    ) -> CounterCalibrator:
        ball = NormBall(self.sensitivity / 2.0, self.q, self.dim)
        norm = self.q if noise == "generalized_gaussian" else None
        return CounterCalibrator(mechanism, self.horizon, ball, noise, norm)

    def release_noise_size(self, cal: Calibration) -> float:
        """E||noise of the noisiest release||_q (what the Frank-Wolfe step feels) of the counter
        a calibration names with its noise (:meth:`_noise_size`)."""
        return self._noise_size(get_mechanism(cal.mechanism), cal.noise)

    def _noise_size(self, cls: type[ContinualCounter], noise: NoiseDistribution) -> float:
        """E||noise of the noisiest release||_q of counter ``cls`` drawing ``noise``, from
        4,000 probe draws (seed 0): Gaussian noise on any counter is N(0, v I) with v the
        counter's largest exact release variance; generalized Gaussian noise on the tree sums
        as many node draws as the tree has levels (the most a release sums)."""
        probe = np.random.default_rng(0)
        ball = LpBall(self.dim, self.q)
        if isinstance(noise, GaussianNoise):
            v = float(cls.release_variances(self.horizon, noise, self.dim).max())
            draws = probe.standard_normal((4000, self.dim)) * math.sqrt(v)
        else:
            k = levels(self.horizon)
            draws = noise.sample(probe, (k, 4000, self.dim)).sum(axis=0)
        return float(ball.norm(draws).mean())

    @staticmethod
    def _neighbours(budget: PrivacyBudget) -> PrivacyBudget:
        return dataclasses.replace(
            budget.require_delta("Algorithm 1"), neighbouring=Neighbouring.ONE_SAMPLE
        )

    def paper(self, budget: PrivacyBudget) -> Calibration:
        """Theorem 3.1: generalized Gaussian with sigma_+ of Eq. (2)."""
        return self._counter("generalized_gaussian").paper(self._neighbours(budget))

    def tight(self, budget: PrivacyBudget) -> Calibration:
        """The candidate whose noisiest release is smallest in l_q (:meth:`_noise_size`): exact
        Gaussian accounting on the tree and on the best counter whose state for one run fits
        64 MiB (:func:`~dponline.continual.selection.best_mechanism`, the square root or a BLT:
        the recursive-gradient sums are prefix sums like any other; the same whatever the
        number of replicas), and for q > 2 Lemma 2.7's generalized Gaussian on the tree with
        the exact node count and least kappa. The candidates are compared by their noise
        (:meth:`~dponline.continual.calibration.CounterCalibrator.tight_noise`), which does not
        depend on the data, so the choice costs no privacy; the chosen one is proven, once."""
        b = self._neighbours(budget)
        candidates = [self._counter("gaussian")]
        best = get_mechanism(best_mechanism(self.horizon, self.dim, "gaussian"))
        if best is not BinaryTreeCounter:
            candidates.append(self._counter("gaussian", best))
        k = levels(self.horizon)
        if self.q > 2 and b.epsilon / k <= 1.0 and b.delta / k <= 0.5:
            # for q <= 2, ||.||_2 <= ||.||_q already favours Gaussian noise; else Lemma 2.7
            candidates.append(self._counter("generalized_gaussian"))
        chosen = min(candidates, key=lambda c: self._noise_size(c.mechanism, c.tight_noise(b)))
        return chosen.tight(b)


class PrivateStreamingFrankWolfe(NoiseHandle, RoundDiscipline):
    """Han et al. Algorithm 1 for the squared loss (see the module docstring).

    Parameters
    ----------
    domain:
        The l_p ball (1 < p <= inf), an :class:`~dponline.domains.lp_ball.LpBall`: the noise
        calibration (Theorem 3.1's constants, the l_q sensitivity) is the l_p ball's, while the
        iterates touch the set only through the domain contract (``lmo`` for v_t,
        ``interior_point()`` = 0 for theta_0 = theta_1).
    horizon:
        n, the number of samples (and released iterates); ``None`` for the anytime learner
        (module docstring).
    x_bound, y_bound:
        X and Y of the input contract.
    budget:
        The (epsilon, delta) budget, delta > 0 (:class:`PrivateFrankWolfeCalibrator`); ``None``
        runs the non-private optimiser (no noise).
    loss:
        "squared" (the paper's (<x, theta> - y)^2, the default), or any smooth convex GLM loss
        f(<x, theta>, y): "logistic" (labels -1 or +1), "huber" (threshold 1), or a
        :class:`~dponline.losses.links.GLMLink`. Its constants over the ball follow
        from the link: L = sup |f'(z, y)| X over |z| <= X r, |y| <= Y, and beta = sup f'' X^2
        (the same Hoelder steps as :func:`~dponline.losses.glm.squared_loss_constants`),
        and the sensitivity 2 (beta D + L) of Theorem 3.1's proof uses only these.
    bound_from_step:
        k, for the squared loss: the step from which the exact increment bound
        L + beta D / t (:func:`squared_increment_bound`) is used at t = k for every step, the
        increments of steps 1..k-1 being clipped to it in l_q (a clip that the bound shows
        never binds from step k on). The sensitivity is then 2 (L + beta D / k), against
        Theorem 3.1's 2 (L + beta D) at k = 1 (the paper's analysis; ``paper`` keeps it).
        Default 32 for ``tight``: 0.54x the paper's sensitivity on Han et al.'s streams.
        Ignored for other losses, whose increments are bounded by L + beta D only.
    increment_clip:
        C: clip every increment g_t to l_q norm C (any loss), making the sensitivity 2 C when
        C is below the proven bound. A clip that binds biases the recursive gradient, as
        clipping does in DP-SGD; choose C on validation data (``tune`` in a spec), never on
        the data the guarantee covers. Default: no clip beyond the proven bound.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.SAMPLE
    paper: ClassVar[str] = "Han et al., Algorithm 1 with Algorithm 4 and Theorem 3.1"
    unit: ClassVar[str] = "sample"

    def __init__(
        self,
        domain: LpBall,
        horizon: int | None,
        *,
        x_bound: float = 1.0,
        y_bound: float = 1.0,
        budget: PrivacyBudget | None,
        loss: str | GLMLink = "squared",
        bound_from_step: int | None = None,
        increment_clip: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        if not isinstance(domain, LpBall):
            raise TypeError(
                "Algorithm 1's calibration is stated for an l_p ball: domain must be an LpBall, "
                f"got {type(domain).__name__}"
            )
        if not domain.p > 1:
            raise ValueError(
                f"Algorithm 1 needs 1 < p <= inf, got p = {domain.p} (use Algorithm 2)"
            )
        x_bound = checked_positive("x_bound", x_bound)
        y_bound = checked_positive("y_bound", y_bound)
        self.domain = domain
        self._start_rounds(horizon, anytime=True)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget, Neighbouring.ONE_SAMPLE)
        self.dim, self.q = domain.dim, domain.q
        self.x_bound, self.y_bound, self.clip = float(x_bound), float(y_bound), bool(clip)
        r, D = domain.radius, domain.lp_diameter()
        self.link: GLMLink | None = None
        if isinstance(loss, GLMLink):
            self.link = loss
        elif loss != "squared":
            self.link = link_by_name(loss)
        if self.link is None:  # the paper's (<x, theta> - y)^2
            self.lipschitz, self.beta = squared_loss_constants(self.x_bound, self.y_bound, r)
        else:
            zmax = self.x_bound * r  # |<x, theta>| <= ||x||_q ||theta||_p (Hoelder)
            self.lipschitz = self.link.max_d1(zmax, self.y_bound) * self.x_bound
            self.beta = self.link.max_d2(self.y_bound) * self.x_bound**2
        if bound_from_step is None:  # the paper's bound for paper and without noise
            tight = self.budget is not None and self.budget.calibration == "tight"
            bound_from_step = DEFAULT_BOUND_FROM_STEP if tight else 1
        self.bound_from_step = checked_count("bound_from_step", bound_from_step)
        if self.link is None:  # the squared loss: ||g_t||_q <= L + beta D / t
            self.increment_bound = squared_increment_bound(
                self.lipschitz, self.beta, D, self.bound_from_step
            )
        else:  # a GLM loss: ||g_t||_q <= L + beta D (Theorem 3.1's proof)
            self.bound_from_step = 1
            self.increment_bound = self.lipschitz + self.beta * D
        self.increment_clip = None
        if increment_clip is not None:
            if not (math.isfinite(increment_clip) and increment_clip > 0):
                raise ValueError(
                    f"increment_clip must be finite and positive, got {increment_clip!r}"
                )
            if increment_clip < self.increment_bound:
                self.increment_clip = self.increment_bound = float(increment_clip)
                # clip every step
                self.bound_from_step = 2**62 if self.horizon is None else self.horizon + 1
        self.sensitivity = s = 2.0 * self.increment_bound  # l_q, of one sample's increment
        if self.horizon is None:  # anytime: one calibrator per doubling block's length
            self.calibrator = None
            calibrator: Any = lambda n: PrivateFrankWolfeCalibrator(n, self.dim, self.q, s)  # noqa: E731
        else:
            self.calibrator = calibrator = PrivateFrankWolfeCalibrator(
                self.horizon, self.dim, self.q, s
            )
        # the calibrator's counter, or exact sums without a budget (the non-private optimiser)
        self.counter = build_counter(
            self.budget,
            horizon=self.horizon,
            dim=self.dim,
            calibrator=calibrator,
            replicas=self.replicas,
            rng=rng,
            caller_checks_inputs=True,
        )
        self.privacy: PrivacyGuarantee | None = self.counter.privacy
        start = np.asarray(domain.interior_point(), dtype=float)
        self.theta_prev = np.broadcast_to(start, (self.replicas, self.dim)).copy()
        self.theta = np.broadcast_to(start, (self.replicas, self.dim)).copy()

    @property
    def noise(self) -> NoiseDistribution:
        """The noise of one tree node."""
        return self.counter.noise

    def _scale_noise(self, factor: float) -> None:
        self.counter.scale_noise(factor)

    def scale_noise(self, factor: float) -> None:
        """Multiply the calibrated noise by ``factor`` (> 0) before the first round; the
        counter then states the learner's (possibly voided) guarantee."""
        super().scale_noise(factor)
        self.counter.privacy = self.privacy

    def act(self) -> np.ndarray:
        """theta_t, shape (replicas, d) (theta_n, after the last sample, is the output)."""
        self._acted = True
        return self.theta.copy()

    def observe(self, feedback: Feedback) -> None:
        """Lines 4-9 of Algorithm 1 for one shared sample (after ``act``)."""
        self._check_round()
        x, y = checked_sample(feedback, self.dim, self.q, self.x_bound, self.y_bound, self.clip)
        link = self.link
        if link is not None:
            link.check_label(float(y))
        t = self.t + 1

        def grad(theta: np.ndarray) -> np.ndarray:
            if link is None:
                return 2.0 * ((theta @ x) - y)[:, None] * x[None, :]
            return link.d1(theta @ x, y)[:, None] * x[None, :]

        g = (t + 1) * grad(self.theta) - t * grad(self.theta_prev)
        # the bound holds from step k on for the run's own iterates (a clip that never binds
        # then); steps before k are clipped, and every step is, so that no state enlarges g
        g = clip_lq(g, self.q, self.increment_bound)
        d = self.counter.step(g) / (t + 1)
        v = self.domain.lmo(d)
        self.theta_prev, self.theta = self.theta, self.theta + (v - self.theta) / (t + 1)
        self._end_round()

    def state_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "theta": self.theta.copy(),
            "theta_prev": self.theta_prev.copy(),
            "acted": self._acted,
            "counter": self.counter.state_dict(),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (round counter, iterates, the counter's state), then return
        the function that installs it."""
        t, acted = self._checked_rounds(state)
        shape = (self.replicas, self.dim)
        theta = np.array(checked_real_array("saved theta", saved_field(state, "theta"), shape))
        theta_prev = np.array(
            checked_real_array("saved theta_prev", saved_field(state, "theta_prev"), shape)
        )
        checked_iterates(self.domain, theta, theta_prev, t)
        install_counter = self.counter.prepare_load(saved_field(state, "counter"))

        def install() -> None:
            install_counter()
            self.theta, self.theta_prev = theta, theta_prev
            self._set_rounds(t, acted)

        return install


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _private_fw(
    env: Any,
    *,
    budget: PrivacyBudget | None,
    p: float | None = None,
    anytime: bool = False,
    **kw: Any,
) -> NoiseHandle:
    """Algorithm 2 (:class:`~dponline.stochastic.noisy_min_frank_wolfe.NoisyMinFrankWolfe`)
    for p = 1, Algorithm 1 otherwise, over the l_p ball of the environment's geometry
    (:func:`~dponline.stochastic.samples.sample_geometry`: the environment's p when it sets
    one, else the option, else 1.5), with the stream's input bounds (X in the dual norm, Y)
    unless ``x_bound`` or ``y_bound`` is given. ``anytime=True``: Algorithm 1 without a horizon
    (Algorithm 2 has no anytime version)."""
    p = sample_geometry(env, p, 1.5, "frank-wolfe" if budget is None else "dp-frank-wolfe")
    horizon = None if checked_flag("anytime", anytime) else env.horizon
    kw.setdefault("y_bound", env.y_bound)
    if p == 1.0:
        if horizon is None:
            raise ValueError(
                "anytime=True runs Algorithm 1 (1 < p <= inf); Algorithm 2 (p = 1) draws its "
                "noise for a known number of samples and has no anytime version"
            )
        if kw.get("loss", "squared") != "squared":
            raise ValueError(
                f"loss {kw['loss']!r} needs Algorithm 1 (1 < p <= inf); Algorithm 2 (p = 1) is "
                "stated for the squared loss"
            )
        kw.pop("loss", None)
        kw.setdefault("x_bound", env.x_bound(np.inf))
        return NoisyMinFrankWolfe(env.dim, env.horizon, budget=budget, **kw)
    ball = LpBall(env.dim, p)
    kw.setdefault("x_bound", env.x_bound(ball.q))
    return PrivateStreamingFrankWolfe(ball, horizon, budget=budget, **kw)


AUDIT_LABEL = 100.0
"""Y of the audits: sample 1's label is +Y in one dataset and -Y in the other (x = e_1), which
moves the recursive-gradient increment g_1 by 4 Y = 400 against the proven 2 (beta D + L) = 412
(r = 1, D = 2, X = 1) of Theorem 3.1's proof (Appendix A.6 for Algorithm 2) and the
2 (L + beta D / 32) = 404.25 of the exact bound: nearly the worst case of both."""


def _fw_audit(p: float, **options: Any) -> AuditCase:
    """The flip of sample 1's label moves g_1 = -2 y x by 4 Y = 400 against the proven
    2 (L + beta D / k) = 404.25 of ``tight`` (k = 32) and 412 of ``paper``; with
    ``increment_clip`` C the clipped g_1 moves by exactly the sensitivity 2 C."""
    return AuditCase(
        horizon=4,
        values=(AUDIT_LABEL, -AUDIT_LABEL),
        environment_options={"dim": 2},
        learner_options={
            "p": p,
            "x_bound": 1.0,
            "y_bound": AUDIT_LABEL,
            "delta": 1e-5,
            **options,
        },
        trials=40_000,
        pilot_trials=10_000,
        seed=2,
    )


BOUND_FROM_STEP = (
    "k: the squared loss's exact increment bound L + beta D / k, steps before k clipped to it"
)
INPUT_BOUNDS = "X, Y: every sample's ||x||_q <= X and |y| <= Y, enforced (default: the stream's)"
ANYTIME_FW = (
    "true: Algorithm 1 without a horizon (the environment's is ignored; its 1/T remains the "
    "default delta): anytime counter, the guarantee for every t; not for p = 1"
)

_FW_SETTING = "streaming stochastic convex optimisation (squared or smooth GLM losses, l_p ball)"

_DP_FRANK_WOLFE_ENTRY = register_learner(
    LearnerEntry(
        "dp-frank-wolfe",
        _private_fw,
        paper="Han et al., Algorithm 1 (1 < p <= inf, tree with generalized Gaussian noise) "
        "and Algorithm 2 (p = 1, report-noisy-min)",
        setting=_FW_SETTING,
        guarantee=(
            "(epsilon, delta)-DP (default delta = 1/T) for every released iterate, over "
            "datasets differing in one sample (continual release)"
        ),
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.SAMPLE,
        action_space="l_p ball",
        test_cases=(
            LearnerTestCase(
                "regression_stream",
                environment_options={"dim": 3},
                label="p=1.5, Algorithm 1",
                audit=_fw_audit(1.5),
            ),
            LearnerTestCase(
                "regression_stream",
                environment_options={"dim": 3},
                learner_options={"p": 1.0},
                label="p=1, Algorithm 2",
                audit=_fw_audit(1.0),
            ),
            LearnerTestCase(
                "regression_stream",
                environment_options={"dim": 3},
                learner_options={"increment_clip": 0.5},
                label="p=1.5, Algorithm 1 with every increment clipped to 0.5",
                audit=_fw_audit(1.5, increment_clip=0.5),
            ),
        ),
        options={
            "p": "the l_p ball (default: the environment's, else 1.5; 1 runs Algorithm 2)",
            "delta": "1/T",
            "loss": "squared (default), logistic or huber: Algorithm 1 for a smooth GLM loss",
            "bound_from_step": BOUND_FROM_STEP
            + " (default 32 for tight, 1 = Theorem 3.1 for paper)",
            "increment_clip": "C: every increment clipped to l_q norm C, the sensitivity 2 C "
            "below the proven bound (a binding clip biases the gradient: choose C on "
            "validation data, tune in a spec; default none)",
            "x_bound, y_bound": INPUT_BOUNDS + "; the noise is calibrated to them",
            "anytime": ANYTIME_FW,
        },
        default_delta=one_over_horizon,
        anytime=True,
    )
)

register_learner(
    non_private_entry(
        _DP_FRANK_WOLFE_ENTRY,
        "frank-wolfe",
        paper="Streaming Frank-Wolfe with recursive gradients (Xie et al. 2020); the "
        "non-private counterpart of dp-frank-wolfe",
        test_cases=(
            LearnerTestCase("regression_stream", environment_options={"dim": 3}),
            LearnerTestCase(
                "regression_stream",
                environment_options={"dim": 3},
                learner_options={"p": 1.0},
                label="p=1",
            ),
        ),
        options={
            "p": "the l_p ball (default: the environment's, else 1.5)",
            "loss": "squared (default), logistic or huber",
            "bound_from_step": BOUND_FROM_STEP + " (default 1: Theorem 3.1's, never binding)",
            "increment_clip": "C: every increment clipped to l_q norm C (default none)",
            "x_bound, y_bound": INPUT_BOUNDS,
            "anytime": ANYTIME_FW,
        },
    )
)
