"""Local worker processes (loky): unguarded scripts, parent death, BLAS threads, failures."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

from privaudit.training import CallableRecipe, LocalExecutor

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

# Module-level helpers: worker processes import them by name (and so this module: its
# heavier imports are made where they are used, to keep worker start-up short).


def blas_threads(_):
    from threadpoolctl import threadpool_info

    return sorted({info["num_threads"] for info in threadpool_info()})


def shared_identity(_, *, data):
    time.sleep(0.05)
    return os.getpid(), id(data)


def die_on_zero(i):
    if i == 0:
        os._exit(3)  # a worker killed mid-task (out of memory, segfault)
    time.sleep(0.2)
    return i


def urllib3_loaded(_):
    return "urllib3" in sys.modules


def warn_insecure_and_clock(_):
    from urllib3.exceptions import InsecureRequestWarning, SystemTimeWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.warn("an insecure request", InsecureRequestWarning, stacklevel=1)
        warnings.warn("the clock is wrong", SystemTimeWarning, stacklevel=1)
    return [str(w.message) for w in caught]


def train_mlp(X, y, *, random_state):
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier((256,), max_iter=50, random_state=random_state).fit(X, y)


def save_mlp(model, path):
    # Bytes depend on the parameters only (skops names its arrays by memory address).
    with open(path, "wb") as fh:
        np.save(fh, model.classes_, allow_pickle=False)
        for a in [*model.coefs_, *model.intercepts_]:
            np.save(fh, a, allow_pickle=False)


def load_mlp(path):
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import LabelBinarizer

    with open(path, "rb") as fh:
        classes = np.load(fh)
        arrays = [np.load(fh) for _ in range(4)]
    model = MLPClassifier((arrays[0].shape[1],))
    model.coefs_, model.intercepts_ = arrays[:2], arrays[2:]
    model.classes_, model.n_layers_, model.n_outputs_ = classes, 3, len(classes)
    model.out_activation_, model.n_features_in_ = "softmax", arrays[0].shape[0]
    model._label_binarizer = LabelBinarizer().fit(classes)
    return model


# --------------------------------------------------------------- the main module

AUDIT_SCRIPT = """
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from privaudit import audit_model
from privaudit.training import CallableRecipe, ReferenceSpec

def train(X, y, *, random_state):  # defined in __main__: sent to workers by value
    return LogisticRegression(max_iter=200, random_state=random_state).fit(X, y)

X, y = load_digits(return_X_y=True)
X = X[:240] / 16.0; y = y[:240]
target = LogisticRegression(max_iter=200).fit(X[:60], y[:60])
results = audit_model(target, X[:120], y[:120], np.r_[np.ones(60, int), np.zeros(60, int)],
                      population=(X[120:], y[120:]), attacks=["loss", "lira-offline"],
                      reference=ReferenceSpec(recipe=CallableRecipe(train), n_models=2),
                      n_jobs=2,
                      check_fidelity=False, slices=False)
print("audited", sorted(r.attack for r in results))
"""


def test_unguarded_script_runs_reference_attacks_in_parallel(tmp_path: Path) -> None:
    script = tmp_path / "audit_script.py"
    script.write_text(AUDIT_SCRIPT)  # no `if __name__ == "__main__":`
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("audited ['lira-offline', 'loss']") == 1  # the script ran once


# --------------------------------------------------------------- parent death

SLEEPERS = """
import faulthandler, os, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)  # a hung run shows where it waits
from privaudit.training import LocalExecutor, _executors
_executors._shared_dir = lambda: sys.argv[1]  # the shared-data file goes to the test folder

def sleeper(i, *, folder):
    open(os.path.join(folder, f"worker-{os.getpid()}"), "w").close()
    time.sleep(300)

ex = LocalExecutor(2)
for _ in ex.map_unordered(sleeper, [(i,) for i in range(4)], shared={"folder": sys.argv[1]}):
    pass
"""


def _proc_stat(pid: int) -> tuple[int, str, str] | None:
    """(parent pid, state, start time) of a live process, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], fields[19]


def _descendants(root: int) -> dict[int, str]:
    """Every live descendant of ``root``: {pid: start time}."""
    stats = {int(p): _proc_stat(int(p)) for p in os.listdir("/proc") if p.isdigit()}
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        children = {pid for pid, st in stats.items() if st and st[0] in frontier}
        children -= set(found)
        found.update({pid: stats[pid][2] for pid in children})  # type: ignore[index]
        frontier = children
    return found


def _alive(pid: int, start: str) -> bool:
    st = _proc_stat(pid)
    return st is not None and st[2] == start and st[1] != "Z"


def _start_sleepers(folder: Path) -> tuple[subprocess.Popen, dict[int, str]]:
    """A run whose two workers sleep in their tasks, and its processes (pid: start time)."""
    proc = subprocess.Popen([sys.executable, "-c", SLEEPERS, str(folder)],
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # a hang guard: they start in seconds
    while len(list(folder.glob("worker-*"))) < 2:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the workers never started: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.1)
    children = _descendants(proc.pid)
    assert {int(p.name.split("-")[1]) for p in folder.glob("worker-*")} <= set(children)
    assert list(folder.glob("privaudit-shared-*"))
    return proc, children


def _assert_all_end(children: dict[int, str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while any(_alive(pid, start) for pid, start in children.items()):
        assert time.monotonic() < deadline, (
            f"still running {seconds} s later: "
            f"{[p for p, s in children.items() if _alive(p, s)]}"
        )
        time.sleep(0.1)


# The sleepers' tasks sleep 300 s: ending within 150 s shows nothing waited for them,
# with a margin for a loaded machine (limits of 5 s and 10 s failed at load 13 on 2 cores,
# 60 s once at load 7; alone it ends in 6 s).
PROMPTLY = 150

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (Linux)")


@needs_proc
def test_workers_die_within_seconds_of_a_kill_9_of_their_parent(tmp_path: Path) -> None:
    proc, children = _start_sleepers(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _assert_all_end(children, PROMPTLY)
    assert not list(tmp_path.glob("privaudit-shared-*"))  # the workers removed it


@needs_proc
def test_ctrl_c_stops_the_run_without_waiting_for_running_tasks(tmp_path: Path) -> None:
    proc, children = _start_sleepers(tmp_path)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=PROMPTLY)
    except subprocess.TimeoutExpired:  # once in many loaded runs: say where it waited
        proc.send_signal(signal.SIGUSR1)
        time.sleep(2)
        proc.kill()
        pytest.fail("Ctrl-C did not end the run; its threads:\n"
                    + proc.communicate()[1].decode(errors="replace")[-6000:])
    finally:
        proc.kill()
    _assert_all_end(children, PROMPTLY)


# --------------------------------------------------------------- BLAS threads


def test_inline_tasks_run_under_the_workers_thread_limit() -> None:
    from threadpoolctl import threadpool_info

    inline = dict(LocalExecutor(1).map_unordered(blas_threads, [(0,), (1,)]))
    assert inline[0] in ([], [1]) and inline[1] in ([], [1])
    two = dict(LocalExecutor(1, threads_per_worker=2).map_unordered(blas_threads, [(0,)]))
    assert two[0] in ([], [2])
    # The caller's own limits are restored afterwards.
    after = sorted({info["num_threads"] for info in threadpool_info()})
    assert after == blas_threads(None)


def _digits_mlp_run(cache: Path, n_jobs: int) -> tuple[list[str], np.ndarray]:
    from sklearn.datasets import load_digits

    from privaudit.attacks.membership import LiRAAttack, collect_reference_outputs
    from privaudit.targets import SklearnTarget

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    aud, pop = np.arange(600), np.arange(600, len(X))
    target = SklearnTarget(train_mlp(X[:300], y[:300], random_state=0))
    recipe = CallableRecipe(train_mlp, save=save_mlp, load=load_mlp, suffix=".npy")
    ref = collect_reference_outputs(recipe, X[aud], y[aud], X_population=X[pop],
                                    y_population=y[pop], n_models=2, n_jobs=n_jobs,
                                    cache_dir=cache, random_state=0, query_population=False)
    scores = LiRAAttack(online=True, fix_variance=True).fit(ref).score(
        outputs=target.query(X[aud], y[aud]))
    files = sorted(cache.glob("refpool-*/model-*.npy"))
    assert len(files) == 2
    return [hashlib.sha256(f.read_bytes()).hexdigest() for f in files], scores


@pytest.mark.filterwarnings("ignore:lira_scores. no record has two")
def test_mlp_models_and_lira_scores_identical_with_one_or_two_workers(tmp_path: Path) -> None:
    # MLPs on all of digits are large enough for a multi-threaded BLAS to split its work
    # (and so round differently) unless both paths run it on the same number of threads.
    hashes1, scores1 = _digits_mlp_run(tmp_path / "one", 1)
    hashes2, scores2 = _digits_mlp_run(tmp_path / "two", 2)
    assert hashes1 == hashes2
    assert np.array_equal(scores1, scores2)


# --------------------------------------------------------------- failures and reuse


def test_shared_data_reaches_each_worker_once() -> None:
    data = np.arange(100_000)
    with LocalExecutor(2) as ex:
        seen = [r for _, r in ex.map_unordered(shared_identity, [(i,) for i in range(8)],
                                               shared={"data": data})]
    per_worker: dict[int, set[int]] = {}
    for pid, ident in seen:
        per_worker.setdefault(pid, set()).add(ident)
    assert os.getpid() not in per_worker
    assert all(len(idents) == 1 for idents in per_worker.values())  # unpickled once


def test_dead_worker_raises_clearly_and_the_executor_recovers() -> None:
    from concurrent.futures.process import BrokenProcessPool

    with LocalExecutor(2) as ex:
        with pytest.raises(BrokenProcessPool, match="worker process died"):
            list(ex.map_unordered(die_on_zero, [(i,) for i in range(4)]))
        assert dict(ex.map_unordered(die_on_zero, [(1,), (2,)])) == {0: 1, 1: 2}


# --------------------------------------------------------------- the caller's warning filters


def _library_module() -> tuple[types.ModuleType, type, type]:
    """A library module (not loaded) with a warning category and a subclass of it."""
    module = types.ModuleType("privaudit_test_unloaded_library")

    class LibraryWarning(UserWarning):
        pass

    class DetailWarning(LibraryWarning):
        pass

    for cls in (LibraryWarning, DetailWarning):
        cls.__module__, cls.__qualname__ = module.__name__, cls.__name__
        setattr(module, cls.__name__, cls)
    return module, LibraryWarning, DetailWarning


def test_a_filter_on_a_category_not_loaded_applies_once_its_module_is(monkeypatch) -> None:
    # The worker's side, here: a category whose module is not loaded is a stand-in that
    # matches nothing until the module is imported, then that class and its subclasses.
    from privaudit._warning_filters import install_warning_filters, portable_warning_filters

    module, library_warning, detail_warning = _library_module()

    class LocalWarning(UserWarning):  # no other process can name it: left out
        pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=library_warning)
        warnings.filterwarnings("error", category=LocalWarning)
        sent = portable_warning_filters()
        assert [f[2][1] for f in sent[:2]] == ["LibraryWarning", "Warning"]
        install_warning_filters(sent)
        stand_in = warnings.filters[0][2]
        assert stand_in is not library_warning and not issubclass(UserWarning, stand_in)
        monkeypatch.setitem(sys.modules, module.__name__, module)
        warnings.warn("ignored", library_warning, stacklevel=1)
        warnings.warn("ignored too", detail_warning, stacklevel=1)
        warnings.warn("shown", UserWarning, stacklevel=1)
        warnings.warn("local, no longer an error", LocalWarning, stacklevel=1)
        install_warning_filters(portable_warning_filters())  # a worker's own workers
        assert warnings.filters[0][2] is library_warning  # loaded now: the class itself
        warnings.warn("still ignored", detail_warning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["shown", "local, no longer an error"]


def test_workers_import_no_module_for_the_callers_warning_filters() -> None:
    # Libraries register filters on their own categories when imported (Ray, torch):
    # a worker of this process imported them all before running any task (about 3 CPU-s
    # each with torch and Ray). The category's module is now imported by the task that
    # needs it, and the caller's filter on it still applies there.
    from urllib3.exceptions import InsecureRequestWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=InsecureRequestWarning)
        with LocalExecutor(2) as ex:
            loaded = [r for _, r in ex.map_unordered(urllib3_loaded, [(0,), (1,)])]
            caught = [r for _, r in ex.map_unordered(warn_insecure_and_clock, [(0,), (1,)])]
    assert loaded == [False, False]
    assert caught == [["the clock is wrong"]] * 2
