"""What protecting a person who comes back costs the private K-armed learners: regret at
epsilon = 1 for one round against a person of k rounds at least b apart.

    python benchmarks/bench_person_bandits.py [--quick] [--replicas R] [--json FILE]

Bernoulli arms, K = 10, best mean 0.9 and the others 0.8 (the instance of
``bench_private_bandits.py``), T = 1e5 (``--quick``: 1e4), 50 replicas, (epsilon, delta) =
(1, 1e-6) for the learners with Gaussian noise and epsilon = 1 (pure) for the others, built by
``build_learner`` with ``participations=k, min_separation=b``:

* DP-UCB (``tight``, Gaussian noise, a horizon): its counter calibrated for the person's
  pattern (the learner proves the person itself);
* DP-UCB by group privacy (its class given ``budget.by_group_privacy()``): one round at
  epsilon / k, the guarantee stated for any k rounds;
* DP-IMED, AdaP-KLUCB and DP-SE, which prove one round only: group privacy (build_learner asks
  it for them).

Printed: each learner's mean pseudo-regret at T with its 95% normal interval, per person
pattern, and uniform play's (exact); ``--json`` writes the table. AdaP-KLUCB at a one-round
epsilon of 1/4 or less shows a pathology of its index, not of group privacy: every shifted mean
clips to 1, the indices tie, ties go to the lowest arm, and the best arm (the last here) is not
reached within 1e4 rounds (regret 999.9 on every replica at epsilon 0.25 for one round too).
The last table measures that start-up cost: AdaP-KLUCB at epsilon 0.25 for one round with the
best arm first and last, at T = 1e4 and 1e5 (the order stops mattering once the shifts shrink
below the gap's reach). The deployment of the user-level guide closes: its clicks beside
other learners' on the same arrivals.
The patterns: one round (k = 1), 4 rounds 1,000 apart, 16 rounds 100 apart (the counter is
calibrated for the pattern's worst place; it does not matter to group privacy, which covers
any k rounds).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

from dponline.bandits import DPUCB
from dponline.environments.k_armed import KArmedBandit, two_level_means
from dponline.experiments.rounds import Tally, play
from dponline.privacy import PrivacyBudget
from dponline.registry import build_learner

PATTERNS = ((1, 1), (4, 1000), (16, 100))
GROUP = ("dp-imed", "adap-klucb", "dp-se")


def interval(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its normal 95% interval."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(1.96 * v.std(ddof=1) / math.sqrt(v.size))


def regret_of(learner, env) -> np.ndarray:
    """Each replica's pseudo-regret at the horizon (the round loop's fast path)."""
    tally = Tally.start(learner.replicas, last=env.horizon, record_every=env.horizon)
    play(env, learner, range(env.horizon), keep=False, tally=tally, blocks=True)
    return env.regret(tally.loss_table()[-1:].T, np.array([env.horizon]))[:, -1]


def learners_for(k: int, b: int, env, replicas: int) -> dict:
    """The learners of the table for a person of k rounds b apart (one round for k = 1)."""
    person = {} if k == 1 else {"participations": k, "min_separation": b}
    budget = PrivacyBudget(1.0, 1e-6, participations=k, min_separation=b)
    out = {
        "dp-ucb (pattern)": build_learner(
            "dp-ucb",
            env,
            epsilon=1.0,
            delta=1e-6,
            noise="gaussian",
            replicas=replicas,
            rng=1,
            **person,
        ),
        "dp-ucb (group privacy)": DPUCB(
            env.dim, env.horizon, budget=budget.by_group_privacy(), replicas=replicas, rng=1
        ),
    }
    for name in GROUP:
        out[name] = build_learner(name, env, epsilon=1.0, replicas=replicas, rng=1, **person)
    return out


def arm_order(replicas: int) -> dict:
    """AdaP-KLUCB at epsilon 0.25 for one round (its indices saturate and tie) with the best
    arm first and last: mean regret and half-width at T = 1e4 and 1e5."""
    print("AdaP-KLUCB, epsilon 0.25 for one round, ties to the lowest arm:")
    out: dict[str, dict] = {}
    for horizon in (10_000, 100_000):
        row = {}
        for where, best in (("best first", 0), ("best last", 9)):
            means = np.full(10, 0.8)
            means[best] = 0.9
            env = KArmedBandit(means, horizon=horizon, rng=7)
            learner = build_learner("adap-klucb", env, epsilon=0.25, replicas=replicas, rng=1)
            mean, half = interval(regret_of(learner, env))
            row[where] = {"regret": mean, "half_width": half}
            print(f"  T = {horizon:<8}{where:<12}{mean:>10.1f} +- {half:.1f}")
        out[str(horizon)] = row
    print()
    return out


def deployment_clicks() -> dict:
    """The user-level guide's deployment (20 items at click rates 1% to 5%, 10,000 rounds, 100
    users capped at 50 rounds 10 apart, RiverPolicy and ParticipationCap as there) with seed 0:
    its clicks beside other learners' on the same arrivals, uniform play's and the best item's
    expected clicks."""
    from dponline.bandits.river_style import RiverPolicy
    from dponline.privacy import ParticipationCap

    items = [f"item-{i}" for i in range(20)]
    rate = dict(zip(items, np.linspace(0.01, 0.05, 20), strict=True))
    horizon = 10_000
    person = {"participations": 50}
    blt = {"delta": 1e-6, "noise": "gaussian", "mechanism": "anytime_blt"}
    runs = {
        "dp-ucb, the guide's (person: 50 rounds >= 10 apart)": (
            "dp-ucb",
            {"epsilon": 1.0, **blt, **person, "min_separation": 10},
        ),
        "dp-imed (person: 50 rounds, group privacy)": ("dp-imed", {"epsilon": 1.0, **person}),
        "dp-ucb (one round)": ("dp-ucb", {"epsilon": 1.0, **blt}),
        "ucb1 (non-private)": ("ucb1", {}),
        "kl-ucb (non-private)": ("kl-ucb", {}),
    }
    print(
        f"The guide's deployment: clicks in {horizon} rounds, 20 items, 100 users (seed 0; "
        f"uniform play {horizon * 0.03:.0f}, the best item {horizon * 0.05:.0f}, expected):"
    )
    out = {}
    for label, (name, options) in runs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # DP-IMED's long first phases
            policy = RiverPolicy.from_registry(name, items, None, seed=0, **options)
        cap = ParticipationCap.for_guarantee(policy.privacy) if policy.privacy else None
        people = np.random.default_rng(1)
        clicks = 0
        for t in range(horizon):
            who = int(people.integers(100))
            item = policy.pull(items)
            clicked = bool(people.random() < rate[item])
            clicks += clicked
            policy.update(item, clicked if cap is None or cap.admit(who, t) else False)
        out[label] = clicks
        print(f"  {label:<52}{clicks:>6}")
    print()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 1e4")
    parser.add_argument("--replicas", type=int, default=50)
    parser.add_argument("--json", type=Path, help="write the table here")
    args = parser.parse_args()
    horizon = 10_000 if args.quick else 100_000
    means = two_level_means(10, best=0.9, other=0.8)
    uniform = float(horizon * (means.max() - means.mean()))
    print(
        f"K = 10 Bernoulli arms (0.9 / 0.8), T = {horizon}, epsilon = 1 for the unit, "
        f"{args.replicas} replicas; uniform play {uniform:.0f} (exact)\n"
    )
    table: dict[str, dict] = {}
    started = time.perf_counter()
    for k, b in PATTERNS:
        unit = "one round" if k == 1 else f"{k} rounds >= {b} apart"
        env = KArmedBandit(means, horizon=horizon, rng=7)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # DP-IMED's long first phases
            built = learners_for(k, b, env, args.replicas)
        rows = {}
        for name, learner in built.items():
            env = KArmedBandit(means, horizon=horizon, rng=7)
            mean, half = interval(regret_of(learner, env))
            g = learner.privacy
            rows[name] = {
                "regret": mean,
                "half_width": half,
                "epsilon": g.epsilon,
                "participations": g.participations,
                "min_separation": g.min_separation,
                "group_privacy": g.one_input is not None,
            }
            print(f"{unit:<24}{name:<26}{mean:>10.1f} +- {half:<8.1f}")
        table[unit] = rows
        print()
    ties = arm_order(args.replicas)
    clicks = deployment_clicks()
    print(f"{time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "horizon": horizon,
                    "uniform": uniform,
                    "rows": table,
                    "arm_order": ties,
                    "deployment_clicks": clicks,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
