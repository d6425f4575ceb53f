"""Per-model cache locks: concurrent runs train each model once; a dead holder frees it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from privaudit.training import CallableRecipe, ReferencePool
from privaudit.training._cache import ModelCache, _byte_locks

HERE = Path(__file__).parent

# Module-level helpers: the runs below import them by name. The model is numpy alone (no
# scikit-learn to import): what is tested is the cache's locks, and each of the up to six
# processes of a test would spend about 2 s of CPU importing scikit-learn.


class CentroidModel:
    """Nearest class centroid; probabilities a softmax of minus the squared distances."""

    def __init__(self, centroids: np.ndarray, classes: np.ndarray) -> None:
        self.centroids, self.classes_ = centroids, classes

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        logits = -((X[:, None, :] - self.centroids[None]) ** 2).sum(axis=2)
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        return weights / weights.sum(axis=1, keepdims=True)


def logged_train(X, y, *, random_state, log):
    """Fit a centroid model on a seeded bootstrap, slowly; append one line to ``log``."""
    time.sleep(0.3)
    rows = np.random.default_rng(random_state).integers(0, len(X), len(X))
    classes = np.unique(y)
    model = CentroidModel(np.stack([X[rows][y[rows] == c].mean(axis=0) for c in classes]),
                          classes)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{random_state} {os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return model


def save_npz(model, path):
    np.savez(path, centroids=model.centroids, classes=model.classes_)


def load_npz(path):
    with np.load(path, allow_pickle=False) as f:
        return CentroidModel(f["centroids"], f["classes"])


def proba(model, X, y):
    return model.predict_proba(X)


def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    return X, (X[:, 0] + 0.3 * rng.normal(size=120) > 0).astype(int)


def recipe(log: Path) -> CallableRecipe:
    return CallableRecipe(logged_train, fn_kwargs={"log": str(log)}, save=save_npz,
                          load=load_npz, suffix=".npz")


RUN = """
import sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, {here!r})
from test_cache_locking import data, proba, recipe
from privaudit.training import ReferencePool
folder, name, n_jobs = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
X, y = data()
pool = ReferencePool(recipe(folder / "log"), 6, random_state=4, n_jobs=n_jobs,
                     cache_dir=folder / "cache")
(folder / f"ready-{{name}}").touch()
while len(list(folder.glob("ready-*"))) < 2:  # start both fits at the same moment
    time.sleep(0.01)
pool.fit(X, y)
np.save(folder / f"proba-{{name}}.npy", pool.map(proba, X))
print("trained", pool.n_trained_)
"""


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_two_runs_on_one_cache_train_each_model_once(tmp_path: Path, n_jobs: int) -> None:
    code = RUN.format(here=str(HERE))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), name, str(n_jobs)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    lines = (tmp_path / "log").read_text().split()[::2]
    assert len(lines) == 6 and len(set(lines)) == 6  # six models, each trained once
    trained = sorted(int(out.split()[-1]) for out, _ in outs)
    assert sum(trained) == 6
    np.testing.assert_array_equal(np.load(tmp_path / "proba-a.npy"),
                                  np.load(tmp_path / "proba-b.npy"))


HOLD = """
import sys, time
from privaudit.training._cache import _byte_locks
assert _byte_locks.acquire(sys.argv[1], int(sys.argv[2]), blocking=False)
print("locked", flush=True)
time.sleep(300)
"""


def test_a_lock_held_by_a_killed_process_is_free(tmp_path: Path) -> None:
    X, y = data()
    log = tmp_path / "log"
    first = ReferencePool(recipe(log), 3, random_state=1, cache_dir=tmp_path / "c").fit(X, y)
    (first.cache_path_ / "model-00001.json").unlink()  # model 1 must be trained again
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(first.cache_path_ / "models.lock"), "1"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        killer = threading.Timer(1.0, holder.send_signal, args=(signal.SIGKILL,))
        killer.start()
        start = time.perf_counter()
        again = ReferencePool(recipe(log), 3, random_state=1, cache_dir=tmp_path / "c").fit(X, y)
        waited = time.perf_counter() - start
    finally:
        holder.kill()
        holder.wait()
    assert waited >= 0.9  # it waited for the holder, which died without releasing
    assert again.n_trained_ == 1
    np.testing.assert_array_equal(again.map(proba, X), first.map(proba, X))


def _hold(path: Path, acquired: threading.Event, release: threading.Event) -> None:
    assert _byte_locks.acquire(str(path), 1, blocking=False)  # another thread of this run
    acquired.set()
    release.wait(30)
    _byte_locks.release(str(path), 1)


def test_claim_skips_busy_models_and_waits_only_holding_nothing(tmp_path: Path) -> None:
    cache = ModelCache(tmp_path, "ab" * 32, {}, recipe(tmp_path / "log"))
    cache.path.mkdir(parents=True)
    acquired, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold, args=(cache.lock_path, acquired, release))
    holder.start()
    held: set[int] = set()
    try:
        assert acquired.wait(60)
        assert cache.claim([0, 1, 2], held) == [1]
        assert held == {0, 2}
        cache.release(held)
        assert held == set()
        threading.Timer(0.5, release.set).start()
        start = time.perf_counter()
        assert cache.claim([1], held) == []  # all busy: waits for the first one
        assert time.perf_counter() - start >= 0.4 and held == {1}
    finally:
        release.set()
        cache.release(held)
        holder.join()
    assert _byte_locks._files == {}  # the lock file is closed once no lock is held


@pytest.mark.skipif(os.name == "nt", reason="POSIX record locks")
def test_byte_locks_exclude_other_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "models.lock")
    assert _byte_locks.acquire(path, 2, blocking=False)
    try:
        code = ("import sys; from privaudit.training._cache import _byte_locks as b; "
                "p = sys.argv[1]; print(b.acquire(p, 2, blocking=False), "
                "b.acquire(p, 3, blocking=False))")
        out = subprocess.run([sys.executable, "-c", code, path], capture_output=True,
                             text=True, timeout=600)
        assert out.stdout.split() == ["False", "True"], out.stderr[-2000:]
    finally:
        _byte_locks.release(path, 2)
