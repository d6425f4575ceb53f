"""The causal-LM target: round trip through a local folder, fingerprint, arguments.

The hostile folders (pickled weights, remote code, hub ids with the network cut) are in
tests/security/test_causal_lm_loading.py.
"""

import os
import shutil
import subprocess
import sys

import pytest
import torch

from conftest import make_model, make_tokenizer
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


@pytest.mark.slow  # a second interpreter importing transformers: ~10 s
def test_fingerprint_is_the_same_in_another_process(saved):
    folder, _ = saved
    code = ("import sys; from privaudit.targets import load_causal_lm; "
            "print(load_causal_lm(sys.argv[1]).fingerprint())")
    env = {**os.environ, "PYTHONHASHSEED": "123", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True,
                         text=True, env=env, timeout=600, check=True)
    assert out.stdout.strip().splitlines()[-1] == load_causal_lm(folder).fingerprint()


def test_fingerprint_follows_the_tokenizer(saved, tiny_texts):

    _, model = saved
    first = CausalLMTarget(model, make_tokenizer(tiny_texts)).fingerprint()
    assert CausalLMTarget(model, make_tokenizer(tiny_texts)).fingerprint() == first
    assert CausalLMTarget(model, make_tokenizer(tiny_texts[:100])).fingerprint() != first


@pytest.mark.parametrize("name", ["gpt2", "EleutherAI/pythia-70m"])
def test_hub_ids_are_not_downloaded(name, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="hub model id"):
        load_causal_lm(name)


def test_a_local_folder_named_like_a_hub_id_is_loaded(saved, monkeypatch):
    folder, _ = saved
    monkeypatch.chdir(folder.parent)
    assert load_causal_lm("tiny-lm").name == "tiny-lm"


def test_missing_folder_and_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_causal_lm(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="folder"):
        load_causal_lm(tmp_path / "file.txt")


def test_target_checks_its_arguments(tiny_model, tiny_tokenizer):
    with pytest.raises(TypeError, match="model"):
        CausalLMTarget("not a model", tiny_tokenizer)
    with pytest.raises(TypeError, match="tokenizer"):
        CausalLMTarget(tiny_model, 3)
    with pytest.raises(TypeError, match="name"):
        CausalLMTarget(tiny_model, tiny_tokenizer, name=3)
    for param, bad in [("max_length", 1), ("batch_size", 0), ("batch_size", 2.0)]:
        with pytest.raises((TypeError, ValueError), match=param):
            CausalLMTarget(tiny_model, tiny_tokenizer, **{param: bad})
    target = CausalLMTarget(tiny_model, tiny_tokenizer, name="m", batch_size=4)
    assert (target.batch_size, target.max_length) == (4, 512)
    target.count_queries(5)
    target.count_queries(2)
    assert target.n_queries == 7 and repr(target) == "CausalLMTarget(name='m')"


def test_loading_passes_the_scoring_defaults(saved):
    folder, _ = saved
    target = load_causal_lm(folder, name="mine", max_length=64, batch_size=2)
    assert (target.name, target.max_length, target.batch_size) == ("mine", 64, 2)
    assert not target.model.training
