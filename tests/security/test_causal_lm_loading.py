"""Causal LM folders: safetensors only, no unpickling, no remote code, no network.

``load_causal_lm`` reads a folder someone else may have written (a vendor, a colleague, an
attacker). Every test plants code that would leave a marker file if it ever ran, and checks
both that loading refused (or ignored) it and that the marker is absent.
"""

from __future__ import annotations

import json
import pickle
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from privaudit.targets import load_causal_lm  # noqa: E402

_SENTENCES = ["a privacy audit of a language model", "members and non members",
              "the model was trained on these texts", "tokens leak through the loss"] * 5


class Payload:
    """Unpickling this object writes the marker file (a ``__reduce__`` payload)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.marker, "ran"))


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    """A one-layer GPT-2 and its byte-level BPE tokenizer, saved as safetensors."""
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(_SENTENCES, vocab_size=300, min_frequency=1,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
        unk_token="<|endoftext|>", pad_token="<|endoftext|>")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=len(tok), n_positions=32, n_embd=16, n_layer=1, n_head=2))
    folder = tmp_path_factory.mktemp("lm") / "tiny"
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture()
def folder(tiny_folder, tmp_path) -> Path:
    """A fresh copy of the saved model, free to tamper with."""
    return Path(shutil.copytree(tiny_folder, tmp_path / "model"))


def _plant_pickle(folder: Path, marker: Path, how: str) -> None:
    path = folder / "pytorch_model.bin"
    if how == "torch.save":
        torch.save({"transformer.wte.weight": Payload(marker)}, path)
    else:
        with open(path, "wb") as handle:
            pickle.dump({"transformer.wte.weight": Payload(marker)}, handle)


@pytest.mark.parametrize("how", ["torch.save", "pickle"])
def test_a_folder_with_only_pickled_weights_is_refused(folder, tmp_path, how):
    marker = tmp_path / "PWNED"
    (folder / "model.safetensors").unlink()
    _plant_pickle(folder, marker, how)
    with pytest.raises(ValueError, match=r"convert them to safetensors.*") as info:
        load_causal_lm(folder)
    assert "pytorch_model.bin" in str(info.value) and "path" in str(info.value)
    assert not marker.exists()


def test_a_decoy_safetensors_file_does_not_unlock_the_pickle(folder, tmp_path):
    """Another ``*.safetensors`` beside a pickle: transformers must not fall back to it."""
    marker = tmp_path / "PWNED"
    (folder / "model.safetensors").rename(folder / "adapter_model.safetensors")
    _plant_pickle(folder, marker, "torch.save")
    with pytest.raises(ValueError, match="path"):
        load_causal_lm(folder)
    assert not marker.exists()


def test_safetensors_win_over_a_pickle_beside_them(folder, tmp_path):
    marker = tmp_path / "PWNED"
    _plant_pickle(folder, marker, "torch.save")
    target = load_causal_lm(folder)
    assert target.task == "causal-lm" and not marker.exists()


def _plant_code(folder: Path, marker: Path, module: str) -> None:
    (folder / f"{module}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import GPT2LMHeadModel as EvilModel, GPT2Config as EvilConfig\n"
        "from transformers import PreTrainedTokenizerFast as EvilTokenizer\n")


@pytest.mark.parametrize("where", ["model", "tokenizer"])
def test_remote_code_of_a_known_architecture_is_ignored(folder, tmp_path, where):
    marker = tmp_path / "PWNED"
    _plant_code(folder, marker, "evil")
    name, key, value = (("config.json", "AutoModelForCausalLM", "evil.EvilModel")
                        if where == "model" else
                        ("tokenizer_config.json", "AutoTokenizer", ["evil.EvilTokenizer", None]))
    doc = json.loads((folder / name).read_text())
    doc["auto_map"] = {key: value}
    (folder / name).write_text(json.dumps(doc))
    try:
        load_causal_lm(folder)
    except ValueError as exc:  # refusing is as good as ignoring
        assert "path" in str(exc)
    assert not marker.exists()


def test_an_unknown_architecture_needing_remote_code_is_refused(folder, tmp_path):
    marker = tmp_path / "PWNED"
    _plant_code(folder, marker, "evil")
    doc = json.loads((folder / "config.json").read_text())
    doc.update(model_type="evil-lm", auto_map={"AutoConfig": "evil.EvilConfig",
                                               "AutoModelForCausalLM": "evil.EvilModel"})
    (folder / "config.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="remote code"):
        load_causal_lm(folder)
    assert not marker.exists()


@pytest.fixture()
def no_network(monkeypatch) -> list[Any]:
    """Every socket connection attempt is recorded and refused."""
    attempts: list[Any] = []

    def refuse(self: Any, address: Any) -> None:
        attempts.append(address)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection",
                        lambda address, *a, **k: refuse(None, address))
    return attempts


def test_loading_never_touches_the_network(folder, no_network, monkeypatch):
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    target = load_causal_lm(folder)
    assert target.n_queries == 0 and no_network == []
    assert hub.HF_HUB_OFFLINE is False  # the offline switch is put back


@pytest.mark.parametrize("name", ["gpt2", "openai-community/gpt2"])
def test_a_hub_id_is_named_not_downloaded(name, no_network, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=f"'{name}'.*hub model id"):
        load_causal_lm(name)
    assert no_network == []


# ------------------------------------------------ every file read stays inside the folder
#
# Each crafted folder is a genuine save with one file name or link pointing outside; the
# "outside" copy is a working model or tokenizer, so a loader that followed it would load
# and audit. The loaders are replaced by a spy: refusing before transformers reads
# anything is what shows that the file outside was never read.

from privaudit.exceptions import OutsideFolderError  # noqa: E402
from privaudit.targets import CausalLMTarget  # noqa: E402


@pytest.fixture()
def spy(monkeypatch) -> list[str]:
    """transformers' loaders, recorded and refused: a refusal must come before them."""
    calls: list[str] = []

    def refuse(name: str) -> Any:
        def load(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise AssertionError(f"{name}.from_pretrained ran on a refused folder")
        return load

    for cls in ("AutoModelForCausalLM", "AutoTokenizer"):
        monkeypatch.setattr(getattr(transformers, cls), "from_pretrained", refuse(cls))
    return calls


@pytest.fixture()
def outside(tiny_folder, tmp_path) -> Path:
    """A working copy of the model's files in a folder beside the audited one."""
    return Path(shutil.copytree(tiny_folder, tmp_path / "outside"))


def _edit_json(path: Path, **changes: Any) -> None:
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def _index_to(folder: Path, shard: str, source: str = "model.safetensors") -> None:
    """An index naming ``shard`` for every tensor of ``source`` (moved, unless the shard)."""
    from safetensors import safe_open

    with safe_open(folder / source, framework="pt") as handle:
        names = list(handle.keys())
    if source != shard:
        (folder / source).unlink()
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": dict.fromkeys(names, shard)}))


@pytest.mark.parametrize("how", ["absolute", "dotdot", "dotdot-inside-a-subfolder"])
def test_a_shard_named_outside_the_folder_is_refused(folder, outside, spy, how):
    shard = {"absolute": str(outside / "model.safetensors"),
             "dotdot": "../outside/model.safetensors",
             "dotdot-inside-a-subfolder": "weights/../../outside/model.safetensors"}[how]
    _index_to(folder, shard)
    with pytest.raises(OutsideFolderError, match=r"shard .*model\.safetensors\.index\.json"):
        load_causal_lm(folder)
    assert spy == []


@pytest.mark.parametrize("file,key,value", [
    ("tokenizer_config.json", "fast_tokenizer_files", ["../outside/tokenizer.4.0.json"]),
    ("tokenizer_config.json", "vocab_file", "{outside}/vocab.json"),
    ("tokenizer_config.json", "merges_file", "../outside/merges.txt"),
    ("tokenizer_config.json", "tokenizer_file", "{outside}/tokenizer.json"),
    ("tokenizer_config.json", "added_tokens_file", "../outside/added_tokens.json"),
    ("tokenizer_config.json", "special_tokens_map_file", "{outside}/special.json"),
    ("tokenizer_config.json", "chat_template_file", "../outside/chat_template.jinja"),
    ("config.json", "tokenizer_file", "../outside/tokenizer.json"),
    ("generation_config.json", "some_file", "{outside}/x.json"),
    ("special_tokens_map.json", "vocab_file", "../outside/vocab.json"),
])
def test_a_file_named_outside_by_a_config_is_refused(folder, outside, spy, file, key, value):
    (outside / "tokenizer.4.0.json").write_bytes((outside / "tokenizer.json").read_bytes())
    fill = (lambda v: v.format(outside=outside))  # noqa: E731
    value = [fill(v) for v in value] if isinstance(value, list) else fill(value)
    path = folder / file
    if not path.exists():
        path.write_text("{}")
    _edit_json(path, **{key: value})
    if key == "fast_tokenizer_files":
        (folder / "tokenizer.json").unlink()  # transformers would read the one outside
    with pytest.raises(OutsideFolderError, match=rf"named by {file} \({key}\)"):
        load_causal_lm(folder)
    assert spy == []


def _link_out(folder: Path, outside: Path, what: str) -> None:
    if what == "additional_chat_templates/":
        (outside / "templates").mkdir()
        (outside / "templates" / "evil.jinja").write_text("{{ secret }}")
        (folder / "additional_chat_templates").symlink_to(outside / "templates")
    elif what == "additional_chat_templates/x.jinja":
        (outside / "x.jinja").write_text("{{ secret }}")
        (folder / "additional_chat_templates").mkdir()
        (folder / "additional_chat_templates" / "x.jinja").symlink_to(outside / "x.jinja")
    elif what == "shards/model-1.safetensors":
        _index_to(folder, what)
        (folder / "shards").mkdir()
        (folder / what).symlink_to(outside / "model.safetensors")
    else:
        (folder / what).unlink()
        (folder / what).symlink_to(outside / what)


@pytest.mark.parametrize("what", [
    "model.safetensors", "tokenizer.json", "tokenizer_config.json", "config.json",
    "additional_chat_templates/", "additional_chat_templates/x.jinja",
    "shards/model-1.safetensors"])
def test_a_link_leading_outside_the_folder_is_refused(folder, outside, spy, what):
    _link_out(folder, outside, what)
    with pytest.raises(OutsideFolderError, match=r"link .* resolves to .*outside"):
        load_causal_lm(folder)
    assert spy == []


def test_a_relative_link_climbing_out_is_refused(folder, outside, spy):
    (folder / "tokenizer.json").unlink()
    (folder / "tokenizer.json").symlink_to(Path("..") / "outside" / "tokenizer.json")
    with pytest.raises(OutsideFolderError, match=r"tokenizer\.json"):
        load_causal_lm(folder)
    assert spy == []


def test_links_and_shards_inside_the_folder_load(folder, tiny_folder):
    """A link inside the folder is fine; so is a genuine sharded save in a subfolder."""
    (folder / "tokenizer.json").rename(folder / "real-tokenizer.json")
    (folder / "tokenizer.json").symlink_to("real-tokenizer.json")
    (folder / "weights").mkdir()
    (folder / "model.safetensors").rename(folder / "weights" / "all.safetensors")
    _index_to(folder, "weights/all.safetensors", source="weights/all.safetensors")
    target = load_causal_lm(folder)
    genuine = load_causal_lm(tiny_folder)
    assert target.fingerprint() == genuine.fingerprint()


def test_a_genuine_sharded_save_loads(tiny_folder, tmp_path):
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_folder)
    sharded = tmp_path / "sharded"
    model.save_pretrained(sharded, max_shard_size="20KB")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_folder / name, sharded / name)
    assert (sharded / "model.safetensors.index.json").is_file()
    assert load_causal_lm(sharded).fingerprint() == load_causal_lm(tiny_folder).fingerprint()


def test_the_hub_cache_layout_loads(tiny_folder, tmp_path):
    """``snapshots/REV`` files are links into the repository's ``blobs``: trusted."""
    repo = tmp_path / "hub" / "models--org--tiny"
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    for i, file in enumerate(sorted(tiny_folder.iterdir())):
        shutil.copy(file, repo / "blobs" / f"blob{i}")
        (snapshot / file.name).symlink_to(Path("..", "..", "blobs", f"blob{i}"))
    assert load_causal_lm(snapshot).task == "causal-lm"
    (snapshot / "tokenizer.json").unlink()
    (snapshot / "tokenizer.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(OutsideFolderError, match=r"tokenizer\.json"):
        load_causal_lm(snapshot)


def test_a_pipe_in_the_folder_is_refused_not_opened(folder, spy):
    import os

    (folder / "tokenizer.json").unlink()
    os.mkfifo(folder / "tokenizer.json")  # opening it to read would block forever
    with pytest.raises(ValueError, match=r"tokenizer\.json is not a regular file"):
        load_causal_lm(folder)
    assert spy == []


# ------------------------------------------------------ no weight silently random


def _rewrite_weights(folder: Path, change: Any) -> None:
    from safetensors.torch import load_file, save_file

    state = load_file(folder / "model.safetensors")
    change(state)
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})


def test_a_removed_tensor_is_refused_by_name(folder):
    _rewrite_weights(folder, lambda s: s.pop("transformer.h.0.mlp.c_fc.weight"))
    with pytest.raises(ValueError, match=r"1 missing .*random.*transformer\.h\.0\.mlp\.c_fc"):
        load_causal_lm(folder)


def test_an_unexpected_tensor_is_refused_by_name(folder):
    _rewrite_weights(folder, lambda s: s.update(
        {"transformer.h.7.attn.hidden": s["transformer.ln_f.bias"].clone()}))
    with pytest.raises(ValueError, match=r"1 in the weight files but not in the model: "
                                         r"transformer\.h\.7\.attn\.hidden"):
        load_causal_lm(folder)


def test_a_tensor_of_another_shape_is_refused_by_name(folder):
    _rewrite_weights(folder, lambda s: s.update(
        {"transformer.ln_f.bias": torch.zeros(3)}))
    with pytest.raises(ValueError, match=r"of another shape.*transformer\.ln_f\.bias"):
        load_causal_lm(folder)


@pytest.mark.parametrize("model_type", ["bert", "roberta", "t5"])
def test_a_configuration_that_is_no_causal_lm_is_refused(folder, spy, model_type):
    _edit_json(folder / "config.json", model_type=model_type)
    with pytest.raises(ValueError, match=rf"config\.json describes a '{model_type}'.*not a "
                                         "causal language model"):
        load_causal_lm(folder)
    assert spy == []  # refused before a randomly initialised model is built


def test_a_configuration_naming_another_architecture_is_refused(folder, spy):
    _edit_json(folder / "config.json", model_type="gptj")
    with pytest.raises(ValueError, match=r"GPT2LMHeadModel but its model_type 'gptj' loads "
                                         "GPTJForCausalLM"):
        load_causal_lm(folder)
    assert spy == []


def test_another_architecture_without_architectures_is_refused_by_its_weights(folder):
    doc = json.loads((folder / "config.json").read_text())
    doc.pop("architectures")
    doc["model_type"] = "gptj"
    (folder / "config.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"missing .*random.*attn\.k_proj.*not in the model: "
                                         r"transformer\.h\.0\.attn\.c_attn"):
        load_causal_lm(folder)


def test_tied_and_untied_genuine_saves_load_and_an_untied_head_must_be_there(tiny_folder,
                                                                             tmp_path):
    """lm_head tied to the embeddings is not missing; an untied one must be in the file."""
    tied = load_causal_lm(tiny_folder)
    assert tied.model.lm_head.weight.data_ptr() == tied.model.transformer.wte.weight.data_ptr()
    config = transformers.AutoConfig.from_pretrained(tiny_folder, tie_word_embeddings=False)
    torch.manual_seed(1)
    untied = tmp_path / "untied"
    transformers.GPT2LMHeadModel(config).save_pretrained(untied)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_folder / name, untied / name)
    assert load_causal_lm(untied).model.lm_head.weight.shape[0] == config.vocab_size
    _rewrite_weights(untied, lambda s: s.pop("lm_head.weight"))
    with pytest.raises(ValueError, match=r"missing .*lm_head\.weight"):
        load_causal_lm(untied)


# ---------------------------------------------- every failure named, on one line


def test_a_tokenizer_that_panics_in_rust_is_named(folder, capfd):
    """A crafted tokenizer.json makes the Rust library panic (a BaseException)."""
    _edit_json(folder / "tokenizer.json",
               normalizer={"type": "Precompiled", "precompiled_charsmap": "AAAA"})
    with pytest.raises(ValueError, match=r"tokenizer file tokenizer\.json .* does not load "
                                         r"\(PanicException: Precompiled"):
        load_causal_lm(folder)
    assert "panicked" not in capfd.readouterr().err  # Rust's own report is held back


def _no_tokenizer(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()


def _no_tokenizer_at_all(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()
    (folder / "tokenizer_config.json").unlink()


def _empty_vocabulary(folder: Path) -> None:
    doc = json.loads((folder / "tokenizer.json").read_text())
    doc["model"].update(vocab={}, merges=[])
    doc["added_tokens"] = []
    (folder / "tokenizer.json").write_text(json.dumps(doc))


def _bigger_vocabulary(folder: Path) -> None:
    doc = json.loads((folder / "tokenizer.json").read_text())
    size = len(doc["model"]["vocab"])
    doc["added_tokens"] += [{"id": size + i, "content": f"<extra{i}>", "single_word": False,
                             "lstrip": False, "rstrip": False, "normalized": False,
                             "special": True} for i in range(20)]
    (folder / "tokenizer.json").write_text(json.dumps(doc))


def _broken_model_section(folder: Path) -> None:
    doc = json.loads((folder / "tokenizer.json").read_text())
    doc["model"] = {"type": "BPE", "vocab": "not a vocabulary"}
    (folder / "tokenizer.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("damage,message", [
    (_no_tokenizer, r"holds no tokenizer \(none of tokenizer\.json"),
    (_no_tokenizer_at_all, r"holds no tokenizer .*tokenizer\.save_pretrained"),
    (_empty_vocabulary, r"tokenizer in .* turns text into no tokens"),
    (_bigger_vocabulary, r"tokenizer in .* has \d+ tokens but the model only \d+ embeddings"),
    (_broken_model_section, r"tokenizer file tokenizer\.json .* does not load"),
])
def test_a_missing_or_unfit_tokenizer_is_named_up_front(folder, damage, message):
    damage(folder)
    with pytest.raises(ValueError, match=message):
        load_causal_lm(folder)


def _deep(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("file,content,message", [
    ("config.json", "{nope", r"config\.json is not a JSON file"),
    ("config.json", "[1, 2]", r"config\.json must hold a JSON object"),
    ("config.json", _deep(200_000), r"config\.json is not a JSON file \(.*nested more than"),
    ("config.json", '{"a": NaN}', r"config\.json is not a JSON file \(.*non-standard token NaN"),
    ("tokenizer_config.json", "\x00\x01", r"tokenizer_config\.json is not a JSON file"),
    ("model.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}",
     r"model\.safetensors in .* is not a readable safetensors file"),
    ("model.safetensors", b"", r"model\.safetensors .* not a readable safetensors file"),
])
def test_a_damaged_file_is_named(folder, spy, file, content, message):
    path = folder / file
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_causal_lm(folder)
    assert spy == []


def test_a_json_file_too_large_is_refused_before_it_is_read(folder, spy, monkeypatch):
    import privaudit.targets._hf_folder as hf_folder

    size = (folder / "config.json").stat().st_size
    monkeypatch.setattr(hf_folder, "JSON_MAX_BYTES", size - 1)
    with pytest.raises(ValueError, match=rf"config\.json is {size:,} bytes long, more than "
                                         rf"the {size - 1:,} bytes"):
        load_causal_lm(folder)
    assert spy == []


def test_truncated_weights_are_named(folder, spy):
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:-100])
    with pytest.raises(ValueError, match=r"model\.safetensors .*not a readable safetensors"):
        load_causal_lm(folder)
    assert spy == []


@pytest.mark.parametrize("change,message", [
    ({"dtype": "float17"}, r"'dtype' key of .*config\.json must be a torch dtype.*float17"),
    ({"torch_dtype": "torch.int99"}, r"'torch_dtype' key of .*config\.json"),
    ({"text_config": {"dtype": 3}}, r"'text_config\.dtype' key of .*config\.json"),
    ({"model_type": None}, r"'model_type' key of .*config\.json must be a model type"),
])
def test_a_bad_configuration_key_is_named(folder, spy, change, message):
    _edit_json(folder / "config.json", **change)
    with pytest.raises(ValueError, match=message):
        load_causal_lm(folder)
    assert spy == []


def test_an_empty_folder_and_a_missing_config_are_named(tmp_path, folder):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"'path' .*weights in model\.safetensors"):
        load_causal_lm(tmp_path / "empty")
    (folder / "config.json").unlink()
    with pytest.raises(ValueError, match=r"has no config\.json"):
        load_causal_lm(folder)


@pytest.mark.parametrize("index,message", [
    ({"weight_map": {}}, r"'weight_map' key of .*index\.json must map tensor names"),
    ({"weight_map": ["a"]}, r"'weight_map' key"),
    ({"weight_map": {"transformer.wte.weight": "gone.safetensors"}},
     r"shard 'gone\.safetensors' named by model\.safetensors\.index\.json is missing"),
    ({"weight_map": {"transformer.wte.weight": "config.json"}},
     r"shard 'config\.json' .* is not a \.safetensors file"),
    ({"weight_map": {"not.in.the.shard": "model-1.safetensors"}},
     r"says shard 'model-1\.safetensors' holds 1 tensor\(s\) it does not hold: not\.in"),
])
def test_a_bad_shard_index_is_named(folder, spy, index, message):
    (folder / "model.safetensors").rename(folder / "model-1.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=message):
        load_causal_lm(folder)
    assert spy == []


# ------------------------------------------------------------------ at the command line


@pytest.fixture()
def texts(tmp_path) -> dict[str, Path]:
    members, non_members = tmp_path / "m.txt", tmp_path / "n.jsonl"
    members.write_text("\n".join(_SENTENCES[:10]), encoding="utf-8")
    non_members.write_text("\n".join(json.dumps(s + " again") for s in _SENTENCES[:10]),
                           encoding="utf-8")
    return {"members": members, "non_members": non_members}


def _cli(folder: Path, texts: dict[str, Path], tmp_path: Path) -> Any:
    from typer.testing import CliRunner

    from privaudit.cli import app

    return CliRunner().invoke(app, [
        "audit", "llm", "--model", str(folder), "--members", str(texts["members"]),
        "--non-members", str(texts["non_members"]), "--attacks", "loss",
        "--out", str(tmp_path / "report")])


def _one_line_error(result: Any) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output and "--debug" not in result.output
    return lines[0]


def test_cli_refuses_an_absolute_shard_on_one_line(folder, outside, texts, tmp_path):
    _index_to(folder, str(outside / "model.safetensors"))
    line = _one_line_error(_cli(folder, texts, tmp_path))
    assert "model.safetensors.index.json" in line and str(outside) in line
    assert not (tmp_path / "report").exists()


def test_cli_refuses_missing_weights_on_one_line(folder, texts, tmp_path):
    _rewrite_weights(folder, lambda s: s.pop("transformer.h.0.attn.c_proj.weight"))
    line = _one_line_error(_cli(folder, texts, tmp_path))
    assert "missing" in line and "transformer.h.0.attn.c_proj.weight" in line


def test_cli_names_a_panicking_tokenizer_on_one_line(folder, texts, tmp_path, capfd):
    _edit_json(folder / "tokenizer.json",
               normalizer={"type": "Precompiled", "precompiled_charsmap": "AAAA"})
    line = _one_line_error(_cli(folder, texts, tmp_path))
    assert "tokenizer.json" in line and "PanicException" in line
    assert "panicked" not in capfd.readouterr().err


@pytest.mark.parametrize("content", ['"a text"\n""\n', '{"text": "  "}\n'])
def test_cli_names_an_empty_text_on_one_line(folder, texts, tmp_path, content):
    texts["non_members"].write_text(content, encoding="utf-8")
    line = _one_line_error(_cli(folder, texts, tmp_path))
    assert "--non-members" in line and "empty text" in line and "Line" in line


@pytest.mark.slow
def test_a_genuine_folder_loads_and_is_audited(folder, texts, tmp_path):
    result = _cli(folder, texts, tmp_path)
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "report" / "results.json").read_text())
    assert {(e["target"], e["attack"]) for e in doc["results"]} >= {("model", "loss")}
    assert isinstance(load_causal_lm(folder), CausalLMTarget)


@pytest.mark.parametrize("change", [
    {"attn_implementation": "evil-org/evil-kernel"},
    {"text_config": {"attn_implementation": {"": "evil-org/kernel:flash"}}},
    {"experts_implementation": "evil-org/experts"},
])
def test_a_hub_kernel_named_by_the_configuration_is_refused(folder, spy, change):
    """transformers loads ``attn_implementation: org/repo`` through ``kernels``: code."""
    _edit_json(folder / "config.json", **change)
    with pytest.raises(ValueError, match=r"implementation' key of .*config\.json.*no kernel "
                                         "from the hub"):
        load_causal_lm(folder)
    assert spy == []
