"""The learner catalogue and the environment catalogue: lazy and complete, matched by feedback kind
and action space."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dponline.environments.catalogue import ENVIRONMENTS, build_environment
from dponline.experiments.spec import SpecError, parse_spec
from dponline.protocol import FeedbackKind
from dponline.registry import LEARNER_PACKAGES, learners


def test_registry_imports_no_learner_and_is_complete_when_read():
    """Importing the registry loads no learner module (no cycle); reading LEARNERS loads every
    one; a learner module imported first registers itself without a cycle."""
    code = (
        "import sys\n"
        "import dponline.registry as r\n"
        "assert not any(m.startswith(('dponline.online.', 'dponline.bandits.', "
        "'dponline.stochastic.')) for m in sys.modules), sorted(sys.modules)\n"
        "from dponline.registry import LEARNERS\n"
        "assert 'dp-scrible' in LEARNERS and 'dp-glm-bandit' in LEARNERS, list(LEARNERS)\n"
        "assert 'dponline.bandits.scrible' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    first = "import dponline.bandits.scrible\nfrom dponline.registry import learners\n"
    first += "assert len(learners()) >= 12\n"
    subprocess.run([sys.executable, "-c", first], check=True)


def test_catalogue_order_groups_each_learner_with_its_counterpart():
    names = list(learners())
    for name in names:
        if name.startswith("dp-") and name[3:] in names:
            assert names.index(name[3:]) == names.index(name) + 1
    modules = [e.factory.__module__ for e in learners().values()]
    ranks = [next(i for i, p in enumerate(LEARNER_PACKAGES) if m.startswith(p)) for m in modules]
    assert ranks == sorted(ranks)


def test_environment_action_space_follows_its_option():
    linear = ENVIRONMENTS["linear"]
    assert linear.action_space_for({}) == "ball"
    assert linear.action_space_for({"domain": "cube"}) == "cube"
    with pytest.raises(ValueError, match=r"option 'domain' must be one of \['ball', 'cube'\]"):
        linear.action_space_for({"domain": "simplex"})
    with pytest.raises(ValueError, match="'domain'"):
        build_environment("linear", 5, None, domain="sphere")
    assert ENVIRONMENTS["bandit_linear"].action_space_for({"domain": "box"}) == "barrier set"


def test_every_environment_fits_some_learner():
    for name, env in ENVIRONMENTS.items():
        for space in env.action_spaces:
            fits = [n for n, e in learners().items() if e.runs_in(env.feedback_kind, space)]
            assert fits, f"{name} ({space}) fits no learner"


def _paired(env: dict, names: list[str]) -> set[tuple[str, str]]:
    spec = parse_spec({"environments": [env], "learners": [{"name": n} for n in names]})
    return {(t.environment, t.learner) for t in spec.tasks()}


def test_specs_pair_by_feedback_kind_and_action_space():
    # dp-exp2 plays arm indices, bandit_linear wants points: same feedback kind, not paired
    assert learners()["dp-exp2"].feedback_kind is FeedbackKind.BANDIT
    assert ENVIRONMENTS["bandit_linear"].feedback_kind is FeedbackKind.BANDIT
    with pytest.raises(SpecError, match=r"'learners\[0\]'.*'dp-exp2'.*\['arms'\]"):
        _paired({"name": "bandit_linear"}, ["dp-exp2", "dp-scrible"])
    assert _paired({"name": "bandit_linear"}, ["dp-scrible"]) == {("bandit_linear", "dp-scrible")}
    with pytest.raises(SpecError, match=r"'learners\[0\]'.*'dp-scrible'.*barrier set"):
        _paired({"name": "stock_bandit"}, ["dp-scrible", "dp-exp2"])
    cube = {"name": "linear", "options": {"domain": "cube"}}
    assert _paired(cube, ["dp-ftrl", "ftpl"]) == {("linear", "dp-ftrl"), ("linear", "ftpl")}
    with pytest.raises(SpecError, match=r"'environments\[0\]\.options'.*'domain'"):
        _paired({"name": "linear", "options": {"domain": "sphere"}}, ["dp-ftrl"])


def test_a_module_that_fails_to_import_can_be_retried(tmp_path, monkeypatch):
    import dponline.registry as registry

    learners()  # the real catalogue first
    package = tmp_path / "flaky_learners"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "flaky.py").write_text(
        "import os\n"
        "from dponline.registry import register_learner\n"
        "from tests.test_registry import flaky_entry\n"
        "register_learner(flaky_entry())\n"
        "if os.environ.get('FLAKY_FAIL'):\n"
        "    raise RuntimeError('the module fails after registering')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "LEARNER_PACKAGES", ("flaky_learners",))
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setenv("FLAKY_FAIL", "1")
    try:
        with pytest.raises(RuntimeError, match="fails after registering"):
            registry.learners()
        assert "flaky" not in registry._CATALOGUE  # what it registered was forgotten
        monkeypatch.delenv("FLAKY_FAIL")
        assert "flaky" in registry.learners()  # the retry runs it again without a clash
    finally:
        registry._CATALOGUE.pop("flaky", None)
        for name in [m for m in sys.modules if m.startswith("flaky_learners")]:
            del sys.modules[name]


def flaky_entry():
    """A copy of dp-exp2's entry under another name (for the retry test)."""
    import dataclasses

    return dataclasses.replace(learners()["dp-exp2"], name="flaky")
