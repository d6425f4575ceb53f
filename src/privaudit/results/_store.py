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

from privaudit._files import check_inside, mkdir_inside, read_json_inside
from privaudit._validation import param_error
from privaudit.exceptions import OutsideFolderError
from privaudit.results._attack_result import AttackResult
from privaudit.results._attribute import ATTRIBUTE_FILE, AttributeResult
from privaudit.results._dp_audit import DP_AUDIT_FILE, DPAuditResult
from privaudit.results._integrity import UnsafeResultFileError
from privaudit.results._io import DamagedResultWarning, ResultFileError, result_folder_name
from privaudit.results._memorisation import MEMORISATION_FILE, MemorisationResult
from privaudit.results._proximity import PROXIMITY_FILE, ProximityResult
from privaudit.results._result_format import RESULT_FILE
from privaudit.results._risk import RISK_FILE, RiskResult

__all__ = ["DEFAULT_REPORT_SETTINGS", "REPORT_MANIFEST", "RESULT_KINDS", "ResultsStore",
           "SavedResults", "load_all_results", "load_result", "read_report_manifest",
           "report_settings", "result_folder_names", "write_report_manifest"]

#: The file in a report's folder (beside ``index.html`` and ``results/``) that remembers
#: the report: its title, description and the order of its results (a rebuild keeps them).
REPORT_MANIFEST = "report.json"
_MANIFEST_FORMAT = "privaudit-report-manifest"

#: Each result kind's file, by which a saved folder is recognised, and its class.
RESULT_KINDS: dict[str, type] = {RESULT_FILE: AttackResult, RISK_FILE: RiskResult,
                                 PROXIMITY_FILE: ProximityResult,
                                 ATTRIBUTE_FILE: AttributeResult,
                                 DP_AUDIT_FILE: DPAuditResult,
                                 MEMORISATION_FILE: MemorisationResult}
#: The file each result type is saved to (:attr:`ResultFamily.RESULT_TYPE`).
_FILE_OF_TYPE = {cls.RESULT_TYPE: name for name, cls in RESULT_KINDS.items()}


def _kind_file(folder: Path) -> str | None:
    # lexists: a kind's file planted as a link is found, then refused by its load.
    return next((name for name in RESULT_KINDS if os.path.lexists(folder / name)), None)


def _inside(path: Path, root: Path, what: str) -> Path:
    """``path``, refused (UnsafeResultFileError) unless it resolves inside ``root``."""
    try:
        return check_inside(path, root, what=what)
    except OutsideFolderError as exc:
        raise UnsafeResultFileError(str(exc)) from None


def load_result(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None,
                require_digest: bool = False) -> Any:
    """The result saved in the folder ``path``, whichever its kind.

    Parameters
    ----------
    path : path-like
        The result's folder.
    root : path-like, optional
        The folder ``path`` belongs to (a results folder): ``path`` must resolve inside it
        (a result folder planted as a link out of it is refused).
    require_digest : bool
        Refuse a result without digests (see :meth:`AttackResult.load`).

    Raises
    ------
    FileNotFoundError
        When ``path`` holds none of the kinds' files.
    ResultFileError
        When the result is damaged, modified or unsafe (see each kind's ``load``).
    """
    folder = Path(path)
    if root is not None:
        _inside(folder, Path(root), "the result folder")
    name = _kind_file(folder)
    if name is None:
        raise FileNotFoundError(f"No saved result in {folder} (none of "
                                f"{', '.join(RESULT_KINDS)}).")
    return RESULT_KINDS[name].load(folder, require_digest=require_digest)


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

        Only a result whose digests match is returned: the audits reuse what this returns,
        so a result edited after it was written, or one without digests (an older
        privaudit's), is refused and recomputed by them.

        Raises
        ------
        ResultFileError
            When the saved result is damaged, modified, without digests or unsafe (a
            link out of the store: see :meth:`AttackResult.load`).
        """
        if not self.has(target, attack):
            return None
        self._check_directory()
        return load_result(self.path_for(target, attack), root=self.directory,
                           require_digest=True)

    def _check_directory(self) -> None:
        """Refuse a store folder planted as a link out of its parent (``out/results``)."""
        if os.path.islink(self.directory):
            _inside(self.directory, self.directory.parent, "the results folder")

    def _make_folder(self, name: str) -> Path:
        """Create the result folder ``name`` inside the store (no link on the way out)."""
        self._check_directory()
        return mkdir_inside(self.directory, name, what="the result folder")

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
        folder = self._make_folder(result_folder_name(
            result.target, result.attack if attack is None else attack))
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
            folder = self._make_folder(name)
            _save(result, folder, save)
            folders.append(folder)
        return folders

    def write_manifest(self, folders: Sequence[str | os.PathLike[str]], *, title: str,
                       description: str | None = None) -> Path:
        """Remember the report these results were saved for, beside the store.

        The store is a report's ``results/`` folder: ``report.json`` goes in the report's
        folder (the store's parent), beside ``index.html`` (:func:`write_report_manifest`),
        with ``folders`` (the results' folders in the store, in the report's order).
        """
        self._check_directory()
        report = self.directory.parent
        return write_report_manifest(
            report, [Path(self.directory.name) / Path(f).name for f in folders],
            title=title, description=description)

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
                yield load_result(path, root=self.directory)
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


class SavedResults(list):  # type: ignore[type-arg]
    """Results read back from a report's folder, with the title the report was given.

    A list (of results, in the report's order), plus ``title`` and ``description``: those
    of the report the results were saved for (:data:`REPORT_MANIFEST`), None when unknown.
    :func:`privaudit.report.build_report` reuses them when it is given no title, so that a
    rebuilt report keeps its title and order.
    """

    title: str | None = None
    description: str | None = None


def write_report_manifest(directory: str | os.PathLike[str],
                          folders: Sequence[str | os.PathLike[str]], *, title: str,
                          description: str | None = None) -> Path:
    """Write ``directory/report.json``: the report's title, description and result order.

    ``folders`` are the results' folders, relative to ``directory`` (``results/<name>``),
    in the report's order; :func:`load_all_results` reads them back in it.
    """
    from privaudit.results._io import dump_json

    doc = {"format": _MANIFEST_FORMAT, "title": str(title),
           "description": None if description is None else str(description),
           "folders": [Path(f).as_posix() for f in folders]}
    return dump_json(doc, Path(directory) / REPORT_MANIFEST, where="report manifest")


def read_report_manifest(root: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The manifest of the report ``root`` is (or whose ``results/`` folder it is).

    ``{"title", "description", "folders"}``, ``folders`` as absolute paths; None when there
    is none, or when it is not a well-formed manifest (a rebuild then sorts by path and
    takes the default title: the manifest only orders and names, it never decides what is
    loaded).
    """
    import json

    root = Path(os.path.abspath(root))
    for directory in (root, root.parent):
        candidate = directory / REPORT_MANIFEST
        if not candidate.is_file() or candidate.is_symlink():
            continue
        try:
            doc = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not (isinstance(doc, dict) and doc.get("format") == _MANIFEST_FORMAT
                and isinstance(doc.get("title"), str)
                and isinstance(doc.get("description"), (str, type(None)))
                and isinstance(doc.get("folders"), list)
                and all(isinstance(f, str) for f in doc["folders"])):
            return None
        return {"title": doc["title"], "description": doc["description"],
                "folders": [Path(os.path.abspath(directory / f)) for f in doc["folders"]]}
    return None


#: The bootstrap of a report whose ``results.json`` records none: the report's defaults.
DEFAULT_REPORT_SETTINGS = {"n_bootstrap": 1000, "random_state": 0}


def report_settings(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
                    ) -> dict[str, int]:
    """The bootstrap behind the intervals of the report the first path is (or holds).

    ``{"n_bootstrap", "random_state"}`` read from the report's ``results.json``
    (``settings``), in the folder or its parent (a report's ``results/`` folder), so that
    the gate reads the numbers the report shows; :data:`DEFAULT_REPORT_SETTINGS` for what
    no path records (not a report, a malformed file, or a report built with a seed that
    is not an int).
    """
    roots = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    for root in roots:
        folder = Path(os.path.abspath(root))
        for directory in (folder, folder.parent):
            try:
                settings = read_json_inside(directory, "results.json",
                                            what="the report's file")["settings"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(settings, dict):
                return {key: value if _is_count(value := settings.get(key)) else default
                        for key, default in DEFAULT_REPORT_SETTINGS.items()}
    return dict(DEFAULT_REPORT_SETTINGS)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _in_manifest_order(folders: list[Path], manifest: dict[str, Any] | None) -> list[Path]:
    """``folders`` (sorted) in the manifest's order; those it does not list after, sorted."""
    if manifest is None:
        return folders
    rank = {folder: i for i, folder in enumerate(manifest["folders"])}

    def key(folder: Path) -> tuple[int, int]:
        listed = rank.get(Path(os.path.abspath(folder)))
        return (1, 0) if listed is None else (0, listed)

    return sorted(folders, key=key)  # stable: unlisted ones keep their sorted order


def load_all_results(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
                     strict: bool = False) -> SavedResults:
    """Every saved result of every kind under ``paths`` (folders searched recursively).

    As :func:`~privaudit.results.load_results` (which reads attack results only): sorted by
    path, a damaged result skipped with a :class:`DamagedResultWarning` (raised with
    ``strict``). A report written by :func:`privaudit.report.build_report` holds a
    :data:`REPORT_MANIFEST`: its results (read from the report's folder or its
    ``results/``) come in the report's order, and the returned :class:`SavedResults`
    carries the report's ``title`` and ``description`` (those of the first path that has
    one).

    Raises
    ------
    FileNotFoundError
        If a path does not exist, or no saved result is found at all.
    """
    if not isinstance(strict, bool):
        raise param_error("strict", "load_all_results", "a bool", strict, error=TypeError)
    roots = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    found: list[tuple[Path, Path]] = []
    out = SavedResults()
    for root in roots:
        if not root.exists():
            raise FileNotFoundError(f"{root} does not exist.")
        if root.is_file():
            root = root.parent
        manifest = read_report_manifest(root)
        if manifest is not None and out.title is None:
            out.title, out.description = manifest["title"], manifest["description"]
        found.extend((folder, root) for folder in _in_manifest_order(_result_folders(root),
                                                                     manifest))
    # One entry per real folder: the same results reached by two paths (a folder and a
    # link to it, given side by side) are loaded, and counted, once.
    folders: dict[str, tuple[Path, Path]] = {}
    for folder, root in found:
        folders.setdefault(os.path.realpath(folder), (Path(os.path.abspath(folder)), root))
    if not folders:
        raise FileNotFoundError(f"No saved result ({', '.join(RESULT_KINDS)}) under "
                                f"{', '.join(map(str, roots))}.")
    for folder, root in folders.values():
        try:
            out.append(load_result(folder, root=root))
        except ResultFileError as exc:
            if strict:
                raise
            warnings.warn(f"Skipped the damaged result {folder}: {exc}", DamagedResultWarning,
                          stacklevel=2)
    return out


def _result_folders(root: Path) -> list[Path]:
    """Folders under ``root`` holding a kind's file, sorted; links out of ``root`` included.

    The user named ``root``; the walk does not follow links. Every linked folder that
    leads out of ``root`` is listed, whether it holds a result or results deeper down,
    so that loading it refuses it (a warning, or an error with ``strict``) rather than
    dropping it silently; one that stays inside is reached by its real path.
    """
    folders: set[Path] = set()
    for current, dirs, files in os.walk(root):
        here = Path(current)
        if any(name in RESULT_KINDS for name in files):
            folders.add(here)
        for name in dirs:
            link = here / name
            if os.path.islink(link) and not _resolves_in(link, root):
                folders.add(link)
    return sorted(folders)


def _resolves_in(path: Path, root: Path) -> bool:
    try:
        check_inside(path, root)
    except OutsideFolderError:
        return False
    return True


def _save(result: Any, folder: Path, save: dict[str, Any]) -> None:
    """Save ``result`` into ``folder``, removing another kind's file left there."""
    if result.RESULT_TYPE == "attack":
        result.save(folder, **save)
    else:
        result.save(folder)
    mine = _FILE_OF_TYPE[result.RESULT_TYPE]
    for name in RESULT_KINDS:
        if name != mine and os.path.lexists(folder / name):
            (folder / name).unlink()  # a stale result of another kind would be read first
