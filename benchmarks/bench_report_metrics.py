"""AttackResult.metrics: one shared bootstrap pass against one bootstrap_ci call per metric.

Baseline: what ``AttackResult.metrics`` did before ``bootstrap_cis`` -- one
``privaudit.metrics.bootstrap_ci`` call per bootstrapped metric (AUC, advantage, TPR at each
FPR), each with the same seed, so each call redraws the same resamples and recounts the
scores. Candidate: ``AttackResult.metrics``, which calls ``bootstrap_cis`` once: the draws
are made once, the scores sorted once, the class counts accumulated once per resample and
the ROC rates computed once for all metrics. The script checks that every number is
identical in both.

Run::

    .venv/bin/python benchmarks/bench_report_metrics.py        # n=200000, 1000 resamples
    .venv/bin/python benchmarks/bench_report_metrics.py --n 20000 --resamples 200
"""

from __future__ import annotations

import argparse
import functools
import platform
import time

import numpy as np

import privaudit.metrics as pm
from privaudit.results import DEFAULT_FPRS, AttackResult, fpr_key


def per_metric_bootstrap(result: AttackResult, n_bootstrap: int, random_state: int) -> dict:
    """The old path of AttackResult.metrics: one bootstrap_ci per metric, shared seed."""
    seed = int(np.random.default_rng(random_state).integers(2**63 - 1))
    y, s = result.labels, result.scores

    def boot(metric):
        return tuple(pm.bootstrap_ci(metric, y, s, n_resamples=n_bootstrap,
                                     random_state=seed))

    return {
        "auc": boot(pm.roc_auc),
        "advantage": boot(pm.advantage),
        "tpr_at_fpr": {fpr_key(f): boot(functools.partial(pm.tpr_at_fpr, fpr=f))
                       for f in DEFAULT_FPRS},
        "effective_epsilon": pm.effective_epsilon(y, s),
    }


def shared_bootstrap(result: AttackResult, n_bootstrap: int, random_state: int) -> dict:
    out = result.metrics(n_bootstrap=n_bootstrap, random_state=random_state)

    def est(d):
        return (d["value"], d["low"], d["high"])

    return {
        "auc": est(out["auc"]),
        "advantage": est(out["advantage"]),
        "tpr_at_fpr": {k: est(v) for k, v in out["tpr_at_fpr"].items()},
        "effective_epsilon": out["effective_epsilon"]["value"],
    }


def best_of(repeats, func):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="records (half members)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--decimals", type=int, default=None,
                        help="round the scores (ties); default: continuous scores")
    parser.add_argument("--repeats", type=int, default=1, help="best of this many runs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    labels = (np.arange(args.n) < args.n // 2).astype(np.int8)
    scores = rng.normal(size=args.n) + 0.5 * labels
    if args.decimals is not None:
        scores = np.round(scores, args.decimals)
    result = AttackResult(labels=labels, scores=scores, attack="loss", target="model")

    t_old, old = best_of(
        args.repeats, lambda: per_metric_bootstrap(result, args.resamples, args.seed)
    )
    t_new, new = best_of(
        args.repeats, lambda: shared_bootstrap(result, args.resamples, args.seed)
    )
    assert new == old, (new, old)

    n_metrics = 2 + len(DEFAULT_FPRS)
    print(f"python {platform.python_version()}, numpy {np.__version__}")
    print(f"AttackResult.metrics: n={args.n}, {args.resamples} resamples, "
          f"{n_metrics} bootstrapped metrics, "
          f"{np.unique(scores).shape[0]} distinct scores, best of {args.repeats}")
    print(f"  baseline: one bootstrap_ci per metric : {t_old:8.2f} s")
    print(f"  AttackResult.metrics (bootstrap_cis)  : {t_new:8.2f} s")
    print(f"  speed-up                              : {t_old / t_new:8.2f}x")
    auc = new["auc"]
    print(f"  AUC (identical in both)               : {auc[0]:.4f} [{auc[1]:.4f}, {auc[2]:.4f}]")


if __name__ == "__main__":
    main()
