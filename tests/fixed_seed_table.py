"""The fixed-seed table: every registered learner, every test case, every calibration, run with
fixed seeds two ways, recorded so that a restructuring can show it changed no number.

* ``runner``: one task through :func:`dponline.experiments.runner.run_task` (the budget built
  from the runner's keywords, the fast path where the stream allows it): cumulative loss,
  regret and final loss of every seed and round, and the epsilon the learner proves;
* ``played``: the test case's environment and learner (:func:`dponline.checks.build_case`)
  played round by round (:func:`dponline.checks.play`): every action, or what the entry says
  the learner releases;
* ``han2024-quick``: every cell of ``dponline reproduce han2024 --quick`` (each run's
  suboptimality, the chosen scale and the proven epsilon).

``python -m tests.fixed_seed_table --write`` records the table in
``tests/data/fixed_seed_table.json.gz``; ``tests/test_fixed_seed_table.py`` recomputes it and
compares. A change meant to move a number rewrites the file in the same commit and says why.
"""

from __future__ import annotations

import argparse
import gzip
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from dponline import registry
from dponline.checks import build_case, play
from dponline.experiments.han2024 import reproduce_han2024
from dponline.experiments.runner import Task, run_task
from dponline.privacy.guarantee import PrivacyWarning

PATH = Path(__file__).parent / "data" / "fixed_seed_table.json.gz"
SEEDS = 3


def _settings(entry: registry.LearnerEntry) -> list[str]:
    return list(entry.calibrations) if entry.private else ["none"]


def _key(entry: registry.LearnerEntry, index: int, calibration: str) -> str:
    return f"{entry.name}|{index}|{calibration}"


def row(name: str, index: int, calibration: str) -> dict[str, Any]:
    """The recorded numbers of one learner, test case and calibration."""
    entry = registry.learners()[name]
    case = entry.test_cases[index]
    task = Task(
        learner=name,
        environment=case.environment,
        epsilon=case.epsilon if entry.private else None,
        calibration=calibration,
        seeds=SEEDS,
        seed_entropy=20261125,
        task_index=index,
        horizon=case.horizon,
        learner_options=dict(case.learner_options),
        environment_options=dict(case.environment_options),
        allow_weaker=calibration == "paper",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        frame = run_task(task)
        env, learner = build_case(
            entry,
            case,
            replicas=SEEDS,
            calibration=calibration if entry.private else "tight",
        )
        played = play(env, learner, range(case.horizon), case.release)
    return {
        "cumulative_loss": frame["cumulative_loss"].tolist(),
        "regret": frame["regret"].tolist(),
        "final_loss": frame["final_loss"].tolist(),
        "proven_epsilon": float(frame["proven_epsilon"].iloc[0]),
        "played": np.asarray(np.stack(played), dtype=float).ravel().tolist(),
    }


def keys() -> list[tuple[str, int, str]]:
    """(learner, test case index, calibration) of every recorded row."""
    return [
        (entry.name, i, cal)
        for entry in registry.learners().values()
        for i in range(len(entry.test_cases))
        for cal in _settings(entry)
    ]


HAN2024_QUICK = "han2024-quick"


def han2024_quick() -> dict[str, Any]:
    """The quick reproduction's cells, one serial process, nothing stored."""
    result = reproduce_han2024(quick=True, out=None, workers=1)
    return {
        f"{c['algorithm']}|{c['calibration']}|p={c['p']}|d={c['d']}|T={c['T']}": {
            "subopt_runs": c["subopt_runs"],
            "scale": c["scale"],
            "proven_epsilon": c.get("proven_epsilon"),
        }
        for c in result["cells"]
    }


def compute() -> dict[str, Any]:
    table: dict[str, Any] = {f"{n}|{i}|{c}": row(n, i, c) for n, i, c in keys()}
    table[HAN2024_QUICK] = han2024_quick()
    return table


def load() -> dict[str, Any]:
    with gzip.open(PATH, "rt") as fh:
        return json.load(fh)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"record the table in {PATH}")
    args = parser.parse_args()
    table = compute()
    if args.write:
        PATH.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(PATH, "wt") as fh:
            json.dump(table, fh, sort_keys=True)
        print(f"wrote {len(table)} rows to {PATH}")
    else:
        print(f"{len(table)} rows computed (--write records them)")


if __name__ == "__main__":
    main()
