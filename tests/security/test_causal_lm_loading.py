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
