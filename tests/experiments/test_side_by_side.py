"""`dponline side-by-side`: CTRL, DP-FTRL and the streaming Frank-Wolfe on one stream."""

import json

import pytest

from dponline.cli import main
from dponline.experiments.side_by_side import LEARNERS, run_side_by_side, write_side_by_side


@pytest.fixture(scope="module")
def small_run():
    return run_side_by_side(horizon=60, dim=3, replicas=2, seed=4, checkpoints=5)


def test_every_learner_runs_at_the_budget_and_is_scored_alike(small_run):
    rows, rounds, env = small_run
    assert [r.learner for r in rows] == [label for label, _, _ in LEARNERS]
    assert rounds[-1] == env.horizon
    for row, (_, _, private) in zip(rows, LEARNERS, strict=True):
        assert row.private is private
        if private:
            # every calibration proves at least the budget (tight) on the same neighbours
            assert row.epsilon <= 1.0 + 1e-9 and row.delta <= 1e-6
        else:
            assert row.epsilon is None and row.calibration == "none"
        assert 0 <= row.switches <= env.horizon - 1
        assert row.curve[-1] == pytest.approx(row.regret)
    switches = {r.learner: r.switches for r in rows}
    # lazy CTRL moves rarely; FTRL and Frank-Wolfe move every round
    assert switches["FTRL (non-private)"] == env.horizon - 1
    assert switches["lazy CTRL, S = d sqrt T (non-private)"] < env.horizon / 2


def test_outputs_are_written(small_run, tmp_path):
    rows, rounds, env = small_run
    written = write_side_by_side(rows, rounds, env, tmp_path, title="t")
    names = {p.name for p in written}
    assert {"side_by_side.csv", "side_by_side.json", "side_by_side.png", "index.html"} <= names
    data = json.loads((tmp_path / "side_by_side.json").read_text())
    assert len(data["rows"]) == len(LEARNERS) and data["rounds"] == rounds.tolist()
    assert "CTRL" in (tmp_path / "index.html").read_text()


def test_cli_json(tmp_path, capsys):
    args = ["side-by-side", "--T", "40", "--d", "2", "--seeds", "2", "--out", str(tmp_path)]
    assert main([*args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["learner"] for r in rows} == {label for label, _, _ in LEARNERS}
    assert (tmp_path / "side_by_side.csv").exists()
