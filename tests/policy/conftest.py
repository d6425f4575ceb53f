"""The results every test of the gate reads: a real model audit, one result per kind."""

from __future__ import annotations

import numpy as np
import pytest
from gate_results import attack_result, attribute_result, dp_result, risk_result


@pytest.fixture(scope="module")
def model_report():
    """A real audit: an overfit tree on 300 records, attacked with LOSS."""
    from sklearn.tree import DecisionTreeClassifier

    from privaudit.audits import audit_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    members = np.r_[np.ones(150), np.zeros(150)].astype(int)
    tree = DecisionTreeClassifier(random_state=0).fit(X[members == 1], y[members == 1])
    return audit_model(tree, X, y, members, attacks=["loss"], check_fidelity=False,
                       slices=False, dataset="toy")


@pytest.fixture(scope="module")
def every_kind(model_report):
    """One result per kind the gate reads."""
    return {"model": model_report.results[0], "llm": attack_result("llm", signal=0.8),
            "unlearning": attack_result("unlearning", signal=0.6), "synthetic": risk_result(),
            "attribute": attribute_result(), "dp": dp_result()}
