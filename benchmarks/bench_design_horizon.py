"""The BLT without a horizon, optimised for different design horizons: its largest release
variance up to t over that of a square root factorisation built for horizon t, same zCDP.

    python benchmarks/bench_design_horizon.py [--json FILE]

The counter (:mod:`dponline.continual.anytime_blt`, ``mechanism="anytime_blt"``; learners take
``design_horizon``) runs one buffered linear Toeplitz factorisation for as long as the stream
lasts; its 4 buffers are optimised for ``design_horizon`` rounds (default 2^20), and its noise is
calibrated to the norm of all its coefficients, so its guarantee holds at every round whatever
the design horizon. The design horizon trades short streams against long ones: this prints the
ratio at t = 2^10 .. 2^28 for design horizons 2^20 .. 2^28, one round as the unit.

Exact, not estimated: the BLT's variance at round t is its squared sensitivity (the closed-form
sum of all its squared coefficients) times the closed-form sum of its inverse's squared prefix
sums (:meth:`~dponline.continual.blt.BLTParameters.closed_form_sums`); the square root built for
t has largest variance (sum_{j<t} c_j^2)^2 with c_j = binom(2j, j) / 4^j (Fichtenberger, Henzinger
& Upadhyay 2023), summed here in chunks by the exact ratio recurrence. Both at the same
sensitivity scale, so the ratio does not depend on the budget. The optimiser takes about 2 s
per design horizon; the whole run about 15 s.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from dponline.continual.anytime_blt import (
    DESIGN_HORIZON,
    UNBOUNDED_ROUNDS,
    anytime_blt_parameters,
    anytime_blt_sensitivity,
)

EXPONENTS = (10, 12, 14, 16, 18, 20, 22, 24, 26, 28)
DESIGNS = (20, 22, 24, 26, 28)
CHUNK = 1 << 22


def square_root_sums(ts: list[int]) -> dict[int, float]:
    """sum_{j<t} c_j^2 for each t in ``ts`` (c_j = binom(2j, j) / 4^j), by the recurrence
    c_j = c_(j-1) (2j - 1) / (2j) in chunks (O(max t) time, O(CHUNK) memory)."""
    out: dict[int, float] = {}
    wanted = sorted(set(ts))
    total, c_prev, start, end = 0.0, 1.0, 0, wanted[-1]
    while start < end:
        stop = min(start + CHUNK, end)
        j = np.arange(start, stop, dtype=float)
        if start == 0:
            ratios = np.concatenate([[1.0], (2.0 * j[1:] - 1.0) / (2.0 * j[1:])])
            c = np.cumprod(ratios)
        else:
            c = c_prev * np.cumprod((2.0 * j - 1.0) / (2.0 * j))
        sq = total + np.cumsum(c * c)
        for t in wanted:
            if start < t <= stop:
                out[t] = float(sq[t - 1 - start])
        total, c_prev, start = float(sq[-1]), float(c[-1]), stop
    return out


def table() -> dict:
    ts = [2**e for e in EXPONENTS]
    root = square_root_sums(ts)
    rows = []
    for d in DESIGNS:
        started = time.perf_counter()
        params = anytime_blt_parameters(1, 1, 2**d)
        sens_sq = anytime_blt_sensitivity(params) ** 2
        ratios = {t: sens_sq * params.closed_form_sums(t)[2] / root[t] ** 2 for t in ts}
        rows.append(
            {
                "design_horizon": 2**d,
                "default": 2**d == DESIGN_HORIZON,
                "ratio_to_fixed_horizon_sqrt": ratios,
                "sensitivity_over_norm_at_design": float(
                    np.sqrt(sens_sq / params.closed_form_sums(2**d)[1])
                ),
                "optimise_seconds": time.perf_counter() - started,
            }
        )
    assert UNBOUNDED_ROUNDS > max(ts)
    return {"exponents": list(EXPONENTS), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the table here")
    args = parser.parse_args()
    started = time.perf_counter()
    out = table()
    head = "design horizon " + " ".join(f"{'2^' + str(e):>6}" for e in EXPONENTS)
    print("Largest variance up to t of the BLT without a horizon, over a square root built for t")
    print("(one round; exact)\n")
    print(head)
    for row in out["rows"]:
        label = f"2^{int(np.log2(row['design_horizon']))}" + (
            " (default)" if row["default"] else ""
        )
        cells = " ".join(f"{r:6.3f}" for r in row["ratio_to_fixed_horizon_sqrt"].values())
        print(f"{label:<14} {cells}")
    print(f"\n{time.perf_counter() - started:.1f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        serial = {
            **out,
            "rows": [
                {
                    **r,
                    "ratio_to_fixed_horizon_sqrt": {
                        str(k): v for k, v in r["ratio_to_fixed_horizon_sqrt"].items()
                    },
                }
                for r in out["rows"]
            ],
        }
        args.json.write_text(json.dumps(serial, indent=2))


if __name__ == "__main__":
    main()
