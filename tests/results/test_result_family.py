"""One result family (issue 21): the shared header, one way to tell results apart, and the
numbers the report reads as typed attributes, whether a result was made the old way (loose
``extra`` keys) or the new one, built in memory or loaded from a folder of either layout.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privaudit.report import HtmlReport
from privaudit.results import (
    RESULT_TYPES,
    AttackResult,
    AttributeResult,
    AuditInfo,
    DPAuditResult,
    MemorisationResult,
    ProximityResult,
    Result,
    RiskResult,
    dump_json,
    load_all_results,
    load_result,
    result_type_of,
)

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

DEMO = Path("/tmp/demo1/results")
#: Saved demo results of the previous layout, each with typed details in ``extra``.
DEMO_FOLDERS = {
    "BT-4ea3d68e35__apollo-8d3aa1a6f2": ("heatmap", "kind", "queries_per_record", "study"),
    "regression-overfit-c37c0a1293__gaussian-threshold-dc4f064418": (
        "study", "train_r2", "test_r2", "theoretical_advantage"),
    "digits-colluding-416d9af3f7__colluding-0b8cbaa8b5": ("chance_match_rate",
                                                          "train_accuracy"),
    "copying-generator-17cbf52953__distinguishability-ddc3fe663e": (
        "synthetic_confidence", "original_confidence"),
    "wages-overfit-5b5863ef2b__model-inversion-1ebc9d8182": ("study", "train_r2", "theory"),
    "copying-generator-17cbf52953__dcr-b9824009dd": ("closer_to_train_share",),
    "copying-generator-17cbf52953__exact_matches-f1856f6c3a": ("original_duplication_rate",),
    "copying-generator-17cbf52953__inference_age-f0414c6726": (),
}
needs_demo = pytest.mark.skipif(not DEMO.is_dir(), reason="no demo results in /tmp/demo1")


def _attack(**kwargs: Any) -> AttackResult:
    return AttackResult(labels=[1, 1, 0, 0], scores=[0.9, 0.4, 0.5, 0.1], attack="loss",
                        target="model", **kwargs)


def _attribute(**kwargs: Any) -> AttributeResult:
    return AttributeResult(candidates=["a", "b"], guesses=[0, 1, 1, 0], truth=[0, 1, 0, 0],
                           members=[1, 1, 0, 0], attack="direct", target="model", **kwargs)


def _proximity(**kwargs: Any) -> ProximityResult:
    return ProximityResult(metric="dcr", statistic="quantile", synthetic=[0.1, 0.2, 0.3],
                           baseline=[0.2, 0.3, 0.4], target="synthetic", **kwargs)


def _risk(**kwargs: Any) -> RiskResult:
    return RiskResult(n_attacks=100, n_success=40, n_baseline=10, n_control=20,
                      attack="singling_out", target="synthetic", **kwargs)


def _dp(**kwargs: Any) -> DPAuditResult:
    from privaudit.metrics import canary_epsilon_lower_bound

    scores, included = np.array([[0.9, 0.8, 0.1, 0.2]]), np.array([[1, 1, 0, 0]], bool)
    bound = canary_epsilon_lower_bound(scores[0][included[0]], scores[0][~included[0]],
                                       delta=1e-5)
    return DPAuditResult(canary_ids=["a", "b", "c", "d"], scores=scores, included=included,
                         claimed_epsilon={"rdp": 1.0}, delta=1e-5, bounds=[{"steinke": bound}],
                         attack="canaries", target="model", **kwargs)


def _memorisation(**kwargs: Any) -> MemorisationResult:
    row = {"format": "my code is {secret}", "secret": "0042", "repetitions": 4,
           "exposure": 3.0, "rank": 2.0, "log_perplexity": 7.0, "method": "exact",
           "space_size": 16, "included": None, "score": 3.0}
    return MemorisationResult(check="canaries", canaries=[row], target="lm", **kwargs)


MAKERS = {"attack": _attack, "attribute": _attribute, "proximity": _proximity, "risk": _risk,
          "dp": _dp, "memorisation": _memorisation}


# ---------------------------------------------------------------------------- header
@pytest.mark.parametrize("result_type", sorted(MAKERS))
def test_every_result_class_has_the_shared_header(result_type: str) -> None:
    result = MAKERS[result_type](audit=AuditInfo(kind="synthetic"), parameters={"p": 1})
    assert isinstance(result, Result)
    assert result.RESULT_TYPE == result.result_type == result_type_of(result) == result_type
    assert result.audit_kind == "synthetic" and isinstance(result.audit, AuditInfo)
    assert result.parameters == {"p": 1}
    assert isinstance(result.kind, str) and result.kind
    assert set(result.provenance) == {"target", "attack", "dataset", "generator"}
    assert result.provenance["target"] == result.target != ""


def test_each_class_has_its_own_result_type_and_nothing_else_has_one() -> None:
    types = [maker().RESULT_TYPE for maker in MAKERS.values()]
    assert sorted(types) == sorted(RESULT_TYPES)
    for other in (None, "attack", {"RESULT_TYPE": "attack"}, 3.0, [_attack()]):
        assert result_type_of(other) is None


def test_a_result_built_by_hand_has_no_audit_kind() -> None:
    assert all(maker().audit_kind is None for maker in MAKERS.values())


# ---------------------------------------------------------------------------- details
#: (maker, old extra key, typed attribute, a value) for every typed detail.
DETAIL_CASES = [
    *[(_attack, key, attribute, value) for key, attribute, value in (
        ("study", "study", "overfitting"), ("train_accuracy", "train_accuracy", 0.99),
        ("test_accuracy", "test_accuracy", 0.7), ("train_r2", "train_r2", 0.9),
        ("test_r2", "test_r2", 0.2), ("theoretical_advantage", "theoretical_advantage", 0.3),
        ("chance_match_rate", "chance_match_rate", 0.01),
        ("synthetic_confidence", "synthetic_confidence", 0.6),
        ("original_confidence", "original_confidence", 0.4),
        ("queries_per_record", "queries_per_record", 60.0),
        ("heatmap", "heatmap", {"radii": [1.0, 2.0], "tpr": [[0.1, 0.2], [0.3, 0.4]]}),
        ("kind", "search_kind", "both"), ("sensitive_attribute", "sensitive_attribute", "age"))],
    *[(_attribute, key, key, value) for key, value in (
        ("study", "overfitting"), ("train_r2", 0.8), ("test_r2", 0.1),
        ("train_accuracy", 0.9), ("test_accuracy", 0.5),
        ("theory", {"theorem": "Yeom et al. Theorem 5", "predicted_advantage": 0.2}))],
    (_proximity, "original_duplication_rate", "original_duplication_rate", 0.05),
    (_proximity, "closer_to_train_share", "closer_to_train_share",
     {"value": 0.6, "low": 0.5, "high": 0.7, "n_per_set": 100}),
]


@pytest.mark.parametrize(("maker", "key", "attribute", "value"), DETAIL_CASES)
def test_an_old_extra_key_becomes_its_typed_attribute(maker, key, attribute, value) -> None:
    old = maker(extra={key: value, "free": 1})
    new = maker(**{attribute: value}, extra={"free": 1})
    for result in (old, new):
        assert getattr(result, attribute) == value
        assert result.free_extra() == {"free": 1}   # saved under "extra"
        assert result.details() == {key: value}     # saved under "details"
        assert result.extra[key] == value and dict(result.extra) == {"free": 1, key: value}


@pytest.mark.parametrize(("maker", "key", "attribute", "value"), DETAIL_CASES[::3])
def test_extra_stays_a_live_view_for_old_code(maker, key, attribute, value) -> None:
    result = maker()
    assert key not in result.extra and getattr(result, attribute) is None
    result.extra.update({key: value, "note": "x"})      # as studies/_reference.py does
    assert getattr(result, attribute) == value and result.free_extra() == {"note": "x"}
    result.extra = {**result.extra, key: value}          # as the studies reassign it
    assert getattr(result, attribute) == value and key not in result.free_extra()
    del result.extra[key]
    assert getattr(result, attribute) is None and key not in result.extra
    with pytest.raises(KeyError):
        del result.extra[key]


def test_a_typed_value_given_explicitly_wins_over_the_same_extra_key() -> None:
    result = _attack(study="unlearning", extra={"study": "overfitting"})
    assert result.study == "unlearning" and "study" not in result.free_extra()


@pytest.mark.parametrize("extra", [["study"], "study", 3])
def test_extra_must_be_a_dict(extra: Any) -> None:
    for maker in (_attack, _attribute, _proximity):
        with pytest.raises(TypeError, match="'extra'"):
            maker(extra=extra)


@pytest.mark.parametrize(("maker", "key", "attribute", "value"), DETAIL_CASES[::2])
def test_details_save_under_their_own_key_and_load_back(tmp_path, maker, key, attribute,
                                                        value) -> None:
    result = maker(extra={key: value, "free": 1})
    path = result.save(tmp_path / "r")
    doc = json.loads(Path(path).read_text())
    assert doc["details"] == {key: value} and doc["extra"] == {"free": 1}
    back = type(result).load(tmp_path / "r")
    assert getattr(back, attribute) == value and back.free_extra() == {"free": 1}


# ---------------------------------------------------------------------------- saved layouts
def _copy_demo(tmp_path: Path, names: Any) -> Path:
    root = tmp_path / "old"
    for name in names:
        shutil.copytree(DEMO / name, root / name)
    return root


def _result_json(folder: Path) -> Path:
    return next(p for p in sorted(folder.glob("*.json")))


@needs_demo
@pytest.mark.parametrize("name", sorted(DEMO_FOLDERS))
def test_results_of_the_previous_layout_load_into_typed_attributes(tmp_path, name) -> None:
    root = _copy_demo(tmp_path, [name])
    saved = json.loads(_result_json(root / name).read_text())
    assert "details" not in saved  # the previous layout
    result = load_result(root / name)
    assert result.target == saved["target"]
    for key in DEMO_FOLDERS[name]:
        attribute = result.DETAIL_FIELDS[key]
        assert getattr(result, attribute) == saved["extra"][key], key
        assert key not in result.free_extra()
    assert result.details() == {k: v for k, v in saved["extra"].items()
                                if k in result.DETAIL_FIELDS}


@needs_demo
def test_a_result_json_rewritten_the_old_way_loads_the_same(tmp_path) -> None:
    """A folder saved now, then rewritten with its details back in ``extra`` (sealed)."""
    root = _copy_demo(tmp_path, DEMO_FOLDERS)
    results = load_all_results(root)
    new_root = tmp_path / "new"
    for i, result in enumerate(results):
        result.save(new_root / f"{i:02d}")
        path = _result_json(new_root / f"{i:02d}")
        doc = json.loads(path.read_text())
        doc.pop("integrity", None)
        doc["extra"] = {**doc["extra"], **doc.pop("details", {})}
        seal = [name for name in ("scores.csv", "attribute.npz", "proximity.npz")
                if (path.parent / name).exists()]
        dump_json(doc, path, where="test", keep_non_finite=path.name != "result.json",
                  seal=seal)
    again = load_all_results(new_root)
    assert [r.details() for r in again] == [r.details() for r in results]
    assert [r.free_extra() for r in again] == [r.free_extra() for r in results]


def _page(results: list[Any]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        html = HtmlReport(results, n_bootstrap=0, random_state=0).render()
    return re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "<time>", html)


@needs_demo
def test_the_report_is_the_same_from_old_and_new_saved_results(tmp_path) -> None:
    # The study section reads each target's loss attack beside the colluding one.
    names = [n for n in DEMO_FOLDERS if "apollo" not in n] + [
        "digits-colluding-416d9af3f7__loss-2ea71c1813",
        "regression-overfit-c37c0a1293__loss-2ea71c1813"]
    root = _copy_demo(tmp_path, names)
    old = load_all_results(root)
    for i, result in enumerate(old):
        result.save(tmp_path / "new" / f"{i:02d}")
    new = load_all_results(tmp_path / "new")
    assert _page(old) == _page(new)


def test_the_report_is_the_same_from_results_made_the_old_and_new_way() -> None:
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(40, int), np.zeros(40, int)]
    scores = rng.normal(size=80) + labels
    details = {"study": "overfitting", "train_accuracy": 1.0, "test_accuracy": 0.6,
               "chance_match_rate": 0.02}

    def attack(name: str, old: bool) -> AttackResult:
        typed = {} if old else details
        return AttackResult(labels=labels, scores=scores, attack=name, target="t-overfit",
                            extra=dict(details) if old else {}, **typed)

    theory = {"theorem": "Yeom et al. Theorem 5", "predicted_advantage": 0.1}
    attribute_old = _attribute(extra={"study": "overfitting", "train_accuracy": 1.0,
                                      "test_accuracy": 0.6, "theory": theory})
    attribute_new = _attribute(study="overfitting", train_accuracy=1.0, test_accuracy=0.6,
                               theory=theory)
    old = [attack("loss", True), attack("colluding", True), attribute_old,
           _proximity(extra={"original_duplication_rate": 0.1})]
    new = [attack("loss", False), attack("colluding", False), attribute_new,
           _proximity(original_duplication_rate=0.1)]
    page = _page(new)
    assert 'id="study"' in page and "duplicated within the training data" in page
    assert _page(old) == page


@pytest.mark.parametrize("maker", [_attack, _attribute, _proximity])
def test_the_extra_view_is_a_plain_dict_to_json_copy_and_pickle(maker) -> None:
    import copy
    import pickle

    key = next(iter(maker().DETAIL_FIELDS))
    result = maker(extra={key: "x", "free": [1, 2]})
    assert json.loads(json.dumps(result.extra)) == {key: "x", "free": [1, 2]}
    for detached in (copy.deepcopy(result.extra), pickle.loads(pickle.dumps(result.extra)),
                     result.extra.copy(), {**result.extra}):
        assert type(detached) is dict and detached == {key: "x", "free": [1, 2]}
    again = pickle.loads(pickle.dumps(result))
    assert again.details() == {key: "x"} and again.free_extra() == {"free": [1, 2]}


def test_the_extra_view_writes_through_every_mutator() -> None:
    result = _attack(extra={"free": 1})
    assert result.extra.setdefault("queries_per_record", 3.0) == 3.0
    assert result.queries_per_record == 3.0
    assert result.extra.setdefault("queries_per_record", 9.0) == 3.0
    extra = result.extra
    extra |= {"study": "unlearning"}
    assert result.study == "unlearning"
    assert result.extra.pop("study") == "unlearning" and result.study is None
    assert result.extra.pop("study", "gone") == "gone"
    result.extra.clear()
    assert result.free_extra() == {} and result.details() == {}
