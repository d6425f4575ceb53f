"""Worker processes and the user's main module: code piped to Python works.

An unguarded script (no ``if __name__ == "__main__":``) that trains in parallel is run by
tests/training/test_executor_processes.py (``audit_model`` with two workers, its recipe a
function of the script: it runs once, not once per worker).
"""

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

