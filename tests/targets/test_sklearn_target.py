import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from privaudit.exceptions import NotFittedError
from privaudit.targets import (
    ModelOutputs,
    QueryBudgetExceededError,
    SklearnTarget,
    Target,
    UntrustedTypesError,
    as_target,
    load_sklearn_model,
    save_sklearn_model,
)


@pytest.fixture(scope="module")
def clf_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    # String labels given in non-sorted order: classes_ is sorted, columns follow it.
    names = np.array(["zebra", "ant", "moose"])
    y = names[np.argmax(X[:, :3] + rng.normal(scale=0.5, size=(60, 3)), axis=1)]
    model = LogisticRegression(max_iter=500).fit(X, y)
    return X, y, model


def test_probabilities_follow_classes_order(clf_data):
    X, y, model = clf_data
    target = SklearnTarget(model)
    out = target.query(X, y)
    assert list(target.classes_) == ["ant", "moose", "zebra"]
    assert target.n_classes == 3
    np.testing.assert_allclose(out.probabilities, model.predict_proba(X))
    # Slow reference: look each label up in classes_ by hand.
    classes = list(model.classes_)
    expected_conf = [model.predict_proba(X[i:i + 1])[0, classes.index(y[i])]
                     for i in range(len(y))]
    np.testing.assert_allclose(out.signal("true_class_confidence"), expected_conf)
    np.testing.assert_array_equal(out.y_index, [classes.index(v) for v in y])
    np.testing.assert_allclose(out.loss, -np.log(expected_conf))
    assert out.loss_name == "cross_entropy"
    np.testing.assert_array_equal(out.predictions, model.predict(X))


def test_unknown_label_is_a_clear_error(clf_data):
    X, y, model = clf_data
    target = SklearnTarget(model)
    y_bad = y.astype(object)
    y_bad[3] = "giraffe"
    with pytest.raises(ValueError, match=r"'y' parameter of SklearnTarget.query .*classes_.*"
                                         r"giraffe"):
        target.query(X, y_bad)
    assert target.n_queries == 0  # validated before any query is spent


def test_unfitted_estimator_raises_not_fitted():
    with pytest.raises(NotFittedError, match="not fitted"):
        SklearnTarget(LogisticRegression())
    with pytest.raises(ValueError):  # NotFittedError is a ValueError too
        as_target(make_pipeline(StandardScaler(), LogisticRegression()))


def test_chunked_query_equals_unchunked(clf_data):
    X, y, model = clf_data
    small = SklearnTarget(model, batch_size=7).query(X, y)
    whole = SklearnTarget(model, batch_size=10_000).query(X, y)
    np.testing.assert_array_equal(small.probabilities, whole.probabilities)
    np.testing.assert_array_equal(small.loss, whole.loss)
    # DataFrames are sliced by position.
    frame = pd.DataFrame(X, columns=list("abcd"))
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(frame, y)
    a = SklearnTarget(pipe, batch_size=11).query(frame, y)
    np.testing.assert_allclose(a.probabilities, pipe.predict_proba(frame))


def test_regressor_target():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=50)
    model = LinearRegression().fit(X, y)
    target = as_target(model, name="lin", batch_size=8)
    assert isinstance(target, Target)
    assert (target.task, target.name, target.classes_, target.n_classes) == (
        "regression", "lin", None, None
    )
    out = target.query(X, y)
    np.testing.assert_allclose(out.predictions, model.predict(X))
    np.testing.assert_allclose(out.loss, (y - model.predict(X)) ** 2)
    assert out.loss_name == "squared_error"
    np.testing.assert_allclose(out.signal("residual"), y - model.predict(X))
    assert target.n_queries == 50


def test_query_counter_and_budget(clf_data):
    X, y, model = clf_data
    target = SklearnTarget(model, max_queries=50)
    target.query(X[:30], y[:30])
    assert target.n_queries == 30
    with pytest.raises(QueryBudgetExceededError, match="max_queries=50"):
        target.query(X[:30], y[:30])
    assert target.n_queries == 30
    target.reset_queries()
    target.query(X[:50], y[:50])
    assert target.n_queries == 50


def test_wrong_inputs(clf_data):
    X, y, model = clf_data
    target = SklearnTarget(model)
    with pytest.raises(ValueError, match=r"'y' parameter of SklearnTarget.query"):
        target.query(X, y[:-1])
    with pytest.raises(TypeError, match="'estimator' parameter of SklearnTarget"):
        SklearnTarget(LinearSVC().fit(X, y))  # no predict_proba
    with pytest.raises(TypeError, match="'obj' parameter of as_target"):
        as_target(lambda x: x)
    with pytest.raises(ValueError, match="'batch_size' parameter of SklearnTarget"):
        SklearnTarget(model, batch_size=0)
    with pytest.raises(ValueError, match="'task' parameter of SklearnTarget"):
        SklearnTarget(model, task="ranking")


def test_as_target_passes_targets_through(clf_data):
    _, _, model = clf_data
    target = SklearnTarget(model, name="m")
    assert as_target(target) is target
    assert isinstance(target, Target)
    assert not isinstance(model, Target)
    assert "name='m'" in repr(target)


def test_model_outputs_cache_and_subset(clf_data):
    X, y, model = clf_data
    out = SklearnTarget(model).query(X, y)
    a = out.signal("modified_entropy")
    assert out.signal("modified_entropy") is a  # computed once
    assert not a.flags.writeable
    sub = out.subset([3, 1])
    np.testing.assert_array_equal(sub.signal("modified_entropy"), a[[3, 1]])
    np.testing.assert_array_equal(sub.y, y[[3, 1]])
    assert len(sub) == 2 and sub.n_records == 2
    with pytest.raises(ValueError, match=r"'name' parameter of ModelOutputs.signal"):
        out.signal("squared_error")


def test_label_only_outputs():
    out = ModelOutputs.from_labels(
        y=np.array([0, 1, 1]), predicted_labels=np.array([0, 0, 1]), classes=[0, 1]
    )
    np.testing.assert_array_equal(out.loss, [0.0, 1.0, 0.0])
    assert out.loss_name == "zero_one"
    np.testing.assert_array_equal(out.signal("correctness"), [1.0, 0.0, 1.0])
    assert out.available_signals == ("correctness",)


def test_skops_round_trip(tmp_path, clf_data):
    X, _, model = clf_data
    path = tmp_path / "model.skops"
    save_sklearn_model(model, path)
    loaded = load_sklearn_model(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def _shift(X):
    # A user function inside a pipeline: loading it would run code the file names.
    return X + 1.0


def test_skops_refuses_untrusted_types(tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    model = make_pipeline(FunctionTransformer(_shift), LogisticRegression()).fit(X, y)
    path = tmp_path / "pipe.skops"
    save_sklearn_model(model, path)
    with pytest.raises(UntrustedTypesError, match="_shift") as info:
        load_sklearn_model(path)
    assert len(info.value.types) == 1 and info.value.types[0].endswith("_shift")
    loaded = load_sklearn_model(path, trusted=info.value.types)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_skops_trusts_scikit_learn_own_types(tmp_path):
    # AdamOptimizer (an MLP's state) and Tree are scikit-learn data containers: no code runs.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    model = MLPRegressor(hidden_layer_sizes=(4,), max_iter=20, random_state=0)
    with pytest.warns(Warning):  # ConvergenceWarning: 20 iterations is the point here
        model.fit(X, X[:, 0])
    path = tmp_path / "mlp.skops"
    save_sklearn_model(model, path)
    loaded = load_sklearn_model(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_load_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="'path' parameter of load_sklearn_model"):
        load_sklearn_model(tmp_path / "missing.skops")
    with pytest.raises(TypeError, match="'trusted' parameter of load_sklearn_model"):
        load_sklearn_model(tmp_path / "missing.skops", trusted="everything")
