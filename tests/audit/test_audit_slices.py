"""Slices and most exposed records added by audit_model (and the overfitting study)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_digits
from sklearn.metrics import roc_auc_score
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import privaudit
from privaudit.audits import SLICE_SETTINGS, slice_result
from privaudit.results import AttackResult, result_folder_name, vulnerability_ranking
from privaudit.targets import LabelOnlyTarget, as_target


@pytest.fixture(scope="module")
def digits_tree():
    """All 1,797 digits, half of them (at random) the training set of a depth-8 tree."""
    X, y = load_digits(return_X_y=True)
    labels = (np.random.default_rng(0).random(len(y)) < 0.5).astype(int)
    model = DecisionTreeClassifier(max_depth=8, random_state=0)
    model.fit(X[labels == 1], y[labels == 1])
    return X, y, labels, model


@pytest.fixture(scope="module")
def audited(digits_tree, tmp_path_factory):
    X, y, labels, model = digits_tree
    results_dir = tmp_path_factory.mktemp("audit")
    target = as_target(model)
    results = privaudit.audit_model(target, X, y, labels, random_state=3,
                                    results_dir=results_dir)
    return results, results_dir, target


def _rows(result: AttackResult, slice_type: str) -> list[dict]:
    return [row for row in result.audit.slices.rows if row["slice_type"] == slice_type]


def test_every_result_is_sliced_by_class_correctness_and_loss(audited, digits_tree):
    results, _, _ = audited
    X, y, labels, model = digits_tree
    assert [r.attack for r in results] == list(privaudit.audits.DEFAULT_ATTACKS)
    correct = model.predict(X) == y
    for r in results:
        assert r.audit.slices is not None
        types = [row["slice_type"] for row in r.audit.slices.rows]
        assert types == (["entire"] + ["class"] * 10 + ["correctness"] * 2
                         + ["loss_percentile"] * 10)  # 1,797 records: deciles
        assert [row["slice_value"] for row in _rows(r, "class")] == list(range(10))
        for kind in ("class", "correctness", "loss_percentile"):
            rows = _rows(r, kind)
            # Each kind of slice is a partition of the audited records.
            assert sum(row["n_members"] for row in rows) == r.n_members
            assert sum(row["n_non_members"] for row in rows) == r.n_non_members
        right, wrong = _rows(r, "correctness")
        assert (right["slice_value"], wrong["slice_value"]) == ("correct", "incorrect")
        assert right["n_members"] == int(np.sum(correct & (labels == 1)))
        assert wrong["n_non_members"] == int(np.sum(~correct & (labels == 0)))
        assert r.audit.slices.settings["n_bootstrap"] == SLICE_SETTINGS["n_bootstrap"]
        assert r.audit.slices.settings["loss"] == "cross_entropy"


def test_entire_row_is_the_result_metrics(audited):
    results, _, _ = audited
    for r in results:
        entire = r.audit.slices.rows[0]
        assert entire["slice_type"] == "entire"
        assert (entire["n_members"], entire["n_non_members"]) == (r.n_members, r.n_non_members)
        # Same seed and bootstrap as the audit: the very numbers of AttackResult.metrics.
        m = r.metrics(fprs=SLICE_SETTINGS["fprs"], n_bootstrap=SLICE_SETTINGS["n_bootstrap"],
                      random_state=3)
        assert entire["auc"] == m["auc"]["value"]
        assert (entire["auc_low"], entire["auc_high"]) == (m["auc"]["low"], m["auc"]["high"])
        assert entire["tpr_at_fpr_0.01"] == m["tpr_at_fpr"]["0.01"]["value"]
        assert entire["advantage"] == pytest.approx(m["advantage"]["value"], abs=1e-12)


def test_class_slices_match_scikit_learn(audited, digits_tree):
    results, _, _ = audited
    _, y, labels, _ = digits_tree
    r = results[0]
    for row in _rows(r, "class"):
        mask = y == row["slice_value"]
        assert row["status"] == "ok"
        assert row["auc"] == pytest.approx(roc_auc_score(labels[mask], r.scores[mask]),
                                           abs=1e-12)
        assert row["auc_low"] <= row["auc"] <= row["auc_high"]


def test_the_overfit_tree_has_more_exposed_subgroups(audited):
    # The records the tree gets wrong are mostly non-members (members are learnt): among
    # them the loss separates the two far better than on the whole audit.
    loss = audited[0][0]
    entire = loss.audit.slices.rows[0]
    wrong = _rows(loss, "correctness")[1]
    assert wrong["auc_low"] > entire["auc_high"]
    assert wrong["auc"] > 0.85 > entire["auc"]


def test_most_exposed_are_the_top_of_the_vulnerability_ranking(audited):
    results, _, _ = audited
    for r in results:
        exposed = r.audit.slices.most_exposed
        assert len(exposed) == SLICE_SETTINGS["n_most_exposed"]
        fprs = [row["detection_fpr"] for row in exposed]
        assert fprs == sorted(fprs)
        ranking = vulnerability_ranking(r, top=len(exposed))
        assert [row["record_id"] for row in exposed] == ranking["record_id"].tolist()
        np.testing.assert_array_equal(fprs, ranking["detection_fpr"])
        ids = set(r.record_ids[r.labels == 1].tolist())
        assert {row["record_id"] for row in exposed} <= ids  # members only
        full = vulnerability_ranking(r)
        assert r.audit.slices.most_exposed_tied == int((full["detection_fpr"] <= fprs[-1]).sum())
        assert r.audit.slices.most_exposed_tied >= len(exposed)


def test_save_load_round_trip_keeps_the_slices(audited):
    results, results_dir, _ = audited
    folders = sorted(p for p in results_dir.iterdir() if p.is_dir())
    assert len(folders) == len(results)
    for r in results:
        folder = next(f for f in folders if f.name == result_folder_name(r.target, r.attack))
        doc = json.loads((folder / "result.json").read_text(),
                         parse_constant=lambda token: pytest.fail(f"non-JSON token {token}"))
        assert doc["audit"]["slices"]["rows"] == r.audit.slices.rows
        loaded = AttackResult.load(folder)
        assert loaded.audit == r.audit  # NaN was stored as None: equal after reload
        assert any(row["auc"] is None for row in loaded.audit.slices.rows)


def test_slicing_never_queries_the_target_again(audited, digits_tree):
    _, _, target = audited
    X, y, labels, model = digits_tree
    assert target.n_queries == len(y)  # one query of the audited records, for all attacks
    plain = as_target(model)
    results = privaudit.audit_model(plain, X, y, labels, attacks=["loss"], slices=False)
    assert plain.n_queries == len(y)
    assert results[0].audit.slices is None


def test_rerun_reuses_sliced_results_and_adds_none_without_querying(digits_tree, tmp_path):
    X, y, labels, model = digits_tree
    first = privaudit.audit_model(model, X, y, labels, attacks=["loss"], slices=False,
                                  results_dir=tmp_path)
    assert first[0].audit.slices is None
    # All results reused: the target is not queried, so there is nothing to slice by.
    target = as_target(model)
    again = privaudit.audit_model(target, X, y, labels, attacks=["loss"],
                                  results_dir=tmp_path)
    assert target.n_queries == 0 and again[0].audit.slices is None
    # A new attack queries the target: the reused result is sliced then, and saved.
    messages: list[str] = []
    both = privaudit.audit_model(model, X, y, labels, attacks=["loss", "entropy"],
                                 results_dir=tmp_path, progress=messages.append)
    assert sum("reusing" in m for m in messages) == 1
    assert all(r.audit.slices is not None for r in both)
    saved = tmp_path / result_folder_name("DecisionTreeClassifier", "loss")
    assert AttackResult.load(saved).audit == both[0].audit


def test_label_only_target_is_sliced_without_extra_queries(digits_tree):
    X, y, labels, model = digits_tree
    target = LabelOnlyTarget(model.predict, classes=model.classes_, max_queries=len(y))
    results = privaudit.audit_model(target, X, y, labels, attacks=["loss"])
    assert target.n_queries == len(y)
    types = {row["slice_type"] for row in results[0].audit.slices.rows}
    # The 0-1 loss would only repeat the correctness slices.
    assert types == {"entire", "class", "correctness"}
    assert results[0].audit.slices.settings["loss"] is None


def test_regressor_is_sliced_by_loss_quintiles():
    X, y = load_diabetes(return_X_y=True)
    labels = np.r_[np.ones(200, int), np.zeros(200, int)]
    model = DecisionTreeRegressor(min_samples_leaf=2, random_state=0).fit(X[:200], y[:200])
    results = privaudit.audit_model(model, X[:400], y[:400], labels)
    for r in results:
        rows = r.audit.slices.rows
        # 400 records: quintiles, so each slice keeps ~40 members and ~40 non-members.
        assert [row["slice_type"] for row in rows] == ["entire"] + ["loss_percentile"] * 5
        assert r.audit.slices.settings["loss"] == "squared_error"
        assert sum(row["n_records"] for row in rows[1:]) == 400


def test_self_querying_attack_alone_is_left_unsliced_and_sliced_when_outputs_exist():
    import torch  # in the dev extra: a missing torch must fail, not skip
    X, y = load_digits(return_X_y=True)
    X = (X[:200] / 16.0).astype(np.float32)
    y = y[:200]
    gen = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 10))
    torch.nn.init.normal_(net[0].weight, generator=gen)
    net.eval()
    labels = np.r_[np.ones(100, int), np.zeros(100, int)]
    alone = privaudit.audit_model(net, X, y, labels, attacks=["gradient-norm"])
    assert alone[0].audit.slices is None
    # Listed first, gradient-norm finishes before LOSS queries the outputs: sliced after.
    both = privaudit.audit_model(net, X, y, labels, attacks=["gradient-norm", "loss"])
    assert all(r.audit.slices is not None for r in both)
    assert both[0].audit.slices.rows[0]["auc"] == pytest.approx(
        roc_auc_score(labels, both[0].scores), abs=1e-12)


def test_slice_result_refuses_misaligned_outputs(audited, digits_tree):
    X, y, _, model = digits_tree
    outputs = as_target(model).query(X[:10], y[:10])
    assert slice_result(audited[0][0], outputs) is None
