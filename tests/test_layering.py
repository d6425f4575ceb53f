"""The layering of docs/architecture.md, checked on the source.

Each package imports only from the layers below it, and no module imports another
package's private module (``privaudit.results._io`` from ``privaudit.report``): shared
helpers live at the root or behind a public name. Imports inside functions count too:
a lazy import still makes the dependency. No module imports the root package
(``from privaudit import audit_model``: the root imports every audit, so a module below the
audits that reads the root makes a cycle), and no two modules import each other, directly
or through others, with the re-exports of package ``__init__`` files resolved.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import pytest

import privaudit

SRC = Path(privaudit.__file__).parent

#: What each package may import, besides the root helpers (``_validation``, ``exceptions``,
#: ``_progress``, ``_version``...). Engines (llm, synthetic, unlearn) sit
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
    # Auditing DP-SGD training: canaries, the training protocol, the Opacus recipe.
    "dp": {"training", "targets", "data", "signals", "metrics", "results"},
    # Every audit returns a report.AuditReport; report imports only results and metrics.
    "audits": {"report", "attacks", "dp", "llm", "synthetic", "unlearn", "training",
               "targets", "data", "signals", "metrics", "results"},
    "report": {"results", "metrics"},
    # Where users work: the CI gate reads results (and the report's verdict rules); the
    # tracking and model-card integrations read results, reports and the gate.
    "policy": {"report", "results", "metrics"},
    "integrations": {"policy", "report", "results", "metrics"},
    "studies": {"audits", "report", "attacks", "dp", "llm", "synthetic", "unlearn",
                "training", "targets", "data", "signals", "metrics", "results"},
    "cli": {"policy", "integrations", "studies", "audits", "report", "attacks", "dp", "llm",
            "synthetic", "unlearn", "training", "targets", "data", "signals", "metrics", "results"},
}
#: Upward imports allowed only inside a function body, run when a user displays a result:
#: a result shows itself in a notebook through the report's one renderer (one view for a
#: result and a report of it); loading a result never loads the report package.
DISPLAY_TIME: dict[str, set[str]] = {"privaudit.results._audit_info": {"report"}}
ROOT_HELPERS = {"", "_lazy", "_validation", "exceptions", "_progress", "_files", "_digest",
                "_optional", "_rows", "_text", "_version", "_warning_filters", "_yaml"}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        out.append((".".join(("privaudit", *parts)).removesuffix(".__init__"), path))
    return out


@cache
def _tree(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once for every test that reads it."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    return [n for n in names if n == "privaudit" or n.startswith("privaudit.")]


def _function_imports(path: Path) -> set[str]:
    """The privaudit modules imported inside a function body of ``path``."""
    names: set[str] = set()
    for func in ast.walk(_tree(path)):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
                elif isinstance(node, ast.Import):
                    names |= {a.name for a in node.names}
    return names


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
    lazy = _function_imports(path) if module in DISPLAY_TIME else set()
    for name in _imports(path):
        other = _package(name)
        if other == own or other in ROOT_HELPERS:
            continue
        if name in lazy and other in DISPLAY_TIME[module]:
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
    for name in ("_validation", "exceptions", "_progress", "_files", "_digest", "_optional",
                 "_version"):
        path = SRC / f"{name}.py"
        if not path.exists():
            continue
        packages = {_package(n) for n in _imports(path)} - ROOT_HELPERS
        assert not packages, f"privaudit.{name} imports {packages}"


def test_report_imports_no_audit() -> None:
    """Audits import report (their AuditReport); report importing audits would be a cycle."""
    bad = {module: [n for n in _imports(path) if _package(n) in ("audits", "studies", "cli")]
           for module, path in _modules() if _package(module) == "report"}
    assert not {m: names for m, names in bad.items() if names}


def _root_imports(path: Path) -> list[str]:
    """The imports of ``path`` that read the root package: ``import privaudit``, ``from
    privaudit import x`` (a name or a subpackage alike: the root package runs first)."""
    out = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "privaudit":
            out += [f"from privaudit import {a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [f"import {a.name}" for a in node.names if a.name == "privaudit"]
    return out


@pytest.mark.parametrize("module,path", _modules(), ids=[m for m, _ in _modules()])
def test_no_module_imports_the_root_package(module: str, path: Path) -> None:
    if module == "privaudit":
        return
    assert not _root_imports(path), (
        f"{module}: {_root_imports(path)}; import from the module or subpackage that "
        "defines the name (privaudit._version, privaudit.audits, privaudit.signals...)")


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module of a (possibly relative) ``from ... import``."""
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*parts, *([node.module] if node.module else [])])


@cache
def _reexports() -> dict[str, dict[str, tuple[str, str]]]:
    """For each package: name -> (module, name) it imports at the top of ``__init__.py``."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for module, path in _modules():
        if path.name == "__init__.py":
            tree = _tree(path)
            out[module] = {a.asname or a.name: (_absolute(module, path, node), a.name)
                           for node in tree.body if isinstance(node, ast.ImportFrom)
                           for a in node.names}
    return out


def _defining_module(base: str, name: str, modules: set[str]) -> str | None:
    """The module that ``from base import name`` really reads, re-exports followed."""
    seen = set()
    while f"{base}.{name}" not in modules and (base, name) not in seen:
        seen.add((base, name))
        nxt = _reexports().get(base, {}).get(name)
        if nxt is None or not nxt[0].startswith("privaudit"):
            return base if base in modules else None
        base, name = nxt
    return f"{base}.{name}" if f"{base}.{name}" in modules else base


def _import_graph() -> dict[str, dict[str, str]]:
    """module -> {imported module: "top" or "lazy"}, every privaudit import counted."""
    modules = dict(_modules())
    graph: dict[str, dict[str, str]] = {m: {} for m in modules}
    for module, path in modules.items():
        tree = _tree(path)
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _absolute(module, path, node)
                targets = [_defining_module(base, a.name, set(modules)) for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name if a.name in modules else None for a in node.names]
            else:
                continue
            for other in targets:
                if not other or other == module or not other.startswith("privaudit"):
                    continue
                if id(node) not in top and _package(other) in DISPLAY_TIME.get(module, ()):
                    continue  # declared above: run only when a user displays a result
                graph[module].setdefault(other, "top" if id(node) in top else "lazy")
    return graph


def _cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def test_cycle_finder_finds_cycles() -> None:
    """The finder itself: a lazy two-cycle, a three-cycle, and a chain that is none."""
    graph = {"a": {"b": "top"}, "b": {"a": "lazy"}, "c": {"d": "top"}, "d": {"e": "lazy"},
             "e": {"c": "top"}, "f": {"a": "top"}, "g": {}}
    assert sorted(_cycles(graph)) == [["a", "b"], ["c", "d", "e"]]
    assert _cycles({"a": {"b": "top"}, "b": {}}) == []


def test_reexports_are_followed_to_the_defining_module() -> None:
    modules = {m for m, _ in _modules()}
    assert _defining_module("privaudit.results", "AttackResult", modules) == (
        "privaudit.results._attack_result")
    assert _defining_module("privaudit.audits", "audit_model", modules) == (
        "privaudit.audits._model")
    assert _defining_module("privaudit", "signals", modules) == "privaudit.signals"


def test_no_import_cycle_between_modules() -> None:
    """No cycle, lazy imports included (issue 21: "Visible dependencies")."""
    graph = _import_graph()
    cycles = _cycles(graph)
    edges = [f"{a} -> {b} ({graph[a][b]})" for cycle in cycles for a in cycle
             for b in graph[a] if b in cycle]
    assert not cycles, "import cycles:\n" + "\n".join(edges)


def test_the_version_is_defined_once_in_its_own_module() -> None:
    """``privaudit._version`` holds it; the root re-exports it; nothing else assigns it."""
    import privaudit._version

    assert privaudit.__version__ is privaudit._version.__version__
    assigned = [module for module, path in _modules()
                for node in ast.walk(_tree(path))
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)]
    assert assigned == ["privaudit._version"]
