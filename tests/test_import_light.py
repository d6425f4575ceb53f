"""`import privaudit` must not pull in heavy libraries (DESIGN.md)."""

import subprocess
import sys

HEAVY = ("torch", "transformers", "spacy", "ray", "matplotlib", "sentence_transformers")


def test_import_privaudit_is_light() -> None:
    code = (
        "import sys, privaudit, privaudit.metrics, privaudit.results; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"import privaudit pulled in: {out}"


def test_cli_module_is_light() -> None:
    code = (
        "import sys, privaudit.cli; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"import privaudit.cli pulled in: {out}"
