"""Shared fixtures, the suite's time limits and its thread limits.

Time limits (pytest-timeout) catch hangs only. pyproject.toml holds both: ``timeout``, the
limit of an ordinary test, and ``slow_timeout``, which this file gives every test marked
``slow`` that carries no ``@pytest.mark.timeout`` of its own. Each is 20x or more the
time of the slowest test it covers on two idle cores, so a machine several times
oversubscribed still passes (issue 20: a 66 s test hit a 600 s limit under load).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from privaudit.results import AttackResult

# --cpu-durations=N: each test's CPU time with its fixtures and subprocesses (opt-in).
pytest_plugins = ["_cpu_durations"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("slow_timeout", "pytest-timeout's limit (s) for tests marked slow",
                  default="2400")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give ``slow`` tests the ``slow_timeout`` limit; an explicit timeout mark wins."""
    limit = float(config.getini("slow_timeout"))
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(limit))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N`` (xdist's ``load``): keep the tests that share a setup on one worker."""
    if config.getvalue("dist") != "load":
        return None
    from _xdist_shared_setup import SharedSetupScheduling

    return SharedSetupScheduling(config, log)


_modules_seen = 0


def _one_thread_per_library() -> None:
    """Run BLAS and OpenMP on one thread in this test process.

    pytest-xdist runs one test process per core; a library's own threads on top
    oversubscribe the cores, and OpenMP's spinning threads then cost far more than they
    save on the tiny data of a test (a 40-row HistGradientBoostingClassifier on a loaded
    machine: 2.1 s of CPU and 11 s wall on two threads, 0.1 s and 0.8 s on one).
    threadpoolctl limits the libraries loaded so far, so this runs again whenever modules
    were imported since. Subprocesses and the executors' workers set
    their own limits and are not affected.
    """
    global _modules_seen
    if len(sys.modules) != _modules_seen:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        _modules_seen = len(sys.modules)


def pytest_runtest_setup(item: pytest.Item) -> None:
    _one_thread_per_library()


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    stop_idle_ray(item, nextitem)
    restore_interrupt_handler(item)


def _sigint_ignored() -> bool | None:
    """Whether this process ignores SIGINT, as the kernel says (None: no ``/proc``)."""
    import signal
    from pathlib import Path

    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    ignored = next((line.split()[1] for line in status.splitlines()
                    if line.startswith("SigIgn:")), None)
    return None if ignored is None else bool(int(ignored, 16) >> (signal.SIGINT - 1) & 1)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Python's SIGINT handler in every test process, whatever the shell passed on.

    POSIX has a non-interactive shell start a background command (``pytest ... &``, as
    scripts and agents run it) with SIGINT ignored, and pytest-xdist's workers inherit
    that. The Ctrl-C tests' runs would inherit it in turn, and could not be stopped.
    """
    import signal

    if _sigint_ignored():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def restore_interrupt_handler(item: pytest.Item) -> None:
    """Undo a test (or a library it ran) that left SIGINT ignored, and name it.

    A child process inherits an ignored SIGINT, and Python then never raises
    KeyboardInterrupt in it: a pytest-xdist worker left that way made the executor's
    Ctrl-C test wait 150 s for a run that could not be interrupted, then fail.
    """
    import signal
    import warnings

    if _sigint_ignored():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        warnings.warn(f"{item.nodeid} left SIGINT ignored (restored)", stacklevel=1)


def stop_idle_ray(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop the ``ray_executor`` fixture's Ray instance when the next test does not use it."""
    if "ray_executor" not in getattr(item, "fixturenames", ()):
        return
    if nextitem is not None and "ray_executor" in getattr(nextitem, "fixturenames", ()):
        return
    executor = getattr(item, "funcargs", {}).get("ray_executor")
    if executor is not None:
        executor.shutdown()


def gaussian_result(
    n_members: int = 200,
    n_non_members: int = 200,
    shift: float = 1.0,
    *,
    seed: int = 0,
    predictions: bool = False,
    raw: bool = False,
    **provenance: Any,
) -> AttackResult:
    """Members' scores ~ N(shift, 1), non-members' ~ N(0, 1); seeded."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_members, dtype=int), np.zeros(n_non_members, dtype=int)]
    scores = np.r_[rng.normal(shift, 1, n_members), rng.normal(0, 1, n_non_members)]
    kwargs: dict[str, Any] = {"attack": "loss", "target": "model", **provenance}
    if predictions:
        kwargs["predictions"] = (scores > shift / 2).astype(int)
    if raw:
        kwargs["raw_statistic"] = -scores
        kwargs["raw_statistic_name"] = "loss"
    return AttackResult(labels=labels, scores=scores, **kwargs)


@pytest.fixture(scope="session")
def make_result():
    return gaussian_result


@pytest.fixture(scope="session")
def ray_executor():
    """A local Ray instance (2 CPUs) shared by the Ray tests of this process.

    Ray takes several seconds of CPU to start (and its workers more to warm up); the Ray
    tests run one after the other on one pytest-xdist worker
    (``_xdist_shared_setup.SHARED_ACROSS_MODULES``), which starts it once, through
    privaudit's own code path. It is stopped after the last of them (``stop_idle_ray``):
    an idle Ray still costs CPU; a later Ray test starts it again.
    """
    ray = pytest.importorskip("ray")
    from privaudit.training import RayExecutor

    if ray.is_initialized():
        ray.shutdown()
    executor = RayExecutor(num_cpus=2, init_kwargs={"log_to_driver": False})
    executor._ensure_ray()
    yield executor
    executor.shutdown()


#: A 1x1 white PNG: what ``figures_not_drawn`` puts in place of every figure.
PLACEHOLDER_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753"
    "de0000000c49444154789c63f8ffff3f0005fe02fe0def46b80000000049454e44ae426082")


def _placeholder_png(fig: Any, **kwargs: Any) -> bytes:
    return PLACEHOLDER_PNG


@pytest.fixture(scope="session")
def placeholder_png() -> bytes:
    """``PLACEHOLDER_PNG``, for a test whose subprocess stands it in for every figure."""
    return PLACEHOLDER_PNG


@pytest.fixture(scope="module")
def figures_not_drawn():
    """Every report figure is built but not drawn: one placeholder PNG stands for each.

    For modules whose tests read a report's text, tables, files and order, never its
    images (drawing is about 85% of a small report's CPU time: 3.4 s against 0.5 s). Each
    figure is still made and counted; the figures' own content, size and palette are
    tested with real drawing (tests/report/test_report_size.py, test_report_html.py,
    test_report_tables.py, the browser tests). Opt in with
    ``pytestmark = pytest.mark.usefixtures("figures_not_drawn")``.
    """
    import importlib
    import pkgutil

    import privaudit.report

    for info in pkgutil.walk_packages(privaudit.report.__path__, "privaudit.report."):
        importlib.import_module(info.name)
    with pytest.MonkeyPatch.context() as patch:
        for name, module in list(sys.modules.items()):
            if name.startswith("privaudit.report") and hasattr(module, "figure_png"):
                patch.setattr(module, "figure_png", _placeholder_png)
        yield


@pytest.fixture
def cpu_without_bfloat16(monkeypatch):
    """This machine as an old CPU without bfloat16 kernels answers: the layer norm raises."""
    import torch

    real = torch.nn.functional.layer_norm

    def old_cpu(x, *args, **kwargs):
        if x.dtype == torch.bfloat16:
            raise RuntimeError("\"LayerNormKernelImpl\" not implemented for 'BFloat16'")
        return real(x, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "layer_norm", old_cpu)
