"""``privaudit audit generator``: the configuration file, one-line errors, the report."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privaudit.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    rng = np.random.default_rng(0)
    out = tmp_path_factory.mktemp("generator")
    frame = pd.DataFrame({"age": rng.integers(18, 80, 400), "income": rng.lognormal(10, 1, 400),
                          "city": rng.choice(["a", "b", "c", "d"], 400)})
    frame.loc[0] = [99, 1e7, "z"]  # an outlier: the most vulnerable record
    frame.to_csv(out / "population.csv", index=False)
    (out / "my_generators.py").write_text(
        "def copier(train, n_rows, *, random_state):\n"
        "    return train.sample(n_rows, random_state=random_state % 2**32, replace=True)\n")
    return out


def write(folder, body):
    path = folder / "audit.yaml"
    path.write_text("data: {path: population.csv}\n" + body)
    return path


def test_a_configuration_audits_every_generator_and_writes_one_report(folder):
    config = write(folder, (
        "n_targets: 2\n"
        "generators:\n"
        "  - {name: dp, builtin: dp-bayes, params: {epsilon: 1.0}, claimed_epsilon: 1.0}\n"
        "  - {name: mine, callable: 'my_generators:copier'}\n"
        "game: {n_train_rows: 80, n_shadow_runs: 10, n_test_runs: 10}\n"
        "attacks: [closest-distance]\n"
        "report: {out: rep, n_bootstrap: 20}\n"))
    result = runner.invoke(app, ["audit", "generator", "--config", str(config)])
    assert result.exit_code == 0, result.output
    doc = json.loads((folder / "rep" / "results.json").read_text())
    rows = [(e["generator"], e["target"]) for e in doc["results"]]
    assert rows == [("dp", "record 0"), ("dp", rows[1][1]), ("mine", "record 0"),
                    ("mine", rows[1][1])]
    html = (folder / "rep" / "index.html").read_text()
    assert 'id="generator"' in html and "Differential-privacy claims" in html


@pytest.mark.parametrize("body, message", [
    ("generators: [{name: x, builtin: ctgan}]\n", "builtin"),
    ("generators: [{name: x, builtin: copying, callable: 'a:b'}]\n", "exactly one"),
    ("generators: [{name: x, callable: 'nowhere:f'}]\n", "nowhere"),
    ("generators: [{name: x, builtin: copying}]\ngame: {n_test_runs: 3}\n", "n_test_runs"),
    ("generators: [{name: x, builtin: copying}]\ngame: {n_runs: 4}\n", "n_runs"),
    ("generators: []\n", "generators"),
])
def test_a_bad_configuration_is_one_readable_line(folder, body, message):
    result = runner.invoke(app, ["audit", "generator", "--config", str(write(folder, body))])
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
