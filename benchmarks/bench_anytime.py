"""Anytime DP-FTRL (no horizon) against fixed-horizon DP-FTRL: regret at T = 1e5.

    python benchmarks/bench_anytime.py [--quick] [--replicas R] [--json FILE]

Both are DP-FTRL (Agarwal & Singh 2017, Algorithm 1) with Gaussian noise at
(epsilon, delta) = (1, 1e-6), ``tight`` calibration, N = 10 experts, entropic regulariser:

* fixed horizon: built for T, rate sqrt(log N / T), the counter ``tight`` chooses for T (the
  square root factorisation at this size);
* anytime: built with ``horizon=None``, rate sqrt(log N / t) in round t, the anytime counter of
  :func:`dponline.continual.factory.build_counter` (for ``tight`` Gaussian noise the tapered
  square-root factorisation, whose largest variance up to t is within 1.4x of a square root
  built for t: ``dponline mechanisms --anytime``).

Streams (losses fixed in advance; the learners play them in blocks, replicas vectorised):

1. ``stochastic``: the stream of ``bench_agarwal_singh.py``: i.i.d. Bernoulli losses, expert 0
   with mean 0.45 and the others 0.5 (the headline ratio);
2. ``switching_best``: the catalogue's switching stream (the best expert changes 4 times,
   gap 0.2); regret against the best fixed expert can be negative here (a learner that
   follows the switches beats it), so its ratio is informative only.

Printed per stream: the mean regret at T of each learner with its 95% normal interval, the
counter's per-coordinate variance at T, and ``ratio`` = anytime / fixed with a 95% interval
(delta method, independent replicas). ``--json`` writes them (the headline under ``ratio``).
``--quick``: T = 1e4 and 20 replicas (seconds); the full run takes about two minutes of CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

from dponline.environments import stochastic_losses, switching_best_losses
from dponline.online import DPFTRL
from dponline.privacy.budget import PrivacyBudget

N_EXPERTS = 10
BUDGET = PrivacyBudget(1.0, 1e-6)  # tight
BLOCK = 5_000


def interval(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its normal 95% interval."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(1.96 * v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0


def regrets(losses: np.ndarray, horizon: int | None, replicas: int, seed: int) -> dict:
    """Final regret of each replica of Gaussian DP-FTRL (``horizon=None``: anytime) on
    ``losses``, with the counter's variance at T and the seconds it took (construction
    included: the square root draws its noise when a counter is built)."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = DPFTRL(
            N_EXPERTS, horizon, budget=BUDGET, noise="gaussian", replicas=replicas, rng=seed
        )
    total = np.zeros(replicas)
    for s in range(0, len(losses), BLOCK):
        block = losses[s : s + BLOCK]
        total += np.einsum("trn,tn->r", learner.play_block(block), block)
    seconds = time.perf_counter() - start
    regret = total - losses.sum(axis=0).min()
    mean, half = interval(regret)
    return {
        "regret": mean,
        "interval": half,
        "variance_at_T": float(learner.counter.variance(len(losses))),
        "counter": learner.counter.name,
        "seconds": seconds,
        "per_replica": regret,
    }


def compare(name: str, losses: np.ndarray, replicas: int) -> dict:
    horizon = len(losses)
    fixed = regrets(losses, horizon, replicas, seed=1)
    anytime = regrets(losses, None, replicas, seed=2)
    ratio = anytime["regret"] / fixed["regret"]
    rel = math.hypot(anytime["interval"] / anytime["regret"], fixed["interval"] / fixed["regret"])
    print(f"{name}: T = {horizon:,}, N = {N_EXPERTS}, {replicas} replicas, (1, 1e-6) Gaussian")
    for label, r in (("fixed horizon", fixed), ("anytime", anytime)):
        print(
            f"   {label:14s} regret {r['regret']:8.1f} +- {r['interval']:6.1f}   "
            f"variance at T {r['variance_at_T']:9.1f}   {r['counter']}   ({r['seconds']:.1f} s)"
        )
    print(f"   ratio (anytime / fixed) {ratio:.3f} +- {abs(ratio) * rel:.3f}")
    strip = ("per_replica",)
    return {
        "horizon": horizon,
        "fixed": {k: v for k, v in fixed.items() if k not in strip},
        "anytime": {k: v for k, v in anytime.items() if k not in strip},
        "ratio": ratio,
        "ratio_interval": abs(ratio) * rel,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 1e4, 20 replicas")
    parser.add_argument("--replicas", type=int, default=None, help="default 100 (20 quick)")
    parser.add_argument("--json", type=Path, help="write the regrets and ratios to this file")
    args = parser.parse_args()
    horizon = 10_000 if args.quick else 100_000
    replicas = args.replicas or (20 if args.quick else 100)
    streams = {
        "stochastic": stochastic_losses(horizon, np.r_[0.45, np.full(N_EXPERTS - 1, 0.5)], rng=7),
        "switching_best": switching_best_losses(horizon, N_EXPERTS, rng=7),
    }
    out: dict = {"horizon": horizon, "replicas": replicas, "streams": {}}
    for name, losses in streams.items():
        out["streams"][name] = compare(name, losses, replicas)
    out["ratio"] = out["streams"]["stochastic"]["ratio"]
    print(f"\nratio: {out['ratio']:.3f} (target <= 1.3)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
