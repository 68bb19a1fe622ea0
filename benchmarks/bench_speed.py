"""Simulation speed, each number before and after in one run.

1. NoisySGD (n^2 single-sample steps, 10 runs x 8 step scales, as in ``dponline reproduce
   han2024``): its numpy steps against its compiled kernel (numba, ``dponline[fast]``), same
   draws, same iterates.
2. The private streaming Frank-Wolfe (Han et al. Algorithm 1), one replica, d = 10, p = 1.5:
   the cost of one step and of its parts (input checks, counter, LMO), measured by timing the
   parts alone on the same inputs.
3. DP-EXP2, one replica, N = 10 arms, T = 1e4: ours against a plain-numpy loop of the same
   algorithm written here (sample an arm, add Laplace noise to its loss, importance-weighted
   estimate, exponential weights with exploration), and ours with 20 replicas per seed.
4. Thompson sampling's Beta draws, 100 replicas x K = 10 arms, each replica from its own
   generator: one numpy call per replica per round against one vectorised call for all of them
   (:class:`~dponline.bandits.replica_draws.ReplicaDraws`), on the same parameters; and the
   whole learners (Thompson sampling, Lazy-DP-TS), 100 replicas x T rounds of the ``two_level``
   Bernoulli instance.

The DP-FTRL fast path (oblivious streams in blocks) is measured by bench_replicas.py. Usage::

    python benchmarks/bench_speed.py [--quick]

Results go to stdout and ``bench-results/speed.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import time
from pathlib import Path

import numpy as np

from dponline.bandits.exp2 import DPEXP2
from dponline.bandits.k_armed import replica_generators
from dponline.bandits.replica_draws import ReplicaDraws
from dponline.domains.lp_ball import LpBall
from dponline.environments.k_armed import KArmedBandit, two_level_means
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import BanditFeedback, SampleFeedback
from dponline.registry import build_learner
from dponline.stochastic.noisy_sgd import NoisySGDPlan
from dponline.stochastic.private_frank_wolfe import PrivateStreamingFrankWolfe
from dponline.stochastic.samples import checked_sample
from dponline.stochastic.sgd_kernel import HAVE_NUMBA

noisy_sgd_module = importlib.import_module("dponline.stochastic.noisy_sgd")


def noisy_sgd(n: int, d: int) -> dict:
    gen = np.random.default_rng(0)
    x = gen.uniform(-1, 1, (n, d))
    x /= np.abs(x).sum(axis=1, keepdims=True)
    y = gen.uniform(-1, 1, n)
    plan = NoisySGDPlan(
        n,
        d,
        x_bound=1.0,
        y_bound=1.25,
        budget=PrivacyBudget(1.0, 1.0 / n),
        step_scales=[0.03, 0.1, 0.3, 1, 3, 10, 30, 100],
    )
    seconds = {}
    fits = {}
    for label, force in (("numpy", True), ("compiled", False)):
        if label == "compiled" and not HAVE_NUMBA:
            continue
        noisy_sgd_module._FORCE_NUMPY = force
        start = time.perf_counter()
        fits[label] = plan.fit(x, y, [np.random.default_rng(s) for s in range(10)])
        seconds[label] = time.perf_counter() - start
    noisy_sgd_module._FORCE_NUMPY = False
    same = float(np.abs(fits["numpy"] - fits["compiled"]).max()) if len(fits) == 2 else math.nan
    return {"n": n, "d": d, "seconds": seconds, "max_difference": same}


def frank_wolfe(horizon: int, d: int = 10, p: float = 1.5) -> dict:
    domain = LpBall(d, p)
    gen = np.random.default_rng(0)
    x = gen.uniform(-1, 1, (horizon, d))
    x /= np.linalg.norm(x, ord=domain.q, axis=1, keepdims=True) * 1.01
    y = gen.uniform(-1, 1, horizon)
    feedback = [SampleFeedback(x[i], y[i]) for i in range(horizon)]
    learner = PrivateStreamingFrankWolfe(
        domain, horizon, budget=PrivacyBudget(1.0, 1.0 / horizon), rng=0
    )
    start = time.perf_counter()
    for fb in feedback:
        learner.act()
        learner.observe(fb)
    step = (time.perf_counter() - start) / horizon
    # the parts alone, on the same inputs
    start = time.perf_counter()
    for fb in feedback:
        checked_sample(fb, d, domain.q, 1.0, 1.0, False)
    checks = (time.perf_counter() - start) / horizon
    counter = type(learner.counter)(horizon, d, learner.counter.noise, rng=1)
    g = np.ones(d) * 0.01
    start = time.perf_counter()
    for _ in range(horizon):
        counter.step(g)
    counting = (time.perf_counter() - start) / horizon
    directions = gen.normal(size=(horizon, 1, d))
    start = time.perf_counter()
    for direction in directions:
        domain.lmo(direction)
    lmo = (time.perf_counter() - start) / horizon
    return {
        "T": horizon,
        "d": d,
        "p": p,
        "counter": learner.counter.name,
        "us_per_step": step * 1e6,
        "us_checks": checks * 1e6,
        "us_counter": counting * 1e6,
        "us_lmo": lmo * 1e6,
    }


def plain_exp2(losses: np.ndarray, eta: float, gamma: float, lam: float, seed: int) -> float:
    """Agarwal & Singh (2017) DP-EXP2 on the N-armed bandit, one run, written as a plain
    loop: play k ~ p, observe l_t(k) + Laplace(lam), estimate l~ = value / p_k e_k, update
    the exponential weights; p = (1 - gamma) q + gamma / N. Returns the cumulative loss."""
    gen = np.random.default_rng(seed)
    horizon, n = losses.shape
    log_q = np.zeros(n)
    total = 0.0
    for t in range(horizon):
        q = np.exp(log_q - log_q.max())
        p = (1.0 - gamma) * q / q.sum() + gamma / n
        k = min(int(np.searchsorted(np.cumsum(p), gen.random())), n - 1)
        total += losses[t, k]
        value = losses[t, k] + gen.laplace(0.0, lam)
        log_q[k] -= eta * value / p[k]
    return total


def dp_exp2(horizon: int, n: int = 10) -> dict:
    losses = np.random.default_rng(0).uniform(size=(horizon, n))
    budget = PrivacyBudget(1.0)
    out: dict = {"T": horizon, "N": n}
    warm = DPEXP2(n, 10, budget=budget, rng=0)  # compiled kernels load once a process
    for _ in range(10):
        warm.act()
        warm.observe(BanditFeedback(np.array([0.5])))
    for replicas in (1, 20):
        learner = DPEXP2(n, horizon, budget=budget, replicas=replicas, rng=0)
        start = time.perf_counter()
        for t in range(horizon):
            arms = learner.act()
            learner.observe(BanditFeedback(losses[t][arms]))
        seconds = time.perf_counter() - start
        out[f"ours_R{replicas}_seconds_per_seed"] = seconds / replicas
    start = time.perf_counter()
    plain_exp2(losses, learner.eta, learner.gamma, learner.laplace_scale, seed=0)
    out["plain_numpy_seconds"] = time.perf_counter() - start
    return out


def beta_draws(rounds: int, replicas: int = 100, k: int = 10) -> dict:
    gen = np.random.default_rng(0)
    a = gen.uniform(1.0, 200.0, size=(rounds, replicas, k))
    b = gen.uniform(1.0, 200.0, size=(rounds, replicas, k))
    rows = np.arange(replicas)
    gens = replica_generators(1, replicas)
    start = time.perf_counter()
    for t in range(rounds):
        np.stack([gens[i].beta(a[t, i], b[t, i]) for i in range(replicas)])
    per_replica = time.perf_counter() - start
    gens = replica_generators(1, replicas)
    draws = ReplicaDraws(replicas, 2 * k)
    start = time.perf_counter()
    for t in range(rounds):
        draws.beta(gens, rows, a[t], b[t])
    vectorised = time.perf_counter() - start
    out: dict = {
        "rounds": rounds,
        "replicas": replicas,
        "K": k,
        "per_replica_calls_seconds": per_replica,
        "vectorised_seconds": vectorised,
    }
    for name in ("thompson", "lazy-dp-ts"):
        env = KArmedBandit(family="bernoulli", means=two_level_means(), horizon=rounds, rng=7)
        epsilon = None if name == "thompson" else 1.0
        learner = build_learner(name, env, epsilon=epsilon, replicas=replicas, rng=1)
        start = time.perf_counter()
        learner.play_stochastic(env, rounds)
        out[f"{name}_seconds"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (seconds)")
    parser.add_argument("--out", default="bench-results/speed.json")
    args = parser.parse_args()
    n_sgd, t_fw, t_exp2 = (300, 2_000, 2_000) if args.quick else (1_000, 10_000, 10_000)

    sgd = noisy_sgd(n_sgd, 5)
    sec = sgd["seconds"]
    print(f"NoisySGD, n = {n_sgd} ({n_sgd**2} steps), d = 5, 10 runs x 8 step scales:")
    compiled = sec.get("compiled", math.nan)
    print(
        f"  numpy steps {sec['numpy']:.2f} s, compiled {compiled:.2f} s "
        f"({sec['numpy'] / compiled:.1f}x); largest difference {sgd['max_difference']:.1e}"
        if HAVE_NUMBA
        else f"  numpy steps {sec['numpy']:.2f} s (numba absent: pip install dponline[fast])"
    )
    fw = frank_wolfe(t_fw)
    print(
        f"private streaming Frank-Wolfe, one replica, d = 10, p = 1.5, T = {t_fw} "
        f"({fw['counter']}): {fw['us_per_step']:.1f} us a step (target < 100); parts alone: "
        f"checks {fw['us_checks']:.1f}, counter {fw['us_counter']:.1f}, LMO {fw['us_lmo']:.1f} us"
    )
    ex = dp_exp2(t_exp2)
    print(
        f"DP-EXP2, N = 10, T = {t_exp2}: ours {ex['ours_R1_seconds_per_seed']:.3f} s a seed "
        f"(one replica), {ex['ours_R20_seconds_per_seed']:.3f} s a seed with 20 replicas; "
        f"plain-numpy loop {ex['plain_numpy_seconds']:.3f} s "
        f"(ours / plain = {ex['ours_R1_seconds_per_seed'] / ex['plain_numpy_seconds']:.2f})"
    )
    t_beta = 2_000 if args.quick else 10_000
    bd = beta_draws(t_beta)
    print(
        f"Thompson sampling's Beta draws, 100 replicas x K = 10, {t_beta} rounds: one call per "
        f"replica {bd['per_replica_calls_seconds']:.2f} s, vectorised "
        f"{bd['vectorised_seconds']:.2f} s "
        f"({bd['per_replica_calls_seconds'] / bd['vectorised_seconds']:.1f}x); whole learners "
        f"(100 replicas x T = {t_beta}): Thompson sampling {bd['thompson_seconds']:.2f} s, "
        f"Lazy-DP-TS {bd['lazy-dp-ts_seconds']:.2f} s"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"noisy_sgd": sgd, "frank_wolfe": fw, "dp_exp2": ex, "beta_draws": bd}, indent=2)
    )


if __name__ == "__main__":
    main()
