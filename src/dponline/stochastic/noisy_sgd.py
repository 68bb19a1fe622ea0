"""NoisySGD: the multi-pass noisy projected SGD of Bassily, Feldman, Guzmán & Talwar (NeurIPS 2020,
"Stability of stochastic gradient descent on nonsmooth convex losses", Algorithm 2 (noisy SGD)),
the p = inf baseline of Han et al. Appendix C (Table 4), for the squared loss
f(theta; x, y) = (<x, theta> - y)^2 over the box {||theta||_inf <= r}.

The algorithm (T = n^2 steps unless ``steps`` is given; theta_0 = 0):

    for t = 1..T:  i_t ~ Uniform{1..n} (with replacement)
                   g_t = clip_{L0}(grad f(theta_{t-1}; x_{i_t}, y_{i_t})) + N(0, sigma^2 I_d)
                   theta_t = Proj_box(theta_{t-1} - eta g_t)      (Proj_box = coordinatewise clip)
    output  (1/T) sum_{t=1..T} theta_t

with eta = D / (L0 n max(sqrt(n), sqrt(d log(1/delta)) / epsilon)), D = 2 r sqrt(d) the Euclidean
diameter of the box, times each learning-rate scale factor.

Input contract and constants. As in Han et al.'s experiments for p = inf (q = 1), samples satisfy
``||x||_1 <= X`` and ``|y| <= Y``. Then ||x||_2 <= ||x||_1 <= X and, on the box,
|<x, theta>| <= ||x||_1 ||theta||_inf <= X r, so every gradient 2 (<x, theta> - y) x has
||.||_2 <= L0 = 2 (X r + Y) X. The clipping to L0 of the paper is therefore the identity on valid
inputs (iterates never leave the box) and is not executed; out-of-bounds samples are refused or,
with ``clip=True``, mapped into the bounds.

Privacy (datasets differing in one sample, every noisy gradient released). Each step is a Gaussian
mechanism on a uniformly drawn single sample: a subsampled Gaussian with subset size 1 out of n,
whose replace-one l2 sensitivity is 2 L0 (two gradients of norm <= L0). The T steps compose
adaptively; we account them with Renyi DP for sampling without replacement under replace-one
neighbours (Wang, Balle & Kasiviswanathan 2019, Thm 27; dp_accounting), noise multiplier
sigma / (2 L0) (:func:`~dponline.privacy.accounting.subsampled_gaussian_epsilon`).

Noise (:class:`NoisySGDCalibrator`):

* ``paper``: sigma = sqrt(8 L0^2 log(1/delta)) / epsilon (Bassily et al. 2020); the guarantee is
  the epsilon this sigma is proven to give by that accounting (at delta = 1/n it is about 1.72
  for epsilon = 1: refused unless the budget allows a weaker paper calibration).
* ``tight`` (default): the least sigma whose accounted epsilon is <= epsilon.

Vectorisation. Runs and scales are rows of one array; run k draws its indices and noise from its
own generator (shared by its scales), in blocks of :data:`BLOCK` steps, and each step is six
numpy operations on a ``(runs, scales, d)`` array.

:class:`NoisySGDPlan` is the algorithm with everything fixed before the data (steps, noise,
guarantee); :func:`noisy_sgd` fits it on a dataset, and the catalogue's learner ``noisy-sgd``
fits the same plan behind the batch-learner adapter
(:class:`~dponline.stochastic.batch_learner.BatchLearner`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from dponline.losses import squared_loss_constants
from dponline.privacy.accounting import least_noise_multiplier, subsampled_gaussian_epsilon
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.protocol import checked_count
from dponline.registry import (
    AuditCase,
    register_learner,
)
from dponline.rng import RngLike
from dponline.stochastic.baseline_fit import (
    BaselineFit,
    checked_noise_multiplier,
    checked_plan_data,
    checked_positive,
    checked_sample_budget,
    checked_samples,
    checked_scales,
    fit_batch,
)
from dponline.stochastic.batch_learner import (
    BATCH_OPTIONS,
    batch_factory,
    batch_learner_entry,
)
from dponline.stochastic.private_frank_wolfe import AUDIT_LABEL
from dponline.stochastic.sgd_kernel import sgd_block

__all__ = ["BLOCK", "NoisySGDCalibrator", "NoisySGDPlan", "noisy_sgd"]

#: Steps whose sample indices and noise are drawn at once (the RNG stream depends on it).
BLOCK = 2048
#: Largest (steps, runs, scales, d) work buffer, in floats (16 MiB).
_CHUNK_FLOATS = 2**21
#: run the numpy steps even where the compiled kernel exists (tests compare the two paths)
_FORCE_NUMPY = False


def noisy_sgd(
    x: np.ndarray,
    y: np.ndarray,
    *,
    radius: float = 1.0,
    x_bound: float,
    y_bound: float,
    budget: PrivacyBudget | None,
    step_scales: Sequence[float] = (1.0,),
    runs: int = 1,
    rng: RngLike = None,
    steps: int | None = None,
    clip: bool = False,
    noise_multiplier: float = 1.0,
) -> BaselineFit:
    """Noisy projected SGD (Bassily et al. 2020, Algorithm 2) over the l_inf ball of ``radius``.

    Parameters
    ----------
    x, y:
        The dataset, shapes ``(n, d)`` and ``(n,)``, with ``||x_i||_1 <= x_bound`` and
        ``|y_i| <= y_bound`` (else ValueError, or clipping with ``clip=True``).
    budget:
        The (epsilon, delta) budget of one run at one scale, over datasets differing in one
        sample; ``None`` runs without noise. Calibration: "tight" (least sigma proven by RDP
        accounting) or "paper" (Bassily et al.'s sigma, which proves less than asked at
        delta = 1/n: it needs ``allow_weaker=True``).
    step_scales:
        Factors multiplying the step size eta; ``theta[:, j]`` is the run at ``step_scales[j]``.
    runs:
        Independent runs (``theta[k]``: run k, the same whatever ``runs`` is, for a given seed).
    steps:
        Number of SGD steps (default n^2, the paper's); the accounting uses it.
    noise_multiplier:
        Multiplies the calibrated sigma when drawing (not to be confused with DP-SGD's "noise
        multiplier" sigma / (2 L0), reported as ``parameters["noise_multiplier"]``); below 1 the
        result claims no guarantee (epsilon = inf), as for audits
        (:func:`~dponline.stochastic.baseline_fit.scaled_guarantee`).

    Returns
    -------
    BaselineFit with ``theta`` the averaged iterates, shape ``(runs, len(step_scales), d)``; its
    guarantee and numbers are those of :class:`NoisySGDPlan`, which the batch-learner adapter
    (``noisy-sgd``) fits too.
    """
    return fit_batch(
        NoisySGDPlan,
        x,
        y,
        q=1.0,
        x_bound=x_bound,
        y_bound=y_bound,
        budget=budget,
        runs=runs,
        rng=rng,
        clip=clip,
        noise_multiplier=noise_multiplier,
        radius=radius,
        step_scales=step_scales,
        steps=steps,
    )


class NoisySGDPlan:
    """Algorithm 2 of Bassily et al. (2020) for n samples in dimension d, before any data
    (module docstring): the step count and steps per scale, the calibrated sigma
    (:class:`NoisySGDCalibrator`) and the guarantee of one run at one scale, and :meth:`fit`.
    A :class:`~dponline.stochastic.baseline_fit.BatchPlan`: :func:`noisy_sgd` and the
    ``noisy-sgd`` learner fit it. Its geometry is the l_inf ball (p = inf), its input contract
    ``||x||_1 <= x_bound`` (q = 1).
    """

    paper = "Bassily, Feldman, Guzmán & Talwar (2020), Algorithm 2 (noisy SGD)"
    p = math.inf
    q = 1.0

    def __init__(
        self,
        samples: int,
        dim: int,
        *,
        radius: float = 1.0,
        x_bound: float,
        y_bound: float,
        budget: PrivacyBudget | None,
        step_scales: Sequence[float] = (1.0,),
        steps: int | None = None,
    ) -> None:
        self.budget = budget = checked_sample_budget(budget)
        self.radius = r = checked_positive("radius", radius)
        self.samples = n = checked_samples("NoisySGD", samples, 1)
        self.dim = d = checked_count("dim", dim)
        self.x_bound = checked_positive("x_bound", x_bound)
        self.y_bound = checked_positive("y_bound", y_bound)
        self.step_scales = scales = checked_scales(step_scales)
        if steps is None:
            total = n * n
        else:
            total = checked_count("steps", steps)
        self.steps = total
        eps, delta = (math.inf, math.nan) if budget is None else (budget.epsilon, budget.delta)

        lipschitz, _ = squared_loss_constants(self.x_bound, self.y_bound, r)  # l2 bound, q = 1
        diameter = 2.0 * r * math.sqrt(d)
        sens = 2.0 * lipschitz  # replace-one l2 sensitivity of one gradient
        self.privacy: PrivacyGuarantee | None = None
        if budget is None:
            sigma = 0.0
            eta = diameter / (lipschitz * n * math.sqrt(n))
        else:
            eta = diameter / (
                lipschitz * n * max(math.sqrt(n), math.sqrt(d * math.log(1 / delta)) / eps)
            )
            cal = calibrate(NoisySGDCalibrator(n, total, lipschitz), budget)
            sigma, self.privacy = cal.noise, cal.guarantee
        self.sigma = sigma
        self.etas = etas = eta * scales
        params: dict[str, float] = {
            "steps": float(total),
            "sigma": sigma,
            "noise_multiplier": sigma / sens,
            "lipschitz_l2": lipschitz,
            "diameter_l2": diameter,
            "eta": eta,
            "batch_size": 1.0,
        }
        for s, e in zip(scales, etas, strict=True):
            params[f"eta@{s:g}"] = float(e)
        self.parameters: Mapping[str, float] = MappingProxyType(params)
        for a in (self.step_scales, self.etas):
            a.setflags(write=False)  # a plan is shared (the learners' cache): read-only

    def start(self) -> np.ndarray:
        """theta_0 = 0, where Algorithm 2 starts."""
        return np.zeros(self.dim)

    def fit(
        self,
        xs: np.ndarray,
        ys: np.ndarray,
        gens: Sequence[np.random.Generator],
        noise_multiplier: float = 1.0,
    ) -> np.ndarray:
        """Algorithm 2 on the validated dataset, one run per generator, every scale at once:
        the averaged iterates, shape (runs, n_scales, d), with sigma times
        ``noise_multiplier``."""
        checked_plan_data(self, xs, ys)
        m = checked_noise_multiplier(noise_multiplier)
        return _run(xs, ys, self.radius, self.sigma * m, self.etas, self.steps, list(gens))


@dataclass(frozen=True)
class NoisySGDCalibrator:
    """The Gaussian sigma of NoisySGD's noisy gradients for ``n`` samples, ``steps`` steps and
    gradient norm bound ``lipschitz`` = L0 (module docstring): ``paper``, Bassily et al.'s
    sigma = sqrt(8 L0^2 log(1/delta)) / epsilon; ``tight``, the least sigma whose RDP-accounted
    epsilon is at most the request. ``Calibration.noise`` is sigma."""

    n: int
    steps: int
    lipschitz: float

    @property
    def sensitivity(self) -> float:
        """The replace-one l2 sensitivity of one gradient: 2 L0."""
        return 2.0 * self.lipschitz

    def _answer(self, budget: PrivacyBudget, sigma: float, how: str) -> Calibration:
        sens, kw = self.sensitivity, dict(population=self.n, sample=1, steps=self.steps)
        proven = subsampled_gaussian_epsilon(sigma / sens, delta=budget.delta, **kw)
        how += (
            f"; proven by RDP accounting (dp_accounting, REPLACE_ONE) of {self.steps} adaptive "
            f"subsampled Gaussian steps, 1 of n = {self.n} samples each, l2 sensitivity "
            f"2 L0 = {sens:.6g}, noise multiplier {sigma / sens:.6g}"
        )
        g = budget.prove(proven, budget.delta, how)
        return Calibration(sigma, g, budget.calibration, "NoisySGD")

    def paper(self, budget: PrivacyBudget) -> Calibration:
        sigma = math.sqrt(8.0 * self.lipschitz**2 * math.log(1 / budget.delta)) / budget.epsilon
        return self._answer(
            budget, sigma, "Bassily et al. (2020) sigma = sqrt(8 L0^2 log(1/delta)) / epsilon"
        )

    def tight(self, budget: PrivacyBudget) -> Calibration:
        kw = dict(population=self.n, sample=1, steps=self.steps, delta=budget.delta)
        sigma = self.sensitivity * least_noise_multiplier(budget.epsilon, **kw)
        how = "least sigma whose accounted epsilon is <= the request (bisection)"
        return self._answer(budget, sigma, how)


def _run(
    xs: np.ndarray,
    ys: np.ndarray,
    radius: float,
    sigma: float,
    etas: np.ndarray,
    total: int,
    gens: list[np.random.Generator],
) -> np.ndarray:
    """The SGD loop, vectorised over (runs, scales); returns the averaged iterates. With numba
    the steps of each block run in :func:`~dponline.stochastic.sgd_kernel.sgd_block` (same
    draws, same arithmetic); without it, as numpy calls:

    Per step, with theta of shape (runs, S, d), x of run k and the scale's step eta_s:
        theta <- clip(theta - 2 eta_s <theta, x> x + eta_s (2 y x - sigma z), -r, r),
    where ``xe`` = 2 eta_s x and ``c`` = eta_s (2 y x - sigma z) are built per chunk of steps
    in preallocated buffers, so that a step is six numpy calls on (runs, S, d) arrays. Each run
    draws :data:`BLOCK` indices, then BLOCK x d normals, per block (so its stream does not depend
    on the number of runs or scales); chunks bound the (steps, runs, S, d) buffers to
    :data:`_CHUNK_FLOATS` floats each.
    """
    n, d = xs.shape
    runs, n_scales = len(gens), etas.size
    compiled = sgd_block is not None and not _FORCE_NUMPY
    theta = np.zeros((runs, n_scales, d))  # the compiled path's iterate
    # (capping at the run length changes no chunk that is ever used: one chunk either way)
    chunk = max(1, min(BLOCK, total, _CHUNK_FLOATS // (runs * n_scales * d)))
    eta_col = etas[None, None, :, None]
    hist = np.zeros((chunk + 1, runs, n_scales, d))  # hist[0]: iterate before the chunk
    inner = np.empty((runs, n_scales, 1))
    step = np.empty((runs, n_scales, d))
    upper = np.full((runs, n_scales, d), radius)
    lower = -upper
    acc = np.zeros((runs, n_scales, d))
    blk = min(BLOCK, total)  # the draw buffers: no block is longer than the run
    xg = np.empty((blk, runs, d))
    yg = np.empty((blk, runs, 1))
    zg = np.zeros((runs, blk, d))  # run-major so that each run's draw fills a contiguous slab
    base = np.empty((blk, runs, d))
    xe = np.empty((chunk, runs, n_scales, d))
    c = np.empty((chunk, runs, n_scales, d))
    done = 0
    while done < total:
        b = min(BLOCK, total - done)
        for k, g in enumerate(gens):
            idx = g.integers(0, n, size=b)
            xg[:b, k] = xs[idx]
            yg[:b, k, 0] = ys[idx]
            if sigma > 0:
                g.standard_normal(out=zg[k, :b])
        np.multiply(yg[:b], xg[:b], out=base[:b])
        base[:b] *= 2.0
        if sigma > 0:
            base[:b] -= sigma * zg[:, :b].transpose(1, 0, 2)
        if compiled:
            sgd_block(theta, acc, xg[:b], base[:b], etas, radius)
            done += b
            continue
        for lo in range(0, b, chunk):
            m = min(chunk, b - lo)
            np.multiply(base[lo : lo + m, :, None, :], eta_col, out=c[:m])
            np.multiply(xg[lo : lo + m, :, None, :], 2.0 * eta_col, out=xe[:m])
            xc = xg[lo : lo + m, :, :, None]  # (m, runs, d, 1)
            for prev, cur, xc_t, xe_t, c_t in zip(
                hist[:m], hist[1 : m + 1], xc, xe[:m], c[:m], strict=True
            ):
                np.matmul(prev, xc_t, out=inner)  # <theta, x>, (runs, S, 1)
                np.multiply(inner, xe_t, out=step)
                np.subtract(prev, step, out=cur)
                np.add(cur, c_t, out=cur)
                np.minimum(cur, upper, out=cur)
                np.maximum(cur, lower, out=cur)
            acc += hist[1 : m + 1].sum(axis=0)
            hist[0] = hist[m]
        done += b
    return acc / total


# --- catalogue entry (dponline.registry): dponline list, specs, the battery, dponline audit ---


_noisy_sgd = batch_factory(
    NoisySGDPlan,
    "noisy-sgd",
    default_p=math.inf,
    fixed_p_reason="the l_inf ball (Bassily et al. 2020 over the box, Han et al. App. C)",
)


#: The audit (:mod:`dponline.experiments.learner_audit`): x = e_1 and the label +Y or -Y
#: (Y = AUDIT_LABEL = 100, X = r = 1) of a dataset of n = 1 sample. The worst case of the
#: accounting: the one step always uses the one sample (no amplification by sampling), so the
#: release is exactly the Gaussian mechanism the accountant bounds, on a gradient that the flip
#: moves by 4 Y X against the proven l_2 sensitivity 2 L0 = 4 (X r + Y) X (400 against 404); the
#: output clip(theta_0 - eta g) shows the noisy gradient itself, and step_scale = 0.1 keeps the
#: box's clipping (post-processing, which only hides) from binding at the full noise.
#: delta = 1e-3 (the default 1/T = 1 is no budget; an (epsilon, delta) claim says nothing about
#: events rarer than delta). Measured (tight, seeds 0-5): audited lower bound 0.38-0.56 at the
#: full noise, 5.4-6.5 at a tenth (claim 1).
_AUDIT = AuditCase(
    horizon=1,
    values=(AUDIT_LABEL, -AUDIT_LABEL),
    environment_options={"dim": 2},
    learner_options={"x_bound": 1.0, "y_bound": AUDIT_LABEL, "delta": 1e-3, "step_scale": 0.1},
    trials=8_000,
    pilot_trials=2_000,
    seed=3,
)

register_learner(
    batch_learner_entry(
        "noisy-sgd",
        _noisy_sgd,
        paper="Bassily, Feldman, Guzmán & Talwar (2020), noisy projected SGD (multi-pass, "
        "T = n^2 steps, averaged iterate), the p = inf baseline of Han et al. App. C",
        setting="stochastic convex optimisation (squared loss, l_inf ball); batch",
        audit=_AUDIT,
        options={
            "p": "must be inf (the l_inf ball; default: the environment's, else inf)",
            "step_scale": BATCH_OPTIONS["step_scale"],
            "steps": "number of SGD steps (default n^2)",
            "radius": "of the l_inf ball (default 1)",
            "clip": BATCH_OPTIONS["clip"],
            "x_bound, y_bound": "input bounds, ||x||_1 and |y| (default: the environment's)",
        },
        guarantee_extra="; RDP accounting of every noisy gradient as if released",
    )
)
