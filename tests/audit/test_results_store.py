"""ResultsStore: one folder layout for saved results, read and written by its one owner."""

import json
import warnings

import numpy as np
import pytest

import privaudit
from privaudit.results import (
    AttackResult,
    DamagedResultWarning,
    ResultFileError,
    ResultsStore,
    load_results,
    result_folder_name,
)

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


def _result(attack="loss", target="model", seed=0):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(20, dtype=np.int8), np.zeros(20, dtype=np.int8)]
    return AttackResult(labels=labels, scores=rng.normal(size=40), attack=attack, target=target)


def test_path_for_uses_the_one_naming_rule(tmp_path):
    store = ResultsStore(tmp_path)
    assert store.path_for("model v1", "lira-online") == tmp_path / result_folder_name(
        "model v1", "lira-online")
    # Names that differ give different folders (no silent overwrite).
    assert store.path_for("model v1", "loss") != store.path_for("model_v1", "loss")


def test_save_load_and_iterate(tmp_path):
    store = ResultsStore(tmp_path / "new")
    assert store.load("model", "loss") is None and list(store) == [] and len(store) == 0
    a, b = _result("loss"), _result("rmia", seed=1)
    assert store.save(a) == store.path_for("model", "loss")
    store.save(b)
    loaded = store.load("model", "loss")
    np.testing.assert_array_equal(loaded.scores, a.scores)
    assert sorted(r.attack for r in store) == ["loss", "rmia"]
    assert len(store) == 2
    # load_results (what `privaudit report` reads) finds the same results.
    assert sorted(r.attack for r in load_results(tmp_path / "new")) == ["loss", "rmia"]


def test_save_under_the_requested_name(tmp_path):
    store = ResultsStore(tmp_path)
    result = _result("LiRA (online)")
    store.save(result, attack="lira-online")
    assert store.has("model", "lira-online") and not store.has("model", "LiRA (online)")
    assert store.load("model", "lira-online").attack == "LiRA (online)"


def test_damaged_result_raises_on_load_and_is_skipped_in_iteration(tmp_path):
    store = ResultsStore(tmp_path)
    store.save(_result("loss"))
    store.save(_result("rmia", seed=1))
    (store.path_for("model", "rmia") / "result.json").write_text("{not json")
    with pytest.raises(ResultFileError, match=r"result\.json"):
        store.load("model", "rmia")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [r.attack for r in store] == ["loss"]
    assert any(w.category is DamagedResultWarning for w in caught)


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="'directory' parameter of ResultsStore"):
        ResultsStore(3)
    with pytest.raises(TypeError, match=r"'result' parameter of ResultsStore\.save"):
        ResultsStore(tmp_path).save({"attack": "loss"})


def test_audit_writes_through_the_store(tmp_path):
    from sklearn.datasets import load_breast_cancer
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(random_state=0).fit(X[:100], y[:100])
    labels = np.r_[np.ones(100, dtype=np.int8), np.zeros(100, dtype=np.int8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = privaudit.audit_model(model, X[:200], y[:200], labels, attacks=["loss"],
                                        results_dir=tmp_path, slices=False)
    store = ResultsStore(tmp_path)
    saved = store.load(results[0].target, "loss")
    assert saved is not None and saved.audit.key == results[0].audit.key
    doc = json.loads((store.path_for(results[0].target, "loss") / "result.json").read_text())
    assert doc["audit"]["baseline"]["name"] == "random-guess"


def test_save_all_keeps_every_result_and_the_report_uses_it(tmp_path):
    from privaudit.report import build_report
    from privaudit.results import RiskResult

    twins = [_result(seed=1), _result(seed=2), _result(attack="gap", seed=3)]
    twins[1].dataset = "other"
    risk = RiskResult(attack="singling-out", target="model", n_attacks=100,
                      n_success=30, n_baseline=10)
    folders = ResultsStore(tmp_path / "store").save_all([*twins, risk])
    names = [f.name for f in folders]
    assert names[1] == names[0] + "__2" and len(set(names)) == 4
    assert [r.scores.tolist() for r in load_results(folders[:3])] == [
        r.scores.tolist() for r in twins]
    build_report([*twins, risk], tmp_path / "report", n_bootstrap=0)
    doc = json.loads((tmp_path / "report" / "results.json").read_text())
    linked = [e["folder"] for e in [*doc["results"], *doc["risks"]]]
    assert linked == [f"results/{n}" for n in names]
    assert all((tmp_path / "report" / link).is_dir() for link in linked)
