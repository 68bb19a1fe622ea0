"""Bounded BLAS and compiled threads, so that dponline never oversubscribes the cores.

numpy's BLAS (OpenBLAS in the wheels) starts one thread per core for a large enough matrix
product. dponline's block paths multiply small matrices many times (the BLT recursion as block
matrices, :meth:`~dponline.continual.blt.BLTCounter.step_block`; the normalisation of a block
of decisions), where a second thread gains nothing and, beside any other busy process, costs a
lot: the BLAS threads wait for a core while holding the main thread back. On 2 cores, the BLT's
fast path (DP-FTRL, N = 10 experts, T = 1e5, 100 replicas) beside two busy processes took
19.1 s with the libraries' two threads and 6.1 s with one
(``DPONLINE_BLAS_THREADS=off python benchmarks/bench_replicas.py --busy 2 --only blt``), and
one thread was never slower than two beyond noise from N x R = 10 to 100,000
(``python benchmarks/bench_replicas.py --sweep --repeat 3``: two threads took 0.99-12.7x as
long, on a machine that other work kept at load 1.5-4.5).

What dponline does, by default:

* **Block paths** (in any process) run their matrix products inside :func:`blas_limit`, which
  limits BLAS to :func:`blas_threads` threads, one by default, and restores the previous limit
  on exit (measured: 29 us per entry, 11 us when BLAS uses one thread already; a block of 1024
  rounds at N = 10, R = 100 computes for about 40 ms).
* **Worker processes** of the runner's ``local`` backend (W of them on C cores, C counted by
  :func:`cpu_count`) limit BLAS and OpenMP to ``max(1, C // W)`` threads each
  (:func:`threads_per_worker`) and numba to the same number, so W workers never start more
  threads than there are cores. A Ray task holds one CPU (Ray's default), so its worker uses
  one thread.
* numba's kernels (:mod:`dponline.stochastic.sgd_kernel`, :mod:`dponline.bandits.exp2_kernel`)
  are compiled without ``parallel=True`` and start no threads; the worker's numba bound is for
  kernels that would.

Overrides, strongest first:

1. :func:`set_blas_threads` ``(n)`` in the program: ``n`` threads in block paths and in each
   worker; ``"off"``: dponline sets no limit (the libraries' own defaults); ``None``: back to
   the default. A spawned or forked worker receives the parent's setting.
2. The environment variable ``DPONLINE_BLAS_THREADS``: a positive integer or ``off``, read
   when a limit is applied.
3. ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``BLIS_NUM_THREADS``
   or ``VECLIB_MAXIMUM_THREADS`` set in the environment: the libraries already obey them, and
   dponline sets no BLAS or OpenMP limit (nor a numba one if ``NUMBA_NUM_THREADS`` is set).

Limits act through threadpoolctl on the BLAS and OpenMP libraries loaded when they are applied
(the block paths look again whenever a module was imported since). The limit is process-wide:
while one thread of a program is inside a block path, BLAS calls from its other threads are
limited too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ENV_VAR",
    "USER_THREAD_VARS",
    "WorkerLimits",
    "apply_worker_limits",
    "blas_limit",
    "blas_threads",
    "cpu_count",
    "set_blas_threads",
    "threads_per_worker",
    "worker_limits",
]

#: dponline's own override: a positive integer, or ``off``
ENV_VAR = "DPONLINE_BLAS_THREADS"
#: thread counts a user may set for the BLAS and OpenMP libraries themselves; any of them set
#: means dponline leaves those libraries alone
USER_THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
#: threads in block paths under the default policy (measured: module docstring)
DEFAULT_BLOCK_THREADS = 1

Setting = int | str | None  # a positive int, "off", or None (the default policy)

_setting: Setting = None
_controller: Any = None  # threadpoolctl's view of the loaded BLAS libraries
_modules_seen = 0  # len(sys.modules) when it was made


def cpu_count() -> int:
    """The cores this process may run on: its CPU affinity where the OS reports one (a
    container or ``taskset`` may allow fewer than the machine has), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS and Windows have no affinity
        return max(1, os.cpu_count() or 1)


def _check_threads(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def threads_per_worker(workers: int, cores: int | None = None) -> int:
    """Threads each of ``workers`` processes may use so that together they fit ``cores``
    (default :func:`cpu_count`): ``max(1, cores // workers)``."""
    workers = _check_threads("workers", workers)
    cores = cpu_count() if cores is None else _check_threads("cores", cores)
    return max(1, cores // workers)


def _parse(value: Any, name: str) -> Setting:
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "off":
            return "off"
        if text.isdigit() and int(text) >= 1:
            return int(text)
        raise ValueError(f"{name} must be a positive integer or 'off', got {value!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, 'off' or None, got {value!r}")
    return value


def set_blas_threads(n: int | str | None) -> None:
    """Threads BLAS may use in dponline's block paths and in each runner worker: a positive
    integer, ``"off"`` (dponline sets no limit) or ``None`` (the default: one in block paths,
    ``max(1, cores // W)`` in each of W workers, nothing if the user set OMP_NUM_THREADS or a
    BLAS library's own variable). Takes precedence over ``DPONLINE_BLAS_THREADS``."""
    global _setting, _controller
    _setting = _parse(n, "n")
    _controller = None  # look for the loaded libraries again at the next limit


def _resolved() -> Setting:
    """The active setting: :func:`set_blas_threads`, else ``DPONLINE_BLAS_THREADS``, else the
    default policy (``None``)."""
    if _setting is not None:
        return _setting
    return _parse(os.environ.get(ENV_VAR), ENV_VAR) if os.environ.get(ENV_VAR) else None


def _user_set_threads() -> bool:
    return any(os.environ.get(var) for var in USER_THREAD_VARS)


def blas_threads() -> int | None:
    """The BLAS threads of dponline's block paths now: ``None`` when dponline sets no limit
    (``"off"``, or a thread variable of the libraries set by the user)."""
    setting = _resolved()
    if isinstance(setting, int):
        return setting
    if setting == "off" or _user_set_threads():
        return None
    return DEFAULT_BLOCK_THREADS


def _blas_controller() -> Any:
    """threadpoolctl's controller of the loaded BLAS libraries, found again when a module was
    imported since (a module may load another BLAS) or after :func:`set_blas_threads`."""
    global _controller, _modules_seen
    if _controller is None or _modules_seen != len(sys.modules):
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController().select(user_api="blas")
        _modules_seen = len(sys.modules)
    return _controller


@contextmanager
def blas_limit() -> Iterator[None]:
    """At most :func:`blas_threads` BLAS threads inside the block, the previous limits back on
    exit (nothing if it is ``None``, or if every BLAS library uses no more threads already, as
    in a worker limited to fewer). Nested entries restore the outer limit. OpenBLAS's pool is
    process-wide: threadpoolctl lets one thread at a time set it, and an entry from another
    thread meanwhile changes nothing."""
    threads = blas_threads()
    controller = None if threads is None else _blas_controller()
    if controller is None or all(
        lib.num_threads is not None and lib.num_threads <= threads
        for lib in controller.lib_controllers
    ):
        yield
        return
    with controller.limit(limits=threads):
        yield


@dataclass(frozen=True)
class WorkerLimits:
    """What a worker process applies when it starts (:func:`apply_worker_limits`), decided in
    the parent (:func:`worker_limits`) so that spawned and forked workers agree."""

    #: BLAS and OpenMP threads of the worker; None: leave them
    blas: int | None
    #: numba's threads of the worker; None: leave them
    numba: int | None
    #: the parent's :func:`set_blas_threads` setting, for the worker's block paths
    setting: Setting = None


def worker_limits(workers: int, cores: int | None = None) -> WorkerLimits:
    """The limits of each of ``workers`` processes sharing ``cores`` (default
    :func:`cpu_count`): an explicit setting's ``n``, else :func:`threads_per_worker`; no BLAS
    limit under ``"off"`` or a user's OMP_NUM_THREADS (and the like), no numba limit under
    ``"off"`` or a user's NUMBA_NUM_THREADS."""
    per_worker = threads_per_worker(workers, cores)
    setting = _resolved()
    if setting == "off":
        return WorkerLimits(None, None, _setting)
    if isinstance(setting, int):
        return WorkerLimits(setting, setting, _setting)
    blas = None if _user_set_threads() else per_worker
    numba = None if os.environ.get("NUMBA_NUM_THREADS") else per_worker
    return WorkerLimits(blas, numba, _setting)


def apply_worker_limits(limits: WorkerLimits) -> None:
    """In a worker process: take the parent's setting and limit BLAS and OpenMP (process-wide,
    for the worker's life: numpy's and scipy's BLAS, and any other library loaded by then)
    and numba to ``limits``."""
    if limits.setting is not None:
        set_blas_threads(limits.setting)
    if limits.blas is not None:
        import numpy  # noqa: F401  (load numpy's and scipy's BLAS, in a spawned worker too)
        import scipy.linalg  # noqa: F401
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=limits.blas)  # every BLAS and OpenMP library loaded
    if limits.numba is not None:
        _limit_numba(limits.numba)


def _limit_numba(n: int) -> None:
    """numba's thread pool to ``n`` threads: through NUMBA_NUM_THREADS when the pool has not
    started (numba rereads it), else by masking threads of the running pool."""
    previous = os.environ.get("NUMBA_NUM_THREADS")
    os.environ["NUMBA_NUM_THREADS"] = str(n)
    numba = sys.modules.get("numba")
    if numba is None:  # a later import reads the variable
        return
    try:
        numba.config.reload_config()
    except RuntimeError:  # the pool runs already with another size: use n of its threads
        if previous is None:
            del os.environ["NUMBA_NUM_THREADS"]
        else:
            os.environ["NUMBA_NUM_THREADS"] = previous
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
