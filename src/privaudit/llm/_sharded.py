"""Scoring a corpus too large for one process: shards over the executor, cached, resumable.

The texts are sorted by length once, as :func:`~privaudit.llm.score_texts` sorts them, and
cut into shards on batch boundaries, so every worker scores exactly the batches one
process would: the numbers are the same whatever the number of workers (each worker runs
with the executor's thread limits, inline or not). The model and tokenizer travel once per
worker (the executor's ``shared`` arguments), shards stream through the workers (local
processes, or Ray across machines), and each finished shard is written atomically to
``cache_dir`` (``np.savez``, read back with ``allow_pickle=False``), so a rerun scores
only the shards that are missing.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._digest import run_digest
from privaudit._files import atomic_write, read_bytes_inside
from privaudit._progress import as_progress

__all__ = ["score_sharded"]

#: Batches per shard: large enough to amortise a task, small enough to balance workers.
BATCHES_PER_SHARD = 8


def _score_shard(texts: list[Any], names: tuple[str, ...], settings: dict[str, Any], *,
                 model: Any, tokenizer: Any, reference_model: Any,
                 score_texts: Any) -> dict[str, np.ndarray]:
    import warnings

    from privaudit.exceptions import DegenerateInputWarning

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
                  score_texts: Any) -> dict[str, np.ndarray]:
    """Every statistic of every text (input order), shard by shard; see the module doc.

    ``order`` is the single-process scoring order (longest first, stable); ``key``
    identifies the model and the settings in the cache; ``score_texts`` scores one shard
    (:func:`privaudit.llm.score_texts`, handed in so that this module does not import
    the one that calls it).
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
