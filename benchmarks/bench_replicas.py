"""Cost of replicas and of the oblivious fast path: R independent seeds of DP-FTRL in one run.

For DP-FTRL and its non-private counterpart (prediction with expert advice, N experts, T rounds
of a fixed loss matrix), time

* step by step with R = 1 and with R replicas (``act`` / ``observe`` / the environment's
  ``round``, what every learner does: the time before the fast path), and
* the fast path with R replicas (``play_block`` and ``block_losses``, what the runner does on
  an oblivious linear stream: the counter's noise for a block of rounds at once).

The regret column is the mean over replicas of each path (they draw different noise, so they
agree only in distribution; tests/online/test_play_block.py tests that). Usage::

    python benchmarks/bench_replicas.py [--T 100000] [--N 10] [--R 100]

Results go to stdout and ``bench-results/replicas.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from dponline.environments.experts import ExpertsEnvironment
from dponline.online import DPFTRL
from dponline.privacy.budget import PrivacyBudget

SETTINGS = [
    ("ftrl (non-private)", dict(budget=None)),
    ("dp-ftrl laplace tight", dict(budget=PrivacyBudget(1.0), noise="laplace")),
    ("dp-ftrl gaussian tight", dict(budget=PrivacyBudget(1.0, 1e-6), noise="gaussian")),
    (
        "dp-ftrl laplace paper",
        dict(budget=PrivacyBudget(1.0, 0.0, "paper", allow_weaker=True), noise="laplace"),
    ),
]

#: rounds per play_block call (the runner's block for R = 100, N = 10)
BLOCK = 1024


def build(horizon: int, n: int, replicas: int, options: dict) -> DPFTRL:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPFTRL(n, horizon, replicas=replicas, rng=0, **options)


def step_by_step(learner: DPFTRL, env: ExpertsEnvironment) -> tuple[float, np.ndarray]:
    cumulative = np.zeros(learner.replicas)
    start = time.perf_counter()
    for t in range(env.horizon):
        feedback, loss = env.round(t, learner.act())
        learner.observe(feedback)
        cumulative += loss
    return time.perf_counter() - start, cumulative


def fast_path(learner: DPFTRL, env: ExpertsEnvironment) -> tuple[float, np.ndarray]:
    cumulative = np.zeros(learner.replicas)
    start = time.perf_counter()
    for t in range(0, env.horizon, BLOCK):
        actions = learner.play_block(env.losses[t : t + BLOCK])
        cumulative += env.block_losses(t, actions).sum(axis=0)
    return time.perf_counter() - start, cumulative


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=100_000)
    parser.add_argument("--N", type=int, default=10)
    parser.add_argument("--R", type=int, default=100)
    parser.add_argument("--out", default="bench-results/replicas.json")
    args = parser.parse_args()
    losses = np.random.default_rng(0).uniform(size=(args.T, args.N))
    env = ExpertsEnvironment(losses)
    best = float(losses.sum(axis=0).min())
    rows = []
    r = args.R
    print(
        f"T = {args.T}, N = {args.N} experts; seconds (step by step: R = 1 and R = {r}; fast path)"
    )
    head = f"{'learner':24s} {'counter':19s} {'R=1 s':>7s} {f'R={r} s':>8s} {'fast s':>7s}"
    print(f"{head} {'speed-up':>8s} {'regret step':>11s} {'regret fast':>11s}")
    for name, options in SETTINGS:
        one, _ = step_by_step(build(args.T, args.N, 1, options), env)
        learner = build(args.T, args.N, r, options)
        many, loss_step = step_by_step(learner, env)
        fast, loss_fast = fast_path(build(args.T, args.N, r, options), env)
        counter = learner.counter.name if learner.budget is not None else "exact sums"
        row = {
            "learner": name,
            "counter": counter,
            "T": args.T,
            "N": args.N,
            "R": r,
            "seconds_R1": one,
            "seconds_R": many,
            "seconds_fast_R": fast,
            "speedup": many / fast,
            "regret_step": float(loss_step.mean() - best),
            "regret_fast": float(loss_fast.mean() - best),
        }
        rows.append(row)
        print(
            f"{name:24s} {counter:19s} {one:7.2f} {many:8.2f} {fast:7.2f} {many / fast:8.1f} "
            f"{row['regret_step']:11.1f} {row['regret_fast']:11.1f}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
