"""The learner catalogue and the environment catalogue: lazy and complete, matched by feedback kind
and action space."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import subprocess
import sys
import warnings

import numpy as np
import pytest

from dponline.bandits.k_armed import PRIVATE_K_ARMED, KArmedLearner
from dponline.environments.catalogue import ENVIRONMENTS, build_environment
from dponline.environments.k_armed import KArmedBandit
from dponline.experiments.spec import SpecError, parse_spec
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyWarning
from dponline.protocol import FeedbackKind
from dponline.registry import (
    LEARNER_PACKAGES,
    NON_PRIVATE,
    LearnerEntry,
    build_learner,
    check_options,
    learner_budget,
    learners,
    load_modules,
    non_private,
    non_private_entry,
    option_names,
)
from dponline.stochastic.batch_learner import _plan_and_warnings


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
    spec = parse_spec(
        {"environments": [env], "horizon": 10, "learners": [{"name": n} for n in names]}
    )
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

    saved = dict(learners())  # the real catalogue first, restored as it was (order included)
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
        # registering under the patched LEARNER_PACKAGES re-sorted the whole catalogue
        registry._CATALOGUE.clear()
        registry._CATALOGUE.update(saved)
        for name in [m for m in sys.modules if m.startswith("flaky_learners")]:
            del sys.modules[name]


@pytest.mark.parametrize("order", [("mine_a.py", "mine_b.py"), ("mine_b.py", "mine_a.py")])
def test_module_files_import_the_files_beside_them_once(tmp_path, monkeypatch, order):
    """A file given by its path that imports another file beside it (a broken copy of a
    learner importing the learner, a helper's constant) needed PYTHONPATH, and in one order
    ran the imported file twice ("a learner named ... is already registered"): the folder
    joins the import path, and a file loaded by its path is the module of its name."""
    import dponline.registry as registry

    saved = dict(learners())
    (tmp_path / "mine_helpers.py").write_text("SUFFIX = '-a'\n")
    (tmp_path / "mine_a.py").write_text(
        "import dataclasses\n"
        "from dponline.registry import learners, register_learner\n"
        "from mine_helpers import SUFFIX\n"
        "register_learner(dataclasses.replace(learners()['dp-exp2'], name='mine' + SUFFIX))\n"
    )
    (tmp_path / "mine_b.py").write_text(
        "import dataclasses\n"
        "from dponline.registry import learners, register_learner\n"
        "import mine_a\n"
        "register_learner(dataclasses.replace(learners()['dp-exp2'], name='mine-b'))\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        load_modules(list(order), base=tmp_path)
        assert {"mine-a", "mine-b"} <= set(registry.learners())
        assert sys.modules["mine_a"].__file__ == str(tmp_path / "mine_a.py")
        assert str(tmp_path) not in sys.path  # first while the file ran, then taken off
        load_modules(list(order), base=tmp_path)  # again: nothing runs twice
    finally:
        registry._CATALOGUE.clear()
        registry._CATALOGUE.update(saved)
        for name in [m for m in sys.modules if "mine_" in m]:
            del sys.modules[name]


def test_a_sibling_s_name_bound_to_another_folder_is_refused_and_a_failure_retried(
    tmp_path, monkeypatch
):
    """Two folders with a helpers.py each: the second folder's file silently got the first's
    helpers (the name was taken); it is refused, naming both. A file that imports a sibling
    and then fails left the sibling imported, its learner forgotten: a retry never ran it
    again. (A review's findings.)"""
    import dponline.registry as registry

    saved = dict(learners())
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "sib_helpers.py").write_text(f"NAME = {folder!r}\n")
        (tmp_path / folder / f"sib_{folder}.py").write_text("import sib_helpers\n")
    (tmp_path / "sib_y.py").write_text(
        "import dataclasses\n"
        "from dponline.registry import learners, register_learner\n"
        "register_learner(dataclasses.replace(learners()['dp-exp2'], name='sib-y'))\n"
    )
    (tmp_path / "sib_x.py").write_text(
        "import os\nimport sib_y\nif os.environ.get('SIB_FAIL'):\n    raise RuntimeError('x')\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        load_modules(["one/sib_one.py"], base=tmp_path)
        assert sys.modules["sib_helpers"].NAME == "one"
        with pytest.raises(ImportError, match=r"imports 'sib_helpers'.*already the module"):
            load_modules(["two/sib_two.py"], base=tmp_path)
        monkeypatch.setenv("SIB_FAIL", "1")
        with pytest.raises(ImportError, match="raised RuntimeError"):
            load_modules(["sib_x.py"], base=tmp_path)
        assert "sib-y" not in registry.learners() and "sib_y" not in sys.modules
        monkeypatch.delenv("SIB_FAIL")
        load_modules(["sib_x.py"], base=tmp_path)
        assert "sib-y" in registry.learners()
    finally:
        registry._CATALOGUE.clear()
        registry._CATALOGUE.update(saved)
        for name in [m for m in sys.modules if "sib_" in m]:
            del sys.modules[name]


def flaky_entry():
    """A copy of dp-exp2's entry under another name (for the retry test)."""
    import dataclasses

    return dataclasses.replace(learners()["dp-exp2"], name="flaky")


# --- the budget: built once by the registry, passed to the factory ----------------------------

#: Every private learner's default delta, as its factory computed it before the registry built the
#: budget (the default each factory passed with the options); ``options`` are the learner's
#: options.
DEFAULT_DELTA = {
    "ctrl": lambda env, options: 1e-6,
    "ctrl-glm": lambda env, options: 1e-6,
    "dp-dyadic-hedge": lambda env, options: 1e-6,
    "dp-ftpl": lambda env, options: 1e-6,
    "dp-ftrl": lambda env, options: 0.0 if options.get("noise", "laplace") == "laplace" else 1e-6,
    "dp-ftrl-oco": lambda env, options: (
        0.0 if options.get("noise", "gaussian") == "laplace" else 1e-6
    ),
    "dp-exp2": lambda env, options: 0.0,
    "dp-scrible": lambda env, options: 0.0,
    "private-bandit": lambda env, options: 0.0,
    "dp-glm-bandit": lambda env, options: 1.0 / env.horizon,
    "dp-frank-wolfe": lambda env, options: 1.0 / env.horizon,
    "local-md": lambda env, options: 1.0 / env.horizon,
    "noisy-sfw": lambda env, options: 1.0 / env.horizon,
    "noisy-sgd": lambda env, options: 1.0 / env.horizon,
    # the private bandits of the K-armed suite and the batched conversion: pure epsilon-DP,
    # AdaC-UCB (zCDP, Gaussian noise) at delta 1e-6
    "adap-ucb": lambda env, options: 0.0,
    "adap-klucb": lambda env, options: 0.0,
    "adac-ucb": lambda env, options: 1e-6,
    "batched-exp3": lambda env, options: 0.0,
    "batched-htinf": lambda env, options: 0.0,
    "batched-exp2": lambda env, options: 0.0,
    "batched-exp4": lambda env, options: 0.0,
    "private-exp4": lambda env, options: 0.0,
    "dp-klucb": lambda env, options: 0.0,
    "dp-imed": lambda env, options: 0.0,
    "dp-se": lambda env, options: 0.0,
    "lazy-dp-ts": lambda env, options: 0.0,
    "dp-ucb": lambda env, options: 0.0 if options.get("noise", "laplace") == "laplace" else 1e-6,
}

CASES = [
    pytest.param(entry, case, id=f"{entry.name}[{case.label}]" if case.label else entry.name)
    for entry in learners().values()
    for case in entry.test_cases
]


def _spy(entry: LearnerEntry) -> tuple[LearnerEntry, dict]:
    """The entry with a factory that records the keywords it is called with."""
    got: dict = {}

    def factory(env, **kw):
        got.clear()
        got.update(kw)
        return "built"

    return dataclasses.replace(entry, factory=factory), got


def test_every_private_learner_declares_the_default_delta_it_had():
    private = {name for name, e in learners().items() if e.private}
    assert private == set(DEFAULT_DELTA)


@pytest.mark.parametrize("entry, case", CASES)
def test_the_factory_gets_the_budget_the_registry_builds(entry, case):
    """build_learner (the runner's, the battery's and the audit's road) builds the budget once,
    from the run's epsilon, calibration and allow_weaker and the entry's default delta (or the
    learner's delta option), and passes it to the factory as it is, with the other options; the
    non-private counterpart (epsilon None) and a non-private learner get None."""
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(0), **case.environment_options
    )
    options = dict(case.learner_options)
    passed = {k: v for k, v in options.items() if k != "delta"}  # delta is the budget's
    spied, got = _spy(entry)
    rng = np.random.default_rng(5)
    for calibration in entry.calibrations:
        weaker = calibration == "paper"
        build_learner(
            spied,
            env,
            epsilon=case.epsilon,
            calibration=calibration,
            allow_weaker=weaker,
            replicas=3,
            rng=rng,
            **options,
        )
        delta = options.get("delta", DEFAULT_DELTA[entry.name](env, options))
        want = PrivacyBudget(case.epsilon, delta, calibration, allow_weaker=weaker)
        assert got == {"budget": want, "replicas": 3, "rng": rng, **passed}
        assert got["budget"] == learner_budget(
            entry,
            env,
            epsilon=case.epsilon,
            calibration=calibration,
            allow_weaker=weaker,
            options=options,
        )
        # a spec's delta option (examples/*.toml set it) is the budget's, not the factory's
        build_learner(spied, env, epsilon=0.5, calibration=calibration, **passed, delta=0.0125)
        assert got == {"budget": PrivacyBudget(0.5, 0.0125, calibration), **passed}
    # a private learner's counterpart (NON_PRIVATE) or a non-private learner: no budget
    build_learner(spied, env, epsilon=NON_PRIVATE, replicas=2, **options)
    assert got == {"budget": None, "replicas": 2, **passed}
    if not entry.private:  # an epsilon it would ignore is refused (it would read as private)
        with pytest.raises(ValueError, match="is not private and takes no epsilon"):
            build_learner(spied, env, epsilon=1.0, **options)


@pytest.mark.parametrize("entry, case", [c for c in CASES if c.values[0].private])
def test_the_learner_states_the_budget_it_was_given(entry, case):
    """End to end: the built learner's guarantee answers the request the registry built (a
    factory that built a budget of its own, or dropped the delta, would show here)."""
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(0), **case.environment_options
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        learner = build_learner(
            entry, env, epsilon=case.epsilon, replicas=1, rng=0, **case.learner_options
        )
    options = dict(case.learner_options)
    delta = options.get("delta", DEFAULT_DELTA[entry.name](env, options))
    assert learner.privacy.requested_epsilon == case.epsilon
    assert learner.privacy.requested_delta == delta


def test_a_non_private_learner_takes_no_delta_and_no_budget():
    env = build_environment("stochastic", 8, np.random.default_rng(0), n_experts=3)
    with pytest.raises(ValueError, match="learner 'ftrl' has no option 'delta'"):
        build_learner("ftrl", env, delta=1e-6)
    with pytest.raises(ValueError, match="builds the budget itself"):
        build_learner("dp-ftrl", env, budget=PrivacyBudget(1.0))
    with pytest.raises(ValueError, match="lazy-ctrl is not private: its budget must be None"):
        learners()["lazy-ctrl"].factory(env, budget=PrivacyBudget(1.0, 1e-6))
    got = {}
    factory = non_private(lambda env, **kw: got.update(kw))
    factory(env, budget=PrivacyBudget(1.0), replicas=2)
    assert got == {"budget": None, "replicas": 2}


def test_a_private_learner_is_private_unless_asked_for_its_counterpart():
    env = KArmedBandit([0.2, 0.5, 0.9], horizon=100, rng=0)
    assert build_learner("dp-imed", env, rng=0).privacy.epsilon == 1.0  # the CLI's default
    assert build_learner("dp-imed", env, epsilon=0.5, rng=0).privacy.epsilon == 0.5
    assert build_learner("dp-imed", env, epsilon=NON_PRIVATE, rng=0).privacy is None
    # None is what a missing setting reads as (config.get("epsilon")): never no noise
    with pytest.raises(
        ValueError,
        match=r"epsilon=None for the private learner 'dp-imed'.*"
        "NON_PRIVATE",
    ):
        build_learner("dp-imed", env, epsilon=None, rng=0)
    assert build_learner("imed", env, rng=0).privacy is None  # non-private: nothing to default
    assert build_learner("imed", env, epsilon=None, rng=0).privacy is None
    assert build_learner("imed", env, epsilon=NON_PRIVATE, rng=0).privacy is None
    with pytest.raises(ValueError, match=r"'imed' is not private.*private version: dp-imed"):
        build_learner("imed", env, epsilon=0.5, rng=0)
    import copy
    import pickle

    # one object, whatever copies it: the identity checks of RiverPolicy hold
    assert copy.deepcopy(NON_PRIVATE) is NON_PRIVATE
    assert pickle.loads(pickle.dumps(NON_PRIVATE)) is NON_PRIVATE
    # a person's unit without a budget would be silently dropped: refused
    with pytest.raises(ValueError, match=r"'dp-ucb' is built without noise \(NON_PRIVATE\)"):
        build_learner("dp-ucb", env, epsilon=NON_PRIVATE, participations=5, min_separation=2)
    with pytest.raises(ValueError, match="'ucb1' is not private: give an epsilon"):
        build_learner("ucb1", env, participations=5)


def test_options_the_environment_gives_or_the_common_keywords_are_named():
    env = KArmedBandit([0.2, 0.5, 0.9], horizon=100, rng=0)
    with pytest.raises(ValueError, match=r"reads horizon from the environment \(horizon = 100"):
        build_learner("dp-imed", env, horizon=500)
    with pytest.raises(ValueError, match=r"no option 'seed' \(the seed is the run's: rng= in"):
        build_learner("dp-imed", env, seed=0)
    with pytest.raises(ValueError, match=r"epsilon is the run's, not an option of .*epsilon="):
        check_options(learners()["dp-imed"], {"epsilon": 0.5})
    with pytest.raises(ValueError, match=r"no option 'replica' \(did you mean 'replicas'"):
        build_learner("dp-imed", env, replica=2)


def test_default_delta_is_a_probability_or_a_function():
    entry = learners()["dp-exp2"]
    for bad in (1.0, -0.1, True, "1e-6", None):
        with pytest.raises(ValueError, match="default_delta must be a number in"):
            dataclasses.replace(entry, default_delta=bad)
    env = build_environment("stock_bandit", 10, np.random.default_rng(0), dataset="djia")
    custom = dataclasses.replace(entry, default_delta=lambda env, options: 0.5 / env.horizon)
    assert learner_budget(custom, env, epsilon=2.0).delta == 0.05
    assert learner_budget(custom, env, epsilon=None) is None


@pytest.mark.parametrize("entry, case", [c for c in CASES if c.values[0].private])
def test_each_guarantee_is_proven_once(entry, case, monkeypatch):
    """One PrivacyBudget.prove per learner built, in each calibration, and the learner states
    that proof: a guarantee computed twice (a candidate counter proven and dropped, a proof
    redone with another derivation, one per copy of an identical estimator) shows here. The
    batch baselines memoise their plans: the memo is cleared so that each build proves."""
    derivations: list[str] = []
    prove = PrivacyBudget.prove

    def counting(self, epsilon, delta, derivation, **kw):
        derivations.append(derivation)
        return prove(self, epsilon, delta, derivation, **kw)

    monkeypatch.setattr(PrivacyBudget, "prove", counting)
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(0), **case.environment_options
    )
    for calibration in entry.calibrations:
        _plan_and_warnings.cache_clear()
        derivations.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            learner = build_learner(
                entry,
                env,
                epsilon=case.epsilon,
                calibration=calibration,
                allow_weaker=True,
                replicas=1,
                rng=0,
                **case.learner_options,
            )
        assert len(derivations) == 1, derivations
        assert derivations[0] in learner.privacy.derivation


def test_every_entry_says_whether_it_takes_a_budget_over_a_person():
    """``dponline list --json`` rows carry ``person_level`` (the battery checks it against a
    build, ``check_unit_of_privacy``); every private learner lists the run's participations and
    min_separation among its options (by group privacy unless person_level); a non-private
    entry cannot set it."""
    rows = {e.name: e.describe(ENVIRONMENTS) for e in learners().values()}
    person = {name for name, r in rows.items() if r["person_level"]}
    assert person == {"dp-ftrl", "dp-ftpl", "dp-ftrl-oco", "dp-dyadic-hedge", "dp-ucb"}
    for name, row in rows.items():
        options = row["options"]
        if not row["private"]:
            assert "participations" not in options
        elif name in person:
            assert "calibrated for that pattern" in options["participations"]
        else:  # the others protect a person by group privacy
            assert "by group privacy (the learner runs" in options["participations"]
            assert "any k rounds" in options["min_separation"]
    entry = learners()["ftrl"]
    with pytest.raises(ValueError, match="no unit of privacy"):
        dataclasses.replace(entry, person_level=True)


def test_every_entry_says_whether_it_is_anytime():
    """``dponline list --json`` rows carry ``anytime``; :func:`non_private_entry` gives the
    counterpart its private learner's flag (it runs the same factory); the field is a bool."""
    rows = {e.name: e.describe(ENVIRONMENTS) for e in learners().values()}
    assert all(isinstance(r["anytime"], bool) for r in rows.values())
    anytime = {name for name, r in rows.items() if r["anytime"]}
    assert {"dp-ftrl", "ftrl", "dp-ftpl", "dp-ftrl-oco", "dp-dyadic-hedge"} <= anytime
    assert not rows["dp-exp2"]["anytime"]
    for private in (learners()["dp-ftrl"], learners()["dp-exp2"]):
        case = learners()[private.name.removeprefix("dp-")].test_case
        counterpart = non_private_entry(private, "x", paper="x", test_cases=(case,))
        assert counterpart.anytime is private.anytime
    for bad in (1, "yes", None):
        with pytest.raises(TypeError, match="anytime must be a bool"):
            dataclasses.replace(learners()["dp-ftrl"], anytime=bad)


@pytest.mark.parametrize("name", [n for n, e in learners().items() if e.anytime])
def test_an_anytime_entry_builds_without_a_horizon(name):
    """``anytime=True`` builds the learner with ``horizon=None`` (the environment's ignored),
    with the guarantee for every t; a non-bool option is refused."""
    entry = learners()[name]
    case = entry.test_case
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(0), **case.environment_options
    )
    epsilon = case.epsilon if entry.private else None
    learner = build_learner(entry, env, epsilon=epsilon, anytime=True, **case.learner_options)
    assert learner.horizon is None
    if entry.private:  # the tapered factorisation's, doubling blocks', or the BLT's
        derivation = learner.privacy.derivation
        assert "anytime" in derivation or "every prefix length" in derivation
    fixed = build_learner(entry, env, epsilon=epsilon, **case.learner_options)
    assert fixed.horizon == case.horizon
    with pytest.raises(ValueError, match="anytime"):
        build_learner(entry, env, epsilon=epsilon, anytime="yes", **case.learner_options)


def test_a_learner_without_an_anytime_version_takes_no_anytime_option():
    env = build_environment("stochastic", 8, np.random.default_rng(0), n_experts=3)
    assert not learners()["dp-exp2"].anytime
    with pytest.raises(ValueError, match="has no option 'anytime'"):
        build_learner("dp-exp2", env, epsilon=1.0, anytime=True)


def test_the_private_k_armed_list_is_the_registry_s():
    """PRIVATE_K_ARMED (the bench's tables, the one-run audit's arm-order guesser) names every
    private learner of the registry that is a KArmedLearner, and nothing else."""
    env = KArmedBandit(family="bernoulli", means=np.array([0.2, 0.5, 0.8]), horizon=50, rng=0)
    found = set()
    for name, entry in learners().items():
        if entry.private and entry.feedback_kind is FeedbackKind.BANDIT:
            try:
                learner = build_learner(entry, env, epsilon=1.0, rng=0)
            except (ValueError, TypeError, AttributeError):
                continue  # plays no arms of a K-armed environment
            if isinstance(learner, KArmedLearner):
                found.add(name)
    assert found == set(PRIVATE_K_ARMED) and len(PRIVATE_K_ARMED) == len(found)


def test_no_learner_loads_a_state_of_another_kind():
    """A state saved by one learner of the registry never loads into a learner of another
    class (DP-IMED and DP-KLUCB, or UCB1 and IMED, keep states of the same shape)."""
    env = KArmedBandit(family="bernoulli", means=np.array([0.2, 0.5, 0.8]), horizon=50, rng=0)
    built = {}
    for name, entry in learners().items():
        for epsilon in [1.0, None] if entry.private else [None]:
            try:
                built[(name, epsilon)] = build_learner(entry, env, epsilon=epsilon, rng=0)
            except (ValueError, TypeError, AttributeError):
                continue  # plays no arms of a K-armed environment
    assert len(built) > 20
    for (source_name, source), (target_name, target) in itertools.permutations(built.items(), 2):
        if type(source) is not type(target):
            with pytest.raises(ValueError):
                target.load_state_dict(source.state_dict())
                pytest.fail(f"{target_name} loaded the state of {source_name}")


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(learners()))
def test_the_clip_option_is_documented_exactly_where_it_is_taken(name):
    """``dponline list`` showed ``clip`` for 3 learners while 41 took it: every entry now says
    whether it takes it (``clips``), and the documented options follow."""
    entry = learners()[name]
    case = entry.test_case
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(0), **case.environment_options
    )
    kw = dict(case.learner_options)
    epsilon = case.epsilon if entry.private else None
    build = functools.partial(
        build_learner, entry, env, epsilon=epsilon, allow_weaker=True, replicas=1, rng=0, **kw
    )
    if entry.clips:
        build(clip=True)
        assert "clip" in entry.documented_options()
    else:
        with pytest.raises(ValueError, match="has no option 'clip'"):
            build(clip=True)
        assert "clip" not in entry.documented_options()


def _constructor_parameters(entry):
    """The environment and learner of ``entry``'s first test case, and the keyword parameters
    of the learner's constructor (besides the budget, replicas and rng every factory passes)."""
    from dponline.checks import build_case

    env, learner = build_case(entry, entry.test_cases[0])
    parameters = inspect.signature(type(learner).__init__).parameters.values()
    skip = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    own = [p for p in parameters if p.kind not in skip and p.name not in _EVERY_FACTORY_PASSES]
    return env, own


_EVERY_FACTORY_PASSES = ("self", "budget", "replicas", "rng")


@pytest.mark.parametrize("name", sorted(learners()))
def test_a_constructor_parameter_the_entry_does_not_document_is_refused(name):
    """A factory hands its constructor more than the options it documents (the noise it
    calibrated, the guarantee it proved, what the environment declares); build_learner passes
    on the documented options only. Before, whatever the constructor took got through: the
    non-private lazy-ctrl took ``privacy=`` (a guarantee stated without noise), ctrl took
    ``noise_growth`` (Algorithm 2's noise on Algorithm 1's calibration), dp-ftrl the
    environment's ``loss_bounds``, dp-exp2 an action set its environment does not have."""
    entry = learners()[name]
    env, parameters = _constructor_parameters(entry)
    documented = set(option_names(entry))
    for parameter in parameters:
        if parameter.name in documented:
            continue
        with pytest.raises(ValueError, match=rf"has no option '{parameter.name}'|reads "):
            build_learner(entry, env, rng=0, **{parameter.name: parameter.default})


def test_every_documented_option_reaches_the_build():
    """Each documented option that is a constructor parameter with a default, passed at that
    default, builds the learner: the documentation names options the factory takes (the
    options a factory reads itself, as CTRL's ``switches``, are not constructor parameters)."""
    tried = 0
    for entry in learners().values():
        env, parameters = _constructor_parameters(entry)
        documented = set(option_names(entry))
        case = entry.test_cases[0]
        epsilon = case.epsilon if entry.private else NON_PRIVATE
        for parameter in parameters:
            if parameter.name not in documented or parameter.default is inspect.Parameter.empty:
                continue
            options = {**case.learner_options, parameter.name: parameter.default}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                build_learner(entry, env, epsilon=epsilon, rng=0, **options)
            tried += 1
    assert tried >= 100, tried


def test_a_guarantee_cannot_be_handed_to_a_non_private_learner():
    from dponline.privacy.guarantee import PrivacyGuarantee

    env = build_environment("smooth_convex", 20, np.random.default_rng(0), dim=2)
    claim = PrivacyGuarantee(epsilon=1.0, delta=0.0, neighbouring="one round", derivation="")
    with pytest.raises(ValueError, match="learner 'lazy-ctrl' has no option 'privacy'"):
        build_learner("lazy-ctrl", env, privacy=claim)
    with pytest.raises(ValueError, match="learner 'ctrl' has no option 'noise_growth'"):
        build_learner("ctrl", env, noise_growth=True)


def test_a_spec_names_a_bad_option_when_it_is_read():
    """Options and tuned options are checked against the learner's documented ones, and the
    environment's against its builder, when the spec is parsed: no task is built first."""

    def spec(learner: dict, env_options: dict | None = None) -> None:
        env = {"name": "stochastic", "options": env_options or {"n_experts": 3}}
        parse_spec({"environments": [env], "horizon": 10, "learners": [learner]})

    spec({"name": "dp-ftrl", "options": {"noise": "gaussian"}, "tune": {"eta": [0.1, 1.0]}})
    with pytest.raises(SpecError, match=r"'learners\[0\].tune'.*no option 'etta'.*'eta'"):
        spec({"name": "dp-ftrl", "tune": {"etta": [0.1, 1.0]}})
    with pytest.raises(SpecError, match=r"'learners\[0\].options'.*'ftrl' has no option 'noise'"):
        spec({"name": "ftrl", "options": {"noise": "gaussian"}})
    with pytest.raises(SpecError, match=r"'environments\[0\].options'.*no option 'experts'"):
        spec({"name": "dp-ftrl"}, {"experts": 3})


def test_every_action_space_is_said_in_words():
    """``dponline list`` printed "plays: barrier set" for DP-FTRL on the linearised losses, a
    learner that plays points of a ball: every space a learner or environment names has words."""
    from dponline.environments.catalogue import ENVIRONMENTS
    from dponline.registry import ACTION_SPACE_WORDS

    spaces = {a for e in learners().values() for a in e.action_spaces}
    spaces |= {a for e in ENVIRONMENTS.values() for a in e.action_spaces}
    assert spaces <= set(ACTION_SPACE_WORDS)
