"""pytest-xdist scheduling that keeps the tests sharing a setup on one worker.

xdist's ``load`` distribution (``pytest -n 2``) sends tests to whichever worker is free, so
the tests of one module are split between the workers, and a module-scoped fixture (a
fitted model, a study's run, a tiny GPT-2) or a module's cached function is then built
once per worker instead of once. ``SharedSetupScheduling`` is xdist's ``loadscope``
scheduler with a finer scope: the whole module for a module that builds such a setup,
the test alone for every other test (which is ``load``). xdist sends the largest scopes
first, so a shared module starts early and does not hold the last worker alone.

xdist's own ``--dist loadgroup`` cannot be used for this: with pytest 9 its
``xdist_group`` marks no longer reach the test ids the scheduler reads, and the
controller, which does not collect, cannot see the marks itself. The test files are read
as text instead (nothing imported), once each.

The work units are sent longest first, by the durations recorded in
``tests/durations.json`` (seconds per test id, the tests of 0.3 s or more; a unit's cost
is the sum of its tests'): a 30-second test that starts last keeps one worker busy while
the other idles, which cost the suite about 45 s of its 11.7 minutes. Tests missing from
the file count as short. Refresh the file with ``python tests/_xdist_shared_setup.py
--record`` after a ``pytest -n 2 --durations=0 --durations-min=0.3 > log`` run.
"""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

#: A fixture built once per module (or class) or a function whose results a module caches.
SHARED_SETUP = re.compile(
    r"""@pytest\.fixture\([^)]*scope=["'](?:module|class|session)["']"""
    r"|@(?:functools\.)?(?:lru_cache|cache)\b"
)

#: Tests of different modules that share one process-wide setup: they run on one worker.
SHARED_ACROSS_MODULES: dict[str, str] = {
    # The session's Ray instance (the ray_executor fixture of tests/conftest.py).
    "tests/training/test_training_ray.py::test_ray_executor": "ray",
    "tests/security/test_config_code_imports.py::"
    "test_functions_of_a_loaded_module_reach_ray_workers": "ray",
}


@cache
def shares_a_setup(path: Path) -> bool:
    """Whether the test module at ``path`` builds a setup its tests share."""
    try:
        return SHARED_SETUP.search(path.read_text(encoding="utf-8")) is not None
    except OSError:
        return False


def scope_of(nodeid: str, root: Path) -> str:
    """The unit of work of the test ``nodeid``: its group, its module or itself."""
    if nodeid in SHARED_ACROSS_MODULES:
        return SHARED_ACROSS_MODULES[nodeid]
    path = nodeid.split("::", 1)[0]
    return path if shares_a_setup(root / path) else nodeid


#: The recorded durations: seconds per test id.
DURATIONS = Path(__file__).with_name("durations.json")
#: What a test missing from the record is taken to cost.
SHORT_TEST = 0.05


@cache
def recorded_durations(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test id from ``path`` (empty when the file is missing or unreadable)."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def longest_first(workqueue: dict[str, dict[str, bool]],
                  durations: dict[str, float]) -> list[str]:
    """The scopes of ``workqueue``, the costliest first (sum of their tests' durations)."""
    def cost(scope: str) -> float:
        return sum(durations.get(nodeid, SHORT_TEST) for nodeid in workqueue[scope])

    return sorted(workqueue, key=cost, reverse=True)


class SharedSetupScheduling(LoadScopeScheduling):
    """``load``, except that a module building a shared setup is one unit of work, and
    the units are sent longest first."""

    _ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid, Path(self.config.rootpath))

    def _assign_work_unit(self, node: object) -> None:
        if not self._ordered:  # once, before the first unit leaves
            self._ordered = True
            order = longest_first(self.workqueue, recorded_durations())
            for scope in order:
                self.workqueue.move_to_end(scope)
        super()._assign_work_unit(node)  # type: ignore[arg-type]


def record(log: Path, out: Path = DURATIONS) -> dict[str, float]:
    """Write ``out`` from a pytest ``--durations=0`` log: each test's setup + call +
    teardown seconds (only those pytest printed, i.e. above ``--durations-min``)."""
    line = re.compile(r"^([0-9.]+)s (?:setup|call|teardown)\s+(\S.*)$")
    totals: dict[str, float] = {}
    for text in log.read_text(encoding="utf-8", errors="replace").splitlines():
        match = line.match(text.strip())
        if match:
            totals[match[2]] = round(totals.get(match[2], 0.0) + float(match[1]), 2)
    out.write_text(json.dumps(dict(sorted(totals.items())), indent=0) + "\n")
    return totals


if __name__ == "__main__" and sys.argv[1:2] == ["--record"]:
    print(f"{len(record(Path(sys.argv[2])))} tests recorded in {DURATIONS}")
