"""The main job (``dponline demo``): dponline's learners on real data shipped with the
package and on synthetic streams, at a few privacy levels and in both calibrations; a table and
an HTML report.

The default demo (:data:`DEMO_SPEC`, under two minutes on two cores) keeps the settings where
the effect of privacy and of the tight calibration shows beyond the confidence bands at 10
seeds; ``dponline demo --full`` (:data:`FULL_DEMO_SPEC`) runs the online and bandit learners
on every setting at 20 seeds (all of the default demo's among them; batched EXP2 and CTRL's
general and strongly convex forms are left to the benchmarks), including the NYSE settings
where all learners, private or not, are within one confidence interval of each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dponline.experiments.lower_bound_curves import lower_bound_references, uniform_play_regret
from dponline.experiments.report import summarise, write_report
from dponline.experiments.runner import run_sweep
from dponline.experiments.spec import parse_spec

__all__ = ["DEMO_SPEC", "FULL_DEMO_SPEC", "run_demo"]

_CAPTIONS = {
    "stochastic": "Ten experts with Bernoulli losses, one better by 0.1, over 5,651 rounds. "
    "What to see: at every epsilon the tight calibration's regret is well below the paper's, "
    "and it approaches the non-private learner as epsilon grows.",
    "digits logistic regression": "Online logistic regression on the shipped UCI digits (0-4 "
    "against 5-9), the 8 x 8 pixels averaged into 16 features, 1,797 rounds, decisions in the "
    "ball of radius 5. CTRL (Agarwal, Kale, Singh & Thakurta 2023, GLM parameters) and DP-FTRL "
    "on the linearised losses are (epsilon, 1e-6)-DP. What to see: DP-FTRL's regret falls with "
    "epsilon and the tight calibration beats the paper's at epsilon = 4; CTRL's tight "
    "calibration (our Renyi analysis, sigma 100 to 1,430 here) beats DP-FTRL up to epsilon = 1 "
    "and its own lazy non-private form at every budget, but stays flat in epsilon, while the "
    "paper's (sigma 1.5e4 to 2.5e5) keeps it near a random boundary point.",
    "digits contextual bandit": "The same digits as a 10-armed contextual bandit (an image a "
    "round, reward 1 for the right digit; regret = mistakes), Han et al.'s jointly private GLM "
    "bandit (Algorithm 3, (epsilon, 1/T)-joint DP). What to see: without privacy the bandit "
    "learns; with privacy, at these budgets and this horizon, it plays near chance level: the "
    "uniform-play curve (9 mistakes in 10) is drawn beside it, and a note says at which "
    "epsilon it is not below it (benchmarks/bench_glm_digits.py measures where it starts to "
    "learn: from epsilon = 4 barely, clearly from 64).",
    "bandit linear (ball)": "Bandit linear optimisation with drifting random losses in the unit "
    "ball of R^3, SCRiBLe and its private version (Agarwal & Singh 2017, Theorem 4.5). What to "
    "see: regret falls steeply with epsilon towards the non-private learner.",
    "K-armed Bernoulli bandit": "Ten Bernoulli arms, the best at 0.9 and the others at 0.8, "
    "10,000 rounds: the private stochastic bandits, each reward entering one noisy episode or "
    "phase statistic (pure epsilon-DP over reward sequences that differ in one round), against "
    "KL-UCB and IMED. Dash-dot-dotted: the asymptotic regret lower bounds, Lai & Robbins' "
    "for every learner (grey) and Azize et al.'s private one at each epsilon (its colour; "
    "it binds pure epsilon-DP learners, so the full demo's AdaC-UCB, zCDP, is drawn without "
    "it), coefficient times log t, drawn from where they fall below uniform play's regret "
    "(asymptotic bounds: a curve may lie below them early on). What "
    "to see: DP-KLUCB and DP-IMED, which keep all their samples, come within 1.5x of "
    "KL-UCB from epsilon = 1 (DP-IMED below it, and within 2x of IMED, the best learner "
    "here); "
    "AdaP-KLUCB, which forgets all but its "
    "last episode, stays far above them at this horizon, and at epsilon = 0.25 its widened "
    "indices all clip to 1 and it never leaves its first arm.",
    "Open Bandit Dataset items": "Real data: the 80 items of the Open Bandit Dataset's shipped "
    "sample (ZOZOTOWN fashion recommendations logged by uniform random play) as Bernoulli arms "
    "at their measured click rates (2.6% for the best item, 0 for 51 of them), 10,000 rounds. "
    "A hard instance: gaps of a fraction of a percent over 80 arms, so within this horizon "
    "every learner, private or not, stays close to uniform play's regret (0.0225 a round). "
    "The replay evaluation of the contextual bandits on the same log is in the table below.",
    "NYSE (O)": "The 36 NYSE stocks over 5,651 trading days (1962-1984) as experts; an "
    "expert's daily loss is 1/2 - return / 0.06, clipped to [0, 1]. The stocks' losses are so "
    "close that regrets stay small for every learner, private or not, and the differences "
    "between privacy levels are within a few confidence intervals: this setting shows the "
    "learners run on real data more than it shows an effect of privacy.",
    "NYSE (O) bandit": "The same stocks as bandit arms (only the played arm's loss is seen).",
    "NYSE (O) 5-baskets": "Projection-free bandits (Ene, Nguyen & Vladu 2021) choose 5 of the "
    "36 stocks a day (the uniform matroid's base polytope), seeing only the basket's loss.",
    "DJIA spanning trees": "A spanning tree of 15 DJIA stocks a day over 507 days; an edge "
    "costs how far its two stocks' returns diverge; only the tree's loss is seen.",
    "GLM bandit (logistic)": "A synthetic logistic GLM bandit, 3 arms in R^10, regret = "
    "pseudo-regret (Han et al.'s Algorithm 3, (epsilon, 1/T)-joint DP).",
    "bandits with expert advice": "Ten arms with Bernoulli losses whose best arm switches 4 "
    "times, and 20 experts: one that knows the current best arm (right with probability 0.8), "
    "one per arm and 9 random mixtures; regret against the best expert in hindsight. EXP4 "
    "and its private versions (Asi, Raman & Talwar 2025: the batched conversion over the "
    "experts; EXP4 on Laplace-noised losses).",
    "NYSE (O) 2-stock portfolio": "A portfolio of two NYSE stocks, its weight on the first in "
    "[0, 1], the loss -log(the day's wealth relative), played by the private Hedge on the "
    "dyadic grid of Theorem 14 (Agarwal, Kale, Singh & Thakurta 2023; 255 points). The best "
    "fixed weight in hindsight earns so little more than the others that regrets are tiny "
    "for every learner.",
}


#: FTRL and its two private versions (Laplace, Gaussian), in both demos
_FTRL = (
    {"name": "ftrl"},
    {"name": "dp-ftrl", "options": {"noise": "laplace"}, "label": "dp-ftrl laplace"},
    {
        "name": "dp-ftrl",
        "options": {"noise": "gaussian", "delta": 1e-6},
        "label": "dp-ftrl gaussian",
    },
)


#: the stochastic K-armed bandits of the default demo: the private learners that keep all their
#: samples (DP-IMED, DP-KLUCB), the one that forgets (AdaP-KLUCB), and the non-private KL-UCB
#: and IMED they privatise (DP-UCB, DP-SE and the rest: benchmarks/bench_private_bandits.py)
_K_ARMED = (
    {"name": "dp-imed"},
    {"name": "dp-klucb"},
    {"name": "adap-klucb"},
    {"name": "kl-ucb"},
    {"name": "imed"},
)


#: the other stochastic K-armed bandits, in the full demo only
_MORE_K_ARMED = (
    "dp-ucb",
    "dp-se",
    "adap-ucb",
    "adac-ucb",
    "lazy-dp-ts",
    "ucb1",
    "thompson",
    "successive-elimination",
)


def _replay_section(out_dir: str | Path, seeds: int = 5) -> tuple[str, str, pd.DataFrame]:
    """The replay evaluation (Li et al. 2011) of the contextual bandits on the Open Bandit
    Dataset's uniformly logged sample (its first 10 items), ``seeds`` runs each (5 unless
    ``dponline demo --seeds`` says otherwise): a section of the report, and replay.csv beside
    it."""
    from dponline.environments.open_bandit import open_bandit_log
    from dponline.experiments.replay import replay_contextual_learners, replay_note

    log = open_bandit_log(10)
    table, _ = replay_contextual_learners(log, epsilons=(1.0, 4.0), seeds=seeds, seed=2026)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    table.to_csv(Path(out_dir) / "replay.csv", index=False)
    title = "Replay on the Open Bandit Dataset (contextual bandits)"
    return title, replay_note(table, log), table


def _env(name: str, label: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "label": label, "caption": _CAPTIONS[label], **extra}


def _k_armed_settings() -> tuple[dict[str, Any], ...]:
    """The stochastic K-armed settings of both demos: ten Bernoulli arms and the Open Bandit
    Dataset's items, 10,000 rounds each."""
    return (
        _env(
            "k_armed", "K-armed Bernoulli bandit", options={"instance": "two_level"}, horizon=10_000
        ),
        _env("open_bandit_arms", "Open Bandit Dataset items", horizon=10_000),
    )


#: ``dponline demo --full``: the online and bandit learners on every setting (the format
#: ``dponline run`` reads), 20 seeds.
FULL_DEMO_SPEC = {
    "name": "dponline demo (full): experts, bandits, contextual bandits and online convex "
    "optimisation on real and synthetic data",
    "environments": [
        _env("stocks", "NYSE (O)", options={"dataset": "nyse_o", "scale": 0.03}),
        _env("stochastic", "stochastic", options={"n_experts": 10, "gap": 0.1}),
        _env("stock_bandit", "NYSE (O) bandit", options={"dataset": "nyse_o", "scale": 0.03}),
        _env("bandit_linear", "bandit linear (ball)", options={"dim": 3, "domain": "ball"}),
        _env("stock_basket", "NYSE (O) 5-baskets", options={"dataset": "nyse_o", "k": 5}),
        _env(
            "stock_tree",
            "DJIA spanning trees",
            options={"dataset": "djia", "stocks": 15},
            horizon=507,
        ),
        _env("glm_bandit", "GLM bandit (logistic)", options={"dim": 10}),
        _env("digits_bandit", "digits contextual bandit"),
        _env("digits_logistic", "digits logistic regression", options={"pool": 4}, horizon=1797),
        _env("stock_portfolio_low_dim", "NYSE (O) 2-stock portfolio", options={"dim": 1}),
        *_k_armed_settings(),
        _env("expert_advice", "bandits with expert advice"),
    ],
    "learners": [
        *_FTRL,
        *_K_ARMED,
        *({"name": name} for name in _MORE_K_ARMED),
        {"name": "exp3"},
        {"name": "batched-exp3"},
        {"name": "htinf"},
        {"name": "batched-htinf"},
        {"name": "exp4"},
        {"name": "batched-exp4"},
        {"name": "private-exp4"},
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
        {"name": "uniform-play"},
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

#: ``dponline demo``: the settings where privacy and calibration show beyond the confidence
#: bands, 10 seeds, under two minutes on two cores.
DEMO_SPEC = {
    "name": "dponline demo: experts, online logistic regression and bandits on real and "
    "synthetic data",
    "environments": [
        _env("stochastic", "stochastic", options={"n_experts": 10, "gap": 0.1}),
        _env("digits_logistic", "digits logistic regression", options={"pool": 4}, horizon=1797),
        _env("digits_bandit", "digits contextual bandit", horizon=1797),
        _env("bandit_linear", "bandit linear (ball)", options={"dim": 3, "domain": "ball"}),
        *_k_armed_settings(),
    ],
    "learners": [
        *_FTRL,
        *_K_ARMED,
        {"name": "ctrl-glm"},
        {"name": "lazy-ctrl"},
        {"name": "dp-ftrl-oco"},
        {"name": "ftrl-oco"},
        {"name": "glm-bandit"},
        {"name": "dp-glm-bandit"},
        {"name": "uniform-play"},
        {"name": "scrible"},
        {"name": "dp-scrible"},
    ],
    "epsilons": [0.25, 1.0, 4.0],
    "calibrations": ["paper", "tight"],
    "allow_weaker_paper": True,
    "seeds": 10,
    "seed": 2026,
    "record_every": 25,
}


def run_demo(
    out_dir: str | Path,
    *,
    full: bool = False,
    seeds: int | None = None,
    backend: str = "local",
    workers: int | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
    """Run the demo sweep (``full``: :data:`FULL_DEMO_SPEC`, else :data:`DEMO_SPEC`), write the
    report; return (results, summary, index.html path). Finished tasks are kept in
    ``out_dir/checkpoints``, so an interrupted demo resumes where it stopped."""
    data = dict(FULL_DEMO_SPEC if full else DEMO_SPEC, horizon=5651)
    if seeds is not None:
        data["seeds"] = seeds
    spec = parse_spec(data)
    results = run_sweep(
        spec.tasks(),
        backend=backend,
        workers=workers,
        checkpoint_dir=Path(out_dir) / "checkpoints",
        checkpoint_every=10**9,
        progress=progress,
    )
    index = write_report(
        results,
        out_dir,
        title=spec.name,
        notes=(
            "Laplace learners are pure epsilon-DP, Gaussian ones (epsilon, 1e-6)-DP, "
            "event-level over loss sequences that differ in one round; the contextual bandits "
            "are (epsilon, 1/T)-jointly DP over users. Each setting's section says what it is "
            "and what to look for; notes in orange flag what looks surprising."
            + (
                ""
                if full
                else " `dponline demo --full` adds the NYSE and DJIA settings, the "
                "synthetic GLM bandit, bandits with expert advice and the 1-D portfolio, and "
                "the other learners (the other K-armed bandits, EXP3, EXP4 and their batched "
                "private versions among them), at 20 seeds."
            )
        ),
        captions=spec.captions(),
        references=lower_bound_references(spec),
        uniform_regret=uniform_play_regret(spec),
        extra_sections=[_replay_section(out_dir, 5 if seeds is None else seeds)],
    )
    return results, summarise(results), index
