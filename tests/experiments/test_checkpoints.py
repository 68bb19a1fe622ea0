"""Checkpoint files without pickle: exact round trips, version and task stamps, foreign files."""

from __future__ import annotations

import io
import json
import math
import pickle
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dponline
from dponline.environments import Environment
from dponline.environments.catalogue import ENVIRONMENTS, build_environment
from dponline.experiments import checkpoints
from dponline.experiments.checkpoints import (
    load_frame,
    load_state,
    save_frame,
    save_state,
)
from dponline.experiments.runner import COLUMNS, make_tasks, run_task
from dponline.privacy.guarantee import PrivacyWarning
from dponline.protocol import ContextFeedback
from dponline.registry import LEARNERS, build_learner

TASK = "task0003-0123456789abcdef"


class _CreatesMarker:
    """A pickle payload: unpickling it creates the file ``marker`` (``open(marker, "w")``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def malicious_pickle(marker: Path) -> bytes:
    """Pickle bytes whose loading creates ``marker``; checked to be live before it is used."""
    payload = pickle.dumps({"t": 1, "learner": _CreatesMarker(marker)})
    pickle.loads(payload)["learner"].close()  # the payload does run when unpickled
    assert marker.exists()
    marker.unlink()
    return payload


def assert_identical(a, b, where="state"):
    """Equal values of exactly the same types (arrays: dtype, shape and bits; -0.0 and NaN)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), where
    elif isinstance(a, float):
        assert math.copysign(1, a) == math.copysign(1, b), where
        assert a == b or (math.isnan(a) and math.isnan(b)), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_identical(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_every_supported_value_round_trips_exactly(tmp_path):
    pcg = np.random.default_rng(7).bit_generator.state  # 128-bit ints
    state = {
        "rng": pcg,
        "big": [2**128 + 1, -(2**100), 0, True, False, None],
        "floats": [0.1, -0.0, math.inf, -math.inf, math.nan, 1e-308, 5e-324],
        "text": 'é ∞ "quoted" \n',
        "arrays": [
            np.arange(6.0).reshape(2, 3),
            np.array([True, False]),
            np.arange(4, dtype=np.int8),
            np.array(2.5),
            np.zeros((0, 3)),
            np.array(["a", "bc"]),
            np.arange(3, dtype=">u2"),
            np.array([np.nan, -np.inf]),
        ],
        "scalars": [np.float32(1.5), np.int64(-3), np.bool_(True), np.uint64(2**64 - 1)],
        "tuples": (1, (2.0, "x"), (), (np.ones(2), None), [()]),
        "int_keys": {0: "a", 10: (1, 2), (1, 2): "tuple key"},
        "tagged_key": {"__dponline__": "not ours", "x": 1},
        "empty": [{}, [], ""],
    }
    path = tmp_path / "s.ckpt.npz"
    save_state(path, state, task=TASK)
    loaded = load_state(path, task=TASK)
    assert_identical(state, loaded)
    assert type(loaded["tuples"][1]) is tuple  # tuples come back as tuples, not lists
    np.random.Generator(np.random.PCG64()).bit_generator.state = loaded["rng"]  # a valid state
    # the file is a plain npz: numpy reads it without pickle, the header is JSON
    with np.load(path, allow_pickle=False) as z:
        header = json.loads(bytes(z["header"]).decode())
    assert header["format"] == "dponline-checkpoint" and header["task"] == TASK
    assert header["dponline_version"] == dponline.__version__


@pytest.mark.parametrize(
    "value, what",
    [
        (np.array([object()], dtype=object), "object arrays"),
        ({1, 2}, "builtins.set"),
        (PrivacyWarning("x"), "PrivacyWarning"),
        (np.float64, "builtins.type"),
    ],
)
def test_values_without_a_safe_encoding_are_type_errors(tmp_path, value, what):
    with pytest.raises(TypeError, match=rf"state\['v'\]\[1\].*{what}"):
        save_state(tmp_path / "x.ckpt.npz", {"v": [0, value]}, task=TASK)
    assert not list(tmp_path.iterdir())  # nothing written, not even a temporary file


def _first_environment(learner: str) -> tuple[str, dict]:
    """The environment of the learner's first test case, with its options (a learner such as
    Algorithm 2 of CTRL needs a stream with a property, here strong convexity, that the
    catalogue's defaults lack)."""
    case = LEARNERS[learner].test_case
    entry = ENVIRONMENTS[case.environment]
    assert LEARNERS[learner].runs_in(
        entry.feedback_kind, entry.action_space_for(dict(case.environment_options))
    )
    return case.environment, dict(case.environment_options)


def _build(learner: str, env: tuple[str, dict], env_seed: int, learner_seed: int):
    name, options = env
    env = build_environment(name, 40, np.random.default_rng(env_seed), **options)
    private = LEARNERS[learner].private
    kw = {"epsilon": 1.0 if private else None, "calibration": "tight" if private else "none"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        agent = build_learner(
            learner, env, replicas=3, rng=np.random.default_rng(learner_seed), **kw
        )
    assert isinstance(env, Environment)
    return env, agent


def _play(env, agent, rounds: range) -> list[np.ndarray]:
    actions = []
    for t in rounds:
        if env.reveals_context:
            agent.observe(ContextFeedback(env.context(t)))
        action = agent.act()
        actions.append(np.array(action, copy=True))
        feedback, _ = env.round(t, action)
        agent.observe(feedback)
    return actions


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_learner_state_through_a_checkpoint_file_continues_bit_for_bit(tmp_path, learner):
    """Every registry learner on its first test case's environment: 17 rounds, checkpoint to
    a file, load into a learner built with another seed, 23 more rounds = an uninterrupted run."""
    env_name = _first_environment(learner)
    env, agent = _build(learner, env_name, env_seed=1, learner_seed=2)
    reference = _play(env, agent, range(40))

    env, agent = _build(learner, env_name, env_seed=1, learner_seed=2)
    first = _play(env, agent, range(17))
    path = tmp_path / f"{TASK}.ckpt.npz"
    save_state(path, {"learner": agent.state_dict(), "environment": env.state_dict()}, task=TASK)

    env2, agent2 = _build(learner, env_name, env_seed=1, learner_seed=99)  # fresh noise stream
    state = load_state(path, task=TASK)
    agent2.load_state_dict(state["learner"])
    env2.load_state_dict(state["environment"])
    rest = _play(env2, agent2, range(17, 40))
    for t, (a, b) in enumerate(zip(reference, first + rest, strict=True)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f"{learner}: round {t}"


def _frame(private: bool) -> pd.DataFrame:
    learners = [{"name": "dp-ftrl" if private else "ftrl"}]
    options = {"n_experts": 3}
    task = make_tasks(
        learners=learners,
        environment="alternating",
        epsilons=[2.0],
        seeds=2,
        horizon=30,
        environment_options=options,
        record_every=7,
    )
    return run_task(task[0])


@pytest.mark.parametrize("private", [True, False])
def test_result_table_round_trips_with_its_dtypes(tmp_path, private):
    frame = _frame(private)
    assert list(frame.columns) == COLUMNS
    save_frame(tmp_path / "r.result.npz", frame, task=TASK)
    pd.testing.assert_frame_equal(load_frame(tmp_path / "r.result.npz", task=TASK), frame)
    # object-dtype strings, booleans and an offset RangeIndex round-trip too
    other = pd.DataFrame(
        {"s": np.array(["a", "é"], dtype=object), "b": [True, False], "u": np.uint8([1, 2])},
        index=pd.RangeIndex(5, 9, 2),
    )
    save_frame(tmp_path / "o.result.npz", other, task=TASK)
    pd.testing.assert_frame_equal(load_frame(tmp_path / "o.result.npz", task=TASK), other)
    with pytest.raises(TypeError, match="column 's'"):
        save_frame(tmp_path / "n.result.npz", pd.DataFrame({"s": ["a", None]}), task=TASK)
    with pytest.raises(TypeError, match="RangeIndex"):
        save_frame(tmp_path / "i.result.npz", other.set_index("u"), task=TASK)


def test_another_version_is_refused_naming_both(tmp_path, monkeypatch):
    monkeypatch.setattr(dponline, "__version__", "1.2.3")
    save_state(tmp_path / "s.ckpt.npz", {"t": 1}, task=TASK)
    save_frame(tmp_path / "r.result.npz", _frame(False), task=TASK)
    assert load_state(tmp_path / "s.ckpt.npz", task=TASK) == {"t": 1}
    monkeypatch.setattr(dponline, "__version__", "1.2.4")
    with pytest.raises(ValueError, match=r"dponline '1\.2\.3'.*dponline '1\.2\.4'.*fresh output"):
        load_state(tmp_path / "s.ckpt.npz", task=TASK)
    # a learner's state: continuing a deployment needs the version that wrote it, since a new
    # learner's guarantee adds to the old one's (deleting is advice for an experiment only)
    with pytest.raises(ValueError, match=r"to continue a deployed learner, run that version"):
        load_state(tmp_path / "s.ckpt.npz", task=TASK)
    with pytest.raises(ValueError, match=r"dponline '1\.2\.3'.*dponline '1\.2\.4'.*fresh output"):
        load_frame(tmp_path / "r.result.npz", task=TASK)
    monkeypatch.delattr(dponline, "__version__")  # falls back to the installed distribution
    assert checkpoints.library_version() == __import__("importlib").metadata.version("dponline")


def test_another_task_is_refused_naming_both(tmp_path):
    save_state(tmp_path / "s.ckpt.npz", {"t": 1}, task=TASK)
    other = "task0003-fedcba9876543210"
    with pytest.raises(ValueError, match=rf"task '{TASK}', expected task '{other}'.*delete"):
        load_state(tmp_path / "s.ckpt.npz", task=other)
    # a checkpoint is not a result, and a result is not a checkpoint
    with pytest.raises(ValueError, match="holds a 'checkpoint', expected a 'result'"):
        load_frame(tmp_path / "s.ckpt.npz", task=TASK)


def test_files_that_are_not_ours_are_refused_and_never_unpickled(tmp_path):
    marker = tmp_path / "marker"
    payload = malicious_pickle(marker)
    path = tmp_path / f"{TASK}.ckpt.npz"

    path.write_bytes(payload)  # a pickle under our name
    with pytest.raises(ValueError, match=r"not a dponline checkpoint file.*pickle"):
        load_state(path, task=TASK)

    # an npz that holds the payload as a pickled object array, named by a valid header
    header = {
        "format": "dponline-checkpoint",
        "format_version": 1,
        "kind": "checkpoint",
        "dponline_version": dponline.__version__,
        "task": TASK,
        "body": {"learner": {"__dponline__": "ndarray", "key": "a0"}},
    }
    evil = np.empty(1, dtype=object)
    evil[0] = _CreatesMarker(marker)
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(json.dumps(header).encode(), np.uint8), a0=evil)
    path.write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match=r"not a valid dponline checkpoint file.*allow_pickle"):
        load_state(path, task=TASK)

    # a zip that is not ours, a truncated file, an unknown tag
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("state.pkl", payload)
    with pytest.raises(ValueError, match="not a valid dponline checkpoint file"):
        load_state(path, task=TASK)
    # an archive compressed by a method numpy never writes (numpy's reader cannot open it)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_LZMA) as z:
        z.writestr("header.npy", b"x" * 100)
    with pytest.raises(ValueError, match=r"not a valid dponline checkpoint file.*compression"):
        load_state(path, task=TASK)
    save_state(path, {"x": np.arange(1000.0)}, task=TASK)
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(ValueError, match="not a valid dponline checkpoint file"):
        load_state(path, task=TASK)
    header["body"] = {"__dponline__": "pickle", "data": "x"}
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(json.dumps(header).encode(), np.uint8))
    path.write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="unknown tagged value"):
        load_state(path, task=TASK)
    assert not marker.exists()


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / f"{TASK}.ckpt.npz"
    save_state(path, {"t": 1}, task=TASK)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # as if killed between writing and renaming

    monkeypatch.setattr(checkpoints.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        save_state(path, {"t": 2}, task=TASK)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    monkeypatch.undo()
    assert load_state(path, task=TASK) == {"t": 1}


def test_legacy_pickles_are_reported_once_and_never_read(tmp_path):
    assert checkpoints.warn_legacy_pickles(tmp_path) == []
    (tmp_path / "old.done.pkl").write_bytes(malicious_pickle(tmp_path / "marker"))
    with pytest.warns(checkpoints.LegacyCheckpointWarning, match="ignoring 1 pickle file"):
        assert checkpoints.warn_legacy_pickles(tmp_path) == [tmp_path / "old.done.pkl"]
    assert not (tmp_path / "marker").exists()


def test_a_deployments_checkpoint_is_continued_once(tmp_path):
    """resume_state moves the file aside before reading it: a second restart from it (which
    would replay its noise on other data) is refused naming where it went; the service's next
    save is continued as usual; a state of another task is put back."""
    from dponline.experiments.checkpoints import resume_state

    path = tmp_path / "policy.ckpt"
    save_state(path, {"t": 3}, task="service")
    assert resume_state(path, task="service") == {"t": 3}
    assert not path.exists() and (tmp_path / "policy.ckpt.resumed").exists()
    with pytest.raises(ValueError, match=r"continued already \(it lies at .*policy\.ckpt\.resumed"):
        resume_state(path, task="service")
    save_state(path, {"t": 9}, task="service")  # the running service's next checkpoint
    assert resume_state(path, task="service") == {"t": 9}
    save_state(path, {"t": 12}, task="service")
    with pytest.raises(ValueError, match="expected task 'other'"):
        resume_state(path, task="other")
    assert load_state(path, task="service") == {"t": 12}  # put back, untouched
    with pytest.raises(FileNotFoundError):
        resume_state(tmp_path / "never-saved.ckpt", task="service")
