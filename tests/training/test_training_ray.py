"""The Ray executor, run on a local Ray instance: same results as local workers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import ray  # noqa: F401 - Ray is needed here: a missing Ray fails, not skips
from sklearn.datasets import load_digits
from sklearn.neural_network import MLPClassifier

from privaudit.training import CallableRecipe, ReferencePool

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


# ray_executor (tests/conftest.py): one local Ray instance started through our own code path
# for every Ray test of the process; every Ray check of this module lives in the one test
# below.


def proba(model, X, y):
    return model.predict_proba(X)


def broken_train(X, y, *, random_state):
    raise RuntimeError(f"cannot train seed {random_state}")


def add(x, *, x2):
    return x + x2


def _data():
    X, y = load_digits(return_X_y=True)
    return X[:300] / 16.0, y[:300]


MLP = MLPClassifier((16,), max_iter=40)


def test_ray_executor(ray_executor, tmp_path: Path) -> None:
    X, y = _data()
    # 1. Same pool, same models, same outputs: inline, 2 local workers, Ray, Ray + cache.
    pools = {
        "local-1": ReferencePool(MLP, 4, n_jobs=1, random_state=0).fit(X, y),
        "local-2": ReferencePool(MLP, 4, n_jobs=2, random_state=0).fit(X, y),
        "ray": ReferencePool(MLP, 4, executor="ray", random_state=0).fit(X, y),
        "ray-cached": ReferencePool(MLP, 4, executor=ray_executor, random_state=0,
                                    cache_dir=tmp_path).fit(X, y),
    }
    outputs = {name: p.map(proba, X) for name, p in pools.items()}
    for name, p in pools.items():
        np.testing.assert_array_equal(p.in_mask_, pools["local-1"].in_mask_, err_msg=name)
        np.testing.assert_array_equal(p.seeds_, pools["local-1"].seeds_, err_msg=name)
        np.testing.assert_array_equal(outputs[name], outputs["local-1"], err_msg=name)
    # The "ray" pool reused the running instance (2 CPUs) rather than starting another.
    assert ray_executor.n_workers == 2
    # Resuming a Ray-built cache with local workers trains nothing.
    resumed = ReferencePool(MLP, 4, n_jobs=2, random_state=0, cache_dir=tmp_path).fit(X, y)
    assert resumed.n_trained_ == 0

    # 2. A task's error reaches the caller as the task's own exception class, and the pool
    # is left unfitted.
    pool = ReferencePool(CallableRecipe(broken_train), 2, executor=ray_executor, random_state=0)
    with pytest.raises(RuntimeError, match="cannot train seed"):
        pool.fit(X, y)
    assert not hasattr(pool, "models_")

    # 3. Every task is yielded once; `add` lives in this test module, which Ray's workers
    # import through the driver's import path passed on by RayExecutor (Ray alone does not
    # forward it under pytest-xdist).
    results = dict(ray_executor.map_unordered(add, [(i,) for i in range(6)],
                                              shared={"x2": 10}))
    assert results == {i: i + 10 for i in range(6)}

    # 4. A whole audit through Ray gives the numbers of an audit with local workers.
    import privaudit

    labels = np.r_[np.ones(100, int), np.zeros(100, int)]
    target = MLPClassifier((16,), max_iter=40, random_state=0).fit(X[:100], y[:100])
    audits = {
        executor: privaudit.audit_model(
            target, X[:200], y[:200], labels, population=(X[200:], y[200:]),
            attacks=["lira-offline", "rmia"],
            reference=privaudit.training.ReferenceSpec(recipe=MLP, n_models=4),
            executor=executor, n_jobs=2, random_state=0, check_fidelity=False,
        )
        for executor in ("local", "ray")
    }
    for local, remote in zip(audits["local"], audits["ray"], strict=True):
        np.testing.assert_array_equal(local.scores, remote.scores)

    # 5. The synthetic-data neighbour scan spread over Ray gives the inline numbers.
    import pandas as pd

    from privaudit.synthetic import nearest_neighbors

    rng = np.random.default_rng(0)
    table = pd.DataFrame({"x": rng.normal(size=120), "c": rng.choice(list("abc"), 120)})
    inline = nearest_neighbors(table.iloc[:70], table.iloc[70:], n_neighbors=2)
    spread = nearest_neighbors(table.iloc[:70], table.iloc[70:], n_neighbors=2, chunk_size=9,
                               executor=ray_executor)
    np.testing.assert_array_equal(inline[0], spread[0])
    np.testing.assert_array_equal(inline[1], spread[1])

    # 6. An LLM corpus sharded over Ray: the numbers of one local process (LocalExecutor
    # with one worker runs the same shards under the same thread limits).
    from privaudit.llm import score_texts
    from privaudit.studies._tiny_lm import load_tweets, tiny_gpt2, train_tokenizer
    from privaudit.training import LocalExecutor

    texts = load_tweets(40, random_state=0)["text"].tolist()
    tokenizer = train_tokenizer(texts, vocab_size=300)
    model = tiny_gpt2(tokenizer, n_layer=1, n_embd=32, random_state=0)
    names = ["loss", "min-k-plus-plus", "zlib"]
    local = score_texts(model, tokenizer, texts, attacks=names, batch_size=8,
                        executor=LocalExecutor(n_jobs=1))
    remote = score_texts(model, tokenizer, texts, attacks=names, batch_size=8,
                         executor=ray_executor)
    np.testing.assert_array_equal(remote.to_numpy(), local.to_numpy())

    # 7. A generator's shadow runs over Ray: the tables made inline, cached as they finish.
    from privaudit.synthetic import gaussian_copula
    from privaudit.training import GeneratorRuns

    people = pd.DataFrame({"x": rng.normal(size=300), "c": rng.choice(list("abc"), 300)})
    targets = people.iloc[:2]

    def shadow(executor, cache_dir=None):
        return GeneratorRuns(gaussian_copula, people.iloc[2:], targets, n_runs=6,
                             n_train_rows=50, random_state=0, executor=executor,
                             cache_dir=cache_dir).run()

    inline_runs, remote_runs = shadow("local"), shadow(ray_executor, tmp_path / "gen")
    assert remote_runs.n_made_ == 6
    for a, b in zip(inline_runs.synthetic_, remote_runs.synthetic_, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert shadow(ray_executor, tmp_path / "gen").n_made_ == 0

    # 8. Unlearning shadows (U-LiRA's and Apollo's) trained stacked over Ray: the models
    # of one local process, bit for bit (a chunk of stacked models per Ray task).
    from privaudit.training import TorchMLPRecipe
    from privaudit.unlearn import UnlearningRecipe

    recipe = UnlearningRecipe(
        TorchMLPRecipe(hidden=(16,), epochs=3, classes=np.arange(10), stack=2),
        (X[:20].astype(np.float32), y[:20]), method="GA", params={"epochs": 2})
    Xf = X.astype(np.float32)
    made = {name: ReferencePool(recipe, 4, executor=executor, random_state=0).fit(
        Xf, y, audited=np.arange(20)) for name, executor in (("local", LocalExecutor(n_jobs=1)),
                                                            ("ray", ray_executor))}
    for a, b in zip(made["local"].models_, made["ray"].models_, strict=True):
        for pa, pb in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
            np.testing.assert_array_equal(pa.numpy(), pb.numpy())
