"""Saved results edited by hand are refused as modified; unedited ones load unflagged.

Every kind's JSON document carries the SHA-256 of each of its files and of its own content
(issue 19): flipped labels, added rows, a changed ``kind`` or ``audit.role``, a claimed
epsilon of -3 are reported, never audited as genuine; an audit recomputes such a result.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from tampering import edit_csv, edit_json, unseal

from privaudit.audits import AuditRun
from privaudit.results import (
    AttackResult,
    AttributeResult,
    DamagedResultWarning,
    ModifiedResultError,
    ProximityResult,
    ResultFileError,
    ResultsStore,
    RiskResult,
    UnsealedResultWarning,
    load_all_results,
    load_result,
)

LABELS = np.r_[np.ones(6, dtype=int), np.zeros(6, dtype=int)]


def attack_result(**kwargs) -> AttackResult:
    return AttackResult(labels=LABELS, scores=np.linspace(1.0, 0.0, 12), attack="loss",
                        target="m", **kwargs)


KINDS = {
    "membership": (attack_result, "result.json", "scores.csv"),
    "risk": (lambda: RiskResult(n_attacks=20, n_success=9, n_baseline=2, attack="singling",
                                target="t"), "risk.json", None),
    "proximity": (lambda: ProximityResult("dcr", "quantile", synthetic=[0.1, 0.4, 0.2],
                                          baseline=[0.3, 0.5]), "proximity.json",
                  "proximity.npz"),
    "attribute": (lambda: AttributeResult(candidates=[0, 1], guesses=np.array([0, 1, 1, 0]),
                                          truth=np.array([0, 1, 0, 0]),
                                          members=np.array([1, 1, 0, 0])),
                  "attribute.json", "attribute.npz"),
}


def saved(tmp_path: Path, kind: str) -> Path:
    make, _, _ = KINDS[kind]
    folder = tmp_path / kind
    make().save(folder)
    return folder


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_round_trips_sealed_and_unflagged(tmp_path, kind) -> None:
    folder = saved(tmp_path, kind)
    _, json_name, data_name = KINDS[kind]
    doc = json.loads((folder / json_name).read_text())
    integrity = doc["integrity"]
    assert integrity["algorithm"] == "sha256" and len(integrity["document"]) == 64
    assert list(integrity["files"]) == ([] if data_name is None else [data_name])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no note, no warning on an unedited result
        loaded = load_result(folder, require_digest=True)
    assert type(loaded).__name__ == type(KINDS[kind][0]()).__name__


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_edited_document_is_modified(tmp_path, kind) -> None:
    folder = saved(tmp_path, kind)
    json_name = KINDS[kind][1]
    edit_json(folder, lambda doc: doc.update(target="someone else"), json_name,
              unsealed=False)
    with pytest.raises(ModifiedResultError, match=rf"modified after it was written: "
                       rf"{json_name}") as info:
        load_result(folder)
    assert info.value.files == [json_name]


@pytest.mark.parametrize("kind", ["proximity", "attribute"])
def test_an_edited_array_file_is_modified(tmp_path, kind) -> None:
    folder = saved(tmp_path, kind)
    npz = folder / KINDS[kind][2]
    with np.load(npz) as data:
        arrays = {k: data[k] for k in data.files}
    first = next(iter(arrays))
    arrays[first] = 1 - arrays[first]
    with open(npz, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ModifiedResultError, match=KINDS[kind][2]):
        load_result(folder)


def _flip(lines: list[str]) -> list[str]:
    header = lines[0].split(",")
    col = header.index("label")
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        cells[col] = str(1 - int(cells[col]))
        out.append(",".join(cells))
    return out


@pytest.mark.parametrize("change", [
    _flip,  # every label flipped: the attack looks perfect the other way round
    lambda lines: [*lines[:-1], lines[-1].replace(",0.0", ",0.5")],  # one score changed
    lambda lines: [*lines, "99,1,0.99"],  # a row added (n_records edited to match below)
])
def test_edited_scores_are_modified(tmp_path, change) -> None:
    folder = saved(tmp_path, "membership")
    edit_csv(folder, change, unsealed=False)
    if len((folder / "scores.csv").read_text().splitlines()) == 14:
        edit_json(folder, lambda doc: doc.update(n_records=13), unsealed=False)
    with pytest.raises(ModifiedResultError, match=r"scores\.csv"):
        AttackResult.load(folder)


@pytest.mark.parametrize("edit", [
    lambda doc: doc.update(kind="attribute"),
    lambda doc: doc["audit"].update(role="fidelity"),
    lambda doc: doc["parameters"].update(claimed_epsilon=2.0),
])
def test_edited_result_json_is_modified(tmp_path, edit) -> None:
    folder = tmp_path / "r"
    attack_result(parameters={"claimed_epsilon": 1.0}).save(folder)
    edit_json(folder, edit, unsealed=False)
    with pytest.raises(ModifiedResultError, match=r"result\.json"):
        AttackResult.load(folder)


def test_an_impossible_claim_in_a_sealed_result_is_refused_naming_the_key(tmp_path) -> None:
    folder = tmp_path / "r"
    attack_result(parameters={"claimed_epsilon": 1.0}).save(folder)
    edit_json(folder, lambda doc: doc["parameters"].update(claimed_epsilon=-3),
              unsealed=False)
    with pytest.raises(ResultFileError, match=r"'parameters\.claimed_epsilon'.*Got -3"):
        AttackResult.load(folder)


@pytest.mark.parametrize(("edit", "key"), [
    (lambda doc: doc["parameters"].update(claimed_epsilon=-3), "parameters.claimed_epsilon"),
    (lambda doc: doc["parameters"].update(claimed_epsilon=0), "parameters.claimed_epsilon"),
    (lambda doc: doc.update(raw_advantage=7.5), "raw_advantage"),
    (lambda doc: doc["audit"].update(role="not-a-leak"), "audit.role"),
])
def test_impossible_values_are_refused_naming_the_key(tmp_path, edit, key) -> None:
    # Even without digests (as an older privaudit wrote it): the value itself is refused.
    folder = tmp_path / "r"
    attack_result(parameters={"claimed_epsilon": 1.0}).save(folder)
    edit_json(folder, edit)
    with pytest.warns(UnsealedResultWarning), pytest.raises(ResultFileError, match=key):
        AttackResult.load(folder)


def test_nan_counts_of_a_risk_are_refused_naming_the_key(tmp_path) -> None:
    folder = saved(tmp_path, "risk")
    edit_json(folder, lambda doc: doc.update(n_attacks=None, n_attacks_status="undefined"),
              "risk.json")
    with pytest.warns(UnsealedResultWarning), pytest.raises(ResultFileError,
                                                            match="n_attacks"):
        RiskResult.load(folder)


@pytest.mark.parametrize("kind", list(KINDS))
def test_results_without_digests_load_with_a_note(tmp_path, kind) -> None:
    folder = saved(tmp_path, kind)
    unseal(folder, KINDS[kind][1])
    with pytest.warns(UnsealedResultWarning, match=r"no digest \(written before privaudit"):
        load_result(folder)
    with pytest.raises(ResultFileError, match="no digest"):
        load_result(folder, require_digest=True)


def test_report_loading_skips_a_modified_result_and_keeps_the_rest(tmp_path) -> None:
    good = tmp_path / "results" / "good"
    bad = tmp_path / "results" / "bad"
    attack_result().save(good)
    attack_result().save(bad)
    edit_csv(bad, _flip, unsealed=False)
    with pytest.warns(DamagedResultWarning, match="modified after it was written: scores"):
        results = load_all_results(tmp_path / "results")
    assert len(results) == 1


def _run(store: ResultsStore) -> AuditRun:
    return AuditRun(func="test", target_name="m", identity=("m", 1), random_state=0,
                    store=store)


@pytest.mark.parametrize("damage", ["flip", "unseal"])
def test_the_audit_recomputes_a_modified_or_unverified_result(tmp_path, damage) -> None:
    store = ResultsStore(tmp_path)
    run = _run(store)
    run.finish("loss", (), attack_result())
    assert run.reuse("loss", (), LABELS) is not None  # sealed and unedited: reused
    folder = store.path_for("m", "loss")
    if damage == "flip":
        # Labels flipped and the scores negated: the labels still match, the AUC is reversed.
        edit_csv(folder, lambda lines: [lines[0], *(
            line.rsplit(",", 1)[0] + "," + str(-float(line.rsplit(",", 1)[1]))
            for line in lines[1:])], unsealed=False)
        reason = "modified after it was written"
    else:
        unseal(folder)
        reason = "no digest"
    with pytest.warns(DamagedResultWarning, match=reason):
        assert run.reuse("loss", (), LABELS) is None
    run.finish("loss", (), attack_result())  # recomputed and saved again: sealed
    assert run.reuse("loss", (), LABELS) is not None
