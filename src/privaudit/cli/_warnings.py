"""Warnings on the terminal: one line each, identical ones once, known noise silenced.

Python prints a warning as ``/path/file.py:83: BaselineWarning: ...`` followed by the
source line that raised it: two lines of which only the message means anything to the
user. While a command runs, :func:`terminal_warnings` prints each warning as
``BaselineWarning: <message>`` on one line, and a warning identical to one already shown
(same category, same message) not again.

Third-party libraries that privaudit drives print notices the user can do nothing about.
Each is silenced narrowly, by its category (or logger), its message and the privaudit
module that causes it, never by a global filter:

- matplotlib's "constrained_layout not applied" / "Tight layout not applied" (a
  ``UserWarning`` raised while the report draws a figure: layout is best effort);
- transformers' "`loss_type=None` was set in the config but it is unrecognized" (a log
  record of ``transformers.modeling_utils``: privaudit's small GPT-2 trains with the
  default causal-LM loss, which is what the notice says it falls back to);
- tokenizers' "The current process just got forked, after parallelism has already been
  used" (printed by the Rust library when a worker process starts after a tokenizer ran
  in parallel): ``TOKENIZERS_PARALLELISM`` is set to ``false`` for the command unless the
  user set it.

Names in a line come from the user's files (a target, a folder): :func:`printable` writes
their control characters as escapes, so that a name cannot move the cursor, recolour,
clear or retitle the terminal or a CI log (every line and table cell the CLI prints).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from privaudit._text import escape_controls

__all__ = ["THIRD_PARTY_LOG_NOTICES", "THIRD_PARTY_WARNINGS", "plain", "printable",
           "terminal_warnings",
           "warning_line"]


class WarningRule(NamedTuple):
    """A third-party warning to silence: its category, message and causing module.

    ``message`` and ``module`` are regular expressions matched at the start (as
    :func:`warnings.filterwarnings` reads them); ``module`` is the privaudit module the
    warning is attributed to (matplotlib attributes its warnings to the caller).
    """

    category: type[Warning]
    message: str
    module: str


class LogNotice(NamedTuple):
    """A third-party log record to silence: its logger and the start of its message."""

    logger: str
    message: str


THIRD_PARTY_WARNINGS: tuple[WarningRule, ...] = (
    WarningRule(UserWarning, r"(constrained_layout|Tight layout) not applied",
                r"privaudit\.report\."),
    WarningRule(UserWarning, r"The figure layout has changed to tight", r"privaudit\.report\."),
)

THIRD_PARTY_LOG_NOTICES: tuple[LogNotice, ...] = (
    LogNotice("transformers.modeling_utils",
              "`loss_type=None` was set in the config but it is unrecognized"),
)


def printable(text: str) -> str:
    r"""``text`` with its control characters written as escapes.

    >>> printable("model\x1b[2J\rPASS\u202e")
    'model\\x1b[2J\\rPASS\\u202e'
    """
    return escape_controls(text)


def plain(value: Any, style: str = "") -> Any:
    """``value`` as rich ``Text``: never read as markup, its control characters escaped."""
    from rich.text import Text

    return Text(printable(str(value)), style=style)


def warning_line(message: Warning | str, category: type[Warning]) -> str:
    """``"<Category>: <message>"`` on one line (the message's whitespace collapsed)."""
    text = printable(" ".join(str(message).split()))
    return f"{category.__name__}: {text}" if text else category.__name__


class _NoticeFilter(logging.Filter):
    """Drops the log records whose message starts with one of ``prefixes``."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith(self.prefixes)


@contextlib.contextmanager
def _silenced_log_notices() -> Iterator[None]:
    """Filter :data:`THIRD_PARTY_LOG_NOTICES` on their loggers, removed on exit."""
    installed: list[tuple[logging.Logger, logging.Filter]] = []
    for name in dict.fromkeys(notice.logger for notice in THIRD_PARTY_LOG_NOTICES):
        prefixes = tuple(n.message for n in THIRD_PARTY_LOG_NOTICES if n.logger == name)
        logger, notice_filter = logging.getLogger(name), _NoticeFilter(prefixes)
        logger.addFilter(notice_filter)
        installed.append((logger, notice_filter))
    try:
        yield
    finally:
        for logger, notice_filter in installed:
            logger.removeFilter(notice_filter)


@contextlib.contextmanager
def _tokenizers_not_parallel() -> Iterator[None]:
    """``TOKENIZERS_PARALLELISM=false`` unless the user set it; restored on exit."""
    name = "TOKENIZERS_PARALLELISM"
    if name in os.environ:
        yield
        return
    os.environ[name] = "false"
    try:
        yield
    finally:
        os.environ.pop(name, None)


def _print_stderr(line: str) -> None:
    # sys.stderr at the time of printing: a live progress display redirects it so that
    # the line goes above the bars.
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def terminal_warnings(write: Callable[[str], None] | None = None) -> Iterator[list[str]]:
    """Within the block, warnings are one line each and identical ones are shown once.

    Parameters
    ----------
    write : callable(str), optional
        Receives each line. Default: standard error.

    Yields
    ------
    list of str
        The lines shown so far (each once).

    Notes
    -----
    The filters and the ``showwarning`` hook are those of :func:`warnings.catch_warnings`,
    restored on exit, as are the log filters and the environment variable.
    """
    write = write if write is not None else _print_stderr
    shown: list[str] = []

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        text = warning_line(message, category)
        if text not in shown:
            shown.append(text)
            write(text)

    with warnings.catch_warnings(), _silenced_log_notices(), _tokenizers_not_parallel():
        warnings.showwarning = show
        for rule in THIRD_PARTY_WARNINGS:
            warnings.filterwarnings("ignore", message=rule.message, category=rule.category,
                                    module=rule.module)
        yield shown

