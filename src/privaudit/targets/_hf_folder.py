"""A Hugging Face model folder, checked before transformers reads anything in it.

``from_pretrained`` opens whatever the folder's files name: a shard listed in
``model.safetensors.index.json`` by absolute path or with ``../``, a tokenizer named by
``tokenizer_config.json``'s ``fast_tokenizer_files``, and every file through a symbolic
link. :func:`check_model_folder` applies privaudit's one path rule
(:mod:`privaudit._files`) to all of them first:

- every symbolic link in the folder, at any depth (``model.safetensors``,
  ``tokenizer.json``, ``additional_chat_templates/``), must resolve inside the folder;
  a link inside it is fine. Sockets, pipes and devices are refused;
- every file name read from the folder's JSON files (the index's ``weight_map``, any
  ``*_file`` / ``*_files`` key of ``config.json``, ``tokenizer_config.json``,
  ``special_tokens_map.json`` and ``generation_config.json``) must be a relative path
  without ``..`` that resolves inside the folder;
- the JSON files must parse (the message names the file), the weights must be readable
  safetensors headers (every shard present, every tensor of the index in its shard), and
  a tokenizer must be there; ``tokenizer.json`` is parsed once here so that a crafted one
  that panics in Rust (``PanicException``, a ``BaseException``) is named, not let loose.

One layout is trusted beyond the folder: the hub cache's
``models--ORG--NAME/snapshots/REV``, whose files are links into ``models--ORG--NAME/blobs``;
there the links may resolve anywhere inside ``models--ORG--NAME``.

The checks run on the folder as it is; a folder changed *while* it loads (a race by
someone who can write to it) is outside what they guard against.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from privaudit._files import (
    JSON_MAX_BYTES,
    check_inside,
    parse_json,
    path_inside,
    read_limited_inside,
)
from privaudit._optional import import_optional

__all__ = ["FolderError", "check_model_folder", "guarded", "quiet_stderr"]

_T = TypeVar("_T")

_INDEX = "model.safetensors.index.json"
_SINGLE = "model.safetensors"
#: JSON files whose ``*_file`` / ``*_files`` keys name files transformers may open.
_NAMING_FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json",
                 "generation_config.json")
#: Files a tokenizer is read from (one of them must be in the folder).
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt",
                    "merges.txt", "spiece.model", "sentencepiece.bpe.model", "tekken.json",
                    "tiktoken.model")


class FolderError(ValueError):
    """A model folder that cannot be loaded faithfully; the message names the file."""


def check_model_folder(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Check every file transformers will read in ``folder``; return ``config.json``.

    Parameters
    ----------
    folder : path-like
        An existing local model folder (``save_pretrained``'s output).

    Returns
    -------
    dict
        The parsed ``config.json``.

    Raises
    ------
    privaudit.exceptions.OutsideFolderError
        If a link or a file name read from the folder leads outside it.
    FolderError
        If a file is missing, is not JSON, or holds damaged weights or tokenizer.
    """
    folder = Path(os.fspath(folder))
    if not folder.is_dir():
        raise FolderError(f"The model folder {folder} does not exist or is not a folder.")
    root = trust_root(folder)
    _check_links(folder, root)
    config = _json_dict(folder, "config.json", root, required=True)
    named = {name: _json_dict(folder, name, root) for name in _NAMING_FILES[1:]}
    for name, doc in (("config.json", config), *named.items()):
        for key, value in _file_keys(doc):
            _named_inside(folder, root, value, f"the file {value!r} named by {name} ({key})")
    _check_weights(folder, root)
    _check_tokenizer(folder, root, named["tokenizer_config.json"])
    return config


def trust_root(folder: Path) -> Path:
    """The folder links may resolve into: ``folder``, or its hub-cache repository."""
    snapshots = folder.parent
    repo = snapshots.parent
    if (snapshots.name == "snapshots" and repo.name.startswith("models--")
            and (repo / "blobs").is_dir()):
        return repo
    return folder


def _check_links(folder: Path, root: Path) -> None:
    """Refuse a link anywhere under ``folder`` leading outside ``root``, and odd files."""
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            path = Path(top, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                check_inside(path, root, what=f"the link {path.relative_to(folder)}")
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise FolderError(f"{path} is not a regular file (a pipe, socket or device): "
                                  "a model folder holds files and folders only.")


def _named_inside(folder: Path, root: Path, name: str, what: str) -> Path:
    """``folder / name``, refused unless it stays inside (see :func:`path_inside`)."""
    relative = folder.relative_to(root) if root != folder else Path()
    return path_inside(root, *relative.parts, name, what=what)


def _file_keys(doc: dict[str, Any] | None) -> Iterator[tuple[str, str]]:
    """``(key, file name)`` for each ``*_file`` / ``*_files`` key of a JSON document."""
    for key, value in (doc or {}).items():
        if not key.endswith(("_file", "_files")) or value is None:
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str):
                yield key, item


def _json_dict(folder: Path, name: str, root: Path, *,
               required: bool = False) -> dict[str, Any] | None:
    """The JSON object in ``folder / name`` (None if absent and not required)."""
    path = folder / name
    if not path.exists():
        if required:
            raise FolderError(f"The model folder {folder} has no {name}: save the model with "
                              "model.save_pretrained(folder, safe_serialization=True).")
        return None
    check_inside(path, root, what=name)
    if not path.is_file():
        raise FolderError(f"{path} must be a file; it is a folder.")
    # A link may resolve into a hub cache's blobs (inside root: checked above), so the
    # file is read where it resolves to, as privaudit reads its own files: a regular file
    # only, its size checked before it is read (a planted 10 GB config.json or a device
    # is refused, not read whole), then the JSON parsed with privaudit's limits.
    real = Path(os.path.realpath(path))
    try:
        data = read_limited_inside(real.parent, real.name, max_bytes=JSON_MAX_BYTES,
                                   what=name)
    except (OSError, ValueError) as exc:
        raise FolderError(" ".join(str(exc).split())) from None
    try:
        doc = parse_json(data, what=name)
    except ValueError as exc:
        raise FolderError(f"{path} is not a JSON file ({exc}).") from None
    if not isinstance(doc, dict):
        raise FolderError(f"{path} must hold a JSON object; it holds a "
                          f"{type(doc).__name__}.")
    return doc


def _check_weights(folder: Path, root: Path) -> None:
    """Every safetensors file transformers will read: inside, present, readable."""
    if (folder / _SINGLE).exists():
        _safetensors_keys(check_inside(folder / _SINGLE, root, what=_SINGLE), _SINGLE)
    index = _json_dict(folder, _INDEX, root)
    if index is None:
        return
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map or not all(
            isinstance(v, str) for v in weight_map.values()):
        raise FolderError(f"The 'weight_map' key of {folder / _INDEX} must map tensor names "
                          f"to shard files. Got {str(weight_map)[:80]!r} instead.")
    by_shard: dict[str, list[str]] = {}
    for tensor, shard in weight_map.items():
        by_shard.setdefault(shard, []).append(tensor)
    for shard, tensors in by_shard.items():
        what = f"the shard {shard!r} named by {_INDEX}"
        path = _named_inside(folder, root, shard, what)
        if not shard.endswith(".safetensors") or not path.is_file():
            problem = "is missing" if not path.exists() else "is not a .safetensors file"
            raise FolderError(f"{what.capitalize()} {problem} (in {folder}).")
        absent = sorted(set(tensors) - _safetensors_keys(path, shard))
        if absent:
            raise FolderError(f"{_INDEX} says shard {shard!r} holds {len(absent)} tensor(s) "
                              f"it does not hold: {', '.join(absent[:5])}.")


def _safetensors_keys(path: Path, name: str) -> set[str]:
    """The tensor names of a safetensors file, its header checked (data not read)."""
    safetensors = import_optional("safetensors", extra="llm",
                                  purpose="Reading a causal language model's weights")
    try:
        with safetensors.safe_open(os.fspath(path), framework="pt") as handle:
            return set(handle.keys())
    except Exception as exc:  # SafetensorError, OSError: the file's problem either way
        raise FolderError(f"{name} in {path.parent} is not a readable safetensors file "
                          f"({' '.join(str(exc).split())[:200]}).") from None


def _check_tokenizer(folder: Path, root: Path, config: dict[str, Any] | None) -> None:
    """A tokenizer is there, and its ``tokenizer.json`` files parse."""
    fast = [f for f in (config or {}).get("fast_tokenizer_files") or [] if isinstance(f, str)]
    present = [n for n in (*_TOKENIZER_FILES, *fast) if (folder / n).is_file()]
    if not present:
        raise FolderError(
            f"The model folder {folder} holds no tokenizer (none of "
            f"{', '.join(_TOKENIZER_FILES[:4])}, ...): save it beside the model with "
            "tokenizer.save_pretrained(folder).")
    for name in dict.fromkeys(n for n in present if n.endswith(".json") and n != "vocab.json"
                              and n != "tekken.json"):
        _parse_tokenizer_json(_named_inside(folder, root, name, name), name)


def _parse_tokenizer_json(path: Path, name: str) -> None:
    """Build the Rust tokenizer of ``path`` once and encode a text, failures named."""
    tokenizers = import_optional("tokenizers", extra="llm",
                                 purpose="Reading a causal language model's tokenizer")

    def parse() -> None:
        tokenizer = tokenizers.Tokenizer.from_str(path.read_text(encoding="utf-8"))
        tokenizer.encode("A privacy audit of a language model.")

    guarded(parse, f"The tokenizer file {name} in {path.parent} does not load")


def guarded(call: Callable[[], _T], failure: str) -> _T:
    """``call()``, native stderr held back, any failure raised as one named error.

    Parameters
    ----------
    call : callable
        Reads the folder's files (transformers, tokenizers, safetensors).
    failure : str
        The start of the message, naming the file or folder.

    Returns
    -------
    object
        What ``call`` returns.

    Raises
    ------
    FolderError
        ``"{failure} (ExceptionType: its message)."`` for any exception, a Rust panic
        (``PanicException``, a ``BaseException``) included; Ctrl-C and exit pass through,
        as does a :class:`FolderError` already naming the file.
    """
    try:
        with quiet_stderr():
            return call()
    except BaseException as exc:  # a Rust panic is a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit, FolderError)):
            raise
        text = " ".join(str(exc).split())[:300]
        raise FolderError(f"{failure} ({type(exc).__name__}: {text}).") from None


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Hold back what native code writes to file descriptor 2 during the block.

    Rust's panic hook prints its report (several lines, a backtrace with
    ``RUST_BACKTRACE``) straight to the descriptor; the command line shows one line per
    error. What was written is passed on if the block succeeds, dropped if it raises
    (the exception carries the message).
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no descriptor 2 (embedded interpreter)
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if not failed:
                held.seek(0)
                with contextlib.suppress(OSError):
                    os.write(2, held.read())
