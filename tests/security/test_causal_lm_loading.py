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


def _index_to(folder: Path, shard: str) -> None:
    """Replace model.safetensors by an index naming ``shard`` for every tensor."""
    from safetensors import safe_open

    with safe_open(folder / "model.safetensors", framework="pt") as handle:
        names = list(handle.keys())
    (folder / "model.safetensors").unlink()
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
    with pytest.raises(OutsideFolderError, match="tokenizer.json"):
        load_causal_lm(folder)
    assert spy == []


def test_links_and_shards_inside_the_folder_load(folder, tiny_folder):
    """A link inside the folder is fine; so is a genuine sharded save in a subfolder."""
    (folder / "tokenizer.json").rename(folder / "real-tokenizer.json")
    (folder / "tokenizer.json").symlink_to("real-tokenizer.json")
    (folder / "weights").mkdir()
    (folder / "model.safetensors").rename(folder / "weights" / "all.safetensors")
    _index_to_existing(folder, "weights/all.safetensors")
    target = load_causal_lm(folder)
    genuine = load_causal_lm(tiny_folder)
    assert target.fingerprint() == genuine.fingerprint()


def _index_to_existing(folder: Path, shard: str) -> None:
    from safetensors import safe_open

    with safe_open(folder / shard, framework="pt") as handle:
        names = list(handle.keys())
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": dict.fromkeys(names, shard)}))


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
    with pytest.raises(OutsideFolderError, match="tokenizer.json"):
        load_causal_lm(snapshot)


def test_a_pipe_in_the_folder_is_refused_not_opened(folder, spy):
    import os

    (folder / "tokenizer.json").unlink()
    os.mkfifo(folder / "tokenizer.json")  # opening it to read would block forever
    with pytest.raises(ValueError, match=r"tokenizer\.json is not a regular file"):
        load_causal_lm(folder)
    assert spy == []
