"""pytest-xdist scheduling that keeps the tests sharing a setup on one worker.

xdist's ``load`` distribution (``pytest -n 2``) sends tests to whichever worker is free, so
the tests of one module are split between the workers, and a module-scoped fixture (a
fitted model, a study's run, a tiny GPT-2) or a module's cached function is then built
once per worker instead of once. ``SharedSetupScheduling`` is xdist's ``loadscope``
scheduler with a finer scope: the whole module for a module that builds such a setup,
the modules using one costly session fixture together, the test alone for every other
test (which is ``load``). xdist sends the largest scopes first, so a shared module
starts early and does not hold the last worker alone.

xdist's own ``--dist loadgroup`` cannot be used for this: with pytest 9 its
``xdist_group`` marks no longer reach the test ids the scheduler reads, and the
controller, which does not collect, cannot see the marks itself. The test files are read
as text instead (nothing imported), once each.
"""

from __future__ import annotations

import re
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

#: Session fixtures of a conftest that cost seconds to build: a session fixture is built
#: once per worker process, so the modules that use one run on one worker, as one unit
#: named after it. tweets_lm (tests/llm/conftest.py): a tiny GPT-2 trained on 200 tweets,
#: about 6 CPU-s each time.
SHARED_SESSION_FIXTURES: tuple[str, ...] = ("tweets_lm",)


@cache
def _source(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def session_fixture_used(path: Path) -> str | None:
    """The costly session fixture the test module at ``path`` uses (the first listed)."""
    source = _source(path)
    return next((name for name in SHARED_SESSION_FIXTURES
                 if re.search(rf"\b{name}\b", source)), None)


def shares_a_setup(path: Path) -> bool:
    """Whether the test module at ``path`` builds a setup its tests share."""
    return SHARED_SETUP.search(_source(path)) is not None


def scope_of(nodeid: str, root: Path) -> str:
    """The unit of work of the test ``nodeid``: its group, its module or itself."""
    if nodeid in SHARED_ACROSS_MODULES:
        return SHARED_ACROSS_MODULES[nodeid]
    path = nodeid.split("::", 1)[0]
    fixture = session_fixture_used(root / path)
    if fixture is not None:
        return fixture
    return path if shares_a_setup(root / path) else nodeid


class SharedSetupScheduling(LoadScopeScheduling):
    """``load``, except that a module building a shared setup is one unit of work."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid, Path(self.config.rootpath))
