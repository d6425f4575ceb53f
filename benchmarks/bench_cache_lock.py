"""Cost of the per-model cache locks in a single audit's reference pool.

Workload: one reference pool of 16 small models (scikit-learn LogisticRegression on 600
records of digits, cached as skops files), trained into a fresh cache directory, inline
(n_jobs=1) and with 2 local workers. Small, fast models are the worst case for the lock:
its cost (the pool's lock file created and opened once, one record-lock system call per
model, and one manifest re-check per model) is the largest relative to the training time.

Named baseline: the same pool with the locks switched off (the private switch
``privaudit.training._cache._LOCKING``), measured in the same run, runs interleaved
(in alternating order) so that machine load hits both alike. Prints the best and the
median wall time of each and the ratios (1.00 = no measurable cost; the best-of ratio is the
one a loaded machine disturbs least), and the cost of one lock on its own.

Run:  .venv/bin/python benchmarks/bench_cache_lock.py [--n-models 16] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from privaudit.training import LocalExecutor, ReferencePool, _cache


def fit_once(X, y, n_models: int, executor, locking: bool) -> float:
    _cache._LOCKING = locking
    try:
        with tempfile.TemporaryDirectory() as cache:
            start = time.perf_counter()
            pool = ReferencePool(LogisticRegression(max_iter=100), n_models, random_state=0,
                                 executor=executor, cache_dir=cache).fit(X, y)
            wall = time.perf_counter() - start
            assert pool.n_trained_ == n_models
    finally:
        _cache._LOCKING = True
    return wall


def lock_cost(n_models: int, repeats: int = 200) -> float:
    """Seconds to lock and release a fresh pool's ``n_models`` models, as a fit does."""
    total = 0.0
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as d:
            cache = _cache.ModelCache(d, "0" * 64, {}, None)
            Path(cache.path).mkdir()
            held: set[int] = set()
            start = time.perf_counter()
            cache.claim(range(n_models), held)  # creates the lock file
            for i in range(n_models):
                cache.release(held, i)
            total += time.perf_counter() - start
    return total / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-models", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = load_digits(return_X_y=True)
    X, y = X[:600] / 16.0, y[:600]
    print(f"{args.n_models} x LogisticRegression on {len(X)} digits, fresh cache each run, "
          f"{args.repeats} interleaved runs of each\n")
    locks = lock_cost(args.n_models)
    print(f"locking and releasing the {args.n_models} models of a fresh pool: "
          f"{locks * 1e3:.2f} ms\n")
    print(f"{'executor':<20} {'':<7} {'no lock (baseline)':>18} {'lock':>9} {'ratio':>7}")
    for label, executor in (("inline (n_jobs=1)", LocalExecutor(1)),
                            ("2 local workers", LocalExecutor(2))):
        fit_once(X, y, args.n_models, executor, True)  # warm-up: imports, worker start
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.repeats):
            for locking in (False, True) if len(times[True]) % 2 else (True, False):
                times[locking].append(fit_once(X, y, args.n_models, executor, locking))
        for stat, f in (("best", min), ("median", statistics.median)):
            base, lock = f(times[False]), f(times[True])
            print(f"{label:<20} {stat:<7} {base:16.3f} s {lock:7.3f} s {lock / base:6.3f}x")
        print(f"{'':<20} {'locks':<7} {locks:16.4f} s "
              f"({100 * locks / min(times[False]):.2f}% of the best run)")
        if isinstance(executor, LocalExecutor):
            executor.close()
    print("\n(ratio = time with the lock / time without; 1.00 means no measurable cost)")


if __name__ == "__main__":
    main()
