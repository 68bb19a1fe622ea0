"""`dponline side-by-side`: CTRL, DP-FTRL and the private streaming Frank-Wolfe on one smooth
convex stream at one (epsilon, delta), regret and switches in one table (issue on 003).

The comparison is a spec on the runner (``experiments/specs/side_by_side.toml``, run by
:func:`~dponline.experiments.runner.run_sweep`). The stream is
:func:`~dponline.environments.smooth_convex.smooth_convex` with the squared link: rounds
(v_t, y_t), ||v_t|| = 1, |y_t| <= 1, the loss l_t(x) = (<v_t, x> - y_t)^2 / 2 over the unit
Euclidean ball. Each learner sees the stream its way:

* CTRL (003, Algorithm 1; ``ctrl`` and ``ctrl-glm``) and DP-FTRL on the linearised losses
  (``dp-ftrl-oco``, :class:`~dponline.online.linearised_ftrl.LinearisedFTRL`) observe the loss
  function l_t (the environment ``smooth_convex``);
* the private streaming Frank-Wolfe (Han et al., Algorithm 1; ``dp-frank-wolfe`` over the
  environment's l_2 ball, clipping) observes the sample (v_t, y_t), whose loss
  (y - <v, x>)^2 it was calibrated for, and its iterate before round t is scored on l_t (the
  environment ``smooth_convex_samples``, :mod:`dponline.environments.smooth_samples`).

Changing one round's (v_t, y_t) changes one loss function and one sample, so the event-level
guarantee of the online learners and the one-sample guarantee of the Frank-Wolfe speak of the
same neighbouring streams, at the same (epsilon, delta) (each row states what its calibration
proves). Every learner is scored by the same regret: sum_t l_t(x_t) minus the best fixed point
in hindsight. A switch is a round whose decision differs from the previous round's (the runner's
``switches`` column, :attr:`~dponline.experiments.runner.Task.count_switches`).

The two views are built from the same seed and learner i of the spec draws from the i-th child
of the seed (:attr:`~dponline.experiments.runner.Task.seeding` "spawn"); ``seconds`` is each
task's wall time on the runner (building, rounds and the comparator at the recorded rounds).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from dponline.environments.catalogue import build_environment
from dponline.environments.smooth_convex import SmoothConvexEnvironment
from dponline.experiments.runner import Task, run_sweep
from dponline.experiments.spec import ExperimentSpec, load_spec
from dponline.registry import learners

__all__ = [
    "SideBySideRow",
    "run_side_by_side",
    "side_by_side_spec",
    "side_by_side_tasks",
    "spec_path",
    "write_side_by_side",
]


def spec_path() -> Path:
    """The packaged spec of the comparison."""
    return Path(str(files("dponline.experiments") / "specs" / "side_by_side.toml"))


@dataclass(frozen=True)
class SideBySideRow:
    """One learner's run: the guarantee its calibration proves, regret and switches."""

    learner: str
    private: bool
    calibration: str
    epsilon: float | None
    delta: float | None
    regret: float
    regret_se: float
    switches: float
    seconds: float
    curve: tuple[float, ...]  # mean regret at the checkpoints of ``rounds``

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out.pop("curve")
        return out


def side_by_side_spec(
    *,
    horizon: int | None = None,
    dim: int | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    calibration: str | None = None,
    kind: str | None = None,
    replicas: int | None = None,
    seed: int | None = None,
) -> ExperimentSpec:
    """The packaged spec with the given settings in place of its own: ``dim`` and ``kind``
    for every environment, ``delta`` for every learner that sets one (the private ones),
    ``replicas`` seeds; ``None`` keeps the spec's."""
    spec = load_spec(spec_path())
    env_options = {k: v for k, v in (("dim", dim), ("kind", kind)) if v is not None}
    environments = [{**e, "options": {**e["options"], **env_options}} for e in spec.environments]
    chosen = spec.learners
    if delta is not None:
        chosen = [
            {**lr, "options": {**lr["options"], "delta": float(delta)}}
            if "delta" in lr["options"]
            else lr
            for lr in chosen
        ]
    spec = dataclasses.replace(spec, environments=environments, learners=chosen)
    fields: dict[str, Any] = {"horizon": horizon, "seeds": replicas, "seed": seed}
    if epsilon is not None:
        fields["epsilons"] = [float(epsilon)]
    if calibration is not None:
        fields["calibrations"] = [calibration]
    return spec.overridden(**{k: v for k, v in fields.items() if v is not None})


def side_by_side_tasks(spec: ExperimentSpec, rounds: np.ndarray) -> list[Task]:
    """The spec's tasks in the order of its learners, numbered so, seeded "spawn" (the two views
    of the stream hold the same data; learner i draws from the seed's i-th child), recording
    ``rounds`` (1-based) and the switches."""
    order = [lr["label"] or lr["name"] for lr in spec.learners]
    tasks = sorted(spec.tasks(), key=lambda t: (order.index(t.label), t.task_index))
    if len(tasks) != len(order):
        raise ValueError(
            f"the comparison runs each learner once (one epsilon and one calibration), got "
            f"{len(tasks)} tasks for {len(order)} learners"
        )
    return [
        dataclasses.replace(
            task,
            task_index=i,
            seeding="spawn",
            record_every=int(task.horizon or 1),
            record_rounds=tuple(int(r) for r in rounds),
            count_switches=True,
        )
        for i, task in enumerate(tasks)
    ]


def run_side_by_side(
    *,
    horizon: int = 2_000,
    dim: int = 5,
    epsilon: float = 1.0,
    delta: float = 1e-6,
    calibration: str = "tight",
    kind: str = "stochastic",
    replicas: int = 4,
    seed: int = 0,
    checkpoints: int = 20,
) -> tuple[list[SideBySideRow], np.ndarray, SmoothConvexEnvironment]:
    """Run the spec's learners on one squared-loss stream of ``horizon`` rounds in R^``dim``
    (``kind`` stochastic or adversarial) with ``replicas`` seeds each, one task at a time on
    the runner; return the rows, the rounds at which ``curve`` is recorded (``checkpoints``
    evenly spaced), and the loss-function view of the stream."""
    spec = side_by_side_spec(
        horizon=horizon,
        dim=dim,
        epsilon=epsilon,
        delta=delta,
        calibration=calibration,
        kind=kind,
        replicas=replicas,
        seed=seed,
    )
    rounds = np.unique(np.linspace(1, horizon, checkpoints).round().astype(int))
    tasks = side_by_side_tasks(spec, rounds)
    catalogue = learners()
    rows = []
    for task in tasks:
        started = time.perf_counter()
        table = run_sweep([task], backend="serial", progress=False)
        seconds = time.perf_counter() - started
        rows.append(_row(task, table, catalogue[task.learner].private, rounds, seconds))
    first = next(t for t in tasks if t.environment == "smooth_convex")
    env = build_environment(
        first.environment,
        first.horizon,
        np.random.default_rng(first.seed_sequences()[0]),
        **first.environment_options,
    )
    return rows, rounds, cast(SmoothConvexEnvironment, env)


def _row(
    task: Task, table: pd.DataFrame, private: bool, rounds: np.ndarray, seconds: float
) -> SideBySideRow:
    """One learner's row from its task's table."""
    last = table[table["t"] == table["t"].max()].sort_values("seed")
    regret = last["regret"].to_numpy()
    n = regret.size
    curve = table.groupby("t")["regret"].mean().reindex(rounds).to_numpy()
    proven, delta = float(last["proven_epsilon"].iloc[0]), float(last["delta"].iloc[0])
    return SideBySideRow(
        learner=task.label,
        private=private,
        calibration=task.calibration,
        epsilon=None if math.isnan(proven) else proven,
        delta=None if math.isnan(delta) else delta,
        regret=float(regret.mean()),
        regret_se=float(regret.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0,
        switches=float(last["switches"].mean()),
        seconds=seconds,
        curve=tuple(float(c) for c in curve),
    )


def write_side_by_side(
    rows: list[SideBySideRow],
    rounds: np.ndarray,
    env: SmoothConvexEnvironment,
    out_dir: Path,
    *,
    title: str,
) -> list[Path]:
    """side_by_side.csv and .json, and (with matplotlib) side_by_side.png and index.html."""
    out_dir.mkdir(parents=True, exist_ok=True)
    records = [r.as_dict() for r in rows]
    written = [out_dir / "side_by_side.csv", out_dir / "side_by_side.json"]
    with written[0].open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    payload = {
        "title": title,
        "environment": env.name,
        "horizon": env.horizon,
        "dim": env.dim,
        "rounds": rounds.tolist(),
        "rows": [{**r.as_dict(), "curve": list(r.curve)} for r in rows],
    }
    written[1].write_text(json.dumps(payload, indent=2))
    try:
        import matplotlib
    except ImportError:
        return written
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    # one colour per family (private solid, non-private dotted); the GLM variant of CTRL apart
    families = (("GLM", "C4"), ("CTRL", "C0"), ("FTRL", "C1"), ("Frank-Wolfe", "C2"))
    for r in rows:
        colour = next((c for k, c in families if k in r.learner), "C3")
        style = "-" if r.private else ":"
        ax.plot(rounds, r.curve, style, color=colour, lw=2, label=r.learner)
    ax.set_xlabel("round t")
    ax.set_ylabel("regret (mean over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    fig.tight_layout()
    png = out_dir / "side_by_side.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    written.append(png)
    html = out_dir / "index.html"
    cells = "".join(
        "<tr>"
        f"<td>{r.learner}</td><td>{_guarantee(r)}</td>"
        f"<td>{r.regret:.1f} &plusmn; {r.regret_se:.1f}</td><td>{r.switches:.0f}</td>"
        f"<td>{r.seconds:.1f}</td></tr>"
        for r in rows
    )
    html.write_text(
        "<!doctype html><meta charset='utf-8'><title>dponline side by side</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "table{border-collapse:collapse}td,th{padding:.3em .8em;border-bottom:1px solid #ddd;"
        "text-align:right}td:first-child,th:first-child{text-align:left}</style>"
        f"<h1>{title}</h1><p>{_caption(env)}</p><p>{_reading(rows)}</p>"
        "<table><tr><th>learner</th><th>proven guarantee</th><th>regret</th>"
        f"<th>switches</th><th>seconds</th></tr>{cells}</table>"
        "<p><img src='side_by_side.png' alt='regret against rounds' style='max-width:100%'></p>"
    )
    written.append(html)
    return written


def _guarantee(row: SideBySideRow) -> str:
    if row.epsilon is None:
        return "none"
    return f"({row.epsilon:.3g}, {row.delta:.2g})-DP [{row.calibration}]"


def _caption(env: SmoothConvexEnvironment) -> str:
    return (
        f"{env.horizon} rounds of the squared loss (&lt;v_t, x&gt; - y_t)^2 / 2 in R^{env.dim} "
        f"({env.name}), decisions in the unit ball; regret against the best fixed point in "
        "hindsight, mean &plusmn; standard error over seeds; a switch is a round whose decision "
        "differs from the last. Private learners (solid) at one budget; their non-private "
        "counterparts dotted."
    )


def _reading(rows: list[SideBySideRow]) -> str:
    """What the reader should see: the private learners ranked, against the best non-private."""
    private = sorted((r for r in rows if r.private), key=lambda r: r.regret)
    public = min((r for r in rows if not r.private), key=lambda r: r.regret)
    ranking = ", ".join(f"{r.learner} {r.regret:.0f}" for r in private)
    return (
        f"Private regret, lowest first: {ranking}; the best non-private learner, {public.learner}, "
        f"{public.regret:.0f}. CTRL switches least: its decisions move only when the rejection "
        "step or the forced switch lets them, while DP-FTRL and Frank-Wolfe move every round."
    )
