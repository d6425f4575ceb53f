"""``privaudit audit attribute``: a saved model, the tables, one-line errors, the report."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.results import AttributeResult, ResultsStore
from privaudit.targets import save_sklearn_model

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

runner = CliRunner()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    rng = np.random.default_rng(0)
    out = tmp_path_factory.mktemp("attribute")
    n = 600
    frame = pd.DataFrame({"age": rng.normal(40, 10, n).round(2),
                          "hours": rng.normal(38, 6, n).round(2),
                          "sex": rng.choice(["f", "m"], n)})
    frame["label"] = ((frame["age"] > 40) ^ (frame["sex"] == "f")).astype(int)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex"]),
                                                 remainder="passthrough"),
                         MLPClassifier((16,), max_iter=300, random_state=0))
    pipe.fit(frame.iloc[:200][["age", "hours", "sex"]], frame["label"][:200])
    save_sklearn_model(pipe, out / "model.skops")
    audited = frame.iloc[:400].assign(member=np.r_[np.ones(200), np.zeros(200)].astype(int))
    audited.to_csv(out / "audited.csv", index=False)
    frame.iloc[400:].to_csv(out / "population.csv", index=False)
    return out


def write(folder, body):
    path = folder / "attribute.yaml"
    path.write_text("target: {path: model.skops}\n"
                    "data: {path: audited.csv, label_column: label, membership_column: member}\n"
                    + body)
    return path


def test_a_configuration_runs_the_attacks_and_writes_the_report(folder):
    config = write(folder, ("population: {path: population.csv}\n"
                            "sensitive: {column: sex, name: sex}\n"
                            "attacks: [model-inversion, direct, shadow-ai]\n"
                            "reference: {n_models: 2}\n"
                            "report: {out: rep, n_bootstrap: 20}\n"))
    result = runner.invoke(app, ["audit", "attribute", "--config", str(config), "--verbose"])
    assert result.exit_code == 0, result.output
    assert "Attribute inference" in result.output
    doc = json.loads((folder / "rep" / "results.json").read_text())
    assert [e["attack"] for e in doc["attributes"]] == ["model-inversion", "direct",
                                                        "shadow-ai"]
    assert doc["attributes"][0]["candidates"] == ["f", "m"]
    assert all(e["folder"].startswith("results/") for e in doc["attributes"])
    html = (folder / "rep" / "index.html").read_text()
    assert 'id="attribute"' in html and "Over the simulator" in html
    # `privaudit report` reads the saved attribute results back.
    again = runner.invoke(app, ["report", str(folder / "rep" / "results"), "--out",
                                str(folder / "again")])
    assert again.exit_code == 0, again.output
    assert 'id="attribute"' in (folder / "again" / "index.html").read_text()


@pytest.mark.parametrize("body, message", [
    ("sensitive: {column: sex}\n", "population"),
    ("population: {path: population.csv}\nsensitive: {column: nope}\n", "sensitive.column"),
    ("population: {path: population.csv}\nsensitive: {column: sex}\nattacks: [prior]\n",
     "attacks[0]"),
    ("population: {path: population.csv}\nsensitive: {column: sex, alpha: -1}\n", "alpha"),
    ("population: {path: population.csv}\nsensitive: {colum: sex}\n", "colum"),
])
def test_bad_configurations_fail_in_one_line(folder, body, message):
    result = runner.invoke(app, ["audit", "attribute", "--config", str(write(folder, body))])
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


POP = "population: {path: population.csv}\nsensitive: {column: sex}\n"


@pytest.mark.parametrize(("body", "key", "words"), [
    ("attacks: [direct]\nattack_params: {model-inversion: {use_prior: false}}\n",
     "attack_params.model-inversion", "an attack listed in 'attacks'"),
    ("attack_params: {model-inversion: {sigm: 1}}\n", "attack_params.model-inversion.sigm",
     "['sigma', 'use_prior']"),
    ("attack_params: {model-inversion: {sigma: big}}\n", "attack_params.model-inversion",
     "positive finite number"),
    ("attack_params: {shadow-ai: {rule: vote}}\nattacks: [shadow-ai]\n",
     "attack_params.shadow-ai", "'rule' parameter"),
    ("attacks: [direct]\nreference: {n_models: 4}\n", "reference.n_models", "shadow-ai"),
    ("attacks: [direct]\nexecutor: {n_jobs: 2}\n", "executor.n_jobs", "shadow-ai"),
    ("attacks: [direct]\ncache_dir: cache\n", "cache_dir", "shadow-ai"),
    ("attacks: [shadow-ai]\nreference: {mode: online}\n", "reference.mode", "offline"),
])
def test_keys_no_attack_reads_are_refused(folder, body, key, words):
    result = runner.invoke(app, ["audit", "attribute", "--config",
                                 str(write(folder, POP + body))])
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert f"'{key}' key of" in text and words in text and "Traceback" not in text


def test_sigma_on_a_classifier_is_refused(folder):
    body = POP + "attacks: [model-inversion]\nattack_params: {model-inversion: {sigma: 2}}\n"
    result = runner.invoke(app, ["audit", "attribute", "--config", str(write(folder, body))])
    assert result.exit_code != 0
    assert "regression" in " ".join(result.output.split())


def test_id_column_names_the_records_of_every_result(folder):
    audited = pd.read_csv(folder / "audited.csv")
    audited.insert(0, "person", [f"p{i:03d}" for i in range(len(audited))][::-1])
    audited.to_csv(folder / "audited_ids.csv", index=False)
    path = folder / "ids.yaml"
    path.write_text("target: {path: model.skops}\n"
                    "data: {path: audited_ids.csv, label_column: label, "
                    "membership_column: member, id_column: person}\n" + POP +
                    "attacks: [direct]\nreport: {out: rep-ids, n_bootstrap: 0}\n")
    result = runner.invoke(app, ["audit", "attribute", "--config", str(path)])
    assert result.exit_code == 0, result.output
    (saved,) = (folder / "rep-ids" / "results").rglob("attribute.json")
    assert "record_ids" not in json.loads(saved.read_text())["extra"]
    result = AttributeResult.load(saved)
    assert result.record_ids.tolist() == audited["person"].tolist()
    # The membership view (Yeom's Adversary 5) saves them in its scores file.
    store = ResultsStore(folder / "rep-ids-membership")
    (scores,) = store.save(result.to_membership_result()).glob("scores.csv")
    ids = pd.read_csv(scores, dtype={"record_id": str})["record_id"]
    assert ids.tolist() == audited["person"].tolist()
    assert not list((folder / "rep-ids").rglob("scores.csv"))  # no other scores file


def test_cache_dir_keeps_the_shadow_models_for_a_rerun(folder):
    def run(out):
        path = folder / "cached.yaml"
        path.write_text("target: {path: model.skops}\n"
                        "data: {path: audited.csv, label_column: label, "
                        "membership_column: member}\n" + POP +
                        f"attacks: [shadow-ai]\nreference: {{n_models: 2}}\n"
                        f"cache_dir: shadow-cache\nreport: {{out: {out}, n_bootstrap: 0}}\n")
        result = runner.invoke(app, ["audit", "attribute", "--config", str(path)])
        assert result.exit_code == 0, result.output
        return {p: p.stat().st_mtime_ns for p in (folder / "shadow-cache").rglob("*")
                if p.is_file()}

    first = run("rep-cache-1")
    assert first  # the shadow models were cached
    assert run("rep-cache-2") == first  # reread, none trained or written again


def _edited(folder, tmp_path, file, edit):
    """A copy of the inputs in tmp_path, ``file`` edited by ``edit(frame)``."""
    import shutil

    for name in ("model.skops", "audited.csv", "population.csv"):
        shutil.copy(folder / name, tmp_path / name)
    if edit is not None:
        edit(pd.read_csv(tmp_path / file)).to_csv(tmp_path / file, index=False)
    return tmp_path


@pytest.mark.parametrize(("file", "edit", "sensitive", "words"), [
    ("audited.csv", lambda f: f.assign(member=0), "{column: sex}",
     "'member' (data.membership_column) of the data file"),
    ("audited.csv", lambda f: f.assign(member=1), "{column: sex}",
     "both members (1) and non-members (0)"),
    ("population.csv", lambda f: f.assign(sex="f"), "{column: sex}",
     "of the population file"),
    ("audited.csv", lambda f: f.assign(sex=f.sex.where(f.index != 2)), "{column: sex}",
     "'sex' (sensitive.column) of the data file"),
    (None, None, "{column: age}", "give sensitive.alpha for a continuous attribute"),
    (None, None, "{column: sex, alpha: 0.5}", "'sensitive.alpha' key of"),
    (None, None, "{column: sex, candidates: [f, q]}", "'sensitive.candidates' key of"),
])
def test_a_sensitive_attribute_the_attacks_cannot_use_is_refused_naming_it(
        folder, tmp_path, file, edit, sensitive, words):
    where = _edited(folder, tmp_path, file, edit)
    body = (f"population: {{path: population.csv}}\nsensitive: {sensitive}\n"
            "attacks: [direct]\nreport: {out: rep, n_bootstrap: 0}\n")
    result = runner.invoke(app, ["audit", "attribute", "--config", str(write(where, body))])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert words in text and "Traceback" not in text and "parameter of" not in text
    assert len(result.output.strip().splitlines()) == 1
    assert not (where / "rep").exists()


def test_membership_ai_is_refused_before_any_work(folder, tmp_path):
    where = _edited(folder, tmp_path, None, None)
    body = POP + "attacks: [membership-ai]\nreport: {out: rep, n_bootstrap: 0}\n"
    result = runner.invoke(app, ["audit", "attribute", "--config", str(write(where, body))])
    text = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "'attacks[0]' key of" in text and "shadow-ai" in text
    assert not (where / "rep").exists()


def test_a_new_sensitive_name_is_not_answered_by_the_saved_result(folder, tmp_path):
    where = _edited(folder, tmp_path, None, None)
    names = []
    for name in ("first", "second"):
        body = ("population: {path: population.csv}\n"
                f"sensitive: {{column: sex, name: {name}}}\n"
                "attacks: [direct]\nreport: {out: rep, n_bootstrap: 0}\n")
        result = runner.invoke(app, ["audit", "attribute", "--config",
                                     str(write(where, body))])
        assert result.exit_code == 0, result.output
        doc = json.loads((where / "rep" / "results.json").read_text())
        names.append(doc["attributes"][0]["sensitive_attribute"])
    assert names == ["first", "second"]
