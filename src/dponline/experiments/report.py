"""Reports: regret curves with confidence bands, privacy-utility curves, a results table, and an
HTML page (``index.html``) that shows them, written to a folder the user names.

The plots need matplotlib (``pip install 'dponline[report]'``); without it the page holds the
tables and says so.
"""

from __future__ import annotations

import html
import importlib.util
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["summarise", "write_report"]


def t95(n: Any) -> Any:
    """The 0.975 quantile of Student's t with n - 1 degrees of freedom: a 95% interval for a
    mean over n seeds is mean +- t95(n) sd / sqrt(n) (1.96, the normal's, covers 81% at 3
    seeds). NaN for n < 2, where no interval exists."""
    from scipy.stats import t as student

    n = np.asarray(n, dtype=float)
    return np.where(n >= 2, student.ppf(0.975, np.maximum(n - 1, 1)), np.nan)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Final regret per learner, environment, calibration and epsilon: mean, sd, 95% CI
    (Student's t over the seeds), and the median and quartiles over the seeds (a private
    bandit's regret is heavy-tailed: a few seeds that lose the best arm for the whole run move
    the mean, not the median); where the table has a held-out loss after the last round
    (``final_loss``: streaming optimisation's test SubOpt), its mean and 95% CI as well."""
    final = results[
        results["t"]
        == results.groupby(["label", "environment", "calibration", "epsilon"], dropna=False)[
            "t"
        ].transform("max")
    ]
    grouped = final.groupby(["environment", "label", "calibration", "epsilon"], dropna=False)
    # "unit" (the unit of privacy) is absent from tables written before it was recorded
    unit = {"unit": ("unit", "first")} if "unit" in final.columns else {}
    out = grouped.agg(
        T=("t", "max"),
        seeds=("seed", "nunique"),
        regret_mean=("regret", "mean"),
        regret_sd=("regret", "std"),
        regret_median=("regret", "median"),
        regret_q25=("regret", lambda r: r.quantile(0.25)),
        regret_q75=("regret", lambda r: r.quantile(0.75)),
        proven_epsilon=("proven_epsilon", "first"),
        delta=("delta", "first"),
        **unit,
        learner=("learner", "first"),
    ).reset_index()
    out["regret_ci95"] = t95(out["seeds"]) * out["regret_sd"] / np.sqrt(out["seeds"])
    if "tuned" in final.columns and final["tuned"].fillna("").astype(bool).any():
        out["tuned"] = grouped["tuned"].first().reset_index(drop=True).to_numpy()  # one a task
    if "switches" in final.columns:  # a spec with count_switches: mean switches at T
        out["switches_mean"] = grouped["switches"].mean().reset_index(drop=True).to_numpy()
    if "final_loss" in final.columns and final["final_loss"].notna().any():
        held = grouped["final_loss"].agg(["mean", "std", "count"]).reset_index(drop=True)
        out["final_loss_mean"] = held["mean"].to_numpy()
        out["final_loss_ci95"] = (
            t95(held["count"]) * held["std"] / np.sqrt(held["count"])
        ).to_numpy()
    return out.sort_values(
        ["environment", "label", "calibration", "epsilon"], na_position="first"
    ).reset_index(drop=True)


def has_person_unit(summary: pd.DataFrame) -> bool:
    """Whether some row's unit of privacy is a person (its epsilon is then per person, not per
    round: tables show the unit column)."""
    return "unit" in summary and bool(summary["unit"].fillna("").str.startswith("person").any())


def have_matplotlib() -> bool:
    """Whether the plots can be drawn (matplotlib, the ``report`` extra, is installed)."""
    return importlib.util.find_spec("matplotlib") is not None


#: what a report without matplotlib says in place of its plots
NO_PLOTS = "plots need matplotlib: pip install 'dponline[report]'"


def _plt():  # type: ignore[no-untyped-def]
    try:
        import matplotlib
    except ImportError:
        raise ValueError(f"this report's {NO_PLOTS}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: at most this many curves in one regret panel (the issue on readable reports)
MAX_CURVES = 8
_CAL_STYLE = {"tight": "-", "paper": "--"}
#: the non-private learners' lines, each told apart by its dashes and its grey (a reference
#: beyond the sixth repeats them)
_REF_STYLES = [
    (":", "black"),
    ("-.", "dimgray"),
    ((0, (7, 2)), "black"),
    ((0, (3, 1, 1, 1, 1, 1)), "gray"),
    ((0, (1, 4)), "dimgray"),
    ((0, (10, 3, 2, 3)), "darkgray"),
]


def _counterparts() -> dict[str, tuple[str, ...]]:
    """non-private learner name -> the private learners it is the counterpart of."""
    from dponline.registry import learners

    return {name: e.counterpart_of for name, e in learners().items() if not e.private}


def regret_panels(data: pd.DataFrame) -> list[dict]:
    """Group one environment's curves into panels: each private learner (by label) with its own
    non-private counterpart (registry ``counterpart_of``; every non-private learner of the
    environment when it has none), split by calibration when a panel would hold more than
    :data:`MAX_CURVES` curves; non-private learners that are nobody's reference get a panel of
    their own. Each panel: ``title``, ``private`` [(label, calibration, epsilon)], ``reference``
    [labels], ``own`` (whether the references are the learner's own counterparts; when none
    was run, the title names the counterpart missing)."""
    keys = data[["learner", "label", "calibration", "epsilon"]].drop_duplicates()
    private = keys[keys["epsilon"].notna()]
    public = keys[keys["epsilon"].isna()]
    counterpart_of = _counterparts()
    panels, used = [], set()
    for label in dict.fromkeys(private["label"]):
        rows = private[private["label"] == label]
        name = rows["learner"].iloc[0]
        refs = [
            r["label"] for _, r in public.iterrows() if name in counterpart_of.get(r["learner"], ())
        ]
        own = bool(refs)
        missing = [n for n, of in counterpart_of.items() if name in of]
        if not own:
            refs = list(public["label"])
        refs = refs[: len(_REF_STYLES)]
        used.update(refs)
        curves = [
            (label, r["calibration"], float(r["epsilon"]))
            for _, r in rows.sort_values(
                ["calibration", "epsilon"], ascending=[False, True]
            ).iterrows()
        ]
        groups = [curves]
        if len(curves) + len(refs) > MAX_CURVES:
            groups = [
                [c for c in curves if c[1] == cal] for cal in dict.fromkeys(c[1] for c in curves)
            ]
        for group in groups:
            suffix = f" [{group[0][1]}]" if len(groups) > 1 else ""
            title = f"{label}{suffix} vs {', '.join(refs)}" if refs else f"{label}{suffix}"
            if not own and missing:  # its own counterpart was not run: say so
                title += f"\n(its counterpart {', '.join(missing)} not run)"
            panels.append({"title": title, "private": group, "reference": refs, "own": own})
    for label in public["label"]:
        if label not in used:
            title = f"{label} (non-private)"
            panels.append({"title": title, "private": [], "reference": [label], "own": True})
    return panels


def _is_pure(data: pd.DataFrame, label: str, calibration: str, epsilon: float) -> bool:
    """Whether the run of ``label`` at this calibration and epsilon is pure epsilon-DP (every
    row's delta 0; a table without the column counts as pure)."""
    if "delta" not in data:
        return True
    rows = data[
        (data["label"] == label)
        & (data["calibration"] == calibration)
        & (data["epsilon"] == epsilon)
    ]
    return bool(len(rows)) and bool((rows["delta"] == 0.0).all())


def _mean_band(data: pd.DataFrame, mask: pd.Series) -> tuple[pd.Series, pd.Series]:
    g = data[mask].groupby("t")["regret"]
    mean, sd, n = g.mean(), g.std().fillna(0.0), g.count()
    return mean, pd.Series(np.nan_to_num(t95(n)), index=n.index) * sd / np.sqrt(n)


def _epsilon_colours(plt, epsilons: list[float]) -> dict[float, tuple]:  # type: ignore[no-untyped-def]
    cmap = plt.get_cmap("plasma")
    eps = sorted(set(epsilons))
    if len(eps) == 1:
        return {eps[0]: cmap(0.15)}
    return {e: cmap(0.08 + 0.72 * i / (len(eps) - 1)) for i, e in enumerate(eps)}


#: the line style of reference curves that are not runs (lower bounds): dash-dot-dot, apart
#: from the non-private references' styles
_BOUND_STYLE = (0, (5, 2, 1, 2, 1, 2))


def plot_regret_curves(
    results: pd.DataFrame,
    environment: str,
    path: Path,
    references: Sequence[Mapping[str, Any]] = (),
) -> list[dict]:
    """Small multiples: one panel per private learner against its non-private counterpart
    (:func:`regret_panels`); colour by epsilon, line style by calibration (tight solid, paper
    dashed), the counterpart black; 95% bands over seeds; one legend outside the panels.
    ``references``: curves that are not runs (a regret lower bound), each a mapping with
    ``label``, ``t``, ``regret`` and ``epsilon`` (``None``: it holds for every learner, drawn
    grey in every panel; else drawn in that epsilon's colour in the panels that show a pure
    epsilon-DP learner, delta = 0, at that epsilon: the private lower bounds hold for pure
    epsilon-DP policies, not beside an (epsilon, delta) or zCDP one), dash-dot-dotted. Returns
    the panels with the curves drawn (for tests)."""
    plt = _plt()
    from matplotlib.lines import Line2D

    data = results[results["environment"] == environment]
    panels = regret_panels(data)
    colours = _epsilon_colours(plt, [e for p in panels for _, _, e in p["private"]] or [1.0])
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    size = (max(4.1 * ncols + 2.2, 8.5), 3.0 * nrows + 0.4)
    fig, axes = plt.subplots(nrows, ncols, figsize=size, dpi=100, squeeze=False, sharex=True)
    for ax, panel in zip(axes.flat, panels, strict=False):
        drawn = []
        for label, cal, eps in panel["private"]:
            mask = (
                (data["label"] == label) & (data["calibration"] == cal) & (data["epsilon"] == eps)
            )
            mean, band = _mean_band(data, mask)
            ax.plot(mean.index, mean.values, _CAL_STYLE.get(cal, "-"), color=colours[eps], lw=1.5)
            ax.fill_between(mean.index, mean - band, mean + band, color=colours[eps], alpha=0.12)
            drawn.append({"label": label, "calibration": cal, "epsilon": eps,
                          "t": mean.index.tolist(), "regret": mean.tolist()})  # fmt: skip
        for k, label in enumerate(panel["reference"]):
            mask = (data["label"] == label) & data["epsilon"].isna()
            mean, band = _mean_band(data, mask)
            ls, colour = _REF_STYLES[k]
            ax.plot(mean.index, mean.values, ls=ls, color=colour, lw=1.6)
            ax.fill_between(mean.index, mean - band, mean + band, color=colour, alpha=0.08)
            drawn.append({"label": label, "calibration": "none", "epsilon": None,
                          "t": mean.index.tolist(), "regret": mean.tolist()})  # fmt: skip
        pure = {eps for label, cal, eps in panel["private"] if _is_pure(data, label, cal, eps)}
        for ref in references:
            eps = ref.get("epsilon")
            if eps is not None and eps not in pure:
                continue
            colour = "0.45" if eps is None else colours.get(eps, "0.45")
            ax.plot(ref["t"], ref["regret"], ls=_BOUND_STYLE, color=colour, lw=1.2)
            drawn.append({"label": ref["label"], "calibration": "reference", "epsilon": eps,
                          "t": list(ref["t"]), "regret": list(ref["regret"])})  # fmt: skip
        panel["curves"] = drawn
        ax.set_title(panel["title"], fontsize=9)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("round t", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel("regret", fontsize=9)
    handles = [Line2D([], [], color=c, lw=2, label=f"epsilon = {e:g}") for e, c in colours.items()]
    cals = sorted({cal for p in panels for _, cal, _ in p["private"]}, reverse=True)
    handles += [Line2D([], [], color="gray", ls=_CAL_STYLE.get(c, "-"), label=c) for c in cals]
    n_refs = max((len(p["reference"]) for p in panels), default=0)
    counterparts_only = all(p["own"] for p in panels if p["private"])
    for k in range(n_refs):
        ls, colour = _REF_STYLES[k]
        labels = {p["reference"][k] for p in panels if len(p["reference"]) > k}
        name = (
            "non-private counterpart"
            if k == 0 and counterparts_only
            else f"non-private reference {k + 1} (in the panel's title)"
        )
        if (k > 0 or not counterparts_only) and len(labels) == 1:  # the same everywhere
            name = f"{labels.pop()} (non-private)"
        handles.append(Line2D([], [], color=colour, ls=ls, lw=1.6, label=name))
    for label in dict.fromkeys(ref["label"] for ref in references):
        handles.append(Line2D([], [], color="0.45", ls=_BOUND_STYLE, lw=1.2, label=label))
    right = 1.0 - 2.1 / fig.get_figwidth()
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(right, 0.92), fontsize=8,
               frameon=False)  # fmt: skip
    fig.suptitle(f"Regret on {environment} (mean over seeds, 95% bands)", fontsize=10,
                 x=right / 2)  # fmt: skip
    fig.tight_layout(rect=(0, 0, right - 0.1 / fig.get_figwidth(), 0.96))
    fig.savefig(path)
    plt.close(fig)
    return panels


def _guarantee_kind(delta: float) -> str:
    """ "pure eps-DP" or "(eps, 7.5e-7)-DP"."""
    if not delta:
        return "pure eps-DP"
    mantissa, exponent = f"{delta:.1e}".split("e")
    return f"(eps, {mantissa.rstrip('0').rstrip('.')}e{int(exponent)})-DP"


def epsilon_axis_limits(epsilons: Any) -> tuple[float, float] | None:
    """The privacy-utility plot's x range when its epsilons span less than a factor of 4: a
    factor of 2 either side of their middle (matplotlib zoomed a log axis on one budget and
    labelled its ticks "0.999999", "1", "1"); None to let matplotlib choose."""
    xs = [float(x) for x in epsilons if np.isfinite(x) and x > 0]
    if not xs or max(xs) / min(xs) >= 4:
        return None
    centre = math.sqrt(min(xs) * max(xs))
    return min(min(xs), centre / 2) / 1.1, max(max(xs), centre * 2) * 1.1


#: the learner whose regret is the no-learning level (:mod:`dponline.bandits.uniform_play`)
UNIFORM_PLAY = "uniform-play"

#: the legend of uniform random play's exact level, drawn where it was not run
UNIFORM_LEVEL = "uniform random play (exact, expected)"


def plot_privacy_utility(
    summary: pd.DataFrame, environment: str, path: Path, uniform_regret: float | None = None
) -> dict:
    """Final regret against the *proven* epsilon (log scale) per private learner and
    calibration, the requested epsilon marked by a hollow marker joined to the proven one;
    the guarantee's kind (pure or approximate DP, delta) in the legend; each non-private
    learner a horizontal line of its own style, and ``uniform_regret`` (uniform random play's
    exact expected regret, where known and not run) a grey one: the level of a learner that
    learned nothing. Returns {series: {"x", "y", "requested"}} (the uniform level:
    {UNIFORM_LEVEL: {"y": level}})."""
    plt = _plt()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    data = summary[summary["environment"] == environment]
    fig, ax = plt.subplots(figsize=(8.6, 4.4), dpi=100)
    plotted: dict[str, dict] = {}
    private = data[data["epsilon"].notna()]
    # an epsilon per person and one per round are not one scale: name the unit of each series
    # when a person's is among them
    per_unit = has_person_unit(private)
    markers = "osD^v<>p"
    for k, ((label, cal), g) in enumerate(private.groupby(["label", "calibration"], sort=False)):
        g = g.sort_values("epsilon")
        name = f"{label} [{cal}], {_guarantee_kind(float(g['delta'].iloc[0]))}"
        if per_unit:
            name += f", per {g['unit'].iloc[0]}"
        line = ax.errorbar(
            g["proven_epsilon"], g["regret_mean"], yerr=g["regret_ci95"], marker=markers[k % 8],
            ls=_CAL_STYLE.get(cal, "-"), capsize=3, ms=5, label=name,
        )  # fmt: skip
        colour = line[0].get_color()
        moved = ~np.isclose(g["proven_epsilon"], g["epsilon"], rtol=0.01)
        for _, r in g[moved].iterrows():
            ax.plot([r["epsilon"], r["proven_epsilon"]], [r["regret_mean"]] * 2, color=colour,
                    lw=0.8, alpha=0.6)  # fmt: skip
            ax.plot(r["epsilon"], r["regret_mean"], marker=markers[k % 8], mfc="none",
                    color=colour, ms=6, ls="none")  # fmt: skip
        plotted[name] = {
            "x": g["proven_epsilon"].tolist(),
            "y": g["regret_mean"].tolist(),
            "requested": g["epsilon"].tolist(),
        }
    public = data[data["epsilon"].isna()]
    for k, (_, r) in enumerate(public.iterrows()):
        ls, colour = _REF_STYLES[k % len(_REF_STYLES)]
        said = "non-private" in str(r["label"])  # a spec's label may say it already
        ax.axhline(r["regret_mean"], ls=ls, color=colour, lw=1.2,
                   label=r["label"] if said else f"{r['label']} (non-private)")  # fmt: skip
    levels = [*public["regret_mean"]]
    if uniform_regret is not None and not (public["learner"] == UNIFORM_PLAY).any():
        ax.axhline(uniform_regret, ls="-", color="0.8", lw=3.0, zorder=0, label=UNIFORM_LEVEL)
        plotted[UNIFORM_LEVEL] = {"y": float(uniform_regret)}
        levels.append(float(uniform_regret))
    # the y range holds every point with its interval and every non-private line
    ci = private["regret_ci95"].fillna(0.0)
    ys = [*(private["regret_mean"] - ci), *(private["regret_mean"] + ci), *levels]
    ys = [y for y in ys if math.isfinite(y)]  # a regret unknown (NaN) is not drawn
    if ys:
        lo, hi = min(ys), max(ys)
        pad = 0.06 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.06
        ax.set_ylim(lo - pad, hi + pad)
    ax.plot([], [], marker="o", mfc="none", color="gray", ls="none", label="requested epsilon")
    ax.set_xscale("log")
    limits = epsilon_axis_limits([*private["proven_epsilon"], *private["epsilon"]])
    if limits is not None:
        ax.set_xlim(*limits)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("proven epsilon (what the noise proves)")
    ax.set_ylabel("final regret (95% CI)")
    ax.set_title(f"Privacy-utility on {environment}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return plotted


def report_notes(
    summary: pd.DataFrame, environment: str, uniform_regret: float | None = None
) -> list[str]:
    """What looks wrong or surprising in one environment's final regrets, in words: a tight
    calibration proving less epsilon than asked; a paper calibration proving more (weaker
    privacy than the paper states); a private learner that does not improve from
    its smallest to its largest epsilon (by their intervals) while its non-private counterpart
    (registry ``counterpart_of``; the best non-private learner when none ran) does far better
    (the noise drowns the signal at every budget tried); a private learner whose regret is not below
    uniform random play's by its interval (when ``uniform-play`` ran, else at
    ``uniform_regret``, its exact expected regret where known: a stochastic bandit's); an
    environment where every learner is within one confidence interval of every other (no
    visible effect); a private learner whose non-private counterpart was not run."""
    data = summary[summary["environment"] == environment]
    notes = []
    for _, r in data[(data["calibration"] == "tight") & data["epsilon"].notna()].iterrows():
        if r["proven_epsilon"] < 0.99 * r["epsilon"]:
            notes.append(
                f"{r['label']} [tight] at epsilon = {r['epsilon']:g} proves "
                f"{r['proven_epsilon']:.3g}: its noise has a floor the algorithm itself sets "
                "(its regret analysis needs that much perturbation), so the guarantee is "
                "stronger than asked and more privacy would cost nothing here."
            )  # fmt: skip
    for _, r in data[(data["calibration"] == "paper") & data["epsilon"].notna()].iterrows():
        if r["proven_epsilon"] > 1.01 * r["epsilon"]:
            notes.append(
                f"{r['label']} [paper] at epsilon = {r['epsilon']:g} proves only "
                f"{r['proven_epsilon']:.3g}: the paper's noise formula is too small for the "
                "epsilon it states, so the privacy-utility plot places it at what it proves."
            )
    public = data[data["epsilon"].isna()]
    counterpart_of = _counterparts()
    if len(public):  # a panel compares a learner without its counterpart with every other one
        for label, g in data[data["epsilon"].notna()].groupby("label", sort=False):
            name = g["learner"].iloc[0]
            missing = [n for n, of in counterpart_of.items() if name in of]
            if missing and not set(missing) & set(public["learner"]):
                notes.append(
                    f"{label}: its non-private counterpart {', '.join(missing)} was not run, so "
                    "its regret panel draws every non-private learner of the run beside it; add "
                    "the counterpart to the spec to see what privacy costs it."
                )
    for (label, cal), g in data[data["epsilon"].notna()].groupby(["label", "calibration"]):
        name = g["learner"].iloc[0]
        mine = np.array([name in counterpart_of.get(n, ()) for n in public["learner"]], bool)
        own = public[mine]  # a boolean mask: an empty list would select no columns
        own = own.dropna(subset=["regret_mean"])
        # its own counterpart, else the best non-private learner
        ref = own if len(own) else public.dropna(subset=["regret_mean"])
        if len(g) < 2 or not len(ref):
            continue
        best = ref.loc[ref["regret_mean"].idxmin()]
        g = g.sort_values("epsilon")
        first, last = g.iloc[0], g.iloc[-1]
        ci = float(np.hypot(first["regret_ci95"], last["regret_ci95"]))
        if last["regret_mean"] >= first["regret_mean"] - ci and (
            last["regret_mean"] - last["regret_ci95"] > 1.5 * best["regret_mean"]
        ):
            who = (
                f"its non-private counterpart {best['label']}"
                if len(own)
                else f"the best non-private learner ({best['label']})"
            )
            notes.append(
                f"{label} [{cal}] does not improve from epsilon = {first['epsilon']:g} to "
                f"{last['epsilon']:g} (regret {first['regret_mean']:.4g} and "
                f"{last['regret_mean']:.4g}, within their intervals) while {who} reaches "
                f"{best['regret_mean']:.4g}: at every budget tried its noise drowns what it "
                "learns."
            )
    uniform = data[data["learner"] == UNIFORM_PLAY]
    if len(uniform) or uniform_regret is not None:
        level = (
            float(uniform["regret_mean"].iloc[0]) if len(uniform) else float(uniform_regret)  # type: ignore[arg-type]
        )
        private = data[data["epsilon"].notna()]
        for (label, cal), g in private.groupby(["label", "calibration"], sort=False):
            # at the level up to rounding too: round-robin play's regret summed over rounds
            # differs from the exact level in its last digits (DP-SE eliminating nothing)
            reach = g["regret_mean"] + g["regret_ci95"].fillna(0.0)
            above = g[reach >= level - 1e-9 * abs(level)]
            if len(above):
                eps = ", ".join(f"{e:g}" for e in sorted(above["epsilon"]))
                notes.append(
                    f"{label} [{cal}] is not below uniform random play ({level:.4g}) by its 95% "
                    f"interval at epsilon = {eps}: at "
                    f"{'that budget' if len(above) == 1 else 'these budgets'} it has not "
                    "learned anything this run can show."
                )
    lo = data["regret_mean"] - data["regret_ci95"].fillna(0.0)
    hi = data["regret_mean"] + data["regret_ci95"].fillna(0.0)
    if len(data) > 2 and lo.max() <= hi.min():
        notes.append(
            "Every learner, private or not, is within one confidence interval of every other: at "
            "this size the environment shows no effect of privacy or calibration."
        )
    return notes


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    return html.escape(str(v))


def write_report(
    results: pd.DataFrame,
    out_dir: str | Path,
    title: str = "dponline report",
    notes: str = "",
    captions: dict[str, str] | None = None,
    references: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    extra_sections: Sequence[tuple[str, str, pd.DataFrame]] = (),
    uniform_regret: Mapping[str, float] | None = None,
) -> Path:
    """Write results.csv (and results.parquet when pyarrow is installed), summary.csv, the PNG
    plots and index.html, one section per environment (its caption from ``captions``, label ->
    text, then what looks surprising, :func:`report_notes`); return index.html's path.
    ``references``: environment label -> curves drawn beside its runs
    (:func:`plot_regret_curves`); ``extra_sections``: (title, caption, table) sections after
    the environments' (results that are not runs of the round loop, such as a replay);
    ``uniform_regret``: environment label -> uniform random play's exact expected regret, for
    the notes (:func:`report_notes`) and drawn in the privacy-utility plot.
    Without matplotlib the page holds the tables and says that the plots need it."""
    plots = have_matplotlib()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results.to_csv(out / "results.csv", index=False)
    try:  # Parquet as well when a Parquet engine is installed (pip install pyarrow)
        results.to_parquet(out / "results.parquet", index=False)
    except ImportError:
        pass
    summary = summarise(results)
    summary.to_csv(out / "summary.csv", index=False)
    cols = [
        ("label", "learner"),
        ("calibration", "calibration"),
        ("epsilon", "eps asked"),
        ("proven_epsilon", "eps proven"),
        ("delta", "delta"),
        ("T", "T"),
        ("seeds", "seeds"),
        ("regret_mean", "regret"),
        ("regret_ci95", "&plusmn; 95%"),
        ("regret_median", "median"),
    ]
    held_out = [("final_loss_mean", "held-out loss"), ("final_loss_ci95", "&plusmn; 95%")]
    sections = []
    environments = list(dict.fromkeys(results["environment"]))
    for i, env in enumerate(environments):
        part = summary[summary["environment"] == env]
        figs = []
        curves = f"regret_{i}.png"
        if plots:
            plot_regret_curves(results, env, out / curves, (references or {}).get(env, ()))
            figs.append(curves)
        if plots and part["epsilon"].notna().any():
            pu = f"privacy_utility_{i}.png"
            plot_privacy_utility(summary, env, out / pu, (uniform_regret or {}).get(env))
            figs.append(pu)
        caption = (captions or {}).get(env, "")
        flagged = report_notes(summary, env, (uniform_regret or {}).get(env))
        flags = (
            "<ul class='notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in flagged) + "</ul>"
            if flagged
            else ""
        )
        shown = cols
        if has_person_unit(part):  # an epsilon per person beside one per round: say which
            shown = [*cols[:5], ("unit", "unit of privacy"), *cols[5:]]
        if "tuned" in part and part["tuned"].fillna("").astype(bool).any():
            shown = [*shown, ("tuned", "tuned")]  # the candidate the validation set chose
        if "final_loss_mean" in part and part["final_loss_mean"].notna().any():
            shown = [*shown, *held_out]  # streaming optimisation: the test loss after the last
        rows = "\n".join(
            "<tr>" + "".join(f"<td>{_fmt(r[c])}</td>" for c, _ in shown) + "</tr>"
            for _, r in part.iterrows()
        )
        images = "".join(
            f'<img src="{src}" alt="{html.escape(env)}: {src.split("_")[0]} plot">' for src in figs
        )
        sections.append(
            f'<section id="env-{i}"><h2>{html.escape(env)}</h2>'
            f"<p class='caption'>{html.escape(caption)}</p>{flags}{images}"
            f"<details><summary>Final regret table ({len(part)} rows)</summary><table><tr>"
            + "".join(f"<th>{h}</th>" for _, h in shown)
            + f"</tr>{rows}</table></details></section>"
        )
    titles = [*environments]
    for title_, caption, table in extra_sections:
        k = len(titles)
        titles.append(title_)
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
        body = "\n".join(
            "<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in row) + "</tr>"
            for row in table.itertuples(index=False)
        )
        sections.append(
            f'<section id="env-{k}"><h2>{html.escape(title_)}</h2>'
            f"<p class='caption'>{html.escape(caption)}</p>"
            f"<table><tr>{head}</tr>{body}</table></section>"
        )
    toc = "".join(
        f'<li><a href="#env-{i}">{html.escape(env)}</a></li>' for i, env in enumerate(titles)
    )
    no_plots = "" if plots else f"<p class='caption'><em>No plots: the {NO_PLOTS}.</em></p>"
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.4}}
table{{border-collapse:collapse;font-size:0.85em;margin:.5em 0}}
td,th{{border:1px solid #ccc;padding:3px 6px}}img{{max-width:100%;display:block;margin:1em 0}}
.caption{{color:#333}}.notes li{{color:#8a4b00}}section{{border-top:1px solid #ddd;margin-top:2em}}
</style></head>
<body><h1>{html.escape(title)}</h1>
<p>{html.escape(notes)}</p>{no_plots}
<p>Regret is against the best fixed decision in hindsight (for stochastic bandits, the
pseudo-regret: against the best arm's mean), mean over seeds with 95% bands; the tables add
the median over seeds.
In each regret panel a private learner's curves are coloured by epsilon (tight calibration
solid, the paper's dashed) against its own non-private counterpart in black (where that was
not run, against every non-private learner of the run, as the panel's title says). The
privacy-utility plots place each point at the epsilon its noise <em>proves</em>; a hollow
marker shows the epsilon that was asked for when the two differ; a wide light line there is
uniform random play's exact level, where it is known.</p>
<ol>{toc}</ol>
{"".join(sections)}
<p>Data: <a href="results.csv">results.csv</a> (every seed and recorded round),
<a href="summary.csv">summary.csv</a>.</p>
</body></html>
"""
    index = out / "index.html"
    index.write_text(page)
    return index
