"""The strong-membership section: the AUC against the radius, from real results."""

import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier

from privaudit.audits import strong_membership_inference
from privaudit.report import build_report
from privaudit.report._sections_strong import strong_curves


def test_strong_membership_section(tmp_path):
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    members, pop = order[:200], order[200:700]
    model = RandomForestClassifier(50, random_state=0).fit(X[members], y[members])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = strong_membership_inference(
            model, X[members], y[members], radii=[0.1, 1.0, 10.0, None],
            population=(X[pop], y[pop]), random_state=0)
    (curve,) = strong_curves(results, [r.metrics(n_bootstrap=50) for r in results])
    radii = [r for r, _ in curve["points"]]
    assert radii == [0.1, 1.0, 10.0, np.inf]
    aucs = [auc["value"] for _, auc in curve["points"]]
    assert abs(aucs[0] - 0.5) < 0.05 and aucs[2] > aucs[0] + 0.2  # Zhao's curve
    html = build_report(results, tmp_path, n_bootstrap=50).read_text()
    assert 'id="strong"' in html and "∞ (ordinary MI)" in html
    assert html.count("data:image/png;base64") >= 1
