"""Progress of long steps (training a reference pool, querying it, running attacks).

One small abstraction serves the API and the command line. A :class:`Progress` receives
messages (``progress.message("querying the target")``, or simply ``progress("...")``) and
counted steps::

    with progress.task("training reference models", total=16) as step:
        for model in finished_models:
            step.advance()

What the user sees depends on how the progress was built:

- :class:`CallbackProgress` turns everything into strings for a user's ``callable(str)``
  (the ``progress=`` argument of the API): a step's advance becomes a message such as
  ``"training reference models: 5/16"``, at most a few times per second, and always at the
  end of the step;
- :class:`RichProgress` draws a rich progress bar per step on a terminal;
- :class:`LogProgress` prints plain lines for CI logs and pipes: no bar, no control
  character, at most one line per step (when it ends);
- :class:`NotebookProgress` draws HTML bars in a Jupyter notebook, in one output it
  updates in place;
- :class:`Progress` itself is silent.

:func:`as_progress` normalises what a user passed (``None`` or ``False``, ``True``, a
callable or a :class:`Progress`); ``progress=True`` asks for what suits where the code
runs (:func:`auto_progress`): bars in a notebook (:func:`in_notebook`) or on a terminal,
log lines elsewhere. :func:`console_progress` picks the bar or the log lines for a console.
``import privaudit`` stays light: rich is imported only when a :class:`RichProgress` starts,
IPython only when a :class:`NotebookProgress` draws (in a kernel, where it is loaded).
"""

from __future__ import annotations

import html
import math
import sys
import time
from collections.abc import Callable
from typing import Any

from privaudit._validation import param_error

__all__ = [
    "CallbackProgress",
    "LogProgress",
    "NotebookProgress",
    "Progress",
    "ProgressTask",
    "RichProgress",
    "as_progress",
    "auto_progress",
    "console_progress",
    "in_notebook",
]


class ProgressTask:
    """A counted step of a :class:`Progress`; a context manager that closes the step.

    Parameters
    ----------
    owner : Progress
        The progress that displays this step.
    description : str
        What the step does, e.g. ``"training reference models"``.
    total : int or None
        Number of units in the step (``None``: unknown).
    delay : float
        Seconds the step must run before it is shown at all (short steps stay silent).

    Attributes
    ----------
    completed : int
        Units done so far.
    shown : bool
        Whether the step has been shown (it ran longer than ``delay``).
    """

    def __init__(self, owner: Progress, description: str, total: int | None,
                 delay: float) -> None:
        self.owner, self.description, self.total, self.delay = owner, description, total, delay
        self.completed = 0
        self.started = time.monotonic()
        self.shown = delay <= 0
        self.closed = False

    @property
    def elapsed(self) -> float:
        """Seconds since the step started."""
        return time.monotonic() - self.started

    def counts(self) -> str:
        """``"5/16"`` (or ``"5"`` when the total is unknown)."""
        return f"{self.completed}" if self.total is None else f"{self.completed}/{self.total}"

    def advance(self, n: int = 1) -> None:
        """Record ``n`` more units done."""
        if self.closed or n == 0:
            return
        self.completed += n
        if not self.shown and self.elapsed >= self.delay:
            self.shown = True
        self.owner._advanced(self)

    def close(self) -> None:
        """End the step (idempotent)."""
        if not self.closed:
            self.closed = True
            if not self.shown and self.elapsed >= self.delay:
                self.shown = True
            self.owner._closed(self)

    def __enter__(self) -> ProgressTask:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class Progress:
    """Reports messages and counted steps; this base class shows nothing.

    A progress is also a ``callable(str)`` (calling it sends a message), so it can be
    passed wherever the API accepts ``progress=callable``. It is a context manager:
    ``with`` starts and stops a live display (:class:`RichProgress`).
    """

    def message(self, text: str) -> None:
        """Report a one-line message, e.g. ``"querying the target on 300 records"``."""

    def task(self, description: str, total: int | None = None, *,
             delay: float = 0.0) -> ProgressTask:
        """Start a counted step; use the returned handle's ``advance`` and close it.

        Parameters
        ----------
        description : str
            What the step does, e.g. ``"training reference models"``.
        total : int, optional
            Number of units in the step.
        delay : float, default=0.0
            Show the step only once it has run this many seconds (for steps that are
            usually quick, such as querying the reference models).

        Returns
        -------
        ProgressTask
        """
        task = ProgressTask(self, description, total, delay)
        self._started(task)
        return task

    def __call__(self, text: str) -> None:
        self.message(text)

    def close(self) -> None:
        """Stop any live display."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # Hooks for subclasses: a step started, advanced, closed.
    def _started(self, task: ProgressTask) -> None:
        pass

    def _advanced(self, task: ProgressTask) -> None:
        pass

    def _closed(self, task: ProgressTask) -> None:
        pass


class CallbackProgress(Progress):
    """Progress as messages for a user's ``callable(str)``.

    Parameters
    ----------
    callback : callable
        Receives each message, and ``"<description>: <done>/<total>"`` as steps advance.
    min_interval : float, default=0.25
        Least number of seconds between two count messages of a step (the first count and
        the last one are always sent).
    """

    def __init__(self, callback: Callable[[str], None], *, min_interval: float = 0.25) -> None:
        self.callback = callback
        self.min_interval = min_interval
        self._sent: dict[int, tuple[float, int]] = {}  # id(task) -> (time, count) last sent

    def message(self, text: str) -> None:
        """Send ``text`` to the callback."""
        self.callback(text)

    def _send(self, task: ProgressTask) -> None:
        self._sent[id(task)] = (time.monotonic(), task.completed)
        self.callback(f"{task.description}: {task.counts()}")

    def _advanced(self, task: ProgressTask) -> None:
        if not task.shown:
            return
        last = self._sent.get(id(task))
        done = task.total is not None and task.completed >= task.total
        if last is None or done or time.monotonic() - last[0] >= self.min_interval:
            self._send(task)

    def _closed(self, task: ProgressTask) -> None:
        last = self._sent.pop(id(task), None)
        if task.shown and task.completed and (last is None or last[1] != task.completed):
            self._send(task)
            self._sent.pop(id(task), None)


class LogProgress(Progress):
    """Plain log lines for CI logs and pipes: no bar, at most one line per step.

    Parameters
    ----------
    write : callable, optional
        Receives each line (without a newline). Default: print to standard error.
    timestamps : bool, default=True
        Prefix each line with the time of day, ``[12:03:04]``.
    """

    def __init__(self, write: Callable[[str], None] | None = None, *,
                 timestamps: bool = True) -> None:
        self.write = write if write is not None else _print_stderr
        self.timestamps = timestamps

    def message(self, text: str) -> None:
        """Print ``text`` as one line."""
        # One line, whatever the text holds: a CR would overwrite the line in a CI log.
        line = " ".join(text.split())
        self.write(f"[{time.strftime('%H:%M:%S')}] {line}" if self.timestamps else line)

    def _closed(self, task: ProgressTask) -> None:
        if task.shown and task.completed:
            self.message(f"{task.description}: {task.counts()} ({task.elapsed:.1f} s)")


def _print_stderr(line: str) -> None:
    import sys

    print(line, file=sys.stderr, flush=True)


class RichProgress(Progress):
    """A rich progress bar per step, under a status line showing the latest message.

    Messages are also logged above the bars, so they stay in the terminal's scrollback.
    Use it as a context manager (the live display starts on entry, or at the first step,
    and stops on exit).

    Parameters
    ----------
    console : rich.console.Console, optional
        Where to draw. Default: a console on standard error.
    status : str, default="Working..."
        The first text of the status line.
    """

    def __init__(self, console: Any = None, *, status: str = "Working...") -> None:
        self.console = console
        self.status = status
        self._live: Any = None
        self._status_id: Any = None
        self._ids: dict[int, Any] = {}

    def _start(self) -> Any:
        if self._live is None:
            from rich.console import Console

            if self.console is None:
                self.console = Console(stderr=True)
            self._live = _rich_bars(self.console)
            self._live.start()
            self._status_id = self._live.add_task(self.status, total=None)
        return self._live

    def __enter__(self) -> RichProgress:
        self._start()
        return self

    def close(self) -> None:
        """Stop the live display (the logged messages stay)."""
        if self._live is not None:
            self._live.stop()
            self._live = None
            self._ids.clear()

    def message(self, text: str) -> None:
        """Show ``text`` on the status line and log it above the bars."""
        live = self._start()
        live.update(self._status_id, description=text)
        _log(live.console, text)

    def _started(self, task: ProgressTask) -> None:
        self._ids[id(task)] = self._start().add_task(
            task.description, total=task.total, visible=task.shown)

    def _advanced(self, task: ProgressTask) -> None:
        if self._live is not None and id(task) in self._ids:
            self._live.update(self._ids[id(task)], completed=task.completed,
                              visible=task.shown)

    def _closed(self, task: ProgressTask) -> None:
        task_id = self._ids.pop(id(task), None)
        if self._live is None or task_id is None:
            return
        self._live.remove_task(task_id)
        if task.shown and task.completed:
            _log(self._live.console, f"{task.description}: {task.counts()} "
                                     f"({task.elapsed:.1f} s)")


def _log(console: Any, text: str) -> None:
    """Print ``[12:03:04] text`` above a live display (kept in the scrollback)."""
    console.print(f"[{time.strftime('%H:%M:%S')}] {text}", markup=False, highlight=False)


def _rich_bars(console: Any) -> Any:
    """A rich Progress: spinner, description, bar, N/total, elapsed time.

    The status line (a task of unknown total) shows neither bar nor count.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.progress import Progress as Bars
    from rich.text import Text

    class CountedBar(BarColumn):
        def render(self, task: Any) -> Any:
            return Text("") if task.total is None else super().render(task)

    class Counts(MofNCompleteColumn):
        def render(self, task: Any) -> Any:
            return Text("") if task.total is None else super().render(task)

    # markup=False: descriptions and messages carry names from the user's files.
    return Bars(SpinnerColumn(), TextColumn("{task.description}", markup=False), CountedBar(),
                Counts(), TimeElapsedColumn(), console=console, transient=True)


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ZMQ shell, or a subclass of it).

    Read without importing IPython: a kernel has it loaded already, and elsewhere its
    absence from ``sys.modules`` is the answer. A terminal IPython (``TerminalInteractiveShell``)
    is not a notebook: it gets the terminal's bars.
    """
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    return shell is not None and any(cls.__name__ == "ZMQInteractiveShell"
                                     for cls in type(shell).__mro__)


class NotebookProgress(Progress):
    """Progress bars in a Jupyter notebook: one HTML output, updated in place.

    The output shows the latest messages and finished steps (as :class:`RichProgress`
    logs them above its bars), then an HTML ``<progress>`` bar per running step with its
    count and elapsed time. It needs only IPython's display (no ipywidgets: rich's and
    tqdm's notebook bars need them, and without them print nothing or plain text), so it
    draws wherever a kernel runs: JupyterLab, classic Notebook, VS Code, nbclient. Names
    come from the user's files and are HTML-escaped.

    Parameters
    ----------
    min_interval : float, default=0.2
        Least number of seconds between two redraws as steps advance (a message, a step
        that starts or ends is always drawn).
    max_lines : int, default=20
        Messages and finished steps kept in view (the latest ones).
    """

    def __init__(self, *, min_interval: float = 0.2, max_lines: int = 20) -> None:
        self.min_interval, self.max_lines = min_interval, max_lines
        self.lines: list[str] = []
        self._running: dict[int, ProgressTask] = {}
        self._handle: Any = None
        self._drawn_at = -math.inf

    def html(self) -> str:
        """The output's current HTML: the kept lines, then a bar per shown running step."""
        lines = [f"<div>{html.escape(line)}</div>" for line in self.lines[-self.max_lines:]]
        bars = [_html_bar(task) for task in self._running.values() if task.shown]
        return ('<div class="privaudit-progress" style="font-family:monospace">'
                + "".join(lines + bars) + "</div>")

    def _draw(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._drawn_at < self.min_interval:
            return
        self._drawn_at = now
        from IPython.display import HTML, display

        if self._handle is None:
            self._handle = display(HTML(self.html()), display_id=True)
        else:
            self._handle.update(HTML(self.html()))

    def message(self, text: str) -> None:
        """Add ``[12:03:04] text`` to the kept lines."""
        self.lines.append(f"[{time.strftime('%H:%M:%S')}] {' '.join(text.split())}")
        self._draw(force=True)

    def _started(self, task: ProgressTask) -> None:
        self._running[id(task)] = task
        self._draw(force=task.shown)

    def _advanced(self, task: ProgressTask) -> None:
        self._draw(force=False)

    def _closed(self, task: ProgressTask) -> None:
        self._running.pop(id(task), None)
        if task.shown and task.completed:
            self.lines.append(f"[{time.strftime('%H:%M:%S')}] {task.description}: "
                              f"{task.counts()} ({task.elapsed:.1f} s)")
        self._draw(force=True)


def _html_bar(task: ProgressTask) -> str:
    """One running step: its description, a ``<progress>`` bar, its count, its time."""
    value = "" if task.total is None else f' value="{task.completed}" max="{task.total}"'
    return (f"<div>{html.escape(task.description)} <progress{value}></progress> "
            f"{task.counts()} {task.elapsed:.0f} s</div>")


def auto_progress() -> Progress:
    """What ``progress=True`` shows: bars in a notebook or on a terminal, else log lines.

    Returns
    -------
    NotebookProgress, RichProgress or LogProgress
        :class:`NotebookProgress` in a Jupyter kernel (:func:`in_notebook`), else
        :func:`console_progress` on standard error.
    """
    return NotebookProgress() if in_notebook() else console_progress()


def console_progress(console: Any = None, *, status: str = "Working...") -> Progress:
    """The progress for a command: bars on a terminal, plain log lines elsewhere.

    Parameters
    ----------
    console : rich.console.Console, optional
        The command's console. Default: a console on standard error.
    status : str, default="Working..."
        First text of the status line (terminal only).

    Returns
    -------
    RichProgress or LogProgress
    """
    if console is None:
        from rich.console import Console

        console = Console(stderr=True)
    if console.is_terminal:
        return RichProgress(console, status=status)

    def write(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    return LogProgress(write)


def as_progress(progress: Any, *, param: str = "progress", func: str = "privaudit") -> Progress:
    """Normalise a ``progress=`` argument: silent, shown where the code runs, or a callable.

    Parameters
    ----------
    progress : None, bool, callable(str) or Progress
        ``None`` or ``False`` shows nothing; ``True`` shows bars in a notebook or on a
        terminal and log lines elsewhere (:func:`auto_progress`); a callable receives
        messages (see :class:`CallbackProgress`); a :class:`Progress` is returned as is.
    param, func : str
        Names used in the error message.

    Returns
    -------
    Progress

    Raises
    ------
    TypeError
        ``progress`` is none of these.
    """
    if progress is None or progress is False:
        return Progress()
    if progress is True:
        return auto_progress()
    if isinstance(progress, Progress):
        return progress
    if callable(progress):
        return CallbackProgress(progress)
    raise param_error(param, func, "None, a bool, a callable(str) or a Progress", progress,
                      error=TypeError)
