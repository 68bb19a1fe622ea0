"""The main job (``dponline demo``): every learner dponline offers, on real data shipped with
the package, at a few privacy levels and in both calibrations; a table and an HTML report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dponline.experiments.report import summarise, write_report
from dponline.experiments.runner import run_sweep
from dponline.experiments.spec import parse_spec

__all__ = ["DEMO_SPEC", "run_demo"]

#: The demo as a spec (the same format ``dponline run`` reads).
DEMO_SPEC = {
    "name": "dponline demo: experts, bandits and contextual bandits on real and synthetic data",
    "environments": [
        {"name": "stocks", "options": {"dataset": "nyse_o", "scale": 0.03}, "label": "NYSE (O)"},
        {"name": "stochastic", "options": {"n_experts": 10, "gap": 0.1}, "label": "stochastic"},
        {
            "name": "stock_bandit",
            "options": {"dataset": "nyse_o", "scale": 0.03},
            "label": "NYSE (O) bandit",
        },
        {
            "name": "bandit_linear",
            "options": {"dim": 3, "domain": "ball"},
            "label": "bandit linear (ball)",
        },
        {
            "name": "stock_basket",
            "options": {"dataset": "nyse_o", "k": 5},
            "label": "NYSE (O) 5-baskets",
        },
        {
            "name": "stock_tree",
            "options": {"dataset": "djia", "stocks": 15},
            "horizon": 507,
            "label": "DJIA spanning trees",
        },
        {"name": "glm_bandit", "options": {"dim": 10}, "label": "GLM bandit (logistic)"},
        {"name": "digits_bandit", "label": "digits contextual bandit"},
        {
            "name": "digits_logistic",
            "options": {"pool": 4},
            "horizon": 1797,
            "label": "digits logistic regression",
        },
        {
            "name": "stock_portfolio_low_dim",
            "options": {"dim": 1},
            "label": "NYSE (O) 2-stock portfolio",
        },
    ],
    "learners": [
        {"name": "ftrl"},
        {"name": "dp-ftrl", "options": {"noise": "laplace"}, "label": "dp-ftrl laplace"},
        {
            "name": "dp-ftrl",
            "options": {"noise": "gaussian", "delta": 1e-6},
            "label": "dp-ftrl gaussian",
        },
        {"name": "ftpl"},
        {"name": "dp-ftpl", "options": {"delta": 1e-6}, "label": "dp-ftpl gaussian"},
        {"name": "scrible"},
        {"name": "dp-scrible"},
        {"name": "exp2"},
        {"name": "dp-exp2"},
        {"name": "projection-free-bandit"},
        {"name": "private-bandit", "label": "private-bandit laplace"},
        {
            "name": "private-bandit",
            "options": {"delta": 1e-6},
            "label": "private-bandit gaussian",
        },
        {"name": "glm-bandit"},
        {"name": "dp-glm-bandit"},
        {"name": "ctrl-glm"},
        {"name": "lazy-ctrl"},
        {"name": "dp-ftrl-oco"},
        {"name": "ftrl-oco"},
        {"name": "dp-dyadic-hedge", "options": {"levels": 8}},
        {"name": "dyadic-hedge", "options": {"levels": 8}},
    ],
    "epsilons": [0.25, 1.0, 4.0],
    "calibrations": ["paper", "tight"],
    # the papers' own formulas sometimes prove less than asked; the report shows what they prove
    "allow_weaker_paper": True,
    "seeds": 20,
    "seed": 2026,
    "record_every": 25,
}


def run_demo(
    out_dir: str | Path,
    *,
    seeds: int | None = None,
    backend: str = "local",
    workers: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
    """Run the demo sweep, write the report; return (results, summary, index.html path)."""
    data = dict(DEMO_SPEC, horizon=5651)
    if seeds is not None:
        data["seeds"] = seeds
    spec = parse_spec(data)
    # finished tasks are kept in out/checkpoints: an interrupted demo resumes where it stopped
    results = run_sweep(
        spec.tasks(),
        backend=backend,
        workers=workers,
        checkpoint_dir=Path(out_dir) / "checkpoints",
        checkpoint_every=10**9,
    )
    index = write_report(
        results,
        out_dir,
        title=spec.name,
        notes=(
            "36 NYSE stocks over 5,651 trading days (1962-1984) are the experts; an "
            "expert's daily loss is 1/2 - return/0.06, clipped to [0, 1]. The stochastic "
            "sequence has 10 experts with Bernoulli losses, one better by 0.1, over the "
            "same 5,651 rounds. In the bandit, the 36 stocks are arms (same losses, only the "
            "played arm's loss is seen). The bandit linear problem has drifting random "
            "losses in the unit ball and decisions in the unit ball of R^3. The projection-free "
            "bandits (Ene, Nguyen & Vladu 2021) choose 5 of the 36 NYSE stocks a day (the "
            "uniform matroid's base polytope) and a spanning tree of 15 DJIA stocks a day (507 "
            "days; an edge costs how far its two stocks' returns diverge), seeing only the "
            "basket's or tree's loss. Laplace learners "
            "are pure epsilon-DP, Gaussian ones (epsilon, 1e-6)-DP, event-level over loss "
            "sequences that differ in one day. The contextual bandits run Han et al.'s "
            "Algorithm 3, (epsilon, 1/T)-joint DP over users: a synthetic logistic GLM bandit "
            "(3 arms in R^10, regret = pseudo-regret) and the UCI handwritten digits shipped "
            "with dponline (10 arms, one per digit; regret = mistakes). Online logistic regression "
            "on the same digits (0-4 against 5-9, the 8 x 8 pixels averaged into 16 features, "
            "1,797 rounds) runs CTRL (Agarwal, Kale, Singh & Thakurta 2023; GLM parameters, "
            "(epsilon, 1e-6)-DP), its lazy non-private form and DP-FTRL on the linearised "
            "losses. A portfolio of two NYSE stocks, its weight on the first in [0, 1], has the "
            "loss -log(the day's wealth relative); the private Hedge on the dyadic grid of "
            "Theorem 14 (255 points) plays it, (epsilon, 1e-6)-DP."
        ),
    )
    return results, summarise(results), index
