"""ReferencePool: in/out masks, determinism across executors, cache and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.tree import DecisionTreeClassifier

from privaudit.exceptions import NotFittedError, PrivauditWarning
from privaudit.training import CallableRecipe, ReferencePool, SklearnRecipe

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    return X[:n] / 16.0, y[:n]


# Module-level helpers: worker processes import them by name.


def proba(model, X, y):
    return model.predict_proba(X)


def counting_train(X, y, *, random_state, control_dir):
    """Train a logistic regression; count calls with files (workers are other processes)."""
    control = Path(control_dir)
    if (control / f"fail-{random_state}").exists():
        raise RuntimeError(f"simulated crash while training seed {random_state}")
    if (control / f"kill-{random_state}").exists():
        os.kill(os.getpid(), signal.SIGKILL)  # the whole run dies, as with `kill -9`
    model = LogisticRegression(max_iter=100, random_state=random_state).fit(X, y)
    (control / f"trained-{random_state}-{uuid.uuid4().hex}").touch()
    return model


def save_npz(model, path):
    np.savez(path, coef=model.coef_, intercept=model.intercept_, classes=model.classes_)


def load_npz(path):
    with np.load(path, allow_pickle=False) as f:
        model = LogisticRegression()
        model.coef_, model.intercept_, model.classes_ = f["coef"], f["intercept"], f["classes"]
    return model


def _counts(control: Path) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in control.glob("trained-*"):
        seed = int(p.name.split("-")[1])
        out[seed] = out.get(seed, 0) + 1
    return out


def _counting_recipe(control: Path) -> CallableRecipe:
    return CallableRecipe(counting_train, fn_kwargs={"control_dir": str(control)},
                          save=save_npz, load=load_npz, suffix=".npz")


LR = LogisticRegression(max_iter=100)


# ----------------------------------------------------------------- masks and modes


def test_online_pool_masks_seeds_and_training_sets() -> None:
    X, y = _data()
    pool = ReferencePool(LR, 4, random_state=0).fit(X, y, audited=np.arange(100))
    assert pool.in_mask_.shape == (4, 300) and pool.in_mask_.dtype == bool
    assert np.all(pool.in_mask_.sum(axis=0) == 2)  # every record IN for exactly half
    assert len(set(pool.seeds_.tolist())) == 4
    for i, idx in enumerate(pool.train_indices_):
        np.testing.assert_array_equal(idx, np.flatnonzero(pool.in_mask_[i]))
    assert len(pool.models_) == 4 and pool.n_trained_ == 4
    assert pool.cache_path_ is None


def test_in_mask_is_what_each_model_really_trained_on() -> None:
    # A fully grown tree memorises its training set: it is right on every IN record and
    # clearly worse on OUT records. A mask misaligned with the training rows fails this.
    X, y = _data(400)
    pool = ReferencePool(DecisionTreeClassifier(), 4, random_state=1).fit(X, y)
    preds = pool.map(lambda m, X, y: m.predict(X), X)
    for i in range(4):
        inside = pool.in_mask_[i]
        assert np.all(preds[i, inside] == y[inside])
        assert np.mean(preds[i, ~inside] == y[~inside]) < 0.9


def test_end_to_end_in_models_more_confident_than_out_models() -> None:
    # The membership signal reference-model attacks rely on: per (model, record), the
    # confidence on the true class separates IN from OUT for an overfit model, and the
    # separation disappears when the mask is shuffled (so it comes from the real mask).
    X, y = _data(400)
    pool = ReferencePool(DecisionTreeClassifier(min_samples_leaf=2), 8, random_state=2).fit(X, y)
    conf = pool.map(proba, X)[:, np.arange(400), y]
    mask = pool.in_mask_
    assert roc_auc_score(mask.ravel(), conf.ravel()) > 0.57
    gap = (conf * mask).sum(0) / mask.sum(0) - (conf * ~mask).sum(0) / (~mask).sum(0)
    assert gap.mean() > 0.1
    shuffled = np.random.default_rng(0).permuted(mask, axis=0)
    assert abs(roc_auc_score(shuffled.ravel(), conf.ravel()) - 0.5) < 0.03


def test_offline_pool_never_trains_on_audited_rows() -> None:
    X, y = _data()
    audited = np.arange(0, 300, 3)
    pool = ReferencePool(LR, 4, mode="offline", random_state=0).fit(X, y, audited=audited)
    assert not pool.in_mask_[:, audited].any()
    population = np.setdiff1d(np.arange(300), audited)
    assert np.all(pool.in_mask_[:, population].sum(axis=0) == 2)
    np.testing.assert_array_equal(pool.candidates_, population)


def test_offline_overlap_between_audited_and_population_is_refused() -> None:
    X, y = _data()
    with pytest.raises(ValueError, match=r"The 'population' parameter of ReferencePool\.fit must "
                                         r"be disjoint from 'audited' in offline mode"):
        ReferencePool(LR, 2, mode="offline", random_state=0).fit(
            X, y, audited=[0, 1, 2], population=np.arange(2, 300))


def test_online_with_population_excludes_other_rows() -> None:
    X, y = _data()
    mask = np.zeros(300, dtype=bool)
    mask[200:] = True
    pool = ReferencePool(LR, 2, random_state=0).fit(X, y, audited=np.arange(50),
                                                     population=mask)
    assert not pool.in_mask_[:, 50:200].any()
    assert np.all(pool.in_mask_[:, :50].sum(axis=0) == 1)
    assert np.all(pool.in_mask_[:, 200:].sum(axis=0) == 1)


def test_bad_arguments_raise_template_errors() -> None:
    X, y = _data()
    with pytest.raises(ValueError, match="The 'n_models' parameter of ReferencePool"):
        ReferencePool(LR, 0).fit(X, y)
    with pytest.raises(ValueError, match="The 'mode' parameter of ReferencePool"):
        ReferencePool(LR, 2, mode="both").fit(X, y)
    with pytest.raises(ValueError, match="The 'train_fraction' parameter of ReferencePool"):
        ReferencePool(LR, 2, train_fraction=1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"The 'y' parameter of ReferencePool\.fit"):
        ReferencePool(LR, 2).fit(X, y[:-1])
    with pytest.raises(ValueError, match="The 'audited' parameter of ReferencePool.fit must "
                                         r"be row indices in \[0, 300\)"):
        ReferencePool(LR, 2).fit(X, y, audited=[5, 300])
    with pytest.raises(ValueError, match="free of duplicate"):
        ReferencePool(LR, 2).fit(X, y, audited=[5, 5])
    with pytest.raises(ValueError, match="The 'n_jobs' parameter of ReferencePool"):
        ReferencePool(LR, 2, n_jobs=0).fit(X, y)
    with pytest.raises(ValueError, match="The 'cache_dir' parameter of ReferencePool"):
        ReferencePool(CallableRecipe(counting_train), 2, cache_dir="x").fit(X, y)
    with pytest.raises(NotFittedError):
        ReferencePool(LR, 2).map(proba, X)


# ----------------------------------------------------------------- determinism


def test_same_seed_same_everything_with_one_or_two_workers() -> None:
    X, y = _data()
    one = ReferencePool(LR, 4, n_jobs=1, random_state=7).fit(X, y)
    two = ReferencePool(LR, 4, n_jobs=2, random_state=7).fit(X, y)
    np.testing.assert_array_equal(one.in_mask_, two.in_mask_)
    np.testing.assert_array_equal(one.seeds_, two.seeds_)
    for a, b in zip(one.models_, two.models_, strict=True):
        np.testing.assert_array_equal(a.coef_, b.coef_)
    out1 = one.map(proba, X)
    np.testing.assert_array_equal(out1, two.map(proba, X))
    np.testing.assert_array_equal(out1, one.map(proba, X))
    assert out1.shape == (4, 300, 10)
    # A different seed gives a different pool.
    other = ReferencePool(LR, 4, random_state=8).fit(X, y)
    assert not np.array_equal(other.in_mask_, one.in_mask_)


def test_seed_sequence_and_generator_random_state_are_repeatable() -> None:
    X, y = _data(100)
    ss = np.random.SeedSequence(3)
    a = ReferencePool(LR, 2, random_state=ss).fit(X, y)
    b = ReferencePool(LR, 2, random_state=ss).fit(X, y)  # fit does not consume ss
    np.testing.assert_array_equal(a.in_mask_, b.in_mask_)
    c = ReferencePool(LR, 2, random_state=np.random.default_rng(4)).fit(X, y)
    d = ReferencePool(LR, 2, random_state=np.random.default_rng(4)).fit(X, y)
    np.testing.assert_array_equal(c.seeds_, d.seeds_)


def test_map_unstacked_returns_list_in_model_order() -> None:
    X, y = _data(100)
    pool = ReferencePool(LR, 3, random_state=0).fit(X, y)
    out = pool.map(lambda m, X, y: (m.random_state, len(X)), X, stack=False)
    assert out == [(int(s), 100) for s in pool.seeds_]


# ----------------------------------------------------------------- cache


def test_cache_reused_only_for_the_same_pool(tmp_path: Path) -> None:
    X, y = _data(200)
    control = tmp_path / "control"
    control.mkdir()
    recipe = _counting_recipe(control)

    def fit(**kw):
        args = {"recipe": recipe, "n_models": 2, "random_state": 0, "cache_dir": tmp_path,
                "X": X, "y": y}
        args.update(kw)
        data = (args.pop("X"), args.pop("y"))
        return ReferencePool(**args).fit(*data)

    first = fit()
    assert first.n_trained_ == 2
    again = fit()
    assert again.n_trained_ == 0 and again.cache_path_ == first.cache_path_
    np.testing.assert_array_equal(first.map(proba, X), again.map(proba, X))

    X2 = X.copy()
    X2[0, 0] += 1.0
    y2 = y.copy()
    y2[0] = (y2[0] + 1) % 10
    other_recipe = CallableRecipe(counting_train, fn_kwargs={"control_dir": str(control)},
                                  save=save_npz, load=load_npz, suffix=".npz", version="2")
    variants = [
        fit(X=X2),                       # another dataset (one value)
        fit(y=y2),                       # other labels
        fit(recipe=other_recipe),        # another recipe
        fit(random_state=1),             # another seed
        fit(n_models=3),                 # another pool size
        fit(mode="offline"),             # another mode (same rows here, other key)
        fit(train_fraction=0.4),         # another fraction
    ]
    for pool in variants:
        assert pool.n_trained_ == pool.n_models
        assert pool.cache_path_ != first.cache_path_
    assert len({p.cache_path_ for p in variants}) == len(variants)
    assert sum(_counts(control).values()) == 2 + sum(p.n_models for p in variants)


def test_sklearn_cache_roundtrip_matches_uncached_pool(tmp_path: Path) -> None:
    X, y = _data(200)
    plain = ReferencePool(LR, 3, random_state=5).fit(X, y)
    cached = ReferencePool(LR, 3, random_state=5, cache_dir=tmp_path).fit(X, y)
    reloaded = ReferencePool(LR, 3, random_state=5, cache_dir=tmp_path).fit(X, y)
    assert reloaded.n_trained_ == 0
    expected = plain.map(proba, X)
    np.testing.assert_array_equal(cached.map(proba, X), expected)
    np.testing.assert_array_equal(reloaded.map(proba, X), expected)
    assert repr(reloaded.models_).startswith("<3 reference models cached in")
    files = sorted(p.name for p in reloaded.cache_path_.iterdir())
    assert files == ["in_mask.npy", "model-00000.json", "model-00000.skops",
                     "model-00001.json", "model-00001.skops", "model-00002.json",
                     "model-00002.skops", "models.lock", "pool.json"]
    manifest = json.loads((reloaded.cache_path_ / "model-00001.json").read_text())
    assert manifest["seed"] == int(plain.seeds_[1])
    assert manifest["n_train"] == int(plain.in_mask_[1].sum())
    np.testing.assert_array_equal(np.load(reloaded.cache_path_ / "in_mask.npy"), plain.in_mask_)


def test_tampered_model_file_is_retrained_with_warning(tmp_path: Path) -> None:
    X, y = _data(200)
    pool = ReferencePool(LR, 3, random_state=5, cache_dir=tmp_path).fit(X, y)
    expected = pool.map(proba, X)
    target = pool.cache_path_ / "model-00001.skops"
    target.write_bytes(target.read_bytes() + b"junk")
    with pytest.warns(PrivauditWarning, match="model 1 .* does not match its model file"):
        again = ReferencePool(LR, 3, random_state=5, cache_dir=tmp_path).fit(X, y)
    assert again.n_trained_ == 1
    np.testing.assert_array_equal(again.map(proba, X), expected)


def test_cache_without_seed_warns_it_cannot_resume(tmp_path: Path) -> None:
    X, y = _data(100)
    with pytest.warns(PrivauditWarning, match="cannot resume"):
        ReferencePool(LR, 2, cache_dir=tmp_path).fit(X, y)


@pytest.mark.parametrize("crash_jobs", [1, 2])
def test_interrupted_pool_resumes_without_retraining(tmp_path: Path, crash_jobs: int) -> None:
    X, y = _data(200)
    n_models, crash_at = 6, 3
    # Uninterrupted run (no cache) to compare against.
    ref_control = tmp_path / "ref"
    ref_control.mkdir()
    reference = ReferencePool(_counting_recipe(ref_control), n_models, random_state=3).fit(X, y)
    expected = reference.map(proba, X)

    control = tmp_path / "control"
    control.mkdir()
    cache = tmp_path / "cache"
    crash_seed = int(reference.seeds_[crash_at])
    (control / f"fail-{crash_seed}").touch()
    pool = ReferencePool(_counting_recipe(control), n_models, random_state=3,
                         n_jobs=crash_jobs, cache_dir=cache)
    with pytest.raises(RuntimeError, match="simulated crash"):
        pool.fit(X, y)
    assert not hasattr(pool, "models_")  # no partial result passed off as complete
    finished = _counts(control)
    assert crash_seed not in finished
    if crash_jobs == 1:
        # Sequential: exactly the models before the crash were trained and cached.
        assert set(finished) == {int(s) for s in reference.seeds_[:crash_at]}
    cached = sorted(p.name for p in next(cache.iterdir()).glob("model-*.json"))
    assert len(cached) == len(finished) >= 1

    (control / f"fail-{crash_seed}").unlink()
    resumed = ReferencePool(_counting_recipe(control), n_models, random_state=3, n_jobs=2,
                            cache_dir=cache).fit(X, y)
    assert resumed.n_trained_ == n_models - len(finished)
    counts = _counts(control)
    assert set(counts) == {int(s) for s in reference.seeds_}
    assert all(c == 1 for c in counts.values())  # nothing trained twice
    np.testing.assert_array_equal(resumed.in_mask_, reference.in_mask_)
    np.testing.assert_array_equal(resumed.map(proba, X), expected)


def test_stray_temporary_files_are_ignored(tmp_path: Path) -> None:
    X, y = _data(100)
    pool = ReferencePool(LR, 2, random_state=0, cache_dir=tmp_path).fit(X, y)
    # What a kill during a write leaves behind: a temporary file and no manifest.
    (pool.cache_path_ / ".model-00001.deadbeef.tmp.skops").write_bytes(b"partial")
    os.remove(pool.cache_path_ / "model-00001.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivauditWarning)
        again = ReferencePool(LR, 2, random_state=0, cache_dir=tmp_path).fit(X, y)
    assert again.n_trained_ == 1


def test_sklearn_recipe_object_and_estimator_share_the_cache(tmp_path: Path) -> None:
    X, y = _data(100)
    a = ReferencePool(LR, 2, random_state=0, cache_dir=tmp_path).fit(X, y)
    b = ReferencePool(SklearnRecipe(LR), 2, random_state=0, cache_dir=tmp_path).fit(X, y)
    assert b.n_trained_ == 0 and a.cache_path_ == b.cache_path_


def test_run_killed_mid_pool_resumes(tmp_path: Path) -> None:
    # A real kill -9 of the process running the pool (no exception handler runs).
    X, y = _data(200)
    control = tmp_path / "control"
    control.mkdir()
    cache = tmp_path / "cache"
    plan = ReferencePool(_counting_recipe(tmp_path), 5, random_state=9).fit(X[:20], y[:20])
    seeds = [int(s) for s in plan.seeds_]  # seeds do not depend on the data
    (control / f"kill-{seeds[2]}").touch()
    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from sklearn.datasets import load_digits
from privaudit.training import CallableRecipe, ReferencePool
from {counting_train.__module__} import counting_train, save_npz, load_npz, _data
X, y = _data(200)
recipe = CallableRecipe(counting_train, fn_kwargs={{"control_dir": {str(control)!r}}},
                        save=save_npz, load=load_npz, suffix=".npz")
ReferencePool(recipe, 5, random_state=9, cache_dir={str(cache)!r}).fit(X, y)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert set(_counts(control)) == set(seeds[:2])

    (control / f"kill-{seeds[2]}").unlink()
    resumed = ReferencePool(_counting_recipe(control), 5, random_state=9,
                            cache_dir=cache).fit(X, y)
    assert resumed.n_trained_ == 3
    assert all(c == 1 for c in _counts(control).values())
    uninterrupted = ReferencePool(_counting_recipe(tmp_path), 5, random_state=9).fit(X, y)
    np.testing.assert_array_equal(resumed.map(proba, X), uninterrupted.map(proba, X))
