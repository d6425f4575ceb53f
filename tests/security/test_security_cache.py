"""The reference-model cache: a rewritten cached model never runs code when it is read.

Whoever can write the cache directory can also rewrite the manifest's hash, so the hash is
no defence: cached scikit-learn models load through the same allow-list as a user's model
(``load_sklearn_model``), and torch models are safetensors (tensors and text only).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from skops_payloads import call_node, hide_in_param, ref_node

from privaudit.targets import UntrustedTypesError
from privaudit.training import ReferencePool, SklearnRecipe

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = (X[:, 0] > 0).astype(int)


def proba(model, X, y):
    return model.predict_proba(X)[:, 1]


def _rewrite(model_file: Path, payload: dict) -> None:
    """Hide ``payload`` in the cached model and fix its manifest hash, as an attacker can."""
    hide_in_param(model_file, payload)
    manifest = model_file.with_suffix(".json")
    info = json.loads(manifest.read_text())
    info["model_sha256"] = hashlib.sha256(model_file.read_bytes()).hexdigest()
    manifest.write_text(json.dumps(info))


@pytest.mark.parametrize("target", ["builtins.exec", "sklearn.utils._testing.check_output",
                                    "os.system", "numpy.testing.runstring"])
def test_a_rewritten_cache_file_never_executes(tmp_path, target):
    marker = tmp_path / "PWNED"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    args = {"builtins.exec": (code,), "numpy.testing.runstring": (code, {}),
            "os.system": (f"touch {marker}",),
            "sklearn.utils._testing.check_output": (["sh", "-c", f"touch {marker}"],)}[target]
    cache = tmp_path / "cache"
    first = ReferencePool(LogisticRegression(), 2, random_state=0, cache_dir=cache).fit(X, Y)
    model_file = first.cache_path_ / "model-00000.skops"
    _rewrite(model_file, call_node(target, *args, loader="ConstructorFromReduceNode"))

    again = ReferencePool(LogisticRegression(), 2, random_state=0, cache_dir=cache).fit(X, Y)
    assert again.n_trained_ == 0  # the forged manifest is believed...
    with pytest.raises(UntrustedTypesError, match="Delete the file") as info:
        again.map(proba, X)  # ...but the model is refused when read
    assert target in info.value.types
    assert str(model_file) in str(info.value)
    assert not marker.exists()


def test_the_recipe_loader_is_the_user_model_loader(tmp_path):
    # The old loader trusted whole packages (builtins, sklearn.*): both are refused now.
    recipe = SklearnRecipe(LogisticRegression())
    path = tmp_path / "m.skops"
    recipe.save(LogisticRegression().fit(X, Y), path)
    np.testing.assert_array_equal(recipe.load(path).coef_.shape, (1, 3))
    for target in ("builtins.exec", "sklearn.utils._testing.check_output"):
        hide_in_param(path, ref_node(target))
        with pytest.raises(UntrustedTypesError, match="nothing was executed"):
            recipe.load(path)


class MyLogistic(LogisticRegression):
    """A user's own estimator class: the cache must trust exactly it, nothing more."""


def test_a_user_estimator_class_still_caches_and_reloads(tmp_path):
    pool = ReferencePool(MyLogistic(), 2, random_state=0, cache_dir=tmp_path).fit(X, Y)
    again = ReferencePool(MyLogistic(), 2, random_state=0, cache_dir=tmp_path).fit(X, Y)
    assert again.n_trained_ == 0
    np.testing.assert_array_equal(again.map(proba, X), pool.map(proba, X))
