"""The privaudit command line: audit model from a YAML file, report rebuild, version."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from privaudit import __version__
from privaudit.cli import app
from privaudit.results import result_folder_name
from privaudit.targets import save_sklearn_model

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

runner = CliRunner()


@pytest.fixture(scope="module")
def audit_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(X))
    members, non_members, population = perm[:150], perm[150:300], perm[300:]
    # A fully grown tree memorises its training set: a clear, fast-to-find leak.
    model = DecisionTreeClassifier(random_state=0).fit(X.iloc[members], y.iloc[members])
    save_sklearn_model(model, root / "model.skops")
    audited = X.iloc[np.r_[members, non_members]].copy()
    audited["diagnosis"] = y.iloc[np.r_[members, non_members]].to_numpy()
    audited["member"] = np.r_[np.ones(150, int), np.zeros(150, int)]
    audited["patient"] = [f"p{i}" for i in np.r_[members, non_members]]
    audited.to_csv(root / "audited.csv", index=False)
    pop = X.iloc[population].copy()
    pop["diagnosis"] = y.iloc[population].to_numpy()
    pop.to_parquet(root / "population.parquet")
    config = {
        "target": {"path": "model.skops", "name": "tree"},
        "data": {"path": "audited.csv", "label_column": "diagnosis",
                 "membership_column": "member", "id_column": "patient"},
        "population": {"path": "population.parquet"},
        "attacks": ["loss", "lira-offline", "rmia"],
        "attack_params": {"lira-offline": {"fix_variance": True}},
        "reference": {"n_models": 4},
        "executor": {"name": "local", "n_jobs": 1},
        "cache_dir": "cache",
        "random_state": 0,
        "report": {"out": "report", "n_bootstrap": 50},
    }
    (root / "audit.yaml").write_text(yaml.safe_dump(config))
    return root


def test_audit_model_from_config_writes_the_report(audit_files):
    result = runner.invoke(app, ["audit", "model", "--config", str(audit_files / "audit.yaml")])
    assert result.exit_code == 0, result.output
    report = audit_files / "report"
    assert (report / "index.html").exists()
    data = json.loads((report / "results.json").read_text())
    attacks = [entry["attack"] for entry in data["results"]]
    assert attacks == ["loss", "lira-offline", "rmia"]
    for entry in data["results"]:
        assert entry["target"] == "tree"
        assert entry["metrics"]["auc"]["value"] > 0.55
    scores = pd.read_csv(report / "results" / result_folder_name("tree", "loss") / "scores.csv")
    assert scores["record_id"].iloc[0].startswith("p")
    # The reference models were cached: a second run trains none and reuses the results.
    assert any((audit_files / "cache").rglob("*.skops"))
    again = runner.invoke(app, ["audit", "model", "--config", str(audit_files / "audit.yaml")])
    assert again.exit_code == 0, again.output
    assert "reusing" in again.output


def test_report_rebuilds_from_saved_results(audit_files, tmp_path):
    source = audit_files / "report" / "results"
    if not source.exists():
        runner.invoke(app, ["audit", "model", "--config", str(audit_files / "audit.yaml")])
    result = runner.invoke(app, ["report", str(source), "--out", str(tmp_path / "rebuilt"),
                                 "--n-bootstrap", "0"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "rebuilt" / "results.json").read_text())
    assert len(data["results"]) == 3
    assert (tmp_path / "rebuilt" / "index.html").exists()


def test_bad_config_names_the_key(tmp_path):
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(
        {"target": {"path": "missing.skops"}, "data": {"path": "x.csv"}}))
    result = runner.invoke(app, ["audit", "model", "--config", str(tmp_path / "bad.yaml")])
    assert result.exit_code != 0
    assert "target.path" in result.output


def test_report_without_results_fails_clearly(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code != 0
    assert "no saved results" in result.output


def test_version():
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.output.strip() == __version__


def test_population_columns_are_matched_by_name(tmp_path):
    from privaudit.cli._config import AuditConfig, _split_columns

    cfg = AuditConfig(target_path=tmp_path, data_path=tmp_path, label_column="y",
                      membership_column="member")
    data = pd.DataFrame({"a": [1, 2], "b": [10, 20], "y": [0, 1], "member": [1, 0]})
    pop = pd.DataFrame({"member": [0, 0], "b": [30, 40], "y": [1, 0], "a": [3, 4]})
    X, _, labels, _ = _split_columns(data, cfg, where="data", membership=True)
    X_pop, _, _, _ = _split_columns(pop, cfg, where="population", membership=False,
                                    features=list(X.columns))
    assert list(X_pop.columns) == ["a", "b"]
    np.testing.assert_array_equal(X_pop.to_numpy(), [[3, 30], [4, 40]])
    np.testing.assert_array_equal(labels, [1, 0])


NET_MODULE = '''
import torch


def build_net():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))
'''


def test_audit_torch_model_from_config(tmp_path):
    import torch  # in the dev extra: a missing torch must fail, not skip
    from sklearn.datasets import load_digits

    from privaudit.targets import save_torch_model

    (tmp_path / "digits_net.py").write_text(NET_MODULE)
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(X))
    members, non_members, population = perm[:200], perm[200:400], perm[400:900]
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    xb, yb = torch.from_numpy(X[members]), torch.from_numpy(y[members])
    for _ in range(300):  # memorise the 200 members
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(xb), yb).backward()
        opt.step()
    net.eval()
    save_torch_model(net, tmp_path / "net.safetensors")
    columns = [f"px{i}" for i in range(64)]
    audited = pd.DataFrame(X[np.r_[members, non_members]], columns=columns)
    audited["digit"] = y[np.r_[members, non_members]]
    audited["member"] = np.r_[np.ones(200, int), np.zeros(200, int)]
    audited.to_csv(tmp_path / "audited.csv", index=False)
    pop = pd.DataFrame(X[population], columns=columns)
    pop["digit"] = y[population]
    pop.to_csv(tmp_path / "population.csv", index=False)
    config = {
        "target": {"type": "torch", "path": "net.safetensors", "factory": "digits_net:build_net",
                   "name": "net"},
        "data": {"path": "audited.csv", "label_column": "digit", "membership_column": "member"},
        "population": {"path": "population.csv"},
        "attacks": ["loss", "gradient-norm", "lira-offline"],
        "reference": {"n_models": 2,
                      "recipe": {"type": "torch-mlp", "hidden": [128], "epochs": 30,
                                 "classes": list(range(10))}},
        "report": {"out": "report", "n_bootstrap": 20},
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(config))
    result = runner.invoke(app, ["audit", "model", "--config", str(tmp_path / "audit.yaml")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "report" / "results.json").read_text())
    aucs = {e["attack"]: e["metrics"]["auc"]["value"] for e in data["results"]}
    assert set(aucs) == {"loss", "gradient-norm", "lira-offline"}
    assert aucs["loss"] > 0.6 and aucs["gradient-norm"] > 0.6


def test_bad_torch_factory_is_named(tmp_path):
    (tmp_path / "w.safetensors").write_bytes(b"")
    (tmp_path / "d.csv").write_text("a,y,m\n1,0,1\n")
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({
        "target": {"type": "torch", "path": "w.safetensors", "factory": "no_such_module:f"},
        "data": {"path": "d.csv", "label_column": "y", "membership_column": "m"},
    }))
    result = runner.invoke(app, ["audit", "model", "--config", str(tmp_path / "bad.yaml")])
    assert result.exit_code != 0
    assert "target.factory" in result.output
