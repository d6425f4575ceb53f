"""privaudit where its users work: experiment trackers and model cards.

- :func:`log_mlflow` / :func:`log_wandb`: log an audit to MLflow or W&B (offline too):
  each result's metrics as ``<target>/<attack>/<metric>`` with their intervals
  (``_low`` / ``_high``), the report settings and attack parameters, the verdict, and
  the report page as an artefact; in batches (100 results in a few requests);
- :func:`model_card` / :func:`write_model_card`: the privacy section of a Hugging Face
  model card, with ``model-index`` metadata;
- :func:`read_audit`: the one reading of an audit they share (an
  :class:`~privaudit.report.AuditReport`, a list of results, or a report or results
  folder), and :func:`tracking_items`, the keys and values both trackers log.

MLflow and wandb (the ``mlflow`` and ``wandb`` extras) are imported when a logger runs.
"""

from privaudit.integrations._audit_rows import AuditSummary, ResultMetrics, read_audit
from privaudit.integrations._card import markdown_escape, model_card, write_model_card
from privaudit.integrations._mlflow import log_mlflow
from privaudit.integrations._tracking import TrackingItems, metric_key, tracking_items
from privaudit.integrations._wandb import log_wandb

__all__ = [
    "AuditSummary",
    "ResultMetrics",
    "TrackingItems",
    "log_mlflow",
    "log_wandb",
    "markdown_escape",
    "metric_key",
    "model_card",
    "read_audit",
    "tracking_items",
    "write_model_card",
]
