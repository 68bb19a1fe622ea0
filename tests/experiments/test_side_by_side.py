"""`dponline side-by-side`: CTRL, DP-FTRL and the streaming Frank-Wolfe on one stream, a spec
on the runner."""

import json

import numpy as np
import pytest

from dponline.cli import main
from dponline.environments.catalogue import build_environment
from dponline.experiments.side_by_side import (
    run_side_by_side,
    side_by_side_spec,
    side_by_side_tasks,
    spec_path,
    write_side_by_side,
)
from dponline.registry import build_learner, learners

SPEC = side_by_side_spec()
LABELS = [lr["label"] for lr in SPEC.learners]


@pytest.fixture(scope="module")
def small_run():
    return run_side_by_side(horizon=60, dim=3, replicas=2, seed=4, checkpoints=5)


def test_every_learner_runs_at_the_budget_and_is_scored_alike(small_run):
    rows, rounds, env = small_run
    assert [r.learner for r in rows] == LABELS
    assert rounds.tolist() == [1, 16, 30, 45, 60] and env.horizon == 60 and env.dim == 3
    for row, spec in zip(rows, SPEC.learners, strict=True):
        private = learners()[spec["name"]].private
        assert row.private is private
        if private:
            # every calibration proves at least the budget (tight) on the same neighbours
            assert row.epsilon <= 1.0 + 1e-9 and row.delta <= 1e-6
        else:
            assert row.epsilon is None and row.calibration == "none"
        assert 0 <= row.switches <= env.horizon - 1
        assert row.curve[-1] == pytest.approx(row.regret, rel=1e-12)
        assert row.seconds > 0
    switches = {r.learner: r.switches for r in rows}
    # lazy CTRL moves rarely; FTRL and Frank-Wolfe move every round
    assert switches["FTRL (non-private)"] == env.horizon - 1
    assert switches["lazy CTRL, S = d sqrt T (non-private)"] < env.horizon / 2


def test_the_comparison_is_the_packaged_spec_with_registered_learners():
    """Frank-Wolfe is the registry's (dp-)frank-wolfe on the samples view of the stream; the
    online learners see its loss functions; one task per learner, in the spec's order."""
    spec = side_by_side_spec(horizon=80, dim=2, kind="adversarial", epsilon=2.0, delta=1e-5,
                             calibration="paper", replicas=3, seed=9)  # fmt: skip
    tasks = side_by_side_tasks(spec, np.array([1, 40, 80]))
    assert [t.label for t in tasks] == LABELS and [t.task_index for t in tasks] == list(range(7))
    assert {t.learner: t.environment for t in tasks} == {
        "ctrl": "smooth_convex", "ctrl-glm": "smooth_convex", "dp-ftrl-oco": "smooth_convex",
        "dp-frank-wolfe": "smooth_convex_samples", "lazy-ctrl": "smooth_convex",
        "ftrl-oco": "smooth_convex", "frank-wolfe": "smooth_convex_samples",
    }  # fmt: skip
    for t in tasks:
        private = learners()[t.learner].private
        assert t.seeding == "spawn" and t.count_switches and t.record_rounds == (1, 40, 80)
        assert t.horizon == 80 and t.seeds == 3 and t.seed_entropy == 9
        assert t.environment_options == {"losses": "squared", "dim": 2, "kind": "adversarial"}
        assert (t.epsilon, t.calibration) == ((2.0, "paper") if private else (None, "none"))
        assert t.learner_options.get("delta") == (1e-5 if private else None)


def _by_hand(learner: str, position: int, seed: int = 4, horizon: int = 60, replicas: int = 2):
    """The comparison's numbers for one learner without the runner: the stream from
    default_rng(seed), the learner from the seed's child at its position, every round played
    and summed here, the switches counted here."""
    name = "smooth_convex_samples" if "frank-wolfe" in learner else "smooth_convex"
    options = {"losses": "squared", "dim": 3, "kind": "stochastic"}
    env = build_environment(name, horizon, np.random.default_rng(seed), **options)
    private = learners()[learner].private
    extra = ({"delta": 1e-6} if private else {}) | ({"clip": True} if "frank" in learner else {})
    agent = build_learner(
        learner,
        env,
        epsilon=1.0 if private else None,
        calibration="tight",
        allow_weaker=False,
        replicas=replicas,
        rng=np.random.default_rng(np.random.SeedSequence(seed).spawn(7)[position]),
        **extra,
    )
    total, switches, previous = np.zeros(replicas), np.zeros(replicas), None
    for t in range(horizon):
        x = np.array(agent.act(), copy=True)
        feedback, loss = env.round(t, x)
        agent.observe(feedback)
        total += loss
        if previous is not None:
            switches += np.any(x != previous, axis=1)
        previous = x
    regret = env.regret(total[:, None], np.array([horizon]))[:, 0]
    return regret, switches


@pytest.mark.parametrize(("learner", "position"), [("ftrl-oco", 5), ("dp-frank-wolfe", 3)])
def test_the_rows_are_the_learners_played_by_hand(small_run, learner, position):
    """FTRL on the loss functions and the private Frank-Wolfe on the samples of the same
    stream (its own seed's child): the row's regret and switches, exactly."""
    rows, _, _ = small_run
    row = rows[position]
    regret, switches = _by_hand(learner, position)
    assert row.regret == regret.mean() and row.switches == switches.mean()
    assert row.regret_se == regret.std(ddof=1) / np.sqrt(2)


def test_outputs_are_written(small_run, tmp_path):
    rows, rounds, env = small_run
    written = write_side_by_side(rows, rounds, env, tmp_path, title="t")
    names = {p.name for p in written}
    assert {"side_by_side.csv", "side_by_side.json", "side_by_side.png", "index.html"} <= names
    data = json.loads((tmp_path / "side_by_side.json").read_text())
    assert len(data["rows"]) == len(LABELS) and data["rounds"] == rounds.tolist()
    assert "CTRL" in (tmp_path / "index.html").read_text()


def test_cli_json(tmp_path, capsys):
    args = ["side-by-side", "--T", "40", "--d", "2", "--seeds", "2", "--out", str(tmp_path)]
    assert main([*args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["learner"] for r in rows] == LABELS
    assert (tmp_path / "side_by_side.csv").exists()
    one = ["side-by-side", "--T", "40", "--d", "2", "--seeds", "1", "--out", str(tmp_path)]
    assert main(one) == 0  # the table; one seed has no standard error to show
    out = capsys.readouterr().out
    assert "mean over 1 seeds" in out and "+-" not in out


def test_the_spec_runs_as_any_other(tmp_path, capsys):
    """``dponline run`` on the packaged spec: the samples view is in the environment catalogue,
    and the spec's own fields (spawn seeding, switch counts) reach its tasks."""
    out = tmp_path / "run"
    args = ["run", str(spec_path()), "--out", str(out), "--backend", "serial", "--json"]
    assert main([*args, "--horizon", "40", "--seeds", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["label"] for r in data["summary"]} == set(LABELS)
