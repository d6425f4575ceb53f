"""Log an audit to MLflow: every metric with its interval, the verdict, the settings, the page.

MLflow (the ``mlflow`` extra; ``mlflow-skinny`` suffices) is imported when a function here
runs, never when privaudit is imported. Everything is sent in the fewest batches
(``MlflowClient.log_batch``: at most 1000 metrics, parameters and tags together per call,
100 parameters and 100 tags among them, under 1 MB: the limits of MLflow's REST API), so
that a hundred results (2300 values) take three requests, not thousands.
"""

from __future__ import annotations

import importlib.util
import os
import re
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.integrations._audit_rows import AuditSummary, read_audit
from privaudit.integrations._tracking import TrackingItems, report_page, tracking_items

__all__ = ["batches", "log_mlflow", "mlflow_client"]

#: MLflow's batch limits (mlflow.utils.validation): entities (metrics, parameters and tags
#: together) and parameters or tags per request, and a request's JSON (under 1e6 bytes,
#: with room for the request's own keys).
_ENTITIES_PER_BATCH = 1000
_PARAMS_TAGS_PER_BATCH = 100
_REQUEST_BYTES = 900_000
#: A metric's JSON beyond its key and value: ``timestamp``, ``step`` and the quotes.
_ENTITY_JSON_BYTES = 64
_FUNC = "log_mlflow"
#: A database store's URI in MLflow's error (SQLAlchemy's schemes).
_DATABASE_URI = re.compile(r"\b(?:sqlite|postgresql|mysql|mssql)(?:\+\w+)?://")
#: MLflow's error codes for an experiment it refuses: a name it does not accept (empty,
#: over 500 characters), a name a deleted experiment keeps.
_EXPERIMENT_ERRORS = frozenset({"INVALID_PARAMETER_VALUE", "RESOURCE_ALREADY_EXISTS"})
#: Where the HTML report goes in the run's artefacts.
ARTIFACT_PATH = "privaudit"


def _mlflow() -> Any:
    return import_optional("mlflow", extra="mlflow", purpose="Logging an audit to MLflow")


def _has_sqlalchemy() -> bool:
    """Whether MLflow can open a database store here (mlflow-skinny lacks SQLAlchemy)."""
    return importlib.util.find_spec("sqlalchemy") is not None


def _store_reason(exc: BaseException) -> str:
    """Why MLflow cannot open a store, and what to do when privaudit knows it.

    Without SQLAlchemy (mlflow-skinny, the extra) no database store opens, MLflow 3's
    default (``sqlite:///mlflow.db``) included: the way out is never ``sqlite:///`` then.
    """
    reason = " ".join(str(exc).split())[:400]
    sqlalchemy = _has_sqlalchemy()
    database = ("a database (sqlite:///...) URI" if sqlalchemy else "a database "
                "(sqlite:///...) URI once the full mlflow package is installed (pip install "
                "mlflow: SQLAlchemy, which mlflow-skinny does not install)")
    if "MLFLOW_ALLOW_FILE_STORE" in reason:
        return ("MLflow 3 refuses a file store (a folder or file: URI) unless the "
                "environment variable MLFLOW_ALLOW_FILE_STORE=true is set; set it, or give "
                f"a server (http://...) URI, or {database}")
    if not sqlalchemy and _DATABASE_URI.search(reason):
        return ("a database store (MLflow 3's default is sqlite:///mlflow.db) needs "
                "SQLAlchemy, which mlflow-skinny does not install; install the full mlflow "
                "package (pip install mlflow), or give a server (http://...) URI, or a file "
                "store (file:./mlruns) with MLFLOW_ALLOW_FILE_STORE=true set")
    return reason


def _store_error(tracking_uri: str | None, exc: BaseException) -> ValueError:
    """The one error for a tracking store MLflow cannot open or write, naming the option."""
    shown = repr(tracking_uri) if tracking_uri is not None else "MLflow's default store"
    # param_error's wording, with the URI whole (param_error shortens a long value)
    return ValueError(f"The 'tracking_uri' parameter of {_FUNC} must be an MLflow tracking "
                      f"store that can be written ({_store_reason(exc)}). Got {shown} instead.")


def mlflow_client(tracking_uri: str | None = None) -> Any:
    """An ``MlflowClient`` on ``tracking_uri`` (MLflow's current one when None).

    Raises
    ------
    ValueError
        Naming ``tracking_uri`` when MLflow cannot open the store (a folder that cannot be
        created, a file store MLflow 3 refuses).
    """
    mlflow = _mlflow()
    try:
        client = mlflow.MlflowClient(tracking_uri=tracking_uri)
        client.search_experiments(max_results=1)  # opens the store now, not mid-logging
    except (mlflow.exceptions.MlflowException, OSError) as exc:
        raise _store_error(tracking_uri, exc) from exc
    return client


def _entity_bytes(key: str, value: Any) -> int:
    """About what one metric, parameter or tag adds to a request's JSON."""
    return len(key) + len(str(value)) + _ENTITY_JSON_BYTES


def batches(items: TrackingItems) -> Iterator[dict[str, list[tuple[str, Any]]]]:
    """``items`` in as few ``log_batch`` requests as MLflow's limits allow.

    Each request holds at most 1000 entities, of which at most 100 parameters and 100
    tags, and under 1 MB of JSON (``mlflow.utils.validation``'s limits): the parameters
    and tags go first, the metrics fill the rest.
    """
    queues = {name: deque(part.items()) for name, part in (
        ("params", items.params), ("tags", items.tags), ("metrics", items.metrics))}
    limits = {"params": _PARAMS_TAGS_PER_BATCH, "tags": _PARAMS_TAGS_PER_BATCH,
              "metrics": _ENTITIES_PER_BATCH}
    while any(queues.values()):
        batch: dict[str, list[tuple[str, Any]]] = {name: [] for name in queues}
        count = size = 0
        for name, queue in queues.items():
            while queue and len(batch[name]) < limits[name] and count < _ENTITIES_PER_BATCH:
                grown = size + _entity_bytes(*queue[0])
                if grown > _REQUEST_BYTES and count:
                    break
                batch[name].append(queue.popleft())
                count, size = count + 1, grown
        yield batch


def log_items(client: Any, run_id: str, items: TrackingItems) -> None:
    """Log ``items`` in the run, in the fewest requests MLflow's limits allow."""
    from mlflow.entities import Metric, Param, RunTag

    stamp = int(time.time() * 1000)
    for batch in batches(items):
        client.log_batch(run_id,
                         metrics=[Metric(k, float(v), stamp, 0) for k, v in batch["metrics"]],
                         params=[Param(k, v) for k, v in batch["params"]],
                         tags=[RunTag(k, v) for k, v in batch["tags"]])


def _run_id(run: Any) -> str:
    """The id of ``run``: an ``ActiveRun``/``Run`` (``.info.run_id``) or an id."""
    if isinstance(run, str) and run:
        return run
    run_id = getattr(getattr(run, "info", None), "run_id", None)
    if not isinstance(run_id, str):
        raise param_error("run", _FUNC, "None, an MLflow run (mlflow.start_run()) or a run "
                          "id", f"<{type(run).__name__}>", error=TypeError)
    return run_id


def _experiment_error(experiment: str, reason: str) -> ValueError:
    return param_error("experiment", _FUNC, "the name of an active MLflow experiment, or of "
                       f"one MLflow can create ({reason})", experiment)


def _experiment_id(client: Any, experiment: Any) -> str:
    """The id of the active experiment named ``experiment``, created when missing.

    An experiment MLflow refuses is an error naming ``experiment``; a store that fails is
    MLflow's error, raised as it is (:func:`log_mlflow` names ``tracking_uri``).
    """
    if not isinstance(experiment, str):
        raise param_error("experiment", _FUNC, "a str", experiment, error=TypeError)
    try:
        found = client.get_experiment_by_name(experiment)
        if found is None:
            return str(client.create_experiment(experiment))
    except _mlflow().exceptions.MlflowException as exc:
        if getattr(exc, "error_code", None) not in _EXPERIMENT_ERRORS:
            raise
        raise _experiment_error(experiment, " ".join(str(exc).split())[:300]) from exc
    if found.lifecycle_stage != "active":  # MLflow would refuse to start a run in it
        raise _experiment_error(experiment, "this one is deleted: restore it with "
                                "MlflowClient.restore_experiment, or choose another name")
    return str(found.experiment_id)


def _new_run(client: Any, experiment: str, run_name: str | None) -> str:
    """Start a run in the experiment named ``experiment`` (created when missing)."""
    return client.create_run(_experiment_id(client, experiment), run_name=run_name).info.run_id


def log_mlflow(
    report: Any,
    run: Any = None,
    *,
    tracking_uri: str | None = None,
    experiment: str = "privaudit",
    run_name: str | None = None,
    html: bool = True,
    **settings: Any,
) -> str:
    """Log an audit to MLflow: its metrics with intervals, verdict, parameters and report.

    Parameters
    ----------
    report : AuditReport, sequence of results, or path-like
        What an ``audit_*`` function returned, a list of results, or a report / results
        folder (:func:`~privaudit.integrations.read_audit`).
    run : None, mlflow.ActiveRun, mlflow.entities.Run or str
        The run to log into (left open). None: the active run
        (``with mlflow.start_run(): ...``) when there is one and no ``tracking_uri`` is
        given, else a new run in ``experiment``, ended once logged.
    tracking_uri : str, optional
        The tracking store (``http://...``, ``sqlite:///...``, ``file:/folder``);
        MLflow's current one by default. MLflow 3 opens a file store only with the
        environment variable ``MLFLOW_ALLOW_FILE_STORE=true``.
    experiment, run_name : str
        Of the new run, when one is started.
    html : bool
        Log the HTML report as an artefact, ``privaudit/index.html``: a report folder's
        own page, or an audit's in memory rendered into a temporary folder (its numbers
        those logged, with the same settings and seed). Rendering draws the page's
        figures: about 0.3 s of CPU per result (28 s for 100 results, whose values alone
        take 0.45 s; docs/integrations.md). False: the values alone.
    **settings
        ``n_bootstrap``, ``fprs``, ``confidence``, ``random_state``: how the results'
        metrics are computed (:meth:`~privaudit.report.AuditReport.to_frame`).

    Returns
    -------
    str
        The run's id.

    Notes
    -----
    Each result's metrics are logged as ``<target>/<attack>/<metric>``, with
    ``<metric>_low`` and ``<metric>_high`` for its interval
    (:func:`~privaudit.integrations.tracking_items`); the parameters are the report
    settings (``privaudit.n_bootstrap``...) and each attack's own; the tags the verdict
    (``privaudit.verdict``: the strongest answer of the report's overview,
    :attr:`privaudit.report.AuditReport.verdict`).

    Raises
    ------
    ValueError
        Naming ``tracking_uri`` when the store cannot be opened or written,
        ``experiment`` when MLflow refuses it (a name it does not accept, a deleted
        experiment), ``run`` when the run refuses the values.
    ImportError
        When MLflow is not installed (``pip install 'privaudit[mlflow]'``), or the report
        extra to render an in-memory audit's page (``html=False`` logs without it).
    """
    mlflow = _mlflow()
    client = mlflow_client(tracking_uri)  # a store that cannot be opened fails first
    summary = read_audit(report, **settings)
    active = mlflow.active_run() if run is None and tracking_uri is None else None
    given = run if run is not None else active
    run_id = _run_id(given) if given is not None else None
    with report_page(summary, html=html, func=_FUNC) as page:  # rendered before a run starts
        run_id = _log_run(client, run_id, summary, page, tracking_uri=tracking_uri,
                          experiment=experiment, run_name=run_name)
    return run_id


def _log_run(client: Any, run_id: str | None, summary: AuditSummary, page: Path | None, *,
             tracking_uri: str | None, experiment: str, run_name: str | None) -> str:
    """Log ``summary`` and ``page`` into run ``run_id``, or a new run (ended once logged)."""
    mlflow = _mlflow()
    given = run_id
    try:
        run_id = run_id or _new_run(client, experiment, run_name)
        log_items(client, run_id, tracking_items(summary))
        if page is not None:
            client.log_artifact(run_id, os.fspath(page), artifact_path=ARTIFACT_PATH)
    except (mlflow.exceptions.MlflowException, OSError) as exc:
        if given is None and run_id is not None:  # the run started here: marked failed
            client.set_terminated(run_id, status="FAILED")
        if isinstance(exc, OSError) or run_id is None:
            raise _store_error(tracking_uri, exc) from exc
        # the store works but refuses these values in this run (a parameter logged before
        # with another value: MLflow's parameters cannot change)
        raise ValueError(f"The 'run' parameter of {_FUNC} must be a run this audit can be "
                         f"logged into ({' '.join(str(exc).split())[:400]}). Got the run "
                         f"{run_id!r} instead; log into a new run.") from exc
    if given is None:
        client.set_terminated(run_id)
    return run_id
