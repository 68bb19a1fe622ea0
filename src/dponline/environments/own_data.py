"""Environments over a user's own loss sequence, read from a file a spec names.

A researcher's adversary (a switching or drifting loss sequence, a logged stream, experts'
advice) is an array; a spec names its file and the runner plays every learner of the spec on
it, as on the catalogue's own environments:

* ``bandit_losses``: ``path`` holds the losses (T, K) in [0, 1] of an oblivious adversarial
  bandit (:class:`~dponline.environments.bandits.BanditEnvironment`); with ``advice`` naming a
  file of the experts' advice (T, N, K), a bandit with expert advice
  (:class:`~dponline.environments.expert_advice.ExpertAdviceBandit`, regret against the best
  expert).
* ``expert_losses``: ``path`` holds the losses (T, N) in [0, 1] of N experts, seen in full
  every round (:class:`~dponline.environments.experts.ExpertsEnvironment`).

**Files.** ``.npy`` (one array, no pickles) or text (``.csv``, ``.txt``: comma- or
whitespace-separated rows; a first line that is not all numbers is taken as a header, and
``header = true`` says a header of numbers is one, as pandas writes ``0,1,2``); advice only as
``.npy`` (three axes). A spec's relative path is read from the spec's folder.

**What a run remembers.** A spec's run reads the tasks it has finished back from its results
folder, keyed by the options. So that an edited file is not mistaken for the one measured,
the spec records each file's SHA-256 beside its path (``sha256``, ``advice_sha256``) when it is
read, and the environment refuses a file whose digest differs (a spec may pin the digests
itself). The losses are data the learners' guarantees protect; the advice is taken as public
and fixed in advance, as the expert-advice learners' guarantees assume.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from dponline.environments.bandits import BanditEnvironment
from dponline.environments.expert_advice import ExpertAdviceBandit
from dponline.environments.experts import ExpertsEnvironment

__all__ = [
    "PATH_OPTIONS",
    "bandit_losses",
    "expert_losses",
    "file_digest",
    "horizon_cut",
    "read_array",
]

#: the options of each environment here that name a file, with the option holding its digest
PATH_OPTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "bandit_losses": (("path", "sha256"), ("advice", "advice_sha256")),
    "expert_losses": (("path", "sha256"),),
}

_TEXT_SUFFIXES = (".csv", ".txt", ".tsv")


def file_digest(path: str | Path) -> str:
    """The SHA-256 of the file's bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _text_rows(path: Path, header: bool | None) -> np.ndarray:
    with open(path, encoding="utf-8-sig") as fh:  # a byte-order mark is not a header
        lines = [line for line in fh if line.strip()]
    if not lines:
        raise ValueError(f"{path}: the file holds no rows")
    delimiter = "," if "," in lines[0] else None
    if header is None:  # a first line of numbers is data: a header of numbers needs header=True
        try:
            [float(token) for token in lines[0].replace(",", " ").split()]
        except ValueError:
            header = True
    if header:
        lines = lines[1:]
    try:
        rows = np.loadtxt(lines, delimiter=delimiter, ndmin=2, dtype=float)
    except ValueError as exc:
        raise ValueError(
            f"{path}: not a table of numbers ({exc}); a table written by pandas' to_csv with its "
            "default index=True starts each line with the row's number: write it with "
            "index=False"
        ) from None
    if rows.shape[0] > 1 and rows.shape[1] > 1 and np.array_equal(rows[:, 0], np.arange(len(rows))):
        raise ValueError(
            f"{path}: the first column counts the rows 0, 1, 2, ... (pandas' index): write the "
            "table with to_csv(path, index=False)"
        )
    return rows


def read_array(
    path: str | Path,
    ndim: int,
    what: str,
    sha256: str | None = None,
    header: bool | None = None,
) -> np.ndarray:
    """The array of ``ndim`` axes in the file ``path`` (``.npy``, or for two axes a text table
    whose first line is a header when ``header`` is True, data when False, and by default a
    header only if it is not all numbers), refused with a ValueError naming the file when it is
    missing, of another shape, not finite, or (``sha256`` given) not the file whose digest that
    is."""
    if header is not None and not isinstance(header, bool):
        raise ValueError(f"{what}: header must be true, false or absent, got {header!r}")
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what}: no file {str(p)!r}")
    if sha256 is not None and file_digest(p) != sha256:
        raise ValueError(
            f"{what}: {str(p)!r} is not the file the spec recorded (its SHA-256 differs: the file "
            "changed since); give the new file's digest, or none, to run on it"
        )
    if p.suffix == ".npy":
        if header is not None:
            raise ValueError(f"{what}: header applies to a text table, not {str(p)!r}")
        try:
            array = np.load(p, allow_pickle=False)
        except ValueError as exc:
            raise ValueError(f"{what}: {str(p)!r} is not a numeric .npy array ({exc})") from None
    elif p.suffix in _TEXT_SUFFIXES and ndim == 2:
        array = _text_rows(p, header)
    else:
        kinds = ".npy" if ndim != 2 else ".npy, .csv, .txt or .tsv"
        raise ValueError(f"{what}: {str(p)!r} must be a {kinds} file")
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError(f"{what}: {str(p)!r} holds {array.dtype} values, not real numbers")
    array = np.asarray(array, dtype=float)
    if array.ndim != ndim:
        raise ValueError(f"{what}: {str(p)!r} holds an array of shape {array.shape}, {ndim} axes")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what}: {str(p)!r} holds NaN or infinite values")
    return array


def _header_hint(losses: np.ndarray, path: str, header: bool | None) -> None:
    """A text table whose first row alone lies outside [0, 1] was most likely a header of
    numbers read as data: say so (the environment would only name the range)."""
    first, rest = losses[0], losses[1:]
    outside = (first < 0).any() or (first > 1).any()
    if header is None and Path(path).suffix != ".npy" and outside and len(rest):
        if (rest >= 0).all() and (rest <= 1).all():
            raise ValueError(
                f"{path!r}: the first row {first.tolist()} lies outside [0, 1] and the others "
                "inside: a header of numbers (pandas writes 0,1,2)? give header = true"
            )


def horizon_cut(array: np.ndarray, horizon: int | None, source: str = "of the data") -> np.ndarray:
    """The first ``horizon`` rounds of ``array`` (all of them for ``None``); a horizon past its
    rounds is refused, naming ``source``."""
    if horizon is None:
        return array
    if horizon > len(array):
        raise ValueError(f"horizon {horizon} exceeds the {len(array)} rounds {source}")
    return array[:horizon]


def _cut(array: np.ndarray, horizon: int | None, path: str) -> np.ndarray:
    return horizon_cut(array, horizon, f"in {path!r}")


def bandit_losses(
    horizon: int | None,
    rng: Any,
    path: str,
    advice: str | None = None,
    sha256: str | None = None,
    advice_sha256: str | None = None,
    header: bool | None = None,
) -> BanditEnvironment:
    """The adversarial bandit over the losses (T, K) in ``path`` (module docstring), with the
    experts' advice (T, N, K) in ``advice`` when given; the first ``horizon`` rounds (all of
    them for ``None``). ``rng`` is unused: the sequence is fixed."""
    losses = _cut(read_array(path, 2, "bandit_losses path", sha256, header), horizon, path)
    _header_hint(losses, path, header)
    name = f"bandit_losses:{Path(path).name}"
    if advice is None:
        if advice_sha256 is not None:
            raise ValueError("bandit_losses: advice_sha256 is given without an advice file")
        return BanditEnvironment(losses, name=name)
    table = _cut(read_array(advice, 3, "bandit_losses advice", advice_sha256), horizon, advice)
    if len(table) < len(losses):
        raise ValueError(
            f"bandit_losses: the advice covers {len(table)} rounds, the losses {len(losses)}"
        )
    return ExpertAdviceBandit(losses, name=name + "+advice", advice=table[: len(losses)])


def expert_losses(
    horizon: int | None,
    rng: Any,
    path: str,
    sha256: str | None = None,
    header: bool | None = None,
) -> ExpertsEnvironment:
    """Full-information experts over the losses (T, N) in ``path`` (module docstring)."""
    losses = _cut(read_array(path, 2, "expert_losses path", sha256, header), horizon, path)
    _header_hint(losses, path, header)
    return ExpertsEnvironment(losses, name=f"expert_losses:{Path(path).name}")
