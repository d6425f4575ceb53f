"""``privaudit audit llm`` end to end: a saved tiny model, texts files, the report."""

import json

import pytest
from typer.testing import CliRunner

from privaudit.cli import app

runner = CliRunner()
# The reports are read as files and text, never as images: figures are counted but not
# drawn (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("figures_not_drawn")]


@pytest.fixture(scope="module")
def files(tweets_lm, tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-llm")
    tweets_lm["model"].save_pretrained(root / "model", safe_serialization=True)
    tweets_lm["tokenizer"].save_pretrained(root / "model")
    (root / "members.txt").write_text("\n".join(t.replace("\n", " ") for t in
                                                tweets_lm["members"][:80]), encoding="utf-8")
    with open(root / "non_members.jsonl", "w", encoding="utf-8") as handle:
        for text in tweets_lm["held_out"][:80]:
            handle.write(json.dumps({"text": text}) + "\n")
    return root


def test_audit_llm_writes_the_report(files):
    out = files / "report"
    result = runner.invoke(app, [
        "audit", "llm", "--model", str(files / "model"), "--members",
        str(files / "members.txt"), "--non-members", str(files / "non_members.jsonl"),
        "--attacks", "loss,min_k", "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "results.json").read_text())
    got = {(e["target"], e["attack"]) for e in doc["results"]}
    assert got == {("model", "loss"), ("model", "min-k"), ("texts-only", "blind-baseline")}
    page = (out / "index.html").read_text(encoding="utf-8")
    # The blind baseline reads as evidence about the split (issue 20), never as leakage.
    assert '<section id="llm">' in page and "distinguishable without the model: AUC" in page
    assert "Report:" in result.output


def test_config_form_and_one_line_errors(files):
    config = files / "audit.yaml"
    config.write_text(
        "target: {path: model, name: tweets-lm}\n"
        "texts: {members: members.txt, non_members: non_members.jsonl}\n"
        "attacks: [loss]\nblind_baseline: false\n"
        "report: {out: from-config, n_bootstrap: 50}\n", encoding="utf-8")
    result = runner.invoke(app, ["audit", "llm", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (files / "from-config" / "index.html").is_file()
    bad = runner.invoke(app, ["audit", "llm", "--model", str(files / "model"),
                              "--members", str(files / "members.txt")])
    assert bad.exit_code == 2 and "--non-members" in bad.output
    assert "Traceback" not in bad.output
    hub = runner.invoke(app, ["audit", "llm", "--model", "gpt2", "--members",
                              str(files / "members.txt"), "--non-members",
                              str(files / "non_members.jsonl")])
    assert hub.exit_code == 2 and "never downloads" in hub.output


@pytest.mark.parametrize(("args", "words"), [
    (["--non-members", "{members}"], ["30 text(s) of --non-members", "also in --members"]),
    (["--non-members", "{nm}", "--attacks", "loss,bogus"],
     ["--attacks names 'bogus'", "min-k-plus-plus"]),
    (["--non-members", "{nm}", "--attacks", "reference"], ["needs --reference DIR"]),
    (["--non-members", "{nm}", "--reference", "{members}", "--attacks", "reference"],
     ["--reference must be a model folder", "got a file"]),
])
def test_settings_are_refused_naming_the_option_before_any_model_loads(files, args, words):
    (files / "thirty.txt").write_text("\n".join(
        (files / "members.txt").read_text(encoding="utf-8").splitlines()[:30]),
        encoding="utf-8")
    paths = {"members": str(files / "thirty.txt"), "nm": str(files / "non_members.jsonl")}
    out = files / "never"
    result = runner.invoke(app, ["audit", "llm", "--model", str(files / "model"),
                                 "--members", paths["members"], "--out", str(out),
                                 *[a.format(**paths) for a in args]])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert all(w in text for w in words), text
    assert "parameter of" not in text and len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_a_model_file_and_a_one_text_side_are_refused_in_the_users_terms(files):
    (files / "one.txt").write_text("just one text\n", encoding="utf-8")
    base = ["audit", "llm", "--non-members", str(files / "non_members.jsonl"), "--out",
            str(files / "never")]
    as_file = runner.invoke(app, [*base, "--model", str(files / "one.txt"), "--members",
                                  str(files / "members.txt")])
    assert as_file.exit_code == 2 and "--model must be a model folder" in as_file.output
    one = runner.invoke(app, [*base, "--model", str(files / "model"), "--members",
                              str(files / "one.txt")])
    text = " ".join(one.output.split())
    assert one.exit_code == 2 and "--members" in text and "holds 1 text" in text
    assert "--no-blind-baseline" in text and "parameter of" not in text
    assert not (files / "never").exists()
    # The flag the message names turns the baseline off: the one-text side is audited.
    off = runner.invoke(app, [*base[:-1], str(files / "off"), "--model", str(files / "model"),
                              "--members", str(files / "one.txt"), "--attacks", "loss",
                              "--no-blind-baseline"])
    assert off.exit_code == 0, off.output
    saved = json.loads((files / "off" / "results.json").read_text(encoding="utf-8"))
    assert {(r["target"], r["attack"]) for r in saved["results"]} == {("model", "loss")}
