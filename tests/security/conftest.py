"""Fixtures shared by the security tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    """A folder beside the one under test, holding a secret nothing may read or write."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("secret")
    return folder
