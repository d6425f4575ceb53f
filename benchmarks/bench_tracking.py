"""Logging 100 results to MLflow (file store) and W&B (offline): batched against per metric.

Candidate: what :func:`privaudit.integrations.log_mlflow` and
:func:`~privaudit.integrations.log_wandb` do -- MLflow: ``MlflowClient.log_batch`` with up
to 1000 values per call, 100 parameters and 100 tags among them
(:func:`privaudit.integrations._mlflow.log_items`), and ``log_mlflow``, the whole call
(open the store, start a run, the batches, end the run); W&B: one ``run.log`` call with
every metric, then the config and the summary in one update each.
Baseline ``by-kind``: the batching before session 14, one kind per request.
Baseline (named ``per-metric``): the naive loop, one ``log_metric`` / ``log_param`` /
``set_tag`` call per value (MLflow), one ``run.log({key: value}, commit=False)`` per metric
(W&B).

The audit's metrics are computed once, beforehand (:func:`privaudit.integrations.read_audit`
over 100 small membership results; its time is printed apart): the rows time the logging
alone, each into a fresh run, the two variants interleaved over ``--rounds`` rounds (the
median is printed; the machine is shared, so CPU seconds are printed beside wall seconds).
W&B's time includes ``run.finish()``, which waits until its service has written the run
(``run.log`` only queues). MLflow 3 opens a file store only with
``MLFLOW_ALLOW_FILE_STORE=true``, which this script sets for itself.

Run::

    .venv/bin/python benchmarks/bench_tracking.py                 # 100 results, 3 rounds
    .venv/bin/python benchmarks/bench_tracking.py --results 20 --rounds 1 --no-wandb
    .venv/bin/python benchmarks/bench_tracking.py --page   # + the page of an in-memory audit
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from privaudit.integrations import log_mlflow, read_audit, tracking_items
from privaudit.integrations._mlflow import log_items
from privaudit.results import AttackResult, AuditInfo


def audit_results(n_results: int, n_records: int = 200, seed: int = 0) -> list[AttackResult]:
    """``n_results`` membership results: 10 targets x n/10 attacks, signals 0 to 2."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_records), np.zeros(n_records)]
    return [AttackResult(labels=labels, scores=rng.normal(size=2 * n_records)
                         + rng.uniform(0, 2) * labels, target=f"model-{i % 10}",
                         attack=f"attack-{i // 10}", parameters={"k": i},
                         audit=AuditInfo(kind="model")) for i in range(n_results)]


def timed(action: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of ``action()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def mlflow_per_metric(client: Any, run_id: str, items: Any) -> None:
    """The baseline: one request per value."""
    for key, value in items.metrics.items():
        client.log_metric(run_id, key, float(value), step=0)
    for key, value in items.params.items():
        client.log_param(run_id, key, value)
    for key, value in items.tags.items():
        client.set_tag(run_id, key, value)


def mlflow_by_kind(client: Any, run_id: str, items: Any) -> None:
    """The batching before session 14: one kind per request (metrics, then params, tags)."""
    from mlflow.entities import Metric, Param, RunTag

    stamp = int(time.time() * 1000)
    for kind, size, make in (("metrics", 1000, lambda k, v: Metric(k, float(v), stamp, 0)),
                             ("params", 100, Param), ("tags", 100, RunTag)):
        pairs = list(getattr(items, kind).items())
        for start in range(0, len(pairs), size):
            client.log_batch(run_id, **{kind: [make(k, v) for k, v in
                                                 pairs[start:start + size]]})


def bench_mlflow(summary: Any, rounds: int, folder: Path
                 ) -> dict[str, list[tuple[float, float]]]:
    """The variants, interleaved; ``log_mlflow``: the whole call (store, run, batches, end)."""
    from mlflow import MlflowClient

    uri = f"file:{folder / 'mlruns'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("bench")
    items = tracking_items(summary)
    times: dict[str, list[tuple[float, float]]] = {
        "log_mlflow": [], "batched": [], "by-kind": [], "per-metric": []}
    # html=False: the rows time the logging; an in-memory audit's page is rendered by the
    # report builder (timed apart in main, ``--page``), a report folder's is already there.
    log_mlflow(summary, tracking_uri=uri, experiment="bench", html=False)  # warm imports
    for _ in range(rounds):
        times["log_mlflow"].append(timed(lambda: log_mlflow(
            summary, tracking_uri=uri, experiment="bench", html=False)))
        for name, log in (("batched", log_items), ("by-kind", mlflow_by_kind),
                          ("per-metric", mlflow_per_metric)):
            run_id = client.create_run(experiment).info.run_id
            times[name].append(timed(lambda log=log, run_id=run_id: log(client, run_id,
                                                                         items)))
            assert len(client.get_run(run_id).data.metrics) == len(items.metrics)
    return times


def wandb_batched(run: Any, items: Any) -> None:
    run.config.update(items.params, allow_val_change=True)
    run.log(items.metrics)
    run.summary.update(items.tags)
    run.finish()


def wandb_per_metric(run: Any, items: Any) -> None:
    for key, value in items.params.items():
        run.config[key] = value
    for key, value in items.metrics.items():
        run.log({key: value}, commit=False)
    for key, value in items.tags.items():
        run.summary[key] = value
    run.finish()


def bench_wandb(items: Any, rounds: int, folder: Path) -> dict[str, list[tuple[float, float]]]:
    import wandb

    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        os.environ[name] = str(folder / name.lower())
    os.environ["WANDB_SILENT"] = "true"
    times: dict[str, list[tuple[float, float]]] = {"batched": [], "per-metric": []}
    for _ in range(rounds):
        for name, log in (("batched", wandb_batched), ("per-metric", wandb_per_metric)):
            run = wandb.init(project="bench", mode="offline", dir=str(folder))
            times[name].append(timed(lambda log=log, run=run: log(run, items)))
    return times


def report(tracker: str, times: dict[str, list[tuple[float, float]]], n_values: int) -> None:
    for name, samples in times.items():
        wall = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        print(f"{tracker:7s} {name:11s} {wall:8.3f} s wall {cpu:8.3f} s CPU "
              f"({n_values} values, median of {len(samples)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-bootstrap", type=int, default=200)
    parser.add_argument("--no-wandb", action="store_true")
    parser.add_argument("--page", action="store_true",
                        help="also time one log_mlflow with the page (html=True), drawn")
    args = parser.parse_args()
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    results = audit_results(args.results)
    summary = {}
    wall, cpu = timed(lambda: summary.update(
        s=read_audit(results, n_bootstrap=args.n_bootstrap)))
    items = tracking_items(summary["s"])
    n_values = len(items.metrics) + len(items.params) + len(items.tags)
    print(f"{args.results} results: {len(items.metrics)} metrics, {len(items.params)} "
          f"parameters, {len(items.tags)} tags; read_audit (metrics, {args.n_bootstrap} "
          f"resamples) {wall:.2f} s wall {cpu:.2f} s CPU, not in the rows below")
    with tempfile.TemporaryDirectory() as tmp:
        report("mlflow", bench_mlflow(summary["s"], args.rounds, Path(tmp)), n_values)
        if not args.no_wandb:
            report("wandb", bench_wandb(items, args.rounds, Path(tmp)), n_values)
        if args.page:  # the default html=True of an in-memory audit: its page drawn too
            wall, cpu = timed(lambda: log_mlflow(summary["s"], experiment="bench",
                                                 tracking_uri=f"file:{Path(tmp) / 'page'}"))
            print(f"mlflow  with page  {wall:8.3f} s wall {cpu:8.3f} s CPU (log_mlflow "
                  "html=True on the in-memory audit: the HTML report drawn, then attached)")


if __name__ == "__main__":
    main()
