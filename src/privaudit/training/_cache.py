"""On-disk cache of a reference-model pool: one directory per pool key, one file per model.

Layout of ``<cache_dir>/refpool-<key[:24]>/``::

    pool.json            what the key was computed from (for people reading the directory)
    in_mask.npy          the pool's in/out mask, bool (n_models, n_records)
    model-00003<suffix>  model 3, written by the recipe's ``save``
    model-00003.json     its manifest: seed, training-set size and hash, file hash, time
    models.lock          the models' locks: byte 3 is locked while model 3 trains

Every file is written to a temporary name in the same directory and renamed into place
(``os.replace`` is atomic on POSIX and Windows), and a model's manifest is written only after
its model file: a model counts as finished exactly when its manifest exists and matches. A
run killed at any point leaves either a finished model or nothing (plus, at worst, a stray
temporary file that is ignored).

Several processes may fill one cache at once (two audits started together): before training
model ``i`` a process takes its lock, re-checks the manifest, trains only if it is still
missing, saves, and releases. Locks are the operating system's record locks: they vanish with
the process holding them, so a run killed with ``kill -9`` never leaves a model locked.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._digest import sha256_hex
from privaudit._files import (
    atomic_write,
    check_inside,
    mkdir_inside,
    open_inside,
    path_inside,
    read_json_inside,
    sha256_inside,
)
from privaudit.exceptions import OutsideFolderError, PrivauditWarning

__all__ = ["ModelCache"]

# Private switch for benchmarks/bench_cache_lock.py: per-model locks on (always in use).
_LOCKING = True

CACHE_FORMAT = 1

# At most this many models locked at once by one run (the others wait for the next round).
MAX_HELD_LOCKS = 256


class _ByteLocks:
    """Exclusive locks on single bytes of lock files: one file per pool, one byte per model.

    The operating system's record locks (``fcntl.lockf`` on POSIX, ``msvcrt.locking`` on
    Windows) are released when the process holding them dies, ``kill -9`` included, so a dead
    run never leaves a model locked, and no stale lock file needs cleaning up. One lock costs
    a system call on a file opened once per pool (a lock file per model would cost a file
    creation each). POSIX record locks belong to the process, and closing any descriptor of
    the file drops them all; so each file is opened once per process (shared, closed when its
    last lock is released), and this registry also excludes threads of one process.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._files: dict[str, list[int]] = {}  # path -> [descriptor, locks held]
        self._taken: set[tuple[str, int]] = set()

    def acquire(self, path: str, i: int, *, blocking: bool) -> bool:
        """Lock byte ``i`` of ``path``; False if it is taken and ``blocking`` is False."""
        while True:
            with self._guard:
                if (path, i) not in self._taken:
                    entry = self._files.get(path)
                    if entry is None:
                        entry = self._files[path] = [_open_lock(path), 0]
                    if _lock_byte(entry[0], i):
                        entry[1] += 1
                        self._taken.add((path, i))
                        return True
                    self._close_if_unused(path)
            if not blocking:
                return False
            time.sleep(0.05)

    def release(self, path: str, i: int) -> None:
        """Unlock byte ``i`` of ``path`` (taken by :meth:`acquire`)."""
        with self._guard:
            if (path, i) not in self._taken:
                return
            self._taken.discard((path, i))
            entry = self._files[path]
            _unlock_byte(entry[0], i)
            entry[1] -= 1
            self._close_if_unused(path)

    def _close_if_unused(self, path: str) -> None:
        entry = self._files.get(path)
        if entry is not None and entry[1] == 0:
            del self._files[path]
            os.close(entry[0])


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_byte(fd: int, i: int) -> bool:
        os.lseek(fd, i, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock_byte(fd: int, i: int) -> None:
        os.lseek(fd, i, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock_byte(fd: int, i: int) -> bool:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, i, os.SEEK_SET)
        except OSError as exc:  # EAGAIN or EACCES: another process holds it
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            return False
        return True

    def _unlock_byte(fd: int, i: int) -> None:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, i, os.SEEK_SET)


_byte_locks = _ByteLocks()

#: Largest manifest or pool.json read from a cache folder.
_MANIFEST_MAX_BYTES = 1 << 20


def _open_lock(path: str) -> int:
    """Open (create) a lock file inside its folder, never through a link (O_NOFOLLOW).

    A ``models.lock`` planted as a link, dangling or not, is refused with
    :class:`~privaudit.exceptions.OutsideFolderError`: its target is never created.
    """
    return open_inside(os.path.dirname(path), os.path.basename(path),
                       flags=os.O_RDWR | os.O_CREAT, mode=0o644, what="the cache's lock file")


def _write_json(obj: Any) -> Callable[[Path], None]:
    def write(p: Path) -> None:
        p.write_text(json.dumps(obj, indent=1, sort_keys=True), encoding="utf-8")

    return write


def indices_digest(indices: NDArray[np.int64]) -> str:
    """Hex SHA-256 of a training-index array."""
    return sha256_hex(np.ascontiguousarray(indices, dtype="<i8").tobytes())


class ModelCache:
    """The cache directory of one pool key.

    Parameters
    ----------
    cache_dir : path
        The user's cache root; created if missing.
    key : str
        Hex digest of everything that determines the pool's models.
    key_info : dict
        What the key was computed from, written to ``pool.json``.
    recipe : TrainingRecipe
        Saves and loads the models.
    prefix : str, default="refpool"
        The directory's name is ``<prefix>-<key[:24]>``.
    noun : str, default="reference model"
        What one entry is, in warnings (``"synthetic table"`` for generator runs).
    """

    def __init__(self, cache_dir: str | os.PathLike[str], key: str, key_info: dict[str, Any],
                 recipe: Any, *, prefix: str = "refpool",
                 noun: str = "reference model") -> None:
        self.key = key
        self.key_info = key_info
        self.recipe = recipe
        self.noun = noun
        self.root = Path(os.fspath(cache_dir))
        self.path = self.root / f"{prefix}-{key[:24]}"

    def model_path(self, i: int) -> Path:
        """Path of model ``i``'s file."""
        return self.path / f"model-{i:05d}{self.recipe.suffix}"

    def manifest_path(self, i: int) -> Path:
        """Path of model ``i``'s manifest."""
        return self.path / f"model-{i:05d}.json"

    def prepare(self, in_mask: NDArray[np.bool_]) -> None:
        """Create the directory and write ``pool.json`` and ``in_mask.npy`` if missing.

        Raises
        ------
        privaudit.exceptions.OutsideFolderError
            If the pool's folder, ``pool.json`` or ``in_mask.npy`` is a link leading out
            of the cache (nothing is read or written through it).
        """
        mkdir_inside(self.root, self.path.name, what="the cache folder")
        info_path = self.path / "pool.json"
        if os.path.lexists(info_path):
            try:
                stored = self._read_json("pool.json").get("key")
            except OutsideFolderError:
                raise
            except (OSError, ValueError, AttributeError):
                stored = None
            if stored != self.key:
                # A 96-bit prefix collision or a hand-edited file: never mix two pools.
                raise ValueError(
                    f"The cache directory {self.path} belongs to another pool; "
                    "remove it or use another cache_dir."
                )
        else:
            atomic_write(info_path, _write_json({"key": self.key, **self.key_info}),
                         root=self.path)
        mask_path = self.path / "in_mask.npy"
        if not os.path.lexists(mask_path) or os.path.islink(mask_path):
            atomic_write(mask_path, lambda p: np.save(p, in_mask, allow_pickle=False),
                         root=self.path)

    def _read_json(self, name: str) -> Any:
        """A JSON file of the pool's folder: inside it, no link, bounded size and depth."""
        check_inside(self.path, self.root, what="the cache folder")
        return read_json_inside(self.path, name, what="the cache file",
                                max_bytes=_MANIFEST_MAX_BYTES)

    def readable_model_path(self, i: int) -> Path:
        """Model ``i``'s file, refused unless it is a file inside the pool's folder.

        Raises
        ------
        privaudit.exceptions.OutsideFolderError
            If the folder leads out of the cache or the model file is a link (a recipe's
            loader follows links, so none is handed to it).
        """
        check_inside(self.path, self.root, what="the cache folder")
        path = path_inside(self.path, self.model_path(i).name, what="the cached model file")
        if os.path.islink(path):
            raise OutsideFolderError(f"the cached model file {path} is a symbolic link: "
                                     "privaudit reads only the files it wrote in its cache.")
        return path

    def check(self, i: int, seed: int, indices: NDArray[np.int64]) -> str | None:
        """Why model ``i`` cannot be reused (a short phrase), or None when it can."""
        manifest = self.manifest_path(i)
        if not os.path.lexists(manifest):
            return "is missing"
        try:
            info = self._read_json(manifest.name)
            model_file = self.model_path(i)
            if info.get("format") != CACHE_FORMAT or info.get("pool_key") != self.key:
                return "written by another pool or format"
            if info.get("index") != i or info.get("seed") != int(seed):
                return "has another index or seed"
            if info.get("indices_sha256") != indices_digest(indices):
                return "was trained on other records"
            if not os.path.lexists(model_file):
                return "has no model file"
            if info.get("model_sha256") != sha256_inside(self.path, model_file.name):
                return "does not match its model file"
        except OutsideFolderError:
            return "is a link leading out of the cache"
        except (OSError, ValueError, AttributeError):
            return "is unreadable"
        return None

    def train_seconds(self, i: int) -> float:
        """Training time recorded in model ``i``'s manifest (NaN if unreadable)."""
        try:
            info = self._read_json(self.manifest_path(i).name)
            return float(info.get("train_seconds", float("nan")))
        except (OSError, ValueError, TypeError, AttributeError):
            return float("nan")

    def finished(
        self, seeds: Sequence[int], train_indices: Sequence[NDArray[np.int64]]
    ) -> dict[int, float]:
        """Models already in the cache and valid, as ``{index: training seconds}``.

        A manifest that does not match what this pool would train (another seed, other
        indices, a model file with another hash) is reported with a warning and its model
        retrained.
        """
        done: dict[int, float] = {}
        for i, (seed, idx) in enumerate(zip(seeds, train_indices, strict=True)):
            problem = self.check(i, seed, idx)
            if problem == "is missing":
                continue
            if problem is not None:
                warnings.warn(
                    f"Cached {self.noun} {i} in {self.path} {problem}; making it again.",
                    PrivauditWarning, stacklevel=3,
                )
                continue
            done[i] = self.train_seconds(i)
        return done

    # ------------------------------------------------------------------ locks

    @property
    def lock_path(self) -> Path:
        """The pool's lock file: byte ``i`` is model ``i``'s lock."""
        return self.path / "models.lock"

    def claim(self, indices: Sequence[int], held: set[int]) -> list[int]:
        """Lock as many of ``indices`` as are free; wait for the first if all are taken.

        Locks taken are added to ``held`` (release them with :meth:`release`). Returns the
        indices not locked (another run is training them). Waiting happens only while this
        run holds no lock, so two runs can never wait for each other.
        """
        busy: list[int] = []
        for i in indices:
            if len(held) < MAX_HELD_LOCKS and self._acquire(i, held, blocking=False):
                continue
            busy.append(i)
        if not held and busy:
            self._acquire(busy[0], held, blocking=True)
            busy.pop(0)
        return busy

    def _acquire(self, i: int, held: set[int], *, blocking: bool) -> bool:
        if _LOCKING and not _byte_locks.acquire(str(self.lock_path), i, blocking=blocking):
            return False
        held.add(i)
        return True

    def release(self, held: set[int], i: int | None = None) -> None:
        """Release model ``i``'s lock, or every lock in ``held`` when ``i`` is None."""
        for j in sorted(held) if i is None else [i]:
            if j in held:
                held.discard(j)
                if _LOCKING:
                    _byte_locks.release(str(self.lock_path), j)

    def save(self, i: int, model: Any, *, seed: int, indices: NDArray[np.int64],
             train_seconds: float) -> None:
        """Write model ``i`` and then its manifest, each atomically."""
        model_file = atomic_write(self.model_path(i), lambda p: self.recipe.save(model, p),
                                  root=self.path)
        manifest = {
            "format": CACHE_FORMAT,
            "pool_key": self.key,
            "index": int(i),
            "seed": int(seed),
            "n_train": len(indices),
            "indices_sha256": indices_digest(indices),
            "model_file": model_file.name,
            "model_sha256": sha256_inside(self.path, model_file.name),
            "train_seconds": float(train_seconds),
        }
        atomic_write(self.manifest_path(i), _write_json(manifest), root=self.path)

    def load(self, i: int) -> Any:
        """Load model ``i`` with the recipe's safe loader (never through a link)."""
        return self.recipe.load(self.readable_model_path(i))


class CachedModels(Sequence[Any]):
    """A read-only list of a pool's models, loaded from the cache on access.

    Keeps memory flat for large pools: each access reads the file again.
    """

    def __init__(self, cache: ModelCache, n_models: int) -> None:
        self._cache = cache
        self._n = n_models

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        j = int(i)
        if j < 0:
            j += self._n
        if not 0 <= j < self._n:
            raise IndexError(f"model index {i} out of range for a pool of {self._n} models")
        return self._cache.load(j)

    def __iter__(self) -> Iterator[Any]:
        for j in range(self._n):
            yield self._cache.load(j)

    def __repr__(self) -> str:
        return f"<{self._n} reference models cached in {self._cache.path}>"
