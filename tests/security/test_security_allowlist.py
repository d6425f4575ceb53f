"""The skops allow-list of load_sklearn_model: exhaustive for scikit-learn, never too wide.

Run this file as a script to print the helper types and function references that fitted
scikit-learn estimators contain (the lists written in ``privaudit/targets/_skops_types.py``):
``python tests/security/test_security_allowlist.py``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
from typing import Any

import numpy as np
import pytest
import skops.io as sio
from sklearn.utils import all_estimators

from privaudit.exceptions import PrivauditWarning
from privaudit.targets import (
    _io,
    load_sklearn_model,
    save_sklearn_model,
    trusted_sklearn_types,
)
from privaudit.targets._io import is_forbidden_type
from privaudit.targets._skops_types import FUNCTION_REFERENCES, HELPER_CLASSES

_RNG = np.random.default_rng(0)
X = np.abs(_RNG.normal(size=(40, 4))) + 0.1
Y_CLASS = np.arange(40) % 3
Y_BIN = np.arange(40) % 2
Y_REG = X @ np.array([1.0, 2.0, 0.0, -1.0]) + 3.0
Y_MULTI = np.c_[Y_BIN, 1 - Y_BIN]
TEXT = ["a cat sat", "a dog ran", "the cat ran", "the dog sat"] * 10


def _inner(name: str) -> Any:
    from sklearn.linear_model import LogisticRegression, Ridge

    return Ridge() if "Regress" in name else LogisticRegression(max_iter=200)


def _build(name: str, cls: type) -> Any:
    """An instance of an estimator class of ``all_estimators()`` with its required args."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.preprocessing import StandardScaler

    special: dict[str, dict[str, Any]] = {
        "ColumnTransformer": {"transformers": [("s", StandardScaler(), [0, 1])]},
        "FeatureUnion": {"transformer_list": [("p", PCA(1))]},
        "Pipeline": {"steps": [("m", LogisticRegression())]},
        "SparseCoder": {"dictionary": np.eye(4)},
        "GridSearchCV": {"estimator": LogisticRegression(), "param_grid": {"C": [1.0, 2.0]},
                         "cv": 2},
        "RandomizedSearchCV": {"estimator": LogisticRegression(), "n_iter": 2, "cv": 2,
                               "param_distributions": {"C": [1.0, 2.0]}},
        "GaussianRandomProjection": {"n_components": 2},
        "SparseRandomProjection": {"n_components": 2},
        "FrozenEstimator": {"estimator": LogisticRegression().fit(X, Y_BIN)},
        "StackingClassifier": {"estimators": [("a", LogisticRegression())], "cv": 2},
        "StackingRegressor": {"estimators": [("a", Ridge())], "cv": 2},
        # Fewer iterations, trees and folds than the defaults: the same types in the fitted
        # model, a quarter of the file's fitting time (TSNE alone took 4 s).
        "TSNE": {"max_iter": 250},
        "GradientBoostingClassifier": {"n_estimators": 5},
        "GradientBoostingRegressor": {"n_estimators": 5},
        "HistGradientBoostingClassifier": {"max_iter": 5},
        "HistGradientBoostingRegressor": {"max_iter": 5},
        "LogisticRegressionCV": {"Cs": 2, "cv": 2},
        "SequentialFeatureSelector": {"estimator": LogisticRegression(), "cv": 2},
        "TunedThresholdClassifierCV": {"estimator": LogisticRegression(), "cv": 2},
    }
    if name in special:
        return _seeded(cls(**special[name]))
    sig = inspect.signature(cls)
    kw: dict[str, Any] = {}
    for p in ("estimator", "base_estimator"):
        if p in sig.parameters and sig.parameters[p].default is inspect.Parameter.empty:
            kw[p] = _inner(name)
    if "estimators" in sig.parameters and \
            sig.parameters["estimators"].default is inspect.Parameter.empty:
        kw["estimators"] = [("a", _inner(name)), ("b", _inner(name))]
    if name == "SelfTrainingClassifier":
        kw["estimator"] = LogisticRegression()
    return _seeded(cls(**kw))


def _seeded(est: Any) -> Any:
    """Fix every seed, so that the types a fit produces are the same on every run."""
    seeds = {k: 0 for k in est.get_params(deep=True) if k.endswith("random_state")}
    if seeds:
        est.set_params(**seeds)
    return est


def _fit(est: Any) -> Any:
    """Fit on the first tiny dataset the estimator accepts."""
    name = type(est).__name__
    if name in ("CountVectorizer", "TfidfVectorizer", "HashingVectorizer"):
        return est.fit(TEXT)
    if name == "DictVectorizer":
        return est.fit([{"a": 1.0, "b": 2.0}, {"a": 3.0}])
    if name in ("LabelBinarizer", "LabelEncoder", "MultiLabelBinarizer"):
        return est.fit(Y_CLASS if name != "MultiLabelBinarizer" else [[1, 2], [3]])
    if name == "IsotonicRegression":
        return est.fit(X[:, 0], Y_REG)
    if name == "KernelCenterer":
        return est.fit(X @ X.T)
    error: Exception | None = None
    for y in (Y_CLASS, Y_BIN, Y_REG, Y_MULTI, None):
        try:
            return est.fit(X, y) if y is not None else est.fit(X)
        except Exception as exc:
            error = exc
    raise RuntimeError(f"{name} fits none of the tiny datasets") from error


def _variants() -> list[Any]:  # an estimator, or (estimator, y) to fit it on y
    """Estimators whose non-default settings hold other helper types."""
    from sklearn import (
        calibration,
        cluster,
        compose,
        ensemble,
        feature_selection,
        gaussian_process,
        model_selection,
        multiclass,
        neighbors,
        neural_network,
        pipeline,
        preprocessing,
    )
    from sklearn import linear_model as lm

    out: list[Any] = []
    for solver in ("sgd", "adam", "lbfgs"):
        out.append(neural_network.MLPClassifier((3,), solver=solver, max_iter=5))
    for algorithm in ("ball_tree", "kd_tree", "brute"):
        out.append(neighbors.KNeighborsClassifier(3, algorithm=algorithm))
    for loss in ("squared_error", "absolute_error", "huber", "quantile"):
        out.append(ensemble.GradientBoostingRegressor(loss=loss, n_estimators=2))
    out.append(ensemble.GradientBoostingClassifier(loss="exponential", n_estimators=2))
    for loss in ("absolute_error", "gamma", "poisson"):
        out.append(ensemble.HistGradientBoostingRegressor(loss=loss, max_iter=2))
    out.append(ensemble.HistGradientBoostingRegressor(loss="quantile", quantile=0.5,
                                                      max_iter=2))
    for power in (0, 1, 1.5, 2, 3):
        for link in ("auto", "identity", "log"):
            out.append(lm.TweedieRegressor(power=power, link=link))
    for method in ("sigmoid", "isotonic", "temperature"):
        out.append(calibration.CalibratedClassifierCV(lm.LogisticRegression(), method=method,
                                                      cv=2))
    out += [gaussian_process.GaussianProcessClassifier(multi_class="one_vs_one"),
            cluster.BisectingKMeans(2, algorithm="elkan")]
    for func in (feature_selection.chi2, feature_selection.f_regression,
                 feature_selection.mutual_info_classif, feature_selection.r_regression,
                 feature_selection.mutual_info_regression):
        out.append(feature_selection.SelectKBest(func, k=2))
    for scoring in ("accuracy", "roc_auc_ovr", "neg_log_loss", "f1_macro"):
        out.append(model_selection.GridSearchCV(lm.LogisticRegression(), {"C": [1.0, 2.0]},
                                                scoring=scoring, cv=2))
    out.append(pipeline.make_pipeline(
        compose.ColumnTransformer([("s", preprocessing.StandardScaler(), [0, 1]),
                                   ("m", preprocessing.MinMaxScaler(), [2, 3])]),
        ensemble.HistGradientBoostingClassifier(max_iter=3)))
    out.append(ensemble.RandomForestClassifier(5, random_state=0))
    # A label column that is constant is predicted by multiclass._ConstantPredictor.
    out.append((multiclass.OneVsRestClassifier(lm.LogisticRegression()),
                np.c_[Y_BIN, np.ones_like(Y_BIN)]))
    return out


def _estimator_classes() -> list[tuple[str, type]]:
    return [(n, c) for n, c in all_estimators() if c.__module__.startswith("sklearn.")]


# Estimators whose predictions on the training data are not a function of the saved state
# alone (none so far); kept as a named exception list rather than a silent skip.
_NO_REPEATABLE_PREDICT: set[str] = set()

# skops cannot write these at all (Birch holds a Cython object skops refuses to dump).
_UNSUPPORTED_BY_SKOPS = {"Birch"}


def _variant_name(i: int, item: Any) -> str:
    est = item[0] if isinstance(item, tuple) else item
    return f"{type(est).__name__}-variant{i}"


@functools.lru_cache(maxsize=1)
def _fitted_examples() -> dict[str, Any]:
    """Every estimator of all_estimators() (and the variants) fitted on tiny data."""
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cls in _estimator_classes():
            if name not in _UNSUPPORTED_BY_SKOPS:
                out[name] = _fit(_build(name, cls))
        for i, item in enumerate(_variants()):
            est, y = item if isinstance(item, tuple) else (_seeded(item), None)
            out[_variant_name(i, est)] = _fit(est) if y is None else est.fit(X, y)
    return out


@functools.cache
def _dumped(name: str) -> bytes:
    return sio.dumps(_fitted_examples()[name])


def _untrusted_in(data: bytes) -> list[str]:
    return list(sio.get_untrusted_types(data=data))


def _family(module: str, base_names: tuple[str, ...]) -> set[str]:
    """Classes of ``module`` subclassing any of ``base_names`` (defined in that module)."""
    mod = importlib.import_module(module)
    bases = tuple(getattr(mod, b) for b in base_names)
    return {
        f"{obj.__module__}.{obj.__qualname__}"
        for obj in vars(mod).values()
        if inspect.isclass(obj) and issubclass(obj, bases) and obj.__module__ == module
    }


def _sparse_family() -> set[str]:
    import scipy.sparse as sp

    return {
        f"{obj.__module__}.{obj.__qualname__}"
        for obj in vars(sp).values()
        if inspect.isclass(obj) and issubclass(obj, sp._base._spbase)
    }


def _families() -> set[str]:
    """Helper-class families a fitted model may hold, beyond those the fits above meet.

    ``PyFuncDistance*`` is left out on purpose: it wraps a user's Python function.
    """
    metrics = _family("sklearn.metrics._dist_metrics", ("DistanceMetric64", "DistanceMetric32"))
    return (
        {m for m in metrics if ".PyFuncDistance" not in m}
        | _sparse_family()
        | _family("sklearn.gaussian_process.kernels", ("Kernel",))
        | _family("sklearn._loss.loss", ("BaseLoss",))
        | _family("sklearn._loss.link", ("BaseLink", "Interval"))
        | _family("sklearn.model_selection._split", ("BaseCrossValidator", "BaseShuffleSplit"))
    )


def discover() -> tuple[set[str], set[str]]:
    """(helper classes, function references) found in fitted scikit-learn models."""
    from sklearn.metrics import get_scorer, get_scorer_names

    found: set[str] = set()
    for name in _fitted_examples():
        found.update(_untrusted_in(_dumped(name)))
    for scoring in get_scorer_names():
        found.update(_untrusted_in(sio.dumps(get_scorer(scoring))))
    classes = {t for t in found | _families() if inspect.isclass(_resolve(t))}
    estimators = {f"{c.__module__}.{c.__qualname__}" for _, c in _estimator_classes()}
    return classes - estimators, found - classes - estimators


def _resolve(name: str) -> Any:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


_EXAMPLE_NAMES = [n for n, _ in _estimator_classes() if n not in _UNSUPPORTED_BY_SKOPS] + [
    _variant_name(i, item) for i, item in enumerate(_variants())
]


if __name__ == "__main__":  # pragma: no cover - regenerates the lists for _io.py
    helper, functions = discover()
    print("_HELPER_CLASSES = (")
    for t in sorted(helper):
        print(f'    "{t}",')
    print(")\n_FUNCTION_REFERENCES = (")
    for t in sorted(functions):
        print(f'    "{t}",')
    print(")")


# ------------------------------------------------------------------------------- tests


def test_lists_match_what_fitted_estimators_contain():
    # A new scikit-learn release that adds (or drops) a helper type fails here rather than
    # being trusted by a name prefix: rerun this file as a script and update _skops_types.
    helper, functions = discover()
    assert helper == set(HELPER_CLASSES), (
        f"missing: {sorted(helper - set(HELPER_CLASSES))}, "
        f"stale: {sorted(set(HELPER_CLASSES) - helper)}"
    )
    assert functions == set(FUNCTION_REFERENCES), (
        f"missing: {sorted(functions - set(FUNCTION_REFERENCES))}, "
        f"stale: {sorted(set(FUNCTION_REFERENCES) - functions)}"
    )


def test_every_trusted_class_is_a_class_and_no_name_is_forbidden():
    classes = _io._default_classes()
    assert classes >= set(HELPER_CLASSES)
    for name in classes:
        assert inspect.isclass(_resolve(name)), name
    for name in FUNCTION_REFERENCES:
        obj = _resolve(name)
        assert callable(obj) and not inspect.isclass(obj), name
    for name in trusted_sklearn_types():
        assert not is_forbidden_type(name), name
        assert name.split(".")[0] in {"sklearn", "numpy", "scipy"}, name
    assert not any("._testing." in n or ".testing." in n for n in trusted_sklearn_types())


@pytest.mark.parametrize(
    "name", ["builtins.exec", "builtins.eval", "os.system", "subprocess.Popen",
             "operator.attrgetter", "functools.partial", "importlib.import_module",
             "runpy.run_path", "sklearn.utils._testing.check_output", "numpy.testing.runstring",
             "posix.system", "pickle.loads", "sys.modules"],
)
def test_forbidden_names(name):
    assert is_forbidden_type(name)
    assert name not in trusted_sklearn_types()


def test_no_function_among_the_trusted_classes():
    functions = [n for n in _io._default_classes() if inspect.isroutine(_resolve(n))]
    assert functions == []


@pytest.mark.parametrize("name", sorted(_EXAMPLE_NAMES))
def test_every_fitted_estimator_round_trips(tmp_path, name):
    path = tmp_path / "model.skops"
    path.write_bytes(_dumped(name))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivauditWarning)  # nothing trusted by the user
        loaded = load_sklearn_model(path)
    original = _fitted_examples()[name]
    assert type(loaded) is type(original)
    if hasattr(original, "predict") and name not in _NO_REPEATABLE_PREDICT:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                expected = original.predict(X)
            except Exception:
                return
            np.testing.assert_array_equal(loaded.predict(X), expected)


def test_save_then_load_with_the_public_pair(tmp_path):
    from sklearn.neural_network import MLPClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MLPClassifier((4,), solver="sgd", max_iter=5, random_state=0).fit(X, Y_BIN)
    save_sklearn_model(model, tmp_path / "m.skops")
    loaded = load_sklearn_model(tmp_path / "m.skops")
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
