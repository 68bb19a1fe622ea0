"""Learners of one's own (docs/extending.md): the two worked examples pass the battery and
their audits, a spec's ``modules`` field brings them into a run (in worker processes too), an
installed package's entry point into every command, and the guide's code is the examples'."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dponline.experiments import runner
from dponline.experiments.runner import Task, run_task
from dponline.experiments.spec import SpecError, load_spec, parse_spec
from dponline.registry import build_learner, learners, load_modules, unregister_learner

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "own_learner"
NAME = "dp-explore-then-commit"


@pytest.fixture
def own_learner():
    """The first example registered for one test, then forgotten (module and entry), so that
    the catalogue every other test reads stays the package's."""
    registered = set(learners())  # the package's own first: only the test's are forgotten
    before = set(sys.modules)
    load_modules([str(EXAMPLE / "explore_then_commit.py")])
    try:
        yield learners()[NAME]
    finally:  # and whatever else the test registered (the spec's second module)
        for name in set(learners()) - registered:
            unregister_learner(name)
        for name in set(sys.modules) - before:
            del sys.modules[name]


def test_the_check_script_passes_and_prints_what_the_guide_quotes():
    """The battery on both examples (the audit included: the claim not refuted, a tenth of
    the noise refuted, each verdict wrong with chance at most 1e-3), then each private one's
    audit at the full noise, a half and a tenth: fixed seeds, the numbers the guide quotes."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLE / "check.py")], capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    for name in ("dp-explore-then-commit", "dp-noisy-leader", "noisy-leader"):
        assert f"{name}: every check of the battery passes" in lines
    assert re.findall(r"epsilon >= ([0-9.]+) .*?(not refuted|REFUTED)", out) == [
        ("0.541", "not refuted"),
        ("1.210", "REFUTED"),
        ("6.430", "REFUTED"),
        ("0.542", "not refuted"),
        ("1.233", "REFUTED"),
        ("6.555", "REFUTED"),
    ]


def test_the_example_proves_pure_dp_and_plays_the_rounds_it_says(own_learner):
    from dponline.environments.k_armed import KArmedBandit

    assert own_learner.guarantee.endswith("(ours: this module's docstring)")
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


def test_a_spec_runs_its_own_learners_by_its_modules_field(own_learner):
    """The shipped spec, smaller: the module paths are relative to the spec, each learner runs
    on the environments that fit it, beside the library's."""
    spec = load_spec(EXAMPLE / "spec.toml").overridden(horizon=300, seeds=3)
    assert spec.modules == tuple(
        str(EXAMPLE / f) for f in ("explore_then_commit.py", "noisy_leader.py")
    )
    tasks = spec.tasks()
    by_env = {}
    for t in tasks:
        by_env.setdefault(t.environment, set()).add(t.learner)
    assert by_env == {
        "k_armed": {NAME, "dp-se", "dp-imed", "kl-ucb"},
        "stochastic": {"dp-noisy-leader", "noisy-leader", "dp-ftrl", "ftrl"},
    }
    assert all(t.modules == spec.modules for t in tasks)
    rows = run_task(next(t for t in tasks if t.learner == NAME))
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


def test_the_learners_own_code_is_part_of_a_tasks_key_and_its_folder_is_not(own_learner):
    """Stored results are not read back once the module that registers the learner has
    changed; where the module lies, and edits to it, leave the library's learners' keys be."""
    ours = Task(NAME, "bernoulli_bandit", 1.0, "tight", 2, 0, 0, 50, modules=("a/b.py",))
    moved = Task(NAME, "bernoulli_bandit", 1.0, "tight", 2, 0, 0, 50, modules=("c/d.py",))
    theirs = Task("kl-ucb", "bernoulli_bandit", None, "none", 2, 0, 1, 50)
    assert ours.key == moved.key
    before = (ours.key, theirs.key)
    source = Path(sys.modules[own_learner.factory.__module__].__file__)
    original = source.read_text()
    try:
        source.write_text(original + "\n# an edit\n")
        assert ours.key != before[0] and theirs.key == before[1]
    finally:
        source.write_text(original)
    assert ours.key == before[0]


def test_the_spec_modules_count_by_content_and_a_learner_without_a_file_has_a_key(tmp_path):
    import types

    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text("X = 1\n")
    two.write_text("X = 1\n")

    def task(module):
        return Task("kl-ucb", "bernoulli_bandit", None, "none", 2, 0, 0, 50, modules=(module,))

    assert task(str(one)).key == task(str(two)).key  # the same code in another place
    two.write_text("X = 2\n")
    assert task(str(one)).key != task(str(two)).key
    # a learner whose module has no file (python -c, a notebook, a zip): a key all the same
    fake = types.ModuleType("_no_file_here")
    fake.__file__ = "<stdin>"
    sys.modules["_no_file_here"] = fake
    try:
        entry = learners()["kl-ucb"]
        factory = functools.partial(entry.factory)
        factory.__module__ = "_no_file_here"
        import dataclasses

        from dponline.registry import register_learner

        register_learner(dataclasses.replace(entry, name="kl-ucb-copy", factory=factory))
        assert Task("kl-ucb-copy", "bernoulli_bandit", None, "none", 2, 0, 0, 50).key
    finally:
        unregister_learner("kl-ucb-copy")
        del sys.modules["_no_file_here"]


def test_the_user_modules_a_spec_module_imports_in_turn_count_by_content(tmp_path, monkeypatch):
    """A helper the spec's module imports (as a module, or a name from it, two levels deep)
    is part of the key; the standard library and installed packages (numpy) are not."""
    (tmp_path / "deep_helper.py").write_text("SCALE = 1.0\n")
    (tmp_path / "mid_helper.py").write_text("import deep_helper\n\ndef prior():\n    return 1\n")
    (tmp_path / "spec_module.py").write_text(
        "import json\nimport numpy as np\nfrom mid_helper import prior\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    def key():
        task = Task("kl-ucb", "bernoulli_bandit", None, "none", 2, 0, 0, 50)
        return dataclasses.replace(task, modules=(str(tmp_path / "spec_module.py"),)).key

    try:
        first = key()
        files = runner._user_modules([str(tmp_path / "spec_module.py")])
        assert [Path(f).name for f in files] == ["mid_helper.py", "deep_helper.py"]
        (tmp_path / "deep_helper.py").write_text("SCALE = 2.0\n")
        assert key() != first
    finally:
        for name in [n for n in sys.modules if "helper" in n or "spec_module" in n]:
            del sys.modules[name]


def test_imported_constants_and_modules_through_a_link_count_too(tmp_path, monkeypatch):
    """``from helpers import PRIOR`` (a number: no ``__module__`` to follow) and a spec module
    named by import whose file is a link with another name: their helpers are in the key."""
    (tmp_path / "const_helper.py").write_text("PRIOR = 1.0\n")
    (tmp_path / "real_module.py").write_text("from const_helper import PRIOR\n")
    (tmp_path / "linked_module.py").symlink_to(tmp_path / "real_module.py")
    monkeypatch.syspath_prepend(str(tmp_path))

    def key():
        task = Task("kl-ucb", "bernoulli_bandit", None, "none", 2, 0, 0, 50)
        return dataclasses.replace(task, modules=("linked_module",)).key

    try:
        first = key()
        (tmp_path / "const_helper.py").write_text("PRIOR = 2.0\n")
        assert key() != first
    finally:
        for name in ("const_helper", "real_module", "linked_module"):
            sys.modules.pop(name, None)


def test_a_bad_modules_field_is_a_spec_error(tmp_path):
    base = {"environments": [{"name": "bernoulli_bandit"}], "horizon": 10}
    learner = [{"name": "kl-ucb"}]
    with pytest.raises(SpecError, match=r"'modules'.*does not exist"):
        parse_spec({**base, "modules": ["missing.py"], "learners": learner})
    with pytest.raises(SpecError, match=r"'modules'.*is a folder, not a .py file"):
        parse_spec({**base, "modules": ["tests/"], "learners": learner}, base=ROOT)
    with pytest.raises(SpecError, match=r"no module named 'not_a_module_here'.*by its path"):
        parse_spec({**base, "modules": ["not_a_module_here"], "learners": learner})
    with pytest.raises(SpecError, match=r"'modules': expected a list of module names"):
        parse_spec({**base, "modules": "mine.py", "learners": learner})
    (tmp_path / "broken.py").write_text("raise RuntimeError('my learner is broken')\n")
    with pytest.raises(SpecError, match=r"importing 'broken\.py' raised RuntimeError: my learner"):
        parse_spec({**base, "modules": ["broken.py"], "learners": learner}, base=tmp_path)
    assert "broken" not in " ".join(sys.modules)


def test_run_level_settings_in_a_spec_learners_options_are_named():
    base = {"environments": [{"name": "bernoulli_bandit"}], "horizon": 10}
    with pytest.raises(SpecError, match=r"'learners\[0\].options'.*spec's\s+seeds and seed"):
        parse_spec({**base, "learners": [{"name": "kl-ucb", "options": {"replicas": 3}}]})
    with pytest.raises(SpecError, match=r"epsilon is the run's, not an option of .*'epsilons'"):
        parse_spec({**base, "learners": [{"name": "dp-se", "options": {"epsilon": 0.5}}]})


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
    # the shipped spec names the plugin's file in its modules: not registered twice
    args = ("--horizon", "200", "--seeds", "2", "--backend", "serial", "--json")
    run = _dponline(
        tmp_path, "run", str(EXAMPLE / "spec.toml"), "--out", str(tmp_path / "r"), *args
    )
    assert run.returncode == 0, run.stderr
    assert NAME in {row["label"] for row in json.loads(run.stdout)["summary"]}


def test_a_broken_plugin_is_named(tmp_path):
    _install_plugin(tmp_path, "no_such_module_here")
    listed = _dponline(tmp_path, "list")
    assert listed.returncode != 0
    assert re.search(r"learner plugin 'explore' \(no_such_module_here.*failed", listed.stderr)


def test_the_guides_code_is_the_examples():
    """Every python block of docs/extending.md is a passage of an example's module or of
    check.py, every toml block of the spec (but the entry point a package declares), so that
    the guide cannot drift from the code the battery checks."""
    guide = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    python = "".join(
        (EXAMPLE / f).read_text(encoding="utf-8")
        for f in ("explore_then_commit.py", "noisy_leader.py", "check.py")
    )
    spec = (EXAMPLE / "spec.toml").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(python|toml)\n(.*?)^```", guide, re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 9
    for kind, block in blocks:
        if block.startswith('[project.entry-points."dponline.learners"]'):
            continue  # a package's declaration (what _install_plugin leaves installed)
        assert block in (python if kind == "python" else spec), block[:200]


def test_the_commands_take_a_learner_of_ones_own_by_modules():
    """`dponline list`, `environments` and `audit` import `--modules` first (the spec's field
    for a run), so a file that is not installed is listed and audited too."""
    module = str(EXAMPLE / "noisy_leader.py")
    run = functools.partial(subprocess.run, capture_output=True, text=True, check=True)
    listed = run([sys.executable, "-m", "dponline", "list", "--modules", module, "dp-noisy-leader"])
    assert "option block" in listed.stdout
    envs = run(
        [sys.executable, "-m", "dponline", "environments", "--modules", module, "stochastic"]
    )
    assert "dp-noisy-leader" in envs.stdout
    audit = ["audit", "--modules", module, "--learners", "dp-noisy-leader", "--trials", "4000"]
    audited = run([sys.executable, "-m", "dponline", *audit, "--json"])
    (row,) = json.loads(audited.stdout)["learners"]
    assert (row["verdict"], row["verdict_under_noised"]) == ("not refuted", "REFUTED")


@pytest.fixture
def noisy_leader():
    """The second example's module, loaded for one test and then forgotten."""
    registered, before = set(learners()), set(sys.modules)
    load_modules([str(EXAMPLE / "noisy_leader.py")])
    try:
        yield next(m for n, m in sys.modules.items() if n not in before)
    finally:
        for name in set(learners()) - registered:
            unregister_learner(name)
        for name in set(sys.modules) - before:
            del sys.modules[name]


@pytest.mark.parametrize("block", [2, 5, 6, 7])
def test_the_noisy_leader_resumes_from_every_round(noisy_leader, block):
    """A state saved after any round loads into a fresh learner, also when no release ever
    happens (block >= T: m = 0) and at the end of the run."""
    from dponline.privacy.budget import PrivacyBudget
    from dponline.protocol import LossVectorFeedback

    def build():
        budget = PrivacyBudget(1.0, 0.0)
        return noisy_leader.NoisyLeader(3, 6, budget=budget, block=block, replicas=2, rng=0)

    learner = build()
    losses = np.random.default_rng(1).uniform(size=(6, 3))
    for t in range(6):
        learner.act()
        learner.observe(LossVectorFeedback(losses[t]))
        fresh = build()
        fresh.load_state_dict(learner.state_dict())
        assert fresh.t == t + 1 and (fresh.leader == learner.leader).all()
    assert learner.releases == (6 - 1) // block


def test_a_tasks_key_does_not_depend_on_what_the_process_has_imported(tmp_path, monkeypatch):
    """The key of a task whose spec names a module is the same in a fresh process (a worker,
    a script reading stored results) as in one that has imported the module (as reading the
    spec does): they differed when the module was given by name to a built-in learner's task."""
    import importlib

    (tmp_path / "mine_for_the_key.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    task = Task(
        "kl-ucb", "bernoulli_bandit", None, "none", 2, 0, 0, 50, modules=("mine_for_the_key",)
    )
    code = (
        "import json, sys\n"
        "from dponline.experiments.runner import Task\n"
        "fields = json.loads(sys.argv[1])\n"
        "print(Task(**{**fields, 'modules': tuple(fields['modules'])}).key)\n"
    )
    fields = {**task.__dict__, "modules": list(task.modules)}
    try:
        importlib.import_module("mine_for_the_key")  # this process has read the spec
        here = task.key
        fresh = subprocess.run(
            [sys.executable, "-c", code, json.dumps(fields)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
        ).stdout.strip()
    finally:
        sys.modules.pop("mine_for_the_key", None)
    assert fresh == here


def test_a_run_takes_modules_from_the_command_line_and_says_when_nothing_was_read_back(
    tmp_path,
):
    """`dponline run --modules` as the spec's field (it was refused: "unrecognized
    arguments"); a run whose checkpoint folder holds only other tasks' says that all ran now
    (a newcomer could not tell a rerun after an edit from a read-back)."""
    spec = tmp_path / "mine.toml"
    spec.write_text(
        'name = "mine"\nhorizon = 60\nseeds = 2\nepsilons = [1.0]\n'
        '[[environments]]\nname = "stochastic"\noptions = { n_experts = 3 }\n'
        '[[learners]]\nname = "dp-noisy-leader"\n'
    )
    module, out = str(EXAMPLE / "noisy_leader.py"), str(tmp_path / "out")
    command = [sys.executable, "-m", "dponline", "run", str(spec), "--out", out]
    run = functools.partial(subprocess.run, capture_output=True, text=True, cwd=tmp_path)
    first = run([*command, "--modules", module])
    assert first.returncode == 0, first.stderr
    assert "dp-noisy-leader" in first.stdout and "were read from" not in first.stdout
    again = run([*command, "--modules", module])
    assert "1 of 1 tasks were read from" in again.stdout
    other = run([*command, "--modules", module, "--horizon", "40"])
    assert "None of the 1 tasks was in" in other.stdout
    without = run(command)  # the learner is the module's: a clear refusal, not a traceback
    assert without.returncode == 2 and "dp-noisy-leader" in without.stderr


def test_a_module_name_that_is_a_file_beside_says_so(tmp_path):
    (tmp_path / "mine.py").write_text("")
    with pytest.raises(ModuleNotFoundError, match=r"the file 'mine\.py' is there: write"):
        load_modules(["mine"], base=tmp_path)
