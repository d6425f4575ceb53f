"""Content digests (SHA-256), the one implementation every privaudit package uses.

Saved result keys, run keys, target fingerprints and the reference-model cache are keyed by
these digests, so each must give the same value in every process, machine and Python
session (no ``hash()``, no memory addresses) and must never change from one release to the
next: a changed byte feeding would orphan every saved result and cached model. Two ways of
feeding values exist, each kept exactly as it was written first:

- :func:`run_digest`: arrays by bytes, dtype and shape, anything else as sorted JSON (the
  audits' run keys);
- :func:`state_digest` / :meth:`Hasher.feed`: a canonical walk of an object's state, typed
  and length-prefixed, so ``(1, 2)`` and ``(12,)`` differ (target fingerprints).

Plus the full-length helpers of the cache: :func:`sha256_hex`, :func:`sha256_json`,
:func:`array_sha256` and :func:`file_sha256`. A root helper: it imports nothing of privaudit.
"""

from __future__ import annotations

import copyreg
import hashlib
import inspect
import json
import os
from typing import Any

import numpy as np

__all__ = [
    "Hasher",
    "array_sha256",
    "expand_bytes",
    "file_sha256",
    "hmac_sha256",
    "keyed_digest",
    "qualname",
    "run_digest",
    "sha256_hex",
    "sha256_json",
    "state_digest",
]

#: Hex digits kept by the short digests (80 bits: no accidental collision in a store).
DIGITS = 20

#: Attributes that hold runtime state, not the fitted model: a random generator is
#: re-seeded by every load (skops rebuilds ``MLPClassifier._random_state`` afresh), so
#: ``joblib.hash`` of the same file differed from one load to the next.
_VOLATILE_ATTRIBUTES = frozenset({"_random_state"})


def hmac_sha256(key: bytes) -> Any:
    """An incremental HMAC-SHA256 under ``key``, with ``update`` and ``digest``.

    For files a process authenticates for itself (the executor's shared arguments).
    """
    import hmac

    return hmac.new(key, digestmod=hashlib.sha256)


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data`` (64 digits)."""
    return hashlib.sha256(data).hexdigest()


def sha256_json(obj: Any) -> str:
    """Hex SHA-256 of the canonical JSON form of ``obj`` (sorted keys, no whitespace)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return sha256_hex(text.encode("utf-8"))


def array_sha256(arr: np.ndarray) -> str:
    """Hex SHA-256 of an array's dtype, shape and values.

    An object array is hashed by value (``pandas.util.hash_array``, whose SipHash key is
    fixed, so stable across processes): its raw bytes are pointers.
    """
    h = hashlib.sha256()
    h.update(f"{arr.dtype.str}|{arr.shape}|".encode())
    if arr.dtype == object:
        import pandas as pd

        h.update(pd.util.hash_array(arr.ravel(order="C"), categorize=False).tobytes())
    else:
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes, read in blocks of 1 MiB."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_digest(*parts: Any) -> str:
    """20 hex digits of SHA-256 over arrays (bytes, then dtype and shape) and JSON values.

    Non-array parts are fed as ``json.dumps(part, sort_keys=True, default=str)``. The run
    key of an audit (:class:`privaudit.audits.AuditRun`): saved results are found by it.
    """
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(np.ascontiguousarray(part).tobytes())
            h.update(str((part.dtype, part.shape)).encode())
        else:
            h.update(json.dumps(part, sort_keys=True, default=str).encode())
    return h.hexdigest()[:DIGITS]


def state_digest(*parts: Any) -> str:
    """20 hex digits of SHA-256 over plain values and arrays, fed canonically.

    The same values give the same digest in every process; ``(1, 2)`` and ``(12,)`` or
    ``[[1], 2]`` differ (see :meth:`Hasher.feed`).
    """
    return Hasher().feed(tuple(parts)).hexdigest(DIGITS)


class Hasher:
    """An incremental SHA-256: raw bytes (:meth:`update`) and canonical state (:meth:`feed`).

    Examples
    --------
    >>> Hasher().feed({"a": 1}).hexdigest(8) == Hasher().feed({"a": 1}).hexdigest(8)
    True
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def update(self, data: bytes) -> Hasher:
        """Feed raw bytes."""
        self._h.update(data)
        return self

    def feed(self, obj: Any) -> Hasher:
        """Feed ``obj``'s state in a canonical order.

        Scalars by type and ``repr``, arrays by dtype, shape and bytes (record arrays field
        by field: their padding bytes are uninitialised; object arrays item by item),
        containers by type, length and items (sets and dicts sorted by ``repr``), classes
        and functions by qualified name, random generators as one placeholder, other
        objects by class and ``__dict__`` (or their pickling state when they have none).
        The dict key ``_random_state`` is skipped (runtime state, not the model).

        Raises
        ------
        TypeError, ValueError, AttributeError, RecursionError
            If some part cannot be read, or is nested more than 60 levels deep.
        """
        _hash_state(obj, self._h, set(), 0)
        return self

    def hexdigest(self, digits: int | None = None) -> str:
        """The hex digest, cut to its first ``digits`` digits when given."""
        text = self._h.hexdigest()
        return text if digits is None else text[:digits]


def qualname(obj: Any) -> str:
    """``module.qualname`` of a class or function (``repr`` when it has no name)."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _hash_state(obj: Any, h: Any, seen: set[int], depth: int) -> None:
    if depth > 60:
        raise RecursionError("estimator state nested too deeply")
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
        return
    if isinstance(obj, (np.random.RandomState, np.random.Generator,
                        np.random.BitGenerator, np.random.SeedSequence)):
        h.update(b"<rng>;")
        return
    if isinstance(obj, np.generic):
        h.update(f"{obj.dtype.str}:".encode() + obj.tobytes() + b";")
        return
    if isinstance(obj, (type, np.ufunc)) or inspect.isroutine(obj):
        h.update(f"<{qualname(obj)}>;".encode())
        return
    if isinstance(obj, np.ndarray):
        _hash_array(obj, h, seen, depth)
        return
    if id(obj) in seen:
        h.update(b"<cycle>;")
        return
    seen.add(id(obj))
    try:
        _hash_container(obj, h, seen, depth)
    finally:
        seen.discard(id(obj))


def _hash_array(obj: np.ndarray, h: Any, seen: set[int], depth: int) -> None:
    h.update(f"array{obj.dtype.str}{obj.shape}:".encode())
    if obj.dtype.names:
        for field in obj.dtype.names:
            _hash_state(np.ascontiguousarray(obj[field]), h, seen, depth + 1)
    elif obj.dtype.hasobject:
        for item in obj.ravel():
            _hash_state(item, h, seen, depth + 1)
    else:
        h.update(np.ascontiguousarray(obj).tobytes())


def _hash_container(obj: Any, h: Any, seen: set[int], depth: int) -> None:
    if isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}]".encode())
        for item in obj:
            _hash_state(item, h, seen, depth + 1)
        return
    if isinstance(obj, (set, frozenset)):
        obj = sorted(obj, key=repr)
        h.update(f"set[{len(obj)}]".encode())
        for item in obj:
            _hash_state(item, h, seen, depth + 1)
        return
    if isinstance(obj, dict):
        h.update(f"dict[{len(obj)}]".encode())
        for key in sorted(obj, key=repr):
            if key in _VOLATILE_ATTRIBUTES:
                continue
            _hash_state(key, h, seen, depth + 1)
            _hash_state(obj[key], h, seen, depth + 1)
        return
    h.update(f"<{qualname(type(obj))}>".encode())
    state = getattr(obj, "__dict__", None)
    if state is None or not state:
        # Compiled objects (a tree's nodes, a loss) expose their state for pickling;
        # reading it runs no code from a file, the object is already built.
        reduced = obj.__reduce_ex__(4)
        if not isinstance(reduced, tuple) or len(reduced) < 2:
            raise TypeError(f"cannot read the state of {type(obj).__name__}")
        args = reduced[1][1:] if reduced[0] is copyreg.__newobj__ else reduced[1]
        state = {"args": args, "state": reduced[2] if len(reduced) > 2 else None}
    _hash_state(dict(state), h, seen, depth + 1)


def keyed_digest(data: bytes, key: bytes = b"", *, size: int = 32,
                 person: bytes = b"") -> bytes:
    """Keyed BLAKE2b of ``data`` (a pseudo-random function of ``data`` under ``key``).

    For keyed pseudo-random functions (Yeom et al.'s colluding training algorithm), not
    for identities: run keys and fingerprints stay SHA-256.
    """
    return hashlib.blake2b(data, key=key, digest_size=size, person=person).digest()


def expand_bytes(seed: bytes, n_bytes: int) -> bytes:
    """``n_bytes`` pseudo-random bytes from ``seed`` (SHAKE-256, an extendable output)."""
    return hashlib.shake_256(seed).digest(n_bytes)
