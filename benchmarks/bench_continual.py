"""Throughput and memory of the continual counters in :mod:`dponline.continual`.

What is measured
----------------
For every mechanism and every cell (d, T) a calibrated counter is built with
``make_counter(name, horizon=T, bounds=Box(0, 1, dim=d), budget=PrivacyBudget(1, 1e-6),
noise="gaussian")`` and fed a stream of inputs drawn uniformly from [0, 1]^d. The inputs are
generated in chunks of at most ~8 MiB, outside the timed region, so the input never dominates
memory and its generation is never timed. Each cell runs two passes:

* a **timing pass** (no tracing): ``time.perf_counter`` around every segment of
  ``max(10, T // 1000)`` consecutive ``counter.step(x)`` calls. ``steps/s`` is the number of
  steps run divided by the summed segment times (the bounds check of ``step`` is included, the
  input generation is not). ``first10`` and ``last10`` are the mean per-step times, in
  microseconds, over the first and the last 10% of the steps run, and ``last/first`` is their
  ratio. For the tree mechanisms the amortised cost of a step is O(d) whatever t is, so the
  ratio should be close to 1 (and the us/step of the same (mechanism, d) should grow at most
  like log T from T = 1e4 to T = 1e6: see the second table). For ``sqrt_factorization`` the
  ratio shows whether its step cost grows with t (an implementation that correlates the noise
  history at every step costs O(t d) at step t; one that precomputes it costs O(d) a step but
  pays at construction, see ``build ms``).
* a **memory pass** under ``tracemalloc``: tracing starts after the input buffer exists, so
  ``peak MiB`` is the peak of everything allocated by building the counter and running its
  steps (persistent state plus the transient arrays of one step), not the input. ``kept MiB``
  is what is still allocated at the end of the pass while the counter is alive (its retained
  memory, including any buffer its arrays are views of), and ``state MiB`` is the size of the
  counter's arrays as saved by ``state_dict()["arrays"]``.
  Tracing slows the steps 2-4x, so this pass runs under its own time budget.

Both passes stop early when their per-cell time budget (``--cell-budget``, ``--mem-budget``)
is used up; the table then shows how many steps were actually run (``steps run`` and
``mem steps``, with ``T`` the horizon the counter was built for) and marks the cell with ``*``.
No number is extrapolated: every figure comes from steps that were run.

``sqrt_factorization`` keeps O(T d) noise values (8 GiB at T = 1e6, d = 1000) and, in its
exact history form, costs O(t d) at step t, so it is only run for T <= ``--sqrt-max-horizon``
(default 1e4); larger cells are listed as skipped.

The JSON also records a SHA-256 prefix of every ``dponline/continual`` source file and the load
average before and after the run: throughput figures are only comparable between runs on the
same code and an otherwise idle machine.

Usage::

    PYTHONPATH=src python benchmarks/bench_continual.py            # full run (~10 min, 2 cores)
    PYTHONPATH=src python benchmarks/bench_continual.py --quick    # T in {1e3, 1e4}, smoke test
    PYTHONPATH=src python benchmarks/bench_continual.py --mechanisms binary_tree honaker

The table is printed on stdout (progress goes to stderr) and all results are written as JSON to
``bench-results/continual.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import platform
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from dponline.continual import ContinualCounter, DoublingCounter, make_counter
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget

ALL_MECHANISMS: tuple[str, ...] = (
    "binary_tree",
    "padded_tree",
    "honaker",
    "sqrt_factorization",
    "blt",
)
FULL_DIMS: tuple[int, ...] = (10, 1000)
FULL_HORIZONS: tuple[int, ...] = (10_000, 1_000_000)
QUICK_HORIZONS: tuple[int, ...] = (1_000, 10_000)
EPSILON = 1.0
DELTA = 1e-6
INPUT_CHUNK_BYTES = 8 * 2**20
MIB = 2**20


@dataclass
class CellResult:
    """One (mechanism, d, T) cell of the benchmark."""

    mechanism: str
    dim: int
    horizon: int
    skipped: str | None = None
    build_seconds: float = math.nan
    steps_run: int = 0
    complete: bool = False
    step_seconds: float = math.nan
    steps_per_second: float = math.nan
    us_per_step: float = math.nan
    first10_us_per_step: float = math.nan
    last10_us_per_step: float = math.nan
    last_over_first: float = math.nan
    window_steps: int = 0
    mem_steps_run: int = 0
    mem_complete: bool = False
    peak_mib: float = math.nan
    kept_mib: float = math.nan
    state_mib: float = math.nan
    wall_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def build_counter(mechanism: str, dim: int, horizon: int, seed: int) -> ContinualCounter:
    counter = make_counter(
        mechanism,
        horizon=horizon,
        bounds=Box(0.0, 1.0, dim=dim),
        budget=PrivacyBudget(EPSILON, DELTA),
        noise="gaussian",
        rng=seed,
    )
    if isinstance(counter, DoublingCounter):  # only for horizon=None, never here
        raise TypeError("expected a fixed-horizon counter")
    return counter


def segment_length(horizon: int) -> int:
    """Steps per timed segment: ~1000 segments over the horizon, at least 10 steps each."""
    return max(10, horizon // 1000)


def chunk_rows(dim: int, horizon: int, seg: int) -> int:
    """Rows of one input chunk: at most ~8 MiB, a whole number of segments, at most T."""
    rows = max(seg, (INPUT_CHUNK_BYTES // (8 * dim)) // seg * seg)
    return min(rows, horizon)


def warm_up(mechanism: str, dim: int) -> None:
    """Run a few steps of a throwaway counter so one-time costs do not land in the first 10%."""
    counter = build_counter(mechanism, dim, 64, seed=12345)
    x = np.full(dim, 0.5)
    for _ in range(64):
        counter.step(x)


def timing_pass(
    result: CellResult, seed: int, budget: float, input_rng: np.random.Generator
) -> None:
    """Build the counter and time its steps segment by segment (no tracing)."""
    dim, horizon = result.dim, result.horizon
    seg = segment_length(horizon)
    rows = chunk_rows(dim, horizon, seg)
    buf = np.empty((rows, dim))

    gc.collect()
    t0 = time.perf_counter()
    counter = build_counter(result.mechanism, dim, horizon, seed)
    result.build_seconds = time.perf_counter() - t0

    step = counter.step
    seg_steps: list[int] = []
    seg_secs: list[float] = []
    done = 0
    start = time.perf_counter()
    out_of_budget = False
    while done < horizon and not out_of_budget:
        n_rows = min(rows, horizon - done)
        input_rng.random(out=buf[:n_rows])  # inputs in [0, 1)^d: inside Box(0, 1)
        lo = 0
        while lo < n_rows:
            hi = min(lo + seg, n_rows)
            s0 = time.perf_counter()
            for i in range(lo, hi):
                step(buf[i])
            s1 = time.perf_counter()
            n = hi - lo
            seg_steps.append(n)
            seg_secs.append(s1 - s0)
            done += n
            lo = hi
            if s1 - start >= budget and done < horizon:
                # Finish anyway when the rest would take under a quarter of the budget.
                remaining = (horizon - done) * (s1 - s0) / n
                if remaining > 0.25 * budget:
                    out_of_budget = True
                    break

    steps = np.asarray(seg_steps, dtype=float)
    secs = np.asarray(seg_secs)
    total = float(secs.sum())
    k = max(1, len(steps) // 10)
    first = float(secs[:k].sum() / steps[:k].sum())
    last = float(secs[-k:].sum() / steps[-k:].sum())
    result.steps_run = done
    result.complete = done == horizon
    result.step_seconds = total
    result.steps_per_second = done / total
    result.us_per_step = 1e6 * total / done
    result.first10_us_per_step = 1e6 * first
    result.last10_us_per_step = 1e6 * last
    result.last_over_first = last / first
    result.window_steps = int(steps[:k].sum())
    if not result.complete:
        result.notes.append(
            f"timing stopped after {done} of {horizon} steps (budget {budget:g} s); "
            "first/last 10% are of the steps run"
        )


def memory_pass(result: CellResult, seed: int, budget: float) -> None:
    """Peak traced memory of building the counter and running its steps."""
    dim, horizon = result.dim, result.horizon
    seg = segment_length(horizon)
    rows = chunk_rows(dim, horizon, seg)
    buf = np.random.default_rng(seed + 1).random((rows, dim))  # allocated before tracing

    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        counter = build_counter(result.mechanism, dim, horizon, seed)
        step = counter.step
        done = 0
        start = time.perf_counter()
        while done < horizon:
            hi = min(seg, horizon - done)
            for i in range(hi):
                step(buf[(done + i) % rows])
            done += hi
            if time.perf_counter() - start >= budget:
                break
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    result.peak_mib = (peak - baseline) / MIB
    result.kept_mib = (kept - baseline) / MIB
    result.mem_steps_run = done
    result.mem_complete = done == horizon
    arrays = counter.state_dict()["arrays"]
    result.state_mib = sum(np.asarray(a).nbytes for a in arrays.values()) / MIB
    if not result.mem_complete:
        result.notes.append(
            f"memory traced over construction + first {done} of {horizon} steps "
            f"(budget {budget:g} s)"
        )


def run_cell(mechanism: str, dim: int, horizon: int, args: argparse.Namespace) -> CellResult:
    result = CellResult(mechanism, dim, horizon)
    if mechanism == "sqrt_factorization" and horizon > args.sqrt_max_horizon:
        result.skipped = (
            f"sqrt_factorization keeps O(T d) noise values "
            f"({horizon * dim * 8 / 2**30:.2f} GiB at T={horizon:,}, d={dim}; "
            f"the exact history form also costs O(t d) at step t); "
            f"only run for T <= {args.sqrt_max_horizon:,}"
        )
        return result
    t0 = time.perf_counter()
    warm_up(mechanism, dim)
    timing_pass(result, args.seed, args.cell_budget, np.random.default_rng(args.seed))
    memory_pass(result, args.seed, args.mem_budget)
    result.wall_seconds = time.perf_counter() - t0
    return result


# ----------------------------------------------------------------------------- output


def _fmt(value: float, spec: str) -> str:
    return "-" if not math.isfinite(value) else format(value, spec)


def _steps(done: int, complete: bool) -> str:
    return f"{done:,}" if complete else f"{done:,}*"


def results_table(results: list[CellResult]) -> str:
    header = (
        "mechanism",
        "d",
        "T",
        "steps run",
        "build ms",
        "steps/s",
        "us/step",
        "first10 us",
        "last10 us",
        "last/first",
        "peak MiB",
        "mem steps",
        "kept MiB",
        "state MiB",
    )
    rows: list[tuple[str, ...]] = []
    for r in results:
        if r.skipped is not None:
            rows.append((r.mechanism, str(r.dim), f"{r.horizon:,}", "skipped", *[""] * 10))
            continue
        rows.append(
            (
                r.mechanism,
                str(r.dim),
                f"{r.horizon:,}",
                _steps(r.steps_run, r.complete),
                _fmt(1e3 * r.build_seconds, ".1f"),
                _fmt(r.steps_per_second, ",.0f"),
                _fmt(r.us_per_step, ".1f"),
                _fmt(r.first10_us_per_step, ".1f"),
                _fmt(r.last10_us_per_step, ".1f"),
                _fmt(r.last_over_first, ".2f"),
                _fmt(r.peak_mib, ".3f"),
                _steps(r.mem_steps_run, r.mem_complete),
                _fmt(r.kept_mib, ".3f"),
                _fmt(r.state_mib, ".3f"),
            )
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    left = {0}
    lines = []
    for row in (header, *rows):
        cells = [
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def growth_table(results: list[CellResult]) -> str:
    """us/step at each T relative to the smallest T run, next to the log2 T ratio."""
    lines = [
        f"{'mechanism':<18} {'d':>4}  {'T_small -> T_large':<22} {'us/step ratio':>13}  "
        f"{'log2(T) ratio':>13}"
    ]
    done = [r for r in results if r.skipped is None]
    keys = sorted(
        {(r.mechanism, r.dim) for r in done}, key=lambda k: (ALL_MECHANISMS.index(k[0]), k[1])
    )
    for mech, dim in keys:
        cells = sorted(
            (r for r in done if (r.mechanism, r.dim) == (mech, dim)), key=lambda r: r.horizon
        )
        if len(cells) < 2:
            continue
        small, large = cells[0], cells[-1]
        ratio = large.us_per_step / small.us_per_step
        log_ratio = math.log2(large.horizon) / math.log2(small.horizon)
        partial = "" if small.complete and large.complete else "*"
        span = f"{small.horizon:,} -> {large.horizon:,}{partial}"
        lines.append(f"{mech:<18} {dim:>4}  {span:<22} {ratio:>13.2f}  {log_ratio:>13.2f}")
    return "\n".join(lines)


def source_hashes() -> dict[str, str]:
    """SHA-256 prefixes of the dponline.continual sources (the code being measured)."""
    import dponline.continual as pkg

    folder = Path(pkg.__file__).parent
    return {
        f.name: hashlib.sha256(f.read_bytes()).hexdigest()[:16] for f in sorted(folder.glob("*.py"))
    }


def load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def environment() -> dict[str, Any]:
    threads = {
        k: os.environ[k]
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        if k in os.environ
    }
    return {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "thread_env": threads,
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


# ----------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Steps/s, per-step growth and peak memory of the continual counters.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="T in {1e3, 1e4} only (smoke test, ~1 minute)"
    )
    parser.add_argument(
        "--mechanisms",
        nargs="+",
        choices=ALL_MECHANISMS,
        default=list(ALL_MECHANISMS),
        metavar="NAME",
        help=f"mechanisms to run (default: all of {', '.join(ALL_MECHANISMS)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("bench-results/continual.json"),
        help="JSON output file (default: bench-results/continual.json)",
    )
    parser.add_argument(
        "--cell-budget",
        type=float,
        default=60.0,
        help="seconds of stepping per cell in the timing pass before it stops early (default 60)",
    )
    parser.add_argument(
        "--mem-budget",
        type=float,
        default=10.0,
        help="seconds of stepping per cell in the traced memory pass (default 10)",
    )
    parser.add_argument(
        "--sqrt-max-horizon",
        type=int,
        default=10_000,
        help="largest T at which sqrt_factorization is run (default 1e4)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the noise and the inputs")
    return parser.parse_args(argv)


def write_json(
    out: Path,
    args: argparse.Namespace,
    argv: list[str] | None,
    horizons: tuple[int, ...],
    mechanisms: list[str],
    results: list[CellResult],
    total: float,
    load: tuple[list[float] | None, list[float] | None],
    finished: bool,
) -> None:
    payload = {
        "benchmark": "continual",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "finished": finished,
        "argv": sys.argv[1:] if argv is None else argv,
        "settings": {
            "quick": args.quick,
            "dims": list(FULL_DIMS),
            "horizons": list(horizons),
            "mechanisms": mechanisms,
            "epsilon": EPSILON,
            "delta": DELTA,
            "noise": "gaussian",
            "bounds": "Box(0, 1)",
            "replicas": 1,
            "cell_budget_seconds": args.cell_budget,
            "mem_budget_seconds": args.mem_budget,
            "sqrt_max_horizon": args.sqrt_max_horizon,
            "seed": args.seed,
        },
        "environment": environment(),
        "load_average_before": load[0],
        "load_average_after": load[1],
        "source_sha256": source_hashes(),
        "total_seconds": total,
        "results": [asdict(r) for r in results],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_jsonable(payload), indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    horizons = QUICK_HORIZONS if args.quick else FULL_HORIZONS
    mechanisms = [m for m in ALL_MECHANISMS if m in args.mechanisms]
    cells = [(m, d, t) for m in mechanisms for d in FULL_DIMS for t in horizons]

    load_before = load_average()
    t_start = time.perf_counter()
    results: list[CellResult] = []
    for mech, dim, horizon in cells:
        print(
            f"[bench] {mech:<18} d={dim:<5} T={horizon:<9,} ...",
            end="",
            file=sys.stderr,
            flush=True,
        )
        result = run_cell(mech, dim, horizon, args)
        results.append(result)
        status = "skipped" if result.skipped else f"{result.wall_seconds:.1f} s"
        print(f" {status}", file=sys.stderr, flush=True)
        elapsed = time.perf_counter() - t_start
        write_json(
            args.out, args, argv, horizons, mechanisms, results, elapsed, (load_before, None), False
        )
    total = time.perf_counter() - t_start

    print(
        f"Continual counting: Gaussian noise calibrated to ({EPSILON:g}, {DELTA:g})-DP, "
        f"inputs uniform in [0, 1]^d, replicas=1"
    )
    print(results_table(results))
    print()
    print("  us/step excludes input generation; first10/last10 = mean us/step over the first")
    print("  and last 10% of the steps run; peak MiB = tracemalloc peak of construction + steps")
    print("  (input buffer excluded); * = stopped by the time budget before reaching T.")
    for r in results:
        for note in r.notes:
            print(f"  {r.mechanism} d={r.dim} T={r.horizon:,}: {note}")
    for r in results:
        if r.skipped:
            print(f"  skipped: d={r.dim} T={r.horizon:,}: {r.skipped}")
    print()
    print(
        "Per-step cost growth with T (amortised O(d) means ~1; the log2 T ratio is for reference):"
    )
    print(growth_table(results))
    print()
    load_after = load_average()
    print(f"total runtime: {total:.1f} s (load average before {load_before}, after {load_after})")

    write_json(
        args.out, args, argv, horizons, mechanisms, results, total, (load_before, load_after), True
    )
    print(f"results written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
