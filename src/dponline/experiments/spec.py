"""Experiment specs in TOML (``dponline run SPEC.toml``), validated field by field.

    name = "experts on NYSE"
    horizon = 2000                  # optional for real data (default: all of it)
    seeds = 20
    seed = 7
    epsilons = [0.5, 1.0, 4.0]
    calibrations = ["tight", "paper"]
    backend = "local"               # local | serial | ray
    record_every = 10               # default: about 1,000 recorded rounds per curve
    checkpoint_every = 500
    allow_weaker_paper = true       # run paper formulas that prove less (reported per row)

    [[environments]]                # or a single [environment] table
    name = "stocks"
    options = { dataset = "nyse_o" }
    # horizon = 1000                # this environment's own horizon (else the top-level one)
    # learners = ["dp-ftrl"]        # only these learners (labels or names) run here

    [[learners]]
    name = "dp-ftrl"
    options = { noise = "laplace" }

    [[learners]]
    name = "ftrl"

An environment may name the learners that run on it (``learners = ["dp-ftrl"]``, by label or
name; default: every learner that fits it). A learner may ``tune`` options on the validation
set of an environment that holds one out (``tune = { step_scale = [0.3, 1.0, 3.0] }``; see
:attr:`dponline.experiments.runner.Task.tune`).

Every error names the field and what was expected.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dponline.environments.catalogue import ENVIRONMENTS, check_environment_options
from dponline.environments.own_data import PATH_OPTIONS, file_digest
from dponline.experiments.runner import (
    BACKENDS,
    SEEDINGS,
    Task,
    check_distinct_rows,
    make_tasks,
)
from dponline.registry import check_options, learners, load_modules
from dponline.spelling import did_you_mean

__all__ = ["RECORDED_ROUNDS", "ExperimentSpec", "SpecError", "load_spec"]

#: rounds recorded per curve, about, when a spec sets no ``record_every``
RECORDED_ROUNDS = 1000


class SpecError(ValueError):
    """A spec field is missing or has the wrong type or value."""


@dataclass(frozen=True)
class ExperimentSpec:
    name: str
    environments: list[dict[str, Any]]
    learners: list[dict[str, Any]]
    epsilons: list[float]
    calibrations: list[str] = field(default_factory=lambda: ["tight"])
    seeds: int = 10
    seed: int = 0
    horizon: int | None = None
    backend: str = "local"
    workers: int | None = None
    #: Record every n-th round (and the last); ``None``: max(1, T // RECORDED_ROUNDS) for each
    #: task's horizon T, about a thousand points a curve (every round filled 113 MB of table
    #: and checkpoints for ten seeds of five learners over 5,000 rounds).
    record_every: int | None = None
    checkpoint_every: int = 1000
    allow_weaker_paper: bool = False
    #: How tasks seed their environments (:attr:`~dponline.experiments.runner.Task.seeding`):
    #: "sweep" (each environment from its name and options), "spawn" (every environment
    #: from the seed itself, so two views of one stream hold the same data) or "stable" (as
    #: "sweep", each learner from its task rather than its position in the spec).
    seeding: str = "sweep"
    #: Add the learners' switch counts to the table (a ``switches`` column).
    count_switches: bool = False
    #: What the spec's ``modules`` field imports before its learners are read (module names and
    #: the absolute paths of .py files, :func:`~dponline.registry.load_modules`): the spec's
    #: own learners, registered there. Every task imports them again in its worker.
    modules: tuple[str, ...] = ()
    #: What :meth:`overridden` changed beyond the fields it was given, one sentence each (the
    #: CLI prints them): environments a new horizon made the same, run once.
    notes: tuple[str, ...] = ()

    def overridden(self, **fields: Any) -> ExperimentSpec:
        """This spec with top-level fields replaced (``dponline run --seeds/--horizon``); a new
        ``horizon`` replaces every environment's own horizon too, and environments it makes
        the same (han2024's T = 1000 and T = 2000 of one p and d) are run once, under the
        first one's label (``notes`` says so)."""
        return _overridden(self, **fields)

    def captions(self) -> dict[str, str]:
        """Environment label -> the report's caption: the spec's ``caption`` (what the
        environment is and what the reader should see) where it gives one, else the
        environment's catalogue description."""
        out = {}
        for env in self.environments:
            label = env.get("label") or env["name"]
            text = env.get("caption") or ENVIRONMENTS[env["name"]].description
            out[label] = text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
        return out

    def tasks(self) -> list[Task]:
        """Every learner on every environment that fits it: the environment gives the feedback
        the learner observes and accepts the actions it plays
        (:meth:`~dponline.registry.LearnerEntry.runs_in`)."""
        catalogue = learners()
        used: set[int] = set()
        tasks: list[Task] = []
        unfit: list[str] = []  # environments no learner runs on (reported after the learners)
        for i, env in enumerate(self.environments):
            env_entry = ENVIRONMENTS[env["name"]]
            horizon = env.get("horizon", self.horizon)
            if horizon is None:
                horizon = _has_own_horizon(env_entry, env.get("options", {}), i)
            space = env_entry.action_space_for(env.get("options", {}))
            fitting = [
                i
                for i, lr in enumerate(self.learners)
                if catalogue[lr["name"]].runs_in(env_entry.feedback_kind, space)
                and (env.get("learners") is None or _named(lr, env["learners"]))
            ]
            used.update(fitting)
            if env_entry.advice_given(env.get("options", {})):
                for j in fitting:  # the learner would run other experts than its regret's
                    if "experts" in self.learners[j].get("options", {}):
                        raise SpecError(
                            f"spec field 'learners[{j}].options': experts = "
                            f"{self.learners[j]['options']['experts']!r} beside environment "
                            f"{env.get('label') or env['name']!r}, which gives its own experts' "
                            "advice (its regret is against them): drop the option, or give that "
                            "environment a 'learners' list without this learner"
                        )
            if not fitting:
                named = env.get("learners")
                unfit.append(
                    f"spec field 'environments[{i}]': no learner of the spec runs on "
                    f"{env.get('label') or env['name']!r} (it gives "
                    f"{env_entry.feedback_kind.value!r} feedback and takes {space!r} actions)"
                    + (f"; its 'learners' list names {named}" if named is not None else "")
                )
                continue
            for task in make_tasks(
                learners=[self.learners[i] for i in fitting],
                environment=env["name"],
                epsilons=self.epsilons,
                calibrations=self.calibrations,
                seeds=self.seeds,
                seed=self.seed,
                horizon=env.get("horizon", self.horizon),
                environment_options=env.get("options", {}),
                record_every=self.record_every or max(1, horizon // RECORDED_ROUNDS),
                environment_label=env.get("label", ""),
                allow_weaker_paper=self.allow_weaker_paper,
            ):
                tasks.append(
                    Task(
                        **{
                            **task.__dict__,
                            "task_index": len(tasks),
                            "seeding": self.seeding,
                            "count_switches": self.count_switches,
                            "modules": self.modules,
                        }
                    )
                )
        for i, lr in enumerate(self.learners):
            if i not in used:
                entry = catalogue[lr["name"]]
                raise SpecError(
                    f"spec field 'learners[{i}]': learner {lr['name']!r} observes "
                    f"{entry.feedback_kind.value!r} and plays {list(entry.action_spaces)}; the "
                    "spec has no environment that gives that feedback, accepts those actions "
                    "and runs it (an environment's 'learners' list may leave it out)"
                )
        if unfit:
            raise SpecError(unfit[0])
        try:
            check_distinct_rows(tasks)
        except ValueError as exc:
            raise SpecError(f"spec: {exc}") from None
        return tasks


def _has_own_horizon(entry: Any, options: Mapping[str, Any], i: int) -> int:
    """The horizon of an environment given none: its own (real data: all of it), else refused
    in one line naming the field rather than a traceback from the builder."""
    try:
        built = entry.build(None, np.random.default_rng(0), **options)
        own = built.horizon
    except (TypeError, ValueError):
        own = None
    if own is None:
        raise SpecError(
            f"spec field 'environments[{i}].horizon': environment {entry.name!r} needs a "
            "horizon (only real data has one of its own, all of it); set 'horizon' in the "
            "spec or pass --horizon"
        )
    return int(own)


def _overridden(spec: ExperimentSpec, **fields: Any) -> ExperimentSpec:
    """``spec`` with top-level fields replaced; a new ``horizon`` replaces every
    environment's own horizon as well (a smaller look at the same spec), and a label the spec
    gave an environment that names a horizon ("p=1.5, T=200, d=5") says the one it now runs
    at."""
    envs = spec.environments
    notes = list(spec.notes)
    new = fields.get("horizon")
    if new is not None:
        envs = []
        firsts: dict[str, dict[str, Any]] = {}  # what an environment runs -> its first label
        for e in spec.environments:
            env = {k: v for k, v in e.items() if k != "horizon"}
            what = {k: v for k, v in env.items() if k not in ("label", "caption")}
            runs = json.dumps(what, sort_keys=True, default=repr)
            if runs in firsts:  # the same data and learners as an earlier one: run once
                first = firsts[runs]
                notes.append(
                    f"at T = {new}, environment {_env_label(e)!r} is the same as "
                    f"{_env_label(first)!r} and is run once, under that label"
                )
                continue
            firsts[runs] = e
            names_t = re.search(r"\bT\s*=\s*[\d,]+", str(env.get("label", "")))
            if names_t and e.get("horizon", spec.horizon) != new:
                env["label"] = f"{env['label']} (run at T = {new})"
            envs.append(env)
    return replace(spec, environments=envs, notes=tuple(notes), **fields)


def _env_label(env: Mapping[str, Any]) -> str:
    return str(env.get("label") or env["name"])


def _named(learner: Mapping[str, Any], names: list[str]) -> bool:
    """Whether an environment's ``learners`` list names this learner (by label or name)."""
    return learner["name"] in names or (bool(learner.get("label")) and learner["label"] in names)


def _expect(cond: bool, name: str, what: str, value: Any) -> None:
    if not cond:
        raise SpecError(f"spec field {name!r}: expected {what}, got {value!r}")


def _int(data: dict, name: str, default: int | None, minimum: int = 1) -> int | None:
    v = data.get(name, default)
    if v is None:
        return None
    _expect(
        isinstance(v, int) and not isinstance(v, bool) and v >= minimum,
        name,
        f"an integer >= {minimum}",
        v,
    )
    return int(v)


def _entry(
    raw: Any, name: str, registry: Mapping[str, Any], extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    _expect(isinstance(raw, dict), name, "a table with 'name' (and optional 'options')", raw)
    _expect("name" in raw, f"{name}.name", f"one of {sorted(registry)}", None)
    if raw["name"] not in registry:
        raise SpecError(
            f"spec field '{name}.name': unknown {raw['name']!r}"
            f"{did_you_mean(str(raw['name']), registry)}; expected one of {sorted(registry)}"
        )
    opts = raw.get("options", {})
    _expect(isinstance(opts, dict), f"{name}.options", "a table", opts)
    keys = ("name", "options", "label", *extra)
    unknown = set(raw) - set(keys)
    _expect(not unknown, name, f"only the keys {', '.join(keys)}", sorted(unknown))
    label = raw.get("label", "")
    _expect(isinstance(label, str), f"{name}.label", "a string", label)
    out = {"name": raw["name"], "options": dict(opts), "label": label}
    if "tune" in raw:
        tune = raw["tune"]
        _expect(
            isinstance(tune, dict) and tune,
            f"{name}.tune",
            "a table of option = [candidate values]",
            tune,
        )
        for k, values in tune.items():
            _expect(
                isinstance(values, list) and values,
                f"{name}.tune.{k}",
                "a non-empty list of candidate values",
                values,
            )
            _expect(k not in opts, f"{name}.tune.{k}", "an option not also fixed in options", k)
        out["tune"] = {k: list(v) for k, v in tune.items()}
    if "calibrations" in raw:
        cals = raw["calibrations"]
        _expect(
            isinstance(cals, list) and cals and all(c in ("paper", "tight") for c in cals),
            f"{name}.calibrations",
            'a non-empty list of "paper" and "tight" (this learner runs only these)',
            cals,
        )
        out["calibrations"] = list(cals)
    if "caption" in raw:
        _expect(isinstance(raw["caption"], str), f"{name}.caption", "a string", raw["caption"])
        out["caption"] = raw["caption"]
    if "horizon" in raw:
        h = raw["horizon"]
        _expect(
            isinstance(h, int) and not isinstance(h, bool) and h >= 1,
            f"{name}.horizon",
            "an integer >= 1",
            h,
        )
        out["horizon"] = int(h)
    if "learners" in raw:
        names = raw["learners"]
        _expect(
            isinstance(names, list) and names and all(isinstance(n, str) for n in names),
            f"{name}.learners",
            "a non-empty list of learner labels or names",
            names,
        )
        out["learners"] = list(names)
    return out


def _files_recorded(name: str, options: dict[str, Any], base: str | Path | None) -> dict[str, Any]:
    """An environment's options with each file it reads (:data:`PATH_OPTIONS`) made absolute
    (a relative path is the spec folder's, ``base``) and its SHA-256 recorded beside it, so
    that the task's key, and a run's read-back of finished tasks, follow the file's contents;
    a digest the spec pins must be the file's."""
    out = dict(options)
    for option, digest_option in PATH_OPTIONS.get(name, ()):
        if option not in out:
            if digest_option in out:
                raise ValueError(f"{digest_option} is given without the file {option!r}")
            continue
        raw = out[option]
        if not isinstance(raw, str) or not raw:
            raise ValueError(f"{option} must name a file (a string), got {raw!r}")
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = Path(base if base is not None else ".") / path
        if not path.is_file():
            raise ValueError(f"{option}: no file {str(path)!r}")
        digest = file_digest(path)
        pinned = out.get(digest_option)
        if pinned is not None and pinned != digest:
            raise ValueError(
                f"{option}: {str(path)!r} has SHA-256 {digest}, not the {digest_option} the spec "
                f"pins ({pinned}): the file changed"
            )
        out[option], out[digest_option] = str(path.resolve()), digest
    return out


def parse_spec(
    data: dict[str, Any], default_name: str = "experiment", base: str | Path | None = None
) -> ExperimentSpec:
    """Validate a parsed TOML document; ``base``: the folder its ``modules`` paths and its
    environments' files are relative to (the spec file's; default the working directory)."""
    known = {
        "name",
        "modules",
        "environment",
        "environments",
        "learners",
        "epsilons",
        "calibrations",
        "seeds",
        "seed",
        "horizon",
        "backend",
        "workers",
        "record_every",
        "checkpoint_every",
        "allow_weaker_paper",
        "seeding",
        "count_switches",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise SpecError(
            f"spec field {unknown[0]!r} (top level): unknown{did_you_mean(unknown[0], known)}; "
            f"the fields are {sorted(known)} (docs/experiments.md, 'Spec fields')"
        )
    raw_modules = data.get("modules", [])
    _expect(
        isinstance(raw_modules, list) and all(isinstance(m, str) and m for m in raw_modules),
        "modules",
        "a list of module names or .py files (relative to the spec) that register learners",
        raw_modules,
    )
    try:  # before the learners' names are read: the modules register some of them
        modules = tuple(load_modules(raw_modules, base))
    except (ValueError, ImportError) as exc:  # a module's own error is chained
        raise SpecError(f"spec field 'modules': {exc}") from exc
    if "environments" in data:
        _expect(
            "environment" not in data,
            "environment",
            "absent when the spec has [[environments]] (move it into that list)",
            data.get("environment"),
        )
        envs = data["environments"]
        _expect(
            isinstance(envs, list) and envs, "environments", "a non-empty array of tables", envs
        )
    else:
        _expect("environment" in data, "environment", "a table naming the environment", None)
        envs = [data["environment"]]
    environments = [
        _entry(e, f"environments[{i}]", ENVIRONMENTS, extra=("learners", "horizon", "caption"))
        for i, e in enumerate(envs)
    ]
    for i, env in enumerate(environments):
        try:
            ENVIRONMENTS[env["name"]].action_space_for(env["options"])
            check_environment_options(env["name"], env["options"])
            env["options"] = _files_recorded(env["name"], env["options"], base)
        except ValueError as exc:
            raise SpecError(f"spec field 'environments[{i}].options': {exc}") from None
    learners_raw = data.get("learners")
    _expect(
        isinstance(learners_raw, list) and learners_raw,
        "learners",
        "a non-empty array of tables",
        learners_raw,
    )
    chosen = [
        _entry(x, f"learners[{i}]", learners(), extra=("tune", "calibrations"))
        for i, x in enumerate(learners_raw)
    ]
    for i, lr in enumerate(chosen):  # the options' names now, not when a task is built
        for part in ("options", "tune"):
            run_level = [k for k in ("replicas", "rng") if k in lr.get(part, {})]
            _expect(
                not run_level,
                f"learners[{i}].{part}",
                "the learner's options only (its replicas and their seeds are the spec's "
                "seeds and seed)",
                run_level,
            )
            try:
                check_options(learners()[lr["name"]], lr.get(part, {}))
            except ValueError as exc:
                raise SpecError(f"spec field 'learners[{i}].{part}': {exc}") from None
    known_learners = [lr["label"] or lr["name"] for lr in chosen]
    for i, env in enumerate(environments):
        for who in env.get("learners", []):
            _expect(
                any(_named(lr, [who]) for lr in chosen),
                f"environments[{i}].learners",
                f"labels or names of the spec's learners {known_learners}",
                who,
            )
    eps = data.get("epsilons", [1.0])
    _expect(
        isinstance(eps, list)
        and eps
        and all(isinstance(e, (int, float)) and not isinstance(e, bool) and e > 0 for e in eps),
        "epsilons",
        "a non-empty list of positive numbers",
        eps,
    )
    cals = data.get("calibrations", ["tight"])
    _expect(
        isinstance(cals, list) and cals and all(c in ("tight", "paper") for c in cals),
        "calibrations",
        "a non-empty list drawn from ['tight', 'paper']",
        cals,
    )
    backend = data.get("backend", "local")
    _expect(backend in BACKENDS, "backend", f"one of {list(BACKENDS)}", backend)
    allow_weaker = data.get("allow_weaker_paper", False)
    _expect(isinstance(allow_weaker, bool), "allow_weaker_paper", "true or false", allow_weaker)
    seeding = data.get("seeding", "sweep")
    _expect(seeding in SEEDINGS, "seeding", "'sweep', 'spawn' or 'stable'", seeding)
    count_switches = data.get("count_switches", False)
    _expect(isinstance(count_switches, bool), "count_switches", "true or false", count_switches)
    name = data.get("name", default_name)
    _expect(isinstance(name, str), "name", "a string", name)
    return ExperimentSpec(
        name=name,
        environments=environments,
        learners=chosen,
        epsilons=[float(e) for e in eps],
        calibrations=list(cals),
        seeds=_int(data, "seeds", 10) or 10,
        seed=_int(data, "seed", 0, minimum=0) or 0,
        horizon=_int(data, "horizon", None),
        backend=backend,
        workers=_int(data, "workers", None),
        record_every=_int(data, "record_every", None),
        checkpoint_every=_int(data, "checkpoint_every", 1000) or 1000,
        allow_weaker_paper=allow_weaker,
        seeding=seeding,
        count_switches=count_switches,
        modules=modules,
    )


def packaged_specs() -> dict[str, Path]:
    """The specs that ship inside the package, by name (the file's stem): ``han2024``,
    ``han2024_quick``, ``side_by_side``."""
    from importlib.resources import files

    folder = Path(str(files("dponline.experiments") / "specs"))
    return {p.stem: p for p in sorted(folder.glob("*.toml"))}


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate a TOML spec file; a name that is no file but names a packaged spec
    (:func:`packaged_specs`, with or without ``.toml``) reads that spec."""
    p = Path(path)
    if not p.exists():
        packaged = packaged_specs()
        name = p.name[: -len(".toml")] if p.name.endswith(".toml") else p.name
        if p.parent == Path(".") and name in packaged:
            p = packaged[name]
    try:
        data = tomllib.loads(p.read_text())
    except IsADirectoryError:
        raise SpecError(f"spec {str(p)!r} is a folder; give a TOML spec file") from None
    except FileNotFoundError:
        raise SpecError(
            f"spec file {str(p)!r} does not exist (packaged specs, by name: "
            f"{', '.join(packaged_specs())})"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec file {str(p)!r} is not valid TOML: {exc}") from None
    return parse_spec(data, default_name=p.stem, base=p.parent)
