"""Log an audit to Weights & Biases: the same metrics, parameters and verdict as MLflow.

wandb (the ``wandb`` extra) is imported when :func:`log_wandb` runs. Every metric goes in
one ``run.log`` call (one history row), the parameters in the run's config, the verdict in
its summary, the report page as an artefact. Works offline (``WANDB_MODE=offline`` or
``mode="offline"``): the run is written to its folder, to ``wandb sync`` later.
"""

from __future__ import annotations

import os
from typing import Any

from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.integrations._audit_rows import read_audit
from privaudit.integrations._tracking import tracking_items

__all__ = ["log_wandb"]

#: The artefact type of the report page.
ARTIFACT_TYPE = "privacy-report"


def _new_run(wandb: Any, *, project: str, mode: str | None,
             dir: str | os.PathLike[str] | None) -> Any:  # wandb.init's own name
    """``wandb.init``; a run W&B refuses to start (not logged in...) is one clear error."""
    try:
        return wandb.init(project=project, mode=mode, job_type="privacy-audit",
                          dir=None if dir is None else os.fspath(dir))
    except wandb.errors.Error as exc:
        reason = " ".join(str(exc).split())
        raise ValueError(f"The 'mode' parameter of log_wandb must let W&B start a run "
                         f"({reason}): log in (wandb login), or log offline with "
                         f"mode='offline' or WANDB_MODE=offline. Got {mode!r} instead."
                         ) from exc


def log_wandb(
    report: Any,
    run: Any = None,
    *,
    project: str = "privaudit",
    mode: str | None = None,
    dir: str | os.PathLike[str] | None = None,  # wandb.init's own name
    html: bool = True,
    **settings: Any,
) -> str:
    """Log an audit to W&B: its metrics with intervals, verdict, parameters and report.

    Parameters
    ----------
    report : AuditReport, sequence of results, or path-like
        As :func:`~privaudit.integrations.log_mlflow` takes it.
    run : wandb Run, optional
        The run to log into (left open). None: the current run (``wandb.run``) when there
        is one, else a new run (``wandb.init(project=..., mode=..., dir=...)``), finished
        once logged.
    project, mode, dir
        Of the new run: ``mode="offline"`` writes it under ``dir`` without a server.
    html : bool
        Log the report's ``index.html`` as an artefact of type ``privacy-report`` when
        the audit was read from a report folder that has one.
    **settings
        As :func:`~privaudit.integrations.log_mlflow`.

    Returns
    -------
    str
        The run's id.

    Notes
    -----
    The keys are those of :func:`~privaudit.integrations.log_mlflow`
    (:func:`~privaudit.integrations.tracking_items`): the metrics are one ``run.log``
    row, the settings and attack parameters the run's config, the tags (verdict,
    title, version) its summary.
    """
    wandb = import_optional("wandb", extra="wandb", purpose="Logging an audit to W&B")
    summary = read_audit(report, **settings)
    items = tracking_items(summary)
    target = run if run is not None else wandb.run
    if target is not None and not hasattr(target, "log"):
        raise param_error("run", "log_wandb", "None or a W&B run (wandb.init())",
                          f"<{type(run).__name__}>", error=TypeError)
    own = target is None
    if own:
        target = _new_run(wandb, project=project, mode=mode, dir=dir)
    try:
        target.config.update(items.params, allow_val_change=True)
        target.log(items.metrics)
        target.summary.update(items.tags)
        if html and summary.html is not None:
            artefact = wandb.Artifact("privaudit-report", type=ARTIFACT_TYPE)
            artefact.add_file(os.fspath(summary.html))
            target.log_artifact(artefact)
    finally:
        if own:
            target.finish()
    return str(target.id)
