"""LiRA on a random forest, whose probabilities of exactly 0 or 1 saturate its statistic.

sklearn digits, RandomForestClassifier(100 trees) trained on 600 random digits; audited on
those 600 and 600 held-out digits, the other 597 are the population. 16 reference models
trained like the target (each on 600 of the 1,797 records, as ``audit_model`` does), one
pool shared by every attack. For each attack: AUC and TPR at 1% and 0.1% FPR, the ratio of
TPR@1%FPR to LOSS's (the named baseline, same run), before and after the fix:

- before: LiRA's former defaults, reachable by parameters: the statistic clipped at the
  smallest normal float64 (``eps=np.finfo(float).tiny``, saturating at +-708.4) and
  ``fix_variance=True`` (what ``"auto"`` meant below 64 models: one variance pooled over
  every record, saturated ones included);
- after: the defaults (the same ``eps``; ``fix_variance="auto"`` now pools the variance over
  the regular records only and gives saturated or outlying records their own variance).
  Carlini et al.'s code clips at 1e-45 instead; that changes nothing on this forest and
  hurts a sharp MLP (TPR@1%FPR 0.077 -> 0.013-0.037), so the default keeps float64's tiny.

Run:  .venv/bin/python benchmarks/bench_lira_saturated.py [--models 16] [--seeds 0]
      [--trees 100]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier

from privaudit.attacks.membership import (
    LiRAAttack,
    LossAttack,
    RMIAAttack,
    collect_reference_outputs,
)
from privaudit.metrics import roc_auc, tpr_at_fpr
from privaudit.targets import SklearnTarget

_BEFORE = {"eps": float(np.finfo(np.float64).tiny), "fix_variance": True}


def _attacks(pool, population_outputs):
    yield "loss", "-", LossAttack()
    for online in (True, False):
        name = "lira-online" if online else "lira-offline"
        yield name, "before", LiRAAttack(online=online, **_BEFORE).fit(pool)
        yield name, "after", LiRAAttack(online=online).fit(pool)
    yield "lira-online", "per-record variance", LiRAAttack(fix_variance=False).fit(pool)
    yield "rmia", "-", RMIAAttack().fit(pool, population_outputs)


def run(seed: int, n_models: int, n_trees: int) -> None:
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(seed).permutation(len(X))
    members, non_members, population = perm[:600], perm[600:1200], perm[1200:]
    audited = np.concatenate([members, non_members])
    labels = np.r_[np.ones(600, dtype=np.int8), np.zeros(600, dtype=np.int8)]
    start = time.perf_counter()

    def forest() -> RandomForestClassifier:
        return RandomForestClassifier(n_trees, random_state=seed)

    target = SklearnTarget(forest().fit(X[members], y[members]), name="digits-rf")
    outputs = target.query(X[audited], y[audited])
    population_outputs = target.query(X[population], y[population])
    pool = collect_reference_outputs(
        forest(), X[audited], y[audited], X_population=X[population],
        y_population=y[population], n_models=n_models, mode="online",
        train_fraction=600 / len(X), random_state=seed, n_jobs=1,
    )
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, variant, attack in _attacks(pool, population_outputs):
            scores = attack.score(outputs=outputs)
            rows.append((name, variant, roc_auc(labels, scores),
                         tpr_at_fpr(labels, scores, fpr=0.01),
                         tpr_at_fpr(labels, scores, fpr=0.001)))
    seconds = time.perf_counter() - start
    base = rows[0][3]
    print(f"\n## RandomForest({n_trees}) on digits, {n_models} reference models, seed {seed} "
          f"({seconds:.0f} s)\n")
    print("| attack | LiRA | AUC | TPR@1%FPR | TPR@0.1%FPR | TPR@1% / LOSS |")
    print("|---|---|---|---|---|---|")
    for name, variant, auc, t1, t01 in rows:
        ratio = t1 / base if base > 0 else float("inf")
        print(f"| {name} | {variant} | {auc:.3f} | {t1:.3f} | {t01:.3f} | {ratio:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[16])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--trees", type=int, default=100)
    args = parser.parse_args()
    for n_models in args.models:
        for seed in args.seeds:
            run(seed, n_models, args.trees)


if __name__ == "__main__":
    main()
