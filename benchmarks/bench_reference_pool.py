"""Wall time of training a reference-model pool: 1 worker vs 2 local workers vs Ray.

Workload (as in the LiRA digits benchmark of issue 3): 16 reference MLPs
(scikit-learn MLPClassifier, one hidden layer of 256 units, max_iter=200), each on a random
half of sklearn's digits (online pool, every record IN for exactly 8 models).

Named baseline: one worker, models trained one after another in the calling process with
the BLAS library's default threads (what ML Privacy Meter does). A second sequential row
limits BLAS to one thread, to separate the gain from parallel workers from the gain from
not oversubscribing BLAS threads (each local worker and Ray task runs BLAS on one thread).
Also checks that the runs with one BLAS thread per task (sequential, 2 workers, Ray) give
identical models (same predictions), since parallelism must not change results.

Run:  .venv/bin/python benchmarks/bench_reference_pool.py [--n-models 16] [--max-iter 200]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from threadpoolctl import threadpool_limits

from privaudit.training import LocalExecutor, RayExecutor, ReferencePool


def predict_proba(model, X, y):
    return model.predict_proba(X)


def run(label: str, X, y, n_models: int, max_iter: int, **pool_kwargs):
    recipe = MLPClassifier((256,), max_iter=max_iter)
    start = time.perf_counter()
    pool = ReferencePool(recipe, n_models, random_state=0, **pool_kwargs).fit(X, y)
    wall = time.perf_counter() - start
    probs = pool.map(predict_proba, X)
    print(f"{label:<28} {wall:8.2f} s   (sum of per-model fit times "
          f"{np.nansum(pool.train_seconds_):7.2f} s)")
    return wall, probs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-models", type=int, default=16)
    parser.add_argument("--max-iter", type=int, default=200)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    print(f"{args.n_models} x MLPClassifier((256,), max_iter={args.max_iter}) on random halves "
          f"of digits ({len(X)} records)\n")

    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs\n")

    # Inline runs use LocalExecutor's BLAS limit (threads_per_worker=1, as its workers do):
    # the baseline lifts it to every CPU, as a plain sequential loop would run.
    base, ref_probs = run("1 worker (baseline)", X, y, args.n_models, args.max_iter,
                          executor=LocalExecutor(1, threads_per_worker=os.cpu_count() or 1))
    with threadpool_limits(1):
        one_thread, probs1 = run("1 worker, BLAS 1 thread", X, y, args.n_models,
                                 args.max_iter, n_jobs=1)
    two, probs2 = run("2 local workers", X, y, args.n_models, args.max_iter, n_jobs=2)

    start = time.perf_counter()
    ray_ex = RayExecutor(num_cpus=2, init_kwargs={"log_to_driver": False})
    ray_ex._ensure_ray()
    ray_start = time.perf_counter() - start
    print(f"{'(Ray start-up, 2 CPUs)':<28} {ray_start:8.2f} s")
    ray_wall, probs_ray = run("Ray, 2 CPUs", X, y, args.n_models, args.max_iter,
                              executor=ray_ex)
    ray_ex.shutdown()

    # Same BLAS threads (one per task), same bits; the baseline's BLAS splits its work over
    # every CPU and so may round differently in the last bits.
    identical = all(np.array_equal(probs1, p) for p in (probs2, probs_ray))
    print(f"\nidentical predictions across the runs with 1 BLAS thread per task: {identical}")
    print(f"largest difference from the baseline (BLAS on {os.cpu_count()} threads): "
          f"{np.abs(ref_probs - probs1).max():.1e}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print("\nspeed-up over the 1-worker baseline (higher is better):")
    print(f"  1 worker, BLAS 1 thread   {base / one_thread:5.2f}x")
    print(f"  2 local workers           {base / two:5.2f}x")
    print(f"  Ray, 2 CPUs               {base / ray_wall:5.2f}x")
    print(f"  Ray incl. start-up        {base / (ray_wall + ray_start):5.2f}x")
    print("speed-up over 1 worker with BLAS on 1 thread (parallelism alone):")
    print(f"  2 local workers           {one_thread / two:5.2f}x")
    print(f"  Ray, 2 CPUs               {one_thread / ray_wall:5.2f}x")
    if not identical:
        raise SystemExit("parallel runs changed the models")


if __name__ == "__main__":
    main()
