"""Reports: regret curves with confidence bands, privacy-utility curves, a results table, and an
HTML page (``index.html``) that shows them, written to a folder the user names.

Needs matplotlib (``pip install 'dponline[report]'``).
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["summarise", "write_report"]

Z95 = 1.959963984540054


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Final regret per learner, environment, calibration and epsilon: mean, sd, 95% CI."""
    final = results[
        results["t"]
        == results.groupby(["label", "environment", "calibration", "epsilon"], dropna=False)[
            "t"
        ].transform("max")
    ]
    grouped = final.groupby(["environment", "label", "calibration", "epsilon"], dropna=False)
    out = grouped.agg(
        T=("t", "max"),
        seeds=("seed", "nunique"),
        regret_mean=("regret", "mean"),
        regret_sd=("regret", "std"),
        proven_epsilon=("proven_epsilon", "first"),
        delta=("delta", "first"),
    ).reset_index()
    out["regret_ci95"] = Z95 * out["regret_sd"] / np.sqrt(out["seeds"])
    return out.sort_values(
        ["environment", "label", "calibration", "epsilon"], na_position="first"
    ).reset_index(drop=True)


def _plt():  # type: ignore[no-untyped-def]
    try:
        import matplotlib
    except ImportError:
        raise ValueError("reports need matplotlib: pip install 'dponline[report]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _curve_key(row: pd.Series) -> str:
    if pd.isna(row["epsilon"]):
        return f"{row['label']} (non-private)"
    return f"{row['label']} [{row['calibration']}] eps={row['epsilon']:g}"


def plot_regret_curves(results: pd.DataFrame, environment: str, path: Path) -> None:
    """Mean regret against t with a 95% band over seeds, one line per learner setting."""
    plt = _plt()
    data = results[results["environment"] == environment]
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=110)
    keys = data[["label", "calibration", "epsilon"]].drop_duplicates()
    colours = plt.get_cmap("tab20").colors
    for i, (_, k) in enumerate(keys.iterrows()):
        sel = data[
            (data["label"] == k["label"])
            & (data["calibration"] == k["calibration"])
            & ((data["epsilon"] == k["epsilon"]) | (pd.isna(k["epsilon"]) & data["epsilon"].isna()))
        ]
        g = sel.groupby("t")["regret"]
        mean, sd, n = g.mean(), g.std().fillna(0.0), g.count()
        band = Z95 * sd / np.sqrt(n)
        (line,) = ax.plot(
            mean.index,
            mean.values,
            label=_curve_key(k),
            lw=1.4,
            color="black" if pd.isna(k["epsilon"]) else colours[i % len(colours)],
            ls="--" if pd.isna(k["epsilon"]) else "-",
        )
        ax.fill_between(mean.index, mean - band, mean + band, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("round t")
    ax.set_ylabel("regret (vs best fixed decision in hindsight)")
    ax.set_title(f"Regret on {environment} (mean, 95% band over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_privacy_utility(summary: pd.DataFrame, environment: str, path: Path) -> None:
    """Final regret against epsilon per private learner; non-private learners as references."""
    plt = _plt()
    data = summary[summary["environment"] == environment]
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=110)
    private = data[data["epsilon"].notna()]
    for (label, cal), g in private.groupby(["label", "calibration"]):
        g = g.sort_values("epsilon")
        ax.errorbar(
            g["epsilon"],
            g["regret_mean"],
            yerr=g["regret_ci95"],
            marker="o",
            capsize=3,
            label=f"{label} [{cal}]",
        )
    for _, r in data[data["epsilon"].isna()].iterrows():
        ax.axhline(
            r["regret_mean"], ls="--", color="black", lw=1, label=f"{r['label']} (non-private)"
        )
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("final regret")
    ax.set_title(f"Privacy-utility on {environment}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    return html.escape(str(v))


def write_report(
    results: pd.DataFrame, out_dir: str | Path, title: str = "dponline report", notes: str = ""
) -> Path:
    """Write results.csv (and results.parquet when pyarrow is installed), summary.csv, the PNG
    plots and index.html; return index.html's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results.to_csv(out / "results.csv", index=False)
    try:  # Parquet as well when a Parquet engine is installed (pip install pyarrow)
        results.to_parquet(out / "results.parquet", index=False)
    except ImportError:
        pass
    summary = summarise(results)
    summary.to_csv(out / "summary.csv", index=False)
    figures = []
    for i, env in enumerate(sorted(results["environment"].unique())):
        curves = f"regret_{i}.png"
        plot_regret_curves(results, env, out / curves)
        figures.append((f"Regret curves: {env}", curves))
        if summary[summary["environment"] == env]["epsilon"].notna().any():
            pu = f"privacy_utility_{i}.png"
            plot_privacy_utility(summary, env, out / pu)
            figures.append((f"Privacy-utility: {env}", pu))
    cols = [
        "environment",
        "label",
        "calibration",
        "epsilon",
        "proven_epsilon",
        "delta",
        "T",
        "seeds",
        "regret_mean",
        "regret_ci95",
    ]
    rows = "\n".join(
        "<tr>" + "".join(f"<td>{_fmt(r[c])}</td>" for c in cols) + "</tr>"
        for _, r in summary.iterrows()
    )
    figs = "\n".join(
        f'<figure><img src="{src}" alt="{html.escape(cap)}"><figcaption>{html.escape(cap)}'
        f"</figcaption></figure>"
        for cap, src in figures
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;}}
table{{border-collapse:collapse;font-size:0.85em}}td,th{{border:1px solid #ccc;padding:3px 6px}}
figure{{margin:1.5em 0}}img{{max-width:100%}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>{html.escape(notes)}</p>
<h2>Final regret</h2>
<p>Mean over seeds with a 95% confidence half-width; <em>proven_epsilon</em> is what the
learner's noise proves (it can differ from the requested epsilon for a paper's calibration).</p>
<table><tr>{"".join(f"<th>{c}</th>" for c in cols)}</tr>
{rows}
</table>
<h2>Plots</h2>
{figs}
<p>Data: <a href="results.csv">results.csv</a> (every seed and recorded round),
<a href="summary.csv">summary.csv</a>.</p>
</body></html>
"""
    index = out / "index.html"
    index.write_text(page)
    return index
