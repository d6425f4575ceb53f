"""LoRA adapters over a local base: loaded as peft has them in memory, crafted folders refused.

A tiny GPT-2 (built from a configuration, nothing downloaded) is the base; a LoRA adapter
on its attention (peft, B initialised at random so that the adapter changes the scores)
is saved beside it as a user's fine-tuning run leaves it. The loaded adapter must score
as the in-memory peft model does, and not as the base; the crafted folders (a base out of
the allowed root by absolute path, ``../`` or a link, a missing base, pickled weights,
unknown or dangerous configuration keys, absent target modules, missing or extra weights)
must each be one clear error naming the file or the option, before any weight is used.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
safetensors_torch = pytest.importorskip("safetensors.torch")

from privaudit.exceptions import OutsideFolderError  # noqa: E402
from privaudit.llm import score_texts  # noqa: E402
from privaudit.targets import load_causal_lm  # noqa: E402
from privaudit.targets._hf_folder import FolderError  # noqa: E402

# peft is imported by the tests that use it (about 2.7 CPU-s to import): every
# pytest-xdist worker collects this module, one runs its tests.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("peft") is None,
                                reason="peft is not installed")

TEXTS = [f"The {w} of record {i} is a member of the audit." for i, w in
         enumerate(["privacy", "token", "loss", "score", "model", "data"])]


def _tokenizer():
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(TEXTS * 4, vocab_size=120, min_frequency=1,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>",
        bos_token="<|endoftext|>", unk_token="<|endoftext|>", pad_token="<|endoftext|>")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """``models/base`` and ``models/adapter`` (its base named as ``../base``)."""
    root = tmp_path_factory.mktemp("models")
    tokenizer = _tokenizer()
    torch.manual_seed(0)
    base = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=64, n_embd=16, n_layer=2, n_head=2,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)).eval()
    base.save_pretrained(root / "base", safe_serialization=True)
    tokenizer.save_pretrained(root / "base")
    import peft

    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"],
                             init_lora_weights="gaussian", fan_in_fan_out=True)
    tuned = peft.get_peft_model(copy.deepcopy(base), config)
    with torch.no_grad():  # a fine-tuning run's result: B is no longer zero
        for name, weight in tuned.named_parameters():
            if "lora_B" in name:
                weight.normal_(0, 4.0)
    tuned.save_pretrained(root / "adapter", safe_serialization=True)
    _edit(root / "adapter", base_model_name_or_path="../base")
    return {"root": root, "base": base, "tuned": tuned.eval(), "tokenizer": tokenizer}


def _edit(folder: Path, **changes) -> None:
    path = folder / "adapter_config.json"
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def _copy(models, name: str, **changes) -> Path:
    folder = models["root"] / name
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(models["root"] / "adapter", folder)
    _edit(folder, **changes)
    return folder


def _loss(model, tokenizer, attacks=("loss",)):
    return score_texts(model, tokenizer, TEXTS, attacks=list(attacks)).to_numpy()


def test_the_loaded_adapter_scores_as_peft_in_memory(models):
    both = ("loss", "gradnorm")  # GradNorm: of the adapter's weights, as peft trains them
    want = _loss(models["tuned"], models["tokenizer"], both)
    base = _loss(models["base"], models["tokenizer"], both)
    assert np.abs(want - base).min() > 1e-3  # the adapter changes every score
    root = models["root"]
    loaded = {"adapter folder": load_causal_lm(root / "adapter"),
              "base + adapter=": load_causal_lm(root / "base", adapter=root / "adapter"),
              "base=": load_causal_lm(_copy(models, "moved", base_model_name_or_path="/gone"),
                                      base=root / "base")}
    import peft

    for how, target in loaded.items():
        assert isinstance(target.model, peft.PeftModel), how
        np.testing.assert_allclose(_loss(target.model, target.tokenizer, both), want,
                                   rtol=1e-6, err_msg=how)
    merged = load_causal_lm(root / "adapter", merge=True)
    assert type(merged.model) is transformers.GPT2LMHeadModel
    np.testing.assert_allclose(_loss(merged.model, merged.tokenizer), want[:, :1], rtol=1e-5)
    assert loaded["adapter folder"].name == "adapter"
    assert loaded["adapter folder"].fingerprint() == loaded["base + adapter="].fingerprint()
    assert merged.fingerprint() != load_causal_lm(root / "base").fingerprint()


def test_a_base_outside_the_root_is_refused(models, tmp_path):
    root = models["root"]
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(root / "base", elsewhere / "base")
    (root / "link-out").unlink(missing_ok=True)
    (root / "link-out").symlink_to(elsewhere / "base")
    for name, named in [("absolute", str(elsewhere / "base")),
                        ("dotdot", os.path.relpath(elsewhere / "base", root / "absolute")),
                        ("link", "../link-out")]:
        folder = _copy(models, name, base_model_name_or_path=named)
        with pytest.raises(OutsideFolderError, match="base_model_name_or_path") as info:
            load_causal_lm(folder)
        assert "base=" in str(info.value), name
    # The same base is fine when the user widens the root to it, or names it.
    wide = load_causal_lm(root / "link", base_root=tmp_path.parent)
    np.testing.assert_allclose(_loss(wide.model, wide.tokenizer),
                               _loss(models["tuned"], models["tokenizer"]), rtol=1e-6)


@pytest.mark.parametrize("named", ["../no-such-base", "gpt2", "org/some-model"])
def test_a_missing_base_names_the_option_and_the_path(models, named):
    folder = _copy(models, "missing", base_model_name_or_path=named)
    with pytest.raises(FileNotFoundError, match="base_model_name_or_path") as info:
        load_causal_lm(folder)
    assert named in str(info.value) and "base=" in str(info.value)
    with pytest.raises(FileNotFoundError, match="'base'"):
        load_causal_lm(folder, base=models["root"] / "no-such-folder")


def test_pickled_adapter_weights_are_never_read(models, tmp_path):
    folder = _copy(models, "pickled")
    (folder / "adapter_model.safetensors").unlink()
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (folder / "adapter_model.bin").write_bytes(pickle.dumps(Payload()))
    with pytest.raises(FolderError, match=r"adapter_model\.bin.*never loads"):
        load_causal_lm(folder)
    assert not marker.exists()
    pickle.loads((folder / "adapter_model.bin").read_bytes()).close()  # the control: it runs
    assert marker.exists()


@pytest.mark.parametrize(("changes", "named"), [
    ({"evil_hook": "os.system"}, "evil_hook"),
    ({"megatron_config": {"x": 1}, "megatron_core": "os"}, "megatron_core"),
    ({"init_lora_weights": "pissa"}, "init_lora_weights"),
    ({"peft_type": "PREFIX_TUNING"}, "peft_type"),
    ({"target_modules": ["c_attn", "q_proj"]}, "q_proj"),
    ({"target_modules": ".*\\.no_such_layer"}, "target_modules"),
])
def test_a_crafted_adapter_config_is_one_error_naming_the_key(models, changes, named):
    folder = _copy(models, "crafted", **changes)
    with pytest.raises(FolderError, match=named):
        load_causal_lm(folder)


@pytest.mark.parametrize("fault", ["missing", "extra", "reshaped", "damaged", "link-out"])
def test_adapter_weights_that_do_not_fit_are_refused(models, tmp_path, fault):
    folder = _copy(models, "weights")
    path = folder / "adapter_model.safetensors"
    weights = safetensors_torch.load_file(path)
    first = sorted(weights)[0]
    if fault == "missing":
        del weights[first]
    elif fault == "extra":
        weights["base_model.model.lm_head.lora_A.weight"] = torch.ones(4, 16)
    elif fault == "reshaped":
        weights[first] = torch.ones(3, 3)
    safetensors_torch.save_file(weights, path)
    if fault == "damaged":
        path.write_bytes(b"not safetensors")
    if fault == "link-out":
        shutil.move(path, tmp_path / "outside.safetensors")
        path.symlink_to(tmp_path / "outside.safetensors")
    error = OutsideFolderError if fault == "link-out" else FolderError
    with pytest.raises(error, match=r"adapter_model\.safetensors"):
        load_causal_lm(folder)


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"base": "x"}, "base"), ({"base_root": "x"}, "base_root"), ({"merge": True}, "merge"),
    ({"adapter": "."}, "adapter"), ({"adapter": "ADAPTER", "base": "x"}, "base"),
    ({"adapter": "ADAPTER", "merge": "yes"}, "merge"),
])
def test_adapter_options_out_of_place_name_the_option(models, kwargs, param):
    kwargs = {k: models["root"] / "adapter" if v == "ADAPTER" else v
              for k, v in kwargs.items()}
    with pytest.raises((ValueError, TypeError), match=f"'{param}'"):
        load_causal_lm(models["root"] / "base", **kwargs)


def test_a_dtype_the_machine_cannot_run_names_torch_dtype(models, tmp_path, cpu_without_bfloat16):
    """A folder saved in bfloat16 on a CPU without bfloat16 kernels (simulated)."""
    folder = tmp_path / "bf16"
    copy.deepcopy(models["base"]).to(torch.bfloat16).save_pretrained(folder)
    models["tokenizer"].save_pretrained(folder)
    for given in (None, torch.bfloat16):
        with pytest.raises(ValueError, match="'torch_dtype'") as info:
            load_causal_lm(folder, torch_dtype=given)
        assert "BFloat16" in str(info.value) and "torch.bfloat16" in str(info.value)
    target = load_causal_lm(folder, torch_dtype=torch.float32)
    assert target.model.dtype == torch.float32
