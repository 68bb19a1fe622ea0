"""When does the jointly private GLM bandit (Han et al. Algorithm 3, tight) learn the digits?

On the shipped UCI digits as a 10-armed contextual bandit (reward 1 for the right digit;
regret = mistakes), for T in TS and epsilon in EPSILONS (delta = 1/T, default warm-up and
pre-selection gap of Theorem 4.6's parameters), 10 seeds: the mean regret with its 95%
interval against uniform random play (0.9 T mistakes in expectation), and whether the interval
lies below it ("learns"). The non-private bandit is the reference.

Why it cannot learn at small epsilon: each arm's estimator (Algorithm 2, report-noisy-min over
the 2d vertices of the l_1 ball) sees one sample a round, real for the arm played and a
zero-gradient synthetic one for the others, so its recursive gradient d_t is diluted about
K = 10-fold, while the Gumbel noise on every vertex score must hide one user's change. The
benchmark prints, per epsilon, the noise scale b_n of the last step against the spread of the
vertex scores max_v <d_n, v> - min_v <d_n, v> of the non-private estimators at the same step:
where b_n is several times the spread, the arm chosen by noisy min is close to uniform over the
vertices and the estimators do not move towards the arms' parameters. Usage::

    python benchmarks/bench_glm_digits.py [--quick]

Results go to stdout and ``bench-results/glm_digits.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

from dponline import registry
from dponline.environments.catalogue import build_environment
from dponline.experiments.runner import make_tasks, run_sweep

EPSILONS = [1.0, 4.0, 16.0, 64.0, 256.0]
TS = [2_000, 10_000]


def spread_and_scales(horizon: int, epsilons: list[float]) -> tuple[float, dict[float, float]]:
    """The non-private estimators' mean vertex-score spread after ``horizon`` rounds (3 seeds),
    and each epsilon's Gumbel scale at the last step."""
    env = build_environment("digits_bandit", horizon, np.random.default_rng(0))
    bandit = registry.build_learner("glm-bandit", env, replicas=3, rng=np.random.default_rng(1))
    from dponline.protocol import ContextFeedback

    for t in range(horizon):
        bandit.observe(ContextFeedback(env.context(t)))
        feedback, _ = env.round(t, bandit.act())
        bandit.observe(feedback)
    spreads = []
    for est in bandit.estimators:
        scores = (est.grad_sum / (est.t + 1)) @ est.vertices.T
        spreads.append(float((scores.max(axis=1) - scores.min(axis=1)).mean()))
    scales = {}
    for eps in epsilons:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            private = registry.build_learner(
                "dp-glm-bandit",
                env,
                epsilon=eps,
                calibration="tight",
                allow_weaker=False,
                replicas=1,
                rng=np.random.default_rng(2),
            )
        est = private.estimators[0]
        scales[eps] = float(est.noise_scale(est.horizon))
    return float(np.mean(spreads)), scales


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 2000 only, 5 seeds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="bench-results/glm_digits.json")
    args = parser.parse_args()
    ts, seeds = ([2_000], 5) if args.quick else (TS, 10)
    tasks = []
    for horizon in ts:
        tasks += make_tasks(
            learners=[{"name": "dp-glm-bandit"}, {"name": "glm-bandit"}],
            environment="digits_bandit",
            epsilons=EPSILONS,
            calibrations=["tight"],
            seeds=seeds,
            seed=0,
            horizon=horizon,
            record_every=horizon,
            environment_label=f"T={horizon}",
        )
    tasks = [dataclasses.replace(t, task_index=i) for i, t in enumerate(tasks)]
    start = time.perf_counter()
    table = run_sweep(tasks, workers=args.workers, progress=False)
    seconds = time.perf_counter() - start
    rows = []
    print("digits contextual bandit, 10 arms; regret = mistakes; uniform play: 0.9 T")
    head = f"{'T':>6s} {'epsilon':>8s} {'regret':>18s} {'uniform':>8s}  learns"
    print(f"{head}  {'b_n / score spread':>18s}")
    for horizon in ts:
        spread, scales = spread_and_scales(horizon, EPSILONS)
        last = table[table["t"] == horizon]
        for label, eps in [("glm-bandit", None)] + [("dp-glm-bandit", e) for e in EPSILONS]:
            g = last[last["label"] == label]
            if eps is not None:
                g = g[np.isclose(g["epsilon"], eps)]
            r = g["regret"].to_numpy(dtype=float)
            half = 1.96 * r.std(ddof=1) / math.sqrt(len(r))
            learns = r.mean() + half < 0.9 * horizon
            ratio = math.nan if eps is None else scales[eps] / spread
            rows.append(
                {
                    "T": horizon,
                    "epsilon": eps,
                    "regret": float(r.mean()),
                    "ci95": float(half),
                    "uniform": 0.9 * horizon,
                    "learns": bool(learns),
                    "noise_over_spread": ratio,
                }
            )
            name = "none" if eps is None else f"{eps:g}"
            print(
                f"{horizon:6d} {name:>8s} {r.mean():9.1f} +- {half:6.1f} {0.9 * horizon:8.0f}  "
                f"{'yes' if learns else 'no ':3s}  {ratio:18.1f}"
            )
        print(f"{'':6s} non-private vertex-score spread at step T: {spread:.4f}")
    print(f"{len(tasks)} tasks, {seconds:.1f} s on {args.workers} worker processes")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "seconds": seconds}, indent=2))


if __name__ == "__main__":
    main()
