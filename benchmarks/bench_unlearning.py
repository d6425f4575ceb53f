"""Machine-unlearning audits: shadow-model throughput, stacked (torch.func) vs one by one.

Workload: 16 shadow MLPs (``TorchMLPRecipe``, one hidden layer of 256 units, 50 epochs,
batches of 64) on random parts of sklearn's digits, about 1,000 records each (an online
pool with ``train_fraction=0.55``: the sizes differ by a few records, as in an audit).
Every row trains the same 16 models (same training sets, same seeds):

- ``(a) sequential loop``: ``recipe.train`` one model after another, one torch thread
  (the named baseline);
- ``(b) train_stacked``: all 16 at once in this process, one thread, parameters stacked
  with ``torch.func.stack_module_state`` and the forward pass under ``torch.vmap``;
- ``(a2) pool, stack=1``: ``ReferencePool`` on a 2-worker ``LocalExecutor``, one model per
  task (what parallel workers alone give);
- ``(c) pool, stack=8``: the same pool with ``TorchMLPRecipe(stack=8)``: chunks of 8
  models, one per worker.

Worker processes are started (torch imported) before the pool rows are timed, as a long
audit pays that once. The script checks the stacked models against the sequential ones
(largest weight difference: float rounding of batched products) and the pool's stacked
models against ``train_stacked``'s (bit for bit: grouping changes nothing).

    python benchmarks/bench_unlearning.py           # 16 models, 50 epochs
    python benchmarks/bench_unlearning.py --quick   # 8 models, 10 epochs

Second section, Apollo's search (Algorithm 1) on ``stevedata::TV16``: 16 unlearned shadow
MLPs (hidden 256), 400 audited records (200 unlearned by gradient ascent, 200 held out),
30 rounds per search:

- the search with the shadows queried through ``torch.func`` (stacked parameters, one
  batched forward and backward per round) against the same search with a loop over the
  shadows (the named baseline: what the authors' code does without ``torch.func``);
- the target's label queries per record: privaudit asks only at the rounds some ``tau``
  can stop at, and only until the answer changes, against the authors' code, which asks at
  every round of both searches (``2 T = 60`` per record), with the scores unchanged.

Sections print one after another from ``main``; each is a function of the parsed
arguments.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from sklearn.datasets import load_digits

from privaudit.training import LocalExecutor, ReferencePool, TorchMLPRecipe
from privaudit.training._stacked import train_stacked


def shadow_recipe(epochs: int, stack: int = 1) -> TorchMLPRecipe:
    return TorchMLPRecipe((256,), epochs=epochs, batch_size=64, classes=np.arange(10),
                          stack=stack)


def shadow_plan(n_models: int) -> tuple[np.ndarray, np.ndarray, list, list[int]]:
    """Digits, and the training sets and seeds a 16-model online pool draws."""
    X, y = load_digits(return_X_y=True)
    plan = ReferencePool(_untrained, n_models, train_fraction=0.55, random_state=0).fit(X, y)
    datasets = [(X[rows], y[rows]) for rows in plan.train_indices_]
    return X, y, datasets, [int(s) for s in plan.seeds_]


def _untrained(X: Any, y: Any, *, random_state: int) -> None:
    return None  # only the pool's masks and seeds are needed


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def time_sequential(recipe: TorchMLPRecipe, datasets: list, seeds: list[int]) -> tuple:
    """(a) One ``recipe.train`` after another."""
    return timed(lambda: [recipe.train(X, y, random_state=s)
                          for (X, y), s in zip(datasets, seeds, strict=True)])


def time_stacked(recipe: TorchMLPRecipe, datasets: list, seeds: list[int]) -> tuple:
    """(b) All models in one ``train_stacked`` call."""
    return timed(lambda: train_stacked(recipe, datasets, seeds))


def time_pool(recipe: TorchMLPRecipe, X: np.ndarray, y: np.ndarray, n_models: int,
              executor: LocalExecutor) -> tuple:
    """(a2)/(c) A ``ReferencePool`` on ``executor`` (workers already started)."""
    def fit() -> list:
        pool = ReferencePool(recipe, n_models, train_fraction=0.55, random_state=0,
                             executor=executor).fit(X, y)
        return list(pool.models_)
    return timed(fit)


def max_difference(a: list, b: list) -> float:
    return max(float((p - q).abs().max()) for m, n in zip(a, b, strict=True)
               for p, q in zip(m.state_dict().values(), n.state_dict().values(), strict=True))


def report(label: str, seconds: float, n_models: int, baseline: float) -> None:
    print(f"{label:<28} {seconds:7.2f} s   {n_models / seconds:6.2f} models/s   "
          f"x{baseline / seconds:5.2f}")


def shadow_throughput(args: argparse.Namespace) -> None:
    """Shadow models per second: sequential, stacked, and the pool with and without stack."""
    n_models, epochs = (8, 10) if args.quick else (16, 50)
    X, y, datasets, seeds = shadow_plan(n_models)
    sizes = [len(d[1]) for d in datasets]
    print(f"## Shadow-model throughput: {n_models} x TorchMLPRecipe((256,), epochs={epochs}, "
          f"batch_size=64) on digits, {min(sizes)}-{max(sizes)} records each")
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}\n")
    recipe = shadow_recipe(epochs)
    warm = shadow_recipe(1)  # first-call costs (about a second) out of every timing
    warm.train(*datasets[0], random_state=0)
    train_stacked(warm, datasets[:2], seeds[:2])
    seq_s, sequential = time_sequential(recipe, datasets, seeds)
    report("(a) sequential loop", seq_s, n_models, seq_s)
    st_s, stacked = time_stacked(recipe, datasets, seeds)
    report("(b) train_stacked", st_s, n_models, seq_s)
    with LocalExecutor(n_jobs=2) as executor:
        ReferencePool(shadow_recipe(1, stack=2), 2, random_state=1,
                      executor=executor).fit(X[:200], y[:200])  # start workers, import torch
        pool1_s, _ = time_pool(recipe, X, y, n_models, executor)
        report("(a2) pool, stack=1, 2 workers", pool1_s, n_models, seq_s)
        pool_s, pooled = time_pool(shadow_recipe(epochs, stack=8), X, y, n_models, executor)
        report("(c) pool, stack=8, 2 workers", pool_s, n_models, seq_s)
    print(f"\nlargest weight difference, stacked vs sequential: "
          f"{max_difference(stacked, sequential):.2e}")
    print(f"largest weight difference, pool (chunks of 8) vs train_stacked (all {n_models}): "
          f"{max_difference(pooled, stacked):.2e}")
    agree = np.mean([np.mean(a.predict(X) == b.predict(X))
                     for a, b in zip(stacked, sequential, strict=True)])
    print(f"predictions on all of digits equal (stacked vs sequential): {agree:.4%}\n")


def _apollo_world(quick: bool) -> dict[str, Any]:
    import warnings

    from privaudit.data import load_tv16
    from privaudit.unlearn import UnlearningRecipe, unlearn

    d = load_tv16(n_rows=8000, random_state=0)
    X, y = d.X.astype(np.float32), d.y
    classes = np.unique(y)
    perm = np.random.default_rng(0).permutation(len(X))
    n_train = 1000 if quick else 2000
    train, held = perm[:n_train], perm[n_train:n_train + n_train // 10]
    pop = perm[n_train + n_train // 10:2 * n_train + n_train // 5 + 1800]
    forget, retain = train[:n_train // 10], train[n_train // 10:]
    recipe = TorchMLPRecipe(hidden=(256,), epochs=30 if quick else 60, classes=classes,
                            stack=8)
    ga = {"lr": 0.002, "epochs": 5}
    model = unlearn(recipe.train(X[train], y[train], random_state=1),
                    (X[forget], y[forget]), (X[retain], y[retain]), method="GA",
                    random_state=1, **ga)
    audited = np.r_[forget, held]
    X_all, y_all = np.r_[X[audited], X[pop]], np.r_[y[audited], y[pop]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pool = ReferencePool(UnlearningRecipe(recipe, (X[audited], y[audited]),
                                              method="GA", params=ga),
                             8 if quick else 16, mode="online",
                             train_fraction=n_train / len(y_all), random_state=0).fit(
            X_all, y_all, audited=np.arange(len(audited)))
    labels = np.r_[np.ones(len(forget)), np.zeros(len(held))].astype(np.int8)
    return dict(X=X[audited], y=y[audited], labels=labels, model=model, pool=pool,
                classes=classes)


def apollo_search(args: argparse.Namespace) -> None:
    """Apollo: stacked shadow queries vs a loop; label queries per record vs the paper's."""
    from sklearn.metrics import roc_auc_score

    from privaudit.attacks.unlearning import ApolloAttack, _search
    from privaudit.targets import LabelOnlyTarget

    torch.set_num_threads(1)
    w = _apollo_world(args.quick)
    n = len(w["y"])
    rounds = 30
    print(f"\nApollo search: {len(w['pool'].models_)} shadows, {n} audited records, "
          f"{rounds} rounds")

    def run(trajectories: bool = False) -> tuple[Any, Any]:
        target = LabelOnlyTarget(w["model"].predict, classes=w["classes"])
        attack = ApolloAttack(n_rounds=rounds).fit(w["pool"])
        return target, attack.run(target, w["X"], w["y"], w["labels"],
                                  trajectories=trajectories)

    run()  # warm-up
    stacked_s, (_, result) = timed(run)
    original = _search.ShadowStack.__init__

    def looped(self: Any, models: Any) -> None:
        original(self, models)
        self._vmapped = None  # the per-model loop

    _search.ShadowStack.__init__ = looped  # type: ignore[method-assign]
    try:
        loop_s, (_, looped_result) = timed(run)
    finally:
        _search.ShadowStack.__init__ = original  # type: ignore[method-assign]
    same = float(np.max(np.abs(looped_result.scores - result.scores)))
    print(f"  shadows in a loop      {loop_s:7.2f} s  x1.00 (baseline)")
    print(f"  torch.func stacked     {stacked_s:7.2f} s  x{loop_s / stacked_s:.2f}  "
          f"(largest score difference {same:.1e})")
    full_target, full = run(trajectories=True)
    print(f"  label queries/record   {result.extra['queries_per_record']:7.1f}   "
          f"vs {full_target.n_queries / n:.0f} asking every round of both searches "
          f"(the authors' code: 2 T = {2 * rounds}); scores equal: "
          f"{np.array_equal(full.scores, result.scores)}")
    calibration = ", ".join(f"{k} {v:.2f}" for k, v in result.extra["calibration_auc"].items())
    print(f"  AUC {roc_auc_score(w['labels'], result.scores):.3f} "
          f"(GA-unlearned TV16 MLP; kind {result.extra['kind']}, chosen on a shadow: "
          f"{calibration})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 models, 10 epochs")
    parser.add_argument("--only", choices=("shadows", "apollo"), default=None,
                        help="run one section")
    args = parser.parse_args()
    if args.only in (None, "shadows"):
        shadow_throughput(args)
    if args.only in (None, "apollo"):
        apollo_search(args)


if __name__ == "__main__":
    main()
