"""Vectorised bootstrap of the AUC against the naive loop of scikit-learn calls.

Baseline: for each of the same resamples, ``sklearn.metrics.roc_auc_score`` (what TAPAS and
most MIA tools do for bootstrap intervals). Candidate: ``privaudit.metrics.bootstrap_ci(
roc_auc, ...)``, which evaluates all resamples at once from class counts per distinct score.
Both use the same stratified resample indices, so the intervals must agree; the script
checks it.

Run::

    .venv/bin/python benchmarks/bench_metrics.py            # n=20000, 1000 resamples
    .venv/bin/python benchmarks/bench_metrics.py --n 5000 --resamples 200 --repeats 1
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import sklearn
from sklearn.metrics import roc_auc_score

from privaudit.metrics import bootstrap_ci, roc_auc
from privaudit.metrics._intervals import _resample_draws


def naive_bootstrap(labels, scores, n_resamples, confidence, seed):
    """Percentile bootstrap with one sklearn call per resample (same draws as privaudit)."""
    rng = np.random.default_rng(seed)
    groups, chunks = _resample_draws(labels, n_resamples, rng, stratified=True)
    stats = []
    for draws in chunks:
        idx = np.concatenate([g[d] for g, d in zip(groups, draws, strict=True)], axis=1)
        stats.extend(roc_auc_score(labels[row], scores[row]) for row in idx)
    alpha = 1 - confidence
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return roc_auc_score(labels, scores), low, high


def best_of(repeats, func):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="records (half members)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    labels = (np.arange(args.n) < args.n // 2).astype(np.int8)
    # Rounded scores: realistic ties (e.g. losses printed to 3 decimals).
    scores = np.round(rng.normal(size=args.n) + 0.5 * labels, 3)

    t_naive, naive = best_of(
        args.repeats, lambda: naive_bootstrap(labels, scores, args.resamples, 0.95, args.seed)
    )
    t_fast, fast = best_of(
        args.repeats,
        lambda: bootstrap_ci(roc_auc, labels, scores, n_resamples=args.resamples,
                             random_state=args.seed),
    )
    assert np.allclose(naive, tuple(fast), rtol=0, atol=1e-12), (naive, fast)

    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"scikit-learn {sklearn.__version__}")
    print(f"bootstrap CI of the AUC: n={args.n}, {args.resamples} resamples, "
          f"best of {args.repeats}")
    print(f"  naive loop of sklearn roc_auc_score : {t_naive:8.3f} s")
    print(f"  privaudit bootstrap_ci(roc_auc)     : {t_fast:8.3f} s")
    print(f"  speed-up                            : {t_naive / t_fast:8.1f}x")
    print(f"  interval (identical in both)        : {fast.value:.4f} "
          f"[{fast.low:.4f}, {fast.high:.4f}]")


if __name__ == "__main__":
    main()
