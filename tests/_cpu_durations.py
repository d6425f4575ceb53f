"""Opt-in pytest plugin: each test's CPU time, fixture setup and teardown included.

``pytest --cpu-durations=60`` prints the 60 tests that used most CPU and the total per
file; ``--cpu-durations-json=PATH`` also writes every test's numbers to PATH (to compare
two runs). Wall time is useless on a shared, oversubscribed machine; CPU time is not.

A test's CPU time is that of its process (user + system), plus that of the child
processes it waited for (``resource.getrusage`` with ``RUSAGE_CHILDREN``: several tests
run a subprocess in another virtual environment or spawn an executor's workers), plus,
on Linux, the change in the CPU time of the descendants still alive (read from
``/proc``: Ray's daemons and workers, a pool kept for later tests). A descendant reaped
during the test moves from the second term to the first, so nothing counts twice. It
counts from the start of the test's setup to the end of its teardown, so a module- or
session-scoped fixture is charged to the test that first needs it (and its teardown to
the last). Under pytest-xdist each worker measures its own tests and sends the numbers
to the controller in the teardown report's ``user_properties``.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_PROPERTY = "cpu_seconds"
_STASH_KEY = pytest.StashKey[tuple[float, float]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cpu-durations")
    group.addoption("--cpu-durations", type=int, default=None, metavar="N",
                    help="print the N tests that used most CPU (with children) and the "
                         "CPU total per file")
    group.addoption("--cpu-durations-json", default=None, metavar="PATH",
                    help="also write each test's CPU and wall seconds to PATH (JSON)")


def _enabled(config: pytest.Config) -> bool:
    return (config.getoption("cpu_durations") is not None
            or config.getoption("cpu_durations_json") is not None)


def _rusage_cpu() -> float:
    """CPU seconds (user + system) of this process and of its waited-for children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def _live_descendants_cpu() -> float:
    """CPU seconds of this process's live descendants (and of their reaped children).

    0 where there is no ``/proc``. Read before the start's and after the end's
    ``_rusage_cpu``, so that reading ``/proc`` is not charged to the test.
    """
    if not os.path.isdir("/proc/self"):
        return 0.0
    parent_and_cpu: dict[int, tuple[int, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = text[text.rindex(")") + 2:].split()
        # utime, stime, cutime, cstime: fields 14-17 of proc(5), 12-15 after the name.
        parent_and_cpu[int(name)] = (int(fields[1]),
                                     sum(int(x) for x in fields[11:15]) / tick)
    total, frontier, seen = 0.0, {os.getpid()}, set()
    while frontier:
        children = {pid for pid, (parent, _) in parent_and_cpu.items()
                    if parent in frontier and pid not in seen}
        seen |= children
        total += sum(parent_and_cpu[pid][1] for pid in children)
        frontier = children
    return total


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _enabled(item.config):
        descendants = _live_descendants_cpu()
        item.stash[_STASH_KEY] = (_rusage_cpu() + descendants, time.perf_counter())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    if call.when != "teardown" or _STASH_KEY not in item.stash:
        return
    cpu_start, wall_start = item.stash[_STASH_KEY]
    cpu_end, wall_end = _rusage_cpu(), time.perf_counter()
    cpu_end += _live_descendants_cpu()
    report = outcome.get_result()
    report.user_properties.append((_PROPERTY, (cpu_end - cpu_start, wall_end - wall_start)))


class _Collector:
    """Gathers the teardown reports' CPU seconds (on the controller under xdist)."""

    def __init__(self) -> None:
        self.seconds: dict[str, tuple[float, float]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == _PROPERTY:
                self.seconds[report.nodeid] = (float(value[0]), float(value[1]))

    def pytest_terminal_summary(self, terminalreporter, config: pytest.Config) -> None:
        top = config.getoption("cpu_durations") or 0
        if top:
            _print_summary(terminalreporter, self.seconds, top)
        path = config.getoption("cpu_durations_json")
        if path:
            rows = {node: {"cpu": cpu, "wall": wall}
                    for node, (cpu, wall) in self.seconds.items()}
            Path(path).write_text(json.dumps(rows, indent=1, sort_keys=True))


def _print_summary(terminal, seconds: dict[str, tuple[float, float]], top: int) -> None:
    terminal.write_sep("=", f"top {top} tests by CPU seconds (with children and fixtures)")
    ranked = sorted(seconds.items(), key=lambda row: row[1][0], reverse=True)
    for node, (cpu, wall) in ranked[:top]:
        terminal.write_line(f"{cpu:8.2f} cpu {wall:8.2f} wall  {node}")
    per_file: dict[str, float] = defaultdict(float)
    for node, (cpu, _) in seconds.items():
        per_file[node.split("::")[0]] += cpu
    terminal.write_sep("-", "CPU seconds per file")
    for path, cpu in sorted(per_file.items(), key=lambda row: row[1], reverse=True):
        terminal.write_line(f"{cpu:8.2f}  {path}")
    total = sum(cpu for cpu, _ in seconds.values())
    terminal.write_line(f"{total:8.2f}  total over {len(seconds)} tests")


def pytest_configure(config: pytest.Config) -> None:
    if _enabled(config) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Collector(), "cpu-durations-collector")
