"""Cost of replicas and of the oblivious fast path: R independent seeds of DP-FTRL in one run.

For DP-FTRL and its non-private counterpart (prediction with expert advice, N experts, T rounds
of a fixed loss matrix), time

* step by step with R = 1 and with R replicas (``act`` / ``observe`` / the environment's
  ``round``, what every learner does: the time before the fast path), and
* the fast path with R replicas (``play_block`` and ``block_losses``, what the runner does on
  an oblivious linear stream: the counter's noise for a block of rounds at once).

The regret column is the mean over replicas of each path (they draw different noise, so they
agree only in distribution; tests/online/test_play_block.py tests that).

Then the fast path twice per learner, in one run: with dponline's default thread settings
(:mod:`dponline.threads`) and inside ``threadpoolctl.threadpool_limits(1)`` (one BLAS and
OpenMP thread), and their ratio. ``--busy N`` runs this comparison beside N busy processes
(pure-Python spin loops the bench starts and stops; each also exits on its own once the bench
is gone) and skips the step-by-step columns. To time the library's behaviour without its
limits, set ``DPONLINE_BLAS_THREADS=off``.

``--sweep`` times instead the BLT's fast path at several sizes (N experts x R replicas) with one
BLAS thread and with one per core, dponline's own limits off: the measurement behind the
default of one thread in the block paths. Usage::

    python benchmarks/bench_replicas.py [--T 100000] [--N 10] [--R 100] [--busy 2] [--only blt]
    python benchmarks/bench_replicas.py --sweep [--repeat 3]

Results go to stdout, ``bench-results/replicas.json`` (the first table) and
``bench-results/replicas-threads.json`` (the comparison).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from dponline import threads
from dponline.environments.experts import ExpertsEnvironment
from dponline.online import DPFTRL
from dponline.privacy.budget import PrivacyBudget

SETTINGS = [
    ("ftrl (non-private)", dict(budget=None)),
    ("dp-ftrl laplace tight", dict(budget=PrivacyBudget(1.0), noise="laplace")),
    ("dp-ftrl gaussian tight", dict(budget=PrivacyBudget(1.0, 1e-6), noise="gaussian")),
    # the BLT's block products are BLAS matrix products (the thread comparison's case)
    (
        "dp-ftrl gaussian blt",
        dict(budget=PrivacyBudget(1.0, 1e-6), noise="gaussian", mechanism="blt"),
    ),
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


#: (N, R) of ``--sweep``
SWEEP = [(10, 1), (10, 10), (10, 100), (10, 1000), (100, 100), (100, 1000)]


def sweep(args: argparse.Namespace) -> list[dict]:
    """The BLT's fast path at the sizes of :data:`SWEEP`, one BLAS thread against one per core
    (alternating, least of ``--repeat``); T is cut so that each run draws about 2^26 numbers."""
    cores = threads.cpu_count()
    threads.set_blas_threads("off")  # the threads under test are set here
    print(f"BLT fast path, 1 against {cores} BLAS threads; dponline's limits off")
    print(f"{'N':>4s} {'R':>5s} {'T':>7s} {'1 thread s':>10s} {f'{cores} threads s':>11s} ratio")
    options = dict(budget=PrivacyBudget(1.0, 1e-6), noise="gaussian", mechanism="blt")
    rows = []
    for n, r in SWEEP:
        horizon = max(2**12, min(2**17, 2**26 // (n * r)))
        env = ExpertsEnvironment(np.random.default_rng(0).uniform(size=(horizon, n)))
        block = 1
        while 2 * block * r * n <= 2**20:  # the runner's block (8 MiB of decisions)
            block *= 2
        times: dict[int, list[float]] = {1: [], cores: []}
        for i in range(args.repeat):
            for count in (1, cores) if i % 2 == 0 else (cores, 1):
                learner = build(horizon, n, r, options)
                with threadpool_limits(count):
                    start = time.perf_counter()
                    for t in range(0, horizon, block):
                        env.block_losses(t, learner.play_block(env.losses[t : t + block]))
                    times[count].append(time.perf_counter() - start)
        one, many = min(times[1]), min(times[cores])
        rows.append({"N": n, "R": r, "T": horizon, "seconds_1": one, "seconds_cores": many})
        print(f"{n:4d} {r:5d} {horizon:7d} {one:10.3f} {many:11.3f} {many / one:5.2f}", flush=True)
    threads.set_blas_threads(None)
    return rows


#: a busy process: spins in pure Python and exits once its parent (the bench) is gone
SPIN = """
import os
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(1_000_000):
        pass
"""


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[list[subprocess.Popen]]:
    """``count`` spinning processes for the duration of the block, stopped (and reaped) at
    its end, also on an error or Ctrl-C."""
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(count):
            procs.append(subprocess.Popen([sys.executable, "-c", SPIN]))
        time.sleep(0.5)  # let them start spinning
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def blas_threads_now() -> str:
    """The BLAS libraries' thread counts outside any limit, e.g. ``openblas 2, openblas 2``."""
    info = [i for i in threadpool_info() if i["user_api"] == "blas"]
    return ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in info) or "none found"


def compare_threads(env: ExpertsEnvironment, args: argparse.Namespace) -> list[dict]:
    """The fast path of every setting with the default thread settings and with one BLAS
    thread, alternating, ``--repeat`` times each (the least time is kept)."""
    setting = os.environ.get(threads.ENV_VAR, "unset")
    block = threads.blas_threads() or "the libraries' own"
    print(
        f"\nfast path, R = {args.R}, beside {args.busy} busy processes; {threads.cpu_count()} "
        f"cores; BLAS outside dponline's limits: {blas_threads_now()}; "
        f"{threads.ENV_VAR}={setting}; block paths use "
        f"{block} BLAS thread(s)"
    )
    print(f"{'learner':24s} {'counter':19s} {'default s':>9s} {'1 thread s':>10s} {'ratio':>6s}")
    rows = []
    with busy_processes(args.busy):
        for name, options in args.settings:
            default, one = [], []
            counter = ""
            for _ in range(args.repeat):
                learner = build(args.T, args.N, args.R, options)
                counter = learner.counter.name if learner.budget is not None else "exact sums"
                default.append(fast_path(learner, env)[0])
                with threadpool_limits(1):
                    one.append(fast_path(build(args.T, args.N, args.R, options), env)[0])
            row = {
                "learner": name,
                "counter": counter,
                "T": args.T,
                "N": args.N,
                "R": args.R,
                "busy": args.busy,
                "cores": threads.cpu_count(),
                threads.ENV_VAR: setting,
                "seconds_default": min(default),
                "seconds_one_thread": min(one),
                "ratio": min(default) / min(one),
                "load_average": list(os.getloadavg()),
            }
            rows.append(row)
            print(
                f"{name:24s} {counter:19s} {row['seconds_default']:9.2f} "
                f"{row['seconds_one_thread']:10.2f} {row['ratio']:6.2f}",
                flush=True,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=100_000)
    parser.add_argument("--N", type=int, default=10)
    parser.add_argument("--R", type=int, default=100)
    parser.add_argument(
        "--busy", type=int, default=0, help="busy processes beside the thread comparison"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each thread setting")
    parser.add_argument(
        "--only", default="", help="time only the learners whose name contains this text"
    )
    parser.add_argument("--out", default="bench-results/replicas.json")
    parser.add_argument("--threads-out", default="bench-results/replicas-threads.json")
    parser.add_argument(
        "--sweep", action="store_true", help="only: 1 thread against 1 per core, by size"
    )
    args = parser.parse_args()
    if args.busy < 0 or args.repeat < 1:
        parser.error(f"--busy must be >= 0 and --repeat >= 1, got {args.busy} and {args.repeat}")
    args.settings = [(name, options) for name, options in SETTINGS if args.only in name]
    if not args.settings:
        parser.error(f"--only {args.only!r} matches none of {[name for name, _ in SETTINGS]}")
    if args.sweep:
        rows = sweep(args)
        out = Path(args.threads_out).with_name("replicas-sweep.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rows, indent=2))
        return
    losses = np.random.default_rng(0).uniform(size=(args.T, args.N))
    env = ExpertsEnvironment(losses)
    if args.busy == 0:
        step_table(env, args)
    rows = compare_threads(env, args)
    out = Path(args.threads_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))


def step_table(env: ExpertsEnvironment, args: argparse.Namespace) -> None:
    """The first table: step by step (R = 1 and R replicas) against the fast path."""
    losses = env.losses
    best = float(losses.sum(axis=0).min())
    rows = []
    r = args.R
    print(
        f"T = {args.T}, N = {args.N} experts; seconds (step by step: R = 1 and R = {r}; fast path)"
    )
    head = f"{'learner':24s} {'counter':19s} {'R=1 s':>7s} {f'R={r} s':>8s} {'fast s':>7s}"
    print(f"{head} {'speed-up':>8s} {'regret step':>11s} {'regret fast':>11s}")
    for name, options in args.settings:
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
