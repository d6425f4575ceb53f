"""The opt-in --cpu-durations plugin (tests/_cpu_durations.py) counts each CPU second once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from _cpu_durations import _live_descendants_cpu, _print_summary, _rusage_cpu

needs_proc = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")

BUSY = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n" \
       "print('done', flush=True)\ntime.sleep(60)\n"


@needs_proc
def test_a_busy_child_counts_once_alive_and_once_reaped() -> None:
    before = _rusage_cpu() + _live_descendants_cpu()
    child = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "done"
        alive = _live_descendants_cpu()
        mid = _rusage_cpu() + alive
        assert alive >= 0.5  # its CPU is seen while it runs...
    finally:
        child.kill()
        child.wait()
    after = _rusage_cpu() + _live_descendants_cpu()
    assert mid - before >= 0.5
    # ...and once reaped it moves into RUSAGE_CHILDREN: not counted a second time.
    assert abs((after - before) - (mid - before)) < 0.3


@needs_proc
def test_a_grandchild_is_a_descendant() -> None:
    code = ("import subprocess, sys\np = subprocess.Popen([sys.executable, '-c', sys.argv[1]],"
            " stdout=subprocess.PIPE, text=True)\nprint(p.pid, flush=True)\n"
            "print(p.stdout.readline().strip(), flush=True)\np.wait()\n")
    parent = subprocess.Popen([sys.executable, "-c", code, BUSY], stdout=subprocess.PIPE,
                              text=True)
    grandchild = None
    try:
        grandchild = int(parent.stdout.readline())
        assert parent.stdout.readline().strip() == "done"
        assert _live_descendants_cpu() >= 0.5
    finally:
        if grandchild is not None:
            os.kill(grandchild, signal.SIGKILL)
        parent.kill()
        parent.wait()


class _Terminal:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_the_summary_ranks_tests_and_adds_up_files() -> None:
    seconds = {"a.py::t1": (3.0, 9.0), "a.py::t2": (1.0, 2.0), "b.py::t[x]": (2.5, 2.6),
               "b.py::t[y]": (0.25, 0.3)}
    terminal = _Terminal()
    _print_summary(terminal, seconds, top=2)
    lines = [" ".join(line.split()) for line in terminal.lines]
    assert lines[1:3] == ["3.00 cpu 9.00 wall a.py::t1", "2.50 cpu 2.60 wall b.py::t[x]"]
    assert lines[4:6] == ["4.00 a.py", "2.75 b.py"]
    assert lines[-1] == "6.75 total over 4 tests"
