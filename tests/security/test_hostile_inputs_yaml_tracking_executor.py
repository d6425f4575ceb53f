"""Crafted inputs against the YAML reader, the gate's policy and JUnit, the trackers and the
executor's shared-arguments file: an alias bomb, control characters, a pipe or device as a
policy, names MLflow refuses, a report page linking out, and an edit between the check of
the authentication code and the unpickling. Every crafted file is built in ``tmp_path``.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hostile_inputs_gate_cards_adapters import _one_error_line
from typer.testing import CliRunner

from privaudit._yaml import MAX_EXPANDED_VALUES, load_yaml_text
from privaudit.cli import app
from privaudit.exceptions import OutsideFolderError
from privaudit.integrations import ResultMetrics, read_audit, tracking_items
from privaudit.integrations._audit_rows import AuditSummary
from privaudit.policy import PolicyError, load_policy
from privaudit.results import AttackResult, AuditInfo, ResultsStore
from security.pickle_payloads import Planted

runner = CliRunner()


def _laughs(levels: int = 9) -> str:
    """A billion laughs: each anchor a list of nine aliases of the previous one (9^levels)."""
    names = [chr(ord("a") + i) for i in range(levels)]
    anchors = ["&a [x, x, x, x, x, x, x, x, x]"] + [
        f"&{name} [" + ", ".join([f"*{before}"] * 9) + "]"
        for before, name in itertools.pairwise(names)]
    return f"[{', '.join(anchors)}]", f"*{names[-1]}"


@pytest.fixture()
def saved(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(30), np.zeros(30)]
    ResultsStore(folder).save(AttackResult(labels=labels, scores=rng.normal(size=60) + labels,
                                           attack="loss", target="m",
                                           audit=AuditInfo(kind="model")))
    return folder


# --------------------------------------------------------------------- YAML documents

@pytest.mark.parametrize("where", ["policy", "configuration"])
def test_an_alias_bomb_is_refused_before_anything_walks_it(tmp_path, saved, where):
    """Without the check the error message's repr of 9^9 values ran for minutes."""
    anchors, bomb = _laughs()
    path = tmp_path / "bomb.yaml"
    path.write_text(f"basis: {anchors}\nrules: [{{name: {bomb}, auc: {{max: 0.5}}}}]\n")
    start = time.process_time()
    if where == "policy":
        with pytest.raises(PolicyError, match=f"more than {MAX_EXPANDED_VALUES:,} values"):
            load_policy(path)
        line = _one_error_line(runner.invoke(app, ["gate", str(saved), "--policy", str(path)]))
    else:
        line = _one_error_line(runner.invoke(app, ["audit", "model", "-c", str(path)]))
    assert "billion laughs" in line and "bomb.yaml" in line
    assert time.process_time() - start < 2.0


@pytest.mark.parametrize(("text", "expected"), [
    ("a: &a [1, *a]\n", "holds itself"), ("a: &a {b: *a}\n", "holds itself"),
    ("a: \x07\n", "unacceptable character #x0007"), ("a: b\x00\n", "#x0000"),
    ("a: " + "9" * 5000 + "\n", "4300 digits"),
])
def test_a_document_yaml_cannot_build_is_one_error_naming_the_file(text, expected):
    with pytest.raises(ValueError, match=re.escape(expected)) as info:
        load_yaml_text(text, describe="cfg.yaml", error=ValueError)
    assert "cfg.yaml" in str(info.value)


def test_shared_anchors_and_merge_keys_still_load():
    text = "base: &b {x: 1, y: [1, 2]}\nother: {<<: *b, z: 3}\nboth: [*b, *b]\n"
    doc = load_yaml_text(text, describe="cfg.yaml", error=ValueError)
    assert doc["other"] == {"x": 1, "y": [1, 2], "z": 3} and doc["both"] == [doc["base"]] * 2


@pytest.mark.parametrize("command", ["gate", "audit"])
def test_a_control_character_is_one_line_not_a_traceback(tmp_path, saved, command):
    path = tmp_path / "bell.yaml"
    path.write_text("rules: [{name: a\x07b, auc: {max: 1}}]\n")
    args = (["gate", str(saved), "--policy", str(path)] if command == "gate"
            else ["audit", "model", "-c", str(path)])
    assert "#x0007" in _one_error_line(runner.invoke(app, args))


def test_a_policy_that_is_a_pipe_a_device_or_huge_is_one_error(tmp_path, saved):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    device = tmp_path / "device.yaml"
    device.symlink_to("/dev/zero")
    huge = tmp_path / "huge.yaml"
    huge.write_text("rules: [{auc: {max: 1}}]\n" + "#" * (2 << 20))
    for policy, expected in ((fifo, "not a regular file"), (device, "not a regular file"),
                             (huge, "bytes long")):
        with pytest.raises(PolicyError, match=expected):
            load_policy(policy)
        assert str(policy) in _one_error_line(
            runner.invoke(app, ["gate", str(saved), "--policy", str(policy)]))
    linked = tmp_path / "linked.yaml"  # a link the user made is followed
    (tmp_path / "real.yaml").write_text("rules: [{auc: {max: 1}}]\n")
    linked.symlink_to(tmp_path / "real.yaml")
    assert load_policy(linked).rules[0].auc.max == 1


# ------------------------------------------------------------------- the trackers' keys

@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["..", ".", "...", " .. ", "x" * 179, "x" * 178 + ".",
                                 "a/../b", "m|1", "", "_x"]), min_size=2, max_size=3))
def test_every_key_passes_mlflow_s_own_validation(names):
    validation = pytest.importorskip("mlflow.utils.validation")
    result = ResultMetrics(target=names[0], attack=names[1], dataset="", role="result",
                           kind="", metrics={"auc": 0.5, names[-1] or "x": 1.0},
                           parameters={names[-1] or "p": 1})
    items = tracking_items(AuditSummary(results=(result,), overview=(), verdict=None,
                                        settings={}))
    for key in (*items.metrics, *items.params, *items.tags):
        validation._validate_metric_name(key)  # raises MlflowException if refused


# ------------------------------------------------------------ a report folder's files

@pytest.fixture(scope="module")
def built_report(tmp_path_factory) -> Path:
    from privaudit.report import build_report

    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(30), np.zeros(30)]
    out = tmp_path_factory.mktemp("built") / "report"
    build_report([AttackResult(labels=labels, scores=rng.normal(size=60) + labels,
                               attack="loss", target="m", audit=AuditInfo(kind="model"))],
                 out, n_bootstrap=20)
    return out


@pytest.fixture()
def report(tmp_path, built_report) -> Path:
    """A copy of the report for one test to plant its files in."""
    import shutil

    return Path(shutil.copytree(built_report, tmp_path / "report"))


def test_a_linked_report_page_is_never_uploaded(tmp_path, report, monkeypatch):
    pytest.importorskip("mlflow")
    secret = tmp_path / "credentials"
    secret.write_text("SECRET-TOKEN")
    (report / "index.html").unlink()
    (report / "index.html").symlink_to(secret)
    assert read_audit(report).html is None
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    store = tmp_path / "mlruns"
    result = runner.invoke(app, ["log", str(report), "--mlflow", f"file:{store}",
                                 "--n-bootstrap", "20"])
    assert result.exit_code == 0, result.output
    uploaded = [p.read_text() for p in store.rglob("*") if p.is_file()
                and p.name == "index.html"]
    assert uploaded == [] and not any("SECRET-TOKEN" in p.read_text(errors="ignore")
                                      for p in store.rglob("*") if p.is_file())


def test_a_linked_metrics_table_is_refused_naming_it(tmp_path, report):
    elsewhere = tmp_path / "elsewhere.csv"
    elsewhere.write_bytes((report / "metrics.csv").read_bytes())
    (report / "metrics.csv").unlink()
    (report / "metrics.csv").symlink_to(elsewhere)
    with pytest.raises(OutsideFolderError, match=r"metrics\.csv"):
        read_audit(report)
    assert "metrics.csv" in _one_error_line(
        runner.invoke(app, ["card", str(report), "--out", str(tmp_path / "card.md")]))


@pytest.mark.parametrize("change", [
    [], {"settings": [1]}, {"results": [1]}, {"overview": [1]}, {"extra": [{"folder": 5}]}])
def test_a_malformed_results_json_is_one_error_naming_report(tmp_path, report, change):
    doc = json.loads((report / "results.json").read_text())
    (report / "results.json").write_text(json.dumps({**doc, **change} if change else []))
    with pytest.raises(ValueError, match=r"'report' parameter of read_audit.*results\.json"):
        read_audit(report)
    assert "results.json" in _one_error_line(
        runner.invoke(app, ["card", str(report), "--out", str(tmp_path / "card.md")]))


# ------------------------------------------------- the executor's shared-arguments file

def test_the_bytes_authenticated_are_the_bytes_unpickled(tmp_path, monkeypatch):
    """A file edited in place right after its check (same inode) is not read again."""
    import hmac
    import pickle

    from privaudit.training import LocalExecutor, _executors

    monkeypatch.setattr(_executors, "_shared_dir", lambda: str(tmp_path))
    key, path = LocalExecutor(n_jobs=2)._write_shared({"weights": [1.0, 2.0]})
    marker = tmp_path / "ran"
    payload = pickle.dumps({"weights": Planted(str(marker))})
    real_compare = hmac.compare_digest

    def compare_then_edit(a, b):
        with open(path, "r+b") as fh:  # the race's winner: the same file, edited
            fh.seek(32)
            fh.write(payload)
        return real_compare(a, b)

    monkeypatch.setattr(_executors.hmac, "compare_digest", compare_then_edit)
    assert _executors._read_shared(path, key) == {"weights": [1.0, 2.0]}
    assert not marker.exists()


def test_the_junit_file_stays_xml_whatever_the_names(tmp_path):
    """A control character in a name made the file unparseable: CI lost every check."""
    import xml.etree.ElementTree as ET

    from privaudit.policy import gate

    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(30), np.zeros(30)]
    name = "m\x1b[31m\x00\x08\ufffe]]><x/>&"
    result = AttackResult(labels=labels, scores=rng.normal(size=60) + labels, attack=name,
                          target=name, audit=AuditInfo(kind="model"))
    path = gate([result], {"rules": [{"auc": {"max": 0.01}}]},
                n_bootstrap=20).to_junit(tmp_path / "gate.xml")
    (case,) = ET.parse(path).getroot().iter("testcase")
    assert "m\\x1b[31m\\x00\\x08\\ufffe]]><x/>&" in case.get("name")
    assert case.find("failure") is not None
