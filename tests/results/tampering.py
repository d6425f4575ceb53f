"""Editing saved results by hand, as a user or a script would (imported by the tests)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

INTEGRITY = "integrity"


def unseal(folder: Path, name: str = "result.json") -> None:
    """Remove the digests: the result as a privaudit without digests wrote it."""
    path = folder / name
    doc = json.loads(path.read_text())
    doc.pop(INTEGRITY, None)
    path.write_text(json.dumps(doc))


def edit_json(folder: Path, change: Callable[[dict], None], name: str = "result.json", *,
              unsealed: bool = True) -> None:
    """Apply ``change`` to the JSON document (digests removed first when ``unsealed``)."""
    path = folder / name
    doc = json.loads(path.read_text())
    if unsealed:
        doc.pop(INTEGRITY, None)
    change(doc)
    path.write_text(json.dumps(doc))


def edit_csv(folder: Path, change: Callable[[list[str]], list[str]], *,
             unsealed: bool = True) -> None:
    """Apply ``change`` to the lines of ``scores.csv`` (digests removed when ``unsealed``)."""
    path = folder / "scores.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(change(lines)) + "\n")
    if unsealed:
        unseal(folder)
