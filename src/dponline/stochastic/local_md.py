"""LocalMD: the localised noisy mirror descent of Asi, Feldman, Koren & Talwar (ICML 2021,
"Private stochastic convex optimization: optimal rates in l1 geometry"), Algorithm 6
(localisation) around Algorithm 5 (noisy stochastic mirror descent), the second 1 < p <= 2
baseline of Han et al. Appendix C (Han et al. report that it does not converge in their runs),
for the squared loss f(theta; x, y) = (<x, theta> - y)^2 over the l_p ball of radius r.

The schedule (as summarised in ``notes/streaming-sco-baselines.md``), with the samples in a random
order drawn per run (independent of the data):

* k = floor(log2 n) phases; phase i = 1..k gets its own n_i = floor(n / 2^i) samples (disjoint
  from the other phases'), epsilon_i = epsilon / 2^i, step eta_i = eta / 16^i, batch
  b_i = min(n_i, ceil(max(sqrt(n_i / max(1, ln d)), sqrt(d / epsilon_i)))) (``ln d`` floored at 1
  so that d <= 2 is defined; without noise the second term is dropped) and
  T_i = ceil(n_i^2 / b_i^2) steps;
* phase i runs Algorithm 5 from its start x_i (x_1 = 0): T_i steps, each on a batch of b_i of its
  n_i samples drawn uniformly without replacement, with the mirror map
  h_i(w) = ||w - x_i||_p^2 / (2 (p - 1)) (1-strongly convex in l_p for 1 < p <= 2),
  constrained to the l_p ball of radius R_i = M / 2^i (M = 2r the diameter) around x_i
  intersected with the domain; the phase outputs its average iterate, the next start;
* the output is the last phase's average.

eta = (M / L0) min(1 / sqrt(n), epsilon / sqrt(d log(1/delta))) (the usual mirror-descent step
for an l_q-Lipschitz loss on a set of l_p diameter M, with the noise term of noisy SGD; the notes
give only the schedule eta_i = eta / 16^i), times each learning-rate scale factor.

The mirror step. With z the dual point, h_i's gradient at w is grad h(w - x_i) and its conjugate's
gradient is grad h*(z) = (p - 1) ||z||_q^(2-q) sign(z) |z|^(q-1) (h* = (p-1) ||.||_q^2 / 2), so the
unconstrained step is w = x_i + grad h*(grad h(w_t - x_i) - eta_i g_t). Its Bregman projection onto
{||w - x_i||_p <= R_i} is *exactly* the radial rescaling of w - x_i to norm R_i (h depends on
||w - x_i||_p only, and for a fixed norm rho the linear term is maximised by the unconstrained
direction, leaving a 1-D problem in rho). If that point lies outside the domain ||w||_p <= r we
move it along the segment towards x_i onto the domain's boundary (bisection): a feasible point in
the intersection, but *not* the exact Bregman projection onto the intersection in that case.
Because both corrections rescale w - x_i, the dual point is rescaled by the same factor (grad h
is 1-homogeneous), so the iteration runs entirely in the dual.

Constants. Samples satisfy ``||x||_q <= X``, ``|y| <= Y`` (q = p/(p-1) >= 2); gradients have
||.||_q <= L0 = 2 (X r + Y) X and ||.||_2 <= G = d^(1/2-1/q) L0, so the paper's clipping is the
identity on valid inputs and is not executed.

Privacy (datasets differing in one sample, every noisy gradient released). The phases use
disjoint samples, so they compose in parallel: the run is (max_i epsilon'_i, delta)-DP when
phase i is (epsilon'_i, delta)-DP given the earlier phases. A step of phase i adds
N(0, sigma_i^2 I_d) to the mean gradient of a uniform b_i-subset of the phase's n_i samples
(replace-one l2 sensitivity 2 G / b_i): a subsampled Gaussian with noise multiplier
sigma_i b_i / (2 G). Each sample is thus in T_i b_i / n_i = n_i / b_i steps on average; the T_i
steps are accounted with Renyi DP for sampling without replacement under replace-one neighbours
(Wang, Balle & Kasiviswanathan 2019, Thm 27; dp_accounting), or exactly as one Gaussian mechanism
when b_i = n_i (:func:`~dponline.privacy.accounting.subsampled_gaussian_epsilon`).

* ``calibration="paper"``: the notes do not give Algorithm 5's noise constant; we use noisy SGD's
  (Bassily et al. 2020) for a mean over b_i samples at epsilon_i,
  sigma_i = sqrt(8 log(1/delta)) G / (b_i epsilon_i); the guarantee is what it proves.
* ``calibration="tight"`` (default): the same schedule (batch sizes use epsilon_i), and in every
  phase the least sigma_i whose accounted epsilon is <= epsilon: with parallel composition each
  phase may spend the whole budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dponline.domains.lp_ball import LpBall, dual_exponent
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

__all__ = ["LocalMDCalibrator", "Phase", "local_md", "local_md_schedule"]

#: Bisection steps for the move onto the domain boundary (relative precision 2^-50).
_BISECTIONS = 50


@dataclass(frozen=True)
class Phase:
    """Phase i of Algorithm 6: its samples, privacy parameter, step factor, batch, step count
    and constraint radius (the step factor multiplies the base eta)."""

    index: int
    samples: int
    epsilon: float
    step_factor: float
    batch: int
    steps: int
    radius: float


def local_md_schedule(n: int, d: int, epsilon: float, diameter: float) -> list[Phase]:
    """The phases of Algorithm 6 for n samples in dimension d (``epsilon = inf``: no noise)."""
    k = max(1, int(n).bit_length() - 1)  # floor(log2 n), exactly
    log_d = max(1.0, math.log(d))
    phases = []
    for i in range(1, k + 1):
        n_i = n // 2**i
        if n_i < 1:
            break
        eps_i = epsilon / 2**i
        want = math.sqrt(n_i / log_d)
        if math.isfinite(eps_i):
            want = max(want, math.sqrt(d / eps_i))
        b_i = min(n_i, math.ceil(want))
        phases.append(
            Phase(
                index=i,
                samples=n_i,
                epsilon=eps_i,
                step_factor=16.0**-i,
                batch=b_i,
                steps=math.ceil(n_i**2 / b_i**2),
                radius=diameter / 2**i,
            )
        )
    return phases


def local_md(
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
) -> BaselineFit:
    """Localised noisy mirror descent (Asi et al. 2021, Algorithms 6 and 5) over the l_p ball.

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
        Factors multiplying eta.
    runs:
        Independent runs; run k is the same for a given seed whatever ``runs`` and
        ``step_scales`` are (its scales share its samples and noise).

    Returns
    -------
    BaselineFit with ``theta`` the last phase's average iterates, shape
    ``(runs, len(step_scales), d)``.
    """
    budget = checked_budget(budget)
    eps, delta = (math.inf, math.nan) if budget is None else (budget.epsilon, budget.delta)
    p = float(p)
    if not (1.0 < p <= 2.0):
        raise ValueError(f"LocalMD is for 1 < p <= 2, got p = {p!r}")
    q = dual_exponent(p)
    xs, ys = checked_dataset(x, y, q=q, x_bound=x_bound, y_bound=y_bound, clip=clip, min_samples=2)
    n, d = xs.shape
    ball = LpBall(d, p, float(radius))
    runs = checked_runs(runs)
    scales = checked_scales(step_scales)
    lipschitz, _ = squared_loss_constants(float(x_bound), float(y_bound), ball.radius)
    g2 = d ** (0.5 - 1.0 / q) * lipschitz  # l_2 bound of a gradient
    diameter = ball.diameter()
    phases = local_md_schedule(n, d, eps, diameter)
    if math.isinf(eps):
        eta = diameter / lipschitz / math.sqrt(n)
    else:
        eta = (diameter / lipschitz) * min(
            1 / math.sqrt(n), eps / math.sqrt(d * math.log(1 / delta))
        )
    params: dict[str, float] = {
        "phases": float(len(phases)),
        "eta": eta,
        "lipschitz_lq": lipschitz,
        "gradient_bound_l2": g2,
        "diameter_lp": diameter,
    }
    for s in scales:
        params[f"eta@{s:g}"] = float(eta * s)
    sigmas = [0.0] * len(phases)
    privacy = None
    if budget is not None:
        cal = calibrate(LocalMDCalibrator(tuple(phases), g2), budget)
        sigmas, proofs = cal.noise
        privacy = cal.guarantee
        for ph, sig, e in zip(phases, sigmas, proofs, strict=True):
            params[f"phase{ph.index}.epsilon_proven"] = float(e)
            params[f"phase{ph.index}.sigma"] = float(sig)
    for ph in phases:
        params[f"phase{ph.index}.samples"] = float(ph.samples)
        params[f"phase{ph.index}.batch"] = float(ph.batch)
        params[f"phase{ph.index}.steps"] = float(ph.steps)
        params[f"phase{ph.index}.radius"] = float(ph.radius)
        params[f"phase{ph.index}.step_factor"] = float(ph.step_factor)

    theta = np.zeros((runs, scales.size, d))
    for k, g in enumerate(run_generators(rng, runs)):
        theta[k] = _one_run(xs, ys, ball, g, phases, sigmas, eta * scales)
    return BaselineFit(theta=theta, privacy=privacy, parameters=params)


@dataclass(frozen=True)
class LocalMDCalibrator:
    """The Gaussian sigma of each phase of LocalMD (module docstring) for gradients of l_2 norm
    at most ``g2``; phases use disjoint samples, so the run has the weakest phase's guarantee
    (parallel composition). ``Calibration.noise`` is ``(sigma per phase, epsilon per phase)``.

    ``paper``: sigma_i = sqrt(8 log(1/delta)) G / (b_i epsilon_i), epsilon_i = epsilon / 2^i
    (noisy SGD's constant for a batch mean); ``tight``: per phase the least sigma_i whose
    RDP-accounted epsilon is at most the request.
    """

    phases: tuple[Phase, ...]
    g2: float

    def _answer(self, budget: PrivacyBudget, sigmas: list[float], how: str) -> Calibration:
        proofs = []
        for ph, sigma in zip(self.phases, sigmas, strict=True):
            sens = 2.0 * self.g2 / ph.batch
            kw = dict(population=ph.samples, sample=ph.batch, steps=ph.steps, delta=budget.delta)
            proofs.append(subsampled_gaussian_epsilon(sigma / sens, **kw))
        worst = int(np.argmax(proofs))
        how += (
            f"; phases on disjoint samples (parallel composition: the max over phases, here "
            f"phase {self.phases[worst].index}); within a phase, T_i subsampled Gaussian steps "
            "(b_i of n_i without replacement, l2 sensitivity 2 G / b_i) accounted by RDP "
            "(dp_accounting, REPLACE_ONE), or exactly as one Gaussian when b_i = n_i"
        )
        g = budget.prove(max(proofs), budget.delta, how, stacklevel=5)
        return Calibration((sigmas, proofs), g, budget.calibration, "LocalMD")

    def paper(self, budget: PrivacyBudget) -> Calibration:
        log_term = math.log(1 / budget.delta)
        sigmas = [math.sqrt(8 * log_term) * self.g2 / (ph.batch * ph.epsilon) for ph in self.phases]
        how = (
            "paper: sigma_i = sqrt(8 log(1/delta)) G / (b_i epsilon_i) with epsilon_i = "
            "epsilon / 2^i (noisy SGD's constant for a batch mean)"
        )
        return self._answer(budget, sigmas, how)

    def tight(self, budget: PrivacyBudget) -> Calibration:
        sigmas = []
        for ph in self.phases:
            kw = dict(population=ph.samples, sample=ph.batch, steps=ph.steps, delta=budget.delta)
            sigmas.append(2.0 * self.g2 / ph.batch * least_noise_multiplier(budget.epsilon, **kw))
        how = "tight: per phase the least sigma_i whose accounted epsilon is <= epsilon"
        return self._answer(budget, sigmas, how)


def conjugate_gradient(z: np.ndarray, p: float) -> np.ndarray:
    """grad h*(z) = (p - 1) ||z||_q^(2-q) sign(z) |z|^(q-1) for h = ||.||_p^2 / (2 (p - 1)),
    row by row (0 at z = 0), computed as (p - 1) ||z||_q sign(z) (|z| / ||z||_q)^(q-1)."""
    q = dual_exponent(p)
    a = np.abs(z)
    m = a.max(axis=-1, keepdims=True)
    safe = np.where(m > 0, m, 1.0)
    ratio = a / safe
    nq = (ratio**q).sum(axis=-1, keepdims=True) ** (1.0 / q)  # ||z||_q / m (1 at z = 0)
    nq = np.where(m > 0, nq, 1.0)
    out = (p - 1.0) * m * nq * np.sign(z) * (ratio / nq) ** (q - 1.0)
    return np.where(m > 0, out, 0.0)


def _one_run(
    xs: np.ndarray,
    ys: np.ndarray,
    ball: LpBall,
    gen: np.random.Generator,
    phases: list[Phase],
    sigmas: list[float],
    etas: np.ndarray,
) -> np.ndarray:
    """All phases of one run at every scale (rows of (S, d) arrays)."""
    n, d = xs.shape
    p = ball.p
    q = dual_exponent(p)
    order = gen.permutation(n)
    start = np.zeros((etas.size, d))
    used = 0
    for ph, sigma in zip(phases, sigmas, strict=True):
        own = order[used : used + ph.samples]
        used += ph.samples
        noise = sigma * gen.standard_normal((ph.steps, d)) if sigma > 0 else None
        step = (etas * ph.step_factor)[:, None]
        dual = np.zeros_like(start)
        theta = start.copy()
        total = np.zeros_like(start)
        for t in range(ph.steps):
            if ph.batch == ph.samples:
                batch = own
            else:
                batch = own[gen.choice(ph.samples, size=ph.batch, replace=False)]
            xb, yb = xs[batch], ys[batch]
            grad = (2.0 / ph.batch) * (theta @ xb.T - yb) @ xb
            if noise is not None:
                grad = grad + noise[t]
            dual = dual - step * grad
            u = conjugate_gradient(dual, p)
            # ||grad h*(z)||_p = (p - 1) ||z||_q: Bregman projection onto ||w - x_i||_p <= R_i
            rho = (p - 1.0) * LpBall(d, q).norm(dual)[:, None]
            factor = np.where(rho > ph.radius, ph.radius / np.where(rho > 0, rho, 1.0), 1.0)
            factor = factor * _into_domain(start, factor * u, ball)
            dual = factor * dual
            theta = start + factor * u
            total += theta
        start = total / ph.steps
    return start


def _into_domain(start: np.ndarray, u: np.ndarray, ball: LpBall) -> np.ndarray:
    """The largest t in [0, 1] (to 2^-50) with ||start + t u||_p <= r, row by row (1 where the
    point is already inside; start is inside the domain)."""
    out = np.ones((u.shape[0], 1))
    outside = ball.norm(start + u) > ball.radius
    if not outside.any():
        return out
    s, w = start[outside], u[outside]
    lo, hi = np.zeros((s.shape[0], 1)), np.ones((s.shape[0], 1))
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        inside = (ball.norm(s + mid * w) <= ball.radius)[:, None]
        lo = np.where(inside, mid, lo)
        hi = np.where(inside, hi, mid)
    out[outside] = lo
    return out
