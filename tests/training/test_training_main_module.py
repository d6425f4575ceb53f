"""Worker processes and the user's main module: piped code and unguarded scripts work."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import numpy as np
from sklearn.linear_model import LogisticRegression
from privaudit.training import ReferencePool
X = np.random.default_rng(0).normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)
pool = ReferencePool(LogisticRegression(), 2, n_jobs=2, random_state=0).fit(X, y)
print("trained", pool.n_trained_)
"""


def test_code_piped_to_python_trains_in_parallel():
    out = subprocess.run([sys.executable, "-"], input=CODE, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "trained 2" in out.stdout


def test_unguarded_script_trains_in_parallel(tmp_path):
    # No `if __name__ == "__main__":` guard: workers must not re-import the script.
    script = tmp_path / "audit_script.py"
    script.write_text(CODE)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("trained 2") == 1  # the script ran once, not once per worker
