"""Loading a causal LM: local folders only, safetensors only, no remote code."""

import json
import pickle
import shutil

import pytest
import torch

from conftest import make_model
from privaudit.targets import AuditedArtifact, CausalLMTarget, load_causal_lm


@pytest.fixture()
def saved(tmp_path, tiny_tokenizer):
    model = make_model(tiny_tokenizer, seed=7)
    folder = tmp_path / "tiny-lm"
    model.save_pretrained(folder, safe_serialization=True)
    tiny_tokenizer.save_pretrained(folder)
    return folder, model


def test_round_trip_gives_the_same_model(saved, tiny_tokenizer):
    folder, model = saved
    target = load_causal_lm(folder)
    assert isinstance(target, AuditedArtifact) and target.task == "causal-lm"
    assert target.name == "tiny-lm" and target.n_queries == 0
    ids = torch.tensor([tiny_tokenizer("a privacy audit")["input_ids"]])
    with torch.no_grad():
        torch.testing.assert_close(target.model(input_ids=ids).logits,
                                   model(input_ids=ids).logits)
    assert target.fingerprint() == CausalLMTarget(model, tiny_tokenizer).fingerprint()


def test_fingerprint_is_stable_and_follows_the_weights(saved, tmp_path):
    folder, _ = saved
    copy = tmp_path / "elsewhere"
    shutil.copytree(folder, copy)
    a, b = load_causal_lm(folder), load_causal_lm(copy)
    assert a.fingerprint() == b.fingerprint()  # where it was loaded from does not count
    with torch.no_grad():
        next(b.model.parameters()).view(-1)[0] += 1e-3
    b._fingerprint = None
    assert a.fingerprint() != b.fingerprint()


@pytest.mark.parametrize("name", ["gpt2", "EleutherAI/pythia-70m"])
def test_hub_ids_are_not_downloaded(name, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="hub model id"):
        load_causal_lm(name)


def test_missing_folder_and_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_causal_lm(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="folder"):
        load_causal_lm(tmp_path / "file.txt")


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_pickled_weights_are_never_loaded(saved, tmp_path):
    folder, _ = saved
    marker = tmp_path / "pwned"
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    with open(folder / "pytorch_model.bin", "wb") as handle:
        pickle.dump({"weight": _Payload(marker)}, handle)
    with pytest.raises(ValueError, match=r"safetensors.*pytorch_model\.bin"):
        load_causal_lm(folder)
    assert not marker.exists()


def test_remote_code_is_never_run(saved, tmp_path):
    folder, _ = saved
    marker = tmp_path / "pwned-code"
    (folder / "modeling_evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from transformers import GPT2LMHeadModel as EvilModel\n")
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilModel"}
    (folder / "config.json").write_text(json.dumps(config))
    try:
        load_causal_lm(folder)
    except ValueError as exc:
        assert "remote code" in str(exc) or "trust_remote_code" in str(exc)
    assert not marker.exists()


def test_target_checks_its_arguments(tiny_model, tiny_tokenizer):
    with pytest.raises(TypeError, match="model"):
        CausalLMTarget("not a model", tiny_tokenizer)
    with pytest.raises(TypeError, match="tokenizer"):
        CausalLMTarget(tiny_model, 3)
    target = CausalLMTarget(tiny_model, tiny_tokenizer, name="m")
    target.count_queries(5)
    assert target.n_queries == 5 and repr(target) == "CausalLMTarget(name='m')"
