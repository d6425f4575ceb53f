"""Scoring a corpus too large for one process: shards over the executor, cached, resumable.

The texts are sorted by length once, as :func:`~privaudit.llm.score_texts` sorts them, and
cut into shards on batch boundaries, so every worker scores exactly the batches one
process would: the numbers are the same whatever the number of workers (each worker runs
with the executor's thread limits, inline or not). The model and tokenizer travel once per
worker (the executor's ``shared`` arguments), shards stream through the workers (local
processes, or Ray across machines), and each finished shard is written atomically to
``cache_dir`` (``np.savez``, read back with ``allow_pickle=False``), so a rerun scores
only the shards that are missing.

Several devices (``devices=["cuda:0", "cuda:1"]`` or ``"auto"``): one worker per device,
each moving its copy of the model to its own device once, at its first shard, and scoring
every later shard there, so N GPUs score N times the texts (:func:`device_workers`).
Local workers claim a device each by creating a claim file of the call (an exclusive
create: no two take the same one); on Ray each task reserves one GPU (``num_gpus=1``) and
Ray makes it the task's only visible CUDA device.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._digest import run_digest
from privaudit._files import atomic_write, read_bytes_inside
from privaudit._progress import as_progress
from privaudit._validation import param_error

__all__ = ["DevicePins", "device_workers", "score_sharded"]

#: Batches per shard: large enough to amortise a task, small enough to balance workers.
BATCHES_PER_SHARD = 8


@dataclass(frozen=True)
class DevicePins:
    """One call's devices, as its workers receive them (once per worker, shared).

    Attributes
    ----------
    token : str
        Names the call: a worker places its models once per call.
    devices : tuple of str
        One per worker.
    claims : str or None
        The folder in which local workers claim a device (file ``<i>`` for
        ``devices[i]``); None when every worker takes ``devices[0]`` (on Ray, ``"cuda"``:
        the one GPU Ray made visible to the task).
    """

    token: str
    devices: tuple[str, ...]
    claims: str | None


#: This process's models of the current call, on the device it claimed: {token: models}.
_PINNED: dict[str, tuple[Any, Any]] = {}


def _claim_device(pins: DevicePins) -> str:
    """The first device of ``pins`` that no other worker of the call has claimed."""
    if pins.claims is None:
        return pins.devices[0]
    for i, device in enumerate(pins.devices):
        try:
            fd = os.open(os.path.join(pins.claims, str(i)),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))  # who holds it, for whoever looks
        return device
    raise RuntimeError(f"score_texts: a worker found every device of {list(pins.devices)} "
                       "taken; there must be one worker per device")


def _pinned_models(pins: DevicePins, model: Any, reference: Any) -> tuple[Any, Any]:
    """The models on this worker's device: moved there at its first shard of the call."""
    placed = _PINNED.get(pins.token)
    if placed is None:
        device = _claim_device(pins)
        for each in (model, reference):
            if each is not None:
                each.to(device)
        _PINNED.clear()  # an earlier call's models: not kept on the device
        placed = _PINNED[pins.token] = (model, reference)
    return placed


def _score_shard(texts: list[Any], names: tuple[str, ...], settings: dict[str, Any], *,
                 model: Any, tokenizer: Any, reference_model: Any,
                 score_texts: Any, pins: DevicePins | None = None) -> dict[str, np.ndarray]:
    import warnings

    from privaudit.exceptions import DegenerateInputWarning

    if pins is not None:
        model, reference_model = _pinned_models(pins, model, reference_model)

    with warnings.catch_warnings():
        # The caller counts the degenerate texts of all shards and warns once.
        warnings.simplefilter("ignore", DegenerateInputWarning)
        frame = score_texts(model, tokenizer, texts, attacks=names,
                            reference_model=reference_model, **settings)
    return {name: frame[name].to_numpy() for name in names}


def _shard_path(cache_dir: Path, key: str, shard: list[Any]) -> Path:
    digest = run_digest(key, [t if isinstance(t, str) else list(t) for t in shard])
    return cache_dir / f"shard-{digest}.npz"


def _load(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """A finished shard's statistics, or None when it must be scored (again).

    Read inside the cache folder without following a link: a shard file planted as a link
    (OutsideFolderError, a ValueError) is treated as damaged and replaced, never read.
    """
    try:
        raw = read_bytes_inside(path.parent, path.name, what="the cached shard")
        with np.load(io.BytesIO(raw), allow_pickle=False) as data:
            return {name: np.asarray(data[name], dtype=np.float64) for name in names}
    except (OSError, KeyError, ValueError, EOFError):
        return None  # missing, damaged or a link: scored again and overwritten


def score_sharded(model: Any, tokenizer: Any, texts: Sequence[Any], order: list[int],
                  names: tuple[str, ...], settings: dict[str, Any], *, executor: Any,
                  cache_dir: Any, key: str, progress: Any,
                  score_texts: Any, pins: DevicePins | None = None) -> dict[str, np.ndarray]:
    """Every statistic of every text (input order), shard by shard; see the module doc.

    ``order`` is the single-process scoring order (longest first, stable); ``key``
    identifies the model and the settings in the cache (not the devices: the shards'
    numbers do not depend on where they were scored in float32); ``score_texts`` scores
    one shard (:func:`privaudit.llm.score_texts`, handed in so that this module does not
    import the one that calls it); ``pins`` places each worker on a device of its own
    (:func:`device_workers`).
    """
    step = settings["batch_size"] * BATCHES_PER_SHARD
    shards = [[texts[i] for i in order[s:s + step]] for s in range(0, len(order), step)]
    rows = [order[s:s + step] for s in range(0, len(order), step)]
    folder = None if cache_dir is None else Path(cache_dir)
    out = {name: np.full(len(texts), np.nan) for name in names}
    todo = []
    for i, shard in enumerate(shards):
        done = None if folder is None else _load(_shard_path(folder, key, shard), names)
        if done is None:
            todo.append(i)
        else:
            for name in names:
                out[name][rows[i]] = done[name]
    bar = as_progress(progress, func="score_texts")
    with bar.task("Scoring shards", total=len(shards)) as task:
        task.advance(len(shards) - len(todo))
        tasks = [(shards[i], names, without_reference(settings)) for i in todo]
        shared = {"model": model, "tokenizer": tokenizer,
                  "reference_model": settings_reference(settings), "score_texts": score_texts}
        if pins is not None:
            shared["pins"] = pins
        for j, values in executor.map_unordered(_score_shard, tasks, shared=shared):
            i = todo[j]
            for name in names:
                out[name][rows[i]] = values[name]
            if folder is not None:
                path = _shard_path(folder, key, shards[i])
                atomic_write(path, lambda tmp, v=values: _save(tmp, v), root=folder)
            task.advance()
    return out


def settings_reference(settings: dict[str, Any]) -> Any:
    """The reference model of the settings (shared once per worker, not sent per task)."""
    return settings.get("reference_model")


def without_reference(settings: dict[str, Any]) -> dict[str, Any]:
    """The per-task settings: everything but the reference model."""
    return {k: v for k, v in settings.items() if k != "reference_model"}


def _save(path: Path, values: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as handle:
        np.savez(handle, **values)


def n_shards(n_texts: int, batch_size: int) -> int:
    """How many shards ``n_texts`` make."""
    return math.ceil(n_texts / (batch_size * BATCHES_PER_SHARD))


@contextlib.contextmanager
def device_workers(devices: Any, *, executor: Any = None, n_jobs: Any = None,
                   func: str = "score_texts") -> Iterator[tuple[Any, DevicePins]]:
    """The executor and the device pins of a call with ``devices``: one worker per device.

    Parameters
    ----------
    devices : "auto" or sequence of str or torch.device
        ``"auto"``: every visible CUDA device (on Ray: every GPU of the cluster). A list:
        one local worker per entry (an entry may repeat: two workers on one GPU).
    executor : {None, "local", "ray"}
        Local worker processes (default) or Ray tasks reserving one GPU each. The devices
        make the workers: an executor object, or ``n_jobs``, is refused.
    n_jobs : None
        Must be None with ``devices``.
    func : str
        The function whose parameters these are, as errors name it.

    Yields
    ------
    (Executor, DevicePins)
        For :func:`score_sharded`. A local executor made here is closed on exit (its
        workers, and the model copies they hold on their devices, end with it).
    """
    if n_jobs is not None:
        raise param_error("n_jobs", func, "None when 'devices' is given (one worker per "
                          "device)", n_jobs)
    if executor not in (None, "local", "ray"):
        raise param_error("executor", func, "None, 'local' or 'ray' when 'devices' is given "
                          "(the devices make the workers)", executor)
    token = uuid.uuid4().hex
    if executor == "ray":
        yield _ray_gpu_workers(devices, func), DevicePins(token, ("cuda",), None)
        return
    from privaudit.training import LocalExecutor

    names = local_devices(devices, func)
    claims = tempfile.mkdtemp(prefix="privaudit-devices-")
    runner = LocalExecutor(n_jobs=len(names))
    try:
        yield runner, DevicePins(token, names, claims)
    finally:
        runner.close()
        shutil.rmtree(claims, ignore_errors=True)
        _PINNED.pop(token, None)  # one device, inline: the caller's process held them


def _ray_gpu_workers(devices: Any, func: str) -> Any:
    from privaudit.training import RayExecutor

    if not (isinstance(devices, str) and devices == "auto"):
        raise param_error("devices", func, "'auto' with executor='ray' (Ray gives each task "
                          "its GPU)", devices)
    runner = RayExecutor(gpus_per_task=1)
    ray = runner._ensure_ray()
    if not ray.cluster_resources().get("GPU", 0):
        raise param_error("devices", func, "'auto' on a Ray cluster with GPUs",
                          "<'auto': the cluster has no GPU>")
    return runner


def local_devices(devices: Any, func: str = "score_texts") -> tuple[str, ...]:
    """``devices`` as device names this machine has, one per worker.

    ``"auto"`` is every visible CUDA device; a device that holds no data (``meta``) or
    that this machine lacks is refused, naming ``devices``.
    """
    import torch

    if isinstance(devices, str) and devices == "auto":
        count = torch.cuda.device_count()
        if not count:
            raise param_error("devices", func, "'auto' on a machine with a CUDA device, or "
                              "a list such as ['cpu']", "<'auto': no CUDA device visible>")
        return tuple(f"cuda:{i}" for i in range(count))
    expected = "'auto' or a non-empty list of devices (e.g. ['cuda:0', 'cuda:1'])"
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence) or not devices:
        raise param_error("devices", func, expected, devices,
                          error=ValueError if isinstance(devices, str) else TypeError)
    names = []
    for device in devices:
        try:
            resolved = torch.device(device)
            if resolved.type == "meta":
                raise RuntimeError("it holds no data")
            torch.empty(1, device=resolved)
        except (RuntimeError, TypeError, AssertionError) as exc:
            raise param_error("devices", func, f"{expected}, each one this machine has "
                              f"({device!r}: {exc})", devices) from None
        names.append(str(resolved))
    return tuple(names)
