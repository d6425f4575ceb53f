"""Devices and dtypes: every batch goes to its model's device; float32 against bfloat16.

A CPU machine has one real device, so a model that declares another one ("meta", which
holds no data) stops at its first call and says where its inputs were: any input built on
the CPU and not moved shows up there. A model that declares the CPU records every call and
scores normally, so the same paths are also checked end to end.
"""

import copy
import math

import numpy as np
import pytest
import torch

from conftest import corpus
from privaudit.llm import frequency_table, score_texts

TEXTS = corpus(10, seed=41)


class _Stop(Exception):
    """Raised by a model on the meta device after recording its inputs."""


class RecordingLM(torch.nn.Module):
    """A causal LM wrapper that records the device and dtype of every input tensor."""

    def __init__(self, inner, device="cpu"):
        super().__init__()
        self.inner, self._declared = inner, torch.device(device)
        self.config, self.calls = inner.config, []
        self.train(inner.training)  # restoring the wrapper's mode must not train the model

    @property
    def device(self):
        return self._declared

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings()

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        given = {"input_ids": input_ids, "attention_mask": attention_mask,
                 "position_ids": position_ids}
        self.calls.append({k: (v.device, v.dtype) for k, v in given.items() if v is not None})
        if self._declared.type == "meta":
            raise _Stop
        return self.inner(**{k: v for k, v in given.items() if v is not None})


def _all_on(calls, device):
    return all(dev == torch.device(device) for call in calls for dev, _ in call.values())


CASES = [{"attacks": ["loss", "min-k", "min-k-plus-plus", "zlib"]},
         {"attacks": ["gradnorm"]},
         {"attacks": ["dc-pdd"], "compat": "mimir"},
         {"attacks": ["recall"], "recall_prefix": "A member record. "}]


@pytest.mark.parametrize("case", CASES)
def test_a_model_on_another_device_gets_every_input_there(tiny_model, tiny_tokenizer, case):
    kwargs = {**case, "token_frequencies": [1] * len(tiny_tokenizer)}
    model = RecordingLM(tiny_model, "meta")
    with pytest.raises(_Stop):
        score_texts(model, tiny_tokenizer, TEXTS, **kwargs)
    assert model.calls and _all_on(model.calls, "meta")
    assert {dtype for call in model.calls for _, dtype in call.values()} == {torch.long}


def test_the_reference_model_gets_its_batches_on_its_own_device(tiny_model, tiny_tokenizer):
    target, reference = RecordingLM(tiny_model), RecordingLM(tiny_model, "meta")
    with pytest.raises(_Stop):
        score_texts(target, tiny_tokenizer, TEXTS, attacks=["reference"],
                    reference_model=reference)
    assert target.calls and _all_on(target.calls, "cpu")
    assert reference.calls and _all_on(reference.calls, "meta")


def test_recording_wrapper_scores_as_the_model_does(tiny_model, tiny_tokenizer):
    names = ["loss", "min-k-plus-plus", "dc-pdd", "gradnorm", "recall", "reference"]
    kwargs = {"attacks": names, "recall_prefix": ["A member. ", "Loss."],
              "token_frequencies": np.arange(len(tiny_tokenizer)), "batch_size": 4}
    wrapped = RecordingLM(tiny_model)
    got = score_texts(wrapped, tiny_tokenizer, TEXTS, reference_model=RecordingLM(tiny_model),
                      **kwargs)
    want = score_texts(tiny_model, tiny_tokenizer, TEXTS, reference_model=tiny_model, **kwargs)
    for name in names:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)
    # GradNorm's pass (its logits serve the forward statistics) and ReCaLL's, per batch.
    assert len(wrapped.calls) == 2 * math.ceil(len(TEXTS) / 4)
    assert _all_on(wrapped.calls, "cpu")
    assert not tiny_model.training  # the shared model's mode is left as it was


#: bfloat16 keeps 8 significant bits: a statistic read from bfloat16 logits (accumulated in
#: float32) stays within 1% of float32's on the tiny GPT-2 (measured: at most 2.7e-3, for
#: Min-K++ and GradNorm; 2.5e-5 for LOSS).
BF16_RTOL = 1e-2


@pytest.mark.parametrize("dtype", ["bfloat16", torch.bfloat16, "torch.bfloat16"])
def test_bfloat16_statistics_equal_float32_within_tolerance(tiny_model, tiny_tokenizer, dtype):
    names = ["loss", "min-k", "min-k-plus-plus", "zlib", "dc-pdd"]
    # dc_pdd_a = 1: no term capped, so DC-PDD reads the probabilities themselves.
    kwargs = {"attacks": names, "token_frequencies": np.arange(len(tiny_tokenizer)),
              "dc_pdd_a": 1.0}
    half = copy.deepcopy(tiny_model)
    low = score_texts(half, tiny_tokenizer, TEXTS, dtype=dtype, **kwargs)
    full = score_texts(tiny_model, tiny_tokenizer, TEXTS, dtype="float32", **kwargs)
    assert half.transformer.wte.weight.dtype == torch.bfloat16  # cast in place
    assert tiny_model.transformer.wte.weight.dtype == torch.float32
    for name in names:
        assert low[name].dtype == np.float64
        np.testing.assert_allclose(low[name], full[name], rtol=BF16_RTOL, err_msg=name)
        assert not np.array_equal(low[name], full[name])  # really scored in bfloat16


def test_bfloat16_gradnorm_within_tolerance(tiny_model, tiny_tokenizer):
    half = copy.deepcopy(tiny_model)
    low = score_texts(half, tiny_tokenizer, TEXTS[:6], attacks=["gradnorm"], dtype="bfloat16")
    full = score_texts(tiny_model, tiny_tokenizer, TEXTS[:6], attacks=["gradnorm"])
    np.testing.assert_allclose(low["gradnorm"], full["gradnorm"], rtol=BF16_RTOL)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"dtype": "float64"}, "dtype"), ({"dtype": "half"}, "dtype"), ({"dtype": 16}, "dtype"),
    ({"dtype": torch.int8}, "dtype"), ({"device": "nodevice"}, "device"),
    ({"device": "cuda:99"}, "device"),
])
def test_bad_device_or_dtype_is_one_error_naming_it(tiny_model, tiny_tokenizer, kwargs, name):
    with pytest.raises((ValueError, TypeError), match=f"'?{name}'?"):
        score_texts(copy.deepcopy(tiny_model), tiny_tokenizer, TEXTS[:2], **kwargs)


def test_a_dtype_the_device_cannot_run_names_dtype(tiny_model, tiny_tokenizer,
                                                   cpu_without_bfloat16):
    """As an old CPU without bfloat16 kernels answers: the layer norm raises."""
    model = copy.deepcopy(tiny_model)
    with pytest.raises(ValueError, match="dtype") as info:
        score_texts(model, tiny_tokenizer, TEXTS[:2], dtype="bfloat16")
    assert "BFloat16" in str(info.value)
    assert model.transformer.wte.weight.dtype == torch.float32  # left as it was


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_cuda_scores_as_the_cpu_does(tiny_model, tiny_tokenizer, dtype):
    names = ["loss", "min-k", "min-k-plus-plus", "dc-pdd", "gradnorm", "recall", "reference"]
    kwargs = {"attacks": names, "recall_prefix": "A member. ",
              "token_frequencies": np.arange(len(tiny_tokenizer))}
    on_gpu = copy.deepcopy(tiny_model)
    gpu = score_texts(on_gpu, tiny_tokenizer, TEXTS, device="cuda", dtype=dtype,
                      reference_model=copy.deepcopy(tiny_model), **kwargs)
    cpu = score_texts(tiny_model, tiny_tokenizer, TEXTS, reference_model=tiny_model, **kwargs)
    assert on_gpu.device.type == "cuda"
    rtol = 1e-4 if dtype == "float32" else 0.1
    for name in names:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=rtol, atol=1e-6, err_msg=name)


def test_frequency_table_is_not_moved(tiny_tokenizer):
    table = frequency_table(np.arange(len(tiny_tokenizer)), len(tiny_tokenizer))
    assert isinstance(table, np.ndarray) and table.dtype == np.float64


def test_audit_llm_passes_device_and_dtype_to_the_scoring(tiny_model, tiny_tokenizer,
                                                          monkeypatch):
    import privaudit
    from privaudit.llm import _score

    seen = []
    real = _score.place_models
    monkeypatch.setattr(_score, "place_models", lambda models, **kw: (
        seen.append(kw), real(models, **kw))[1])
    model = copy.deepcopy(tiny_model)
    texts = corpus(16, seed=43)
    privaudit.audit_llm((model, tiny_tokenizer), members=texts[:8], non_members=texts[8:],
                        attacks=["loss"], device="cpu", dtype="bfloat16",
                        blind_baseline=False, subgroups=False)
    assert seen and all(kw == {"device": "cpu", "dtype": "bfloat16"} for kw in seen)
    assert model.transformer.wte.weight.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="dtype"):
        privaudit.audit_llm((model, tiny_tokenizer), members=texts[:8],
                            non_members=texts[8:], attacks=["loss"], dtype="float64")
