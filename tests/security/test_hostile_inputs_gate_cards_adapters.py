"""Crafted files against the entry points of issues 23 and 24 (session 14's review).

The gate's policy and results folders (``privaudit gate``, :func:`privaudit.policy.gate`),
the model card and the trackers' keys (``privaudit card``/``log``), the notebook view, LoRA
adapter configurations, saved memorisation results and canary formats. Every crafted file
is built here, in ``tmp_path``; each attack checks that nothing runs (no marker file),
nothing outside the folder is read or written, and bad input is one clear error naming
the file or key (the CLI: one line, exit code 2).
"""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.exceptions import OutsideFolderError
from privaudit.policy import PolicyError, gate, load_policy
from privaudit.results import (
    AttackResult,
    AuditInfo,
    DamagedResultWarning,
    ResultFileError,
    ResultsStore,
    RiskResult,
    load_all_results,
)

runner = CliRunner()
#: A policy every test result passes, so that an exit code other than 0 is the attack's.
PASSING = "rules: [{auc: {max: 1.0}}]\n"


def _result(target: str = "model", attack: str = "loss", seed: int = 0) -> AttackResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(30), np.zeros(30)]
    return AttackResult(labels=labels, scores=rng.normal(size=60) + labels, attack=attack,
                        target=target, audit=AuditInfo(kind="model"))


def _one_error_line(result) -> str:
    """The CLI's one ``Error:`` line (exit code 2, no traceback)."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("Error:")]
    return line


@pytest.fixture()
def saved(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    ResultsStore(folder).save_all([_result("a"), _result("b", seed=1)])
    return folder


def _gate_cli(results: Path, policy: Path, *options: str):
    return runner.invoke(app, ["gate", str(results), "--policy", str(policy),
                               "--n-bootstrap", "20", *options])


# ------------------------------------------------------------------ the gate's policy

@pytest.mark.parametrize("tag", [
    "!!python/object/apply:os.system ['touch {marker}']",
    "!!python/object/new:subprocess.Popen [['touch', '{marker}']]",
    "!!python/name:os.system",
    "!!python/module:os",
    "!!binary aGVsbG8=",
])
def test_a_policy_tag_that_would_build_an_object_runs_nothing(tmp_path, saved, tag):
    marker = tmp_path / "ran"
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"basis: {tag.format(marker=marker)}\nrules: [{{auc: {{max: 1}}}}]\n")
    with pytest.raises(PolicyError, match=re.escape(str(policy))):
        load_policy(policy)
    assert "policy.yaml" in _one_error_line(_gate_cli(saved, policy))
    assert not marker.exists()


@pytest.mark.parametrize(("budget", "key"), [
    ("auc: {max: 1e999}", "rules[0].auc.max"),            # YAML's overflow: infinity
    ("auc: {max: .nan}", "rules[0].auc.max"),
    ("tpr_at_fpr: {max: 0.1, fpr: .nan}", "rules[0].tpr_at_fpr.fpr"),
    ("auc: {max: " + "9" * 400 + "}", "rules[0].auc.max"),  # an int no float holds
])
def test_numbers_no_budget_can_be_are_one_error_naming_the_key(tmp_path, budget, key):
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"rules: [{{{budget}}}]\n")
    with pytest.raises(PolicyError, match=re.escape(repr(key))):
        load_policy(policy)


def test_a_policy_that_is_not_a_regular_text_file_is_one_error(tmp_path, saved):
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("rules: [{name: caf\xe9, auc: {max: 1}}]\n".encode("latin-1"))
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # a read would block forever
    device = tmp_path / "device.yaml"
    device.symlink_to("/dev/zero")  # a read would never end
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "nothing")
    for policy in (latin1, fifo, device, dangling, tmp_path):
        with pytest.raises(PolicyError, match=re.escape(str(policy))):
            load_policy(policy)
        assert str(policy) in _one_error_line(_gate_cli(saved, policy))


# ---------------------------------------------------------- the gate's results and JUnit

def test_the_junit_file_replaces_a_planted_link_never_writing_through_it(tmp_path, saved,
                                                                          outside):
    policy = tmp_path / "policy.yaml"
    policy.write_text(PASSING)
    junit = tmp_path / "gate.xml"
    junit.symlink_to(outside / "secret.txt")
    assert _gate_cli(saved, policy, "--junit", str(junit)).exit_code == 0
    assert (outside / "secret.txt").read_text() == "secret"
    assert not junit.is_symlink() and junit.read_text().startswith("<?xml")
    folder = tmp_path / "a-folder.xml"
    folder.mkdir()
    assert "a-folder.xml" in _one_error_line(_gate_cli(saved, policy, "--junit", str(folder)))


def test_the_gate_reads_no_result_out_of_its_folder_nor_an_edited_one(tmp_path, saved,
                                                                      outside):
    """A result it cannot read stops the gate (exit 2 naming it): never a pass on the rest."""
    ResultsStore(outside).save(_result("planted", seed=3))
    (planted,) = [p for p in outside.iterdir() if p.is_dir()]
    policy = tmp_path / "policy.yaml"
    policy.write_text(PASSING)
    (saved / "linked").symlink_to(planted)
    with pytest.raises(ResultFileError, match="linked"):
        gate(saved, {"rules": [{"auc": {"max": 1.0}}]}, n_bootstrap=20)
    assert "linked" in _one_error_line(_gate_cli(saved, policy))
    (saved / "linked").unlink()
    # a link to a folder whose results lie deeper down is refused too, not skipped
    (saved / "shared").symlink_to(outside)
    assert "shared" in _one_error_line(_gate_cli(saved, policy))
    (saved / "shared").unlink()
    (edited,) = [p for p in saved.iterdir() if p.name.startswith("b-")]
    scores = edited / "scores.csv"
    scores.write_text(scores.read_text().replace("1,", "0,", 3))  # members relabelled
    with pytest.raises(ResultFileError, match=r"scores\.csv"):
        gate(saved, {"rules": [{"auc": {"max": 1.0}}]}, n_bootstrap=20)
    line = _one_error_line(_gate_cli(saved, policy))
    assert "every result or none" in line and "scores.csv" in line


def test_a_truncated_result_fails_the_gate_even_beside_passing_ones(tmp_path, saved):
    (folder,) = [p for p in saved.iterdir() if p.name.startswith("b-")]
    (folder / "result.json").write_text((folder / "result.json").read_text()[:100])
    policy = tmp_path / "policy.yaml"
    policy.write_text(PASSING)
    line = _one_error_line(_gate_cli(saved, policy, "--strict"))
    assert folder.name in line and "result.json" in line


@pytest.mark.parametrize("name", ["../outside/secret.txt", "/etc/passwd", "sub/../../x"])
def test_a_result_naming_a_file_out_of_its_folder_is_not_gated(tmp_path, saved, name):
    (folder,) = [p for p in saved.iterdir() if p.name.startswith("a-")]
    doc = json.loads((folder / "result.json").read_text())
    doc["files"]["scores"] = name
    (folder / "result.json").write_text(json.dumps(doc))
    with pytest.raises(ResultFileError, match="result"):
        gate(saved, {"rules": [{"auc": {"max": 1.0}}]}, n_bootstrap=20)


# ------------------------------------------------------------------- the notebook view

#: Names a results folder may carry: markup, entities, quotes of both kinds.
HOSTILE = ['<script>alert("x")</script>', "a & b &amp;", "q'uo\"te",
           "<img src=x onerror=alert(1)>", "</td></tr></table><b>"]
#: Every tag and attribute the notebook view writes itself.
VIEW_TAGS = {"div", "p", "strong", "span", "table", "thead", "tbody", "tr", "th", "td",
             "details", "summary", "img", "code"}
VIEW_ATTRIBUTES = {"style", "alt", "width", "src"}


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)

    def handle_data(self, data):
        self.text.append(data)


def test_the_notebook_view_escapes_every_name(figures_not_drawn):
    a, b, c, d, e = HOSTILE
    results = [
        AttackResult(labels=[1, 0] * 15, scores=np.linspace(0, 1, 30), attack=b, target=a,
                     dataset=c, audit=AuditInfo(kind="model")),
        RiskResult(n_attacks=200, n_success=40, n_baseline=10, n_control=20,
                   n_baseline_attacks=200, n_control_attacks=200, attack=d, target=e,
                   audit=AuditInfo(kind="synthetic"))]
    memorised = _memorisation_results()["extraction"]
    memorised.target, memorised.prefixes = a, [b, c, d, e]  # texts the model gave back
    memorised.continuations = memorised.suffixes = [e, d, c, b]
    from privaudit.report import AuditReport

    for shown in (*results, memorised, AuditReport([*results, memorised], func=d)):
        markup = _Markup()
        markup.feed(shown._repr_html_())
        assert markup.tags <= VIEW_TAGS and markup.attributes <= VIEW_ATTRIBUTES
        text = "".join(markup.text)
        assert any(name in text for name in HOSTILE)  # shown as text, literally


# ------------------------------------------------------- canary formats and their results

@pytest.mark.parametrize("fmt", ["{0.__class__} {secret}", "{secret.__class__.__mro__} {secret}",
                                 "%(secret)s {} {secret} {!r:>{width}}"])
def test_a_canary_format_is_text_never_a_format_string(fmt):
    """Only the one ``{secret}`` slot is filled; every other brace stays as written."""
    from privaudit.llm import SecretSpace, secret_sharer_canaries

    before, after = fmt.split("{secret}")
    for canary in secret_sharer_canaries([fmt] * 3, SecretSpace(tuple("01"), 3),
                                         random_state=0):
        assert canary.text == before + canary.secret + after


def test_a_format_with_a_second_slot_is_refused_naming_format():
    from privaudit.llm import SecretSpace, secret_sharer_canaries

    with pytest.raises(ValueError, match="'format'"):
        secret_sharer_canaries("{{secret}} {secret}", SecretSpace(tuple("01"), 3))


# --------------------------------------------------------------------- LoRA adapters

#: A LoRA configuration as peft saves it (the keys every test below keeps).
LORA = {"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["c_attn"],
        "base_model_name_or_path": "../base", "fan_in_fan_out": True}
#: Patterns on which Python's backtracking matcher takes exponential (or high-degree
#: polynomial) time: each would hang peft on the first module name it fails on.
SLOW_PATTERNS = {"(a+)+$": "a repeat inside a repeat", "(?:.*\\.)*x": "a repeat inside a repeat",
                 "(a|ab)*c": "an alternation inside a repeat", "(.*)\\1x": "a back-reference",
                 ".*.*.*.*.*x": "5 unbounded repeats", "x" * 1001: "more than 1000",
                 "(unclosed": "not a regular expression"}


@pytest.mark.parametrize(("key", "value", "problem"), [
    *(("target_modules", p, why) for p, why in SLOW_PATTERNS.items()),
    ("exclude_modules", "(h+)+\\.0", "a repeat inside a repeat"),
    ("rank_pattern", {"(a|aa)+": 8}, "an alternation inside a repeat"),
    ("alpha_pattern", {"(c_attn+)+": 8}, "a repeat inside a repeat"),
    ("modules_to_save", ["lm_head", "(.*)+"], "module names"),
    ("layers_pattern", "h|.*", "module names"),
])
def test_an_adapter_pattern_that_could_hang_peft_is_refused_first(tmp_path, key, value,
                                                                   problem):
    pytest.importorskip("peft")
    from privaudit.targets import load_causal_lm
    from privaudit.targets._hf_folder import FolderError

    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({**LORA, key: value}))
    start = time.process_time()
    with pytest.raises(FolderError, match=re.escape(key) + ".*" + re.escape(problem)):
        load_causal_lm(folder)
    assert time.process_time() - start < 1.0


@pytest.mark.parametrize("pattern", [
    r".*\.(q_proj|v_proj)", r"^(?!.*vision).*(q_proj|k_proj|v_proj)$", r"h\.[0-9]+\.attn\.c_attn",
    r"(?:.*?(?:language|text).*?(?:self_attn|mlp).*?(?:q_proj|up_proj).*?)",
    "all-linear", r"model\.layers\.[\d]{1,}\.self_attn\.(?:q|k|v|o)_proj",
])
def test_patterns_real_adapters_use_are_accepted(pattern):
    from privaudit.targets._adapters import pattern_problem

    assert pattern_problem(pattern) is None


def test_the_bounded_patterns_match_in_bounded_time():
    """The slowest pattern accepted (4 unbounded repeats, no match) on long module names.

    About 9 ms of CPU per 64-character name (docs/security.md): a 1,000-module base model
    is gone through in seconds, where one more nesting level would take years.
    """
    from privaudit.targets._adapters import MAX_PATTERN_REPEATS, pattern_problem

    worst = "(.*)" * MAX_PATTERN_REPEATS + "X$"
    assert pattern_problem(worst) is None and pattern_problem("(.*)" + worst) is not None
    start = time.process_time()
    assert not any(re.fullmatch(worst, "a" * 64) for _ in range(20))
    assert time.process_time() - start < 2.0


# ------------------------------------------------------- saved memorisation results

def _memorisation_results():
    from privaudit.results import MemorisationResult
    from privaudit.results._memorisation import COMPARISON_KEYS

    n = 4
    extraction = MemorisationResult(
        check="extraction", labels=np.arange(n) % 2, values={"verbmem": np.linspace(0, 1, n)},
        comparisons={"verbmem": {k: {"value": 0.5, "low": 0.0, "high": 1.0}
                                 for k in COMPARISON_KEYS}},
        prefixes=["p"] * n, continuations=["c"] * n, suffixes=["s"] * n,
        matched_tokens=np.zeros(n, int), suffix_tokens=np.ones(n, int), target="lm")
    row = {"format": "code {secret}", "secret": "01", "repetitions": 4, "exposure": 1.5,
           "rank": 2.0, "log_perplexity": 3.0, "method": "exact", "space_size": 100,
           "included": None, "score": 1.5}
    return {"extraction": extraction,
            "canaries": MemorisationResult(check="canaries", canaries=[row], target="lm")}


#: Values no privaudit run writes, each under a key of a memorisation result. The file is
#: re-sealed after the edit (a forger can recompute the digests): only the values'
#: checks stand between it and every reader (report, gate, card, notebook).
FORGED = [
    ("extraction", "matched_tokens", [1e20] * 4), ("extraction", "matched_tokens", ["a"] * 4),
    ("extraction", "labels", [1e300] * 4), ("extraction", "labels", [257, 0, 1, 0]),
    ("extraction", "labels", "abcd"), ("extraction", "record_ids", [None] * 4),
    ("extraction", "record_ids", [[1]] * 4), ("extraction", "values", {"verbmem": "x"}),
    ("extraction", "prefixes", [1, 2, 3, 4]),
    ("canaries", "canaries", [{"exposure": "big"}]), ("canaries", "canaries", [{"repetitions": 0}]),
    ("canaries", "canaries", [{"repetitions": True}]), ("canaries", "canaries", [{"format": {}}]),
    ("canaries", "canaries", [{"included": "yes"}]), ("canaries", "epsilon", {"epsilon": 1}),
    ("canaries", "epsilon", "BOUND OF TEXT"), ("canaries", "canaries", "x"),
]


@pytest.mark.parametrize(("check", "key", "value"), FORGED)
def test_a_forged_memorisation_result_is_refused_naming_its_file(tmp_path, check, key,
                                                                 value):
    from privaudit.metrics import CanaryBound
    from privaudit.results._io import dump_json

    result = _memorisation_results()[check]
    result.save(tmp_path / "saved")
    doc = json.loads((tmp_path / "saved" / "memorisation.json").read_text())
    doc.pop("integrity")
    if key == "canaries" and isinstance(value, list):
        value = [{**doc["canaries"][0], **value[0]}]
    if value == "BOUND OF TEXT":
        value, doc["delta"] = dict.fromkeys(CanaryBound._fields, "text"), 1e-5
    doc[key] = value
    folder = tmp_path / "results" / "forged"
    folder.mkdir(parents=True)
    dump_json(doc, folder / "memorisation.json", seal=[])  # the forger's seal
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no cast overflows on the way
        with pytest.raises(ResultFileError, match=r"memorisation\.json.*invalid data"):
            type(result).load(folder)
        with pytest.warns(DamagedResultWarning, match="forged"):
            assert not load_all_results(tmp_path / "results")  # skipped, never read


# ---------------------------------------------------------------------- the model card

#: Names that would end a YAML front matter, start a document, inject Markdown or HTML.
CARD_NAMES = ["a\n---\nmodel-index: []\n---\n<script>alert(1)</script>",
              "x\u2028---\u2028y\x85---\x85z", "!!python/object/apply:os.system ['id']",
              "- [x](javascript:alert(1))", "{{ config }} | col", "x" * 300 + "\n---"]


def test_names_neither_end_the_front_matter_nor_inject_markup(tmp_path, saved, outside):
    import yaml

    from privaudit.integrations import model_card

    results = [RiskResult(n_attacks=200, n_success=40, n_baseline=10, n_control=20,
                          n_baseline_attacks=200, n_control_attacks=200, attack=attack,
                          target=target, dataset=target, audit=AuditInfo(kind="synthetic"))
               for target, attack in zip(CARD_NAMES, reversed(CARD_NAMES), strict=True)]
    card = model_card(results, model_name=CARD_NAMES[0])
    lines = card.split("\n")
    assert [i for i, line in enumerate(lines) if line == "---"] == [0, lines.index("---", 1)]
    assert [line for line in card.splitlines() if line == "---"] == ["---", "---"]
    front, body = card.split("\n---\n", 1)
    metadata = yaml.safe_load(front.removeprefix("---\n"))  # plain data, names intact
    assert metadata["model-index"][0]["name"] == CARD_NAMES[0]
    names = " | ".join(" ".join(m["name"].split()) for r in metadata["model-index"][0]["results"]
                       for m in r["metrics"])  # YAML reads a NEL (U+0085) as a line break
    assert all(f"on {' '.join(target.split())}" in names for target in CARD_NAMES)
    assert "<script>" not in body and "[x](" not in body  # the link's brackets escaped
    for table in re.findall(r"(?:^\|.*\|\n)+", body, flags=re.M):
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in table.splitlines()}
        assert len(widths) == 1, table  # a | in a name adds no column
    written = tmp_path / "card.md"
    written.symlink_to(outside / "secret.txt")  # replaced, never written through
    result = runner.invoke(app, ["card", str(saved), "--out", str(written),
                                 "--n-bootstrap", "20"])
    assert result.exit_code == 0, result.output
    assert (outside / "secret.txt").read_text() == "secret" and not written.is_symlink()


@pytest.fixture(scope="module")
def adapter_pair(tmp_path_factory):
    """A tiny GPT-2 base and a LoRA adapter beside it (its base named ``../base``)."""
    pytest.importorskip("peft")
    import peft
    import tokenizers
    import torch
    import transformers

    root = tmp_path_factory.mktemp("lora")
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(["the code of canary one is 42"] * 4, vocab_size=80,
                            min_frequency=1, special_tokens=["<|endoftext|>"],
                            show_progress=False)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    torch.manual_seed(0)
    base = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=64, n_embd=8, n_layer=1, n_head=2))
    base.save_pretrained(root / "base", safe_serialization=True)
    tokenizer.save_pretrained(root / "base")
    with warnings.catch_warnings():  # transformers' deprecation, peft's call
        warnings.simplefilter("ignore", FutureWarning)
        tuned = peft.get_peft_model(base, peft.LoraConfig(
            r=2, lora_alpha=4, target_modules=["c_attn"], fan_in_fan_out=True,
            init_lora_weights="gaussian"))
    tuned.save_pretrained(root / "adapter", safe_serialization=True)
    config = root / "adapter" / "adapter_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()),
                                  "base_model_name_or_path": "../base"}))
    return root


@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
@pytest.mark.filterwarnings("ignore:Model has `tie_word_embeddings=True`:UserWarning")
def test_a_pickle_planted_beside_the_adapter_weights_is_never_read(adapter_pair, tmp_path):
    import pickle
    import shutil

    from privaudit.targets import load_causal_lm
    from privaudit.targets._hf_folder import FolderError

    folder = adapter_pair / "planted"
    shutil.copytree(adapter_pair / "adapter", folder, dirs_exist_ok=True)
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    for name in ("adapter_model.bin", "pytorch_model.bin", "adapter_model.pt"):
        (folder / name).write_bytes(pickle.dumps(Payload()))
    assert load_causal_lm(folder).model is not None and not marker.exists()
    # modules_to_save names a real module, but the file lacks its trained copy: refused
    config = folder / "adapter_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()),
                                  "modules_to_save": ["lm_head"]}))
    with pytest.raises(FolderError, match=r"adapter_model\.safetensors do not fit"):
        load_causal_lm(folder)
    assert not marker.exists()


def test_an_adapter_config_linked_out_of_its_folder_is_refused(adapter_pair, tmp_path):
    import shutil

    from privaudit.targets import load_causal_lm

    folder = adapter_pair / "linked-config"
    shutil.copytree(adapter_pair / "adapter", folder, dirs_exist_ok=True)
    (tmp_path / "elsewhere.json").write_bytes((folder / "adapter_config.json").read_bytes())
    (folder / "adapter_config.json").unlink()
    (folder / "adapter_config.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(OutsideFolderError, match=r"adapter_config\.json"):
        load_causal_lm(folder)


# ------------------------------------------------------------------------ the terminal

#: A target name that would clear the screen, print a forged verdict in green, retitle the
#: window and reorder the line, were its characters passed to the terminal.
TERMINAL_TRICK = "m\x1b[2J\x1b[1;32mGate passed\x1b[0m\r\x1b]0;owned\x07\u202e"


def test_names_cannot_drive_the_terminal(tmp_path):
    folder = tmp_path / "results"
    ResultsStore(folder).save(_result(TERMINAL_TRICK, attack=TERMINAL_TRICK[::-1]))
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules: [{auc: {max: 0.01}}]\n")
    outputs = {"gate": _gate_cli(folder, policy),
               "report": runner.invoke(app, ["report", str(folder), "--out",
                                             str(tmp_path / "report"), "--n-bootstrap",
                                             "20", "--verbose"])}
    ResultsStore(tmp_path / "elsewhere").save(_result("planted"))
    (planted,) = (tmp_path / "elsewhere").iterdir()
    (folder / "linked\x1b[31m").symlink_to(planted)  # refused: the error names it
    outputs["warning"] = _gate_cli(folder, policy)
    for command, result in outputs.items():
        assert result.exit_code in ((2,) if command == "warning" else (0, 1)), result.output
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", result.output), \
            command
        shown = "\\x1b[31m" if command == "warning" else "\\x1b[2J"
        assert shown in result.output, command  # the name is still shown, escaped


def test_the_card_shows_control_characters_as_escapes_and_keeps_them_as_data():
    """ESC, a C0 control or a bidi override in a name is written as an escape in the
    Markdown (shown, never obeyed by a terminal or a viewer); the YAML metadata keeps the
    name as data (YAML escapes it in a double-quoted string)."""
    import yaml

    from privaudit.integrations import model_card

    name = "model\x1b[2J\x07PASS\u202egnp.exe"
    card = model_card([_result(target=name)], model_name=name)
    front, body = card.split("\n---\n", 1)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", card)
    assert "model\\\\x1b\\[2J\\\\x07PASS\\\\u202egnp.exe" in body  # escapes, Markdown-escaped
    metadata = yaml.safe_load(front.removeprefix("---\n"))
    assert metadata["model-index"][0]["name"] == name
    assert metadata["model-index"][0]["results"][0]["metrics"][0]["name"].endswith(name)
    readable = model_card([_result(target="modèle-ε")], model_name="modèle-ε")
    assert "name: modèle-ε" in readable  # other non-ASCII names stay as written
