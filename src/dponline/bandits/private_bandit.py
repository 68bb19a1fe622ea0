"""PrivateBandit: Ene, Nguyen & Vladu (2021), Algorithm 1 -- differentially private
projection-free bandit convex optimisation over any set with a linear minimisation oracle.

The horizon is cut into T_round batches of T_batch rounds (line 1; T_batch = ceil(T^{1/2}) and a
shorter last batch when T is not a square). In batch R every round plays a fresh spherical
perturbation of the same centre (lines 8-11; Lemma 2.2, Flaxman et al. 2004),

    x_t = x~_{R-1} + zeta u_t,    u_t uniform on the unit sphere of the set's affine hull,

sees the loss value f_t(x_t) and adds F_t u_t, F_t = (k / zeta) f_t(x_t), to the batch gradient
g~_R (k the dimension of the sphere: n for a full-dimensional set). At the end of the batch the
tree counter releases s~_R, a noisy prefix sum of the batch gradients (line 13, TreeBasedAgg of
Appendix A, or a better counter under the ``tight`` calibration). *In parallel*, during batch R,
the conditional gradient method solves line 14,

    x~_R ~ argmin_{x in D} 1/2 ||x||^2 + <eta s~_{R-1}, x>,

with one call to the linear minimisation oracle per round of the batch (T_batch calls), its
iterate frozen once the duality gap certifies the paper's precision eps_cg = D / T_batch^{1/2}
in distance (1-strong convexity: ||x - x*|| <= sqrt(2 gap)); the oracle is still called in the
batch's remaining rounds (the replicas step together), so freezing saves no call; its
answer is played in batch R+1. This is NoisyOCO (Algorithm 2) on the batch losses with
NoisyMap(-eta s~) one batch stale (Appendix C). Line 14 prints ``- <eta s~_{R-1}, x>``; the
analysis (Lemma C.3: x^_R = grad omega*(-eta sum g~)) and NoisyOCO line 3 need ``+``, which is
what we solve (with ``-`` the method would climb the losses).

Step sizes of line 1: eta = D / (T^{3/4} k^{1/2} L), zeta = D k^{1/2} / T^{1/4}. The first
centre x~_0 is the set's relative-interior point.

Domain shrinking (Appendix D, ``shrink=True``) for losses defined only on the set: the loss is
queried at c + (1 - zeta/r)(x_t - c), with c the interior point and r the radius of a ball
around it inside the set, which lies in D (needs zeta < r); it adds T zeta L D / r to the regret.

Privacy: :mod:`dponline.bandits.ene_noise` (exact sensitivity (k / zeta)(hi - lo) of the batch
sums for loss values in [lo, hi]; the actions are post-processing of the tree's releases and of
the learner's own perturbations). Under ``paper`` the counter adds the paper's noise to the n
coordinates of R^n; under ``tight`` it sums the batch sums in the k coordinates of an
orthonormal basis of the affine hull's direction space, where they lie: the component of any
noise orthogonal to the hull never reaches line 14 (the lemma in
:mod:`~dponline.bandits.ene_noise`), and Laplace noise then needs l1 sensitivity
(k / zeta)(hi - lo) sqrt(k) instead of sqrt(n) (our derivation, not the paper's). With
``budget=None`` the batch sums are exact: the non-private projection-free bandit algorithm
(Garber & Kretzu 2020, as simplified in Algorithm 1).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.ene_noise import PrivateBanditCalibrator
from dponline.bandits.noisy_oco import ConditionalGradientMap, NoisyOCO, SphericalSmoothing
from dponline.continual.factory import build_counter
from dponline.continual.registry import get_mechanism
from dponline.domains.base import ConvexDomain, checked_domain
from dponline.doubling import DoublingLearner
from dponline.privacy.arguments import (
    ArgumentError,
    checked_flag,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import calibrate
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    NoiseHandle,
    RoundDiscipline,
    checked_bandit_loss,
    checked_budget,
    checked_config,
    checked_count,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike, as_generator

__all__ = ["PrivateBandit", "anytime_private_bandit", "batch_schedule", "default_zeta"]


def batch_schedule(horizon: int, batch: int | None = None) -> tuple[int, int]:
    """(T_batch, T_round): T_batch = ceil(T^{1/2}) (or ``batch``), T_round = ceil(T / T_batch)."""
    t = checked_count("horizon", horizon)
    b = math.isqrt(t - 1) + 1 if batch is None else checked_count("batch", batch)
    if b > t:
        raise ValueError(f"batch must be at most the horizon {t}, got {b}")
    return b, -(-t // b)


def default_zeta(domain: ConvexDomain, horizon: int) -> float:
    """Line 1's smoothing radius zeta = D k^{1/2} / T^{1/4} (k the sphere's dimension)."""
    return float(domain.diameter) * math.sqrt(domain.affine_dim) / float(horizon) ** 0.25


def default_loss_range(
    domain: ConvexDomain, lipschitz: float, zeta: float, shrink: bool, given: Any = None
) -> tuple[float, float]:
    """The checked interval [lo, hi] of the loss values: ``given`` (any pair of finite reals,
    lo < hi), else the paper's convention that each f_t vanishes somewhere in D, so
    |f_t(x_t)| <= L (D + zeta) at a point played (L D with ``shrink``, whose points stay in D).
    The fixed-horizon learner and every epoch of the anytime one read it here."""
    if given is None:
        reach = float(domain.diameter) + (0.0 if shrink else zeta)
        given = (-lipschitz * reach, lipschitz * reach)
    lo, hi = (float(v) for v in checked_real_array("loss_range", given, (2,)))
    if not lo < hi:
        raise ValueError(f"loss_range must be finite with lo < hi, got {given!r}")
    return lo, hi


class PrivateBandit(NoiseHandle, RoundDiscipline):
    """Ene, Nguyen & Vladu (2021), Algorithm 1 (module docstring).

    Parameters
    ----------
    domain:
        The decision set (:class:`~dponline.domains.base.ConvexDomain`): its oracle, diameter D,
        affine hull, interior point and inscribed radius.
    horizon:
        T; round T+1 is refused (:class:`~dponline.protocol.RoundDiscipline`).
    budget:
        The :class:`~dponline.privacy.budget.PrivacyBudget`: delta = 0 gives Laplace noise
        (Lemma 5.1), delta > 0 Gaussian (Lemma 5.4); ``None`` runs the non-private algorithm.
    lipschitz:
        L, the Lipschitz constant of every loss on the points played (line 1's eta and zeta).
    loss_range:
        [lo, hi], the interval every observed loss value must lie in (ValueError otherwise, or
        clipping with ``clip=True``); the privacy proof's sensitivity is hi - lo. Default: the
        paper's convention that each f_t vanishes somewhere in D, so |f_t(x_t)| <= L (D + zeta)
        at a point played (L D with ``shrink``, whose points stay in D).
    mechanism:
        The counter of the batch sums (default: ``padded_tree`` for ``paper``; under
        ``tight`` the one :func:`~dponline.continual.best_mechanism` picks, the k-ary tree for
        Laplace and the rescaled square root for Gaussian in every case measured). Under
        ``tight`` it sums the k coordinates of the batch sums in the hull basis (``basis``).
    eta, zeta, batch:
        Override line 1's step, smoothing radius and batch length.
    shrink:
        Appendix D's domain shrinking.
    noise_in_hull:
        ``tight`` only: the counter sums the batch sums in the k coordinates of the hull basis
        (default). False keeps them in R^n, charging Laplace noise l1 sensitivity
        (k / zeta)(hi - lo) sqrt(n) instead of sqrt(k): the calibration before the hull lemma
        of :mod:`~dponline.bandits.ene_noise`, the same epsilon with more noise, kept to
        measure the saving (``benchmarks/bench_private_bandit.py``).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.BANDIT
    paper: ClassVar[str] = "Ene, Nguyen & Vladu (2021), Algorithm 1"

    def __init__(
        self,
        domain: ConvexDomain,
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        lipschitz: float = 1.0,
        loss_range: tuple[float, float] | None = None,
        mechanism: str | None = None,
        eta: float | None = None,
        zeta: float | None = None,
        batch: int | None = None,
        shrink: bool = False,
        noise_in_hull: bool = True,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self.domain = domain = checked_domain(domain)
        self._start_rounds(horizon)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget)
        self.clip = bool(clip)
        self.shrink = bool(shrink)
        self.lipschitz = L = checked_positive("lipschitz", lipschitz)
        self.dim, self.sphere_dim = domain.dim, domain.affine_dim
        if self.sphere_dim < 1:
            raise ValueError("the decision set is a single point: there is nothing to learn")
        self.diameter = float(domain.diameter)
        self.batch, self.batches = batch_schedule(self.horizon, batch)
        T, k, D = self.horizon, self.sphere_dim, self.diameter
        self.eta = checked_positive("eta", D / (T**0.75 * math.sqrt(k) * L) if eta is None else eta)
        self.zeta = checked_positive("zeta", default_zeta(domain, T) if zeta is None else zeta)
        self.center_point = np.asarray(domain.interior_point(), dtype=float)
        self.radius = float(domain.inscribed_radius)
        lo, hi = self.loss_range = default_loss_range(domain, L, self.zeta, self.shrink, loss_range)

        parent = as_generator(rng)
        grad_rng, counter_rng = parent.spawn(2)
        self.smoothing = SphericalSmoothing(  # lines 8-11 (checks Appendix D's zeta < r)
            domain, self.zeta, self.replicas, grad_rng, shrink=self.shrink
        )
        self.calibrator: PrivateBanditCalibrator | None = None
        counter_dim = self.dim  # exact sums (budget None) in R^n
        if mechanism is not None:  # unused without a budget, but a misspelt name is refused
            get_mechanism(mechanism)
        if self.budget is not None:
            self.calibrator = PrivateBanditCalibrator(
                horizon=T,
                batches=self.batches,
                sphere_dim=k,
                ambient_dim=self.dim,
                lipschitz=L,
                term_bound=k / self.zeta * (hi - lo),
                noise="laplace" if self.budget.delta == 0 else "gaussian",
                mechanism=mechanism,
                noise_in_hull=bool(noise_in_hull),
            )
            counter_dim = self.calibrator.coordinates(self.budget.calibration)
        # line 13's counter: exact prefix sums for budget None, else the calibrator's answer for
        # the budget (one choice of mechanism, one proof; the counter carries the guarantee)
        self.counter = counter = build_counter(
            self.budget,
            horizon=self.batches,
            dim=counter_dim,
            calibrator=self.calibrator,
            replicas=self.replicas,
            rng=counter_rng,
            caller_checks_inputs=True,
        )
        self.privacy: PrivacyGuarantee | None = counter.privacy
        # the counter's coordinates: R^n, or (tight, k < n) the hull basis B: it sums B^T g~
        self.basis: np.ndarray | None = (
            None if counter.dim == self.dim else np.asarray(domain.hull_basis(), dtype=float)
        )
        start = np.broadcast_to(self.center_point, (self.replicas, self.dim)).copy()
        # eps_cg of line 14, in distance: D / T_batch^{1/2}
        self.noisy_map = ConditionalGradientMap(domain, start, precision=D / math.sqrt(self.batch))
        self.oco = NoisyOCO(
            eta=self.eta,
            inner=self.batch,
            steps=self.horizon,
            grad=self.smoothing,
            noisy_map=self.noisy_map,
            aggregator=counter,
            start=start,
            basis=self.basis,
        )
        self._played = start

    # --- views -----------------------------------------------------------------------------

    @property
    def lmo_calls(self) -> int:
        """Calls to the domain's linear minimisation oracle so far (at most one per round)."""
        return self.noisy_map.lmo_calls

    @property
    def center(self) -> np.ndarray:
        """x~_{R-1}, the point the current batch perturbs, shape (replicas, dim)."""
        return self.oco.center

    @property
    def batch_sum(self) -> np.ndarray:
        """g~_R of the current batch so far, shape (replicas, dim)."""
        return self.smoothing.partial

    # --- the protocol ----------------------------------------------------------------------

    def _scale_noise(self, factor: float) -> None:
        self.counter.scale_noise(factor)

    def scale_noise(self, factor: float) -> None:
        """Multiply the calibrated noise by ``factor`` before the first round (the audit's
        handle); the counter then states the learner's (possibly voided) guarantee, and s~_0,
        drawn at construction, is rescaled with the rest."""
        super().scale_noise(factor)
        self.counter.privacy = self.privacy
        self.oco.restart_map()

    def act(self) -> np.ndarray:
        """x_t = x~_{R-1} + zeta u_t (line 9; shrunk into D with ``shrink``), (replicas, dim).

        Asking again in the same round returns the same points; after round T the centre."""
        if self.t >= self.horizon:
            return self.oco.center
        if not self._acted:
            self._played = self.oco.query()
            self._acted = True
        return self._played.copy()

    def observe(self, feedback: Feedback) -> None:
        """Check the loss value against ``loss_range``; then lines 10-11 for this round, one
        oracle call of line 14, and line 13 after a batch."""
        value = checked_bandit_loss(self, feedback, acted=self._acted)
        lo, hi = self.loss_range
        outside = (value < lo) | (value > hi)
        if np.any(outside):
            if not self.clip:
                j = int(np.argmax(outside))
                raise ValueError(
                    f"bandit loss {float(value[j])!r} of replica {j} is outside the declared "
                    f"loss_range [{lo:.6g}, {hi:.6g}] the guarantee is proven for"
                )
            value = np.clip(value, lo, hi)
        self.oco.feed(value)  # lines 10-11, one oracle call of line 14, line 13 after a batch
        self._end_round()

    # --- regret bound ----------------------------------------------------------------------

    def regret_bound(self) -> dict[str, float]:
        """The expected-regret bound behind Lemmas 5.2 / 5.5, with the proofs' constants.

        Lemma 4.1, inequality (3), on the T_round batch losses, plus the smoothing and batching
        errors (C.1, C.3) and Appendix D's shrinking error:

            R_T <= D_w^2 / eta + eta/2 T_round kappa^2 + T_round kappa gamma
                   + 2 T zeta L (+ T zeta L D / r with shrinking),

        kappa^2 = T_batch (k B / zeta)^2 + T_batch^2 L^2 (Lemma C.2, B = max |loss value|),
        gamma = eta (m + kappa) + sqrt(20) D / T_batch^{1/2} (Corollary C.5), with
        m = sqrt(d max_R Var(release R)) >= E||s~_R - s_R|| (the counter's exact variance per
        coordinate, d its coordinates: n, or k in the hull basis; the paper bounds it by
        ceil(log T) E||Z||), and D_w^2 = max_D ||x||^2 / 2 <= (||c|| + D)^2 / 2.
        """
        T, Tb, Tr = self.horizon, self.batch, self.batches
        k, D, L, eta, zeta = self.sphere_dim, self.diameter, self.lipschitz, self.eta, self.zeta
        B = max(abs(v) for v in self.loss_range)
        kappa = math.sqrt(Tb * (k * B / zeta) ** 2 + Tb**2 * L**2)
        var = max(self.counter.variance(r) for r in range(1, Tr + 1))
        m = math.sqrt(self.counter.dim * var)
        gamma = eta * (m + kappa) + math.sqrt(20.0) * D / math.sqrt(Tb)
        d_omega = 0.5 * (float(np.linalg.norm(self.center_point)) + D) ** 2
        ocos = d_omega / eta + 0.5 * eta * Tr * kappa**2 + Tr * kappa * gamma
        smoothing = 2.0 * T * zeta * L
        shrinking = T * zeta * L * D / self.radius if self.shrink else 0.0
        return {
            "bound": ocos + smoothing + shrinking,
            "noisy_oco": ocos,
            "smoothing": smoothing,
            "shrinking": shrinking,
            "kappa": kappa,
            "gamma": gamma,
            "noise_norm": m,
        }

    # --- state -----------------------------------------------------------------------------

    def _config(self) -> dict[str, Any]:
        return {
            "domain": repr(self.domain),
            "horizon": self.horizon,
            "replicas": self.replicas,
            "batch": self.batch,
            "eta": self.eta,
            "zeta": self.zeta,
            "loss_range": list(self.loss_range),
            "shrink": self.shrink,
            "clip": self.clip,
            "noise": repr(self.counter.noise),
            "mechanism": self.counter.name,
            "counter_dim": self.counter.dim,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "acted": self._acted,
            "noise_multiplier": self.noise_multiplier,
            "played": self._played.copy(),
            "noisy_oco": self.oco.state_dict(),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the configuration, the round counter, the points played, the noise
        multiplier and NoisyOCO's whole state (its gradient oracle's, map's and counter's), then
        return the function that installs them (:meth:`RoundDiscipline.load_state_dict`: a
        corrupt state changes nothing)."""
        checked_config(
            saved_field(state, "config"),
            self._config(),
            type(self).__name__,
            "domain, horizon, schedule, noise or guarantee",
        )
        t, acted = self._checked_rounds(state)
        multiplier = self._saved_multiplier(state)
        played = np.array(
            checked_real_array(
                "saved played", saved_field(state, "played"), (self.replicas, self.dim)
            )
        )
        saved_oco = saved_field(state, "noisy_oco")
        install_oco = self.oco.prepare_load(saved_oco)
        if saved_oco["t"] != t:  # checked by NoisyOCO.prepare_load to be an integer
            raise ArgumentError(
                f"saved noisy_oco is at step {saved_oco['t']!r} but the round counter t is {t}: "
                "the two were saved from different runs"
            )

        def install() -> None:
            install_oco()
            self._played = played
            self.noise_multiplier = multiplier
            self._set_rounds(t, acted)

        return install


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _private_bandit(
    env: Any, *, budget: PrivacyBudget | None, anytime: bool = False, **kw: Any
) -> PrivateBandit | DoublingLearner:
    """PrivateBandit over ``env``'s decision set, horizon and declared Lipschitz constant (on
    the points it plays: within zeta of the set, or inside it with ``shrink``), calibrated to
    ``budget`` (None: the non-private algorithm); ``anytime=True`` builds
    :func:`anytime_private_bandit` (the environment's horizon ignored)."""
    if checked_flag("anytime", anytime):
        return anytime_private_bandit(env, budget=budget, **kw)
    return PrivateBandit(
        env.domain, env.horizon, budget=budget, **_for_horizon(env, env.horizon, kw)
    )


def _for_horizon(env: Any, horizon: int, kw: dict[str, Any]) -> dict[str, Any]:
    """The options of a PrivateBandit built for ``horizon`` rounds of ``env``: line 1's zeta
    for that horizon (unless given) and the environment's Lipschitz constant on the points
    it plays, within zeta of the set (inside it with ``shrink``)."""
    zeta = kw.get("zeta")
    if zeta is None:
        zeta = default_zeta(env.domain, horizon)
    reach = 0.0 if kw.get("shrink", False) else float(zeta)
    return {**kw, "lipschitz": kw.get("lipschitz", env.lipschitz(reach))}


def anytime_private_bandit(
    env: Any,
    *,
    budget: PrivacyBudget | None,
    replicas: int = 1,
    rng: RngLike = None,
    **kw: Any,
) -> DoublingLearner:
    """PrivateBandit without a horizon (ours, the doubling trick): a
    :class:`~dponline.doubling.DoublingLearner` whose epoch of n rounds (n = 1, 2, 4, ...) is a
    fresh PrivateBandit built for n rounds at the full budget, exactly as the fixed-horizon
    factory builds it for a horizon of n: line 1's eta, zeta and batch length ceil(n^{1/2})
    for n, the loss range +-L (D + zeta_n) and the Lipschitz constant within zeta_n of the set
    (so each epoch's noise is calibrated for its own length and its own sensitivity
    (k / zeta_n)(hi_n - lo_n)); options given (eta, zeta, loss_range, ...) hold for every epoch,
    and a ``batch`` option longer than an epoch is cut to the epoch's length.

    Privacy: the guarantee of the weakest epoch at every t (the doubling argument of
    :mod:`dponline.doubling`); under ``tight`` every epoch meets the budget, under ``paper``
    (with ``allow_weaker``) each epoch proves its own epsilon, computed here from its
    calibration (:class:`~dponline.bandits.ene_noise.PrivateBanditCalibrator`) without building
    it. The entry's default delta is 0 (Laplace noise, Lemma 5.1), a fixed number: it does not
    depend on the horizon, so the anytime learner uses it as it is; a delta > 0 (Gaussian,
    Lemma 5.4) is also one fixed number for every epoch, and the weakest epoch's (epsilon,
    delta) then holds at every t. ``shrink`` needs zeta_n below the set's inscribed radius in
    every epoch: give ``zeta`` (line 1's zeta of a one-round epoch is D k^{1/2})."""
    domain = checked_domain(env.domain)
    budget = checked_budget(budget)
    batch = kw.pop("batch", None)
    if batch is not None:
        batch = checked_count("batch", batch)

    def options(length: int) -> dict[str, Any]:
        out = _for_horizon(env, length, kw)
        if batch is not None:
            out["batch"] = min(batch, length)
        return out

    def make(length: int, gen: np.random.Generator) -> PrivateBandit:
        return PrivateBandit(
            domain, length, budget=budget, replicas=replicas, rng=gen, **options(length)
        )

    def epoch_guarantee(length: int) -> PrivacyGuarantee | None:
        """What PrivateBandit(horizon=length) proves (its __init__'s calibration)."""
        assert budget is not None
        o = options(length)
        _, batches = batch_schedule(length, o.get("batch"))
        L = checked_positive("lipschitz", o["lipschitz"])
        zeta = o.get("zeta")
        zeta = default_zeta(domain, length) if zeta is None else checked_positive("zeta", zeta)
        lo, hi = default_loss_range(domain, L, zeta, bool(o.get("shrink")), o.get("loss_range"))
        k = domain.affine_dim
        calibrator = PrivateBanditCalibrator(
            horizon=length,
            batches=batches,
            sphere_dim=k,
            ambient_dim=domain.dim,
            lipschitz=L,
            term_bound=k / zeta * (float(hi) - float(lo)),
            noise="laplace" if budget.delta == 0 else "gaussian",
            mechanism=o.get("mechanism"),
            noise_in_hull=bool(o.get("noise_in_hull", True)),
        )
        return calibrate(calibrator, dataclasses.replace(budget, allow_weaker=True)).guarantee

    paper = budget is not None and budget.calibration == "paper"
    return DoublingLearner(
        make,
        budget=budget,
        replicas=replicas,
        rng=rng,
        epoch_guarantee=epoch_guarantee if paper else None,
        name="PrivateBandit (Ene, Nguyen & Vladu 2021, Algorithm 1)",
    )


_OPTIONS = {
    "delta": "0 (Laplace, Lemma 5.1) or > 0 (Gaussian, Lemma 5.4); default 0",
    "mechanism": "counter of the batch sums (default: padded_tree for paper; for tight the "
    "counter of least error, kary_tree / scaled_sqrt for Laplace / Gaussian)",
    "eta": "step (default: line 1, D / (T^{3/4} k^{1/2} L))",
    "zeta": "smoothing radius (default: line 1, D k^{1/2} / T^{1/4})",
    "batch": "batch length T_batch (default: ceil(T^{1/2}))",
    "shrink": "Appendix D's domain shrinking (losses defined only on the set)",
    "loss_range": "[lo, hi] of the loss values (default: +-L (D + zeta), losses vanish in D)",
    "noise_in_hull": "tight: the counter sums the affine hull's k coordinates (default true); "
    "false keeps R^n (more Laplace noise at the same epsilon, for comparisons)",
    "anytime": "true: no horizon (the environment's is ignored): epochs of 1, 2, 4, ... rounds, "
    "each a fresh PrivateBandit for its length at the full budget (a batch option is cut to "
    "an epoch's length); the weakest epoch's guarantee at every t",
}


#: The audit's batches: T = 9 rounds, three batches of three; the third batch's centre is line 14
#: on s~_1, the release that holds the changed round 0.
_AUDIT_HORIZON, _AUDIT_BATCH = 9, 3


def _hull_statistic(outputs: np.ndarray) -> np.ndarray:
    """The audit's score on the paths of the 2 x 2 grid DAG (n = 4 edges, k = 1): with h_t the
    hull coordinate <x_t - c, b> of the point played, h_0 = zeta u_0 and the third batch's
    points sit around the centre c + b clip(-eta B^T s~_1), B^T s~_1 = (1/zeta) f_0 u_0 + W;
    so h_0 times the third batch's mean h is a non-increasing function of f_0 / zeta + u_0 W
    (u_0 W has the law of W), the Laplace or Gaussian release itself. Fisher's linear
    discriminant cannot see it: u_0 is a fair sign, so the two streams' mean outputs agree."""
    from dponline.environments.bandit_convex import make_domain  # the audit's set

    domain = make_domain("grid_paths", 2)
    h = (outputs - domain.interior_point()) @ domain.hull_basis()[:, 0]
    return h[:, 0] * h[:, 2 * _AUDIT_BATCH :].mean(axis=1)


def _audit(seed: int) -> AuditCase:
    """The paths of the 2 x 2 grid DAG (n = 4, k = 1: the tight calibration draws its noise in
    one hull coordinate, with l1 sensitivity (k / zeta)(hi - lo), where R^4 would charge twice
    that), three batches of three rounds. Every loss vector is ``value`` on every edge, so the
    loss of any point of the hull is 2 value (a path has two edges): round 1 sees -1 on one
    stream and +1 on the other, the two ends of the declared range, and moves the batch sum by
    the full sensitivity; s~_1 sets the third batch's centre (one exact line-search step on a
    segment). Statistic: :func:`_hull_statistic`. ``clip`` absorbs the rounding of the point's
    coordinate sum."""
    return AuditCase(
        horizon=_AUDIT_HORIZON,
        values=(-0.5, 0.5),
        coordinates="all",
        environment_options={"domain": "grid_paths", "dim": 2, "losses": "linear"},
        learner_options={
            "eta": 0.15,
            "zeta": 0.25,
            "batch": _AUDIT_BATCH,
            "loss_range": (-1.0, 1.0),
            "clip": True,
        },
        statistic=_hull_statistic,
        trials=40_000,
        pilot_trials=10_000,
        seed=seed,
    )


_PRIVATE_BANDIT_ENTRY = register_learner(
    LearnerEntry(
        "private-bandit",
        _private_bandit,
        paper="Ene, Nguyen & Vladu (2021), Algorithm 1 (PrivateBandit)",
        setting="projection-free bandit convex optimisation over a set with a linear "
        "minimisation oracle",
        guarantee=(
            "event-level (epsilon, 0)-DP (Laplace) or (epsilon, delta)-DP (Gaussian) of every "
            "action over loss sequences differing in one round, for loss values in loss_range "
            "(exact sensitivity (k/zeta)(hi - lo) of the batch sums the counter releases; "
            "tight: summed in the k coordinates of the affine hull, l1 sensitivity x sqrt(k), "
            "our derivation in bandits/ene_noise.py)"
        ),
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="oracle set",
        test_cases=(
            LearnerTestCase(
                "bandit_convex",
                horizon=25,
                environment_options={"domain": "simplex", "dim": 4},
                audit=_audit(seed=4),
            ),
            LearnerTestCase(
                "bandit_convex",
                horizon=16,
                environment_options={"domain": "ball", "dim": 3, "losses": "quadratic"},
                learner_options={"delta": 1e-5},
                audit=_audit(seed=5),
                label="gaussian",
            ),
        ),
        options=_OPTIONS,
        default_delta=0.0,  # Laplace noise (Lemma 5.1); fixed, so valid for every t (anytime)
        anytime=True,
    )
)

register_learner(
    non_private_entry(
        _PRIVATE_BANDIT_ENTRY,
        "projection-free-bandit",
        paper="Garber & Kretzu (2020) as simplified in Ene, Nguyen & Vladu (2021) Algorithm 1, "
        "without noise; the non-private counterpart of private-bandit",
        test_cases=(
            LearnerTestCase(
                "bandit_convex",
                horizon=25,
                environment_options={"domain": "simplex", "dim": 4},
                randomised=True,
            ),
        ),
        options={
            k: v for k, v in _OPTIONS.items() if k not in ("delta", "mechanism", "noise_in_hull")
        },
    )
)
