"""``privaudit audit llm --config`` with memorisation checks (issue 23).

The configuration's ``checks``, ``extraction`` and ``canaries`` keys become
``audit_llm``'s arguments (the canaries' secret space, the built-in fine-tuning recipe, a
fine-tuning set read from a file); a bad key is one line naming it, before any model
loads; and the run end to end on a saved tiny GPT-2 writes the Memorisation section and
the results' entries.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.cli._errors import ConfigError
from privaudit.cli._llm import llm_run, load_llm_config, memorisation_options

pytest.importorskip("transformers")
runner = CliRunner()

# The pages are read as text, never as images: figures are counted but not drawn
# (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

_WORDS = "the model reads a record and each token of the text is scored by its loss".split()


def _sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_WORDS, size=int(rng.integers(8, 14)))) for _ in range(n)]


def _files(tmp_path, body: str):
    (tmp_path / "model").mkdir(exist_ok=True)
    (tmp_path / "m.txt").write_text("\n".join(_sentences(6, 1)), encoding="utf-8")
    (tmp_path / "n.txt").write_text("\n".join(_sentences(6, 2)), encoding="utf-8")
    (tmp_path / "tune.txt").write_text("\n".join(_sentences(4, 3)), encoding="utf-8")
    path = tmp_path / "audit.yaml"
    path.write_text("target: {path: model, name: tiny}\n"
                    "texts: {members: m.txt, non_members: n.txt}\n" + body, encoding="utf-8")
    return path


class _Target:
    model = object()
    tokenizer = object()


def test_config_keys_become_the_audit_arguments(tmp_path):
    run = load_llm_config(_files(tmp_path, """
checks: [k-extractability, exposure]
extraction: {prefix_length: 4, suffix_length: 8}
canaries:
  secret: {alphabet: [red, green, blue], length: 2, separator: " "}
  repetitions: [2, 8]
  per_repetition: 2
  inclusion: random
  texts: tune.txt
  recipe: {epochs: 2, lr: 0.01}
"""))
    options = memorisation_options(run, _Target())
    assert options["checks"] == ["k-extractability", "exposure"]
    assert (options["prefix_length"], options["suffix_length"]) == (4, 8)
    check = options["canaries"]
    assert check.space.size == 9 and "red blue" in check.space
    assert check.canary_repetitions() == [2, 2, 8, 8] and check.inclusion == "random"
    assert check.texts == _sentences(4, 3)
    assert (check.train.epochs, check.train.lr, check.train.model) == (2, 0.01, _Target.model)
    defaults = memorisation_options(load_llm_config(_files(tmp_path, "checks: [verbmem]\n")),
                                    _Target())
    assert defaults == {"checks": ["verbmem"], "prefix_length": 32, "suffix_length": 50}


@pytest.mark.parametrize(("body", "words"), [
    ("checks: [k-extractibility]\n", ["'k-extractibility'", "not a memorisation check"]),
    ("checks: [exposure]\ncanaries: {formats: [no slot here]}\n",
     ["canaries.formats", "'{secret}' slot"]),
    ("checks: [exposure]\ncanaries: {secret: {digits: 2, length: 3}}\n",
     ["canaries.secret.digits"]),
    ("checks: [exposure]\ncanaries: {repetitions: [0, 4]}\n", ["canaries.repetitions"]),
    ("checks: [verbmem]\ncanaries: {inclusion: random}\n", ["'canaries' key", "'exposure'"]),
    ("checks: [verbmem]\nextraction: {prefix_length: 0}\n", ["extraction.prefix_length"]),
])
def test_bad_keys_are_one_line_naming_the_key(tmp_path, body, words):
    path = _files(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        llm_run(path, model=None, texts={}, text_column="text", reference=None,
                retrained=None, attacks=None)
    message = " ".join(str(info.value).split())
    assert all(w in message for w in words), message


def test_the_run_writes_the_memorisation_section(tmp_path):
    from privaudit.studies._tiny_lm import tiny_gpt2, train_tokenizer

    tokenizer = train_tokenizer(_sentences(60, 0) + [str(d) for d in range(10)] * 2,
                                vocab_size=300)
    tiny_gpt2(tokenizer, n_layer=1, n_embd=16, random_state=0).save_pretrained(
        tmp_path / "model", safe_serialization=True)
    tokenizer.save_pretrained(tmp_path / "model")
    path = _files(tmp_path, """
attacks: [loss]
blind_baseline: false
checks: [k-extractability, verbmem, exposure]
extraction: {prefix_length: 3, suffix_length: 4}
canaries: {secret: {digits: 1}, repetitions: [1, 4, 16], recipe: {epochs: 1}}
report: {out: out, n_bootstrap: 20}
""")
    result = runner.invoke(app, ["audit", "llm", "--config", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    entries = {e["attack"]: e for e in doc["memorisation"]}
    assert set(entries) == {"extraction", "canaries"}
    assert {"exposure_r1", "exposure_r4", "exposure_r16"} <= set(entries["canaries"])
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert '<section id="memorisation">' in page and "verbmem" in page


@pytest.mark.parametrize(("checks", "got"), [
    ("verbmem, exposure", ["verbmem", "exposure"]),
    ("verbmem,bogus", "--checks names 'bogus'"),
    (" , ", "--checks names no memorisation check"),
])
def test_the_checks_option(tmp_path, checks, got):
    _files(tmp_path, "")
    options = {"model": tmp_path / "model", "text_column": "text", "reference": None,
               "retrained": None, "attacks": None, "checks": checks,
               "texts": {"members": tmp_path / "m.txt", "non_members": tmp_path / "n.txt"}}
    if isinstance(got, list):
        assert llm_run(None, **options).checks == got
        return
    with pytest.raises(ConfigError, match=re.escape(got)):
        llm_run(None, **options)
