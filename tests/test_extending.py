"""A learner of one's own (docs/extending.md): the worked example passes the battery and its
audit, a spec's ``modules`` field brings it into a run (in worker processes too), an installed
package's entry point into every command, and the guide's code is the example's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dponline.checks import check_learner
from dponline.experiments.runner import Task, run_task
from dponline.experiments.spec import SpecError, load_spec, parse_spec
from dponline.registry import learners, load_modules, unregister_learner

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "own_learner"
NAME = "dp-explore-then-commit"


@pytest.fixture
def own_learner():
    """The example registered for one test, then forgotten (module and entry), so that the
    catalogue every other test reads stays the package's."""
    learners()  # the package's own modules first: only the example's are forgotten after
    before = set(sys.modules)
    load_modules([str(EXAMPLE / "explore_then_commit.py")])
    try:
        yield learners()[NAME]
    finally:
        unregister_learner(NAME)
        for name in set(sys.modules) - before:
            del sys.modules[name]


def test_the_check_script_runs():
    out = subprocess.run(
        [sys.executable, str(EXAMPLE / "check.py")], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().endswith("every check of the battery passes, the audit included")


def test_the_example_passes_the_battery_and_its_audit(own_learner):
    """Guarantee declared, resume bit-exact, replicas independent, bad input refused, round
    T+1 refused, corrupt state refused, and the audit: the claim (epsilon 1) not refuted, a
    tenth of the noise refuted (each with chance at most 1e-3 of a false failure)."""
    assert own_learner.private and own_learner.guarantee.endswith("(ours: this module's docstring)")
    check_learner(own_learner)


def test_the_example_proves_pure_dp_and_plays_the_rounds_it_says(own_learner):
    import numpy as np

    from dponline.environments.k_armed import KArmedBandit
    from dponline.registry import build_learner

    env = KArmedBandit([0.1, 0.2, 0.9], horizon=30, rng=0)
    learner = build_learner(NAME, env, epsilon=0.5, replicas=2, rng=1, pulls_per_arm=4)
    assert (learner.privacy.epsilon, learner.privacy.delta) == (0.5, 0.0)
    assert learner.scale == 2.0  # Laplace(1 / epsilon) on each sum
    arms = []
    for t in range(30):
        arm = learner.act()
        arms.append(arm.copy())
        learner.observe(env.round(t, arm)[0])
    arms = np.array(arms)
    # exploration: arm 0, 1, 2 for 4 rounds each, in every replica; then one arm to the end
    assert (arms[:12] == np.repeat([0, 1, 2], 4)[:, None]).all()
    assert (arms[12:] == arms[12]).all()


def test_a_spec_runs_its_own_learner_by_its_modules_field(own_learner, tmp_path):
    """The shipped spec, smaller: the module path is relative to the spec, the table holds the
    learner's rows beside the library's."""
    spec = load_spec(EXAMPLE / "spec.toml").overridden(horizon=300, seeds=3)
    assert spec.modules == (str(EXAMPLE / "explore_then_commit.py"),)
    tasks = spec.tasks()
    assert {t.learner for t in tasks} == {NAME, "dp-se", "dp-imed", "kl-ucb"}
    assert all(t.modules == spec.modules for t in tasks)
    ours = next(t for t in tasks if t.learner == NAME)
    rows = run_task(ours)
    assert set(rows["label"]) == {NAME} and rows["t"].max() == 300


def test_a_worker_process_imports_the_modules_again(tmp_path):
    """A fresh interpreter (a spawned worker, a Ray task) runs a task of the example: the
    runner imports the task's modules before it reads the catalogue."""
    task = Task(
        learner=NAME,
        environment="bernoulli_bandit",
        epsilon=1.0,
        calibration="tight",
        seeds=2,
        seed_entropy=0,
        task_index=0,
        horizon=50,
        environment_options={"n_arms": 3},
        modules=(str(EXAMPLE / "explore_then_commit.py"),),
    )
    code = (
        "import json, sys\n"
        "from dponline.experiments.runner import Task, run_task\n"
        "task = Task(**json.loads(sys.argv[1]))\n"
        "rows = run_task(task)\n"
        "print(sorted(set(rows['learner'])), int(rows['t'].max()))\n"
    )
    fields = {**task.__dict__, "modules": list(task.modules)}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(fields)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert out.strip() == f"['{NAME}'] 50"


def test_the_learners_code_is_part_of_a_tasks_key(tmp_path):
    """Stored results are not read back once the learner's own module has changed."""
    module = tmp_path / "mine.py"
    module.write_text("X = 1\n")
    task = Task("kl-ucb", "bernoulli_bandit", None, "none", 2, 0, 0, 50, modules=(str(module),))
    before = task.key
    module.write_text("X = 2\n")
    assert task.key != before


def test_a_bad_modules_field_is_a_spec_error(tmp_path):
    base = {"environments": [{"name": "bernoulli_bandit"}], "horizon": 10}
    with pytest.raises(SpecError, match=r"'modules'.*does not exist"):
        parse_spec({**base, "modules": ["missing.py"], "learners": [{"name": "kl-ucb"}]})
    with pytest.raises(SpecError, match=r"'modules': expected a list of module names"):
        parse_spec({**base, "modules": "mine.py", "learners": [{"name": "kl-ucb"}]})
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('my learner is broken')\n")
    with pytest.raises(RuntimeError, match="my learner is broken"):
        parse_spec(
            {**base, "modules": ["broken.py"], "learners": [{"name": "kl-ucb"}]}, base=tmp_path
        )
    assert "broken" not in " ".join(sys.modules)


def _install_plugin(site: Path, value: str) -> None:
    """A distribution on ``site`` whose entry point in the ``dponline.learners`` group names
    ``value`` (what ``pip install`` of a package declaring it leaves behind)."""
    info = site / "my_learners-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-learners\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[dponline.learners]\nexplore = {value}\n")


def _dponline(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": f"{site}:{EXAMPLE}", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "dponline", *args], capture_output=True, text=True, env=env
    )


def test_an_installed_packages_entry_point_registers_its_learners_for_every_command(tmp_path):
    _install_plugin(tmp_path, "explore_then_commit")
    listed = _dponline(tmp_path, "list", NAME)
    assert listed.returncode == 0, listed.stderr
    assert "option pulls_per_arm" in listed.stdout
    audited = _dponline(tmp_path, "audit", "--learners", NAME, "--trials", "4000", "--json")
    assert audited.returncode == 0, audited.stderr
    (row,) = json.loads(audited.stdout)["learners"]
    assert row["learner"] == NAME and row["verdict"] == "not refuted"
    assert row["verdict_under_noised"] == "REFUTED"


def test_a_broken_plugin_is_named(tmp_path):
    _install_plugin(tmp_path, "no_such_module_here")
    listed = _dponline(tmp_path, "list")
    assert listed.returncode != 0
    assert re.search(r"learner plugin 'explore' \(no_such_module_here.*failed", listed.stderr)


def test_the_guides_code_is_the_examples():
    """Every python block of docs/extending.md is a passage of the example's module or spec,
    so that the guide cannot drift from the code the battery checks."""
    guide = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    python = "".join(
        (EXAMPLE / f).read_text(encoding="utf-8") for f in ("explore_then_commit.py", "check.py")
    )
    spec = (EXAMPLE / "spec.toml").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(python|toml)\n(.*?)^```", guide, re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 6
    for kind, block in blocks:
        if block.startswith('[project.entry-points."dponline.learners"]'):
            continue  # a package's declaration (what _install_plugin leaves installed)
        assert block in (python if kind == "python" else spec), block[:200]
