"""The runner: learners x environments x seeds x privacy levels, reproducibly.

A :class:`Task` is one learner on one environment at one privacy level, run for ``seeds``
independent seeds at once (the learner's replicas). Randomness comes from one
:class:`numpy.random.SeedSequence` per task, spawned from the sweep's seed and the task's
position, so the results do not depend on the backend, the number of workers or the order in
which tasks finish.

A task plays its environment through the round loop (:func:`dponline.experiments.rounds.play`,
oblivious linear streams a block of rounds at a time). Results are a tidy table
(:mod:`pandas`): one row per task, seed and recorded round, with the cumulative loss and the
exact regret against the best fixed decision in hindsight (and with
:attr:`Task.count_switches` the number of switches so far, ``switches``). Where the
environment holds out validation and test sets (streaming optimisation,
:class:`~dponline.environments.base.HeldOutEvaluation`), the learner's output after the last
sample is scored on the test set (``final_loss``, on the last round's rows), and a task may
``tune`` options on the validation set: every candidate runs on the same data with the same
seed, and the table keeps the candidate with the least mean validation loss (``tuned``).

Checkpoints: with ``checkpoint_dir`` each task saves its learner, environment and partial
results every ``checkpoint_every`` rounds (``<task key>.ckpt.npz``) and a finished task saves
its results (``<task key>.result.npz``), atomically and without pickle
(:mod:`dponline.experiments.checkpoints`). Running the same sweep again resumes every task from
its last checkpoint; the learner's RNG state is restored, so no noise is redrawn for rounds
already released and the table is identical to an uninterrupted run. The task key hashes the
task and the dponline version, so results of two versions never mix; pickle files of older
versions are ignored with a warning.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import itertools
import json
import math
import multiprocessing
import signal
import site
import sys
import sysconfig
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

from dponline import registry
from dponline.environments.base import Environment, HeldOutEvaluation
from dponline.environments.catalogue import build_environment
from dponline.environments.own_data import PATH_OPTIONS
from dponline.experiments.checkpoints import (
    CHECKPOINT_SUFFIX,
    RESULT_SUFFIX,
    code_fingerprint,
    load_frame,
    load_state,
    save_frame,
    save_state,
    warn_legacy_pickles,
)
from dponline.experiments.progress import Interrupted, Progress
from dponline.experiments.rounds import Tally, play
from dponline.privacy.arguments import checked_count
from dponline.privacy.budget import WeakerGuaranteeError
from dponline.privacy.guarantee import Neighbouring, PrivacyWarning
from dponline.threads import WorkerLimits, apply_worker_limits, cpu_count, worker_limits
from dponline.warn import warn_caller

__all__ = [
    "BACKENDS",
    "Task",
    "check_distinct_rows",
    "execute_tasks",
    "make_tasks",
    "run_sweep",
    "run_task",
    "stored_key",
    "stored_results",
]

BACKENDS = ("local", "serial", "ray")
COLUMNS = [
    "learner",
    "label",
    "environment",
    "calibration",
    "epsilon",
    "proven_epsilon",
    "delta",
    "unit",
    "tuned",
    "seed",
    "t",
    "cumulative_loss",
    "regret",
    "final_loss",
]


@dataclass(frozen=True)
class Task:
    """One learner on one environment at one privacy level, for ``seeds`` seeds."""

    learner: str
    environment: str
    epsilon: float | None
    calibration: str
    seeds: int
    seed_entropy: int
    task_index: int
    horizon: int | None = None
    learner_options: dict[str, Any] = field(default_factory=dict)
    environment_options: dict[str, Any] = field(default_factory=dict)
    record_every: int = 1
    label: str = ""
    environment_label: str = ""
    #: Run a ``paper`` calibration that proves less than asked (a reproduction); the table's
    #: ``proven_epsilon`` says what it proves. Off, such a task fails with the proof.
    allow_weaker: bool = False
    #: Options to choose on the environment's validation set: name -> candidate values. Every
    #: combination runs (same data, same learner seed); the table keeps the one whose final
    #: output has the least mean validation loss, and says which in its ``tuned`` column.
    tune: dict[str, list[Any]] = field(default_factory=dict)
    #: Rounds (1-based) recorded besides every ``record_every``-th and the last: the points of
    #: a curve that need not be evenly spaced.
    record_rounds: tuple[int, ...] = ()
    #: Also record, per seed, how many rounds (from the second on) played a decision other
    #: than the round before's: the table's ``switches`` column (the lazy learners' count).
    count_switches: bool = False
    #: How the seeds derive from ``seed_entropy`` (:meth:`seed_sequences`): "sweep" or "spawn".
    seeding: str = "sweep"
    #: Modules to import before the learner is built, where its entry is registered (module
    #: names, or absolute paths of .py files: :func:`~dponline.registry.load_modules`); a
    #: spec's ``modules`` field. A worker process imports them again. Their paths are not part
    #: of the :attr:`key`, which holds their content instead (and the learner's module's).
    modules: tuple[str, ...] = ()

    @property
    def unit(self) -> str:
        """The unit of privacy of a private task, in short ("one round", or "person: k rounds
        >= b apart" from the learner's ``participations`` and ``min_separation`` options); ""
        for a non-private one."""
        if self.epsilon is None:
            return ""
        k = self.learner_options.get("participations", 1)
        b = self.learner_options.get("min_separation", 1)
        return "one round" if k == 1 else f"person: {k} rounds >= {b} apart"

    def unit_proven(self, group_privacy: bool, input_unit: str = "round") -> str:
        """:attr:`unit` as the learner proved it: for a person protected by group privacy, any k
        rounds ("person: k rounds, by group privacy"); ``input_unit`` names one input where it
        is not a round ("sample": "one sample", "person: k samples, by group privacy")."""
        text = self.unit
        if group_privacy:
            k = self.learner_options.get("participations", 1)
            text = f"person: {k} rounds, by group privacy"
        return text if input_unit == "round" else text.replace("round", input_unit)

    @property
    def display_label(self) -> str:
        """The task's label, by default the learner's name, with the unit of privacy when it is
        a person (so that a person's rows and one round's never share a label)."""
        if self.label:
            return self.label
        return self.learner if self.unit in ("", "one round") else f"{self.learner} ({self.unit})"

    @property
    def key(self) -> str:
        """A stable identifier (file name of its checkpoint): the task's position and a hash of
        its fields and the code that runs it (:func:`~dponline.experiments.checkpoints.
        code_fingerprint`: the version and a digest of the package's files), so results of
        other code are never read back."""
        fields = asdict(self)
        del fields["modules"]  # where the learner's module lies is not what a result is
        # nor where a file of data lies: its digest (recorded by the spec) is what it holds
        fields["environment_options"] = content_options(self.environment, self.environment_options)
        spec = {**fields, "dponline_code": code_fingerprint(), "learner_code": _learner_code(self)}
        blob = json.dumps(spec, sort_keys=True, default=str).encode()
        return f"task{self.task_index:04d}-{hashlib.sha256(blob).hexdigest()[:16]}"

    def seed_sequences(self) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
        """(environment, learner) seed sequences, independent of backend and order.

        ``seeding = "sweep"``: the environment's stream depends only on the sweep's seed and
        the environment (name, options, horizon), so every learner in a sweep faces the same
        loss sequence: paired comparisons. The learner's stream depends on the task's position.

        ``seeding = "spawn"``: numpy's textbook scheme, ``seed = SeedSequence(seed_entropy)``:
        every environment is built from ``seed`` itself (``default_rng(seed_entropy)``), so
        environments that are two views of one stream (a loss function and its sample) hold the
        same data, and the task at position i draws from ``seed.spawn(n)[i]``. The side-by-side
        comparison runs so (:mod:`dponline.experiments.side_by_side`).

        ``seeding = "stable"``: the environment's stream as with ``"sweep"``, the learner's
        from the task itself (learner, options, label, tuning, epsilon, calibration and the
        environment) instead of its position, so a task's numbers stay the same when learners
        are added to the spec, removed or reordered.
        """
        if self.seeding == "spawn":
            return (
                np.random.SeedSequence(self.seed_entropy),
                np.random.SeedSequence(self.seed_entropy, spawn_key=(self.task_index,)),
            )
        if self.seeding not in SEEDINGS:
            raise ValueError(f"seeding must be 'sweep', 'spawn' or 'stable', got {self.seeding!r}")
        environment = [
            self.environment,
            content_options(self.environment, self.environment_options),
            self.horizon,
        ]
        env_seq = np.random.SeedSequence(self.seed_entropy, spawn_key=(0, *_key(environment)))
        if self.seeding == "stable":
            task = [
                self.learner,
                self.learner_options,
                self.label,
                self.tune,
                self.epsilon,
                self.calibration,
                environment,
            ]
            learner_key: tuple[int, ...] = (2, *_key(task))
        else:
            learner_key = (1, self.task_index)
        return env_seq, np.random.SeedSequence(self.seed_entropy, spawn_key=learner_key)


#: how a task seeds its streams (:meth:`Task.seed_sequences`)
SEEDINGS = ("sweep", "spawn", "stable")


def _key(fields: Any) -> tuple[int, ...]:
    """Four 32-bit words of the SHA-256 of ``fields`` in JSON (a spawn key from content)."""
    blob = json.dumps(fields, sort_keys=True, default=str).encode()
    digest = hashlib.sha256(blob).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def _twelve_digits(x: float) -> float:
    """``x`` to 12 significant digits (NaN and infinity as they are)."""
    return float(f"{x:.12g}") if math.isfinite(x) else x


def content_options(environment: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without the paths of the files the environment reads when their digests
    are recorded beside them (:data:`~dponline.environments.own_data.PATH_OPTIONS`): what a
    task's key and seeds depend on is the data, not the folder it lies in, so a spec's run
    reads the same results back, and draws the same numbers, on another machine."""
    out = dict(options)
    for option, digest_option in PATH_OPTIONS.get(environment, ()):
        if out.get(digest_option) is not None:
            out.pop(option, None)
    return out


def _default_label(environment: str, options: dict[str, Any]) -> str:
    """The environment's name and options, a file it reads by its name alone (its folder and
    the digest the spec recorded stay in the task, not in the tables)."""
    files = dict(PATH_OPTIONS.get(environment, ()))
    digests = set(files.values())
    shown = (
        f" {k}={Path(v).name if k in files else v}"
        for k, v in sorted(options.items())
        if k not in digests
    )
    return environment + "".join(shown)


def make_tasks(
    *,
    learners: Sequence[dict[str, Any]],
    environment: str,
    epsilons: Sequence[float],
    calibrations: Sequence[str] = ("tight",),
    seeds: int = 10,
    seed: int = 0,
    horizon: int | None = None,
    environment_options: dict[str, Any] | None = None,
    record_every: int = 1,
    environment_label: str = "",
    allow_weaker_paper: bool = False,
) -> list[Task]:
    """The cross product of learners x epsilons x calibrations (non-private learners once).

    Each learner is ``{"name": ..., "options": {...}, "label": ..., "tune": {...}}``; the label
    defaults to the name and its options; ``tune`` maps options to candidate values chosen on
    the environment's validation set (:attr:`Task.tune`); ``calibrations`` (optional) restricts
    the learner to some of the sweep's calibrations. ``allow_weaker_paper``: run
    ``paper`` calibrations that prove less than the requested epsilon (reproductions),
    reporting what they prove.
    """
    env_options = dict(environment_options or {})
    env_label = environment_label or _default_label(environment, env_options)
    catalogue = registry.learners()
    tasks: list[Task] = []
    for spec in learners:
        name = spec["name"]
        if name not in catalogue:
            raise ValueError(f"unknown learner {name!r}; expected one of {sorted(catalogue)}")
        entry = catalogue[name]
        options = dict(spec.get("options", {}))
        tune = {k: list(v) for k, v in dict(spec.get("tune", {})).items()}
        for k, values in tune.items():
            if not values:
                raise ValueError(f"learner {name!r}: tune.{k} needs at least one value")
            if k in options:
                raise ValueError(
                    f"learner {name!r}: option {k!r} is both fixed ({options[k]!r}) and tuned"
                )
        label = spec.get("label") or (
            name + "".join(f" {k}={v}" for k, v in sorted(options.items()))
        )
        settings: Iterable[tuple[float | None, str]]
        if entry.private:
            own = spec.get("calibrations", calibrations)  # a learner may run fewer
            cals = [c for c in calibrations if c in entry.calibrations and c in own]
            if not cals:
                mine = "" if "calibrations" not in spec else f" and its own {list(own)}"
                raise ValueError(
                    f"learner {name!r} supports calibrations {list(entry.calibrations)}; none "
                    f"of them is in both the sweep's {list(calibrations)}{mine}"
                )
            settings = [(float(e), c) for c in cals for e in epsilons]
        elif "calibrations" in spec:
            raise ValueError(
                f"learner {name!r} is not private: it runs once, without a calibration; drop "
                f"its calibrations {list(spec['calibrations'])}"
            )
        else:
            settings = [(None, "none")]
        for eps, cal in settings:
            tasks.append(
                Task(
                    learner=name,
                    environment=environment,
                    epsilon=eps,
                    calibration=cal,
                    seeds=seeds,
                    seed_entropy=seed,
                    task_index=len(tasks),
                    horizon=horizon,
                    learner_options=options,
                    environment_options=env_options,
                    record_every=record_every,
                    label=label,
                    environment_label=env_label,
                    allow_weaker=bool(allow_weaker_paper) and cal == "paper",
                    tune=tune,
                )
            )
    return tasks


#: the spacing of checkpoints a task's stored results are named without (see stored_key)
DEFAULT_CHECKPOINT_EVERY = 1000


def run_task(
    task: Task,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
) -> pd.DataFrame:
    """Run one task (resuming from its checkpoint if there is one) and return its rows.

    Checkpoint files of another dponline version or task, or files that are not dponline
    checkpoints, raise ``ValueError``; ``*.pkl`` files are ignored with a warning.
    """
    if checkpoint_dir is not None:
        warn_legacy_pickles(checkpoint_dir)
    return _run_task(task, checkpoint_dir, checkpoint_every)


def stored_key(task: Task, checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY) -> str:
    """The name of a task's stored results: its key, and the checkpoint spacing unless it is
    the default. The rounds played at once end at every checkpoint, so the spacing is part of
    what a result is: results of another spacing are recomputed, never read."""
    every = checked_count("checkpoint_every", checkpoint_every)
    return task.key if every == DEFAULT_CHECKPOINT_EVERY else f"{task.key}-every{every}"


def stored_results(
    tasks: Sequence[Task], checkpoint_dir: str | Path | None, checkpoint_every: int
) -> int:
    """How many of ``tasks`` have finished results in ``checkpoint_dir`` that a sweep with
    this spacing reads back instead of running (0 without a folder)."""
    if checkpoint_dir is None:
        return 0
    folder = Path(checkpoint_dir)
    return sum(
        (folder / f"{stored_key(t, checkpoint_every)}{RESULT_SUFFIX}").exists() for t in tasks
    )


def _run_task(task: Task, checkpoint_dir: str | Path | None, checkpoint_every: int) -> pd.DataFrame:
    if task.modules:  # the learner's own module, in a worker process that has not imported it
        registry.load_modules(task.modules)
    ckpt_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    key = stored_key(task, checkpoint_every)
    done_path = ckpt_dir / f"{key}{RESULT_SUFFIX}" if ckpt_dir else None
    # blocks of rounds end at its multiples whether or not they are saved (same numbers)
    checkpoint_every = checked_count("checkpoint_every", checkpoint_every)
    if ckpt_dir is not None:
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        for stale in ckpt_dir.glob(f".{key}*.tmp"):  # left by a writer killed mid-write
            stale.unlink(missing_ok=True)
    if done_path is not None and done_path.exists():
        frame = load_frame(done_path, task=key)
        if list(frame.columns) != _columns(task):
            raise ValueError(
                f"{done_path} has columns {list(frame.columns)}, expected {_columns(task)}; "
                "use a fresh output folder or delete the file"
            )
        return frame
    candidates = tuning_candidates(task.tune)
    joint = _joint_option(task)
    if joint is not None:  # every candidate in one pass, as blocks of the learner's replicas
        values = list(task.tune[joint])
        both = _play(
            task, {joint: values}, ckpt_dir, key, checkpoint_every, width=len(values), store=False
        )
        runs = both.split(len(values))
    else:
        runs = []
        for i, override in enumerate(candidates):
            sub_key = key if not task.tune else f"{key}-c{i:02d}"
            store = bool(task.tune)
            runs.append(_play(task, override, ckpt_dir, sub_key, checkpoint_every, store=store))
    if task.tune:
        chosen = _choose(runs)
        run = runs[chosen]
        tuned = json.dumps(candidates[chosen], sort_keys=True)
    else:
        run, tuned = runs[0], ""
    frame = _rows(task, run, tuned)
    if done_path is not None:
        save_frame(done_path, frame, task=key)
        for i in range(len(candidates)):  # the candidates' partial results, now in the frame
            sub_key = key if not task.tune else f"{key}-c{i:02d}"
            (ckpt_dir / f"{sub_key}{CHECKPOINT_SUFFIX}").unlink(missing_ok=True)  # type: ignore[operator]
            if task.tune:
                (ckpt_dir / f"{sub_key}{RESULT_SUFFIX}").unlink(missing_ok=True)  # type: ignore[operator]
    return frame


def _joint_option(task: Task) -> str | None:
    """The tuned option, when the task tunes one option its learner takes as a list of
    candidates at once (:attr:`~dponline.registry.LearnerEntry.joint_options`)."""
    if len(task.tune) != 1:
        return None
    (name,) = task.tune
    entry = registry.learners().get(task.learner)
    return name if entry is not None and name in entry.joint_options else None


def tuning_candidates(tune: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the tuned options' values, in the spec's order (the first option
    varies slowest); ``[{}]`` when nothing is tuned."""
    names = list(tune)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*tune.values())]


def _choose(runs: Sequence[_Run]) -> int:
    """The candidate with the least mean validation loss over seeds (a non-finite loss counts
    as infinite; ties go to the first)."""
    means = []
    for r in runs:
        v = np.asarray(r.validation_loss, dtype=float)
        means.append(float(np.where(np.isfinite(v), v, np.inf).mean()))
    return int(np.argmin(means))


@dataclass
class _Run:
    """What one learner's pass over the environment produced."""

    recorded_t: np.ndarray  # (n_recorded,)
    recorded_loss: np.ndarray  # (n_recorded, seeds) cumulative loss
    regret_offset: np.ndarray  # (n_recorded,) regret of zero cumulative loss = -best loss
    final_loss: np.ndarray  # (seeds,) test loss of the final output, NaN without held-out sets
    validation_loss: np.ndarray  # (seeds,) validation loss of the final output (or NaN)
    proven_epsilon: float
    delta: float
    recorded_switches: np.ndarray | None = None  # (n_recorded, seeds) with count_switches
    #: the person's guarantee is derived by group privacy (any k rounds) from one round's
    group_privacy: bool = False
    #: what one input is under the learner's guarantee ("round"; "sample" for datasets
    #: differing in one sample, "user" for one user's stream), for the table's unit of privacy
    input_unit: str = "round"

    def state(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def split(self, k: int) -> list[_Run]:
        """The runs of ``k`` candidates played as candidate-major blocks of replicas."""
        seeds = self.final_loss.size // k
        switches = self.recorded_switches
        return [
            dataclasses.replace(
                self,
                recorded_loss=self.recorded_loss[:, j * seeds : (j + 1) * seeds],
                final_loss=self.final_loss[j * seeds : (j + 1) * seeds],
                validation_loss=self.validation_loss[j * seeds : (j + 1) * seeds],
                recorded_switches=None
                if switches is None
                else switches[:, j * seeds : (j + 1) * seeds],
            )
            for j in range(k)
        ]


def _learner_code(task: Task) -> str:
    """A digest of the user's code behind the task: the files of the spec's ``modules``, of
    the module that defines the learner's factory (a plugin's), and of the user's modules
    those import in turn (:func:`_user_modules`), by their content, not where they lie;
    dponline's own files are :func:`code_fingerprint`'s. So the stored results of a learner
    of the user's are rerun, not read back, once one of those files has changed. Not covered:
    installed packages (their version is theirs to keep) and a learner defined
    where there is no file (``__main__`` of ``python -c``, a notebook, a zip archive)."""
    if task.modules:  # a process that has not imported them yet (imported once: cheap again)
        try:
            registry.load_modules(task.modules)
        except (ValueError, ImportError):
            pass  # the run itself says what is wrong with them
    entry = registry.learners().get(task.learner)
    roots = [_module_file(m) for m in task.modules]
    if entry is not None:
        module = sys.modules.get(getattr(entry.factory, "__module__", "") or "")
        roots.append(getattr(module, "__file__", None))
    files = [*roots, *_user_modules([f for f in roots if f and _is_users(Path(f))])]
    digest = hashlib.sha256()
    for file in dict.fromkeys(f for f in files if f):  # once each, in order
        path = Path(file)
        if path.is_file() and not path.resolve().is_relative_to(_PACKAGE):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _user_modules(files: Sequence[str]) -> list[str]:
    """The files of the user's modules that the modules at ``files`` import, directly or in
    turn, in the order met: those named by their ``import`` statements (``import helpers``,
    ``from helpers import PRIOR``, relative ones too) and those of the module objects and
    functions or classes among their globals. A user's module is one with a ``.py`` file
    outside dponline, the standard library and the folders of installed packages."""
    queue = [m for m in (_module_at(Path(f).resolve()) for f in files) if m is not None]
    seen = {id(m) for m in queue}
    found = []
    while queue:
        module = queue.pop(0)
        for name in (*_imported_names(module), *_global_modules(module)):
            other = sys.modules.get(name)
            if other is None or id(other) in seen:
                continue
            seen.add(id(other))
            file = getattr(other, "__file__", None)
            if isinstance(file, str) and file.endswith(".py") and _is_users(Path(file)):
                found.append(file)
                queue.append(other)
    return found


def _imported_names(module: ModuleType) -> list[str]:
    """The modules a module's source imports (its ``import`` and ``from ... import``
    statements, wherever they stand; for ``from a import b`` both ``a`` and ``a.b``)."""
    file = getattr(module, "__file__", None)
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8"))  # type: ignore[arg-type]
    except (OSError, SyntaxError, TypeError, ValueError):
        return []
    package = getattr(module, "__package__", None) or ""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package up level - 1 parents
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - node.level + 1] if node.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            names += [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return [n for n in names if n]


def _global_modules(module: ModuleType) -> list[str]:
    """The modules of a module's globals: module objects, and objects with a ``__module__``
    (a module imported by ``importlib`` or set from outside shows only there)."""
    names = []
    for value in list(vars(module).values()):
        try:
            name = value.__name__ if isinstance(value, ModuleType) else value.__module__
        except Exception:  # an object without one (or one that raises on reading it)
            continue
        if isinstance(name, str):
            names.append(name)
    return names


def _module_at(path: Path) -> ModuleType | None:
    """The imported module whose file is ``path`` (resolved: a module imported through a
    link is found by its target), if any."""
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        if file.endswith(path.name) or Path(file).is_symlink():
            if Path(file).resolve() == path:
                return module
    return None


def _is_users(path: Path) -> bool:
    """Whether ``path`` is a file of the user's: outside dponline, the standard library and
    the folders of installed packages."""
    path = path.resolve()
    return not any(path.is_relative_to(root) for root in (_PACKAGE, *_PREFIXES))


def _input_unit(privacy: Any) -> str:
    """What one input is under the guarantee's neighbouring relation: a sample (datasets
    differing in one sample), a user (one user's stream), else a round."""
    relation = getattr(privacy, "neighbouring", None)
    return {Neighbouring.ONE_SAMPLE: "sample", Neighbouring.ONE_USER: "user"}.get(relation, "round")


def _module_file(module: str) -> str | None:
    """The file of a spec's module (a .py path, or an imported module's name)."""
    if module.endswith(".py"):
        return module
    return getattr(sys.modules.get(module), "__file__", None)


#: the installed dponline package's folder (its files are the code fingerprint's)
_PACKAGE = Path(registry.__file__).resolve().parent
#: where the standard library and installed packages lie (not the user's code)
_PREFIXES = tuple(
    dict.fromkeys(
        Path(p).resolve()
        for p in (
            *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")),
            *site.getsitepackages(),
            site.getusersitepackages(),
        )
    )
)


def _build(task: Task, override: Mapping[str, Any]) -> tuple[Environment, Any]:
    env_seq, learner_seq = task.seed_sequences()
    env = build_environment(
        task.environment, task.horizon, np.random.default_rng(env_seq), **task.environment_options
    )
    if not isinstance(env, Environment):
        raise TypeError(
            f"environment {task.environment!r} built a {type(env).__name__}, which does not "
            "implement dponline.environments.Environment"
        )
    if task.tune and not isinstance(env, HeldOutEvaluation):
        raise ValueError(
            f"{task.display_label}: tuning {sorted(task.tune)} needs an environment with "
            f"a validation set (dponline.environments.HeldOutEvaluation); {task.environment!r} "
            "has none"
        )
    with warnings.catch_warnings():
        # a paper calibration the spec allows to prove less is reported in the table instead
        warnings.simplefilter("ignore", PrivacyWarning)
        try:
            learner = registry.build_learner(
                task.learner,
                env,
                epsilon=task.epsilon,
                calibration=task.calibration,
                allow_weaker=task.allow_weaker,
                replicas=task.seeds,
                rng=np.random.default_rng(learner_seq),
                **{**task.learner_options, **override},
            )
        except WeakerGuaranteeError as exc:
            raise WeakerGuaranteeError(
                f"{task.display_label} on {task.environment}: {exc}. In a spec, "
                "'allow_weaker_paper = true' runs such paper calibrations and reports what "
                "they prove"
            ) from None
    return env, learner


def _play(
    task: Task,
    override: Mapping[str, Any],
    ckpt_dir: Path | None,
    key: str,
    checkpoint_every: int,
    *,
    width: int = 1,
    store: bool = False,
) -> _Run:
    """One pass of the learner (built with ``override`` over its options) over the task's
    environment, resuming from the checkpoint ``key`` if there is one. Every candidate of a
    tuned task sees the same environment stream and the same learner seed (common random
    numbers: the candidates differ only in the tuned options). ``width``: candidates played at
    once (the learner then plays ``width`` x seeds replicas); ``store``: keep the finished run
    under ``key`` (a candidate of a tuned task)."""
    part_path = ckpt_dir / f"{key}{CHECKPOINT_SUFFIX}" if ckpt_dir else None
    done_path = ckpt_dir / f"{key}{RESULT_SUFFIX}" if (ckpt_dir and store) else None
    if done_path is not None and done_path.exists():  # a finished candidate of a tuned task
        return _Run(**load_state(done_path, task=key))
    try:
        env, learner = _build(task, override)
    except WeakerGuaranteeError:
        raise
    except (ValueError, TypeError) as exc:  # say which task of the sweep could not be built
        where = task.environment_label or task.environment
        eps = "" if task.epsilon is None else f", {task.calibration}, epsilon {task.epsilon:g}"
        raise ValueError(f"task {task.display_label} on {where}{eps}: {exc}") from exc
    horizon = env.horizon
    replicas = task.seeds * width
    tally = Tally.start(
        replicas,
        last=horizon,
        record_every=task.record_every,
        rounds=task.record_rounds,
        switches=task.count_switches,
    )
    start = 0
    if part_path is not None and part_path.exists():
        state = load_state(part_path, task=key)
        start = int(state["t"])
        if not 0 < start < horizon:
            raise ValueError(
                f"{part_path} was saved at round {start}, outside (0, {horizon}); "
                "use a fresh output folder or delete the file"
            )
        try:
            learner.load_state_dict(state["learner"])
            env.load_state_dict(state["environment"])
            tally.load_state(state)
        except (ValueError, KeyError, TypeError) as err:  # other code wrote it (an older format)
            raise ValueError(
                f"{part_path} does not fit this run ({err!r}); use a fresh output folder or "
                "delete the file"
            ) from err

    def save(t: int) -> None:
        state = {"t": t, "learner": learner.state_dict(), "environment": env.state_dict()}
        save_state(part_path, {**state, **tally.state()}, task=key)  # type: ignore[arg-type]

    play(
        env,
        learner,
        range(start, horizon),
        keep=False,
        tally=tally,
        blocks=True,  # oblivious linear streams a block of rounds at a time
        checkpoint_every=checkpoint_every,
        checkpoint=None if part_path is None else save,
        who=task.display_label,
    )
    recorded_t = tally.recorded_t
    final = validation = np.full(replicas, np.nan)
    if isinstance(env, HeldOutEvaluation):
        output = learner.act()  # the output after the last sample (streaming optimisation)
        final = np.asarray(env.test_loss(output), dtype=float)
        validation = np.asarray(env.validation_loss(output), dtype=float)
    privacy = getattr(learner, "privacy", None)
    run = _Run(
        recorded_t=np.array(recorded_t, dtype=np.int64),
        recorded_loss=tally.loss_table(),
        # the regret at the recorded rounds of a zero cumulative loss: minus the comparator
        regret_offset=np.asarray(
            env.regret(np.zeros((1, len(recorded_t))), np.array(recorded_t))[0], dtype=float
        ),
        final_loss=final,
        validation_loss=validation,
        proven_epsilon=math.nan if privacy is None else float(privacy.epsilon),
        delta=math.nan if privacy is None else float(privacy.delta),
        recorded_switches=tally.switch_table(),
        group_privacy=getattr(privacy, "one_input", None) is not None,
        input_unit=_input_unit(privacy),
    )
    if done_path is not None:
        save_state(done_path, run.state(), task=key)
        if part_path is not None:
            part_path.unlink(missing_ok=True)
    return run


def _rows(task: Task, run: _Run, tuned: str) -> pd.DataFrame:
    ts, losses = run.recorded_t, run.recorded_loss  # losses: (n_recorded, seeds)
    regret = losses + run.regret_offset[:, None]
    n_t, n_s = losses.shape
    final = np.full((n_t, n_s), np.nan)
    final[ts == ts.max()] = run.final_loss  # on the last round's rows only
    extra = {}
    if task.count_switches:
        extra["switches"] = run.recorded_switches.ravel()  # type: ignore[union-attr]
    return pd.DataFrame(
        {
            "learner": task.learner,
            "label": task.display_label,
            "environment": task.environment_label or task.environment,
            "calibration": task.calibration,
            "epsilon": np.nan if task.epsilon is None else task.epsilon,
            # to 12 digits: 1 / (1 / 0.1) is 0.10000000000000002 (the tables read 0.1)
            "proven_epsilon": _twelve_digits(run.proven_epsilon),
            "delta": run.delta,
            # never empty: a column of text throughout reads back as text (a non-private
            # task's "" was NaN in results.csv, and pandas warned of mixed types)
            "unit": task.unit_proven(run.group_privacy, run.input_unit) or "non-private",
            "tuned": tuned,
            "seed": np.tile(np.arange(n_s), n_t),
            "t": np.repeat(ts, n_s),
            "cumulative_loss": losses.ravel(),
            "regret": regret.ravel(),
            "final_loss": final.ravel(),
            **extra,
        }
    )[_columns(task)]


def _columns(task: Task) -> list[str]:
    """The columns of a task's rows: :data:`COLUMNS`, and ``switches`` when it counts them."""
    return [*COLUMNS, "switches"] if task.count_switches else COLUMNS


def _init_worker(limits: WorkerLimits) -> None:
    """A pool worker leaves Ctrl-C to the parent, which stops it (no traceback per worker),
    and bounds its BLAS, OpenMP and numba threads to ``limits``
    (:func:`dponline.threads.worker_limits`), so the workers together fit the cores."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    apply_worker_limits(limits)


def _warned(fn: Callable[[Any], Any], task: Any) -> tuple[Any, list[tuple[type, str]]]:
    """``fn(task)`` and the warnings it raised, (category, message) each: a worker's warnings
    are printed by the parent, once for all tasks (:func:`execute_tasks`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(task)
    return result, [(w.category, str(w.message)) for w in caught]


def _indexed(fn: Callable[[Any], Any], item: tuple[int, Any]) -> tuple[int, Any]:
    i, task = item
    return i, _warned(fn, task)


def _warn_once(seen: Mapping[tuple[type, str], int], total: int) -> None:
    """Each distinct warning of a run's tasks once, saying in how many tasks it came (a
    learner's warning came once per task, attributed to the process pool)."""
    for (category, message), count in seen.items():
        where = "" if total <= 1 else f" [in {count} of {total} tasks]"
        warn_caller(message + where, category)


def execute_tasks(
    tasks: Sequence[Any],
    fn: Callable[[Any], Any],
    *,
    backend: str = "local",
    workers: int | None = None,
    order: Sequence[int] | None = None,
    on_result: Callable[[Any, Any, int], None] | None = None,
    progress: bool = True,
) -> list[Any]:
    """The engine under every sweep: ``fn(task)`` for every task, returned in task order.

    ``backend``: "local" (a process pool, the default), "serial" (in this process) or "ray"
    (``pip install dponline[ray]``; uses a running cluster if ``ray.init`` was called, else
    starts a local one). ``fn`` must be picklable for the pool and Ray (a module-level function
    or a :func:`functools.partial` of one). ``order``: the positions in the order to submit them
    (longest first, say). ``on_result(task, result, done)`` is called as each one finishes.

    Threads: each of the ``local`` backend's W workers (default: one per core this process may
    use, at most one per task) limits BLAS, OpenMP and numba to ``max(1, cores // W)`` threads,
    and each Ray task to one (it holds one CPU); :mod:`dponline.threads` says how to override.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    positions = list(range(len(tasks))) if order is None else list(order)
    if sorted(positions) != list(range(len(tasks))):
        raise ValueError(f"order must be a permutation of the {len(tasks)} task positions")
    results: dict[int, Any] = {}
    seen: dict[tuple[type, str], int] = {}
    with Progress(len(tasks), enabled=progress) as bar:

        def finished(i: int, outcome: tuple[Any, list[tuple[type, str]]]) -> None:
            result, raised = outcome
            for key in dict.fromkeys(raised):
                seen[key] = seen.get(key, 0) + 1
            results[i] = result
            bar.update()
            if on_result is not None:
                on_result(tasks[i], result, len(results))

        try:
            if backend == "serial" or len(tasks) <= 1:
                for i in positions:
                    finished(i, _warned(fn, tasks[i]))
            elif backend == "local":
                n = workers or min(len(tasks), cpu_count())
                limits = worker_limits(n)  # W workers x their threads <= the cores
                # a multiprocessing pool, not concurrent.futures: on Ctrl-C leaving the block
                # terminates the workers at once instead of letting them finish their tasks
                with multiprocessing.get_context().Pool(
                    n, initializer=_init_worker, initargs=(limits,)
                ) as pool:
                    items = [(i, tasks[i]) for i in positions]
                    try:
                        for i, result in pool.imap_unordered(
                            functools.partial(_indexed, fn), items
                        ):
                            finished(i, result)
                    except KeyboardInterrupt:
                        # terminate() stops the worker handler (no replacements), takes the
                        # task queue's lock and only then kills the workers; killing them
                        # first can leave that lock held by a dead worker, and terminate()
                        # then waits for it forever (seen: 1 run in 6 of the interrupt test)
                        pool.terminate()
                        raise
            else:
                _run_ray([tasks[i] for i in positions], positions, fn, finished)
        except KeyboardInterrupt:
            raise Interrupted(len(results), len(tasks)) from None
        finally:
            _warn_once(seen, len(tasks))
    return [results[i] for i in range(len(tasks))]


def check_distinct_rows(tasks: Sequence[Task]) -> None:
    """Refuse two tasks whose rows would share (environment, label, calibration, epsilon): the
    table could not tell them apart and the summary would average one into the other (one
    environment at two horizons, a learner tuned and untuned, with their default labels)."""
    seen: dict[tuple[Any, ...], Task] = {}
    for task in tasks:
        env = task.environment_label or task.environment
        row = (env, task.display_label, task.calibration, task.epsilon)
        if row in seen:
            first = seen[row]
            raise ValueError(
                f"tasks {first.task_index} and {task.task_index} would write rows under one "
                f"name (environment {env!r}, learner {task.display_label!r}, calibration "
                f"{task.calibration!r}, epsilon {task.epsilon!r}) and the summary would merge "
                "them: give the learners or the environments distinct labels ('label = ...')"
            )
        seen[row] = task


def run_sweep(
    tasks: Sequence[Task],
    *,
    backend: str = "local",
    workers: int | None = None,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
    order: Sequence[int] | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run every task and return one tidy table, ordered by task and then round and seed
    (on :func:`execute_tasks`; ``backend`` and ``order``, the positions in the order to
    submit them, as there)."""
    indices = [t.task_index for t in tasks]
    if len(set(indices)) != len(indices):
        raise ValueError(
            "tasks must have distinct task_index values (renumber tasks combined "
            "from several make_tasks calls)"
        )
    check_distinct_rows(tasks)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if checkpoint_dir is not None:
        Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
        warn_legacy_pickles(checkpoint_dir)
    run = functools.partial(
        _run_task, checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every
    )
    frames = execute_tasks(
        tasks, run, backend=backend, workers=workers, order=order, progress=progress
    )
    return pd.concat(frames, ignore_index=True)


def _call(fn: Callable[[Any], Any], task: Any, limits: WorkerLimits | None = None) -> Any:
    """``fn(task)`` in a Ray worker, its threads bounded to ``limits`` first, with the warnings
    it raised (:func:`_warned`)."""
    if limits is not None:
        apply_worker_limits(limits)
    return _warned(fn, task)


def _run_ray(
    tasks: Sequence[Any],
    positions: Sequence[int],
    fn: Callable[[Any], Any],
    finished: Callable[[int, Any], None],
) -> None:
    try:
        import ray
    except ImportError:
        raise ValueError("backend 'ray' needs Ray: pip install 'dponline[ray]'") from None
    started_here = False
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        started_here = True
    try:
        limits = worker_limits(1, cores=1)  # a Ray task holds one CPU (Ray's default)
        remote = ray.remote(_call)  # Ray takes functions, not partials: call fn inside
        refs = {
            remote.remote(fn, task, limits): i for task, i in zip(tasks, positions, strict=True)
        }
        pending = list(refs)
        while pending:
            try:
                ready, pending = ray.wait(pending, num_returns=1)
            except KeyboardInterrupt:
                for ref in pending:
                    ray.cancel(ref, force=True)
                raise
            for ref in ready:
                finished(refs[ref], ray.get(ref))
    finally:
        if started_here:
            ray.shutdown()
