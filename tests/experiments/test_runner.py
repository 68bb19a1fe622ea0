"""The runner: reproducible tables across backends, kill-and-resume, specs, reports."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dponline
from dponline.cli import main
from dponline.environments import ExpertsEnvironment
from dponline.experiments.checkpoints import (
    CHECKPOINT_SUFFIX,
    RESULT_SUFFIX,
    LegacyCheckpointWarning,
    load_state,
    save_state,
)
from dponline.experiments.report import plot_privacy_utility, summarise, write_report
from dponline.experiments.runner import make_tasks, run_sweep, run_task, stored_key
from dponline.experiments.spec import SpecError, load_spec, parse_spec
from tests.experiments.test_checkpoints import malicious_pickle

ROOT = Path(__file__).resolve().parents[2]

SMALL = dict(
    learners=[
        {"name": "ftrl"},
        {"name": "dp-ftrl", "options": {"noise": "gaussian", "delta": 1e-6}},
    ],
    environment="switching_best",
    epsilons=[1.0, 4.0],
    calibrations=["tight", "paper"],
    seeds=3,
    seed=5,
    horizon=300,
    environment_options={"n_experts": 4},
    record_every=10,
)


def test_table_is_tidy_and_regret_is_exact():
    tasks = make_tasks(**SMALL)
    assert len(tasks) == 1 + 2 * 2  # non-private once, private x eps x calibrations
    table = run_sweep(tasks, backend="serial", progress=False)
    assert (
        list(table.columns)
        == (
            "learner label environment calibration epsilon proven_epsilon delta unit tuned seed t "
            "cumulative_loss regret final_loss"
        ).split()
    )
    assert len(table) == len(tasks) * 3 * 30
    # regret = cumulative loss - best cumulative loss of a fixed expert (recomputed here)
    from dponline.environments import switching_best_losses

    env_seq, _ = tasks[0].seed_sequences()
    L = switching_best_losses(300, 4, 4, 0.2, np.random.default_rng(env_seq))
    best = np.cumsum(L, axis=0).min(axis=1)
    row = table[(table["learner"] == "ftrl")].iloc[5]
    assert row["regret"] == pytest.approx(row["cumulative_loss"] - best[row["t"] - 1])


def test_local_processes_give_the_serial_table():
    tasks = make_tasks(**SMALL)
    serial = run_sweep(tasks, backend="serial", progress=False)
    local = run_sweep(tasks, backend="local", workers=2, progress=False)
    pd.testing.assert_frame_equal(serial, local)


def test_ray_backend_gives_the_local_table():
    import ray  # installed with the dev extras (`make test` installs them)

    tasks = make_tasks(**SMALL)
    local = run_sweep(tasks, backend="local", workers=2, progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = run_sweep(tasks, backend="ray", progress=False)
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(local, on_ray)


def test_checkpoint_resume_in_process(tmp_path, monkeypatch):
    """A run that crashes in round 171 resumes from its round-150 checkpoint (the learner's
    noise stream included) to the uninterrupted table; a finished task is read, not rerun.
    The experts stream is oblivious and linear: the runner plays it in blocks of rounds that
    end at every checkpoint."""
    task = make_tasks(**SMALL)[2]
    ref = run_task(task)
    original, seen, crash_at = ExpertsEnvironment.block_losses, [], [170]

    def watched_block(self, t, actions):
        seen.append(t)
        if any(t <= c < t + len(actions) for c in crash_at):
            raise RuntimeError("simulated crash")
        return original(self, t, actions)

    monkeypatch.setattr(ExpertsEnvironment, "block_losses", watched_block)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_task(task, tmp_path, checkpoint_every=50)
    assert seen == [0, 50, 100, 150]
    stem = task.key + "-every50"  # a spacing other than the default is in the file's name
    assert [p.name for p in tmp_path.iterdir()] == [stem + CHECKPOINT_SUFFIX]
    seen.clear()
    crash_at.clear()
    resumed = run_task(task, tmp_path, checkpoint_every=50)
    assert seen == [150, 200, 250]
    pd.testing.assert_frame_equal(resumed, ref)
    assert [p.name for p in tmp_path.iterdir()] == [stem + RESULT_SUFFIX]
    seen.clear()
    pd.testing.assert_frame_equal(run_task(task, tmp_path, checkpoint_every=50), ref)
    assert seen == []


@pytest.mark.parametrize(("noise", "delta"), [("laplace", 0.0), ("gaussian", 1e-6)])
def test_saving_checkpoints_or_not_gives_the_same_table(tmp_path, noise, delta):
    """Blocks of rounds end at every checkpoint_every-th round whether or not a checkpoint is
    saved there: the tree counters draw their noise by block, so the numbers would otherwise
    depend on --no-checkpoint (they did, by up to 19 in regret on the stocks example)."""
    spec = {
        **SMALL,
        "learners": [{"name": "dp-ftrl", "options": {"noise": noise, "delta": delta}}],
        "calibrations": ["tight"],
        "epsilons": [1.0],
    }
    (task,) = make_tasks(**spec)
    saved = run_task(task, tmp_path, checkpoint_every=48)
    pd.testing.assert_frame_equal(run_task(task, None, checkpoint_every=48), saved)


def test_a_person_s_rows_say_so_and_never_share_a_label_with_one_round_s(tmp_path):
    """The unit of privacy is a column of the table (results.csv and the summary), and a task
    over a person without a label of its own is labelled with it."""
    spec = {
        **SMALL,
        "learners": [
            {"name": "dp-ftrl", "options": {"noise": "gaussian", "delta": 1e-6}},
            {
                "name": "dp-ftrl",
                "options": {
                    "noise": "gaussian",
                    "delta": 1e-6,
                    "participations": 2,
                    "min_separation": 10,
                },
            },
            {"name": "ftrl"},
        ],
        "calibrations": ["tight"],
        "epsilons": [1.0],
        "horizon": 60,
    }
    tables = [run_task(task) for task in make_tasks(**spec)]
    units = [table["unit"].unique().tolist() for table in tables]
    labels = [table["label"].unique().tolist() for table in tables]
    assert units == [["one round"], ["person: 2 rounds >= 10 apart"], ["non-private"]]
    assert len({label for (label,) in labels}) == 3  # the spec's labels name the options
    assert len(summarise(pd.concat(tables))) == 3
    # a task without a label takes the learner's name, with the unit when it is a person
    person = dataclasses.replace(make_tasks(**spec)[1], label="")
    assert person.display_label == "dp-ftrl (person: 2 rounds >= 10 apart)"
    assert dataclasses.replace(make_tasks(**spec)[0], label="").display_label == "dp-ftrl"
    # the report's tables and the privacy-utility plot say each row's unit when a person's is
    # among them (an epsilon per person is not one per round)
    index = write_report(pd.concat(tables), tmp_path, title="t")
    html = index.read_text()
    assert "<th>unit of privacy</th>" in html and "<td>person: 2 rounds &gt;= 10 apart</td>" in html
    summary = summarise(pd.concat(tables))
    plotted = plot_privacy_utility(summary, summary["environment"].iloc[0], tmp_path / "p.png")
    assert sorted(k.split(", per ")[1] for k in plotted if ", per " in k) == [
        "one round",
        "person: 2 rounds >= 10 apart",
    ]


def test_a_person_protected_by_group_privacy_says_so_in_the_unit_column():
    """A learner that proves one round only protects the person by group privacy: any k rounds,
    whatever the min_separation asked, and the table says so."""
    spec = {
        **SMALL,
        "learners": [
            {"name": "dp-exp2", "options": {"participations": 3, "min_separation": 10}},
        ],
        "environment": "bernoulli_bandit",
        "environment_options": {"n_arms": 3},
        "calibrations": ["tight"],
        "epsilons": [1.0],
        "horizon": 40,
    }
    (task,) = make_tasks(**spec)
    table = run_task(task)
    assert table["unit"].unique().tolist() == ["person: 3 rounds, by group privacy"]
    assert table["proven_epsilon"].iloc[0] <= 1.0 + 1e-9


def test_recorded_rounds_switches_and_spawn_seeding():
    """``record_rounds`` adds rounds to the record, ``count_switches`` adds the column
    ``switches`` (the loop's count, the same as the decisions' changes played by hand in
    tests/experiments/test_rounds.py), and "spawn" seeds the environment from the seed itself
    and the task at position i from the seed's i-th child (numpy's textbook scheme)."""
    task = make_tasks(**SMALL)[1]  # dp-ftrl, Gaussian noise, tight, epsilon 1
    plain = run_task(task)
    more = run_task(dataclasses.replace(task, record_rounds=(1, 15), count_switches=True))
    assert list(more.columns) == [*plain.columns, "switches"]
    assert sorted(set(more["t"])) == sorted({1, 15, *plain["t"]})
    pd.testing.assert_frame_equal(more[more["t"] % 10 == 0].drop(columns="switches")
                                  .reset_index(drop=True), plain)  # fmt: skip
    switches = more.pivot(index="t", columns="seed", values="switches").to_numpy()
    assert switches[0].tolist() == [0, 0, 0] and (np.diff(switches, axis=0) >= 0).all()
    assert (switches[-1] <= 299).all() and (switches[-1] > 0).all()

    spawned = dataclasses.replace(task, seeding="spawn", task_index=3)
    env_seq, learner_seq = spawned.seed_sequences()
    child = np.random.SeedSequence(task.seed_entropy).spawn(4)[3]
    assert env_seq.generate_state(4).tolist() == (
        np.random.SeedSequence(task.seed_entropy).generate_state(4).tolist()
    )
    assert learner_seq.generate_state(4).tolist() == child.generate_state(4).tolist()
    with pytest.raises(ValueError, match="seeding must be 'sweep', 'spawn' or 'stable', got 'o"):
        dataclasses.replace(task, seeding="other").seed_sequences()
    with pytest.raises(ValueError, match=r"rounds to record must lie in \[1, 300\], got \[301\]"):
        run_task(dataclasses.replace(task, record_rounds=(301,)))


def test_a_resumed_task_that_counts_switches_gives_the_uninterrupted_table(tmp_path):
    """The switch count, and the decision it compares the next one with, are saved with the
    checkpoint: a run stopped at a checkpoint resumes to the table of one that was not."""
    task = dataclasses.replace(make_tasks(**SMALL)[1], count_switches=True)
    ref = run_task(task, tmp_path / "ref", checkpoint_every=50)
    from dponline.experiments import runner

    calls = []
    original = runner.save_state

    def save_then_stop(path, state, *, task):
        original(path, state, task=task)
        calls.append(state["t"])
        if state["t"] == 100:
            raise KeyboardInterrupt  # as if stopped right after the checkpoint

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "save_state", save_then_stop)
        with pytest.raises(KeyboardInterrupt):
            run_task(task, tmp_path / "cut", checkpoint_every=50)
    assert calls == [50, 100]
    pd.testing.assert_frame_equal(run_task(task, tmp_path / "cut", checkpoint_every=50), ref,
                                  check_exact=True)  # fmt: skip


def test_resume_never_runs_a_planted_pickle(tmp_path):
    """Legacy ``*.pkl`` files are ignored with one warning per sweep; a pickle under one of our
    file names is refused. Unpickling the payload would create ``marker``: it never appears."""
    tasks = make_tasks(**SMALL)[:2]
    ref = run_sweep(tasks, backend="serial", progress=False)
    marker = tmp_path / "marker"
    payload = malicious_pickle(marker)
    out = tmp_path / "legacy"
    out.mkdir()
    for name in ("evil.pkl", f"{tasks[0].key}.done.pkl", f"{tasks[1].key}.ckpt.pkl"):
        (out / name).write_bytes(payload)
    with pytest.warns(LegacyCheckpointWarning) as caught:
        table = run_sweep(tasks, backend="serial", checkpoint_dir=out, progress=False)
    legacy = [str(w.message) for w in caught if w.category is LegacyCheckpointWarning]
    assert len(legacy) == 1 and legacy[0].startswith("ignoring 3 pickle file(s)")
    pd.testing.assert_frame_equal(table, ref)
    for suffix in (RESULT_SUFFIX, CHECKPOINT_SUFFIX):
        ours = tmp_path / suffix.strip(".")
        ours.mkdir()
        (ours / f"{tasks[0].key}{suffix}").write_bytes(payload)
        with pytest.raises(ValueError, match=r"not a dponline .* file.*pickle.*fresh output"):
            run_task(tasks[0], ours)
    assert not marker.exists()


def test_results_of_two_versions_never_mix(tmp_path, monkeypatch):
    task = make_tasks(**SMALL)[0]
    monkeypatch.setattr(dponline, "__version__", "9.0.0")
    old_key = task.key
    first = run_task(task, tmp_path)
    monkeypatch.setattr(dponline, "__version__", "9.0.1")
    assert task.key != old_key and task.key.startswith("task0000-")
    # the new version computes its own results instead of reading the old version's file
    pd.testing.assert_frame_equal(run_task(task, tmp_path), first)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted([old_key + RESULT_SUFFIX, task.key + RESULT_SUFFIX])
    # an old version's file under the new key is refused, naming both versions
    os.replace(tmp_path / (old_key + RESULT_SUFFIX), tmp_path / (task.key + RESULT_SUFFIX))
    with pytest.raises(ValueError, match=r"dponline '9\.0\.0', this is dponline '9\.0\.1'"):
        run_task(task, tmp_path)


def _crash_once(monkeypatch, task, folder, *, round_: int, every: int) -> None:
    """Run ``task`` into ``folder`` with checkpoints every ``every`` rounds until the block of
    the experts stream holding round ``round_`` raises, leaving its last checkpoint."""
    original = ExpertsEnvironment.block_losses

    def crash(self, t, actions):
        if t <= round_ < t + len(actions):
            raise RuntimeError("simulated crash")
        return original(self, t, actions)

    monkeypatch.setattr(ExpertsEnvironment, "block_losses", crash)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_task(task, folder, checkpoint_every=every)
    monkeypatch.setattr(ExpertsEnvironment, "block_losses", original)


def test_a_checkpoint_the_learner_refuses_says_what_to_do(tmp_path, monkeypatch):
    """A checkpoint whose learner state this code refuses (an earlier commit's format) names
    the file and the way out."""
    task = make_tasks(**SMALL)[2]
    _crash_once(monkeypatch, task, tmp_path, round_=100, every=50)
    stem = stored_key(task, 50)
    path = tmp_path / (stem + CHECKPOINT_SUFFIX)
    good = load_state(path, task=stem)
    for change in (
        {"learner": {"an": "older format"}},
        {"recorded_loss": good["recorded_loss"][:-1]},  # played to the end, then failed
        {"environment": None},
    ):
        save_state(path, {**good, **change}, task=stem)
        with pytest.raises(ValueError, match=r"does not fit this run .*delete the file"):
            run_task(task, tmp_path, checkpoint_every=50)


def test_a_checkpoint_of_another_task_is_refused(tmp_path):
    a, b = make_tasks(**SMALL)[1:3]
    run_task(a, tmp_path)
    os.replace(tmp_path / (a.key + RESULT_SUFFIX), tmp_path / (b.key + RESULT_SUFFIX))
    with pytest.raises(ValueError, match=rf"belongs to task '{a.key}', expected task '{b.key}'"):
        run_task(b, tmp_path)


KILL_SPEC = """
name = "kill test"
horizon = 30000
seeds = 4
seed = 11
epsilons = [1.0]
calibrations = ["tight"]
backend = "serial"
record_every = 500
checkpoint_every = 1000

[environment]
name = "stochastic"
options = { n_experts = 6, gap = 0.1 }

[[learners]]
name = "dp-ftrl"
options = { noise = "laplace" }

[[learners]]
name = "dp-ftrl"
label = "gaussian"
options = { noise = "gaussian", delta = 1e-6 }
"""


def test_killed_run_resumes_to_the_uninterrupted_table(tmp_path):
    spec = tmp_path / "kill.toml"
    spec.write_text(KILL_SPEC)
    ref_out, out = tmp_path / "ref", tmp_path / "killed"
    cmd = [sys.executable, "-m", "dponline", "run", str(spec), "--json"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    subprocess.run([*cmd, "--out", str(ref_out)], check=True, capture_output=True, env=env)

    proc = subprocess.Popen(
        [*cmd, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    ckpt = out / "checkpoints"
    deadline = time.time() + 120
    while time.time() < deadline and not list(ckpt.glob("*" + CHECKPOINT_SUFFIX)):
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list(ckpt.glob("*" + CHECKPOINT_SUFFIX)), "the run finished before it could be killed"
    assert not (out / "results.csv").exists()

    subprocess.run([*cmd, "--out", str(out)], check=True, capture_output=True, env=env)
    assert not list(tmp_path.rglob("*.pkl"))  # nothing is pickled
    assert len(list(ckpt.glob("*" + RESULT_SUFFIX))) == 2
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "results.csv"), pd.read_csv(ref_out / "results.csv")
    )


def test_spec_errors_name_the_field(tmp_path):
    base = {"environment": {"name": "stocks"}, "learners": [{"name": "ftrl"}]}
    parse_spec(base)
    cases = [
        ({"epsilons": [1, -2]}, "'epsilons'"),
        ({"seeds": 0}, "'seeds'"),
        ({"backend": "spark"}, "'backend'"),
        ({"calibrations": ["best"]}, "'calibrations'"),
        ({"learners": [{"name": "nope"}]}, "'learners[0].name'"),
        ({"environment": {"name": "nope"}}, "'environments[0].name'"),
        ({"learners": [{"name": "ftrl", "opts": {}}]}, "'learners[0]'"),
        ({"horizon": "long"}, "'horizon'"),
        ({"epochs": 3}, "top level"),
        (
            {"learners": [{"name": "dp-ftrl", "calibrations": ["best"]}]},
            "'learners[0].calibrations'",
        ),
        ({"learners": [{"name": "dp-ftrl", "calibrations": []}]}, "'learners[0].calibrations'"),
        ({"seeding": "random"}, "'seeding'"),
        ({"count_switches": 1}, "'count_switches'"),
    ]
    for change, field in cases:
        with pytest.raises(SpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
            parse_spec({**base, **change})
    bad = tmp_path / "bad.toml"
    bad.write_text("seeds = [")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(bad)
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "missing.toml")
    assert main(["run", str(bad)]) == 2


def test_a_misspelt_top_level_field_names_the_closest():
    base = {"environment": {"name": "stocks"}, "learners": [{"name": "ftrl"}]}
    with pytest.raises(
        SpecError,
        match=r"'epsilon' \(top level\): unknown \(did you mean "
        "'epsilons'",
    ):
        parse_spec({**base, "epsilon": [1.0]})


def test_record_every_defaults_to_about_a_thousand_points_a_curve():
    """Every round was recorded by default: a spec of ten seeds, five learners and 5,000 rounds
    wrote 113 MB of table and checkpoints. Now max(1, T // 1000) per task's horizon unless the
    spec sets it; the last round is always recorded."""
    envs = [
        {"name": "stochastic", "horizon": 5000},
        {"name": "alternating", "horizon": 800, "label": "short"},
        {"name": "stocks", "label": "real data"},  # its own horizon: the 5,651 NYSE days
    ]
    tasks = parse_spec({"environments": envs, "learners": [{"name": "ftrl"}]}).tasks()
    assert [t.record_every for t in tasks] == [5, 1, 5]
    fixed = parse_spec({"environments": envs, "learners": [{"name": "ftrl"}], "record_every": 7})
    assert {t.record_every for t in fixed.tasks()} == {7}


def test_spec_seeding_and_switches_reach_every_task():
    base = {"environment": {"name": "stocks"}, "learners": [{"name": "ftrl"}, {"name": "ftpl"}]}
    plain = parse_spec(base).tasks()
    assert {(t.seeding, t.count_switches) for t in plain} == {("sweep", False)}
    spawned = parse_spec({**base, "seeding": "spawn", "count_switches": True}).tasks()
    assert {(t.seeding, t.count_switches) for t in spawned} == {("spawn", True)}


def test_stable_seeding_keeps_a_learner_s_numbers_when_others_join_the_spec():
    """With the default, DP-IMED's row changed when a learner was added before it (its seed is
    its position); with seeding = "stable" it is the same, and a learner's seed still differs
    from another's on the same environment."""

    def rows(names: list[str], seeding: str) -> dict[str, list[float]]:
        spec = parse_spec(
            {
                "environment": {"name": "k_armed"},
                "horizon": 300,
                "seeds": 4,
                "seeding": seeding,
                "learners": [{"name": n} for n in names],
            }
        )
        table = run_sweep(spec.tasks(), backend="serial")
        final = table[table["t"] == 300].sort_values("seed")
        return {n: final[final["label"] == n]["regret"].tolist() for n in names}

    for seeding, same in (("sweep", False), ("stable", True)):
        alone = rows(["dp-imed", "kl-ucb"], seeding)
        joined = rows(["dp-klucb", "dp-imed", "kl-ucb"], seeding)
        assert (alone["dp-imed"] == joined["dp-imed"]) is same  # every seed's final regret
        assert alone["kl-ucb"] == joined["kl-ucb"]  # deterministic given the data
    with pytest.raises(SpecError, match="'sweep', 'spawn' or 'stable'"):
        parse_spec({"environment": {"name": "stocks"}, "learners": [{"name": "ftrl"}],
                    "seeding": "fixed"})  # fmt: skip


def test_a_learner_may_run_some_of_the_calibrations():
    spec = parse_spec(
        {
            "environment": {"name": "stocks"},
            "calibrations": ["paper", "tight"],
            "learners": [
                {"name": "dp-ftrl", "label": "both"},
                {"name": "dp-ftrl", "label": "tight only", "calibrations": ["tight"]},
                {"name": "ftrl"},
            ],
        }
    )
    runs = sorted((t.label, t.calibration) for t in spec.tasks())
    assert runs == [("both", "paper"), ("both", "tight"), ("ftrl", "none"), ("tight only", "tight")]


@pytest.mark.parametrize(
    "example", sorted((ROOT / "examples").glob("*.toml")), ids=lambda p: p.name
)
def test_every_example_spec_runs(example, tmp_path, capsys):
    # every shipped spec is valid and runs end to end; at 400 rounds and one seed to stay quick
    # (several seeds, resume and backends are the other tests' subject)
    args = ["run", str(example), "--out", str(tmp_path), "--backend", "serial", "--json"]
    assert main([*args, "--horizon", "400", "--seeds", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert Path(data["report"]).exists()
    assert data["summary"]


def test_report_files_and_html(tmp_path):
    table = run_sweep(make_tasks(**SMALL), backend="serial", progress=False)
    index = write_report(table, tmp_path, title="t")
    html = index.read_text()
    for png in ("regret_0.png", "privacy_utility_0.png"):
        assert (tmp_path / png).stat().st_size > 10_000
        assert f'src="{png}"' in html
    summary = summarise(table)
    assert set(summary["label"]) == {"ftrl", "dp-ftrl delta=1e-06 noise=gaussian"}
    assert (summary["seeds"] == 3).all()


def test_without_matplotlib_the_report_has_its_tables_and_says_why_no_plots(tmp_path, monkeypatch):
    import dponline.experiments.report as report

    monkeypatch.setattr(report, "have_matplotlib", lambda: False)
    table = run_sweep(make_tasks(**SMALL), backend="serial", progress=False)
    html = report.write_report(table, tmp_path, title="t").read_text()
    assert not list(tmp_path.glob("*.png")) and "<img" not in html
    assert "No plots: the plots need matplotlib" in html and "<table>" in html
    assert (tmp_path / "results.csv").exists() and (tmp_path / "summary.csv").exists()


def test_list_json_names_every_learner_with_paper_and_guarantee(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["learners"]
    assert {r["name"] for r in rows} >= {"dp-ftrl", "ftrl"}
    for r in rows:
        assert r["paper"] and r["guarantee"] and r["setting"]


def test_a_learner_without_a_fitting_environment_is_a_spec_error():
    spec = parse_spec({"environment": {"name": "stocks"}, "learners": [{"name": "dp-exp2"}]})
    with pytest.raises(SpecError, match=r"'learners\[0\]'.*bandit"):
        spec.tasks()


def test_learners_in_a_sweep_face_the_same_environment():
    """Paired comparisons: the environment's randomness does not depend on the learner."""
    tasks = make_tasks(**SMALL)
    envs = {t.seed_sequences()[0].generate_state(4).tobytes() for t in tasks}
    assert len(envs) == 1
    learners = {t.seed_sequences()[1].generate_state(4).tobytes() for t in tasks}
    assert len(learners) == len(tasks)


def test_duplicate_task_indices_are_rejected():
    tasks = make_tasks(**SMALL)
    with pytest.raises(ValueError, match="distinct task_index"):
        run_sweep(tasks + tasks, backend="serial", progress=False)


def test_tasks_whose_rows_would_share_a_name_are_refused():
    """One environment at two horizons, or one learner tuned and not, under their default
    labels: the table could not tell their rows apart and the summary averaged them (a
    review's finding); the spec now refuses them and names the fix, and so does run_sweep."""
    two_horizons = {
        "environments": [
            {"name": "switching_best", "horizon": 50},
            {"name": "switching_best", "horizon": 80},
        ],
        "learners": [{"name": "ftrl"}],
    }
    with pytest.raises(SpecError, match="distinct labels"):
        parse_spec(two_horizons).tasks()
    two_horizons["environments"][1]["label"] = "switching_best T=80"
    assert len(parse_spec(two_horizons).tasks()) == 2
    tuned = {
        "environment": {"name": "switching_best"},
        "horizon": 50,
        "learners": [{"name": "ftrl"}, {"name": "ftrl", "tune": {"eta": [0.1, 1.0]}}],
    }
    with pytest.raises(SpecError, match="tasks 0 and 1"):
        parse_spec(tuned).tasks()
    tasks = make_tasks(**SMALL)
    clash = dataclasses.replace(tasks[1], task_index=len(tasks))
    with pytest.raises(ValueError, match="summary would merge"):
        run_sweep([*tasks, clash], backend="serial", progress=False)


def test_fields_that_would_be_ignored_are_errors():
    """[environment] beside [[environments]] (the first was dropped), calibrations on a
    non-private learner (dropped), and a synthetic environment without a horizon (a
    traceback from its builder): each is one line naming the field."""
    both = {
        "environment": {"name": "stocks"},
        "environments": [{"name": "stock_bandit"}],
        "learners": [{"name": "exp2"}],
    }
    with pytest.raises(SpecError, match="'environment'"):
        parse_spec(both)
    public = {
        "environment": {"name": "stocks"},
        "learners": [{"name": "ftrl", "calibrations": ["paper"]}],
    }
    with pytest.raises(ValueError, match="not private"):
        parse_spec(public).tasks()
    own = parse_spec({"environment": {"name": "stocks"}, "learners": [{"name": "ftrl"}]})
    assert own.tasks()[0].horizon is None  # real data: all of it
    synthetic = parse_spec({"environment": {"name": "stochastic"}, "learners": [{"name": "ftrl"}]})
    with pytest.raises(SpecError, match=r"'environments\[0\].horizon'.*needs a horizon"):
        synthetic.tasks()
    assert synthetic.overridden(horizon=20).tasks()[0].horizon == 20
    mixed = parse_spec(
        {
            "environment": {"name": "stocks"},
            "calibrations": ["tight"],
            "learners": [{"name": "dp-ftrl", "calibrations": ["paper"]}],
        }
    )
    with pytest.raises(ValueError, match=r"the sweep's \['tight'\] and its own \['paper'\]"):
        mixed.tasks()


def test_results_of_another_checkpoint_spacing_are_never_read(tmp_path, monkeypatch):
    """The rounds played at once end at every checkpoint (the K-armed fast path draws a
    stretch's rewards together), so a spacing is part of a result: a run under another
    ``checkpoint_every`` neither resumes the first one's partial checkpoint nor reads its
    finished table (a review found both mixed in silently): each spacing has its own files, and
    a checkpoint renamed to another spacing's file is refused by its stamp."""
    spec = parse_spec(
        {
            "environment": {"name": "k_armed", "options": {"instance": "two_level"}},
            "horizon": 2000,
            "record_every": 2000,  # stretches end at recorded rounds too
            "seeds": 3,
            "learners": [{"name": "dp-imed"}],
        }
    )
    task = spec.tasks()[0]
    assert stored_key(task) == task.key and stored_key(task, 300) == task.key + "-every300"
    every300 = run_task(task, checkpoint_every=300)
    finished = run_task(task, tmp_path)  # the default spacing, 1000
    assert not np.array_equal(every300["regret"], finished["regret"])  # spacing moves the draws
    pd.testing.assert_frame_equal(run_task(task, tmp_path, checkpoint_every=300), every300)
    experts = make_tasks(**SMALL)[2]
    _crash_once(monkeypatch, experts, tmp_path, round_=170, every=50)
    pd.testing.assert_frame_equal(
        run_task(experts, tmp_path, checkpoint_every=30), run_task(experts, checkpoint_every=30)
    )
    again = tmp_path / "again"
    _crash_once(monkeypatch, experts, again, round_=170, every=50)
    os.replace(
        again / f"{stored_key(experts, 50)}{CHECKPOINT_SUFFIX}",
        again / f"{stored_key(experts, 30)}{CHECKPOINT_SUFFIX}",
    )
    with pytest.raises(
        ValueError, match=r"belongs to task '\S+-every50', expected task '\S+-every30'"
    ):
        run_task(experts, again, checkpoint_every=30)


def test_packaged_specs_run_by_name(tmp_path, monkeypatch):
    """`dponline run han2024_quick` reads the packaged spec (it said the file did not exist);
    a file of that name in the working folder still comes first, and a missing file's error
    lists the packaged names."""
    from dponline.experiments.spec import packaged_specs

    assert set(packaged_specs()) == {"han2024", "han2024_quick", "side_by_side"}
    monkeypatch.chdir(tmp_path)
    quick = load_spec("han2024_quick")
    assert quick.name.startswith("Han et al. (2024)") and quick.seeds == 3
    assert load_spec("side_by_side.toml").name == load_spec("side_by_side").name
    (tmp_path / "side_by_side.toml").write_text(
        '[environment]\nname = "stocks"\n[[learners]]\nname = "ftrl"\n'
    )
    assert load_spec("side_by_side.toml").name == "side_by_side"  # the local file
    assert load_spec("side_by_side").name.startswith("side by side")  # no file of that name
    with pytest.raises(SpecError, match="packaged specs, by name: han2024, han2024_quick"):
        load_spec("nope")


def test_a_new_horizon_is_named_in_the_labels_a_spec_gave():
    """`--horizon 60` on a spec whose environment is labelled "p=1.5, T=200, d=5" printed that
    label beside T = 60: the label now says the horizon the run has."""
    spec = load_spec("han2024_quick")
    small = spec.overridden(horizon=60)
    labels = {t.environment_label for t in small.tasks()}
    assert labels and all(label.endswith("(run at T = 60)") for label in labels)
    assert {t.horizon for t in small.tasks()} == {60}
    same = spec.overridden(seeds=2)  # no new horizon: the labels stay
    assert {t.environment_label for t in same.tasks()} == {
        t.environment_label for t in spec.tasks()
    }


def test_a_new_horizon_runs_environments_it_makes_the_same_once():
    """han2024 has each (p, d) at T = 1000 and T = 2000; at --horizon 40 both held the same
    data and ran twice under two labels. Now each runs once, under the first label, with a
    note; environments that still differ (another d) stay."""
    spec = load_spec("han2024")
    small = spec.overridden(horizon=40)
    assert [e["label"] for e in small.environments] == [
        f"p={p}, T=1000, d={d} (run at T = 40)" for p in ("1.5", "inf") for d in (5, 10)
    ]
    assert len(small.notes) == 4 and small.notes[0] == (
        "at T = 40, environment 'p=1.5, T=2000, d=5' is the same as 'p=1.5, T=1000, d=5' and "
        "is run once, under that label"
    )
    assert len(small.tasks()) == len(spec.tasks()) // 2
    assert spec.overridden(horizon=1000).notes == tuple(
        n.replace("T = 40", "T = 1000") for n in small.notes
    )
    assert spec.overridden(seeds=2).notes == ()


def test_results_of_other_code_are_recomputed_whatever_the_version(tmp_path, monkeypatch):
    """The version stayed 0.1.0 across hundreds of commits, so a result written by older code
    was read back by newer code (a review showed a proven epsilon of 0.664 from before a
    calibration change printed by the code that proves 0.453): the key holds a digest of the
    package's files, so other code recomputes."""
    from dponline.experiments import checkpoints

    task = make_tasks(**SMALL)[0]
    digest = checkpoints._source_digest()
    assert len(digest) == 16 and checkpoints.code_fingerprint().endswith("+" + digest)
    first = run_task(task, tmp_path)
    old_key = task.key
    monkeypatch.setattr(checkpoints, "_source_digest", lambda: "0" * 16)
    assert task.key != old_key
    pd.testing.assert_frame_equal(run_task(task, tmp_path), first)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [old_key + RESULT_SUFFIX, task.key + RESULT_SUFFIX]
    )


def test_an_environment_no_learner_runs_on_is_an_error_and_fields_are_named(tmp_path):
    """An environment that no learner of the spec fits (or whose 'learners' list names only
    learners that cannot run there) vanished from the report without a word; an environment's
    bad horizon was reported as the top-level field; a folder given as the spec was a
    traceback."""
    nofit = {
        "environments": [{"name": "bernoulli_bandit"}, {"name": "glm_bandit"}],
        "horizon": 20,
        "learners": [{"name": "exp3"}],
    }
    with pytest.raises(SpecError, match=r"'environments\[1\]': no learner of the spec runs on"):
        parse_spec(nofit).tasks()
    named = {
        "environments": [{"name": "stocks", "learners": ["dp-imed"]}, {"name": "k_armed"}],
        "horizon": 20,
        "learners": [{"name": "dp-imed"}],
    }
    with pytest.raises(SpecError, match=r"its 'learners' list names \['dp-imed'\]"):
        parse_spec(named).tasks()
    bad_h = {
        "environments": [{"name": "stocks", "horizon": 0}],
        "horizon": 100,
        "learners": [{"name": "ftrl"}],
    }
    with pytest.raises(SpecError, match=r"'environments\[0\]\.horizon'"):
        parse_spec(bad_h)
    with pytest.raises(SpecError, match="is a folder"):
        load_spec(tmp_path)


def test_a_task_that_cannot_be_built_is_named():
    """An option the environment's builder cannot use stopped the sweep with a bare
    TypeError; the error now names the task, its environment and its budget."""
    spec = parse_spec(
        {
            "environment": {"name": "bernoulli_bandit", "options": {"n_arms": "ten"}},
            "horizon": 20,
            "learners": [{"name": "dp-exp2"}],
        }
    )
    with pytest.raises(ValueError, match=r"task dp-exp2 on bernoulli_bandit n_arms=ten, tight"):
        run_sweep(spec.tasks(), backend="serial", progress=False)


def test_run_table_has_delta_and_switches_and_a_failed_run_leaves_nothing(tmp_path, capsys):
    """From a first-use review: the CLI's table had no delta column (pure DP and
    (epsilon, delta)-DP both read "eps proven 1"), the side-by-side spec's switches reached
    only results.csv, and a run refused for its horizon left an empty report folder."""
    out = tmp_path / "sbs"
    args = ["run", "side_by_side", "--out", str(out), "--backend", "serial", "--seeds", "2"]
    assert main([*args, "--horizon", "60"]) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("environment"))
    assert "delta" in header.split() and "switches" in header.split()
    assert "1e-06" in text
    spec = ROOT / "examples" / "experts_stocks.toml"
    bad = tmp_path / "bad"
    assert main(["run", str(spec), "--out", str(bad), "--horizon", "100000"]) == 2
    assert "exceeds the" in capsys.readouterr().err
    assert not bad.exists()


def test_the_unit_of_privacy_of_a_stream_of_samples_is_a_sample():
    """A streaming learner's guarantee covers datasets differing in one sample: its rows say
    "one sample" (they said "one round"), and a person's k samples, by group privacy."""
    (task,) = make_tasks(
        learners=[{"name": "noisy-sgd"}],
        environment="regression_stream",
        environment_options={"dim": 2},
        epsilons=[1.0],
        seeds=2,
        horizon=20,
    )
    assert set(run_task(task)["unit"]) == {"one sample"}
    (person,) = make_tasks(
        learners=[{"name": "noisy-sgd", "options": {"participations": 2}}],
        environment="regression_stream",
        environment_options={"dim": 2},
        epsilons=[1.0],
        seeds=2,
        horizon=20,
    )
    assert set(run_task(person)["unit"]) == {"person: 2 samples, by group privacy"}


def test_the_unit_of_privacy_follows_the_guarantees_relation():
    """The joint-DP GLM bandit protects one user's context and rewards: "one user"."""
    (task,) = make_tasks(
        learners=[{"name": "dp-glm-bandit"}],
        environment="glm_bandit",
        environment_options={"dim": 3},
        epsilons=[1.0],
        seeds=2,
        horizon=20,
    )
    assert set(run_task(task)["unit"]) == {"one user"}


@pytest.mark.parametrize("backend", ["serial", "local"])
def test_a_warning_of_many_tasks_is_printed_once_saying_in_how_many(backend, recwarn):
    """A learner's warning came once per task, from the process pool's line: now each distinct
    warning once, after the run, with the count of the tasks that raised it."""
    tasks = make_tasks(
        learners=[{"name": "exp4"}, {"name": "private-exp4"}, {"name": "batched-exp4"}],
        environment="stock_bandit",
        epsilons=[1.0],
        seeds=2,
        horizon=20,
    )
    run_sweep(tasks, backend=backend, workers=2, progress=False)
    said = [str(w.message) for w in recwarn if "gives no experts' advice" in str(w.message)]
    assert len(said) == 1 and said[0].endswith("[in 3 of 3 tasks]")
