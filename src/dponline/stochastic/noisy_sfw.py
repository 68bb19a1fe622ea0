"""NoisySFW: the one-pass variance-reduced noisy stochastic Frank-Wolfe of Bassily, Guzmán & Nandi
(COLT 2021, "Non-Euclidean differentially private stochastic convex optimization", Algorithm 3),
the 1 < p <= 2 baseline of Han et al. Appendix C (Table 3), for the squared loss
f(theta; x, y) = (<x, theta> - y)^2 over the l_p ball of radius r (1 < p <= 2, q = p/(p-1) >= 2).

The algorithm (as summarised in ``notes/streaming-sco-baselines.md``), with the samples in a
random order drawn per run (independent of the data, so it changes no guarantee):

* the first n_0 = ceil(n/2) samples give the initial gradient estimate at theta_0 = 0:
  G_0 = (1/n_0) sum grad f(theta_0; z) + noise_0;
* the rest is cut into T = floor((n - n_0) / b) disjoint batches of b = ceil(sqrt(n)/2) samples
  (about sqrt(n) batches; the < b samples left over are not used);
* Frank-Wolfe: v_t = LMO(G_t) (:meth:`~dponline.domains.lp_ball.LpBall.lmo`),
  theta_{t+1} = (1 - eta) theta_t + eta v_t, and for t = 1..T
  G_t = G_{t-1} + (1/b) sum_{z in B_t} [grad f(theta_t; z) - grad f(theta_{t-1}; z)] + noise_t;
* output theta_{T+1}; eta = log(n) / (2 sqrt(n)) (natural log) times each learning-rate scale
  factor, capped at 1 so that the iterate stays a convex combination.

Constants. Samples satisfy ``||x||_q <= X``, ``|y| <= Y``; over the ball (l_p diameter M = 2r)
``||grad f||_q <= L0 = 2 (X r + Y) X`` and ``grad f`` is beta = 2 X^2 smooth from l_p to l_q
(:func:`~dponline.losses.glm.squared_loss_constants`), so the paper's gradient clipping is
the identity on valid inputs and is not executed. In l_2, ||x||_2 <= d^(1/2-1/q) ||x||_q (q >= 2),
so every l_q bound below times c_2 = d^(1/2-1/q) bounds the l_2 norm.

Privacy (datasets differing in one sample, every noisy release output). Every sample enters
exactly one release (the initial mean or one batch), so the releases compose in parallel: the
whole run is (epsilon, delta)-DP when each release is, given the past releases (the iterates
theta_t, theta_{t-1} a batch is evaluated at are post-processing of earlier releases).
Replace-one sensitivities:

* initial mean: 2 L0 / n_0 in l_q (two gradients of norm <= L0), times c_2 in l_2;
* batch t: grad f(theta_t; z) - grad f(theta_{t-1}; z) = 2 <x, theta_t - theta_{t-1}> x has
  l_q norm <= beta ||theta_t - theta_{t-1}||_p <= beta eta M, so 2 beta eta M / b in l_q (times c_2
  in l_2).

Noise (:class:`NoisySFWCalibrator`). ``paper``: generalized Gaussian noise in the smooth norm l_r
of the regularity of l_q (:func:`~dponline.privacy.generalized_gaussian.lq_regularity`, constant
kappa) with the notes' sigma_0 = 4 sqrt(2 kappa) L0 sqrt(log(1/delta)) / (n epsilon) and
sigma_t = sqrt(32 kappa beta^2 M^2 eta^2 log(1/delta) / (n epsilon^2)). These are exactly Lemma 2.7
of Han et al. (sigma = sqrt(2 kappa log(1/delta)) s / epsilon,
:func:`~dponline.privacy.generalized_gaussian.generalized_gaussian_sigma`) at the sensitivities
4 L0 / n and 4 beta eta M / sqrt(n) of batches of n/2 and sqrt(n)/2 samples. The epsilon reported is
what the noise proves for the batches actually used: by Lemma 2.7, epsilon' =
sqrt(2 kappa log(1/delta)) s / sigma when that is <= 1, and when the smooth norm is l_2 (d <= 7,
the noise is Gaussian) the exact analytic-Gaussian epsilon if smaller; the maximum over releases.

``tight`` (default): per release, Gaussian noise calibrated exactly with the analytic Gaussian
mechanism (Balle & Wang 2018) on the l_2 sensitivity c_2 s; the proven epsilon
is the request (up to the root finder's 1e-6), for any epsilon. We also compared Lemma 2.7's
generalized Gaussian at the least regularity constant of its smooth norm
(:func:`~dponline.privacy.generalized_gaussian.exact_kappa`): for q in {3, 11, 101} and d from 8
to 10^4 (epsilon = 0.5, delta = 1e-3) its mean l_q norm (what the LMO sees) is the larger one,
so it is not offered.

:class:`NoisySFWPlan` is the algorithm with everything fixed before the data (schedule, noise,
guarantee); :func:`noisy_sfw` fits it on a dataset, and the catalogue's learner ``noisy-sfw``
fits the same plan behind the batch-learner adapter
(:class:`~dponline.stochastic.batch_learner.BatchLearner`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from dponline.domains.lp_ball import LpBall, dual_exponent
from dponline.losses import squared_loss_constants
from dponline.privacy.accounting import gaussian_epsilon, gaussian_sigma
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.generalized_gaussian import (
    GG_MAX_DELTA,
    GG_MAX_EPSILON,
    GeneralizedGaussianNoise,
    LqRegularity,
    lq_regularity,
)
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.protocol import checked_count
from dponline.registry import (
    AuditCase,
    register_learner,
)
from dponline.rng import RngLike
from dponline.stochastic.baseline_fit import (
    BaselineFit,
    checked_exponent,
    checked_noise_multiplier,
    checked_plan_data,
    checked_positive,
    checked_sample_budget,
    checked_samples,
    checked_scales,
    fit_batch,
    run_chunks,
)
from dponline.stochastic.batch_learner import batch_factory, batch_learner_entry
from dponline.stochastic.private_frank_wolfe import AUDIT_LABEL

__all__ = ["NoisySFWCalibrator", "NoisySFWPlan", "noisy_sfw", "sfw_schedule"]


def sfw_schedule(n: int) -> tuple[int, int, int, float]:
    """(n_0, b, T, eta): initial-gradient samples ceil(n/2), batch size ceil(sqrt(n)/2), number of
    batches floor((n - n_0)/b) and the unscaled step log(n) / (2 sqrt(n))."""
    n0 = math.ceil(n / 2)
    b = math.ceil(math.sqrt(n) / 2)
    return n0, b, (n - n0) // b, math.log(n) / (2 * math.sqrt(n))


def _lemma27_epsilon(kappa: float, delta: float, sens: float, sigma: float) -> float:
    """The epsilon Lemma 2.7 proves for noise sigma and l_q sensitivity ``sens`` (inf when the
    lemma does not apply: epsilon above 1 or delta above 1/2)."""
    if sigma <= 0:
        return math.inf
    eps = math.sqrt(2 * kappa * math.log(1 / delta)) * sens / sigma
    # the paper's sigma at epsilon = 1 gives 1 up to rounding: allow that rounding
    return eps if (eps <= GG_MAX_EPSILON * (1 + 1e-9) and delta <= GG_MAX_DELTA) else math.inf


def noisy_sfw(
    x: np.ndarray,
    y: np.ndarray,
    *,
    p: float,
    radius: float = 1.0,
    x_bound: float,
    y_bound: float,
    budget: PrivacyBudget | None,
    step_scales: Sequence[float] = (1.0,),
    runs: int = 1,
    rng: RngLike = None,
    clip: bool = False,
    noise_multiplier: float = 1.0,
) -> BaselineFit:
    """Noisy stochastic Frank-Wolfe (Bassily, Guzmán & Nandi 2021, Algorithm 3) over the l_p ball.

    Parameters
    ----------
    x, y:
        The dataset, shapes ``(n, d)`` and ``(n,)``, with ``||x_i||_q <= x_bound`` (q = p/(p-1))
        and ``|y_i| <= y_bound`` (else ValueError, or clipping with ``clip=True``); n >= 2.
    p:
        The ball's exponent, 1 < p <= 2.
    budget:
        The (epsilon, delta) budget of one run at one scale, over datasets differing in one
        sample; ``None`` runs without noise. Calibration "tight" or "paper" (module
        docstring); a paper formula that proves less than asked needs ``allow_weaker=True``.
    step_scales:
        Factors multiplying eta (the product is capped at 1).
    runs:
        Independent runs (order of the samples and noise); run k is the same for a given seed
        whatever ``runs`` and ``step_scales`` are.
    noise_multiplier:
        Multiplies every calibrated noise scale (sigma_0 and sigma_t) when drawing; below 1 the
        result claims no guarantee (epsilon = inf), as for audits
        (:func:`~dponline.stochastic.baseline_fit.scaled_guarantee`).

    Returns
    -------
    BaselineFit with ``theta`` the last iterates, shape ``(runs, len(step_scales), d)``; its
    guarantee and numbers are those of :class:`NoisySFWPlan`, which the batch-learner adapter
    (``noisy-sfw``) fits too.
    """
    p = checked_exponent(p, "NoisySFW")
    return fit_batch(
        NoisySFWPlan,
        x,
        y,
        q=dual_exponent(p),
        x_bound=x_bound,
        y_bound=y_bound,
        budget=budget,
        runs=runs,
        rng=rng,
        clip=clip,
        noise_multiplier=noise_multiplier,
        min_samples=2,
        p=p,
        radius=radius,
        step_scales=step_scales,
    )


class NoisySFWPlan:
    """Algorithm 3 of Bassily, Guzmán & Nandi (2021) for n samples in dimension d, before any
    data (module docstring): the schedule (n_0, b, T, eta per scale), the calibrated noise
    (:class:`NoisySFWCalibrator`) and the guarantee of one run at one scale, and :meth:`fit`.
    A :class:`~dponline.stochastic.baseline_fit.BatchPlan`: :func:`noisy_sfw` and the
    ``noisy-sfw`` learner fit it.
    """

    paper = "Bassily, Guzmán & Nandi (2021), Algorithm 3 (NoisySFW)"

    def __init__(
        self,
        samples: int,
        dim: int,
        *,
        p: float,
        radius: float = 1.0,
        x_bound: float,
        y_bound: float,
        budget: PrivacyBudget | None,
        step_scales: Sequence[float] = (1.0,),
    ) -> None:
        self.budget = checked_sample_budget(budget)
        self.p = checked_exponent(p, "NoisySFW")
        self.q = q = dual_exponent(self.p)
        self.samples = n = checked_samples("NoisySFW", samples, 2)
        self.dim = d = checked_count("dim", dim)
        self.x_bound = checked_positive("x_bound", x_bound)
        self.y_bound = checked_positive("y_bound", y_bound)
        self.ball = ball = LpBall(d, self.p, float(radius))
        self.step_scales = scales = checked_scales(step_scales)
        lipschitz, beta = squared_loss_constants(self.x_bound, self.y_bound, ball.radius)
        diameter = ball.lp_diameter()
        c2 = d ** (0.5 - 1.0 / q)
        n0, b, n_batches, eta = sfw_schedule(n)
        self.n0, self.b, self.n_batches = n0, b, n_batches
        self.etas = etas = np.minimum(1.0, eta * scales)
        sens0 = 2.0 * lipschitz / n0  # l_q
        sens_t = 2.0 * beta * etas * diameter / b  # l_q, per scale
        reg = lq_regularity(q, d)
        params: dict[str, float] = {
            "initial_samples": float(n0),
            "batch_size": float(b),
            "batches": float(n_batches),
            "unused_samples": float(n - n0 - n_batches * b),
            "eta": eta,
            "lipschitz_lq": lipschitz,
            "smoothness": beta,
            "diameter_lp": diameter,
        }
        for s, e in zip(scales, etas, strict=True):
            params[f"eta@{s:g}"] = float(e)

        self.privacy: PrivacyGuarantee | None = None
        self.family: str | None = None  # "gg" or "gaussian"
        self.r_noise = 2.0
        self.sigma0 = 0.0
        self.sigmas = np.zeros_like(etas)
        if self.budget is not None:
            calibrator = NoisySFWCalibrator(
                n, reg, lipschitz, beta, diameter, tuple(etas), c2, sens0, tuple(sens_t), n0, b
            )
            cal = calibrate(calibrator, self.budget)
            self.family, self.r_noise, self.sigma0, self.sigmas = cal.noise
            self.privacy = cal.guarantee
            params["sigma_initial"] = float(self.sigma0)
            params["noise_r"] = float(self.r_noise)
            for s, sig in zip(scales, self.sigmas, strict=True):
                params[f"sigma_batch@{s:g}"] = float(sig)
        self.parameters: Mapping[str, float] = MappingProxyType(params)
        for a in (self.step_scales, self.etas, self.sigmas):
            a.setflags(write=False)  # a plan is shared (the learners' cache): read-only

    def start(self) -> np.ndarray:
        """theta_0 = 0, where Algorithm 3 starts (its first gradient is taken there)."""
        return np.zeros(self.dim)

    def fit(
        self,
        xs: np.ndarray,
        ys: np.ndarray,
        gens: Sequence[np.random.Generator],
        noise_multiplier: float = 1.0,
    ) -> np.ndarray:
        """Algorithm 3 on the validated dataset, one run per generator, every scale at once:
        shape (runs, n_scales, d). Each run draws its order and unit noise from its own
        generator (shared by its scales); the noise is sigma times ``noise_multiplier``."""
        checked_plan_data(self, xs, ys)
        m = checked_noise_multiplier(noise_multiplier)
        n, d = xs.shape
        per_run = n + (self.n_batches + 1) * d + 4 * len(self.etas) * d + self.b * d
        out = np.empty((len(gens), len(self.etas), d))
        for lo, hi in run_chunks(len(gens), per_run):  # buffers within CHUNK_FLOATS floats
            out[lo:hi] = self._chunk(xs, ys, gens[lo:hi], m)
        return out

    def _chunk(
        self,
        xs: np.ndarray,
        ys: np.ndarray,
        gens: Sequence[np.random.Generator],
        noise_multiplier: float,
    ) -> np.ndarray:
        """Some runs at every scale, on (runs, S, d) arrays.

        Each run draws its order and unit noise from its own generator (its scales share them)
        and takes its initial gradient, one run at a time; the Frank-Wolfe steps then run on the
        (runs, S, d) array. Every operation acts on each run's (S, d) rows exactly as on that
        run alone (elementwise, row-wise reductions, and one matrix product per run), so run
        k's numbers do not depend on the other runs.
        """
        ball, n0, b, n_batches = self.ball, self.n0, self.b, self.n_batches
        etas, family, r_noise = np.asarray(self.etas), self.family, self.r_noise
        sigma0, sigmas = self.sigma0 * noise_multiplier, self.sigmas * noise_multiplier
        n, d = xs.shape
        runs, n_scales = len(gens), etas.size
        orders = np.empty((runs, n), dtype=np.intp)
        est = np.empty((runs, n_scales, d))
        units = np.empty((runs, n_batches + 1, d))
        for k, gen in enumerate(gens):
            orders[k] = gen.permutation(n)
            if family == "gg":
                units[k] = GeneralizedGaussianNoise(1.0, r_noise).sample(gen, (n_batches + 1, d))
            elif family == "gaussian":
                units[k] = gen.standard_normal((n_batches + 1, d))
            else:
                units[k] = 0.0
            x0, y0 = xs[orders[k, :n0]], ys[orders[k, :n0]]
            grad0 = (-2.0 * y0) @ x0 / n0  # mean gradient at theta_0 = 0
            est[k] = grad0 + sigma0 * units[k, 0]
        eta = etas[:, None]
        theta = np.zeros((runs, n_scales, d))
        theta_new = theta + eta * (ball.lmo(est) - theta)
        for t in range(1, n_batches + 1):
            xb = xs[orders[:, n0 + (t - 1) * b : n0 + t * b]]  # (runs, b, d)
            # mean of 2 <x, theta_t - theta_{t-1}> x over the batch (the labels cancel)
            diff = (2.0 / b) * ((theta_new - theta) @ xb.transpose(0, 2, 1)) @ xb
            est += diff + sigmas[:, None] * units[:, t, None, :]
            theta, theta_new = theta_new, theta_new + eta * (ball.lmo(est) - theta_new)
        return theta_new


@dataclass(frozen=True)
class NoisySFWCalibrator:
    """The noise of NoisySFW's releases: the initial gradient (l_q sensitivity ``sens0``) and
    one batch gradient per step (``sens_t``, one per learning-rate scale); every sample is in
    one release, so the run has the weakest release's guarantee (parallel composition).
    ``Calibration.noise`` is ``(family, r, sigma_0, sigma_t per scale)``.

    ``paper``: Bassily et al.'s generalized Gaussian sigmas (module docstring), each release
    proven by Lemma 2.7 (or exactly, when the smooth norm is l_2 and the noise Gaussian);
    ``tight``: Gaussian per release, calibrated exactly (analytic Gaussian, Balle & Wang 2018)
    on the l_2 sensitivity c2 = d^(1/2-1/q) times the l_q one.
    """

    n: int
    regularity: LqRegularity
    lipschitz: float
    beta: float
    diameter: float
    etas: tuple[float, ...]
    c2: float
    sens0: float
    sens_t: tuple[float, ...]
    n0: int
    b: int

    def paper(self, budget: PrivacyBudget) -> Calibration:
        reg, eps, delta, n = self.regularity, budget.epsilon, budget.delta, self.n
        kappa, log_term = reg.kappa, math.log(1 / delta)
        lip, beta, diameter, etas = self.lipschitz, self.beta, self.diameter, np.array(self.etas)
        sigma0 = 4 * math.sqrt(2 * kappa) * lip * math.sqrt(log_term) / (n * eps)
        sigmas = np.sqrt(32 * kappa * beta**2 * diameter**2 * etas**2 * log_term / (n * eps**2))
        proofs = []
        for s, sig in [(self.sens0, sigma0), *zip(self.sens_t, sigmas, strict=True)]:
            e = _lemma27_epsilon(kappa, delta, s, sig)
            if reg.r == 2.0:  # the noise is N(0, sigma^2 I): exact accounting applies
                e = min(e, gaussian_epsilon(delta, self.c2 * s / sig))
            proofs.append(e)
        how = (
            f"Bassily et al. (2021) Alg. 3 noise as in the notes: generalized Gaussian in l_"
            f"{reg.r:.4g} (kappa {kappa:.4g}), sigma_0 = {sigma0:.6g}, sigma_t = "
            f"{sigmas.max():.6g} (largest scale); each sample in one release (parallel "
            f"composition); per release proven by Lemma 2.7 at the sensitivities of the "
            f"batches used (n_0 = {self.n0}, b = {self.b})"
            + (" or exact analytic Gaussian accounting (l_2 noise)" if reg.r == 2.0 else "")
        )
        g = budget.prove(max(proofs), delta, how)
        return Calibration(("gg", reg.r, sigma0, sigmas), g, budget.calibration, "NoisySFW")

    def tight(self, budget: PrivacyBudget) -> Calibration:
        eps, delta, c2 = budget.epsilon, budget.delta, self.c2
        sigma0 = gaussian_sigma(c2 * self.sens0, eps, delta)
        sigmas = np.array([gaussian_sigma(c2 * s, eps, delta) for s in self.sens_t])
        proven = max(
            gaussian_epsilon(delta, c2 * s / sig)
            for s, sig in [(self.sens0, sigma0), *zip(self.sens_t, sigmas, strict=True)]
        )
        how = (
            f"Gaussian per release calibrated exactly (analytic Gaussian, Balle & Wang 2018) on "
            f"the l_2 sensitivity (d^(1/2-1/q) = {c2:.4g} times the l_q one); each sample in "
            "one release (parallel composition)"
        )
        g = budget.prove(proven, delta, how)
        return Calibration(("gaussian", 2.0, sigma0, sigmas), g, budget.calibration, "NoisySFW")


# --- catalogue entry (dponline.registry): dponline list, specs, the battery, dponline audit ---


_noisy_sfw = batch_factory(NoisySFWPlan, "noisy-sfw", default_p=1.5)


#: The audit (:mod:`dponline.experiments.learner_audit`): x = e_1 in every sample and sample 1's
#: label +Y or -Y (Y = AUDIT_LABEL = 100, X = r = 1), the other labels 0. Near the worst case:
#: at theta_0 = 0 the flip moves the initial gradient mean by 4 Y X / n_0 against the proven
#: l_q sensitivity 2 L0 / n_0 = 4 (X r + Y) X / n_0 (400 against 404), and p = 2 makes that
#: also the l_2 sensitivity the tight Gaussian is calibrated on (d^(1/2-1/q) = 1); the labels
#: cancel in the batch terms, so only the initial release can leak, and n = 3 puts the changed
#: sample in it with the largest probability, n_0 / n = 2/3 (the random order is part of the
#: algorithm). The output shows only the direction of the noisy estimate (through the LMO),
#: which is why the full noise is far from refuted; d = 6 makes that direction most telling at
#: these trial counts (the null's directions spread over more dimensions). delta = 1e-3: an
#: (epsilon, delta) claim says nothing about events rarer than delta, and the default 1/T = 1/3
#: would leave nothing to refute. Measured (tight, seeds 0-5): audited lower bound <= 0.09 at
#: the full noise, 2.5-2.8 at a tenth (claim 1).
_AUDIT = AuditCase(
    horizon=3,
    values=(AUDIT_LABEL, -AUDIT_LABEL),
    environment_options={"dim": 6},
    learner_options={"p": 2.0, "x_bound": 1.0, "y_bound": AUDIT_LABEL, "delta": 1e-3},
    trials=4_000,
    pilot_trials=1_000,
    seed=3,
)

register_learner(
    batch_learner_entry(
        "noisy-sfw",
        _noisy_sfw,
        paper="Bassily, Guzmán & Nandi (2021), Algorithm 3 (NoisySFW: one-pass "
        "variance-reduced noisy stochastic Frank-Wolfe), the 1 < p <= 2 baseline of Han et al. "
        "App. C",
        setting="stochastic convex optimisation (squared loss, l_p ball, 1 < p <= 2); batch",
        audit=_AUDIT,
        options={
            "p": "the l_p ball, 1 < p <= 2 (default: the environment's, else 1.5)",
            "step_scale": "factor on the default step log(n) / (2 sqrt(n)) (default 1)",
        },
    )
)
