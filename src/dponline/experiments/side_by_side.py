"""`dponline side-by-side`: CTRL, DP-FTRL and the private streaming Frank-Wolfe on one smooth
convex stream at one (epsilon, delta), regret and switches in one table (issue on 003).

The stream is :func:`~dponline.environments.smooth_convex.smooth_convex` with the squared link:
rounds (v_t, y_t), ||v_t|| = 1, |y_t| <= 1, the loss l_t(x) = (<v_t, x> - y_t)^2 / 2 over the
Euclidean ball. Each learner sees the stream its way:

* CTRL (003, Algorithm 1; ``ctrl`` and ``ctrl-glm``) and DP-FTRL on the linearised losses
  (:class:`~dponline.online.linearised_ftrl.LinearisedFTRL`) observe the loss function l_t;
* the private streaming Frank-Wolfe (Han et al., Algorithm 1) observes the sample (v_t, y_t),
  whose loss (y - <v, x>)^2 it was calibrated for; its iterate before round t is scored on l_t.

Changing one round's (v_t, y_t) changes one loss function and one sample, so the event-level
guarantee of the online learners and the one-sample guarantee of the Frank-Wolfe speak of the
same neighbouring streams, at the same (epsilon, delta) (each row states what its calibration
proves). Every learner is scored by the same regret: sum_t l_t(x_t) minus the best fixed point
in hindsight. A switch is a round whose decision differs from the previous round's.
"""

from __future__ import annotations

import csv
import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dponline.domains.lp_ball import LpBall
from dponline.environments.smooth_convex import SmoothConvexEnvironment, smooth_convex
from dponline.privacy.budget import Neighbouring, PrivacyBudget
from dponline.privacy.guarantee import PrivacyWarning
from dponline.protocol import SampleFeedback
from dponline.registry import learners
from dponline.stochastic.private_frank_wolfe import PrivateStreamingFrankWolfe

__all__ = ["SideBySideRow", "run_side_by_side", "write_side_by_side"]

#: (label, registry name or "frank-wolfe", private)
LEARNERS: tuple[tuple[str, str, bool], ...] = (
    ("CTRL", "ctrl", True),
    ("CTRL (GLM)", "ctrl-glm", True),
    ("DP-FTRL", "dp-ftrl-oco", True),
    ("streaming Frank-Wolfe", "frank-wolfe", True),
    ("lazy CTRL, S = d sqrt T (non-private)", "lazy-ctrl", False),
    ("FTRL (non-private)", "ftrl-oco", False),
    ("Frank-Wolfe (non-private)", "frank-wolfe", False),
)


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


def _frank_wolfe(
    env: SmoothConvexEnvironment, budget: PrivacyBudget | None, replicas: int, rng: Any
) -> PrivateStreamingFrankWolfe:
    radius = float(env.domain.barrier.max_norm())
    return PrivateStreamingFrankWolfe(
        LpBall(env.dim, 2.0, radius),
        env.horizon,
        x_bound=1.0,
        y_bound=1.0,
        budget=budget,
        replicas=replicas,
        rng=rng,
        clip=True,  # ||v_t|| = 1 up to rounding; clipping is part of the mechanism
    )


def _build(
    name: str,
    private: bool,
    env: SmoothConvexEnvironment,
    *,
    epsilon: float,
    delta: float,
    calibration: str,
    replicas: int,
    rng: np.random.Generator,
) -> Any:
    if name == "frank-wolfe":
        budget = (
            PrivacyBudget(epsilon, delta, calibration, Neighbouring.ONE_SAMPLE) if private else None
        )
        return _frank_wolfe(env, budget, replicas, rng)
    entry = learners()[name]
    privacy = (
        {"epsilon": epsilon, "delta": delta, "calibration": calibration}
        if private
        else {"epsilon": None, "calibration": "none"}
    )
    return entry.factory(env, replicas=replicas, rng=rng, allow_weaker=True, **privacy)


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
    """Run every learner of :data:`LEARNERS` on one squared-loss stream of ``horizon`` rounds in
    R^``dim`` (``kind`` stochastic or adversarial) with ``replicas`` seeds each; return the rows,
    the rounds at which ``curve`` is recorded, and the environment."""
    env = smooth_convex(horizon, np.random.default_rng(seed), dim=dim, losses="squared", kind=kind)
    rounds = np.unique(np.linspace(1, horizon, checkpoints).round().astype(int))
    best = env.best_cumulative_loss(rounds)
    streams = np.random.SeedSequence(seed).spawn(len(LEARNERS))
    rows = []
    for (label, name, private), stream in zip(LEARNERS, streams, strict=True):
        with warnings.catch_warnings():
            # a paper calibration may prove less than asked: the row says what it proves
            warnings.simplefilter("ignore", PrivacyWarning)
            learner = _build(
                name,
                private,
                env,
                epsilon=epsilon,
                delta=delta,
                calibration=calibration,
                replicas=replicas,
                rng=np.random.default_rng(stream),
            )
        total = np.zeros(replicas)
        curve = []
        switches = np.zeros(replicas)
        previous = None
        started = time.perf_counter()
        for t in range(horizon):
            x = learner.act()
            feedback, loss = env.round(t, x)
            if name == "frank-wolfe":
                feedback = SampleFeedback(env.v[t], env.y[t])
            learner.observe(feedback)
            total += loss
            if previous is not None:
                switches += np.any(x != previous, axis=1)
            previous = x
            if t + 1 in rounds:
                curve.append(float(total.mean() - best[len(curve)]))
        seconds = time.perf_counter() - started
        regret = total - best[-1]
        privacy = learner.privacy
        rows.append(
            SideBySideRow(
                learner=label,
                private=private,
                calibration=calibration if private else "none",
                epsilon=None if privacy is None else float(privacy.epsilon),
                delta=None if privacy is None else float(privacy.delta),
                regret=float(regret.mean()),
                regret_se=float(regret.std(ddof=1) / np.sqrt(replicas)) if replicas > 1 else 0.0,
                switches=float(switches.mean()),
                seconds=seconds,
                curve=tuple(curve),
            )
        )
    return rows, rounds, env


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
