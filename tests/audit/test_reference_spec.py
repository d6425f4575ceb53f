"""ReferenceSpec: one parameter object for the reference models; old names still work."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import privaudit
from privaudit.training import LocalExecutor, ReferencePool, ReferenceSpec


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    model = LogisticRegression(max_iter=500).fit(X[:100], y[:100])
    labels = np.r_[np.ones(100, dtype=np.int8), np.zeros(100, dtype=np.int8)]
    return model, X[:200], y[:200], labels, (X[200:400], y[200:400])


def _audit(data, tmp_path=None, **kwargs):
    model, X, y, labels, population = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privaudit.FidelityWarning)
        return privaudit.audit_model(model, X, y, labels, population=population,
                                     attacks=["lira-offline"], slices=False,
                                     results_dir=tmp_path, **kwargs)


def test_spec_and_shortcuts_give_the_same_result_and_key(data, tmp_path):
    with_spec = _audit(data, reference=ReferenceSpec(n_models=4, mode="offline"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # shortcuts do not warn
        flat = _audit(data, n_reference_models=4, reference_mode="offline")
    np.testing.assert_array_equal(with_spec[0].scores, flat[0].scores)
    assert with_spec[0].audit.key == flat[0].audit.key


def test_renamed_keywords_warn_and_keep_the_key(data):
    new = _audit(data, reference=ReferenceSpec(n_models=4, train_fraction=0.3))
    with pytest.warns(DeprecationWarning, match="train_fraction"):
        old = _audit(data, n_reference_models=4, reference_fraction=0.3)
    assert new[0].audit.key == old[0].audit.key
    np.testing.assert_array_equal(new[0].scores, old[0].scores)
    with pytest.warns(DeprecationWarning, match="to_target"):
        _audit(data, n_reference_models=4, wrap=privaudit.targets.as_target)


def test_executor_as_an_object(data):
    by_name = _audit(data, reference=ReferenceSpec(n_models=4))
    by_object = _audit(data, reference=ReferenceSpec(n_models=4),
                       executor=LocalExecutor(n_jobs=1))
    np.testing.assert_array_equal(by_name[0].scores, by_object[0].scores)


@pytest.mark.parametrize("kwargs,message", [
    ({"n_models": 0}, "'n_models' parameter of ReferenceSpec"),
    ({"mode": "sideways"}, "'mode' parameter of ReferenceSpec"),
    ({"train_fraction": 1.5}, "'train_fraction' parameter of ReferenceSpec"),
    ({"to_target": 3}, "'to_target' parameter of ReferenceSpec"),
])
def test_spec_checks_its_fields(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        ReferenceSpec(**kwargs)


def test_mixing_a_spec_and_flat_keywords_is_refused(data):
    with pytest.raises(ValueError, match=r"'n_reference_models'.*left out when 'reference'"):
        _audit(data, reference=ReferenceSpec(), n_reference_models=4)
    with pytest.raises(TypeError, match="'reference' parameter of audit_model"):
        _audit(data, reference={"n_models": 4})
    with pytest.raises(ValueError, match="'n_reference_models' parameter of audit_model"):
        _audit(data, n_reference_models=0)


def test_pool_old_name_warns_and_both_names_are_refused():
    with pytest.warns(DeprecationWarning, match="train_fraction"):
        pool = ReferencePool(LogisticRegression(), 2, sample_fraction=0.3)
    assert pool.train_fraction == 0.3
    with pytest.raises(ValueError, match="sample_fraction"):
        ReferencePool(LogisticRegression(), 2, sample_fraction=0.3, train_fraction=0.4)
