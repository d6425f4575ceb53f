"""``privaudit card`` and ``privaudit log``: an audit's model card and its tracker runs.

``privaudit card RESULTS --out privacy.md`` writes the privacy section of a Hugging Face
model card (:func:`privaudit.integrations.write_model_card`); ``privaudit log RESULTS
--mlflow URI`` logs the audit to MLflow (:func:`privaudit.integrations.log_mlflow`), and
``--wandb PROJECT`` to W&B. ``RESULTS`` is a report folder (read from its files: the
numbers of its pages) or a folder of saved results.

The two commands are functions with typer's options, registered by the application
(:mod:`privaudit.cli._app`): ``app.command("card")(card_command)`` and
``app.command("log")(log_command)``. Their errors are the user's: one line, exit 2, from
the application's error boundary (an MLflow store that cannot be written names
``--mlflow``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["card_command", "log_command"]

Results = Annotated[Path, typer.Argument(
    help="A report folder (privaudit audit/report --out) or a folder of saved results.")]
NBootstrap = Annotated[int, typer.Option(
    help="Bootstrap resamples, for the results a report folder does not tabulate.")]


def _check_results(results: Path, command: str) -> None:
    from privaudit.cli._errors import ConfigError

    if not results.is_dir():
        raise ConfigError(f"The results folder {str(results)!r} of privaudit {command} does "
                          "not exist (or is not a folder).")


def card_command(
    results: Results,
    out: Annotated[Path, typer.Option("--out", "-o", help="The Markdown file to write.")] = Path(
        "privacy.md"),
    model_name: Annotated[str | None, typer.Option(
        help="The model-index name (default: the report's title).")] = None,
    claimed_epsilon: Annotated[float | None, typer.Option(
        help="The ε the model's training claims, shown beside the audited lower bounds.")
    ] = None,
    n_bootstrap: NBootstrap = 1000,
) -> None:
    """Write the privacy section of a Hugging Face model card (Markdown + YAML metadata)."""
    from privaudit._validation import check_int
    from privaudit.cli._errors import ConfigError
    from privaudit.integrations import write_model_card

    check_int(n_bootstrap, param="--n-bootstrap", func="privaudit card")
    _check_results(results, "card")
    if out.is_dir():
        raise ConfigError(f"--out {str(out)!r} is a folder; give the Markdown file to write "
                          "(e.g. privacy.md).")
    path = write_model_card(results, out, model_name=model_name,
                            claimed_epsilon=claimed_epsilon, n_bootstrap=n_bootstrap)
    typer.echo(f"Model card written: {path}")


def log_command(
    results: Results,
    mlflow: Annotated[str | None, typer.Option(
        "--mlflow", help="MLflow tracking URI (http://..., sqlite:///..., file:/folder).")
    ] = None,
    experiment: Annotated[str, typer.Option(help="The MLflow experiment.")] = "privaudit",
    wandb: Annotated[str | None, typer.Option(
        "--wandb", help="W&B project (WANDB_MODE=offline logs without a server).")] = None,
    n_bootstrap: NBootstrap = 1000,
) -> None:
    """Log an audit's metrics, verdict and report to MLflow and/or W&B."""
    from privaudit._validation import check_int
    from privaudit.cli._errors import ConfigError
    from privaudit.integrations import log_mlflow, log_wandb

    check_int(n_bootstrap, param="--n-bootstrap", func="privaudit log")
    _check_results(results, "log")
    if mlflow is None and wandb is None:
        raise ConfigError("privaudit log needs --mlflow URI, --wandb PROJECT, or both.")
    if mlflow is not None:
        try:
            run_id = log_mlflow(results, tracking_uri=mlflow, experiment=experiment,
                                n_bootstrap=n_bootstrap)
        except ValueError as exc:  # the API names its parameter; the terminal, the flag
            raise ConfigError(str(exc).replace("'tracking_uri' parameter of log_mlflow",
                                               "--mlflow option of privaudit log")) from None
        typer.echo(f"Logged to MLflow ({mlflow}): run {run_id}")
    if wandb is not None:
        run_id = log_wandb(results, project=wandb, n_bootstrap=n_bootstrap)
        typer.echo(f"Logged to W&B project {wandb}: run {run_id}")
