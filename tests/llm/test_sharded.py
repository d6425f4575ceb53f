"""score_texts over the executor: the same numbers, one model copy per worker, resumable."""

import numpy as np
import pytest

import privaudit.llm._sharded as sharded
from conftest import corpus
from privaudit.llm import score_texts
from privaudit.training import LocalExecutor

TEXTS = corpus(70, seed=9)
NAMES = ["loss", "min-k", "min-k-plus-plus", "zlib", "gradnorm"]


def test_workers_give_the_numbers_of_one_process(tiny_model, tiny_tokenizer):
    inline = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=NAMES, batch_size=4,
                         executor=LocalExecutor(n_jobs=1))
    with LocalExecutor(n_jobs=2) as executor:
        two = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=NAMES, batch_size=4,
                          executor=executor)
    np.testing.assert_array_equal(two.to_numpy(), inline.to_numpy())
    plain = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=NAMES, batch_size=4)
    np.testing.assert_allclose(two.to_numpy(), plain.to_numpy(), rtol=1e-5, atol=1e-7)
    assert list(two.columns) == NAMES


def test_a_rerun_scores_only_missing_shards(tiny_model, tiny_tokenizer, tmp_path,
                                            monkeypatch):
    first = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=["loss", "min-k"],
                        batch_size=4, cache_dir=tmp_path)
    shards = sorted(tmp_path.glob("shard-*.npz"))
    assert len(shards) == sharded.n_shards(len(TEXTS), 4) == 3
    shards[1].unlink()  # an interrupted run: one shard missing
    shards[2].write_bytes(b"damaged")  # and one damaged
    calls = []
    original = sharded._score_shard

    def counting(texts, *args, **kwargs):
        calls.append(len(texts))
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(sharded, "_score_shard", counting)
    again = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=["loss", "min-k"],
                        batch_size=4, cache_dir=tmp_path)
    assert len(calls) == 2  # the finished shard was read back, not scored
    np.testing.assert_array_equal(again.to_numpy(), first.to_numpy())
    other = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=["loss", "min-k"],
                        batch_size=4, cache_dir=tmp_path, k=0.5)
    assert len(calls) == 5 and not np.allclose(other["min-k"], first["min-k"])


def test_bad_executor_is_refused(tiny_model, tiny_tokenizer):
    with pytest.raises((TypeError, ValueError), match="executor"):
        score_texts(tiny_model, tiny_tokenizer, TEXTS[:2], executor="dask")
