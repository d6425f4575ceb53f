"""``privaudit gate`` and the audits' ``--gate``: a policy's budgets checked in the shell.

The policy is read before any work (a bad key is one line, exit 2, before an audit runs
for an hour); the gate prints a table of every check with its outcome, then one line
saying whether it passed, writes the JUnit file when asked, and gives the exit code:
0 every check passes, 1 a budget is exceeded (or an unmeasurable check under
``unmeasurable: fail``), 2 bad input (the error boundary of :mod:`privaudit.cli._app`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["check_basis", "check_junit", "gate_table", "read_policy", "run_gate"]

#: How each outcome is shown in the terminal.
_STYLES = {"pass": ("PASS", "green"), "fail": ("FAIL", "bold red"), "warn": ("WARN", "yellow")}


def read_policy(path: Path) -> Any:
    """The validated policy at ``path`` (:func:`privaudit.policy.load_policy`)."""
    from privaudit.policy import load_policy

    return load_policy(path)


def check_basis(basis: str | None, func: str) -> str | None:
    """``--basis``: ``lower``, ``point`` or not given."""
    from privaudit._validation import param_error
    from privaudit.policy import BASES

    if basis is not None and basis not in BASES:
        raise param_error("--basis", func, f"one of {list(BASES)}", basis)
    return basis


def check_junit(path: Path | None, option: str) -> Path | None:
    """The JUnit file's path, refused before any work when it cannot be a file.

    An empty name or a folder would otherwise fail only after the gate (or the whole
    audit) ran, and turn its exit code 1 or 0 into 2.
    """
    from privaudit.cli._errors import ConfigError

    if path is None:
        return None
    if not str(path).strip() or path.name in ("", ".", ".."):
        raise ConfigError(f"The {option} option needs a file name (got {str(path)!r}).")
    if path.is_dir():
        raise ConfigError(f"The {option} option names the folder {str(path)!r}: name the "
                          "XML file to write.")
    return path


def _number(value: float) -> str:
    if math.isnan(value):
        return "—"
    return "∞" if math.isinf(value) else f"{value:.4g}"


def gate_table(result: Any) -> Any:
    """A rich table of every check: outcome, rule, artefact, metric, value, budget."""
    from rich.table import Table
    from rich.text import Text

    from privaudit.cli._warnings import plain

    table = Table(title="Privacy gate: " + (
        "each budget against the lower end of the metric's 95% interval"
        if result.basis == "lower" else "each budget against the metric's point estimate"))
    # The basis is in the title; a column only when a budget chose its own. The audit
    # kind only when several are gated (one model audited as an LLM and for unlearning).
    mixed = len({check.basis for check in result.checks}) > 1
    kinds = len({check.kind for check in result.checks}) > 1
    for column in ("outcome", "rule", *(("kind",) if kinds else ()), "artefact", "attack",
                   "metric", *(("basis",) if mixed else ()), "value", "budget", "note"):
        table.add_column(column, overflow="fold")
    for check in result.checks:
        label, style = _STYLES[check.outcome]
        # Names come from the user's files: printed literally, never read as markup, their
        # control characters escaped.
        table.add_row(Text(label, style=style), *(plain(cell) for cell in (
            check.rule, *((check.kind,) if kinds else ()), check.artefact, check.attack,
            check.metric, *((check.basis,) if mixed else ()), _number(check.value),
            _number(check.budget), check.note)))
    return table


def run_gate(console: Any, results: Any, policy: Any, *, basis: str | None = None,
             junit: Path | None = None, strict: bool = False,
             n_bootstrap: int | None = None, seed: int | None = None) -> int:
    """Gate ``results`` under ``policy``, print the table and the verdict; the exit code.

    ``junit``: where to write the JUnit XML (one test case per check); ``n_bootstrap``
    and ``seed`` None: the report's own (:func:`privaudit.policy.gate`).
    """
    from rich.text import Text

    from privaudit.cli._warnings import plain
    from privaudit.policy import gate

    result = gate(results, policy, basis=basis, strict=strict, n_bootstrap=n_bootstrap,
                  random_state=seed)
    if result.checks:
        console.print(gate_table(result))
    for entry in result.left_out:  # results no check read: named, never silently passed
        console.print(plain(f"NOT GATED  {entry.message}", style="dim"))
    console.print(plain(result.summary(), style="green" if result.passed else "bold red"))
    if junit is not None:
        console.print(Text.assemble("JUnit: ", (str(result.to_junit(junit)), "bold")))
    return result.exit_code
