"""Executors: inline and local processes behind one interface; failure semantics."""

from __future__ import annotations

import os
import pickle
import sys
import time
from pathlib import Path

import pytest

from privaudit.training import LocalExecutor, get_executor
from privaudit.training._executors import RayExecutor
from security.pickle_payloads import Planted


def square_plus(x, *, offset):
    return x * x + offset


def worker_threads(_):
    from threadpoolctl import threadpool_info

    return os.environ.get("OMP_NUM_THREADS"), sorted(
        {info["num_threads"] for info in threadpool_info()}
    ), os.getpid()


def fail_on_zero(i, *, delay):
    if i == 0:
        raise ValueError("task zero failed")
    time.sleep(delay)
    return i


def test_inline_and_processes_give_the_same_results() -> None:
    tasks = [(i,) for i in range(7)]
    inline = dict(LocalExecutor(1).map_unordered(square_plus, tasks, shared={"offset": 3}))
    with LocalExecutor(2) as ex:
        parallel = dict(ex.map_unordered(square_plus, tasks, shared={"offset": 3}))
        # Workers persist across calls and new shared data replaces the old.
        again = dict(ex.map_unordered(square_plus, tasks, shared={"offset": 4}))
    expected = {i: i * i + 3 for i in range(7)}
    assert inline == parallel == expected
    assert again == {i: i * i + 4 for i in range(7)}


def test_workers_run_single_threaded_blas() -> None:
    with LocalExecutor(2) as ex:
        results = [r for _, r in ex.map_unordered(worker_threads, [(i,) for i in range(4)])]
    assert all(env == "1" for env, _, _ in results)
    assert all(threads in ([], [1]) for _, threads, _ in results)
    assert all(pid != os.getpid() for _, _, pid in results)


def test_inline_failure_stops_at_the_failing_task() -> None:
    seen = []
    with pytest.raises(ValueError, match="task zero failed"):
        for i, r in LocalExecutor(1).map_unordered(fail_on_zero, [(1,), (0,), (2,)],
                                                   shared={"delay": 0.0}):
            seen.append((i, r))
    assert seen == [(0, 1)]


def test_process_failure_drains_running_tasks_then_raises() -> None:
    seen = {}
    tasks = [(0,)] + [(i,) for i in range(1, 12)]
    with LocalExecutor(2) as ex, pytest.raises(ValueError, match="task zero failed"):
        for i, r in ex.map_unordered(fail_on_zero, tasks, shared={"delay": 0.3}):
            seen[i] = r
    # Whatever was yielded is correct, and the bounded window kept most tasks from starting.
    assert all(seen[i] == tasks[i][0] for i in seen)
    assert 0 not in seen and len(seen) <= 3


def test_executor_pickles_without_its_workers() -> None:
    ex = LocalExecutor(2)
    list(ex.map_unordered(square_plus, [(1,), (2,)], shared={"offset": 0}))
    clone = pickle.loads(pickle.dumps(ex))
    assert clone._pool is None and clone.n_workers == 2
    ex.close()


def test_get_executor_names_and_errors() -> None:
    assert get_executor("local").n_workers == 1
    assert get_executor("local", n_jobs=-1).n_workers == (os.cpu_count() or 1)
    ex = LocalExecutor(2)
    assert get_executor(ex) is ex
    with pytest.raises(ValueError, match="The 'executor' parameter of get_executor must be"):
        get_executor("dask")
    with pytest.raises(TypeError, match="The 'executor' parameter of get_executor"):
        get_executor(3)
    with pytest.raises(ValueError, match="The 'address' parameter of get_executor"):
        get_executor("local", address="auto")
    with pytest.raises(ValueError, match="The 'n_jobs' parameter of LocalExecutor"):
        LocalExecutor(-2)
    with pytest.raises(ValueError, match="The 'start_method' parameter of LocalExecutor"):
        LocalExecutor(2, start_method="fork")


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(ImportError, match=r"pip install 'privaudit\[distributed\]'"):
        get_executor("ray")
    # Constructing the executor itself does not import Ray; using it does.
    ex = RayExecutor()
    with pytest.raises(ImportError, match="distributed"):
        list(ex.map_unordered(square_plus, [(1,)], shared={"offset": 0}))


def test_lambdas_and_local_functions_run_in_workers() -> None:
    offset = 10

    def local(x):
        return x + offset

    with LocalExecutor(2) as ex:
        assert dict(ex.map_unordered(lambda x: 2 * x, [(1,), (2,)])) == {0: 2, 1: 4}
        assert dict(ex.map_unordered(local, [(1,), (2,)])) == {0: 11, 1: 12}


def test_unpicklable_argument_gets_a_clear_error() -> None:
    import threading

    with pytest.raises(TypeError, match=r"The 'fn' parameter of LocalExecutor\.map_unordered "
                                        "must be picklable"):
        list(LocalExecutor(2).map_unordered(square_plus, [(threading.Lock(),), (2,)]))


def test_import_training_is_light() -> None:
    import subprocess

    code = ("import sys, privaudit.training; "
            "print(','.join(m for m in ('ray', 'torch', 'skops') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ""


def test_a_swapped_shared_file_is_refused_before_anything_is_unpickled(tmp_path, monkeypatch):
    import hashlib
    import hmac
    import pickle

    from privaudit.training import _executors

    monkeypatch.setattr(_executors, "_shared_dir", lambda: str(tmp_path))
    key, path = LocalExecutor(n_jobs=2)._write_shared({"weights": [1.0, 2.0]})
    assert _executors._read_shared(path, key) == {"weights": [1.0, 2.0]}
    marker = tmp_path / "ran"
    payload = pickle.dumps({"weights": Planted(str(marker))})
    other = "ab" * 32
    forged = {
        "no code": payload,
        "another key's code": hmac.new(bytes.fromhex(other), payload, hashlib.sha256).digest()
        + payload,
        "the old code, edited after": Path(path).read_bytes()[:32] + payload,
        "truncated": b"\0" * 5,
    }
    for name, content in forged.items():
        Path(path).write_bytes(content)
        with pytest.raises(ValueError, match="not written by this call's parent"):
            _executors._read_shared(path, key)
        assert not marker.exists(), name
    # The control: the same payload under the call's own key does run (the MAC is the guard).
    Path(path).write_bytes(hmac.new(bytes.fromhex(key), payload, hashlib.sha256).digest()
                           + payload)
    _executors._read_shared(path, key)
    assert marker.exists()
