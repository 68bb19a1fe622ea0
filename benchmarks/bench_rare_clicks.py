"""Private K-armed bandits at click rates under 3%: the Open Bandit Dataset's 80 items as
Bernoulli arms at their measured click rates, at epsilon 1, 0.5 and 0.1, against the non-private
references, uniform play and the asymptotic lower bounds.

    python benchmarks/bench_rare_clicks.py [--quick] [--replicas R] [--json FILE]

The instance of ``open_bandit_arms`` (positions pooled: the best item clicks 2.6% of the time,
51 of the 80 never clicked in the log, a uniformly random item loses 0.0225 clicks a round),
T = 1e5 (``--quick``: 2e4), 50 replicas; every private learner of the K-armed suite at each
epsilon and the non-private references once. Printed: each learner's mean pseudo-regret at T
(expected clicks lost against the best item) with its 95% normal interval, uniform play's
(exact) and C log T for the Lai-Robbins coefficient and for the private one at each epsilon
(``dponline.bandits.lower_bounds``; asymptotic, for orientation only).

What it shows: with means this small, kl(mu_a, mu*) is at most about the gap Delta_a, the
size of the private lower bound's epsilon-term at epsilon = 1, so the private coefficient is
close to Lai-Robbins' (1.25 times on these items; 6.8 times at epsilon = 0.1) and most of
the cost of learning here is the data's, not the privacy's. Ratios (``--json`` writes them
under ``ratios``): ``best_private_vs_klucb`` and ``best_private_vs_best_non_private`` at
each epsilon (suffixes ``_eps0.5``, ``_eps0.1``), and ``best_private_vs_uniform``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

# run as a script: this folder is on sys.path, and the K-armed table's helpers are shared
from bench_private_bandits import NON_PRIVATE, PRIVATE, interval, run
from dponline.bandits.lower_bounds import lai_robbins_coefficient, lower_bound_coefficients
from dponline.environments.open_bandit import open_bandit_arms

EPSILONS = (1.0, 0.5, 0.1)


def row(name: str, horizon: int, epsilon: float | None, replicas: int) -> dict:
    """One learner's mean regret at ``horizon`` on the Open Bandit items, printed."""
    env = open_bandit_arms(horizon, rng=7)
    regret, seconds = run(name, env, epsilon, replicas)
    mean, half = interval(regret)
    shown = "-" if epsilon is None else f"{epsilon:g}"
    print(f"{name:<24}{shown:>8}{mean:>11.1f}{half:>9.1f}{seconds:>9.1f}", flush=True)
    return {"regret": mean, "half_width": half, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 2e4")
    parser.add_argument("--replicas", type=int, default=50)
    parser.add_argument("--json", type=Path, help="write the table and ratios to this file")
    args = parser.parse_args()
    horizon = 20_000 if args.quick else 100_000
    env = open_bandit_arms(horizon, rng=7)
    means = np.asarray(env.means, dtype=float)
    uniform = horizon * float(means.max() - means.mean())
    print(
        f"Open Bandit items as arms: K = {means.size}, best click rate {means.max():.4f}, mean "
        f"{means.mean():.4f}; T = {horizon}, {args.replicas} replicas"
    )
    print(f"{'learner':<24}{'epsilon':>8}{'regret':>11}{'+-95%':>9}{'seconds':>9}")
    table: dict = {}
    for eps in EPSILONS:
        for name in PRIVATE:
            table[f"{name}@{eps:g}"] = row(name, horizon, eps, args.replicas)
    for name in NON_PRIVATE:
        table[name] = row(name, horizon, None, args.replicas)
    print(f"{'uniform play (exact)':<24}{'-':>8}{uniform:>11.1f}")
    log_t = math.log(horizon)
    floors = {"lai_robbins": lai_robbins_coefficient(means) * log_t}
    for eps in EPSILONS:
        floors[f"private@{eps:g}"] = max(lower_bound_coefficients(means, eps).values()) * log_t
    print(
        "asymptotic lower bounds C log T at T: "
        + ", ".join(f"{k} {v:.1f}" for k, v in floors.items())
    )
    ratios = {}
    best_np = min(table[n]["regret"] for n in NON_PRIVATE)
    for eps in EPSILONS:
        suffix = "" if eps == 1.0 else f"_eps{eps:g}"
        private = {n: table[f"{n}@{eps:g}"]["regret"] for n in PRIVATE}
        best = min(private, key=private.get)
        ratios[f"best_private{suffix}"] = best
        ratios[f"best_private_vs_klucb{suffix}"] = private[best] / table["kl-ucb"]["regret"]
        ratios[f"best_private_vs_best_non_private{suffix}"] = private[best] / best_np
        if eps == 1.0:
            ratios["best_private_vs_uniform"] = private[best] / uniform
    print("\nratios:", json.dumps(ratios, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        out = {"horizon": horizon, "replicas": args.replicas, "uniform": uniform}
        out.update(table=table, lower_bounds=floors, ratios=ratios)
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
