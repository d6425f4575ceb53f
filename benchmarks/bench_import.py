"""What a worker process pays to import privaudit: the lazy root against the eager one.

Every reference-model worker, executor subprocess and CLI run imports privaudit. Since
issue 21 the root package loads its audits, report and results on first use (PEP 562);
the eager root imported all three. The baseline, measured in the same run, is a worker
that imports them as the eager root did, then the training module a worker needs.

Run: ``python benchmarks/bench_import.py`` (CPU seconds of fresh interpreters, median of
``REPEATS``).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys

REPEATS = 7
WORKER = "import privaudit.training._executors"
EAGER = ("import privaudit.audits, privaudit.report, privaudit.results; " + WORKER)


def cpu_seconds(code: str) -> float:
    """CPU time (user + system) of one fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    lazy = statistics.median(cpu_seconds(WORKER) for _ in range(REPEATS))
    eager = statistics.median(cpu_seconds(EAGER) for _ in range(REPEATS))
    bare = statistics.median(cpu_seconds("import privaudit") for _ in range(REPEATS))
    print(f"import privaudit (lazy root):                {bare:.2f} s CPU")
    print(f"a worker, lazy root:                         {lazy:.2f} s CPU")
    print(f"a worker, eager root (baseline, same run):   {eager:.2f} s CPU")
    print(f"ratio eager / lazy: {eager / lazy:.1f}x")


if __name__ == "__main__":
    main()
