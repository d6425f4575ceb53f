"""The quantile-regression screen against LiRA-online with 16 and 64 reference models.

Bertran et al.'s attack (``quantile``: one gradient-boosted model of the non-members'
score quantile, no reference model) beside LiRA-online (Carlini et al.) on two overfit
MLPs, with the compute of each (CPU seconds in this process, BLAS/OpenMP on one thread so
that the load of the machine does not count):

- ``digits``: the demo's target, MLP (256,) without weight decay on 600 of sklearn's
  digits, audited on those 600 and 600 held-out digits; the other 597 are the population
  (as ``studies/_reference.py`` builds it);
- ``tv16``: the overfitting study's TV16 target, MLP (512, 256) without weight decay on
  2,000 respondents, audited on those and 2,000 held out; 2,000 more are the population,
  and the quantile attack is also run with 20,000 public records (it queries, never trains,
  so more population costs little).

The reference pool is trained in blocks of 16 online models (each record IN for half of
each block's models, each model on a third of audited + population records, as
``audit_model`` does): LiRA-16 reads the first block, LiRA-64 all four, and the compute of
each is that of the blocks it reads. Rows: AUC, TPR at 1% FPR, the
TPR and CPU time as shares of LiRA-16's, and for the quantile attack the FPR of its hard
decision on the held-out non-members at the nominal alpha (calibration).

Run:  nice .venv/bin/python benchmarks/bench_quantile.py [--targets digits tv16]
      [--blocks 4] [--seed 0]
"""

from __future__ import annotations

import os

# One thread for BLAS and OpenMP: CPU seconds then measure work, not spinning threads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402

from privaudit.attacks.membership import (  # noqa: E402
    LiRAAttack,
    LossAttack,
    QuantileAttack,
    ReferenceOutputs,
    collect_reference_outputs,
)
from privaudit.metrics import roc_auc, tpr_at_fpr  # noqa: E402
from privaudit.targets import SklearnTarget  # noqa: E402

_BLOCK = 16


def _digits(seed: int) -> dict[str, Any]:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(seed).permutation(len(X))
    model_seed = int(np.random.SeedSequence(seed).generate_state(1)[0])
    return {"X": X / 16.0, "y": y, "members": perm[:600], "non_members": perm[600:1200],
            "population": perm[1200:], "public": None,
            "recipe": MLPClassifier((256,), alpha=0.0, max_iter=300, random_state=model_seed)}


def _tv16(seed: int) -> dict[str, Any]:
    from privaudit.data import load_tv16

    data = load_tv16()
    perm = np.random.default_rng(seed).permutation(data.n_records)
    return {"X": data.X, "y": data.y, "members": perm[:2000], "non_members": perm[2000:4000],
            "population": perm[4000:6000], "public": perm[4000:24000],
            "recipe": MLPClassifier((512, 256), alpha=0.0, max_iter=500,
                                    early_stopping=False, random_state=seed)}


def _row(name: str, labels: np.ndarray, scores: np.ndarray, cpu: float,
         fpr_at_alpha: str = "") -> dict[str, Any]:
    return {"attack": name, "auc": roc_auc(labels, scores),
            "tpr": tpr_at_fpr(labels, scores, 0.01), "cpu": cpu, "fpr_at_alpha": fpr_at_alpha}


def _quantile_rows(w: dict[str, Any], target: SklearnTarget, audited: Any, labels: np.ndarray,
                   seed: int) -> list[dict[str, Any]]:
    X, y = w["X"], w["y"]
    rows = []
    populations = [("", w["population"])]
    if w["public"] is not None:
        populations.append((f", {len(w['public']):,} public", w["public"]))
    for suffix, pop in populations:
        for method in ("gaussian", "pinball"):
            start = time.process_time()
            attack = QuantileAttack(method=method, random_state=seed).fit(target, X[pop], y[pop])
            result = attack.run(target, X[audited], y[audited], labels, outputs=audited_out(
                target, X, y, audited))
            cpu = time.process_time() - start
            rows.append(_row(f"quantile ({method}{suffix})", labels, result.scores, cpu,
                             _calibration(attack.model_, result.scores, labels)))
    return rows


_AUDITED: dict[int, Any] = {}


def audited_out(target: SklearnTarget, X: Any, y: Any, audited: Any) -> Any:
    """The target's outputs on the audited records, queried once (shared, not timed)."""
    key = id(target)
    if key not in _AUDITED:
        _AUDITED[key] = target.query(X[audited], y[audited])
    return _AUDITED[key]


def _calibration(model: Any, scores: np.ndarray, labels: np.ndarray) -> str:
    """FPR of the hard decision on the held-out non-members at three levels, one model."""
    held_out = scores[labels == 0]
    return "; ".join(f"{np.mean(held_out > model.threshold_at(alpha)):.3f} ({alpha})"
                     for alpha in (0.01, 0.05, 0.1))


def _lira_rows(w: dict[str, Any], target: SklearnTarget, audited: Any, labels: np.ndarray,
               seed: int, n_blocks: int) -> list[dict[str, Any]]:
    X, y, pop = w["X"], w["y"], w["population"]
    fraction = len(w["members"]) / (len(audited) + len(pop))
    blocks, cpus, rows = [], [], []
    out = audited_out(target, X, y, audited)
    for b in range(n_blocks):
        start = time.process_time()
        blocks.append(collect_reference_outputs(
            w["recipe"], X[audited], y[audited], X_population=X[pop], y_population=y[pop],
            n_models=_BLOCK, mode="online", train_fraction=fraction, query_population=False,
            random_state=seed * 1000 + b))
        cpus.append(time.process_time() - start)
        n = _BLOCK * (b + 1)
        if n not in (16, 64):
            continue
        pool = ReferenceOutputs(
            audited=tuple(o for blk in blocks for o in blk.audited),
            audited_in=np.vstack([blk.audited_in for blk in blocks]), mode="online")
        start = time.process_time()
        scores = LiRAAttack(online=True).fit(pool).score(outputs=out)
        rows.append(_row(f"lira-online ({n} models)", labels, scores,
                         sum(cpus) + time.process_time() - start))
        print(f"  [{w['name']}] lira-online {n}: {rows[-1]}", flush=True)
    return rows


def run(name: str, seed: int, n_blocks: int) -> None:
    w = {"digits": _digits, "tv16": _tv16}[name](seed)
    w["name"] = name
    X, y = w["X"], w["y"]
    audited = np.concatenate([w["members"], w["non_members"]])
    labels = np.r_[np.ones(len(w["members"])), np.zeros(len(w["non_members"]))].astype(np.int8)
    from sklearn.base import clone

    start = time.process_time()
    model = clone(w["recipe"]).fit(X[w["members"]], y[w["members"]])
    train_cpu = time.process_time() - start
    target = SklearnTarget(model, name=f"{name}-mlp")
    test_acc = model.score(X[w["non_members"]], y[w["non_members"]])
    loss = LossAttack().score(outputs=audited_out(target, X, y, audited))
    rows = [_row("loss", labels, loss, 0.0)]
    rows += _quantile_rows(w, target, audited, labels, seed)
    print(f"  [{name}] quantile done: {rows[1:]}", flush=True)
    if n_blocks:
        rows += _lira_rows(w, target, audited, labels, seed, n_blocks)
    _print_table(name, rows, test_acc, train_cpu)


def _print_table(name: str, rows: list[dict[str, Any]], test_acc: float,
                 train_cpu: float) -> None:
    lira16 = next((r for r in rows if r["attack"] == "lira-online (16 models)"), None)
    print(f"\n## {name} (target test accuracy {test_acc:.3f}; training the target: "
          f"{train_cpu:.1f} CPU-s)\n")
    print("| attack | AUC | TPR@1%FPR | TPR / LiRA-16 | CPU-s | CPU / LiRA-16 | held-out FPR "
          "at alpha (0.01; 0.05; 0.1) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        share = (f"{r['tpr'] / lira16['tpr']:.2f}" if lira16 and lira16["tpr"] > 0 else "-")
        cost = f"{r['cpu'] / lira16['cpu']:.3f}" if lira16 else "-"
        print(f"| {r['attack']} | {r['auc']:.3f} | {r['tpr']:.3f} | {share} | {r['cpu']:.1f} "
              f"| {cost} | {r['fpr_at_alpha']} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["digits", "tv16"],
                        choices=["digits", "tv16"])
    parser.add_argument("--blocks", type=int, default=4,
                        help="blocks of 16 reference models (4: LiRA-16 and LiRA-64; 0: "
                        "the quantile attack and LOSS only)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for name in args.targets:
        run(name, args.seed, args.blocks)


if __name__ == "__main__":
    main()
