"""``privaudit card`` and ``privaudit log``: an audit's model card and its tracker runs.

``privaudit card RESULTS --out privacy.md`` writes the privacy section of a Hugging Face
model card (:func:`privaudit.integrations.write_model_card`); ``privaudit log RESULTS
--mlflow URI`` logs the audit to MLflow (:func:`privaudit.integrations.log_mlflow`), and
``--wandb PROJECT`` to W&B. ``RESULTS`` is a report folder (read from its files: the
numbers of its pages) or a folder of saved results.

``--n-bootstrap`` defaults to the folder's own: a report folder's numbers were computed
with the settings its ``results.json`` records, and those are logged; another value is
refused (logging it would misstate the intervals, computing them again would log numbers
the attached page does not show). A folder of saved results records none: 1000.

The two commands are functions with typer's options, registered by the application
(:mod:`privaudit.cli._app`): ``app.command("card")(card_command)`` and
``app.command("log")(log_command)``. Their errors are the user's: one line, exit 2, from
the application's error boundary, naming the option the user typed (an MLflow store that
cannot be written names ``--mlflow``, an experiment MLflow refuses ``--experiment``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

__all__ = ["card_command", "log_command"]

Results = Annotated[Path, typer.Argument(
    help="A report folder (privaudit audit/report --out) or a folder of saved results.")]
NBootstrap = Annotated[int | None, typer.Option(
    help="Bootstrap resamples of a folder of saved results (default 1000). A report "
    "folder's numbers are its own, read with its settings: another value is refused.")]
#: The API's names in the errors of the functions behind the commands -> what the user
#: typed. A report folder's n_bootstrap is read_audit's (log_mlflow, model_card read it).
_OPTIONS = (
    ("'n_bootstrap' parameter of read_audit", "--n-bootstrap option of privaudit {command}"),
    ("'claimed_epsilon' parameter of write_model_card must be None or",
     "--claimed-epsilon option of privaudit card must be"),
    ("'tracking_uri' parameter of log_mlflow", "--mlflow option of privaudit log"),
    ("'experiment' parameter of log_mlflow", "--experiment option of privaudit log"),
    ("'project' parameter of log_wandb", "--wandb option of privaudit log"),
    ("'mode' parameter of log_wandb", "W&B mode (WANDB_MODE) of privaudit log"),
    ("mode='offline' or WANDB_MODE=offline", "WANDB_MODE=offline"),
    ("offline run for log_wandb", "offline run for privaudit log"),
)
_T = TypeVar("_T")


def _check_results(results: Path, command: str) -> None:
    from privaudit.cli._errors import ConfigError

    if not results.is_dir():
        raise ConfigError(f"The results folder {str(results)!r} of privaudit {command} does "
                          "not exist (or is not a folder).")


def _as_command(command: str, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``call(*args, **kwargs)``; its error about a parameter names the option instead."""
    from privaudit.cli._errors import ConfigError

    try:
        return call(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        text = str(exc)
        for api, option in _OPTIONS:
            text = text.replace(api, option.format(command=command))
        if text == str(exc):
            raise
        raise ConfigError(text) from None


def _settings(n_bootstrap: int | None, command: str) -> dict[str, int]:
    """The settings passed on: none unless given (a report folder's own are read)."""
    from privaudit._validation import check_int

    check_int(n_bootstrap, param="--n-bootstrap", func=f"privaudit {command}",
              allow_none=True)
    return {} if n_bootstrap is None else {"n_bootstrap": n_bootstrap}


def card_command(
    results: Results,
    out: Annotated[Path, typer.Option("--out", "-o", help="The Markdown file to write.")] = Path(
        "privacy.md"),
    model_name: Annotated[str | None, typer.Option(
        help="The model-index name (default: the report's title).")] = None,
    claimed_epsilon: Annotated[float | None, typer.Option(
        help="The ε the model's training claims (a number >= 0), shown beside the audited "
        "lower bounds.")] = None,
    n_bootstrap: NBootstrap = None,
) -> None:
    """Write the privacy section of a Hugging Face model card (Markdown + YAML metadata)."""
    from privaudit.cli._errors import ConfigError
    from privaudit.integrations import write_model_card

    settings = _settings(n_bootstrap, "card")
    _check_results(results, "card")
    if out.is_dir():
        raise ConfigError(f"--out {str(out)!r} is a folder; give the Markdown file to write "
                          "(e.g. privacy.md).")
    path = _as_command("card", write_model_card, results, out, model_name=model_name,
                       claimed_epsilon=claimed_epsilon, **settings)
    typer.echo(f"Model card written: {path}")


def log_command(
    results: Results,
    mlflow: Annotated[str | None, typer.Option(
        "--mlflow", help="MLflow tracking URI (http://..., sqlite:///..., file:/folder).")
    ] = None,
    experiment: Annotated[str, typer.Option(help="The MLflow experiment.")] = "privaudit",
    wandb: Annotated[str | None, typer.Option(
        "--wandb", help="W&B project (WANDB_MODE=offline logs without a server).")] = None,
    n_bootstrap: NBootstrap = None,
) -> None:
    """Log an audit's metrics, verdict and report to MLflow and/or W&B."""
    from privaudit.cli._errors import ConfigError
    from privaudit.integrations import log_mlflow, log_wandb

    settings = _settings(n_bootstrap, "log")
    _check_results(results, "log")
    if mlflow is None and wandb is None:
        raise ConfigError("privaudit log needs --mlflow URI, --wandb PROJECT, or both.")
    if mlflow is not None:  # the store is opened before the audit is read: fails fast
        run_id = _as_command("log", log_mlflow, results, tracking_uri=mlflow,
                             experiment=experiment, **settings)
        typer.echo(f"Logged to MLflow ({mlflow}): run {run_id}")
    if wandb is not None:
        run_id = _as_command("log", log_wandb, results, project=wandb, **settings)
        typer.echo(f"Logged to W&B project {wandb}: run {run_id}")
