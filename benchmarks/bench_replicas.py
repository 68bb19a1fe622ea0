"""Cost of replicas: R independent seeds of one learner in one vectorised run.

For every registered learner whose step is array arithmetic (DP-FTRL and its non-private
counterpart), run T rounds of prediction with expert advice over N experts with R = 1 and with
R = 100 replicas and report the wall-clock time of each and their ratio (100 independent runs
would cost 100x). Usage::

    python benchmarks/bench_replicas.py [--T 100000] [--N 10] [--R 100]

Results go to stdout and ``bench-results/replicas.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from dponline.online import DPFTRL
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import LossVectorFeedback

SETTINGS = [
    ("ftrl (non-private)", dict(budget=None)),
    ("dp-ftrl laplace tight (honaker)", dict(budget=PrivacyBudget(1.0), noise="laplace")),
    ("dp-ftrl gaussian tight (honaker)", dict(budget=PrivacyBudget(1.0, 1e-6), noise="gaussian")),
    (
        "dp-ftrl laplace paper (padded tree)",
        dict(budget=PrivacyBudget(1.0, 0.0, "paper", allow_weaker=True), noise="laplace"),
    ),
]


def run(horizon: int, n: int, replicas: int, options: dict, losses: np.ndarray) -> float:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = DPFTRL(n, horizon, replicas=replicas, rng=0, **options)
    start = time.perf_counter()
    for t in range(horizon):
        learner.act()
        learner.observe(LossVectorFeedback(losses[t]))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=100_000)
    parser.add_argument("--N", type=int, default=10)
    parser.add_argument("--R", type=int, default=100)
    parser.add_argument("--out", default="bench-results/replicas.json")
    args = parser.parse_args()
    losses = np.random.default_rng(0).uniform(size=(args.T, args.N))
    rows = []
    print(f"T = {args.T}, N = {args.N} experts; seconds for R = 1 and R = {args.R} replicas")
    print(f"{'learner':38s} {'R=1 s':>8s} {'R=' + str(args.R) + ' s':>9s} {'ratio':>7s}")
    for name, options in SETTINGS:
        one = run(args.T, args.N, 1, options, losses)
        many = run(args.T, args.N, args.R, options, losses)
        rows.append(
            {
                "learner": name,
                "T": args.T,
                "N": args.N,
                "R": args.R,
                "seconds_R1": one,
                "seconds_R": many,
                "ratio": many / one,
            }
        )
        print(f"{name:38s} {one:8.2f} {many:9.2f} {many / one:7.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
