"""``privaudit audit generator``: the configuration file, one-line errors, the report."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privaudit.cli import app

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

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
        "    return train.sample(n_rows, random_state=random_state % 2**32, replace=True)\n"
        "\n"
        "def raises(train, n_rows, *, random_state):\n"
        "    raise RuntimeError('my generator broke')\n"
        "\n"
        "def extra(train, n_rows, *, random_state):\n"
        "    return train.iloc[:n_rows].assign(bonus=1)\n"
        "\n"
        "def no_kw(train, n_rows):\n"
        "    return train.iloc[:n_rows]\n"
        "\n"
        "def short(train, n_rows, *, random_state):\n"
        "    return train.iloc[:n_rows - 1]\n"
        "\n"
        "class TapasCopier:  # TAPAS's interface: fit(dataset), generate(n, random_state)\n"
        "    def fit(self, dataset):\n"
        "        self.data = dataset\n"
        "    def generate(self, num_samples, random_state=None):\n"
        "        return self.data.sample(num_samples, replace=True,\n"
        "                                random_state=random_state % 2**32)\n"
        "\n"
        "tapas_copier = TapasCopier()\n")
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
    assert "Bonferroni" in html  # the claim's correction for the largest of 2 bounds
    # Each (generator, target, attack) result is filed once, and a rebuilt report lists
    # each once.
    folders = sorted(p.parent for p in (folder / "rep" / "results").glob("*/result.json"))
    assert len(folders) == len(doc["results"]) == 4
    rebuilt = runner.invoke(app, ["report", str(folder / "rep" / "results"), "--out",
                                  str(folder / "rebuilt"), "--n-bootstrap", "20"])
    assert rebuilt.exit_code == 0, rebuilt.output
    again = json.loads((folder / "rebuilt" / "results.json").read_text())
    listed = [(e["generator"], e["target"], e["attack"]) for e in again["results"]]
    assert sorted(listed) == sorted((g, t, "closest-distance") for g, t in rows)


def test_a_tapas_style_generator_object_is_audited(folder):
    config = write(folder, (
        "targets: {rows: [0]}\n"
        "generators: [{name: tapas, callable: 'my_generators:tapas_copier'}]\n"
        "game: {n_train_rows: 80, n_shadow_runs: 6, n_test_runs: 6}\n"
        "attacks: [closest-distance]\n"
        "cache_dir: cache\n"
        "report: {out: rep-tapas, n_bootstrap: 0}\n"))
    result = runner.invoke(app, ["audit", "generator", "--config", str(config)])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads((folder / "rep-tapas" / "results.json").read_text())["results"]
    assert entry["generator"] == "tapas" and entry["target"] == "record 0"
    assert len(list((folder / "cache").glob("genruns-*/model-*.parquet"))) == 12


@pytest.mark.parametrize("body, message", [
    ("generators: [{name: x, builtin: ctgan}]\n", "builtin"),
    ("generators: [{name: x, builtin: copying, callable: 'a:b'}]\n", "exactly one"),
    ("generators: [{name: x, callable: 'nowhere:f'}]\n", "nowhere"),
    ("generators: [{name: x, builtin: copying}]\ngame: {n_test_runs: 3}\n", "n_test_runs"),
    ("generators: [{name: x, builtin: copying}]\ngame: {n_runs: 4}\n", "n_runs"),
    ("generators: []\n", "generators"),
    # Options that would be accepted and ignored, or would change the game unseen.
    ("generators: [{name: x, builtin: copying}]\nattacks: [domias]\n"
     "attack_params: {groundhog: {bins: 3}}\n", "attack_params.groundhog"),
    ("generators: [{name: x, builtin: copying}]\nattacks: [closest-distance]\n"
     "attack_params: {closest-distance: {radius: 0.1}}\n", "closest-distance.radius"),
    ("targets: {rows: [3, 3]}\ngenerators: [{name: x, builtin: copying}]\n",
     "repeated: [3]"),
    ("targets: {rows: [3]}\nn_targets: 2\ngenerators: [{name: x, builtin: copying}]\n",
     "n_targets"),
    ("generators: [{name: x, builtin: copying}, {name: x, callable: 'my_generators:copier'}]"
     "\n", "repeated: ['x']"),
    ("generators: [{name: x, builtin: copying}]\nsecret: city\nsecret_values: [a, nope]\n",
     "absent: ['nope']"),
    ("generators: [{name: x, builtin: copying}]\nsecret_values: [a, b]\n", "secret_values"),
    ("targets: {rows: [0]}\ngenerators: [{name: x, callable: 'my_generators:short'}]\n"
     "game: {n_train_rows: 80, n_shadow_runs: 2, n_test_runs: 2}\n"
     "attacks: [closest-distance]\n", "returned 79 rows; n_synthetic_rows asked for 80"),
])
def test_a_bad_configuration_is_one_readable_line(folder, body, message):
    result = runner.invoke(app, ["audit", "generator", "--config", str(write(folder, body))])
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


_SMALL = "targets: {rows: [0]}\ngame: {n_train_rows: 40, n_shadow_runs: 2, n_test_runs: 2}\n" \
    "attacks: [closest-distance]\nreport: {out: refused, n_bootstrap: 0}\n"


@pytest.mark.parametrize("body, named", [
    # The user's generator raising, also in a worker: the key, the run, its error.
    ("generators: [{name: m, callable: 'my_generators:raises'}]\n",
     "generators[0].callable ('my_generators:raises') failed on run 0 of 2"),
    ("generators: [{name: m, callable: 'my_generators:raises'}]\nexecutor: {n_jobs: 2}\n",
     "RuntimeError: my generator broke"),
    # Its table with other columns than the training data's.
    ("generators: [{name: m, callable: 'my_generators:extra'}]\n", "adds ['bonus']"),
    # A signature the runs cannot call.
    ("generators: [{name: m, callable: 'my_generators:no_kw'}]\n",
     "'my_generators:no_kw', which takes (train, n_rows); expected"),
    # Sizes beyond any sane game, refused before any work.
    ("generators: [{name: m, builtin: copying}]\ngame: {n_shadow_runs: 1000000000}\n",
     "'game.n_shadow_runs'"),
    ("generators: [{name: m, builtin: copying}]\ngame: {n_synthetic_rows: 100000000}\n",
     "'game.n_synthetic_rows'"),
    # A continuous secret without secret_values.
    ("generators: [{name: m, builtin: copying}]\nsecret: income\n", "'secret_values'"),
    # Named by the configuration's keys, not the API's parameters.
    ("generators: [{name: m, builtin: dp-bayes, params: {epsilon: 0}}]\n",
     "'generators[0].params.epsilon' key"),
    ("generators: [{name: m, builtin: copying, params: {copy_fraction: 7}}]\n",
     "'generators[0].params.copy_fraction' key"),
    ("generators: [{name: m, builtin: dp-bayes, params: {epsilonn: 1}}]\n",
     "'generators[0].params' key"),
    ("generators: [{name: m, builtin: copying}]\ngame: {n_train_rows: 500}\n",
     "data.path has 400 rows; the game needs"),
    ("generators: [{name: m, builtin: copying}]\ntargets: {rows: [5000]}\n", "targets.rows"),
])
def test_a_refused_game_is_one_line_naming_the_key(folder, body, named):
    config = folder / "audit.yaml"
    config.write_text("data: {path: population.csv}\n" + _SMALL.replace(
        "targets: {rows: [0]}\n", "" if "targets" in body else "targets: {rows: [0]}\n"
    ).replace("game: {n_train_rows: 40, n_shadow_runs: 2, n_test_runs: 2}\n",
              "" if "game:" in body else "game: {n_train_rows: 40, n_shadow_runs: 2, "
              "n_test_runs: 2}\n") + body)
    result = runner.invoke(app, ["audit", "generator", "--config", str(config)])
    lines = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and named in lines[0], result.output
    assert "Traceback" not in result.output and "parameter of" not in result.output
    assert not (folder / "refused").exists()
