"""Wall time and memory of a whole audit and its report at scale (200,000 records).

A logistic regression on 10 synthetic features, 100,000 members and 100,000 non-members,
two black-box attacks (loss, modified entropy) with slices and the baseline check, then the
full report (HTML, JSON, CSV, plots) with 1,000 bootstrap resamples. The baseline it
reports against is the same report built with one bootstrap per metric (the former path),
timed in the same run on the first result's metrics.

Run:  .venv/bin/python benchmarks/bench_scale_audit.py [--n 200000] [--n-bootstrap 1000]
"""

from __future__ import annotations

import argparse
import functools
import resource
import tempfile
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression

import privaudit
from privaudit.metrics import advantage, bootstrap_ci, roc_auc, tpr_at_fpr
from privaudit.report import build_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n = args.n
    X = rng.normal(size=(n, 10))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    labels = np.r_[np.ones(n // 2, int), np.zeros(n - n // 2, int)]
    model = LogisticRegression().fit(X[: n // 2], y[: n // 2])

    start = time.perf_counter()
    results = privaudit.audit_model(model, X, y, labels, attacks=["loss", "modified-entropy"])
    audit_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        build_report(results, out, n_bootstrap=args.n_bootstrap)
        report_s = time.perf_counter() - start

    r = results[0]
    start = time.perf_counter()
    r.metrics(n_bootstrap=args.n_bootstrap)
    shared_s = time.perf_counter() - start
    start = time.perf_counter()
    seed = int(np.random.default_rng(0).integers(2**63 - 1))
    for metric in [roc_auc, advantage, *(functools.partial(tpr_at_fpr, fpr=f)
                                         for f in (0.0, 0.001, 0.01, 0.1))]:
        bootstrap_ci(metric, r.labels, r.scores, n_resamples=args.n_bootstrap,
                     random_state=seed)
    separate_s = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"n={n}: audit {audit_s:.1f} s, report {report_s:.1f} s, peak memory {peak_mb:.0f} MB")
    print(f"metrics of one result: one bootstrap per metric (baseline) {separate_s:.2f} s, "
          f"shared draws {shared_s:.2f} s, ratio {separate_s / shared_s:.2f}x")


if __name__ == "__main__":
    main()
