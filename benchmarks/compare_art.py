"""Cross-check against IBM ART: the same targets, the same records, both libraries' attacks.

ART (adversarial-robustness-toolbox) pins its own numpy/scipy, so it runs in a separate
virtual environment; the targets are trained once here, and ART sees only what an attack
needs: the target's probabilities on the audited records, served by an
``art.estimators.classification.BlackBoxClassifier`` keyed on the row index. Nothing is
pickled across the two environments (arrays go through ``np.savez``, read back with
``allow_pickle=False``; results come back as JSON).

Protocol: the audited records (members and non-members, half each) are split 50/50
(stratified, seeded). ART's trained attacks (``MembershipInferenceBlackBox`` with a random
forest, gradient boosting or a neural network) fit on the first half and score the second;
its rule-based attack (the gap attack: correct = member) scores the second half. privaudit
runs ``audit_model`` on all records (its trained attacks are cross-fitted: each record is
scored by a model that never saw its label) and is read on the same second half. AUC and
TPR at 1% FPR on that half, both libraries.

    python benchmarks/compare_art.py --setup     # creates .venv-art (ART, and torch for
                                                 # its neural-network attack model)
    python benchmarks/compare_art.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ART_PYTHON = ROOT / ".venv-art" / "bin" / "python"
PAIRS = {"gap": "rule-based (gap)", "trained-rf": "black-box rf",
         "trained-gb": "black-box gb", "trained-mlp": "black-box nn"}


def _targets():
    """(name, fitted model, X, y, labels) on real offline data, seeded."""
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neural_network import MLPClassifier

    from privaudit.data import load_tv16

    out = []
    tv16 = load_tv16(n_rows=4000, random_state=0)
    X, y = tv16.X, tv16.y
    mlp = MLPClassifier((512, 256), alpha=0.0, max_iter=500, random_state=0)
    out.append(("TV16 MLP (overfit)", mlp.fit(X[:2000], y[:2000]), X, y))
    X, y = load_breast_cancer(return_X_y=True)
    rf = RandomForestClassifier(n_estimators=100, random_state=0)
    out.append(("breast cancer RF", rf.fit(X[:284], y[:284]), X[:568], y[:568]))
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    mlp = MLPClassifier((256,), alpha=1e-5, max_iter=400, random_state=0)
    out.append(("digits MLP", mlp.fit(X[:898], y[:898]), X[:1796], y[:1796]))
    return [(name, model, X, y, np.r_[np.ones(len(y) // 2), np.zeros(len(y) // 2)])
            for name, model, X, y in out]


def _split(labels: np.ndarray) -> np.ndarray:
    """A stratified, seeded half of the records: True = ART's attack-training half."""
    rng = np.random.default_rng(0)
    first = np.zeros(labels.size, dtype=bool)
    for value in (0, 1):
        rows = np.flatnonzero(labels == value)
        first[rng.permutation(rows)[: rows.size // 2]] = True
    return first


def _metrics(labels: np.ndarray, scores: np.ndarray) -> dict:
    from privaudit.metrics import roc_auc, tpr_at_fpr

    return {"auc": float(roc_auc(labels, scores)),
            "tpr@1%": float(tpr_at_fpr(labels, scores, fpr=0.01))}


def privaudit_side(model, X, y, labels, test):
    import privaudit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = privaudit.audit_model(model, X, y, labels,
                                        attacks=[*PAIRS, "loss", "label-only"],
                                        slices=False, random_state=0)
    return {r.attack: _metrics(r.labels[test], r.scores[test]) for r in results}


def art_worker(data_path: str, out_path: str) -> None:
    """Runs in the ART environment: ART's attacks on the saved arrays."""
    from art.attacks.inference.membership_inference import (
        MembershipInferenceBlackBox,
        MembershipInferenceBlackBoxRuleBased,
    )
    from art.estimators.classification import BlackBoxClassifier
    from sklearn.metrics import roc_auc_score, roc_curve

    data = np.load(data_path, allow_pickle=False)
    probs, y, labels, first = data["probs"], data["y"], data["labels"], data["first"]
    index = np.arange(len(y), dtype=np.float64)[:, None]
    classifier = BlackBoxClassifier(lambda x: probs[x[:, 0].astype(int)], (1,),
                                    nb_classes=probs.shape[1])
    test = ~first

    def scored(values):
        fpr, tpr, _ = roc_curve(labels[test], values)
        return {"auc": float(roc_auc_score(labels[test], values)),
                "tpr@1%": float(np.max(tpr[fpr <= 0.01]))}

    out = {"art_version": __import__("art").__version__}
    rule = MembershipInferenceBlackBoxRuleBased(classifier)
    out["rule-based (gap)"] = scored(rule.infer(index[test], y[test]).ravel())
    for kind in ("rf", "gb", "nn"):
        attack = MembershipInferenceBlackBox(classifier, attack_model_type=kind)
        members, non = first & (labels == 1), first & (labels == 0)
        attack.fit(index[members], y[members], index[non], y[non])
        out[f"black-box {kind}"] = scored(
            attack.infer(index[test], y[test], probabilities=True).ravel())
    Path(out_path).write_text(json.dumps(out))


def art_side(model, X, y, labels, first) -> dict:
    classes = list(model.classes_)
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp) / "data.npz", Path(tmp) / "out.json"
        np.savez(data, probs=model.predict_proba(X), labels=labels, first=first,
                 y=np.array([classes.index(v) for v in y]))
        subprocess.run([str(ART_PYTHON), __file__, "--art-worker", str(data), str(out)],
                       check=True)
        return json.loads(out.read_text())


def main() -> None:
    if not ART_PYTHON.exists():
        sys.exit(f"No ART environment at {ART_PYTHON}: run `python {__file__} --setup`.")
    rows = []
    for name, model, X, y, labels in _targets():
        first = _split(labels)
        ours = privaudit_side(model, X, y, labels, ~first)
        theirs = art_side(model, X, y, labels, first)
        for attack, art_name in PAIRS.items():
            rows.append((name, attack, ours[attack], art_name, theirs[art_name]))
        for extra in ("loss", "label-only"):
            rows.append((name, extra, ours[extra], "", None))
    print(f"ART {theirs['art_version']}; AUC and TPR@1%FPR on the same held-out half")
    print(f"{'target':<22}{'privaudit':<14}{'AUC':>7}{'TPR@1%':>8}   {'ART':<18}{'AUC':>7}"
          f"{'TPR@1%':>8}  verdict")
    for name, attack, ours, art_name, theirs in rows:
        line = f"{name:<22}{attack:<14}{ours['auc']:7.3f}{ours['tpr@1%']:8.3f}   "
        if theirs is None:
            print(line)
            continue
        verdict = "privaudit >= ART" if ours["auc"] >= theirs["auc"] - 0.01 else "ART better"
        print(line + f"{art_name:<18}{theirs['auc']:7.3f}{theirs['tpr@1%']:8.3f}  {verdict}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--art-worker":
        art_worker(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "--setup":
        subprocess.run([sys.executable, "-m", "venv", str(ROOT / ".venv-art")], check=True)
        subprocess.run([str(ART_PYTHON), "-m", "pip", "install", "--quiet",
                        "adversarial-robustness-toolbox", "scikit-learn", "packaging",
                        "torch==2.13.0"],
                       check=True)
    else:
        main()
