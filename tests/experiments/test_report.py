"""The report: small multiples of at most 8 curves, privacy-utility at the proven epsilon, and
the automatic notes (the plotted data are read back, not only the files)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from dponline.experiments.report import (
    MAX_CURVES,
    UNIFORM_LEVEL,
    plot_privacy_utility,
    plot_regret_curves,
    regret_panels,
    report_notes,
    summarise,
    write_report,
)
from dponline.experiments.runner import COLUMNS

pytest.importorskip("matplotlib")  # the report extra; `make test` installs it


def _results(spec: list[tuple[str, str, str, float | None, float]], env: str = "E") -> pd.DataFrame:
    """Rows for (learner, label, calibration, epsilon, proven epsilon), 3 seeds, t = 10, 20;
    the regret of seed s at t is slope * t + s with a slope per setting."""
    rows = []
    for k, (learner, label, cal, eps, proven) in enumerate(spec):
        for seed, t in itertools.product(range(3), (10, 20)):
            regret = (1 + k) * t + seed
            rows.append({
                "learner": learner, "label": label, "environment": env, "calibration": cal,
                "epsilon": np.nan if eps is None else eps,
                "proven_epsilon": np.nan if eps is None else proven,
                "delta": 0.0 if "laplace" in label else 1e-6,
                "unit": "" if eps is None else "one round", "tuned": "", "seed": seed, "t": t,
                "cumulative_loss": regret, "regret": float(regret), "final_loss": np.nan,
            })  # fmt: skip
    return pd.DataFrame(rows)[COLUMNS]


def _sweep() -> pd.DataFrame:
    spec = [("ftrl", "ftrl", "none", None, np.nan)]
    for label in ("dp-ftrl laplace", "dp-ftrl gaussian"):
        for cal, eps in itertools.product(("tight", "paper"), (0.25, 1.0, 4.0)):
            # the paper's Gaussian formula proves a twentieth of what it is asked
            proven = eps / 20 if (cal, label) == ("paper", "dp-ftrl gaussian") else eps
            spec.append(("dp-ftrl", label, cal, eps, proven))
    # five budgets in two calibrations: 10 curves, more than a panel may hold
    for cal, eps in itertools.product(("tight", "paper"), (0.1, 0.3, 1.0, 3.0, 10.0)):
        spec.append(("dp-exp2", "dp-exp2", cal, eps, eps))
    spec.append(("exp2", "exp2", "none", None, np.nan))
    return _results(spec)


def test_panels_pair_each_private_learner_with_its_counterpart_and_hold_at_most_8_curves(
    tmp_path,
):
    results = _sweep()
    panels = plot_regret_curves(results, "E", tmp_path / "regret.png")
    assert (tmp_path / "regret.png").stat().st_size > 10_000
    assert [p["title"] for p in panels] == [p["title"] for p in regret_panels(results)]
    by_title = {p["title"]: p for p in panels}
    assert by_title["dp-ftrl laplace vs ftrl"]["reference"] == ["ftrl"]
    assert by_title["dp-ftrl gaussian vs ftrl"]["reference"] == ["ftrl"]
    # dp-exp2's 10 curves are split by calibration, each against exp2
    assert {"dp-exp2 [tight] vs exp2", "dp-exp2 [paper] vs exp2"} <= set(by_title)
    # 6 private curves (2 calibrations x 3 epsilons) and the counterpart fit one panel; dp-exp2's
    # 10 plus exp2 do not, and split into 5 + 1 per calibration; nothing exceeds MAX_CURVES
    sizes = {p["title"]: len(p["curves"]) for p in panels}
    assert sizes == {
        "dp-ftrl laplace vs ftrl": 7,
        "dp-ftrl gaussian vs ftrl": 7,
        "dp-exp2 [tight] vs exp2": 6,
        "dp-exp2 [paper] vs exp2": 6,
    }
    assert max(sizes.values()) <= MAX_CURVES
    for panel in panels:
        # the curves drawn are the data's means over seeds: slope * t + 1
        for curve in panel["curves"]:
            assert curve["regret"][1] - curve["regret"][0] == pytest.approx(
                (curve["regret"][1] - 1) / 2
            )


def test_a_panel_without_its_counterpart_says_so_and_the_legend_names_the_lines():
    """lazy-dp-ts without thompson in the run: its panel compared it with every non-private
    learner and the first of them was drawn as its "non-private counterpart" (a newcomer's
    own learner, in black dots, labelled so); now the title names the counterpart missing."""
    results = _results([
        ("lazy-dp-ts", "lazy-dp-ts", "tight", 1.0, 1.0),
        ("dp-imed", "dp-imed", "tight", 1.0, 1.0),
        ("kl-ucb", "kl-ucb", "none", None, np.nan),
        ("imed", "imed", "none", None, np.nan),
    ])  # fmt: skip
    panels = {p["title"].split(" vs ")[0]: p for p in regret_panels(results)}
    lazy, imed = panels["lazy-dp-ts"], panels["dp-imed"]
    assert not lazy["own"] and lazy["reference"] == ["kl-ucb", "imed"]
    assert lazy["title"].endswith("(its counterpart thompson not run)")
    assert imed["own"] and imed["reference"] == ["imed"]
    notes = report_notes(summarise(results), "E")
    assert any("lazy-dp-ts: its non-private counterpart thompson was not run" in n for n in notes)


def test_privacy_utility_points_sit_at_the_proven_epsilon(tmp_path):
    summary = summarise(_sweep())
    plotted = plot_privacy_utility(summary, "E", tmp_path / "pu.png")
    paper = plotted["dp-ftrl gaussian [paper], (eps, 1e-6)-DP"]
    assert paper["x"] == pytest.approx([0.25 / 20, 1.0 / 20, 4.0 / 20])
    assert paper["requested"] == pytest.approx([0.25, 1.0, 4.0])
    tight = plotted["dp-ftrl laplace [tight], pure eps-DP"]
    assert tight["x"] == pytest.approx(tight["requested"])
    assert UNIFORM_LEVEL not in plotted
    # uniform random play's exact level is drawn where it is known (a reader saw no sign that
    # two learners sat at it), and the y range holds it
    plotted = plot_privacy_utility(summary, "E", tmp_path / "pu.png", uniform_regret=1e4)
    assert plotted[UNIFORM_LEVEL] == {"y": 1e4}


def test_one_budget_gets_a_readable_epsilon_axis():
    from dponline.experiments.report import epsilon_axis_limits

    lo, hi = epsilon_axis_limits([0.9999997, 1.0, 1.0, float("nan")])
    assert lo < 0.5 < 2 < hi and hi / lo < 5  # ticks 0.5, 1 and 2
    assert epsilon_axis_limits([0.25, 1.0, 4.0]) is None  # a sweep: matplotlib's own range
    assert epsilon_axis_limits([]) is None


def test_notes_flag_what_looks_wrong():
    spec = [
        ("ftrl", "ftrl", "none", None, np.nan),
        ("dp-ftpl", "dp-ftpl", "tight", 4.0, 1.84),  # proves less than asked
        ("dp-scrible", "dp-scrible", "paper", 1.0, 2.0),  # proves more than asked
    ]
    notes = report_notes(summarise(_results(spec)), "E")
    assert any("dp-ftpl [tight] at epsilon = 4 proves 1.84" in n for n in notes)
    assert any("dp-scrible [paper] at epsilon = 1 proves only 2" in n for n in notes)
    # every learner within one interval of every other: no effect to see
    flat = _results([("ftrl", "ftrl", "none", None, np.nan)] + [
        ("dp-ftrl", "dp-ftrl", "tight", e, e) for e in (1.0, 4.0)
    ])  # fmt: skip
    flat["regret"] = flat["seed"] * 10.0  # the same spread for everyone
    assert any("no effect" in n for n in report_notes(summarise(flat), "E"))
    assert not any("no effect" in n for n in report_notes(summarise(_sweep()), "E"))


def test_notes_say_where_a_private_bandit_is_not_below_uniform_play():
    spec = [
        ("glm-bandit", "glm-bandit", "none", None, np.nan),
        ("dp-glm-bandit", "dp-glm-bandit", "tight", 1.0, 1.0),
        ("dp-glm-bandit", "dp-glm-bandit", "tight", 64.0, 64.0),
        ("uniform-play", "uniform-play", "none", None, np.nan),
    ]
    res = _results(spec)
    level = {1.0: 50.0, 64.0: 40.0}  # final regrets (+ seed 0..2, 95% interval 1.13)
    for eps, base in level.items():
        rows = res["epsilon"] == eps
        res.loc[rows, "regret"] = base + res.loc[rows, "seed"]
    uniform = res["learner"] == "uniform-play"
    res.loc[uniform, "regret"] = 50.0 + res.loc[uniform, "seed"]  # mean 51
    notes = [n for n in report_notes(summarise(res), "E") if "uniform" in n]
    # epsilon = 1: 51 +- 1.13 is not below 51; epsilon = 64: 41 + 1.13 < 51 is
    assert notes == [
        "dp-glm-bandit [tight] is not below uniform random play (51) by its 95% interval at "
        "epsilon = 1: at that budget it has not learned anything this run can show."
    ]
    without = res[~uniform]
    assert not any("uniform" in n for n in report_notes(summarise(without), "E"))
    # a stochastic bandit's uniform level is known exactly (uniform_play_regret): the note
    # needs no uniform-play run there (DP-UCB at uniform's level went unflagged)
    assert [n for n in report_notes(summarise(without), "E", 51.0) if "uniform" in n] == notes
    # a learner exactly at the level but for rounding (round-robin play summed over rounds;
    # DP-SE at 1126.698890016647 against 1126.698890016811, interval 0) is flagged too
    flat = without.copy()
    rows = flat["epsilon"] == 1.0
    flat.loc[rows, "regret"] = 1126.698890016647
    got = [n for n in report_notes(summarise(flat), "E", 1126.698890016811) if "uniform" in n]
    assert len(got) == 1 and "at epsilon = 1:" in got[0]


def test_one_section_per_environment_with_its_caption_and_notes(tmp_path):
    results = pd.concat([_sweep(), _results([("ftrl", "ftrl", "none", None, np.nan)], "F")])
    index = write_report(results, tmp_path, title="t", captions={"E": "What E is."})
    page = index.read_text()
    assert page.count("<section") == 2
    assert "What E is." in page
    assert "does not improve" in page  # regret grows with epsilon in this sweep
    for png in ("regret_0.png", "privacy_utility_0.png", "regret_1.png"):
        assert (tmp_path / png).exists() and f'src="{png}"' in page


def test_reference_curves_go_where_their_epsilon_is_shown(tmp_path):
    """A bound for every learner (epsilon None) is drawn in every panel; one for an epsilon
    only in the panels that show a pure epsilon-DP learner (delta 0) at that epsilon: the
    private lower bounds say nothing of an (epsilon, delta) learner (the Gaussian panel shows
    0.25 and does not get it)."""
    results = _sweep()
    refs = [
        {"label": "bound", "epsilon": None, "t": [10, 20], "regret": [1.0, 2.0]},
        {"label": "private bound", "epsilon": 0.25, "t": [10, 20], "regret": [3.0, 4.0]},
    ]
    panels = plot_regret_curves(results, "E", tmp_path / "regret.png", refs)
    for panel in panels:
        drawn = [c for c in panel["curves"] if c["calibration"] == "reference"]
        pure_quarter = any(eps == 0.25 and "laplace" in lab for lab, _, eps in panel["private"])
        assert [c["label"] for c in drawn] == (
            ["bound", "private bound"] if pure_quarter else ["bound"]
        )
        assert drawn[0]["regret"] == [1.0, 2.0]
    # dp-exp2's panels show 0.1 ... 10, not 0.25: the private bound stays out of them
    assert any(not any(e == 0.25 for _, _, e in p["private"]) for p in panels)
    gaussian = [p for p in panels if p["private"] and "gaussian" in p["private"][0][0]]
    assert gaussian and all(any(e == 0.25 for _, _, e in p["private"]) for p in gaussian)
    assert any("laplace" in p["private"][0][0] for p in panels if p["private"])


def test_extra_sections_follow_the_environments_with_their_table(tmp_path):
    table = pd.DataFrame({"learner": ["a", "b"], "click_rate": [0.01, 0.02]})
    index = write_report(
        _sweep(), tmp_path, title="t", extra_sections=[("Replay", "What replay is.", table)]
    )
    page = index.read_text()
    assert page.count("<section") == 2
    assert page.index('id="env-0"') < page.index('id="env-1"')
    assert "<h2>Replay</h2>" in page and "What replay is." in page
    assert "<th>click_rate</th>" in page and "<td>0.02</td>" in page
    assert '<a href="#env-1">Replay</a>' in page


def test_intervals_use_student_t_and_held_out_losses_are_summarised(tmp_path, capsys):
    """The 95% interval of a mean over n seeds is t_{0.975, n-1} sd / sqrt(n) (1.96 covered
    81% at 3 seeds); a table with a held-out loss after the last round (streaming
    optimisation's test SubOpt, where every batch baseline's regret is T) shows its mean and
    interval in the summary, the report's table and the CLI's."""
    from scipy.stats import t as student

    from dponline.cli import _print_summary, _summary_rows
    from dponline.experiments.report import t95

    assert t95(3) == pytest.approx(student.ppf(0.975, 2)) == pytest.approx(4.302652729911275)
    assert np.isnan(t95(1))
    results = _results([("ftrl", "ftrl", "none", None, np.nan)])
    plain = summarise(results)
    # seeds 0, 1, 2 above a common slope: sd 1 at every t
    assert plain["regret_ci95"].iloc[0] == pytest.approx(4.302652729911275 / np.sqrt(3))
    assert "final_loss_mean" not in plain
    last = results["t"] == results["t"].max()
    results.loc[last, "final_loss"] = 0.5 + 0.1 * results.loc[last, "seed"]
    held = summarise(results)
    assert held["final_loss_mean"].iloc[0] == pytest.approx(0.6)
    assert held["final_loss_ci95"].iloc[0] == pytest.approx(0.1 * 4.302652729911275 / np.sqrt(3))
    page = write_report(results, tmp_path, title="t").read_text()
    assert "held-out loss" in page and "<td>0.6</td>" in page
    _print_summary(_summary_rows(held))
    out = capsys.readouterr().out
    assert "held-out" in out.splitlines()[0] and "0.6 " in out.splitlines()[2] + " "


def test_a_person_held_out_table_keeps_its_unit_and_shows_the_tuned_choice(tmp_path):
    """The report's table of a streaming environment (held-out losses) showed neither the unit
    of privacy of a person's rows, overwritten by the held-out columns, nor what tuning chose."""
    results = _results([("noisy-sgd", "noisy-sgd", "tight", 1.0, 1.0)])
    results["unit"] = "person: 2 samples, by group privacy"
    results["tuned"] = '{"step_scale": 0.3}'
    last = results["t"] == results["t"].max()
    results.loc[last, "final_loss"] = 0.5
    page = write_report(results, tmp_path, title="t").read_text()
    header = page[page.index("<th>") : page.index("</tr>", page.index("<th>"))]
    assert "unit of privacy" in header and "tuned" in header and "held-out loss" in header
    assert "person: 2 samples, by group privacy" in page and "step_scale" in page


def test_a_private_learner_that_does_not_improve_is_compared_with_its_own_counterpart():
    """The note compared with the best non-private learner of the environment, not the
    learner's own counterpart (dp-exp2 measured against htinf, not exp2): now its counterpart
    (registry ``counterpart_of``), the best non-private learner when none ran."""
    spec = [
        ("exp2", "exp2", "none", None, np.nan),
        ("htinf", "htinf", "none", None, np.nan),
        ("dp-exp2", "dp-exp2", "tight", 0.1, 0.1),
        ("dp-exp2", "dp-exp2", "tight", 1.0, 1.0),
    ]
    res = _results(spec)
    level = {"exp2": 100.0, "htinf": 60.0}
    for name, base in level.items():
        rows = res["learner"] == name
        res.loc[rows, "regret"] = base + res.loc[rows, "seed"]
    private = res["learner"] == "dp-exp2"
    res.loc[private, "regret"] = 200.0 + res.loc[private, "seed"]  # flat across epsilon
    notes = [n for n in report_notes(summarise(res), "E") if "does not improve" in n]
    assert notes == [
        "dp-exp2 [tight] does not improve from epsilon = 0.1 to 1 (regret 201 and 201, within "
        "their intervals) while its non-private counterpart exp2 reaches 101: at every budget "
        "tried its noise drowns what it learns."
    ]
    alone = res[res["learner"] != "exp2"]
    (note,) = [n for n in report_notes(summarise(alone), "E") if "does not improve" in n]
    assert "while the best non-private learner (htinf) reaches 61" in note
    unknown = res.copy()  # a non-private regret that is NaN (pandas refused idxmin): no note
    unknown.loc[unknown["epsilon"].isna(), "regret"] = np.nan
    assert not any("does not improve" in n for n in report_notes(summarise(unknown), "E"))
    lost = res.copy()  # its counterpart's regret unknown: the best non-private learner
    lost.loc[lost["learner"] == "exp2", "regret"] = np.nan
    (note,) = [n for n in report_notes(summarise(lost), "E") if "does not improve" in n]
    assert "while the best non-private learner (htinf) reaches 61" in note
    improving = res.copy()
    improving.loc[private & (res["epsilon"] == 1.0), "regret"] = 120.0
    assert not any("does not improve" in n for n in report_notes(summarise(improving), "E"))


def test_a_regret_unknown_is_left_out_of_the_privacy_utility_plot(tmp_path):
    # a NaN regret made matplotlib refuse the axis ("Axis limits cannot be NaN or Inf")
    summary = summarise(_sweep())
    private = summary.index[summary["epsilon"].notna()]
    summary.loc[private[0], ["regret_mean", "regret_ci95"]] = np.nan
    plotted = plot_privacy_utility(summary, "E", tmp_path / "pu.png", uniform_regret=5.0)
    assert (tmp_path / "pu.png").stat().st_size > 10_000 and plotted
