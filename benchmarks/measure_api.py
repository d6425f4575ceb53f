"""Counts of docs/architecture.md's "The template, measured" table (issue 21).

Run from the repository root: ``python benchmarks/measure_api.py [SRC]`` (default ``src``);
give the ``src`` folder of another checkout to measure it (e.g. a ``git worktree`` of the
commit before the template). Pure AST reading: nothing is imported or run.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

RESULT_CLASSES = re.compile(
    r"isinstance\([^)]*(AttackResult|AttributeResult|RiskResult|ProximityResult)")


def any_parameters(folder: Path) -> tuple[int, int]:
    """(parameters annotated exactly ``Any``, all parameters) of the functions in folder."""
    typed_any = total = 0
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                for arg in a.posonlyargs + a.args + a.kwonlyargs:
                    if arg.arg in ("self", "cls"):
                        continue
                    total += 1
                    typed_any += (arg.annotation is not None
                                  and ast.unparse(arg.annotation) == "Any")
    return typed_any, total


def grep(folder: Path, pattern: re.Pattern[str]) -> int:
    """Lines of the package's sources that match ``pattern``."""
    return sum(bool(pattern.search(line)) for path in folder.rglob("*.py")
               for line in path.read_text(encoding="utf-8").splitlines())


def main(src: Path) -> None:
    package = src / "privaudit"
    typed_any, total = any_parameters(package / "audits")
    print(f"parameters typed Any in audits/: {typed_any} of {total} "
          f"({100 * typed_any / total:.0f}%)")
    print(f"isinstance checks on result classes: {grep(package, RESULT_CLASSES)}")
    print(f"'audit: Any' state holders in audits/: "
          f"{grep(package / 'audits', re.compile(r'[(, ]audit: Any'))}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("src"))
