"""Membership attacks on an overfit MLP of sklearn digits, with 16 and 64 reference models.

The setting of Carlini et al.'s reference table, scaled to what ships offline: an MLP
(256,) without weight decay trained on 600 random digits, audited on those 600 and 600
held-out digits; 597 more are the population. For every attack: AUC, TPR at 0.1% and 1%
FPR with 95% bootstrap intervals, and the ratio of its TPR@1%FPR to LOSS's (the named
baseline, measured in the same run). Also the wall time of the whole audit.

``--augment`` runs LiRA with augmented queries (every shift by at most one pixel, Carlini
et al. 2022, Section VI.B); the other attacks are unchanged.

Run:  .venv/bin/python benchmarks/bench_digits_attacks.py [--models 16 64] [--seeds 0]
      [--augment]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from privaudit.attacks.membership import image_shifts
from privaudit.studies import run_reference_study


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    parser.add_argument("--augment", action="store_true",
                        help="LiRA with augmented queries: image_shifts((8, 8), 1)")
    args = parser.parse_args()
    augmentations = image_shifts((8, 8), 1) if args.augment else None
    warnings.simplefilter("ignore")
    for n_models in args.models:
        for seed in args.seeds:
            start = time.perf_counter()
            results = run_reference_study(seed, n_reference_models=n_models, n_jobs=args.n_jobs,
                                          augmentations=augmentations)
            seconds = time.perf_counter() - start
            rows = []
            for r in results:
                m = r.metrics(fprs=(0.001, 0.01), n_bootstrap=args.n_bootstrap,
                              random_state=seed)
                rows.append((r.attack, m["auc"], m["tpr_at_fpr"]["0.001"],
                             m["tpr_at_fpr"]["0.01"]))
            base = next(row[3]["value"] for row in rows if row[0] == "loss")
            aug = " (LiRA with 8 shifted queries)" if args.augment else ""
            print(f"\n## {n_models} reference models, seed {seed}{aug} "
                  f"(target test accuracy {results[0].extra['test_accuracy']:.3f}; "
                  f"audit {seconds:.0f} s)\n")
            print("| attack | AUC [95% CI] | TPR@0.1%FPR [95% CI] | TPR@1%FPR [95% CI] "
                  "| TPR@1% / LOSS |")
            print("|---|---|---|---|---|")

            def ci(e: dict) -> str:
                return f"{e['value']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"

            for attack, auc, t01, t1 in rows:
                ratio = t1["value"] / base if base > 0 else np.inf
                print(f"| {attack} | {ci(auc)} | {ci(t01)} | {ci(t1)} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
