"""CTRL, DP-FTRL and the streaming Frank-Wolfe on one squared-loss stream at (1, 1e-6)-DP
(tight), stochastic and adversarial: regret and switches in one table per stream.

    python benchmarks/bench_side_by_side.py [--quick] [--seeds R]

``--quick`` runs T = 1e3 only (the full run adds T = 1e4). The same table, with a plot and a
page, is ``dponline side-by-side --T T --kind KIND``: both run the spec
``src/dponline/experiments/specs/side_by_side.toml`` on the runner, one task per learner
(``s``: each task's wall time, its calibration and comparator included).
"""

from __future__ import annotations

import argparse

from dponline.experiments.side_by_side import run_side_by_side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 1e3 only")
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    horizons = [1_000] if args.quick else [1_000, 10_000]
    for t in horizons:
        for kind in ("stochastic", "adversarial"):
            rows, _, _ = run_side_by_side(horizon=t, kind=kind, replicas=args.seeds)
            print(f"\n{kind} squared-loss stream, T = {t}, d = 5, (1, 1e-6)-DP tight")
            print(f"{'learner':<40}{'proven eps':>11}{'regret':>10}{'+-':>7}{'switches':>10}"
                  f"{'s':>7}")  # fmt: skip
            for r in rows:
                eps = "none" if r.epsilon is None else f"{r.epsilon:.3g}"
                print(
                    f"{r.learner:<40}{eps:>11}{r.regret:>10.1f}{r.regret_se:>7.1f}"
                    f"{r.switches:>10.0f}{r.seconds:>7.1f}"
                )


if __name__ == "__main__":
    main()
