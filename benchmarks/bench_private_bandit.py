"""Ene, Nguyen & Vladu (2021) PrivateBandit (Algorithm 1) at scale: regret against T, the two
calibrations at one budget, and the speed of a round on a path polytope.

1. Regret slope. Linear losses over the simplex in R^5 (:func:`dponline.environments.
   bandit_convex.bandit_convex`, theta_t = a fixed direction plus N(0, I), in the unit ball),
   T = 1e3 .. 1e6 (1e5 with ``--quick``), 4 replicas; regret against the best fixed point in
   hindsight (exact, one oracle call per round). Reports the mean regret of the non-private
   algorithm and of the tight Gaussian one at (epsilon, delta) = (1, 1e-6), their least-squares
   log-log slopes (the paper's rate is T^{3/4}), and the learner's explicit bound
   (:meth:`PrivateBandit.regret_bound`, Lemmas 4.1, C.2-C.5) for comparison.
   The same for a Lipschitz, non-smooth family: absolute-value losses |<a, x> - b_t| over the
   2-subsets of 6 items (uniform matroid, oracle only), T = 1e3 .. 1e5, comparator exact by the
   running weighted median (:class:`~dponline.environments.bandit_convex.LevelLosses`).
2. Calibrations. The same problem at T = 1e5, (1, 1e-6), same seeds: tight (square-root
   factorisation, exact sensitivity) against the paper's Gaussian noise of Lemma 5.4 on the
   tree; the ratio of mean regrets (the target is at most 0.5).
3. Speed. Linear losses over the monotone paths of the 8 x 8 grid DAG (112 edges), T = 1e5,
   tight Gaussian, one core (BLAS limited to one thread): wall time with 1 and 100 replicas.
4. The tight calibration's noise in the affine hull (``bandits/ene_noise.py``, the lemma) on
   path polytopes: the Laplace scale at epsilon = 1, T = 1e5, with the counter in the k hull
   coordinates (l1 sensitivity x sqrt(k)) and, as before, in the n edge coordinates
   (``noise_in_hull=False``, x sqrt(n)), both proving the same epsilon; the Gaussian sigma
   (unchanged); and the mean regret of both on linear losses over the 3 x 3 grid's paths,
   T = 1e5 (1e4 with ``--quick``), 16 replicas, same seeds.

Usage::

    python benchmarks/bench_private_bandit.py [--quick] [--parts 1,2,3,4] [--json PATH]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core: before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dponline.bandits.private_bandit import PrivateBandit  # noqa: E402
from dponline.environments.bandit_convex import BanditConvexEnvironment, bandit_convex  # noqa: E402
from dponline.privacy.budget import PrivacyBudget  # noqa: E402


def play(
    env: BanditConvexEnvironment,
    budget: PrivacyBudget | None,
    replicas: int,
    seed: int,
    **options: object,
) -> tuple[np.ndarray, PrivateBandit, float]:
    """Final regret of every replica, the learner, and the wall time of the rounds."""
    learner = PrivateBandit(
        env.domain,
        env.horizon,
        budget=budget,
        lipschitz=env.lipschitz(),  # the declared bound (||theta_t|| or ||a|| max weight)
        replicas=replicas,
        rng=seed,
        **options,  # type: ignore[arg-type]
    )
    total = np.zeros(replicas)
    start = time.perf_counter()
    for t in range(env.horizon):
        x = learner.act()
        feedback, loss = env.round(t, x)
        learner.observe(feedback)
        total += loss
    wall = time.perf_counter() - start
    regret = total - env.best_cumulative_loss()[-1]
    return regret, learner, wall


def slope(ts: list[int], values: list[float]) -> float:
    return float(np.polyfit(np.log(ts), np.log(values), 1)[0])


def regret_slope(
    horizons: list[int],
    budget: PrivacyBudget,
    make_env: Callable[[int], BanditConvexEnvironment],
    paper: str = "0.75",
) -> dict:
    """Mean final regret without privacy and with ``budget`` (4 replicas, same seeds) at each
    horizon, the explicit bound, and the log-log slopes (printed as a table)."""
    print(f"{'T':>9} {'non-private':>12} {'tight (1,1e-6)':>15} {'bound':>12} {'time':>7}")
    rows = []
    for T in horizons:
        env = make_env(T)
        free, _, _ = play(env, None, 4, seed=1)
        priv, learner, wall = play(env, budget, 4, seed=1)
        bound = learner.regret_bound()["bound"]
        rows.append((T, float(free.mean()), float(priv.mean()), bound))
        print(f"{T:>9} {free.mean():>12.1f} {priv.mean():>15.1f} {bound:>12.4g} {wall:>6.1f}s")
    ts = [r[0] for r in rows]
    s_free = slope(ts, [max(r[1], 1e-9) for r in rows])
    s_priv = slope(ts, [max(r[2], 1e-9) for r in rows])
    within = all(r[2] <= r[3] for r in rows)
    print(f"log-log slope: non-private {s_free:.3f}, tight {s_priv:.3f} (paper: {paper})")
    print(f"mean regret within the explicit bound at every T: {within}")
    return {
        "rows": rows,
        "slope_non_private": s_free,
        "slope_tight": s_priv,
        "within_bound": within,
    }


def hull_saving(horizon: int) -> dict:
    """Part 4: noise scales in the hull against R^n on grid path polytopes, and the regret of
    both on the 3 x 3 grid (printed as tables)."""
    laplace, gaussian = PrivacyBudget(1.0), PrivacyBudget(1.0, 1e-6)
    print(
        f"{'grid':>5} {'n':>4} {'k':>3} {'b in R^n':>10} {'b in hull':>10} {'ratio':>6} "
        f"{'sqrt(n/k)':>9} {'epsilon':>8} {'sigma R^n':>10} {'sigma hull':>10}"
    )
    rows = []
    for m in (2, 3, 4, 8):
        domain = bandit_convex(100_000, np.random.default_rng(0), "grid_paths", m).domain
        scales = {}
        for hull in (False, True):
            lap = PrivateBandit(domain, 100_000, budget=laplace, noise_in_hull=hull)
            gau = PrivateBandit(domain, 100_000, budget=gaussian, noise_in_hull=hull)
            scales[hull] = (lap.counter.noise.scale, lap.privacy.epsilon, gau.counter.noise.scale)
        n, k = domain.dim, domain.affine_dim
        ratio = scales[False][0] / scales[True][0]
        if scales[False][1] != scales[True][1]:
            raise RuntimeError(f"the two calibrations prove different epsilons: {scales}")
        rows.append(
            {
                "grid": m,
                "n": n,
                "k": k,
                "laplace_ambient": scales[False][0],
                "laplace_hull": scales[True][0],
                "ratio": ratio,
                "epsilon": scales[True][1],
                "sigma_ambient": scales[False][2],
                "sigma_hull": scales[True][2],
            }
        )
        print(
            f"{m:>5} {n:>4} {k:>3} {scales[False][0]:>10.5g} {scales[True][0]:>10.5g} "
            f"{ratio:>6.3f} {math.sqrt(n / k):>9.3f} {scales[True][1]:>8.3g} "
            f"{scales[False][2]:>10.5g} {scales[True][2]:>10.5g}"
        )
    env = bandit_convex(horizon, np.random.default_rng(0), domain="grid_paths", dim=3)
    regret = {}
    for hull in (False, True):
        r, _, wall = play(env, laplace, 16, seed=5, noise_in_hull=hull)
        regret[hull] = (float(r.mean()), float(r.std(ddof=1) / math.sqrt(r.size)), wall)
    print(
        f"regret, 3 x 3 grid, T = {horizon:g}, Laplace epsilon 1, 16 replicas (mean +- s.e.): "
        f"R^n {regret[False][0]:.1f} +- {regret[False][1]:.1f}, "
        f"hull {regret[True][0]:.1f} +- {regret[True][1]:.1f} "
        f"(ratio {regret[True][0] / regret[False][0]:.3f})"
    )
    return {
        "scales": rows,
        "regret_horizon": horizon,
        "regret_ambient": regret[False][:2],
        "regret_hull": regret[True][:2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T up to 1e5 only (1e4 in part 4)")
    parser.add_argument(
        "--parts", default="1,2,3,4", help="comma-separated parts to run (default: all four)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    parts = {p.strip() for p in args.parts.split(",")}
    if not parts <= {"1", "2", "3", "4"}:
        parser.error(f"--parts takes numbers among 1, 2, 3, 4, got {args.parts!r}")
    out: dict = {}
    gaussian = PrivacyBudget(1.0, 1e-6)

    if "1" in parts:
        horizons = [1_000, 10_000, 100_000] + ([] if args.quick else [1_000_000])
        print("1. regret against T (simplex, n = 5, linear losses, 4 replicas)")
        out["slope"] = regret_slope(
            horizons, gaussian, lambda T: bandit_convex(T, np.random.default_rng(0), "simplex", 5)
        )
        out["within_bound"] = out["slope"]["within_bound"]

        print("\n1b. the same for absolute-value losses (2-subsets of 6 items, 4 replicas)")
        out["slope_absolute"] = regret_slope(
            horizons[:3],
            gaussian,
            lambda T: bandit_convex(T, np.random.default_rng(0), "k_subsets", 6, losses="absolute"),
            "at most 0.75",
        )

    if "2" in parts:
        print(
            "\n2. tight vs paper Gaussian calibration, T = 1e5, (1, 1e-6), 8 replicas, same seeds"
        )
        env = bandit_convex(100_000, np.random.default_rng(0), domain="simplex", dim=5)
        tight, lt, _ = play(env, gaussian, 8, seed=2)
        paper, lp, _ = play(env, PrivacyBudget(1.0, 1e-6, calibration="paper"), 8, seed=2)
        ratio = float(tight.mean() / paper.mean())
        print(
            f"tight: {lt.counter.name}, sigma {lt.counter.noise.scale:.4g}, "
            f"regret {tight.mean():.1f}"
        )
        print(
            f"paper: {lp.counter.name}, sigma {lp.counter.noise.scale:.4g}, "
            f"regret {paper.mean():.1f} (proves epsilon {lp.privacy.epsilon:.3g})"
        )
        print(f"regret ratio tight / paper: {ratio:.3f} (target <= 0.5)")
        out["calibrations"] = {
            "tight": float(tight.mean()),
            "paper": float(paper.mean()),
            "ratio": ratio,
            "paper_proven_epsilon": lp.privacy.epsilon,
        }

    if "3" in parts:
        print("\n3. speed: 8 x 8 grid DAG (112 edges), T = 1e5, tight Gaussian, one core")
        env = bandit_convex(100_000, np.random.default_rng(0), domain="grid_paths", dim=8)
        _, _, one = play(env, gaussian, 1, seed=3)
        _, _, hundred = play(env, gaussian, 100, seed=3)
        print(
            f"1 replica: {one:.1f} s (target < 60 s); 100 replicas: {hundred:.1f} s "
            f"({hundred / one:.2f}x; target < 5x)"
        )
        out["speed"] = {
            "one_replica_s": one,
            "hundred_replicas_s": hundred,
            "ratio": hundred / one,
        }

    if "4" in parts:
        print("\n4. tight noise in the affine hull against R^n, grid path polytopes, epsilon 1")
        out["hull"] = hull_saving(10_000 if args.quick else 100_000)
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
