"""Bounded BLAS and compiled threads (dponline.threads): the per-worker limit, the overrides, the
block paths' limit and what the runner's worker processes actually run with."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from typing import Any

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from threadpoolctl import threadpool_info, threadpool_limits

from dponline import threads
from dponline.continual.blt import BLTCounter
from dponline.experiments.runner import _call, _init_worker, execute_tasks
from dponline.privacy.noise import GaussianNoise
from dponline.threads import WorkerLimits

CLEARED = (*threads.USER_THREAD_VARS, threads.ENV_VAR, "NUMBA_NUM_THREADS")


@pytest.fixture(autouse=True)
def _default_policy(monkeypatch):
    """Every test starts from the default policy with no thread variable set, and leaves it."""
    for var in CLEARED:
        monkeypatch.delenv(var, raising=False)
    threads.set_blas_threads(None)
    yield
    threads.set_blas_threads(None)


def blas_counts() -> list[int]:
    """Threads of every BLAS library loaded in this process."""
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def report(_task: Any) -> dict[str, Any]:
    """A task that reports the threads its process runs with."""
    return {
        "blas": blas_counts(),
        "numba": numba.config.NUMBA_NUM_THREADS,
        "block": threads.blas_threads(),
        "pid": os.getpid(),
    }


# --- the per-worker limit ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("workers", "cores", "expected"),
    [(1, 1, 1), (1, 2, 2), (2, 2, 1), (3, 2, 1), (2, 8, 4), (3, 8, 2), (8, 8, 1), (16, 8, 1)],
)
def test_threads_per_worker_by_hand(workers, cores, expected):
    assert threads.threads_per_worker(workers, cores) == expected


@given(st.integers(1, 512), st.integers(1, 512))
def test_workers_never_start_more_threads_than_cores(workers, cores):
    t = threads.threads_per_worker(workers, cores)
    assert t >= 1
    assert workers * t <= max(cores, workers)  # within the cores, or one thread each
    assert cores < workers or workers * (t + 1) > cores  # and no thread left unused


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"workers": 0}, "workers"),
        ({"workers": -2}, "workers"),
        ({"workers": 1.5}, "workers"),
        ({"workers": True}, "workers"),
        ({"workers": 2, "cores": 0}, "cores"),
    ],
)
def test_bad_counts_are_refused_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must be a positive integer, got "):
        threads.threads_per_worker(**kwargs)


def test_cpu_count_is_this_process_affinity():
    assert threads.cpu_count() == len(os.sched_getaffinity(0))


def test_default_policy():
    assert threads.blas_threads() == 1
    per = threads.threads_per_worker(2)
    assert threads.worker_limits(2) == WorkerLimits(per, per, None)
    assert threads.worker_limits(3, cores=8) == WorkerLimits(2, 2, None)


# --- overrides ----------------------------------------------------------------------------------


@pytest.mark.parametrize("var", threads.USER_THREAD_VARS)
def test_a_user_thread_variable_turns_the_blas_limits_off(monkeypatch, var):
    monkeypatch.setenv(var, "2")
    assert threads.blas_threads() is None
    assert threads.worker_limits(2, cores=8) == WorkerLimits(None, 4, None)


def test_a_user_numba_variable_turns_the_numba_limit_off(monkeypatch):
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    assert threads.worker_limits(2, cores=8) == WorkerLimits(4, None, None)
    assert threads.blas_threads() == 1


def test_the_dponline_variable(monkeypatch):
    monkeypatch.setenv(threads.ENV_VAR, "3")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # dponline's own variable is stronger
    assert threads.blas_threads() == 3
    assert threads.worker_limits(2, cores=8) == WorkerLimits(3, 3, None)
    monkeypatch.setenv(threads.ENV_VAR, " OFF ")
    assert threads.blas_threads() is None
    assert threads.worker_limits(2, cores=8) == WorkerLimits(None, None, None)


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_dponline_variable_is_refused_naming_it(monkeypatch, value):
    monkeypatch.setenv(threads.ENV_VAR, value)
    message = rf"^{threads.ENV_VAR} must be a positive integer or 'off', got '{value}'$"
    with pytest.raises(ValueError, match=message):
        threads.blas_threads()


def test_set_blas_threads_beats_every_variable(monkeypatch):
    monkeypatch.setenv(threads.ENV_VAR, "3")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    threads.set_blas_threads(2)
    assert threads.blas_threads() == 2
    assert threads.worker_limits(4, cores=8) == WorkerLimits(2, 2, 2)
    threads.set_blas_threads("off")
    assert threads.blas_threads() is None
    assert threads.worker_limits(4, cores=8) == WorkerLimits(None, None, "off")
    threads.set_blas_threads(None)  # back to the variables
    assert threads.blas_threads() == 3


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "none", "0"])
def test_set_blas_threads_refuses_bad_values(value):
    with pytest.raises(ValueError, match=r"^n must be a positive integer"):
        threads.set_blas_threads(value)


# --- the block paths' limit ------------------------------------------------------------------


def test_blas_limit_limits_and_restores():
    with threadpool_limits(2, user_api="blas"):
        assert set(blas_counts()) == {2}
        with threads.blas_limit():
            assert set(blas_counts()) == {1}
            with threads.blas_limit():  # nested: the inner exit restores the outer limit
                assert set(blas_counts()) == {1}
            assert set(blas_counts()) == {1}
        assert set(blas_counts()) == {2}
        threads.set_blas_threads(3)
        with threads.blas_limit():  # a limit: never more threads than before
            assert set(blas_counts()) == {2}
        with threadpool_limits(4, user_api="blas"), threads.blas_limit():
            assert set(blas_counts()) == {3}
        assert set(blas_counts()) == {2}


def test_blas_limit_leaves_a_user_thread_variable_alone(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    with threadpool_limits(2, user_api="blas"), threads.blas_limit():
        assert set(blas_counts()) == {2}
    threads.set_blas_threads("off")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    with threadpool_limits(2, user_api="blas"), threads.blas_limit():
        assert set(blas_counts()) == {2}


def test_the_blt_block_products_run_under_the_limit(monkeypatch):
    counter = BLTCounter(4096, 8, GaussianNoise(1.0), replicas=64, rng=0)
    seen: list[list[int]] = []
    draw = counter._draw

    def spying_draw(count=None):
        seen.append(blas_counts())  # inside the block loop, before its products
        return draw(count)

    monkeypatch.setattr(counter, "_draw", spying_draw)
    with threadpool_limits(2, user_api="blas"):
        counter.step_block(np.zeros((100, 8)))
        assert set(blas_counts()) == {2}  # restored after the block
    assert len(seen) == 4  # ceil(100 / BLOCK_STEPS) sub-blocks
    assert all(set(counts) == {1} for counts in seen)


# --- what worker processes run with ---------------------------------------------------------


def test_local_workers_run_with_the_per_worker_limit():
    with threadpool_limits(2, user_api="blas"):  # what the workers would inherit unlimited
        results = execute_tasks(list(range(4)), report, workers=2, progress=False)
    per = threads.threads_per_worker(2)
    assert len({r["pid"] for r in results} - {os.getpid()}) >= 1  # ran in worker processes
    for r in results:
        assert set(r["blas"]) == {per}
        assert r["numba"] == per
        assert r["block"] == 1


def test_local_workers_respect_set_blas_threads():
    threads.set_blas_threads(3)
    with threadpool_limits(2, user_api="blas"):
        results = execute_tasks(list(range(2)), report, workers=2, progress=False)
    for r in results:
        assert set(r["blas"]) == {3}
        assert r["numba"] == 3
        assert r["block"] == 3


def test_local_workers_respect_a_user_thread_variable(monkeypatch):
    # the user's count, which a forked worker inherits from this process and a spawned one
    # reads from the variable: one more than the per-worker limit dponline would set
    user = threads.threads_per_worker(2) + 1
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", str(user))
    with threadpool_limits(user, user_api="blas"):
        results = execute_tasks(list(range(2)), report, workers=2, progress=False)
    for r in results:
        assert set(r["blas"]) == {user}
        assert r["block"] is None


@pytest.mark.parametrize("initializer", [_init_worker, threads.apply_worker_limits])
def test_a_spawned_worker_receives_the_parents_setting(initializer):
    # a spawned worker starts afresh (macOS's default, forkserver on Linux from Python 3.14)
    ctx = multiprocessing.get_context("spawn")
    limits = WorkerLimits(1, 1, 3)
    with ctx.Pool(1, initializer=initializer, initargs=(limits,)) as pool:
        block, counts = pool.apply(_block_and_counts)
    assert block == 3
    assert counts and set(counts) == {1}  # numpy's and scipy's BLAS (two in the wheels)


def _block_and_counts() -> tuple[int | None, list[int]]:
    return threads.blas_threads(), blas_counts()


def test_a_ray_task_applies_its_limits_first():
    # _call is what each Ray task runs; in a process of its own, as a Ray worker is
    with multiprocessing.get_context().Pool(1) as pool:
        r, raised = pool.apply(_call, (report, None, WorkerLimits(1, 1, None)))
    assert raised == []  # the task's warnings, returned beside its result
    assert set(r["blas"]) == {1}
    assert r["numba"] == 1


NUMBA_CHILD = """
import os, sys
from dponline.threads import WorkerLimits, apply_worker_limits
launched = sys.argv[1] == "launched"
if launched:
    import numba
    numba.get_num_threads()  # starts numba's thread pool
apply_worker_limits(WorkerLimits(None, 1))
import numba
print(numba.get_num_threads() if launched else numba.config.NUMBA_NUM_THREADS,
      os.environ.get("NUMBA_NUM_THREADS"))
"""


@pytest.mark.parametrize("state", ["not imported", "launched"])
def test_the_numba_limit_before_import_and_on_a_running_pool(state):
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["NUMBA_NUM_THREADS"] = "2"  # the pool numba would start without the limit
    out = subprocess.run(
        [sys.executable, "-c", NUMBA_CHILD, state.replace(" ", "_")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    if state == "launched":  # the running pool uses 1 of its 2 threads; the variable stays
        assert out == ["1", "2"]
    else:  # a later import reads the limit
        assert out == ["1", "1"]
