"""``dponline reproduce han2024``: the packaged spec on the runner, the paper's numbers beside
ours, and the quick version end to end through the CLI. (The data are tested with their
environment, tests/environments/test_lp_regression.py; validation-set tuning with the runner,
tests/experiments/test_tuning.py.)"""

from __future__ import annotations

import json
import math

import pytest

from dponline.cli import main
from dponline.experiments import han2024
from dponline.experiments.han2024 import (
    ALGORITHM_1_CLIP,
    ALGORITHMS,
    PAPER_SUBOPT,
    han2024_spec,
)


@pytest.mark.parametrize("quick", [False, True])
def test_the_spec_runs_each_table_s_algorithms_on_its_settings(quick):
    spec = han2024_spec(quick=quick)
    tasks = spec.tasks()
    settings = {
        (float(e["options"]["p"]), e["horizon"], e["options"]["dim"]) for e in spec.environments
    }
    if not quick:
        assert settings == set(PAPER_SUBOPT)
        assert spec.seeds == 10
    by_env: dict[str, set[tuple[str, str]]] = {}
    for t in tasks:
        by_env.setdefault(t.environment_label, set()).add((t.label, t.calibration))
        assert t.epsilon == 1.0 and t.allow_weaker == (t.calibration == "paper")
        assert t.learner_options.get("clip") is True
        assert bool(t.tune) == (t.label != "Algorithm 1")  # Algorithm 1's steps are its proof
        if t.label == ALGORITHM_1_CLIP:  # the clip is tuned, and only for tight
            assert list(t.tune) == ["increment_clip"] and t.calibration == "tight"
    for e in spec.environments:
        algs = ALGORITHMS[float(e["options"]["p"])]
        assert by_env[e["label"]] == {
            (a, c)
            for a in algs
            for c in ("paper", "tight")
            if (a, c) != (ALGORITHM_1_CLIP, "paper")
        }


def test_paper_numbers_leave_localmd_out():
    for (p, _, _), row in PAPER_SUBOPT.items():
        assert set(row) == set(ALGORITHMS[p]) - {"LocalMD", ALGORITHM_1_CLIP}  # ours alone
    assert PAPER_SUBOPT[(1.5, 2000, 10)]["Algorithm 1"] == (0.060, 0.032)  # Table 2


def test_quick_text_through_the_cli(tmp_path, capsys):
    assert main(["reproduce", "han2024", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("dponline reproduce han2024 --quick")
    assert "(epsilon, delta) = (1, 1/T)" in out
    assert 'Calibration "paper"' in out and 'Calibration "tight"' in out
    for alg in ("Algorithm 1", "NoisySFW", "LocalMD", "NoisySGD"):
        assert alg in out
    assert "clip" in out and "validation" in out and "fixed" in out
    assert (tmp_path / "algorithm1_subopt.png").stat().st_size > 0
    assert (tmp_path / "algorithm1_subopt.csv").read_text().startswith("p,T,d,calibration")


def test_without_matplotlib_the_curves_are_written_and_the_plot_is_said_missing(
    tmp_path, capsys, monkeypatch
):
    import dponline.experiments.han2024 as module

    monkeypatch.setattr(module, "have_matplotlib", lambda: False)
    assert main(["reproduce", "han2024", "--quick", "--out", str(tmp_path)]) == 0
    assert "No plot (the plots need matplotlib" in capsys.readouterr().out
    assert not (tmp_path / "algorithm1_subopt.png").exists()
    assert (tmp_path / "algorithm1_subopt.csv").exists()


def test_quick_json_through_the_cli(tmp_path, capsys):
    assert main(["reproduce", "han2024", "--quick", "--json", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert captured.err.startswith("dponline reproduce han2024")
    assert data["experiment"] == "han2024" and data["quick"] is True
    cells = data["cells"]
    # 2 settings, 2 calibrations of 3 + 2 algorithms, and Algorithm 1 + clip (tight) in each
    assert data["tasks"] == len(cells) == 2 * (3 + 2) + 2
    keys = {
        "p",
        "T",
        "d",
        "algorithm",
        "calibration",
        "mean",
        "sd",
        "scale",
        "proven_epsilon",
        "proven_delta",
        "paper_mean",
        "paper_sd",
    }
    for c in cells:
        assert keys <= set(c)
        assert c["p"] in ("1.5", "inf") and c["delta"] == pytest.approx(1 / c["T"])
        assert math.isfinite(c["mean"]) and c["sd"] >= 0 and len(c["subopt_runs"]) == 3
        if c["algorithm"] == "Algorithm 1":
            assert c["scale"] is None
        elif c["algorithm"] == "Algorithm 1 + clip":
            assert c["scale"] in data["config"]["clip_grid"] and c["calibration"] == "tight"
        else:
            assert c["scale"] in data["config"]["scale_grid"]
            assert c["scale_chosen_on"] == "validation set"
    assert {c["algorithm"] for c in cells if c["p"] == "inf"} == {
        "Algorithm 1",
        "Algorithm 1 + clip",
        "NoisySGD",
    }
    assert data["config"]["y_bound"] == pytest.approx(1.25) and data["config"]["clip"] is True


def test_a_rerun_reuses_the_stored_tasks_and_fresh_recomputes(tmp_path, capsys, monkeypatch):
    args = ["reproduce", "han2024", "--quick", "--json", "--out", str(tmp_path)]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["reused_tasks"] == 0
    stored = sorted((tmp_path / "checkpoints").glob("task*.result.npz"))
    assert len(stored) == first["tasks"]  # no pickles: the runner's store

    from dponline.experiments import runner

    calls = []
    original = runner._build
    monkeypatch.setattr(runner, "_build", lambda t, o: calls.append(t) or original(t, o))
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert calls == [] and again["reused_tasks"] == first["tasks"]
    for a, b in zip(first["cells"], again["cells"], strict=True):
        assert a["subopt_runs"] == b["subopt_runs"] and a["proven_epsilon"] == b["proven_epsilon"]
    assert main([*args, "--fresh"]) == 0
    fresh = json.loads(capsys.readouterr().out)
    assert fresh["reused_tasks"] == 0 and len(calls) > 0
    assert [c["subopt_runs"] for c in fresh["cells"]] == [c["subopt_runs"] for c in first["cells"]]


def test_the_spec_runs_with_dponline_run_too(tmp_path, capsys):
    spec = str(han2024.spec_path(quick=True))
    args = ["run", spec, "--seeds", "2", "--horizon", "40", "--out", str(tmp_path), "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert {r["label"] for r in summary} == {
        "Algorithm 1",
        "Algorithm 1 + clip",
        "NoisySFW",
        "LocalMD",
        "NoisySGD",
    }
