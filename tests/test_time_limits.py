"""The suite's time limits fail only on a hang, and its libraries run on one thread.

pyproject.toml holds the limits (``timeout``, ``slow_timeout``); tests/conftest.py gives
``slow`` tests theirs and limits BLAS/OpenMP threads. Each test below reads the limit
pytest-timeout will apply to itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sklearn.ensemble  # noqa: F401  (loads OpenMP at collection, as most test modules do)
from threadpoolctl import threadpool_info

ROOT = Path(__file__).resolve().parents[1]

#: Slowest test of each kind on two idle cores with -n 2 (seconds); a limit must be 20x.
SLOWEST_ORDINARY, SLOWEST_SLOW = 45, 120


def _limit(request: pytest.FixtureRequest) -> float:
    """pytest-timeout's limit for the running test: its mark, else the option or ini."""
    mark = request.node.get_closest_marker("timeout")
    if mark is not None:
        return float(mark.args[0])
    return float(request.config.getoption("timeout") or request.config.getini("timeout"))


def test_an_ordinary_test_gets_the_configured_limit(request):
    assert request.node.get_closest_marker("timeout") is None
    assert float(request.config.getini("timeout")) >= 20 * SLOWEST_ORDINARY
    assert _limit(request) >= 20 * SLOWEST_ORDINARY


@pytest.mark.slow  # marked only to show what a slow test gets; it takes no time
def test_a_slow_test_gets_the_slow_limit_whatever_the_command_line(request):
    assert _limit(request) == float(request.config.getini("slow_timeout"))
    assert _limit(request) >= 20 * SLOWEST_SLOW


@pytest.mark.slow
@pytest.mark.timeout(4321)
def test_an_explicit_mark_wins_over_the_slow_limit(request):
    assert _limit(request) == 4321


def test_make_test_leaves_the_limits_to_the_configuration():
    # A --timeout on the command line would replace `timeout` (issue 20: 600 s in the
    # Makefile while the configuration had none).
    recipe = re.search(r"^test:.*?(?=^\S)", (ROOT / "Makefile").read_text(), re.M | re.S)
    assert recipe is not None and "pytest" in recipe.group()
    assert "--timeout" not in recipe.group()


def test_blas_and_openmp_run_on_one_thread_in_a_test():
    libraries = threadpool_info()
    assert {lib["user_api"] for lib in libraries} == {"blas", "openmp"}
    assert {lib["num_threads"] for lib in libraries} == {1}, libraries
