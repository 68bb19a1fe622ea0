"""Private stochastic K-armed bandits at epsilon <= 1 against their non-private references, the
batched private adversarial bandit against DP-EXP2, and the speed of the fast path.

    python benchmarks/bench_private_bandits.py [--quick] [--replicas R] [--json FILE]

Tables (pseudo-regret at T, mean over replicas with a 95% interval, exact from the arms' means):

1. Bernoulli, K = 10, best mean 0.9, the others 0.8, T = 1e5, epsilon = 1: every private
   learner of the K-armed suite and the non-private references;
2. the same at epsilon = 0.1;
3. unequal gaps (means 0.9 down to 0.5), epsilon = 1.

Ratios (written under ``ratios`` with ``--json``): ``best_private_vs_klucb``, the best private
learner's regret over non-private KL-UCB's, and ``best_private_vs_dp_ucb``, over DP-UCB's, for
each table (suffixes ``_eps0.1`` and ``_unequal_gaps`` for tables 2 and 3); ``batched_vs_dp_exp2``,
the batched conversion around EXP3 over DP-EXP2 (tight), epsilon = 1, T = 1e5, the larger of the
two streams (K = 10 adversarial losses and the NYSE bandit), with uniform play beside it; and
``speed_seconds``, 100 replicas x T = 1e6 x K = 10 of the best private learner of table 1 on one
core. The batched table also runs the conversion around HTINF (the paper's base):
``batched_htinf_vs_dp_exp2``, the larger of its two ratios to DP-EXP2. A last table runs the
private learners for bandits with expert advice (private EXP4, the batched conversion over the
experts around EXP3 and around HTINF) against EXP4 on an informed-expert stream and on the NYSE
bandit with experts: ``best_private_expert_vs_exp4``, the larger over the two streams of the
best private learner's regret over EXP4's (no target). ``--quick`` runs
T = 1e4 (the speed figure at T = 1e5) and takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from dponline.bandits.k_armed import PRIVATE_K_ARMED
from dponline.bandits.lower_bounds import lai_robbins_coefficient, lower_bound_coefficients
from dponline.environments.catalogue import build_environment
from dponline.environments.expert_advice import ExpertAdviceBandit
from dponline.environments.k_armed import KArmedBandit, two_level_means, unequal_gap_means
from dponline.experiments.rounds import Tally, play
from dponline.registry import build_learner, learners

PRIVATE = PRIVATE_K_ARMED
NON_PRIVATE = ("kl-ucb", "ucb1", "imed", "thompson", "successive-elimination")


def interval(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its normal 95% interval."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(1.96 * v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0


def run(name: str, env, epsilon: float | None, replicas: int, seed: int = 1, options=None) -> tuple:
    """Final pseudo-regret of each replica and the seconds it took (the round loop's fast path
    where the learner offers it); ``options`` go to the learner's factory."""
    learner = build_learner(
        name, env, epsilon=epsilon, replicas=replicas, rng=seed, **(options or {})
    )
    tally = Tally.start(replicas, last=env.horizon, record_every=env.horizon)
    start = time.perf_counter()
    play(env, learner, range(env.horizon), keep=False, tally=tally, blocks=True)
    seconds = time.perf_counter() - start
    regret = env.regret(tally.loss_table()[-1:].T, np.array([env.horizon]))[:, -1]
    return regret, seconds


def k_armed_table(title: str, means: np.ndarray, horizon: int, epsilon: float, replicas: int):
    catalogue = learners()
    print(f"\n{title}: K = {means.size}, T = {horizon}, epsilon = {epsilon}, {replicas} replicas")
    print(f"{'learner':<24}{'regret':>11}{'+-95%':>9}{'seconds':>9}")
    rows = {}
    for name in (*PRIVATE, *NON_PRIVATE):
        if name not in catalogue:
            print(f"{name:<24}{'(not registered)':>29}")
            continue
        env = KArmedBandit(family="bernoulli", means=means, horizon=horizon, rng=7)
        eps = epsilon if catalogue[name].private else None
        regret, secs = run(name, env, eps, replicas)
        mean, half = interval(regret)
        rows[name] = {"regret": mean, "half_width": half, "seconds": secs}
        print(f"{name:<24}{mean:>11.1f}{half:>9.1f}{secs:>9.1f}")
    log_t = math.log(horizon)
    floor_lr = lai_robbins_coefficient(means) * log_t
    floor_private = max(lower_bound_coefficients(means, epsilon).values()) * log_t
    print(
        f"asymptotic lower bounds at T: Lai-Robbins {floor_lr:.1f}, private (epsilon = "
        f"{epsilon:g}) {floor_private:.1f}"
    )
    private = {n: r["regret"] for n, r in rows.items() if n in PRIVATE}
    best = min(private, key=private.get)
    others = {n: v for n, v in private.items() if n != "dp-ucb"}
    best_vs_dp_ucb = min(others.values()) / rows["dp-ucb"]["regret"]
    ratios = {
        "best_private": best,
        "best_private_vs_private_lower_bound": private[best] / floor_private,
        "best_private_vs_klucb": private[best] / rows["kl-ucb"]["regret"],
        "best_private_vs_dp_ucb": best_vs_dp_ucb,
    }
    print(
        f"best private: {best}; vs KL-UCB {ratios['best_private_vs_klucb']:.2f}x "
        f"(target <= 1.5); best other than DP-UCB vs DP-UCB {best_vs_dp_ucb:.2f}x (target <= 0.5)"
    )
    return rows, ratios


def measured(env, name: str, replicas: int, cells: tuple, options=None) -> dict:
    """Run registry learner ``name`` (epsilon = 1 when private) on ``env``, print its row
    (``cells``: stream label and width, learner label and width) and return it."""
    eps = 1.0 if learners()[name].private else None
    mean, half = interval(run(name, env, eps, replicas, options=options)[0])
    label, w1, shown, w2 = cells
    print(f"{label:<{w1}}{shown:<{w2}}{env.horizon:>8}{mean:>11.1f}{half:>9.1f}")
    return {"regret": mean, "half_width": half, "horizon": env.horizon}


def exact_row(regret: float, env, cells: tuple) -> dict:
    """Print and return the row of an exactly computed regret (no interval)."""
    label, w1, shown, w2 = cells
    print(f"{label:<{w1}}{shown:<{w2}}{env.horizon:>8}{regret:>11.1f}{'exact':>9}")
    return {"regret": regret, "half_width": 0.0, "horizon": env.horizon}


def uniform_regret(env) -> float:
    """Uniform play's expected regret on an oblivious loss matrix, exactly."""
    return float(env.losses.mean(axis=1).sum() - env.losses.sum(axis=0).min())


def batched_table(horizon: int, replicas: int) -> tuple[dict, float]:
    """The batched conversion around EXP3 against DP-EXP2 (tight), epsilon = 1, with uniform
    play's exact expected regret, on K = 10 adversarial losses (the best arm changes 4 times)
    and on the NYSE bandit (its 5,651 days at most)."""
    streams = {  # name, options, the data's length (None: synthetic, any horizon)
        "switching, K = 10": ("switching_bandit", {"n_arms": 10}, None),
        "NYSE bandit, K = 36": ("stock_bandit", {"dataset": "nyse_o"}, 5651),
    }
    print(f"\nAdversarial bandits, epsilon = 1, {replicas} replicas (realised regret)")
    print(f"{'stream':<22}{'learner':<14}{'T':>8}{'regret':>11}{'+-95%':>9}")
    rows: dict[str, dict] = {}
    worst = 0.0
    for label, (env_name, options, length) in streams.items():
        t_env = horizon if length is None else min(horizon, length)
        rows[label] = {}
        for name in ("batched-exp3", "batched-htinf", "dp-exp2", "exp3"):
            env = build_environment(env_name, t_env, np.random.default_rng(1), **options)
            rows[label][name] = measured(env, name, replicas, (label, 22, name, 14))
        uniform = uniform_regret(env)
        rows[label]["uniform"] = exact_row(uniform, env, (label, 22, "uniform", 14))
        batched = rows[label]["batched-exp3"]
        ratio = batched["regret"] / rows[label]["dp-exp2"]["regret"]
        below = batched["regret"] + batched["half_width"] < uniform
        rows[label]["batched_vs_dp_exp2"] = ratio
        rows[label]["batched_htinf_vs_dp_exp2"] = (
            rows[label]["batched-htinf"]["regret"] / rows[label]["dp-exp2"]["regret"]
        )
        rows[label]["batched_below_uniform"] = bool(below)
        worst = max(worst, ratio)
        print(
            f"{label}: batched / DP-EXP2 = {ratio:.2f} (target <= 0.5); batched below uniform "
            f"play by its 95% interval: {'yes' if below else 'no'}; with the HTINF base "
            f"{rows[label]['batched_htinf_vs_dp_exp2']:.2f}"
        )
    return rows, worst


def nyse_with_experts(n_random: int = 12, seed: int = 0) -> ExpertAdviceBandit:
    """The NYSE bandit (5,651 days, 36 stocks) with 36 + ``n_random`` experts: one per stock and
    ``n_random`` with Dirichlet(1) advice drawn up front from ``seed`` (advice independent of the
    losses, as the guarantees require: it is public); the catalogue's ``stock_bandit`` with
    ``dataset = "nyse_o"``, ``random_experts = n_random``, ``advice_seed = seed``."""
    return build_environment(
        "stock_bandit",
        None,
        np.random.default_rng(0),
        dataset="nyse_o",
        random_experts=n_random,
        advice_seed=seed,
    )


def uniform_expert_regret(env: ExpertAdviceBandit) -> float:
    """Uniform play's expected regret against the best expert in hindsight, exactly."""
    experts = np.einsum("tjk,tk->j", env.advice, env.losses)
    return float(env.losses.mean(axis=1).sum() - experts.min())


#: the expert-advice learners of the table: (label, registry name, options)
EXPERT_LEARNERS = (
    ("private-exp4", "private-exp4", {}),
    ("batched-exp4 (EXP3)", "batched-exp4", {"base": "exp3"}),
    ("batched-exp4 (HTINF)", "batched-exp4", {"base": "htinf"}),
    ("exp4", "exp4", {}),
)


def expert_table(horizon: int, replicas: int) -> dict:
    """The private learners for bandits with expert advice against EXP4, epsilon = 1, with
    uniform play's exact expected regret (against the best expert): the informed-expert stream
    (K = 10 Bernoulli arms whose best switches 4 times, N = 20: an expert that knows the best
    arm, the 10 arm experts, 9 Dirichlet ones) and the NYSE bandit with its 36 stock experts
    and 12 Dirichlet ones (its 5,651 days at most)."""
    streams = {
        "informed experts, K = 10, N = 20": lambda t: build_environment(
            "expert_advice", t, np.random.default_rng(1)
        ),
        "NYSE bandit, K = 36, N = 48": lambda t: nyse_with_experts(),
    }
    print(
        f"\nBandits with expert advice, epsilon = 1, {replicas} replicas (regret against the "
        "best expert)"
    )
    print(f"{'stream':<34}{'learner':<22}{'T':>8}{'regret':>11}{'+-95%':>9}")
    rows: dict[str, dict] = {}
    for label, make in streams.items():
        rows[label] = {}
        for name, entry, options in EXPERT_LEARNERS:
            env = make(horizon)
            t_env = min(horizon, env.horizon)
            if t_env < env.horizon:
                env = ExpertAdviceBandit(
                    env.losses[:t_env], name=env.name, advice=env.advice[:t_env]
                )
            rows[label][name] = measured(env, entry, replicas, (label, 34, name, 22), options)
        uniform = uniform_expert_regret(env)
        rows[label]["uniform"] = exact_row(uniform, env, (label, 34, "uniform", 22))
        private = [n for n, e, _ in EXPERT_LEARNERS if learners()[e].private]
        best = min(private, key=lambda n: rows[label][n]["regret"])
        rows[label]["best_private"] = best
        rows[label]["best_private_vs_exp4"] = (
            rows[label][best]["regret"] / rows[label]["exp4"]["regret"]
        )
        print(f"{label}: best private {best}, {rows[label]['best_private_vs_exp4']:.2f}x EXP4")
    return rows


def speed(best: str, horizon: int, replicas: int = 100) -> float:
    """Seconds for ``replicas`` x ``horizon`` rounds of ``best`` on K = 10, one core."""
    env = KArmedBandit(family="bernoulli", means=two_level_means(), horizon=horizon, rng=7)
    with threadpool_limits(1):
        _, seconds = run(best, env, 1.0, replicas)
    print(f"\nspeed: {best}, {replicas} replicas x T = {horizon} x K = 10: {seconds:.2f} s")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 1e4 (speed at T = 1e5)")
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--json", type=Path, help="write the tables and ratios to this file")
    args = parser.parse_args()
    horizon = 10_000 if args.quick else 100_000
    out: dict = {"horizon": horizon, "replicas": args.replicas, "tables": {}, "ratios": {}}
    settings = (
        ("", "Bernoulli, best 0.9, others 0.8", two_level_means(), 1.0),
        ("_eps0.1", "Bernoulli, best 0.9, others 0.8", two_level_means(), 0.1),
        ("_unequal_gaps", "Bernoulli, unequal gaps", unequal_gap_means(), 1.0),
    )
    best = None
    for suffix, title, means, eps in settings:
        rows, ratios = k_armed_table(title, means, horizon, eps, args.replicas)
        out["tables"][f"k_armed{suffix}"] = rows
        best = best or ratios["best_private"]
        out["ratios"][f"best_private_vs_klucb{suffix}"] = ratios["best_private_vs_klucb"]
        out["ratios"][f"best_private_vs_dp_ucb{suffix}"] = ratios["best_private_vs_dp_ucb"]
        out["ratios"][f"best_private_vs_private_lower_bound{suffix}"] = ratios[
            "best_private_vs_private_lower_bound"
        ]
    rows, worst = batched_table(horizon, args.replicas)
    out["tables"]["batched"] = rows
    out["ratios"]["batched_vs_dp_exp2"] = worst
    out["ratios"]["batched_htinf_vs_dp_exp2"] = max(
        r["batched_htinf_vs_dp_exp2"] for r in rows.values()
    )
    rows = expert_table(horizon, args.replicas)
    out["tables"]["expert_advice"] = rows
    out["ratios"]["best_private_expert_vs_exp4"] = max(
        r["best_private_vs_exp4"] for r in rows.values()
    )
    out["ratios"]["speed_seconds"] = speed(best, 100_000 if args.quick else 1_000_000)
    out["best_private"] = best
    print("\nratios:", json.dumps(out["ratios"], indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
