"""``privaudit audit unlearning --config``: a saved torch classifier after unlearning.

Digits, a privaudit MLP saved as safetensors and loaded through a factory (no pickle), 30
of its 300 training records unlearned by gradient ascent, 30 held out, 600 population
records for 4 shadows per pool: the run must produce one result per attack with the
algorithm recorded, the report's unlearning section, and readable one-line errors.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

torch = pytest.importorskip("torch")

from sklearn.datasets import load_digits  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from privaudit.cli import app  # noqa: E402
from privaudit.training import TorchMLPRecipe  # noqa: E402
from privaudit.unlearn import unlearn  # noqa: E402

runner = CliRunner()
NET_MODULE = '''
from privaudit.training._torch_nets import MLPClassifierNet


def build_net():
    return MLPClassifierNet(64, 10, (64,))
'''
GA = {"lr": 0.02, "epochs": 5}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("unlearning")
    (root / "digits_mlp.py").write_text(NET_MODULE)
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    perm = np.random.default_rng(0).permutation(len(X))
    train, held, pop = perm[:300], perm[300:330], perm[330:930]
    forget, retain = train[:30], train[30:]
    recipe = TorchMLPRecipe(hidden=(64,), epochs=20, classes=np.arange(10), stack=4)
    net = unlearn(recipe.train(X[train], y[train], random_state=0), (X[forget], y[forget]),
                  (X[retain], y[retain]), method="GA", random_state=0, **GA)
    recipe.save(net, root / "unlearned.safetensors")
    columns = [f"px{i}" for i in range(64)]
    audited = pd.DataFrame(X[np.r_[forget, held]], columns=columns)
    audited["digit"] = y[np.r_[forget, held]]
    audited["forgotten"] = np.r_[np.ones(30, int), np.zeros(30, int)]
    audited.to_csv(root / "audited.csv", index=False)
    population = pd.DataFrame(X[pop], columns=columns)
    population["digit"] = y[pop]
    population.to_csv(root / "population.csv", index=False)
    return root


def _config(**changes):
    config = {
        "target": {"type": "torch", "path": "unlearned.safetensors",
                   "factory": "digits_mlp:build_net", "name": "GA-model"},
        "data": {"path": "audited.csv", "label_column": "digit",
                 "membership_column": "forgotten"},
        "population": {"path": "population.csv"},
        "reference": {"n_models": 4, "recipe": {"type": "torch-mlp", "hidden": [64],
                                                "epochs": 20, "classes": list(range(10)),
                                                "stack": 4}},
        "unlearning": {"method": "GA", "params": GA, "train_size": 300},
        "attack_params": {"apollo": {"n_rounds": 4}, "apollo-offline": {"n_rounds": 4}},
        "trajectories": True,
        "report": {"out": "report", "n_bootstrap": 20},
    }
    config.update(changes)
    return config


def _invoke(folder, config, name="unlearning.yaml"):
    (folder / name).write_text(yaml.safe_dump(config))
    return runner.invoke(app, ["audit", "unlearning", "--config", str(folder / name)])


def test_audit_unlearning_writes_the_report(folder):
    result = _invoke(folder, _config())
    assert result.exit_code == 0, result.output
    data = json.loads((folder / "report" / "results.json").read_text())
    attacks = [e["attack"] for e in data["results"]]
    assert attacks == ["u-mia", "u-lira", "apollo", "apollo-offline"]
    for entry in data["results"]:
        assert entry["target"] == "GA-model"
        assert 0.0 <= entry["metrics"]["auc"]["value"] <= 1.0
    html = (folder / "report" / "index.html").read_text()
    assert "Machine unlearning" in html and "95.0@2.5%" in html  # beside the paper's table


@pytest.mark.parametrize(("change", "message"), [
    ({"unlearning": {"method": "forget-harder"}}, "unlearning.method"),
    ({"attacks": ["lira"]}, "attacks[0]"),
    ({"population": None}, "population"),
    ({"reference": {"n_models": 4}}, "reference.recipe.type"),
])
def test_bad_configuration_is_one_readable_line(folder, change, message):
    result = _invoke(folder, _config(**change), name="bad.yaml")
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(("change", "key", "words"), [
    ({"reference": {"n_models": 4, "mode": "offline", "recipe": {"type": "torch-mlp"}}},
     "reference.mode", "each attack reads the pool it needs"),
    ({"reference": {"n_models": 4, "train_fraction": 0.5, "recipe": {"type": "torch-mlp"}}},
     "reference.train_fraction", "unlearning.train_size"),
    ({"attacks": ["u-mia"], "attack_params": {"apollo": {"n_rounds": 4}}},
     "attack_params.apollo", "an attack listed in 'attacks'"),
    ({"attack_params": {"apollo": {"n_round": 4}}}, "attack_params.apollo.n_round",
     "n_rounds"),
    ({"attack_params": {"apollo": {"online": False}}}, "attack_params.apollo.online",
     "one of"),
    ({"attack_params": {"apollo": {"n_rounds": 0}}}, "attack_params.apollo",
     "positive integer"),
    ({"attack_params": {"u-mia": {"C": -1}}}, "attack_params.u-mia", "positive"),
    ({"attack_params": {"u-lira": {"fix_variance": "sometimes"}}}, "attack_params.u-lira",
     "'auto'"),
    ({"attacks": ["u-lira", "apollo"], "attack_params": {},
      "unlearning": {"method": "GA", "forget_fraction": 0.1}},
     "unlearning.forget_fraction", "u-mia"),
    ({"attacks": ["apollo-offline"], "unlearning": {"method": "GA", "forget_fraction": 0.1},
      "attack_params": {"apollo-offline": {"kind": "under"}}},
     "unlearning.forget_fraction", "u-mia"),
    ({"attacks": ["u-mia", "u-lira"], "attack_params": {}}, "trajectories", "apollo"),
])
def test_keys_no_attack_reads_are_refused(folder, change, key, words):
    result = _invoke(folder, _config(**change), name="unread.yaml")
    text = " ".join(result.output.split())
    assert result.exit_code != 0
    assert f"'{key}' key of" in text and words in text and "Traceback" not in text


def test_train_size_below_the_forgotten_records_is_refused(folder):
    result = _invoke(folder, _config(unlearning={"method": "GA", "params": GA,
                                                 "train_size": 20}), name="small.yaml")
    text = " ".join(result.output.split())
    assert result.exit_code != 0
    assert "'unlearning.train_size' key of" in text and "(30)" in text and "Got 20" in text


def test_id_column_names_the_records_of_every_result(folder):
    audited = pd.read_csv(folder / "audited.csv")
    audited["sample"] = [f"s{i:02d}" for i in range(len(audited))][::-1]
    audited.to_csv(folder / "audited_ids.csv", index=False)
    config = _config(data={"path": "audited_ids.csv", "label_column": "digit",
                           "membership_column": "forgotten", "id_column": "sample"},
                     attacks=["u-mia"], attack_params={}, trajectories=False,
                     report={"out": "report-ids", "n_bootstrap": 0})
    result = _invoke(folder, config, name="ids.yaml")
    assert result.exit_code == 0, result.output
    (scores,) = list((folder / "report-ids" / "results").rglob("scores.csv"))
    saved = pd.read_csv(scores)
    forgotten = audited["forgotten"] == 1
    expected = [*audited.loc[forgotten, "sample"], *audited.loc[~forgotten, "sample"]]
    assert saved["record_id"].tolist() == expected


@pytest.mark.parametrize(("params", "words"), [
    ({"lr": 0.02, "epoch": 5}, ["among ['batch_size', 'epochs', 'lr', 'momentum', "
                                "'optimizer_name', 'weight_decay']", "<unknown ['epoch']>"]),
    ({"lr": 0.02, "epochs": 0}, ["'unlearning.params.epochs' parameter of",
                                 "params.yaml must be a positive integer", "Got 0"]),
    ({"epochs": 2.5}, ["'unlearning.params.epochs' parameter of", "Got 2.5"]),
])
def test_unlearning_params_are_refused_before_any_shadow_trains(folder, params, words):
    # Checked while the configuration is read (check_method_params, the algorithm's own
    # rule), named by the configuration's key: one line, exit 2, nothing written.
    config = _config(unlearning={"method": "GA", "params": params, "train_size": 300},
                     report={"out": "refused", "n_bootstrap": 0})
    result = _invoke(folder, config, name="params.yaml")
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in text
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert all(w in text for w in words), text
    assert not (folder / "refused").exists()  # nothing ran, nothing was written


@pytest.mark.parametrize(("change", "words"), [
    ({"unlearning": {"method": "GA", "params": GA, "train_size": 100000}},
     ["'unlearning.train_size' key of", "at most 600", "population.path (population.csv) "
      "has 600 rows"]),
    ({"population": {"path": "tiny.csv"}, "unlearning": {"method": "GA", "params": GA}},
     ["population.path (tiny.csv) has 3 rows", "unlearning.train_size"]),
    ({"reference": {"n_models": 4, "recipe": {"type": "torch-mlp", "classes": [0, 1]}}},
     ["'reference.recipe.classes' key of", "[2, 3, 4, 5, 6]"]),
])
def test_sizes_and_classes_are_refused_naming_the_key(folder, change, words):
    pd.read_csv(folder / "population.csv").iloc[:3].to_csv(folder / "tiny.csv", index=False)
    config = _config(**change)
    config["report"] = {"out": "never", "n_bootstrap": 0}
    result = _invoke(folder, config, name="sizes.yaml")
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert all(w in text for w in words), text
    assert "parameter of" not in text and len(result.output.strip().splitlines()) == 1
    assert not (folder / "never").exists()
