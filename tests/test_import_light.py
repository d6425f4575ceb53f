"""`import privaudit` must not pull in heavy libraries (DESIGN.md)."""

import subprocess
import sys

HEAVY = ("torch", "transformers", "spacy", "ray", "matplotlib", "sentence_transformers")


def test_import_privaudit_is_light() -> None:
    code = (
        "import sys, privaudit, privaudit.metrics, privaudit.results; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = _in_a_fresh_interpreter(code)
    assert out == "", f"import privaudit pulled in: {out}"


def test_cli_module_is_light() -> None:
    code = (
        "import sys, privaudit.cli; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = _in_a_fresh_interpreter(code)
    assert out == "", f"import privaudit.cli pulled in: {out}"


def test_the_root_imports_its_subpackages_on_first_use() -> None:
    """A worker process importing one subpackage pays for it alone (PEP 562 root)."""
    code = (
        "import sys, privaudit; loaded = {m for m in sys.modules if m.startswith('privaudit.')};"
        "import privaudit.training._executors;"
        "after = {m.split('.')[1] for m in sys.modules if m.startswith('privaudit.')};"
        "f = privaudit.audit_model; r = privaudit.metrics.roc_auc;"
        "print(sorted(loaded), sorted(after & {'audits', 'report', 'attacks', 'results'}),"
        " f.__module__, r.__name__, privaudit.AuditReport.__name__)"
    )
    out = _in_a_fresh_interpreter(code)
    assert out == ("['privaudit._lazy', 'privaudit._version', 'privaudit.exceptions'] [] "
                   "privaudit.audits._model roc_auc AuditReport"), out


def test_a_language_model_worker_imports_no_scikit_learn() -> None:
    """Scoring workers import ``privaudit.llm``: the blind baseline (scikit-learn, pandas) is
    imported on first use only, so each worker saves about two CPU-seconds; the name still
    resolves, and ``dir`` lists it."""
    code = (
        "import sys, privaudit.llm as llm;"
        "before = sorted(m for m in ('sklearn', 'pandas', 'torch') if m in sys.modules);"
        "b = llm.BlindBaseline; from privaudit.llm import date_features;"
        "print(before, b.__module__, 'BlindBaseline' in dir(llm), 'sklearn' in sys.modules)"
    )
    out = _in_a_fresh_interpreter(code)
    assert out == "[] privaudit.llm._blind True True", out


def _in_a_fresh_interpreter(code: str) -> str:
    """What ``code`` prints in a new Python process (nothing imported before it)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
