"""Han et al. Algorithm 3 (DP GLM bandit) at scale: regret against T and against the
non-private version.

The synthetic GLM bandit of :class:`dponline.environments.SyntheticGLMBandit` (d = 10, 3 arms, one
never optimal; logistic and linear links), T from 1e3 to 1e5, 10 seeds, warm-up t_0 from
:func:`dponline.bandits.glm_bandit.default_warmup`. Reports mean pseudo-regret of the private
bandit at (epsilon, delta) = (1, 1/T) (tight and paper calibrations) and of the non-private one,
their ratio, and the least-squares log-log slope of regret against T (slope < 1: sublinear).
Usage::

    python benchmarks/bench_glm_bandit.py [--quick] [--link logistic|linear]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from dponline.bandits.glm_bandit import DPGLMBandit
from dponline.environments.contextual import SyntheticGLMBandit
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import ContextFeedback


def mean_regret(
    link: str, horizon: int, epsilon: float | None, calibration: str, seeds: int
) -> tuple[float, float, float]:
    env = SyntheticGLMBandit(10, horizon, link=link, rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bandit = DPGLMBandit(
            env.dim,
            env.arms,
            horizon,
            h_sub=env.h_sub,
            link=link,
            reward_range=env.reward_range,
            budget=None
            if epsilon is None
            else PrivacyBudget(epsilon, 1.0 / horizon, calibration, allow_weaker=True),
            replicas=seeds,
            rng=1,
        )
    cum = np.zeros(seeds)
    start = time.perf_counter()
    for t in range(horizon):
        bandit.observe(ContextFeedback(env.context(t)))
        feedback, regret = env.round(t, bandit.act())
        bandit.observe(feedback)
        cum += regret
    proven = np.nan if bandit.privacy is None else bandit.privacy.epsilon
    return float(cum.mean()), float(proven), time.perf_counter() - start


def slope(ts: list[int], values: list[float]) -> float:
    return float(np.polyfit(np.log(ts), np.log(values), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T up to 1e4 only")
    parser.add_argument("--link", choices=["logistic", "linear"], default=None)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--out", default="bench-results/glm_bandit.json")
    args = parser.parse_args()
    horizons = [1000, 3000, 10_000] if args.quick else [1000, 3000, 10_000, 30_000, 100_000]
    links = [args.link] if args.link else ["logistic", "linear"]
    results: dict[str, object] = {}
    for link in links:
        rows = []
        for horizon in horizons:
            row: dict[str, float] = {"T": horizon}
            for name, eps, cal in (
                ("non-private", None, "tight"),
                ("tight", 1.0, "tight"),
                ("paper", 1.0, "paper"),
            ):
                regret, proven, secs = mean_regret(link, horizon, eps, cal, args.seeds)
                row[name] = regret
                row[f"{name} proven epsilon"] = proven
                row[f"{name} seconds"] = secs
            row["tight / non-private"] = row["tight"] / row["non-private"]
            rows.append(row)
            print(
                f"{link:8s} T={horizon:>6d}  non-private {row['non-private']:8.1f}  "
                f"tight {row['tight']:8.1f} (eps {row['tight proven epsilon']:.3g})  "
                f"paper {row['paper']:8.1f} (eps {row['paper proven epsilon']:.3g})  "
                f"ratio {row['tight / non-private']:.2f}",
                flush=True,
            )
        slopes = {
            name: slope(horizons, [r[name] for r in rows])
            for name in ("non-private", "tight", "paper")
        }
        print(
            f"{link}: log-log slope of regret in T: "
            + ", ".join(f"{k} {v:.3f}" for k, v in slopes.items())
        )
        results[link] = {"rows": rows, "slopes": slopes}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
