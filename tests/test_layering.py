"""The layering of docs/architecture.md, checked on the source.

Each package imports only from the layers below it, and no module imports another
package's private module (``privaudit.results._io`` from ``privaudit.report``): shared
helpers live at the root or behind a public name. Imports inside functions count too:
a lazy import still makes the dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import privaudit

SRC = Path(privaudit.__file__).parent

#: What each package may import, besides the root helpers (``_validation``, ``exceptions``,
#: ``_progress``, the bare ``privaudit`` package). Engines (llm, synthetic, unlearn) sit
#: beside ``attacks``' inputs when they land.
ALLOWED: dict[str, set[str]] = {
    "metrics": set(),
    "results": {"metrics"},
    "data": {"metrics"},
    "signals": set(),
    "targets": {"data", "signals"},
    "training": {"targets", "data", "signals"},
    # DESIGN: attacks read the engines (the generator attacks: synthetic's distances).
    "attacks": {"llm", "synthetic", "unlearn", "training", "targets", "data", "signals",
                "metrics", "results"},
    "llm": {"training", "targets", "data", "signals", "metrics", "results"},
    "synthetic": {"training", "targets", "data", "signals", "metrics", "results"},
    "unlearn": {"training", "targets", "data", "signals", "metrics", "results"},
    "audits": {"attacks", "llm", "synthetic", "unlearn", "training", "targets", "data", "signals",
               "metrics", "results"},
    "report": {"results", "metrics"},
    "studies": {"audits", "report", "attacks", "llm", "synthetic", "unlearn", "training", "targets",
                "data", "signals", "metrics", "results"},
    "cli": {"studies", "audits", "report", "attacks", "llm", "synthetic", "unlearn", "training",
            "targets", "data", "signals", "metrics", "results"},
}
ROOT_HELPERS = {"", "_validation", "exceptions", "_progress", "_files", "_digest", "_optional",
                "_rows"}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        out.append((".".join(("privaudit", *parts)).removesuffix(".__init__"), path))
    return out


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    return [n for n in names if n == "privaudit" or n.startswith("privaudit.")]


def _package(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2:
        return ""
    if not (SRC / parts[1]).is_dir() and not (SRC / f"{parts[1]}.py").exists():
        # ``from privaudit import audit_model``: an attribute of the root package, which
        # belongs to the package that defines it (a plain value belongs to the root).
        value = getattr(privaudit, parts[1], None)
        defined_in = getattr(value, "__module__", None) or "privaudit"
        return _package(defined_in)
    return parts[1]


@pytest.mark.parametrize("module,path", _modules(), ids=[m for m, _ in _modules()])
def test_imports_follow_the_layers(module: str, path: Path) -> None:
    own = _package(module)
    if own not in ALLOWED:
        return  # a root helper module: it may import nothing above metrics by convention
    bad = []
    for name in _imports(path):
        other = _package(name)
        if other == own or other in ROOT_HELPERS:
            continue
        if other not in ALLOWED[own]:
            bad.append(name)
    assert not bad, f"{module} imports {bad}, above or beside its layer"


@pytest.mark.parametrize("module,path", _modules(), ids=[m for m, _ in _modules()])
def test_no_private_module_of_another_package(module: str, path: Path) -> None:
    own = _package(module)
    bad = []
    for name in _imports(path):
        parts = name.split(".")
        if _package(name) in (own, "") or len(parts) < 3:
            continue
        if any(p.startswith("_") and not p.startswith("__") for p in parts[2:]):
            bad.append(name)
    assert not bad, f"{module} imports private modules of other packages: {bad}"


def test_root_helpers_import_no_package() -> None:
    for name in ("_validation", "exceptions", "_progress", "_files", "_digest", "_optional"):
        path = SRC / f"{name}.py"
        if not path.exists():
            continue
        packages = {_package(n) for n in _imports(path)} - ROOT_HELPERS
        assert not packages, f"privaudit.{name} imports {packages}"
