"""What building a learner for a long horizon costs: construction time and peak memory.

    python benchmarks/bench_long_horizons.py [--quick] [--json FILE]

Each case builds one learner in a fresh process (the counters' parameters are cached per
process) with the counter ``tight`` chooses, and reports the seconds its constructor took and
the process's peak resident memory. Cases (epsilon = 1; delta = 1e-6 for Gaussian noise):

* DP-UCB over 10 arms with Laplace noise (the k-ary tree) and with Gaussian noise (the BLT, as
  the square roots' noise state passes the memory budget), at T = 10^6 and 10^9;
* DP-FTRL over 10 experts with Gaussian noise at T = 10^6 and 10^7 (the BLT), with Laplace
  noise at T = 10^12 (the k-ary tree), and with Gaussian noise over one person's 4 rounds at
  least 1,000 apart at T = 10^8 (``gaussian-person``: the BLT optimised for that pattern).

The BLT's sensitivity and largest variance are closed-form sums (:mod:`dponline.continual.
blt`) and the k-ary tree past 2^22 rounds charges its levels (:mod:`dponline.continual.
kary_tree`), so no case reads every round. ``--quick`` keeps the cases at 10^6 rounds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CASES = [
    ("dp-ucb", "laplace", 10**6),
    ("dp-ucb", "gaussian", 10**6),
    ("dp-ftrl", "gaussian", 10**6),
    ("dp-ucb", "laplace", 10**9),
    ("dp-ucb", "gaussian", 10**9),
    ("dp-ftrl", "gaussian", 10**7),
    ("dp-ftrl", "laplace", 10**12),
    ("dp-ftrl", "gaussian-person", 10**8),
]

#: the child process: build one learner, print its counter, seconds and peak memory (MiB)
CHILD = """
import resource, sys, time
from dponline.privacy.budget import PrivacyBudget
name, noise, horizon = sys.argv[1], sys.argv[2], int(sys.argv[3])
person = noise.endswith("-person")  # one person: 4 rounds at least 1,000 apart
noise = noise.removesuffix("-person")
budget = PrivacyBudget(
    1.0,
    1e-6 if noise == "gaussian" else 0.0,
    participations=4 if person else 1,
    min_separation=1000 if person else 1,
)
start = time.perf_counter()
if name == "dp-ucb":
    from dponline.bandits.dp_ucb import DPUCB
    learner = DPUCB(10, horizon, budget=budget, noise=noise)
else:
    from dponline.online import DPFTRL
    learner = DPFTRL(10, horizon, budget=budget, noise=noise)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(learner.counter.name, seconds, peak)
"""


def measure(name: str, noise: str, horizon: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, name, noise, str(horizon)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        "learner": name,
        "noise": noise,
        "horizon": horizon,
        "counter": out[0],
        "seconds": float(out[1]),
        "peak_mib": float(out[2]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the cases at 10^6 rounds")
    parser.add_argument("--json", type=Path, help="write the rows to this file")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.quick or c[2] <= 10**6]
    rows = [measure(*case) for case in cases]
    print(
        f"{'learner':8} {'noise':15} {'horizon':>8} {'counter':10} {'seconds':>8} {'peak MiB':>9}"
    )
    for r in rows:
        print(
            f"{r['learner']:8} {r['noise']:15} {r['horizon']:8.0e} {r['counter']:10} "
            f"{r['seconds']:8.2f} {r['peak_mib']:9.0f}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows}, indent=2))


if __name__ == "__main__":
    main()
