"""CTRL and Theorem 14 at growing horizons: switch counts against the budgets of Theorems 9, 12
and 13, regret against the bounds of Theorems 4, 9, 12, 13 and 14, and log-log slopes in T.

    python benchmarks/bench_ctrl_regret.py [--quick] [--replicas R] [--part P] [--to-1e6]
                                           [--private-to-1e5]

Prints one table per part; every number is measured by this script (fixed seeds).
``--quick`` stops at T = 1e4 (the full run goes to T = 1e5).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np

from dponline.environments.catalogue import build_environment
from dponline.online.ctrl import lazy_regret_bound
from dponline.online.ctrl_parameters import (
    calibrate_paper,
    calibrate_tight,
    proven_privacy,
    regret_bound_theorem4,
    regret_closeness,
    strongly_convex_regret_bound,
)
from dponline.registry import build_learner, learners

KINDS = ("stochastic", "adversarial")


def run(name: str, env, replicas: int, seed: int, calibration: str = "tight", **options):
    entry = learners()[name]
    kw = {"epsilon": None, "calibration": "none"}
    if entry.private:
        kw = {"epsilon": options.pop("epsilon", 1.0), "calibration": calibration}
    learner = build_learner(
        entry,
        env,
        allow_weaker=calibration == "paper",
        replicas=replicas,
        rng=np.random.default_rng(seed),
        **kw,
        **options,
    )
    total = np.zeros(replicas)
    start = time.perf_counter()
    for t in range(env.horizon):
        feedback, loss = env.round(t, learner.act())
        total += loss
        learner.observe(feedback)
    seconds = time.perf_counter() - start
    regret = env.regret(total, np.array([env.horizon]))
    return learner, np.asarray(regret, dtype=float).reshape(-1), seconds


def slope(ts, values) -> float:
    return float(np.polyfit(np.log(ts), np.log(np.maximum(values, 1e-12)), 1)[0])


def _print_slopes(rows: dict[str, list[tuple[int, float]]]) -> None:
    for label, pts in rows.items():
        if len(pts) > 1:
            ts, rs = zip(*pts, strict=True)
            print(f"  slope of {label}: {slope(ts, rs):.3f}")


def part_lazy(horizons, replicas: int, long_horizons) -> None:
    print(
        "Part 1. Lazy OCO: switches within S, regret within Theorem 9 / 12 / 13 ('bound': what "
        "the proof gives: Theorem 4 at the theorem's parameters, Theorem 28 for Theorem 13; "
        "'printed': the theorem as printed)"
    )
    head = f"{'learner':<22}{'stream':<23}{'T':>8}{'S':>7}{'switches':>10}{'regret':>10}"
    print(head + f"{'bound':>12}{'printed':>12}{'s':>7}")
    rows: dict[str, list[tuple[int, float]]] = {}
    squared = {"dim": 5, "losses": "squared"}
    strongly_convex = {"dim": 2, "losses": "squared", "curvature": 1.0}
    # logistic losses cost O(t d^2) a Newton step; squared ones are sufficient statistics and
    # run to the long horizons
    configurations = (
        ("lazy-ctrl (Thm 12)", "lazy-ctrl", {"dim": 5}, {}, horizons),
        ("lazy-ctrl (Thm 9)", "lazy-ctrl", {"dim": 5}, {"glm": False}, horizons),
        ("lazy-ctrl (Thm 12)", "lazy-ctrl", squared, {}, long_horizons),
        ("lazy-ctrl (Thm 9)", "lazy-ctrl", squared, {"glm": False}, long_horizons),
        ("ctrl-strongly-convex", "ctrl-strongly-convex", strongly_convex, {}, long_horizons),
    )
    for kind, (label, name, env_opts, opts, ts) in itertools.product(KINDS, configurations):
        for t in ts:
            env = build_environment(
                "smooth_convex", t, np.random.default_rng(t), kind=kind, **env_opts
            )
            learner, regret, seconds = run(name, env, replicas, seed=1, **opts)
            d, g, beta, diam = env.dim, env.lipschitz, env.smoothness, env.domain.diameter
            if name == "lazy-ctrl":
                s = min(t, math.ceil(d * math.sqrt(t)))
                glm = opts.get("glm", True)
                bound = lazy_regret_bound(s, t, d, g, beta, diam, glm=glm)
                printed = lazy_regret_bound(s, t, d, g, beta, diam, glm=glm, printed=True)
            else:
                log_t = math.log(t)
                s = math.ceil((4 * beta * d / env.strong_convexity + 16 * d * log_t) * log_t)
                bound = strongly_convex_regret_bound(s, t, d, g, env.strong_convexity, diam)
                printed = strongly_convex_regret_bound(
                    s, t, d, g, env.strong_convexity, diam, printed=True
                )
            sw = learner.switches.mean()
            stream = f"{env_opts.get('losses', 'logistic')} {kind}"
            print(
                f"{label:<22}{stream:<23}{t:>8}{s:>7}{sw:>10.1f}"
                f"{regret.mean():>10.2f}{bound:>12.1f}{printed:>12.1f}{seconds:>7.1f}",
                flush=True,
            )
            rows.setdefault(f"{label}, {stream}", []).append((t, regret.mean()))
    _print_slopes(rows)


def part_private(horizons, replicas: int, logistic_horizons) -> None:
    print(
        "\nPart 2. Private CTRL (epsilon = 1, delta = 1e-6): regret within Theorem 4 (tight) and "
        "Theorems 8 / 11 (paper)"
    )
    print(f"{'learner':<10}{'calibration':<13}{'stream':<23}{'T':>7}{'eps proven':>11}"
          f"{'sigma':>11}{'switches':>10}{'B':>7}{'regret':>10}{'bound':>12}{'s':>7}")  # fmt: skip
    rows: dict[str, list[tuple[int, float]]] = {}
    # squared losses are sufficient statistics (a switch's Newton solve costs O(d^2) whatever t);
    # logistic losses cost O(t d^2) a Newton step, so their rows stop earlier unless asked
    runs = [(t, "squared") for t in horizons] + [(t, "logistic") for t in logistic_horizons]
    for (t, losses), kind, name, calibration in itertools.product(
        runs, KINDS, ("ctrl", "ctrl-glm"), ("tight", "paper")
    ):
        env = build_environment(
            "smooth_convex", t, np.random.default_rng(t), dim=5, kind=kind, losses=losses
        )
        learner, regret, seconds = run(name, env, replicas, seed=2, calibration=calibration)
        problem = {
            "horizon": t,
            "dim": env.dim,
            "lipschitz": env.lipschitz,
            "smoothness": env.smoothness,
            "diameter": env.domain.diameter,
            "glm": name == "ctrl-glm",
        }
        if calibration == "tight":
            params, _ = calibrate_tight(1.0, 1e-6, **problem)
            closeness = regret_closeness(t)
        else:
            params = calibrate_paper(1.0, 1e-6, **problem)
            closeness = proven_privacy(params, 0.5e-6).closeness_delta
        bound = regret_bound_theorem4(params, env.domain.diameter, closeness)
        assert abs(params.sigma - learner.sigma) <= 1e-9 * params.sigma
        stream = f"{losses} {kind}"
        rows.setdefault(f"{name} {calibration}, {stream}", []).append((t, regret.mean()))
        print(
            f"{name:<10}{calibration:<13}{stream:<23}{t:>7}{learner.privacy.epsilon:>11.4g}"
            f"{learner.sigma:>11.4g}{learner.switches.mean():>10.1f}{params.switch_budget:>7.0f}"
            f"{regret.mean():>10.2f}{bound:>12.4g}{seconds:>7.1f}"
        )
    _print_slopes(rows)


def part_dyadic(horizons, replicas: int) -> None:
    print("\nPart 3. Theorem 14 (1D, nearest-centre losses): regret and slopes")
    print(f"{'learner':<18}{'stream':<13}{'T':>8}{'levels':>7}{'regret':>10}{'bound':>12}"
          f"{'s':>7}")  # fmt: skip
    rows: dict[str, list[tuple[int, float]]] = {}
    for t in horizons:
        levels = min(math.ceil(math.log2(t)), 12)
        for kind in ("stochastic", "adversarial"):
            env = build_environment("lipschitz_low_dim", t, np.random.default_rng(t), kind=kind)
            for name, extra in (
                ("dyadic-hedge", {}),
                ("dp-dyadic-hedge", {"mechanism": "padded_tree"}),
            ):
                learner, regret, seconds = run(name, env, replicas, seed=3, levels=levels, **extra)
                points = learner.grid.points
                blocks = (env.all_losses_on(points, s, min(s + 500, t)) for s in range(0, t, 500))
                bound = learner.regret_bound(blocks, samples=500)
                print(
                    f"{name:<18}{kind:<13}{t:>8}{levels:>7}{regret.mean():>10.2f}"
                    f"{bound['explicit']:>12.1f}{seconds:>7.1f}"
                )
                rows.setdefault(f"{name} {kind}", []).append((t, regret.mean()))
    _print_slopes(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T up to 1e4")
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument(
        "--part",
        choices=("all", "lazy", "private", "dyadic"),
        default="all",
        help="run one part only (default: all)",
    )
    parser.add_argument(
        "--to-1e6",
        action="store_true",
        help="lazy rows on squared losses (Theorems 9, 12, 13) to T = 1e6 too (minutes a row)",
    )
    parser.add_argument(
        "--private-to-1e5",
        action="store_true",
        help="private CTRL rows on logistic losses to T = 1e5 too (hours: such a run grows like "
        "T^2.3; the squared-loss rows always go to the largest T)",
    )
    args = parser.parse_args()
    horizons = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    logistic = horizons if args.private_to_1e5 else horizons[:2]
    if args.part in ("all", "lazy"):
        long = [*horizons, 1_000_000] if args.to_1e6 else horizons
        part_lazy(horizons, args.replicas, long)
    if args.part in ("all", "private"):
        part_private(horizons, args.replicas, logistic)
    if args.part in ("all", "dyadic"):
        part_dyadic(horizons, args.replicas)


if __name__ == "__main__":
    main()
