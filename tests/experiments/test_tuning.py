"""The runner's validation-set tuning and final-output scoring (a spec's ``tune``; environments
with held-out sets): the choice sees only the validation set, every candidate runs on the same
data with the same seed, and a tuned task resumes from stored candidates."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

from dponline.environments import catalogue
from dponline.environments.catalogue import EnvironmentEntry
from dponline.experiments.checkpoints import RESULT_SUFFIX
from dponline.experiments.runner import Task, make_tasks, run_sweep, run_task, tuning_candidates
from dponline.experiments.spec import SpecError, parse_spec
from dponline.protocol import FeedbackKind, SampleFeedback, checked_count
from dponline.registry import LearnerEntry, LearnerTestCase, register_learner, unregister_learner
from dponline.rng import as_generator, generator_from_state, generator_state

VALIDATION_TARGET = np.array([1.0, 0.0])
TEST_TARGET = np.array([0.0, 1.0])


class TwoTargets:
    """Held-out sets that disagree: validation loss ||a - (1, 0)||^2, test loss ||a - (0, 1)||^2
    (a tuner that peeked at the test set would choose differently)."""

    reveals_context: ClassVar[bool] = False
    p = None

    def __init__(self, horizon: int) -> None:
        self.horizon, self.dim = horizon, 2

    def round(self, t, action):
        return SampleFeedback(np.zeros(2), 0.0), ((action - TEST_TARGET) ** 2).sum(axis=1)

    def test_loss(self, action):
        return ((np.asarray(action) - TEST_TARGET) ** 2).sum(axis=1)

    def validation_loss(self, action):
        return ((np.asarray(action) - VALIDATION_TARGET) ** 2).sum(axis=1)

    def regret(self, cumulative_loss, rounds=None):
        return cumulative_loss

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state) -> None:
        if state:
            raise ValueError(f"TwoTargets keeps no state, got keys {sorted(state)}")


class Jitter:
    """Plays (shift, 0) plus N(0, jitter^2) noise per replica and round (non-private). Given a
    list of shifts, it plays them all at once as candidate-major blocks of replicas with the
    same noise (``joint_options``)."""

    def __init__(self, horizon, *, shift=0.0, jitter=0.1, replicas=1, rng=None):
        self.horizon, self.jitter = checked_count("horizon", horizon), jitter
        self.shifts = np.repeat(np.atleast_1d(np.asarray(shift, dtype=float)), replicas)
        self.replicas, self._rng, self.t, self.privacy = replicas, as_generator(rng), 0, None

    def act(self):
        noise = self.jitter * self._rng.normal(size=(self.replicas, 2))
        blocks = self.shifts.size // self.replicas
        return np.stack([self.shifts, np.zeros_like(self.shifts)], axis=1) + np.tile(
            noise, (blocks, 1)
        )

    def observe(self, feedback):
        self.t += 1

    def state_dict(self):
        return {"t": self.t, "rng": generator_state(self._rng)}

    def load_state_dict(self, state):
        self.t, self._rng = int(state["t"]), generator_from_state(state["rng"])


@pytest.fixture(params=[(), ("shift",)], ids=["one-pass-per-candidate", "joint"])
def toy(monkeypatch, request):
    """The toy environment and learner, tuned one pass per candidate or jointly."""
    yield from _toy(monkeypatch, request.param)


@pytest.fixture
def toy_per_candidate(monkeypatch):
    yield from _toy(monkeypatch, ())


def _toy(monkeypatch, joint_options):
    monkeypatch.setitem(
        catalogue.ENVIRONMENTS,
        "two_targets",
        EnvironmentEntry(
            "two_targets",
            lambda horizon, rng: TwoTargets(horizon),
            FeedbackKind.SAMPLE,
            "l_p ball",
            "(test) held-out sets that disagree",
        ),
    )
    entry = register_learner(
        LearnerEntry(
            "jitter",
            lambda env, *, budget, replicas, rng, **kw: Jitter(
                env.horizon, replicas=replicas, rng=rng, **kw
            ),
            paper="(test)",
            setting="stochastic optimisation",
            guarantee="none",
            calibrations=(),
            private=False,
            feedback_kind=FeedbackKind.SAMPLE,
            action_space="l_p ball",
            test_cases=(LearnerTestCase("regression_stream", environment_options={"dim": 2}),),
            options={"shift": "the first coordinate", "jitter": "the noise's scale"},
            joint_options=joint_options,
        )
    )
    try:
        yield entry
    finally:
        unregister_learner(entry.name)


def _tasks(tune=None, options=None, seeds=4):
    learner = {"name": "jitter", "options": options or {}}
    if tune is not None:
        learner["tune"] = tune
    return make_tasks(
        learners=[learner], environment="two_targets", epsilons=[1.0], seeds=seeds, horizon=6
    )


def test_candidates_are_every_combination_in_order():
    assert tuning_candidates({}) == [{}]
    assert tuning_candidates({"a": [1, 2], "b": ["x", "y"]}) == [
        {"a": 1, "b": "x"},
        {"a": 1, "b": "y"},
        {"a": 2, "b": "x"},
        {"a": 2, "b": "y"},
    ]


def test_the_choice_sees_only_the_validation_set_and_the_test_set_scores_it(toy):
    (task,) = _tasks(tune={"shift": [0.0, 0.5, 1.0]}, options={"jitter": 0.0})
    frame = run_task(task)
    assert set(frame["tuned"]) == {json.dumps({"shift": 1.0})}
    last = frame[frame["t"] == 6]
    np.testing.assert_allclose(last["final_loss"], 2.0)  # ||(1, 0) - (0, 1)||^2
    assert frame.loc[frame["t"] < 6, "final_loss"].isna().all()
    np.testing.assert_allclose(last["cumulative_loss"], 6 * 2.0)


def test_a_tuned_task_equals_the_chosen_candidate_run_alone(toy):
    # common random numbers: the same seed for every candidate, so the chosen candidate's rows
    # are those of an untuned task with that option fixed
    (tuned,) = _tasks(tune={"shift": [0.0, 0.9]})
    (alone,) = _tasks(options={"shift": 0.9})
    a, b = run_task(tuned), run_task(alone)
    assert set(a["tuned"]) == {'{"shift": 0.9}'} and set(b["tuned"]) == {""}
    cols = ["seed", "t", "cumulative_loss", "regret", "final_loss"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_a_tuned_task_resumes_from_its_finished_candidates(
    toy_per_candidate, tmp_path, monkeypatch
):
    (task,) = _tasks(tune={"shift": [0.0, 0.5, 1.0]})
    full = run_sweep([task], backend="serial", progress=False)
    # an interrupted run: candidate 0 finished and stored, then the process died
    from dponline.experiments import runner

    calls = []
    original = runner._build

    def crash_after_first(task_, override):
        calls.append(dict(override))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(task_, override)

    monkeypatch.setattr(runner, "_build", crash_after_first)
    with pytest.raises(KeyboardInterrupt):
        run_sweep([task], backend="serial", checkpoint_dir=tmp_path, progress=False)
    assert (tmp_path / f"{task.key}-c00{RESULT_SUFFIX}").exists()
    calls.clear()
    monkeypatch.setattr(runner, "_build", lambda t, o: calls.append(dict(o)) or original(t, o))
    resumed = run_sweep([task], backend="serial", checkpoint_dir=tmp_path, progress=False)
    assert calls == [{"shift": 0.5}, {"shift": 1.0}]  # candidate 0 was read, not rerun
    pd.testing.assert_frame_equal(full, resumed)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{task.key}{RESULT_SUFFIX}"]


def test_tuning_needs_a_validation_set(toy):
    (task,) = make_tasks(
        learners=[{"name": "jitter", "tune": {"shift": [0.0, 1.0]}}],
        environment="regression_stream",
        epsilons=[1.0],
        seeds=2,
        horizon=5,
        environment_options={"dim": 2},
    )
    with pytest.raises(ValueError, match="needs an environment with a validation set"):
        run_task(task)


def test_make_tasks_refuses_a_tuned_option_that_is_also_fixed(toy):
    with pytest.raises(ValueError, match="both fixed"):
        _tasks(tune={"shift": [0.0]}, options={"shift": 1.0})
    with pytest.raises(ValueError, match="at least one value"):
        _tasks(tune={"shift": []})


def test_spec_tune_and_per_environment_learners_and_horizons(toy):
    spec = parse_spec(
        {
            "horizon": 9,
            "environments": [
                {"name": "two_targets", "horizon": 4, "learners": ["j1"]},
                {"name": "two_targets", "label": "other"},
            ],
            "learners": [
                {"name": "jitter", "label": "j1", "tune": {"shift": [0.0, 1.0]}},
                {"name": "jitter", "label": "j2", "options": {"shift": 0.5}},
            ],
        }
    )
    tasks = spec.tasks()
    assert [(t.label, t.horizon, t.tune) for t in tasks] == [
        ("j1", 4, {"shift": [0.0, 1.0]}),
        ("j1", 9, {"shift": [0.0, 1.0]}),
        ("j2", 9, {}),
    ]
    smaller = spec.overridden(horizon=3)  # a new horizon replaces the environments' own too
    assert {t.horizon for t in smaller.tasks()} == {3}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"tune": []}, "tune"),
        ({"tune": {"shift": []}}, r"tune\.shift"),
        ({"tune": {"shift": [1.0]}, "options": {"shift": 0.0}}, "not also fixed"),
    ],
)
def test_spec_refuses_bad_tunes(toy, change, match):
    with pytest.raises(SpecError, match=match):
        parse_spec(
            {"environment": {"name": "two_targets"}, "learners": [{"name": "jitter", **change}]}
        )


def test_spec_refuses_an_environment_naming_an_unknown_learner(toy):
    with pytest.raises(SpecError, match=r"environments\[0\]\.learners"):
        parse_spec(
            {
                "environment": {"name": "two_targets", "learners": ["nobody"]},
                "learners": [{"name": "jitter"}],
            }
        )


def test_joint_tuning_takes_one_pass_and_gives_the_per_candidate_table(toy, monkeypatch):
    from dponline.experiments import runner

    (task,) = _tasks(tune={"shift": [0.0, 0.4, 0.9]})
    calls = []
    original = runner._build
    monkeypatch.setattr(runner, "_build", lambda t, o: calls.append(dict(o)) or original(t, o))
    frame = run_task(task)
    expected = (
        [{"shift": [0.0, 0.4, 0.9]}]
        if toy.joint_options
        else [
            {"shift": 0.0},
            {"shift": 0.4},
            {"shift": 0.9},
        ]
    )
    assert calls == expected
    assert set(frame["tuned"]) == {'{"shift": 0.9}'}
    (alone,) = _tasks(options={"shift": 0.9})
    cols = ["seed", "t", "cumulative_loss", "regret", "final_loss"]
    pd.testing.assert_frame_equal(frame[cols], run_task(alone)[cols])


def test_the_choice_is_in_the_summary_and_a_choice_at_the_grids_edge_is_said(toy):
    """The printed table and summary.csv show which candidate the validation set chose, and
    `dponline run` says when it is the smallest or largest of three or more."""
    from dponline.cli import _edge_of_grid, _summary_rows
    from dponline.experiments.report import summarise

    (task,) = _tasks(tune={"shift": [0.0, 0.5, 1.0]}, options={"jitter": 0.0})
    rows = _summary_rows(summarise(run_task(task)))
    assert [r["tuned"] for r in rows] == ['{"shift": 1.0}']
    (note,) = _edge_of_grid([task], rows)
    assert note.startswith("jitter") and "chose shift = 1.0, the largest of its candidates" in note
    (inside,) = _tasks(tune={"shift": [0.0, 1.0, 2.0]}, options={"jitter": 0.0})
    assert _edge_of_grid([inside], _summary_rows(summarise(run_task(inside)))) == []
    (untuned,) = _tasks(options={"shift": 1.0})
    assert "tuned" not in summarise(run_task(untuned))


def test_the_edge_of_a_grid_is_the_tasks_own_and_counts_numbers_only():
    """Two tasks of one label (paper and tight) may tune over different grids: each row is
    judged against its own; a boolean or NaN candidate is no number."""
    from dponline.cli import _edge_of_grid

    def task(cal, grid, index):
        return Task("noisy-sgd", "lp_regression", 1.0, cal, 2, 0, index, 10, tune={"s": grid})

    tasks = [task("tight", [0.3, 1.0, 3.0], 0), task("paper", [0.01, 0.3, 1.0, 3.0], 1)]
    row = {"environment": "lp_regression", "label": "noisy-sgd", "epsilon": 1.0}
    rows = [
        {**row, "calibration": "tight", "tuned": '{"s": 0.3}'},
        {**row, "calibration": "paper", "tuned": '{"s": 0.3}'},
    ]
    assert _edge_of_grid(tasks, rows) == [
        "noisy-sgd (tight, epsilon 1) on lp_regression chose s = 0.3, the smallest of its "
        "candidates: the best value may lie beyond them"
    ]
    odd = [task("tight", [False, 0.5, 1.0, float("nan")], 0)]
    assert _edge_of_grid(odd, [{**row, "calibration": "tight", "tuned": '{"s": false}'}]) == []
