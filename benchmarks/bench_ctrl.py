"""CTRL (Agarwal, Kale, Singh & Thakurta 2023, Algorithm 1): the cost of a step.

Logistic losses in the unit ball of R^10 (:func:`dponline.environments.smooth_convex.
smooth_convex`), T = 1e4, one replica, one core (BLAS limited to one thread), eta = 0.05,
log Phi = 0.002, p = T^{-1/3} (Theorem 6's forced rate: about 460 switches). Two noise scales:
sigma = 50 and the sigma of Theorem 8 at (epsilon, delta) = (1, 1e-6),
max(G sqrt(T / d), 1e3 G T^{1/3} sqrt(d log(120 T / delta)) / epsilon), with G the stream's
declared Lipschitz constant. Reports the mean step (the issue's target: under 1 ms), the mean
lazy step (x_t kept) and the mean switching step (a Newton solve on all losses so far).

Usage::

    python benchmarks/bench_ctrl.py [--json PATH]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core: before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dponline.environments.smooth_convex import smooth_convex  # noqa: E402
from dponline.online.ctrl import CTRL  # noqa: E402


def run(sigma: float, horizon: int = 10_000, dim: int = 10) -> dict[str, float]:
    env = smooth_convex(horizon, np.random.default_rng(0), dim=dim)
    learner = CTRL(
        env.domain,
        horizon,
        eta=0.05,
        sigma=sigma,
        log_phi=0.002,
        p=horizon ** (-1 / 3),
        lipschitz=env.lipschitz,
        smoothness=env.smoothness,
        glm_link=env.link,
        rng=1,
    )
    lazy = switching = 0.0
    n_lazy = 0
    for t in range(horizon):
        feedback, _ = env.round(t, learner.act())
        before = int(learner.switches[0])
        start = time.perf_counter()
        learner.observe(feedback)
        spent = time.perf_counter() - start
        if int(learner.switches[0]) == before:
            lazy += spent
            n_lazy += 1
        else:
            switching += spent
    switches = int(learner.switches[0])
    return {
        "sigma": sigma,
        "mean_step_ms": 1e3 * (lazy + switching) / horizon,
        "lazy_step_ms": 1e3 * lazy / max(n_lazy, 1),
        "switch_step_ms": 1e3 * switching / max(switches, 1),
        "switches": switches,
        "newton_iterations_per_solve": learner.newton_iterations / (switches + 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    horizon, dim, delta = 10_000, 10, 1e-6
    g = smooth_convex(10, np.random.default_rng(0), dim=dim).lipschitz
    theorem8 = max(
        g * math.sqrt(horizon / dim),
        1e3 * g * horizon ** (1 / 3) * math.sqrt(dim * math.log(120 * horizon / delta)),
    )
    print(f"CTRL step, d = {dim}, T = {horizon}, logistic losses, one core")
    head = ("sigma", "mean ms", "lazy ms", "switch ms", "switches", "Newton")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (10, 8, 8, 10, 9, 7), strict=True)))
    rows = []
    for sigma in (50.0, theorem8):
        r = run(sigma, horizon, dim)
        rows.append(r)
        print(
            f"{sigma:>10.4g} {r['mean_step_ms']:>8.3f} {r['lazy_step_ms']:>8.3f} "
            f"{r['switch_step_ms']:>10.2f} {r['switches']:>9} "
            f"{r['newton_iterations_per_solve']:>7.1f}"
        )
    print("target: mean step under 1 ms; Newton = iterations per solve")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
