"""Worker processes and the user's main module: piped code works, unguarded scripts are told."""

from __future__ import annotations

import subprocess
import sys
import types

from privaudit.training import _executors

CODE = """
import numpy as np
from sklearn.linear_model import LogisticRegression
from privaudit.training import ReferencePool
X = np.random.default_rng(0).normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)
pool = ReferencePool(LogisticRegression(), 2, n_jobs=2, random_state=0).fit(X, y)
print("trained", pool.n_trained_)
"""


def test_start_method_follows_the_main_module(monkeypatch):
    piped = types.ModuleType("__main__")
    piped.__file__ = "<stdin>"
    piped.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", piped)
    assert not _executors._main_is_importable()
    assert _executors._default_start_method() == "fork"
    script = types.ModuleType("__main__")
    script.__file__ = __file__
    script.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert _executors._main_is_importable()
    assert _executors._default_start_method() == "forkserver"


def test_code_piped_to_python_trains_in_parallel():
    out = subprocess.run([sys.executable, "-"], input=CODE, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "trained 2" in out.stdout


def test_unguarded_script_gets_a_clear_message(tmp_path):
    script = tmp_path / "audit_script.py"
    script.write_text(CODE)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode != 0
    assert 'if __name__ == "__main__":' in out.stderr
