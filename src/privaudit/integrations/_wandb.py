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
from privaudit.integrations._tracking import report_page, tracking_items

__all__ = ["log_wandb"]

#: The artefact type of the report page.
ARTIFACT_TYPE = "privacy-report"
_FUNC = "log_wandb"
#: W&B's modes that write a run without a server (no login needed).
_OFFLINE_MODES = ("offline", "dryrun", "disabled")
#: How to log offline, in an error (the CLI, which has no ``mode``, keeps the variable).
OFFLINE_HINT = "mode='offline' or WANDB_MODE=offline"


def _check_run_settings(wandb: Any, project: Any, mode: Any) -> None:
    """``project`` and ``mode`` by W&B's own rules (``wandb.Settings``), before a run starts.

    So that a project name W&B refuses is an error naming ``project``, not one about
    logging in.
    """
    if not isinstance(project, str):
        raise param_error("project", _FUNC, "a str", project, error=TypeError)
    for name, value in (("project", project), ("mode", mode)):
        if value is None:
            continue
        try:
            wandb.Settings(**{name: value})
        except (wandb.errors.Error, ValueError) as exc:  # W&B's UsageError, pydantic's
            reason = " ".join(str(exc).split())[:300]
            raise param_error(name, _FUNC, f"a {name} W&B accepts ({reason})",
                              value) from exc


def _offline(mode: str | None) -> bool:
    """Whether the run is to be written without a server (``mode`` or ``WANDB_MODE``)."""
    chosen = mode if mode is not None else os.environ.get("WANDB_MODE", "")
    return chosen in _OFFLINE_MODES


def _new_run(wandb: Any, *, project: str, mode: str | None,
             dir: str | os.PathLike[str] | None) -> Any:  # wandb.init's own name
    """``wandb.init``; a run W&B refuses to start (not logged in...) is one clear error."""
    _check_run_settings(wandb, project, mode)
    try:
        return wandb.init(project=project, mode=mode, job_type="privacy-audit",
                          dir=None if dir is None else os.fspath(dir))
    except wandb.errors.Error as exc:
        reason = " ".join(str(exc).split())[:400]
        if _offline(mode):  # no login involved: W&B's reason is all there is to say
            raise ValueError(f"W&B could not start an offline run for {_FUNC} ({reason}). "
                             f"Got mode={mode!r}, dir={dir!r}.") from exc
        shown = repr(mode) if mode is not None else "<None: W&B's mode, online>"
        raise ValueError(f"The 'mode' parameter of {_FUNC} must let W&B start a run "
                         f"({reason}): log in (wandb login), or log offline with "
                         f"{OFFLINE_HINT}. Got {shown} instead.") from exc


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
        Log the HTML report as an artefact of type ``privacy-report``, as
        :func:`~privaudit.integrations.log_mlflow` does (an in-memory audit's page is
        rendered: about 0.3 s of CPU per result). False: the values alone.
    **settings
        As :func:`~privaudit.integrations.log_mlflow`.

    Returns
    -------
    str
        The run's id.

    Raises
    ------
    ValueError
        Naming ``project`` or ``mode`` when W&B refuses it; ``mode`` when W&B cannot
        start a run online (not logged in), with the way out (offline mode).

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
        raise param_error("run", _FUNC, "None or a W&B run (wandb.init())",
                          f"<{type(run).__name__}>", error=TypeError)
    own = target is None
    # the page is rendered before a run starts, and kept until the run has it
    with report_page(summary, html=html, func=_FUNC) as page:
        if own:
            target = _new_run(wandb, project=project, mode=mode, dir=dir)
        try:
            target.config.update(items.params, allow_val_change=True)
            target.log(items.metrics)
            target.summary.update(items.tags)
            if page is not None:
                artefact = wandb.Artifact("privaudit-report", type=ARTIFACT_TYPE)
                artefact.add_file(os.fspath(page))  # copied now (W&B's "mutable" policy)
                target.log_artifact(artefact)
        finally:
            if own:
                target.finish()
    return str(target.id)
