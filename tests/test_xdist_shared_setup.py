"""``pytest -n N`` keeps the tests that share a module's setup on one worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _xdist_shared_setup import (
    SHARED_SESSION_FIXTURES,
    SharedSetupScheduling,
    scope_of,
    shares_a_setup,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("source", [
    '@pytest.fixture(scope="module")\ndef model():\n    return 1\n',
    "@pytest.fixture(autouse=True, scope='class')\ndef model():\n    return 1\n",
    '@pytest.fixture(scope="session", params=[1, 2])\ndef model(request):\n    return 1\n',
    "@functools.lru_cache(maxsize=1)\ndef fitted():\n    return 1\n",
    "@functools.cache\ndef fitted(name):\n    return name\n",
    "@lru_cache\ndef fitted():\n    return 1\n",
])
def test_a_module_building_a_shared_setup_is_one_unit(tmp_path: Path, source: str) -> None:
    (tmp_path / "test_a.py").write_text(source)
    assert shares_a_setup(tmp_path / "test_a.py")
    for test in ("test_a.py::test_one", "test_a.py::test_two[x-1]", "test_a.py::Cls::test"):
        assert scope_of(test, tmp_path) == "test_a.py"


@pytest.mark.parametrize("source", [
    "@pytest.fixture\ndef model():\n    return 1\n",
    '@pytest.fixture(scope="function")\ndef model():\n    return 1\n',
    "# a module-scoped fixture would be costly here\ndef test_x():\n    pass\n",
])
def test_any_other_test_is_a_unit_of_its_own(tmp_path: Path, source: str) -> None:
    (tmp_path / "test_b.py").write_text(source)
    assert scope_of("test_b.py::test_one", tmp_path) == "test_b.py::test_one"
    assert scope_of("test_b.py::test_two", tmp_path) == "test_b.py::test_two"


def test_a_missing_file_is_a_unit_per_test(tmp_path: Path) -> None:
    assert scope_of("gone.py::test_one", tmp_path) == "gone.py::test_one"


def test_the_suites_shared_setups_are_grouped() -> None:
    for path in ("tests/security/test_security_allowlist.py",  # an lru_cache of fits
                 "tests/report/test_report_size.py",           # a module fixture
                 "tests/training/test_stacked.py"):
        assert scope_of(f"{path}::test_x", ROOT) == path
    single = "tests/test_rows.py::test_empty_candidates_match_nothing"
    assert scope_of(single, ROOT) == single


@pytest.mark.parametrize(("source", "unit"), [
    ("def test_one(tweets_lm):\n    pass\n", "tweets_lm"),
    ('@pytest.fixture(scope="module")\ndef files(tweets_lm):\n    return 1\n', "tweets_lm"),
    ("def test_one(my_tweets_lm):\n    pass\n", "test_c.py::test_one"),  # another name
    ("def test_one(tmp_path):\n    pass\n", "test_c.py::test_one"),
])
def test_modules_using_a_costly_session_fixture_are_one_unit(tmp_path: Path, source: str,
                                                             unit: str) -> None:
    (tmp_path / "test_c.py").write_text(source)
    assert scope_of("test_c.py::test_one", tmp_path) == unit


def test_the_suites_costly_session_fixtures_exist_and_group_their_users() -> None:
    conftests = "".join(p.read_text() for p in (ROOT / "tests").rglob("conftest.py"))
    for name in SHARED_SESSION_FIXTURES:  # a renamed fixture would leave the group
        assert f'@pytest.fixture(scope="session")\ndef {name}(' in conftests
    for path in ("tests/llm/test_audit_llm.py", "tests/llm/test_cli_audit_llm.py",
                 "tests/llm/test_tiny.py"):
        assert scope_of(f"{path}::test_x", ROOT) == "tweets_lm"


class _Config:
    """The parts of pytest's config the schedulers read."""

    rootpath = ROOT

    def __init__(self, dist: str) -> None:
        self.values = {"dist": dist, "tx": ["popen", "popen"]}

    def getvalue(self, name: str) -> object:
        return self.values[name]


def _root_conftest(config: pytest.Config) -> object:
    """tests/conftest.py as pytest loaded it: ``import conftest`` may give tests/llm's
    (both are imported under that name, the last one wins in ``sys.modules``)."""
    path = (Path(__file__).parent / "conftest.py").resolve()
    for plugin in config.pluginmanager.get_plugins():
        if Path(getattr(plugin, "__file__", None) or "/").resolve() == path:
            return plugin
    raise LookupError(path)


def test_plain_n_uses_the_shared_setup_scheduler_and_other_modes_their_own(
        pytestconfig: pytest.Config) -> None:
    conftest: Any = _root_conftest(pytestconfig)

    scheduler = conftest.pytest_xdist_make_scheduler(_Config("load"), None)
    assert isinstance(scheduler, SharedSetupScheduling) and scheduler.numnodes == 2
    assert scheduler._split_scope("tests/training/test_stacked.py::test_x[1]") == (
        "tests/training/test_stacked.py")
    for dist in ("loadfile", "loadscope", "worksteal", "each"):
        assert conftest.pytest_xdist_make_scheduler(_Config(dist), None) is None


RAY_TESTS = ("tests/training/test_training_ray.py::test_ray_executor",
             "tests/security/test_config_code_imports.py::"
             "test_functions_of_a_loaded_module_reach_ray_workers")


def test_the_ray_tests_are_one_unit_and_exist() -> None:
    assert {scope_of(test, ROOT) for test in RAY_TESTS} == {"ray"}
    for test in RAY_TESTS:  # a renamed test would silently leave the group
        path, name = test.split("::")
        assert f"def {name}(" in (ROOT / path).read_text()
        assert "ray_executor" in (ROOT / path).read_text()


class _Item:
    def __init__(self, *fixtures: str, executor: object = None) -> None:
        self.fixturenames = list(fixtures)
        self.funcargs = {"ray_executor": executor} if executor else {}


class _Executor:
    stopped = 0

    def shutdown(self) -> None:
        self.stopped += 1


@pytest.mark.parametrize(("nextitem", "stopped"), [
    (None, 1),                                   # the last test of the run
    (_Item("tmp_path"), 1),                      # the next test does not use Ray
    (_Item("tmp_path", "ray_executor"), 0),      # the next one does: Ray stays up
])
def test_ray_stops_after_its_last_consecutive_user(nextitem, stopped,
                                                   pytestconfig: pytest.Config) -> None:
    conftest: Any = _root_conftest(pytestconfig)

    executor = _Executor()
    conftest.stop_idle_ray(_Item("ray_executor", executor=executor), nextitem)
    assert executor.stopped == stopped
    conftest.stop_idle_ray(_Item("tmp_path"), None)  # a test without Ray: nothing to stop
