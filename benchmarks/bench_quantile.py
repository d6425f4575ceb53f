"""The quantile-regression screen against LiRA-online with 16 and 64 reference models.

Bertran et al.'s attack (``quantile``: one regression model of the non-members' score
quantile, no reference model) beside LiRA-online (Carlini et al.) on two overfit MLPs,
with the compute of each (CPU seconds in this process, BLAS/OpenMP on one thread so that
the load of the machine does not count):

- ``digits``: the demo's target, MLP (256,) without weight decay on 600 of sklearn's
  digits, audited on those 600 and 600 held-out digits; the other 597 are the population
  (as ``studies/_reference.py`` builds it);
- ``tv16``: the overfitting study's TV16 target, MLP (512, 256) without weight decay on
  2,000 respondents, audited on those and 2,000 held out; 2,000 more are the population,
  and the quantile attack is also run with all 58,479 respondents not audited as public
  records (it queries, never trains, so more population costs little), with its default
  schedule (3 folds, step 0.2 from 10,000 records) and with the small populations' one
  (5 folds, step 0.1).

The reference pool is trained in blocks of 16 online models (each record IN for half of
each block's models, each model on a third of audited + population records, as
``audit_model`` does): LiRA-16 reads the first block, LiRA-64 all four, and the compute of
each is that of the blocks it reads. Rows: TPR at 1% FPR (mean and standard deviation
over seeds), its share of LiRA-16's (the mean of the per-seed shares), the CPU time as a
share of LiRA-16's, and for the quantile attack the FPR of its hard decision on the
held-out non-members at three nominal levels (calibration), averaged over seeds.

The quantile attack's compute includes its query of the target on the population (timed
once per seed), not the query on the audited records (every attack makes it). With
``--cache DIR`` each seed's target outputs and LiRA scores are kept in ``DIR`` (LiRA's are
the same whatever the quantile variant), so that variants are compared in seconds.

Run:  nice .venv/bin/python benchmarks/bench_quantile.py [--targets digits tv16]
      [--blocks 4] [--seeds 0 1 2] [--cache /tmp/quantile-cache]
"""

from __future__ import annotations

import os

# One thread for BLAS and OpenMP: CPU seconds then measure work, not spinning threads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import pickle  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
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
_LEVELS = (0.01, 0.05, 0.1)
#: The quantile variants measured: label, QuantileAttack parameters, population used.
VARIANTS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("quantile (default)", {}, "population"),
    ("quantile (pinball)", {"method": "pinball"}, "population"),
    ("quantile (default, all 58,479 public)", {}, "public"),
    ("quantile (5 folds, step 0.1, all 58,479 public)", {"n_folds": 5, "learning_rate": 0.1},
     "public"),
)


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
            "population": perm[4000:6000], "public": perm[4000:],
            "recipe": MLPClassifier((512, 256), alpha=0.0, max_iter=500,
                                    early_stopping=False, random_state=seed)}


def _timed_query(target: SklearnTarget, X: Any, y: Any) -> tuple[Any, float]:
    start = time.process_time()
    return target.query(X, y), time.process_time() - start


def _train_target(w: dict[str, Any]) -> dict[str, Any]:
    """The target, its outputs on audited, population and public records, LOSS's scores."""
    from sklearn.base import clone

    X, y = w["X"], w["y"]
    start = time.process_time()
    model = clone(w["recipe"]).fit(X[w["members"]], y[w["members"]])
    state = {"train_cpu": time.process_time() - start,
             "test_acc": model.score(X[w["non_members"]], y[w["non_members"]]),
             "labels": np.r_[np.ones(len(w["members"])),
                             np.zeros(len(w["non_members"]))].astype(np.int8), "lira": {}}
    target = SklearnTarget(model, name=f"{w['name']}-mlp")
    audited = np.concatenate([w["members"], w["non_members"]])
    state["audited"] = target.query(X[audited], y[audited])
    for key in ("population", "public"):
        if w[key] is not None:
            state[f"{key}_out"], state[f"{key}_query_cpu"] = _timed_query(
                target, X[w[key]], y[w[key]])
    state["loss"] = LossAttack().score(outputs=state["audited"])
    return state


def _lira(w: dict[str, Any], state: dict[str, Any], seed: int, n_blocks: int) -> None:
    """LiRA-online's scores and CPU seconds with 16 (and 64) models, into ``state``."""
    X, y, pop = w["X"], w["y"], w["population"]
    audited = np.concatenate([w["members"], w["non_members"]])
    fraction = len(w["members"]) / (len(audited) + len(pop))
    blocks, cpus = [], []
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
        scores = LiRAAttack(online=True).fit(pool).score(outputs=state["audited"])
        state["lira"][n] = (scores, sum(cpus) + time.process_time() - start)
        # Offline LiRA on the same pool reads each record's OUT models only: what a
        # quantile model predicts from features, measured on models instead.
        start = time.process_time()
        offline = LiRAAttack(online=False).fit(pool).score(outputs=state["audited"])
        state.setdefault("lira_offline", {})[n] = (
            offline, sum(cpus) + time.process_time() - start)
        print(f"  [{w['name']} seed {seed}] lira-online {n}: "
              f"{tpr_at_fpr(state['labels'], scores, 0.01):.3f}", flush=True)


def prepare(name: str, seed: int, n_blocks: int, cache: Path | None) -> dict[str, Any]:
    """Everything but the quantile attack for one target and seed (cached when asked)."""
    w = {"digits": _digits, "tv16": _tv16}[name](seed)
    w["name"] = name
    path = cache / f"{name}-seed{seed}.pkl" if cache is not None else None
    state = None
    if path is not None and path.exists():
        with path.open("rb") as fh:
            state = pickle.load(fh)  # our own cache, written below
        for key in ("population", "public"):  # the first caches named outputs like indices
            if key in state:
                state[f"{key}_out"] = state.pop(key)
    wanted = {16} | ({64} if n_blocks >= 4 else set()) if n_blocks else set()
    stale = state is not None and w["public"] is not None and len(
        state.get("public_out", ())) != len(w["public"])  # cached with fewer public records
    changed = state is None or stale
    if state is None:
        state = _train_target(w)
    elif stale:  # the same target (seeded), queried on every public record; LiRA kept
        state = _train_target(w) | {k: state[k] for k in ("lira", "lira_offline")
                                    if k in state}
    if n_blocks and not wanted <= set(state.get("lira_offline", {})):
        _lira(w, state, seed, n_blocks)
        changed = True
    if changed and path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as fh:
            pickle.dump(state, fh)
    state.update(w)
    return state


def _quantile_row(state: dict[str, Any], params: dict[str, Any], key: str,
                  seed: int) -> dict[str, Any] | None:
    if state[key] is None:
        return None
    pop = state[f"{key}_out"]
    start = time.process_time()
    attack = QuantileAttack(random_state=seed, **params).fit(
        X=state["X"][state[key]], outputs=pop)
    audited = np.concatenate([state["members"], state["non_members"]])
    scores = attack.score(X=state["X"][audited], outputs=state["audited"])
    cpu = time.process_time() - start + state[f"{key}_query_cpu"]
    held_out = scores[state["labels"] == 0]
    calibration = [float(np.mean(held_out > attack.model_.threshold_at(a))) for a in _LEVELS]
    return _row(state, scores, cpu, calibration)


def _row(state: dict[str, Any], scores: np.ndarray, cpu: float,
         calibration: list[float] | None = None) -> dict[str, Any]:
    labels = state["labels"]
    return {"auc": roc_auc(labels, scores), "tpr": tpr_at_fpr(labels, scores, 0.01),
            "cpu": cpu, "calibration": calibration}


def rows_for_seed(state: dict[str, Any], seed: int,
                  variants: tuple[tuple[str, dict[str, Any], str], ...] = VARIANTS
                  ) -> dict[str, dict[str, Any]]:
    """Every attack's row on one seed's target, keyed by attack name."""
    rows = {"loss": _row(state, state["loss"], 0.0)}
    for label, params, key in variants:
        row = _quantile_row(state, params, key, seed)
        if row is not None:
            rows[label] = row
    for n, (scores, cpu) in sorted(state["lira"].items()):
        rows[f"lira-online ({n} models)"] = _row(state, scores, cpu)
    for n, (scores, cpu) in sorted(state.get("lira_offline", {}).items()):
        rows[f"lira-offline ({n} models)"] = _row(state, scores, cpu)
    return rows


def _summary(per_seed: list[dict[str, dict[str, Any]]]) -> list[str]:
    """Markdown rows: mean (sd) over seeds of each attack's TPR, shares and calibration."""
    lines = []
    for name in per_seed[0]:
        rows = [seeds[name] for seeds in per_seed]
        lira = [seeds.get("lira-online (16 models)") for seeds in per_seed]
        tpr = np.array([r["tpr"] for r in rows])
        share = cost = "-"
        if all(ref is not None for ref in lira):
            pairs = list(zip(rows, lira, strict=True))
            shares = [r["tpr"] / ref["tpr"] for r, ref in pairs]
            share = f"{np.mean(shares):.2f} ({min(shares):.2f}-{max(shares):.2f})"
            cost = f"{np.mean([r['cpu'] / ref['cpu'] for r, ref in pairs]):.3f}"
        calib = "-"
        if rows[0]["calibration"] is not None:
            calib = " / ".join(f"{np.mean([r['calibration'][i] for r in rows]):.3f}"
                               for i in range(len(_LEVELS)))
        lines.append(f"| {name} | {np.mean([r['auc'] for r in rows]):.3f} | {tpr.mean():.3f} "
                     f"({tpr.std(ddof=1) if len(tpr) > 1 else 0:.3f}) | {share} | "
                     f"{np.mean([r['cpu'] for r in rows]):.1f} | {cost} | {calib} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["digits", "tv16"],
                        choices=["digits", "tv16"])
    parser.add_argument("--blocks", type=int, default=4,
                        help="blocks of 16 reference models (4: LiRA-16 and LiRA-64; 1: "
                        "LiRA-16; 0: the quantile attack and LOSS only)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cache", type=Path, default=None,
                        help="folder keeping each seed's target outputs and LiRA scores")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for name in args.targets:
        per_seed, accuracy = [], []
        for seed in args.seeds:
            state = prepare(name, seed, args.blocks, args.cache)
            per_seed.append(rows_for_seed(state, seed))
            accuracy.append(state["test_acc"])
        print(f"\n## {name} (seeds {args.seeds}; target test accuracy "
              f"{np.mean(accuracy):.3f})\n")
        print("| attack | AUC | TPR@1%FPR mean (sd) | TPR / LiRA-16 (range over seeds) | "
              "CPU-s | CPU / LiRA-16 | "
              "held-out FPR at alpha = 0.01 / 0.05 / 0.1 |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(_summary(per_seed)), flush=True)


if __name__ == "__main__":
    main()
