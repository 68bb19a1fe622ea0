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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dponline.privacy.accounting import least_noise_multiplier, subsampled_gaussian_epsilon
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.calibration import Calibration, calibrate
from dponline.rng import RngLike
from dponline.stochastic.baseline_fit import (
    BaselineFit,
    checked_budget,
    checked_dataset,
    checked_runs,
    checked_scales,
    run_generators,
)
from dponline.stochastic.samples import squared_loss_constants

__all__ = ["BLOCK", "NoisySGDCalibrator", "noisy_sgd"]

#: Steps whose sample indices and noise are drawn at once (the RNG stream depends on it).
BLOCK = 2048
#: Largest (steps, runs, scales, d) work buffer, in floats (16 MiB).
_CHUNK_FLOATS = 2**21


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

    Returns
    -------
    BaselineFit with ``theta`` the averaged iterates, shape ``(runs, len(step_scales), d)``.
    """
    budget = checked_budget(budget)
    eps, delta = (math.inf, math.nan) if budget is None else (budget.epsilon, budget.delta)
    r = float(radius)
    if not (math.isfinite(r) and r > 0):
        raise ValueError(f"radius must be finite and positive, got {radius!r}")
    xs, ys = checked_dataset(x, y, q=1.0, x_bound=x_bound, y_bound=y_bound, clip=clip)
    n, d = xs.shape
    runs = checked_runs(runs)
    scales = checked_scales(step_scales)
    if steps is None:
        total = n * n
    elif isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    else:
        total = int(steps)

    lipschitz, _ = squared_loss_constants(float(x_bound), float(y_bound), r)  # l2 bound, q = 1
    diameter = 2.0 * r * math.sqrt(d)
    sens = 2.0 * lipschitz  # replace-one l2 sensitivity of one gradient
    privacy = None
    if budget is None:
        sigma = 0.0
        eta = diameter / (lipschitz * n * math.sqrt(n))
    else:
        eta = diameter / (
            lipschitz * n * max(math.sqrt(n), math.sqrt(d * math.log(1 / delta)) / eps)
        )
        cal = calibrate(NoisySGDCalibrator(n, total, lipschitz), budget)
        sigma, privacy = cal.noise, cal.guarantee

    etas = eta * scales
    theta = _run(xs, ys, r, sigma, etas, total, run_generators(rng, runs))
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
    return BaselineFit(theta=theta, privacy=privacy, parameters=params)


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
        g = budget.prove(proven, budget.delta, how, stacklevel=5)
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
    """The SGD loop, vectorised over (runs, scales); returns the averaged iterates.

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
    chunk = max(1, min(BLOCK, _CHUNK_FLOATS // (runs * n_scales * d)))
    eta_col = etas[None, None, :, None]
    hist = np.zeros((chunk + 1, runs, n_scales, d))  # hist[0]: iterate before the chunk
    inner = np.empty((runs, n_scales, 1))
    step = np.empty((runs, n_scales, d))
    upper = np.full((runs, n_scales, d), radius)
    lower = -upper
    acc = np.zeros((runs, n_scales, d))
    xg = np.empty((BLOCK, runs, d))
    yg = np.empty((BLOCK, runs, 1))
    zg = np.zeros((runs, BLOCK, d))  # run-major so that each run's draw fills a contiguous slab
    base = np.empty((BLOCK, runs, d))
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
