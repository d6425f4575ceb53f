"""The results store: one folder layout for saved results, and its one owner.

An audit writes each finished attack through a :class:`ResultsStore` and a rerun reads it
back from there; ``privaudit report`` reads a folder of them. The layout is
``<directory>/<target>-<hash>__<attack>-<hash>/`` (:func:`result_folder_name`), each
folder written by :meth:`AttackResult.save` (``result.json`` last, atomically).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from privaudit._validation import param_error
from privaudit.results._attack_result import AttackResult, load_results
from privaudit.results._io import result_folder_name
from privaudit.results._result_format import RESULT_FILE

__all__ = ["ResultsStore", "result_folder_names"]


class ResultsStore:
    """Saved results in one folder, one sub-folder per (target, attack).

    Parameters
    ----------
    directory : path-like
        The store's folder (created on the first save).

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from privaudit.results import AttackResult, ResultsStore
    >>> store = ResultsStore(tempfile.mkdtemp())
    >>> result = AttackResult(labels=np.array([1, 0]), scores=np.array([0.9, 0.1]),
    ...                       attack="loss", target="model")
    >>> _ = store.save(result)
    >>> store.load("model", "loss").scores.tolist()
    [0.9, 0.1]
    >>> [r.attack for r in store]
    ['loss']
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        if not isinstance(directory, (str, os.PathLike)):
            raise param_error("directory", "ResultsStore", "a path", directory,
                              error=TypeError)
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.directory)!r})"

    def path_for(self, target: str, attack: str) -> Path:
        """The folder of the result of ``attack`` on ``target`` (unique per pair of names)."""
        return self.directory / result_folder_name(target, attack)

    def has(self, target: str, attack: str) -> bool:
        """Whether a result of ``attack`` on ``target`` was saved (damaged or not)."""
        return (self.path_for(target, attack) / RESULT_FILE).is_file()

    def load(self, target: str, attack: str) -> AttackResult | None:
        """The saved result of ``attack`` on ``target``, or None when there is none.

        Raises
        ------
        ResultFileError
            When the saved result is damaged or unsafe (see :meth:`AttackResult.load`).
        """
        if not self.has(target, attack):
            return None
        return AttackResult.load(self.path_for(target, attack))

    def save(self, result: AttackResult, *, attack: str | None = None, **save: object) -> Path:
        """Save ``result`` in its folder, atomically; return the folder.

        Parameters
        ----------
        result : AttackResult
            Filed under ``result.target`` and ``attack`` (default ``result.attack``).
        attack : str, optional
            The name the result is filed under when it is not ``result.attack`` (the
            registry name an audit asked for).
        **save
            Passed to :meth:`AttackResult.save` (``format``, ``n_bootstrap``...).
        """
        if not isinstance(result, AttackResult):
            raise param_error("result", "ResultsStore.save", "an AttackResult",
                              f"<{type(result).__name__}>", error=TypeError)
        folder = self.path_for(result.target, result.attack if attack is None else attack)
        result.save(folder, **save)  # type: ignore[arg-type]
        return folder

    def save_all(self, results: Sequence[Any], **save: object) -> list[Path]:
        """Save many results (attack and risk results), each in its own folder; in order.

        Results of the same target and attack name (e.g. on two datasets) go to
        ``<folder>``, ``<folder>__2``, ``<folder>__3``... in order, so none overwrites
        another. ``save`` is passed to each :meth:`AttackResult.save` (``format``...).
        Returns the folders.
        """
        folders = []
        for result, name in zip(results, result_folder_names(results), strict=True):
            folder = self.directory / name
            if isinstance(result, AttackResult):
                result.save(folder, **save)  # type: ignore[arg-type]
            else:
                result.save(folder)
            folders.append(folder)
        return folders

    def paths(self) -> list[Path]:
        """The folders holding a ``result.json``, sorted (the same order on every machine)."""
        if not self.directory.is_dir():
            return []
        return sorted(p.parent for p in self.directory.glob(f"*/{RESULT_FILE}"))

    def __iter__(self) -> Iterator[AttackResult]:
        """Every saved result, in :meth:`paths` order.

        Damaged ones are skipped with a :class:`~privaudit.results.DamagedResultWarning`
        (see :func:`load_results`).
        """
        paths = self.paths()
        return iter(load_results(paths) if paths else [])

    def __len__(self) -> int:
        return len(self.paths())


def result_folder_names(results: Sequence[Any]) -> list[str]:
    """Folder names of ``results``, file-name-safe and unique, in order.

    :func:`~privaudit.results.result_folder_name` of each target and attack (unique per
    pair of names); results of the same target and attack get ``__2``, ``__3``... in order.
    """
    seen: dict[str, int] = {}
    out = []
    for result in results:
        name = result_folder_name(result.target, result.attack)
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}__{seen[name]}")
    return out
