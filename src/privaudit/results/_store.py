"""The results store: one folder layout for saved results, and its one owner.

An audit writes each finished attack through a :class:`ResultsStore` and a rerun reads it
back from there; ``privaudit report`` reads a folder of them. The layout is
``<directory>/<target>-<hash>__<attack>-<hash>/`` (:func:`result_folder_name`), each
folder written by its result's ``save`` (its JSON file last, atomically). Three result
kinds share the layout, told apart by that file: ``result.json``
(:class:`AttackResult`), ``risk.json`` (:class:`RiskResult`) and ``proximity.json``
(:class:`ProximityResult`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from privaudit._validation import param_error
from privaudit.results._attack_result import AttackResult
from privaudit.results._attribute import ATTRIBUTE_FILE, AttributeResult
from privaudit.results._io import DamagedResultWarning, ResultFileError, result_folder_name
from privaudit.results._proximity import PROXIMITY_FILE, ProximityResult
from privaudit.results._result_format import RESULT_FILE
from privaudit.results._risk import RISK_FILE, RiskResult

__all__ = ["RESULT_KINDS", "ResultsStore", "load_all_results", "load_result",
           "result_folder_names"]

#: Each result kind's file, by which a saved folder is recognised, and its class.
RESULT_KINDS: dict[str, type] = {RESULT_FILE: AttackResult, RISK_FILE: RiskResult,
                                 PROXIMITY_FILE: ProximityResult,
                                 ATTRIBUTE_FILE: AttributeResult}


def _kind_file(folder: Path) -> str | None:
    return next((name for name in RESULT_KINDS if (folder / name).is_file()), None)


def load_result(path: str | os.PathLike[str]) -> Any:
    """The result saved in the folder ``path``, whichever its kind.

    Raises
    ------
    FileNotFoundError
        When ``path`` holds none of the kinds' files.
    ResultFileError
        When the result is damaged or unsafe (see each kind's ``load``).
    """
    folder = Path(path)
    name = _kind_file(folder)
    if name is None:
        raise FileNotFoundError(f"No saved result in {folder} (none of "
                                f"{', '.join(RESULT_KINDS)}).")
    return RESULT_KINDS[name].load(folder)


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
        return _kind_file(self.path_for(target, attack)) is not None

    def load(self, target: str, attack: str) -> Any:
        """The saved result of ``attack`` on ``target``, or None when there is none.

        Raises
        ------
        ResultFileError
            When the saved result is damaged or unsafe (see :meth:`AttackResult.load`).
        """
        if not self.has(target, attack):
            return None
        return load_result(self.path_for(target, attack))

    def save(self, result: Any, *, attack: str | None = None, **save: object) -> Path:
        """Save ``result`` in its folder, atomically; return the folder.

        Parameters
        ----------
        result : AttackResult, RiskResult, ProximityResult or AttributeResult
            Filed under ``result.target`` and ``attack`` (default ``result.attack``).
        attack : str, optional
            The name the result is filed under when it is not ``result.attack`` (the
            registry name an audit asked for).
        **save
            Passed to :meth:`AttackResult.save` (``format``, ``n_bootstrap``...).
        """
        if not isinstance(result, tuple(RESULT_KINDS.values())):
            raise param_error("result", "ResultsStore.save", "an AttackResult, RiskResult, "
                              "ProximityResult or AttributeResult",
                              f"<{type(result).__name__}>",
                              error=TypeError)
        folder = self.path_for(result.target, result.attack if attack is None else attack)
        _save(result, folder, save)
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
            _save(result, folder, save)
            folders.append(folder)
        return folders

    def paths(self) -> list[Path]:
        """The folders holding a saved result, sorted (the same order on every machine)."""
        if not self.directory.is_dir():
            return []
        return sorted({p.parent for name in RESULT_KINDS
                       for p in self.directory.glob(f"*/{name}")})

    def __iter__(self) -> Iterator[Any]:
        """Every saved result of every kind, in :meth:`paths` order.

        Damaged ones are skipped with a :class:`~privaudit.results.DamagedResultWarning`.
        """
        for path in self.paths():
            try:
                yield load_result(path)
            except ResultFileError as exc:
                warnings.warn(f"Skipped the damaged result {path}: {exc}",
                              DamagedResultWarning, stacklevel=2)

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


def load_all_results(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
                     strict: bool = False) -> list[Any]:
    """Every saved result of every kind under ``paths`` (folders searched recursively).

    As :func:`~privaudit.results.load_results` (which reads attack results only): sorted by
    path, a damaged result skipped with a :class:`DamagedResultWarning` (raised with
    ``strict``).

    Raises
    ------
    FileNotFoundError
        If a path does not exist, or no saved result is found at all.
    """
    if not isinstance(strict, bool):
        raise param_error("strict", "load_all_results", "a bool", strict, error=TypeError)
    roots = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    folders: list[Path] = []
    for root in roots:
        if not root.exists():
            raise FileNotFoundError(f"{root} does not exist.")
        if root.is_file():
            root = root.parent
        folders.extend(sorted({f.parent for name in RESULT_KINDS for f in root.rglob(name)}))
    folders = list(dict.fromkeys(Path(os.path.abspath(f)) for f in folders))
    if not folders:
        raise FileNotFoundError(f"No saved result ({', '.join(RESULT_KINDS)}) under "
                                f"{', '.join(map(str, roots))}.")
    results = []
    for folder in folders:
        try:
            results.append(load_result(folder))
        except ResultFileError as exc:
            if strict:
                raise
            warnings.warn(f"Skipped the damaged result {folder}: {exc}", DamagedResultWarning,
                          stacklevel=2)
    return results


def _save(result: Any, folder: Path, save: dict[str, Any]) -> None:
    """Save ``result`` into ``folder``, removing another kind's file left there."""
    if isinstance(result, AttackResult):
        result.save(folder, **save)  # type: ignore[arg-type]
    else:
        result.save(folder)
    mine = next(n for n, cls in RESULT_KINDS.items() if isinstance(result, cls))
    for name in RESULT_KINDS:
        if name != mine and (folder / name).is_file():
            (folder / name).unlink()  # a stale result of another kind would be read first
