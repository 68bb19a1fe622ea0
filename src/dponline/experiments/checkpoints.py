"""Checkpoints and finished results on disk, without pickle.

Each file is one ``.npz`` archive written by :func:`numpy.savez` (a results table by
:func:`numpy.savez_compressed`) and read back with
``numpy.load(..., allow_pickle=False)``, so reading a file can never run code:

* ``header``: a ``uint8`` array holding UTF-8 JSON
  ``{"format": "dponline-checkpoint", "format_version": 1, "kind": "checkpoint" | "result",
  "dponline_version": ..., "task": <task key>, "body": ...}``;
* ``a0``, ``a1``, ...: the numpy arrays and numpy scalars the body refers to.

The body encodes a state (:func:`save_state`) as JSON: dicts with string keys, lists, ``str``,
``int`` (any size: PCG64's 128-bit state is exact), finite ``float``, ``bool`` and ``None`` are
written as themselves; everything else is an object tagged by the key ``"__dponline__"``:

* ``{"__dponline__": "ndarray", "key": "a0"}`` and ``{"__dponline__": "scalar", "key": "a1"}``
  (a numpy scalar, stored as a 0-d array: dtype kept);
* ``{"__dponline__": "float", "value": "nan" | "inf" | "-inf"}``;
* ``{"__dponline__": "tuple", "items": [...]}``: tuples come back as tuples, not lists, so a
  loaded state compares equal (``==``) to the saved one, configuration dicts included;
* ``{"__dponline__": "dict", "items": [[key, value], ...]}``: a dict whose keys are not all
  strings, or that has a key ``"__dponline__"`` itself.

Types are matched exactly (a subclass of ``str``, ``int``, ``float``, ``list``, ``tuple``,
``dict`` or ``ndarray`` other than a numpy scalar, an object array or any other value is a
:class:`TypeError` naming where it sits), so a state loads back with the same types and bits;
an array referenced twice is stored, and loaded, as two arrays.

A result table (:func:`save_frame`) is stored column by column: numeric and boolean columns as
their numpy arrays, string columns as unicode arrays, with each column's pandas dtype in the
body; it reads back equal to the saved frame, dtypes included.

Every file is stamped with the library version and the task's key; :func:`load_state` and
:func:`load_frame` refuse another version, another task, another kind of file or a file that is
not one of ours with a :class:`ValueError`. Writes are atomic: a temporary file in the same
folder, flushed and fsynced, then :func:`os.replace` (so a killed writer never leaves a partial
file under the final name). Pickle files left by older versions (``*.pkl``) are never read;
:func:`warn_legacy_pickles` says so.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import io
import json
import math
import os
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dponline.warn import warn_caller

__all__ = [
    "CHECKPOINT_SUFFIX",
    "FORMAT",
    "FORMAT_VERSION",
    "RESULT_SUFFIX",
    "RESUMED_SUFFIX",
    "LegacyCheckpointWarning",
    "code_fingerprint",
    "library_version",
    "load_frame",
    "load_state",
    "resume_state",
    "save_frame",
    "save_state",
    "warn_legacy_pickles",
]

FORMAT = "dponline-checkpoint"
FORMAT_VERSION = 1
#: File name suffixes: ``<task key>.ckpt.npz`` (a running task) and ``<task key>.result.npz``.
CHECKPOINT_SUFFIX = ".ckpt.npz"
RESULT_SUFFIX = ".result.npz"

_TAG = "__dponline__"
_HEADER = "header"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_ADVICE = "use a fresh output folder or delete the file"


class LegacyCheckpointWarning(UserWarning):
    """A folder holds pickle checkpoints of an older dponline; they are ignored, never read."""


def library_version() -> str:
    """``dponline.__version__``, else the installed distribution's version."""
    import dponline

    version = getattr(dponline, "__version__", None)
    return str(version) if version else importlib.metadata.version("dponline")


@functools.cache
def _source_digest() -> str:
    import dponline

    root = Path(dponline.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def code_fingerprint() -> str:
    """The version and a digest of every file of the installed package (its code and its
    data): a task's results are stored under a key that holds it, so results written by other
    code are recomputed, never read, even when the version number did not change (it stayed
    0.1.0 across hundreds of commits)."""
    return f"{library_version()}+{_source_digest()}"


# ------------------------------------------------------------------------- encoding
def _encode(obj: Any, arrays: dict[str, np.ndarray], where: str) -> Any:
    kind = type(obj)
    if obj is None or kind in (bool, int, str):
        return obj
    if kind is float:
        if math.isfinite(obj):
            return obj
        return {_TAG: "float", "value": repr(obj)}  # 'nan', 'inf', '-inf'
    if kind is np.ndarray:
        if obj.dtype.hasobject:
            raise TypeError(
                f"{where}: object arrays cannot be stored without pickle, got {obj!r:.80}"
            )
        key = f"a{len(arrays)}"
        arrays[key] = obj
        return {_TAG: "ndarray", "key": key}
    if isinstance(obj, np.generic) and not isinstance(obj, np.object_):
        key = f"a{len(arrays)}"
        arrays[key] = np.asarray(obj)
        return {_TAG: "scalar", "key": key}
    if kind is list:
        return [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]
    if kind is tuple:
        return {
            _TAG: "tuple",
            "items": [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)],
        }
    if kind is dict:
        if all(type(k) is str for k in obj) and _TAG not in obj:
            return {k: _encode(v, arrays, f"{where}[{k!r}]") for k, v in obj.items()}
        items = [
            [_encode(k, arrays, f"{where} key {k!r}"), _encode(v, arrays, f"{where}[{k!r}]")]
            for k, v in obj.items()
        ]
        return {_TAG: "dict", "items": items}
    raise TypeError(
        f"{where}: cannot store a {kind.__module__}.{kind.__qualname__} ({obj!r:.80}); expected "
        "dict, list, tuple, str, int, float, bool, None, a numpy array or a numpy scalar"
    )


def _decode(obj: Any, arrays: Any, where: str) -> Any:
    if obj is None or type(obj) in (bool, int, float, str):
        return obj
    if type(obj) is list:
        return [_decode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]
    if type(obj) is not dict:
        raise ValueError(f"{where}: unexpected JSON value {obj!r:.80}")
    if _TAG not in obj:
        return {k: _decode(v, arrays, f"{where}[{k!r}]") for k, v in obj.items()}
    tag = obj[_TAG]
    if tag in ("ndarray", "scalar"):
        key = obj.get("key")
        if key not in arrays.files or key == _HEADER:
            raise ValueError(f"{where}: refers to a missing array {key!r}")
        arr = arrays[key]
        return arr if tag == "ndarray" else arr[()]
    if tag == "float" and obj.get("value") in ("nan", "inf", "-inf"):
        return float(obj["value"])
    if tag == "tuple" and type(obj.get("items")) is list:
        return tuple(_decode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj["items"]))
    if tag == "dict" and type(obj.get("items")) is list:
        out = {}
        for pair in obj["items"]:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError(
                    f"{where}: a dict item must be a [key, value] pair, got {pair!r:.80}"
                )
            key = _decode(pair[0], arrays, f"{where} key")
            out[key] = _decode(pair[1], arrays, f"{where}[{key!r}]")
        return out
    raise ValueError(f"{where}: unknown tagged value {obj!r:.80}")


# ------------------------------------------------------------------------- files
def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write(path: Path, kind: str, task: str, body: Any, arrays: dict[str, np.ndarray]) -> None:
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "dponline_version": library_version(),
        "task": task,
        "body": body,
    }
    blob = json.dumps(header, allow_nan=False, separators=(",", ":")).encode()
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            # a results table's label columns repeat (fixed-width unicode): compressed, 25x
            # smaller; a learner's state (its noise) is written as it is, fast
            save = np.savez_compressed if kind == "result" else np.savez
            save(fh, allow_pickle=False, **{_HEADER: np.frombuffer(blob, np.uint8)}, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it readable by its owner only
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _read(path: Path, kind: str, task: str, decode: Any) -> Any:
    """Check the stamp of the file at ``path`` and return ``decode(body, arrays)``."""
    path = Path(path)
    data = path.read_bytes()
    if not data.startswith(_ZIP_MAGIC):
        looks = (
            " (it looks like a pickle, which dponline never loads)" if data[:1] == b"\x80" else ""
        )
        raise ValueError(
            f"{path} is not a dponline {kind} file: expected an .npz archive, got a file "
            f"starting with {data[:8]!r}{looks}; {_ADVICE}"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:  # the methods numpy's savez writes
            methods = {i.compress_type for i in archive.infolist()}
        if not methods <= {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}:
            raise ValueError(f"zip compression methods {sorted(methods)} are not numpy's")
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            header = json.loads(bytes(arrays[_HEADER]).decode())
            if type(header) is not dict or header.get("format") != FORMAT:
                raise ValueError(
                    f"format {header.get('format') if type(header) is dict else header!r:.80}"
                )
            stamp = {
                k: header.get(k) for k in ("format_version", "kind", "dponline_version", "task")
            }
            if stamp["format_version"] == FORMAT_VERSION and stamp["kind"] == kind:
                if stamp["dponline_version"] == library_version() and stamp["task"] == task:
                    return decode(header.get("body"), arrays)
    except (
        ValueError,  # includes JSON and UTF-8 errors and numpy's refusal of pickled arrays
        KeyError,
        TypeError,
        IndexError,
        EOFError,
        RecursionError,
        zipfile.BadZipFile,
        zlib.error,
    ) as exc:
        raise ValueError(
            f"{path} is not a valid dponline {kind} file ({type(exc).__name__}: {exc}); "
            f"it was not loaded; {_ADVICE}"
        ) from None
    if stamp["format_version"] != FORMAT_VERSION:
        raise ValueError(
            f"{path} has file format version {stamp['format_version']!r}, this dponline reads "
            f"version {FORMAT_VERSION}; {_ADVICE}"
        )
    if stamp["kind"] != kind:
        raise ValueError(f"{path} holds a {stamp['kind']!r}, expected a {kind!r}; {_ADVICE}")
    if stamp["dponline_version"] != library_version():
        advice = _ADVICE
        if kind == "checkpoint":
            advice = (
                "a learner's state continues only under the version that wrote it (its "
                "calibration and the noise to come may differ): to continue a deployed learner, "
                "run that version (a new learner starts a new guarantee, which adds to the old "
                "one's for every person it sees again); an experiment's checkpoint is "
                f"recomputed: {_ADVICE}"
            )
        raise ValueError(
            f"{path} was written by dponline {stamp['dponline_version']!r}, this is dponline "
            f"{library_version()!r}: results of two versions must not mix; {advice}"
        )
    raise ValueError(f"{path} belongs to task {stamp['task']!r}, expected task {task!r}; {_ADVICE}")


def save_state(path: str | Path, state: dict[str, Any], *, task: str) -> None:
    """Write ``state`` (see the module docstring for what it may hold) atomically to ``path``."""
    if type(state) is not dict:
        raise TypeError(f"a checkpoint state must be a dict, got {type(state).__name__}")
    arrays: dict[str, np.ndarray] = {}
    body = _encode(state, arrays, "state")
    _write(Path(path), "checkpoint", task, body, arrays)


def load_state(path: str | Path, *, task: str) -> dict[str, Any]:
    """The state saved at ``path`` for ``task`` by this dponline version (else ``ValueError``)."""
    state = _read(
        Path(path), "checkpoint", task, lambda body, arrays: _decode(body, arrays, "state")
    )
    if type(state) is not dict:
        raise ValueError(f"{path} holds a {type(state).__name__}, expected a state dict; {_ADVICE}")
    return state


#: the suffix a checkpoint continued by :func:`resume_state` is moved aside to
RESUMED_SUFFIX = ".resumed"


def resume_state(path: str | Path, *, task: str) -> dict[str, Any]:
    """A deployment's checkpoint, read to continue from it, once.

    A saved state holds the noise of the rounds to come: rounds served after it and served
    again after a second restart from it (with other data) release two inputs under the same
    noise, whose difference is then exact (:mod:`dponline.rng`). So the file is moved aside to
    ``<path>.resumed`` (:func:`os.rename`, atomic: of two processes claiming it at once, one
    gets it) before it is read: a second restart from the same file, or a second replica
    started from it, finds nothing there and is refused with a ``ValueError`` saying where the
    file went. The service then saves its next checkpoint to ``path`` (:func:`save_state`),
    before each output is shown. A state refused by :func:`load_state` (another version or
    task) is put back. A process that claimed a checkpoint and stopped before it showed
    anything may be continued from it again by moving the file back: that is safe only if
    nothing was released after the claim."""
    where = Path(path)
    aside = where.with_name(where.name + RESUMED_SUFFIX)
    try:
        os.rename(where, aside)
    except FileNotFoundError:
        if aside.exists():
            raise ValueError(
                f"{where} was continued already (it lies at {aside}): a checkpoint holds the "
                "noise of the rounds to come, and a second continuation would release other "
                "inputs under that same noise; continue from the newest checkpoint the running "
                f"service saved, or, if the process that took it showed nothing before it "
                f"stopped, move {aside.name} back to {where.name}"
            ) from None
        raise
    try:
        return load_state(aside, task=task)
    except ValueError:
        if not where.exists():  # refused: the file goes back where it was found
            os.rename(aside, where)
        raise


def save_frame(path: str | Path, frame: pd.DataFrame, *, task: str) -> None:
    """Write a results table atomically to ``path``: one array per column, dtypes recorded.

    Columns may be numeric or boolean, or strings (``object`` of ``str`` values or a pandas
    string dtype) without missing values; the index must be a ``RangeIndex``.
    """
    if not isinstance(frame.index, pd.RangeIndex):
        raise TypeError(f"the frame's index must be a RangeIndex, got {type(frame.index).__name__}")
    names = list(frame.columns)
    if any(type(n) is not str for n in names) or len(set(names)) != len(names):
        raise TypeError(f"column names must be distinct strings, got {names!r}")
    arrays: dict[str, np.ndarray] = {}
    columns = []
    for name in names:
        col = frame[name]
        dtype = col.dtype
        if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
            values = col.to_numpy()
        elif (dtype == np.dtype(object) or isinstance(dtype, pd.StringDtype)) and all(
            type(v) is str for v in col
        ):
            values = np.array(col.tolist(), dtype=str) if len(col) else np.array([], dtype="U1")
            if pd.api.types.pandas_dtype(str(dtype)) != dtype:
                raise TypeError(f"column {name!r}: dtype {dtype!r} does not round-trip by name")
        else:
            raise TypeError(
                f"column {name!r} has dtype {dtype}; expected numeric, boolean or strings "
                "without missing values"
            )
        key = f"a{len(arrays)}"
        arrays[key] = values
        columns.append({"name": name, "dtype": str(dtype), "key": key})
    index = frame.index
    body = {"columns": columns, "index": [index.start, index.stop, index.step]}
    _write(Path(path), "result", task, body, arrays)


def _frame_from(body: Any, arrays: Any) -> pd.DataFrame:
    start, stop, step = body["index"]
    index = pd.RangeIndex(int(start), int(stop), int(step))
    data = {}
    for col in body["columns"]:
        values = arrays[col["key"]]
        if values.shape != (len(index),):
            raise ValueError(
                f"column {col['name']!r} has shape {values.shape}, expected {len(index)} rows"
            )
        dtype = pd.api.types.pandas_dtype(col["dtype"])
        if values.dtype.kind == "U":
            data[col["name"]] = pd.Series(values.tolist(), index=index, dtype=dtype)
        elif values.dtype == dtype:
            data[col["name"]] = pd.Series(values, index=index)
        else:
            raise ValueError(
                f"column {col['name']!r} holds {values.dtype}, its header says {dtype}"
            )
    return pd.DataFrame(data, index=index)


def load_frame(path: str | Path, *, task: str) -> pd.DataFrame:
    """The results table saved at ``path`` for ``task`` by this dponline version."""
    return _read(Path(path), "result", task, _frame_from)


def warn_legacy_pickles(directory: str | Path) -> list[Path]:
    """Warn (once per call) that ``*.pkl`` files in ``directory`` are ignored; return them."""
    found = sorted(Path(directory).glob("*.pkl"))
    if found:
        warn_caller(
            f"ignoring {len(found)} pickle file(s) in {directory} (e.g. {found[0].name}): "
            "dponline no longer loads pickled checkpoints, which could run code; tasks run "
            "again and checkpoint as .npz. Delete the .pkl files to silence this warning.",
            LegacyCheckpointWarning,
        )
    return found
