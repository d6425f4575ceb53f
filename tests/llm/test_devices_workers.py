"""Multi-device scoring: one worker per device, each pinned to its own, the numbers of one.

A CPU machine has one device, so the tests give it under several names ("cpu:0" and
"cpu:1" are both the CPU to torch, but distinct names to the workers): a model wrapper
records, in a file its worker processes append to, every device it is moved to and the
device it declares at every forward pass, so that the tests see which worker claimed
which device, how often it moved its model, and where every batch ran.
"""

import copy
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_devices import RecordingLM

from conftest import corpus
from privaudit.llm import score_texts
from privaudit.llm._sharded import (
    BATCHES_PER_SHARD,
    DevicePins,
    device_workers,
    local_devices,
    score_sharded,
)
from privaudit.training import LocalExecutor, RayExecutor

NAMES = ("loss", "min-k", "zlib")
BATCH = 2
TEXTS = corpus(6 * BATCH * BATCHES_PER_SHARD, seed=23)  # six shards


class PinRecordingLM(RecordingLM):
    """test_devices' recording model, also logging ``to <pid> <device>`` and ``run <pid>
    <device> <rows>`` lines to a file (worker processes append to it too)."""

    def __init__(self, inner, log: Path):
        super().__init__(inner)
        self.log = str(log)

    def _write(self, line: str) -> None:
        with open(self.log, "a") as handle:
            handle.write(f"{line}\n")

    def to(self, *args, **kwargs):
        device = kwargs.get("device", args[0] if args else None)
        if device is not None and not isinstance(device, torch.dtype):
            self._declared = torch.device(device)
            self._write(f"to {os.getpid()} {self._declared}")
        return super().to(*args, **kwargs)

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        self._write(f"run {os.getpid()} {self._declared} {input_ids.shape[0]}")
        return super().forward(input_ids, attention_mask, position_ids)


def _scores(model, tokenizer, *, executor, pins=None):
    """score_texts' sharded path (the shards and order it cuts) on ``executor``."""
    order = sorted(range(len(TEXTS)), key=lambda i: -len(tokenizer(TEXTS[i])["input_ids"]))
    return score_sharded(model, tokenizer, TEXTS, order, NAMES,
                         {"batch_size": BATCH, "max_length": 128}, executor=executor,
                         cache_dir=None, key="test", progress=None, score_texts=score_texts,
                         pins=pins)


def _log(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()]


class FakeLM:
    """A model for worker processes that need no torch: logs its moves and its shards."""

    def __init__(self, log: str):
        self.log, self.device = log, "cpu"

    def to(self, device):
        self.device = str(device)
        with open(self.log, "a") as handle:
            handle.write(f"to {os.getpid()} {self.device}\n")
        return self


class _Column:
    def __init__(self, values):
        self.values = values

    def to_numpy(self):
        return self.values


def fake_score_texts(model, tokenizer, texts, *, attacks, reference_model, **settings):
    """A statistic of each text's characters; logs the shard where the model is."""
    with open(model.log, "a") as handle:
        handle.write(f"run {os.getpid()} {model.device} {len(texts)}\n")
    values = np.array([sum(map(ord, text)) / len(text) for text in texts])
    return {name: _Column(values * (i + 1)) for i, name in enumerate(attacks)}


def test_each_worker_pins_one_device_and_scores_every_shard_there(tmp_path):
    """Two worker processes (no torch in them: a fake model and scorer, sent by value)."""
    import sys

    from privaudit.training._executors import _cloudpickle

    cloudpickle = _cloudpickle()
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    log = tmp_path / "log.txt"
    order = list(range(len(TEXTS)))
    run = {"names": NAMES, "settings": {"batch_size": BATCH}, "cache_dir": None,
           "key": "test", "progress": None, "score_texts": fake_score_texts}
    try:
        with device_workers(["cpu:0", "cpu:1"]) as (runner, pins):
            assert runner.n_workers == 2 and pins.devices == ("cpu:0", "cpu:1")
            two = score_sharded(FakeLM(str(log)), None, TEXTS, order, executor=runner,
                                pins=pins, **run)
            claims = Path(pins.claims)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert not claims.exists()  # the call's claim files are removed
    lines = _log(log)
    moved = [(pid, device) for _, pid, device in (line for line in lines if line[0] == "to")]
    # Each worker moved its copy once, whatever its number of shards (6 shards, 2 workers).
    assert len({pid for pid, _ in moved}) == len(moved) >= 1
    assert len({device for _, device in moved}) == len(moved)  # no device claimed twice
    assert {device for _, device in moved} <= set(pins.devices)
    pinned = dict(moved)
    runs = [(pid, device, int(rows)) for _, pid, device, rows in
            (line for line in lines if line[0] == "run")]
    assert all(pinned[pid] == device for pid, device, _ in runs)  # every shard on its device
    assert len(runs) == 6 and sum(rows for *_, rows in runs) == len(TEXTS)
    assert str(os.getpid()) not in pinned  # the workers moved their copies, not the caller
    one = score_sharded(FakeLM(str(log)), None, TEXTS, order, executor=LocalExecutor(1), **run)
    for name in NAMES:  # bit for bit, row for row
        np.testing.assert_array_equal(two[name], one[name], err_msg=name)


def test_one_device_scores_inline_and_lets_go_of_the_models(tiny_model, tiny_tokenizer,
                                                            tmp_path):
    import privaudit.llm._sharded as sharded

    model = PinRecordingLM(copy.deepcopy(tiny_model), tmp_path / "log.txt")
    with device_workers(["cpu:1"]) as (runner, pins):
        got = _scores(model, tiny_tokenizer, executor=runner, pins=pins)
        assert sharded._PINNED  # held for the call's later shards
    assert not sharded._PINNED
    moved = [line for line in _log(tmp_path / "log.txt") if line[0] == "to"]
    assert moved == [["to", str(os.getpid()), "cpu:1"]]  # once, in this process
    want = _scores(tiny_model, tiny_tokenizer, executor=LocalExecutor(n_jobs=1))
    for name in NAMES:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@settings(max_examples=25, deadline=None)
@given(devices=st.lists(st.sampled_from(["cpu", "cpu:1", "cuda:0", "cuda:1"]), min_size=1,
                        max_size=6), order=st.randoms(use_true_random=False))
def test_workers_claim_each_device_once_whatever_their_order(devices, order):
    """k workers of n devices (names may repeat) take k distinct entries; n + 1 fail."""
    import tempfile

    from privaudit.llm._sharded import _claim_device

    with tempfile.TemporaryDirectory() as folder:
        pins = DevicePins("t", tuple(devices), folder)
        workers = list(range(len(devices)))
        order.shuffle(workers)
        taken = {worker: _claim_device(pins) for worker in workers}
        assert sorted(taken.values()) == sorted(devices)
        assert sorted(os.listdir(folder)) == sorted(str(i) for i in range(len(devices)))
        with pytest.raises(RuntimeError, match="one worker per device"):
            _claim_device(pins)


def test_a_worker_beyond_the_devices_is_an_error(tmp_path):
    from privaudit.llm._sharded import _claim_device

    pins = DevicePins("t", ("cpu:0", "cpu:1"), str(tmp_path))
    assert [_claim_device(pins), _claim_device(pins)] == ["cpu:0", "cpu:1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0", "1"]
    with pytest.raises(RuntimeError, match="one worker per device"):
        _claim_device(pins)
    assert _claim_device(DevicePins("t", ("cuda",), None)) == "cuda"  # Ray: its own GPU


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"devices": "auto"}, "devices"),  # no CUDA here (the gpu test covers the other case)
    ({"devices": "cpu"}, "devices"), ({"devices": []}, "devices"),
    ({"devices": 2}, "devices"), ({"devices": ["meta"]}, "devices"),
    ({"devices": ["cpu", "cuda:99"]}, "devices"), ({"devices": ["nodevice"]}, "devices"),
    ({"devices": ["cpu"], "n_jobs": 2}, "n_jobs"),
    ({"devices": ["cpu"], "executor": "dask"}, "executor"),
    ({"devices": ["cpu"], "executor": LocalExecutor(n_jobs=1)}, "executor"),
    ({"devices": ["cpu:0"], "executor": "ray"}, "devices"),
])
def test_bad_devices_are_one_error_naming_the_option(kwargs, param):
    if kwargs["devices"] == "auto" and torch.cuda.is_available():
        kwargs = {"devices": "auto", "n_jobs": 1}
        param = "n_jobs"
    with pytest.raises((ValueError, TypeError), match=f"'{param}' parameter"):
        with device_workers(**kwargs):
            pass


def test_ray_tasks_reserve_one_gpu_each(monkeypatch):
    """What the Ray executor asks of Ray, read from a stand-in (no GPU cluster here)."""
    import privaudit.training._executors as executors

    asked = []

    class FakeRay:
        exceptions = type("exceptions", (), {"RaySystemError": RuntimeError})

        def is_initialized(self):
            return True

        def cluster_resources(self):
            return {"CPU": 8.0, "GPU": 2.0}

        def remote(self, **options):
            asked.append(options)
            return lambda fn: type("R", (), {"remote": staticmethod(
                lambda f, args, threads, **kw: ("ref", f(*args, **kw)))})

        def put(self, value):
            return value

        def wait(self, refs, num_returns):
            return refs[:num_returns], refs[num_returns:]

        def get(self, ref):
            return ref[1]

        def cancel(self, ref):
            pass

    monkeypatch.setattr(executors, "_import_ray", FakeRay)
    monkeypatch.setattr(executors, "import_optional", lambda *a, **k: type(
        "cp", (), {"list_registry_pickle_by_value": staticmethod(lambda: []),
                   "register_pickle_by_value": staticmethod(lambda m: None)}))
    runner = RayExecutor(gpus_per_task=1)
    assert runner.n_workers == 2  # bounded by the GPUs, not the 8 CPUs
    assert dict(runner.map_unordered(divmod, [(7, 2), (9, 4)])) == {0: (3, 1), 1: (2, 1)}
    assert asked == [{"num_cpus": 1.0, "num_gpus": 1.0, "max_retries": 0}]
    assert RayExecutor().gpus_per_task == 0.0
    for bad in (-1, "1", True):
        with pytest.raises((ValueError, TypeError), match="'gpus_per_task'"):
            RayExecutor(gpus_per_task=bad)


def test_local_devices_names_each_device_once_per_worker():
    assert local_devices(["cpu", torch.device("cpu:1"), "cpu"]) == ("cpu", "cpu:1", "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_every_cuda_device_scores_as_the_cpu_does(tiny_model, tiny_tokenizer, tmp_path):
    model = PinRecordingLM(copy.deepcopy(tiny_model), tmp_path / "log.txt")
    with device_workers("auto") as (runner, pins):
        assert pins.devices == tuple(f"cuda:{i}" for i in range(torch.cuda.device_count()))
        gpus = _scores(model, tiny_tokenizer, executor=runner, pins=pins)
    moved = {device for what, _, device, *_ in _log(tmp_path / "log.txt") if what == "to"}
    assert moved <= set(pins.devices) and moved
    cpu = _scores(tiny_model, tiny_tokenizer, executor=LocalExecutor(n_jobs=1))
    for name in NAMES:
        np.testing.assert_allclose(gpus[name], cpu[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_score_texts_and_audit_llm_take_devices(tiny_model, tiny_tokenizer, tmp_path):
    """The public options reach the workers (one device: inline, so cheap)."""
    import privaudit

    model = PinRecordingLM(copy.deepcopy(tiny_model), tmp_path / "log.txt")
    got = score_texts(model, tiny_tokenizer, TEXTS, attacks=NAMES, batch_size=BATCH,
                      devices=["cpu:1"])
    want = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=NAMES, batch_size=BATCH,
                       executor=LocalExecutor(n_jobs=1))
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
    assert [line[2] for line in _log(tmp_path / "log.txt") if line[0] == "to"] == ["cpu:1"]
    with pytest.raises(ValueError, match="'device' parameter"):
        score_texts(model, tiny_tokenizer, TEXTS[:2], device="cpu", devices=["cpu"])
    report = privaudit.audit_llm((model, tiny_tokenizer), members=TEXTS[:8],
                                 non_members=TEXTS[8:16], attacks=["loss"], devices=["cpu:0"],
                                 blind_baseline=False, subgroups=False)
    assert report.results and model.device == torch.device("cpu:0")
    with pytest.raises(ValueError, match="'devices' parameter"):
        privaudit.audit_llm((model, tiny_tokenizer), members=TEXTS[:8], non_members=TEXTS[8:16],
                            attacks=["loss"], devices="everything")
