"""The demo's parts side by side in worker processes: same results, same progress, warnings.

The parts here are small stand-ins defined at the top of this module (a spawned worker
imports them by name); the real parts are the studies' own tests.
"""

import logging
import os
import warnings

import pytest

import privaudit.studies._demo as demo_module
from privaudit._progress import Progress
from privaudit.exceptions import BaselineWarning
from privaudit.studies._demo_workers import run_parts_in_workers


def _counting_part(kind):
    def part(random_state, n_reference_models, n_jobs, progress):
        progress.message(f"starting {kind}")
        with progress.task(f"{kind} steps", total=3) as step:
            for _ in range(3):
                step.advance()
        warnings.warn(f"{kind} is no better than random guessing", BaselineWarning,
                      stacklevel=1)
        return [(kind, random_state, n_reference_models, n_jobs, os.getpid())]
    return part


def part_a(random_state, n_reference_models, n_jobs, progress):
    return _counting_part("a")(random_state, n_reference_models, n_jobs, progress)


def part_b(random_state, n_reference_models, n_jobs, progress):
    return _counting_part("b")(random_state, n_reference_models, n_jobs, progress)


def part_fails(random_state, n_reference_models, n_jobs, progress):
    raise RuntimeError("the part broke")


def part_noisy(random_state, n_reference_models, n_jobs, progress):
    logger = logging.getLogger("privaudit_test_library")
    logger.warning("noisy notice from the library")
    logger.warning("kept notice from the library")
    warnings.warn("silenced by the command", UserWarning, stacklevel=1)
    warnings.warn("shown by the command", UserWarning, stacklevel=1)
    return []


def part_threads(random_state, n_reference_models, n_jobs, progress):
    import numpy  # noqa: F401 - its BLAS is what the limit is about
    from threadpoolctl import threadpool_info

    blas = {info["num_threads"] for info in threadpool_info()}
    return [(os.environ.get("OMP_NUM_THREADS"), os.environ.get("OPENBLAS_NUM_THREADS"),
             blas)]


class DropNoisy(logging.Filter):
    """What a command installs to silence a library's notice (picklable: top level)."""

    def filter(self, record):
        return not record.getMessage().startswith("noisy")


class Recorder(Progress):
    """Keeps every message and every step's description, total and last count."""

    def __init__(self):
        self.messages, self.steps = [], {}

    def message(self, text):
        self.messages.append(text)

    def _closed(self, task):
        self.steps[task.description] = (task.total, task.completed)


def _run(parts, progress, **kwargs):
    return run_parts_in_workers(parts, random_state=7, n_reference_models=4, n_jobs=1,
                                n_workers=2, progress=progress, **kwargs)


@pytest.mark.timeout(600)  # two spawned workers start in a few seconds; a hang fails
def test_parts_run_in_workers_and_report_back_here():
    recorder = Recorder()
    with pytest.warns(BaselineWarning) as caught:
        results = _run({"b": part_b, "a": part_a}, recorder, longest_first=("a",))
    # Results in the order the parts were given, whatever order they ran in.
    assert [r[:4] for r in results] == [("b", 7, 4, 1), ("a", 7, 4, 1)]
    assert all(r[4] != os.getpid() for r in results)  # each ran in a worker
    assert sorted(recorder.messages) == ["a: starting a", "b: starting b"]
    assert recorder.steps == {"a: a steps": (3, 3), "b: b steps": (3, 3)}
    texts = sorted(str(w.message) for w in caught)
    assert texts == ["a is no better than random guessing",
                     "b is no better than random guessing"]


@pytest.mark.timeout(600)
@pytest.mark.filterwarnings("ignore::privaudit.exceptions.BaselineWarning")
def test_a_failing_part_raises_its_error_here():
    with pytest.raises(RuntimeError, match="the part broke"):
        _run({"a": part_a, "broken": part_fails}, None)


@pytest.mark.parametrize(("kinds", "n_jobs", "replaced", "expected"), [
    (["model", "llm"], 2, False, 2),
    (["model", "llm", "synthetic"], 3, False, 3),
    (["model", "llm"], 8, False, 2),  # never more workers than parts
    (["model", "llm"], 1, False, 0),  # n_jobs=1: here, one after the other
    (["model"], 2, False, 0),  # one part: here
    (["model", "llm"], 2, True, 0),  # a part replaced at run time: here
])
def test_parts_go_to_workers_only_when_they_can(monkeypatch, kinds, n_jobs, replaced,
                                                expected):
    if replaced:
        monkeypatch.setitem(demo_module.DEMO_PARTS, "llm", lambda *args: [])
    assert demo_module._in_workers(kinds, n_jobs) == expected


def test_every_cpu_means_one_worker_per_cpu_up_to_the_parts(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert demo_module._in_workers(["model", "llm", "synthetic"], -1) == 2


def test_the_longest_first_order_names_every_part():
    assert sorted(demo_module._LONGEST_FIRST) == sorted(demo_module.DEMO_PARTS)


@pytest.mark.timeout(600)
def test_the_commands_warning_and_log_filters_hold_in_the_workers(capfd):
    logger = logging.getLogger("privaudit_test_library")
    noisy = DropNoisy()
    logger.addFilter(noisy)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", message="silenced")
            _run({"a": part_noisy, "b": part_noisy}, None)
    finally:
        logger.removeFilter(noisy)
    assert sorted(str(w.message) for w in caught) == ["shown by the command"] * 2
    err = capfd.readouterr().err
    assert "kept notice from the library" in err
    assert "noisy notice" not in err


@pytest.mark.timeout(600)
def test_each_worker_gets_its_share_of_the_cores(monkeypatch):
    # Two workers on two cores: one thread each for BLAS and OpenMP, so that neither
    # waits for a core the other holds; the user's own setting is kept.
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    share = str(max(1, (os.cpu_count() or 1) // 2))
    results = _run({"a": part_threads, "b": part_threads}, None)
    assert [r[:2] for r in results] == [(share, "1")] * 2
    assert all(blas <= {int(share)} for _, _, blas in results)
    assert "OMP_NUM_THREADS" not in os.environ  # this process's environment restored
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
