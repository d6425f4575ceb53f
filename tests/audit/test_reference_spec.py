"""ReferenceSpec, train_fraction / to_target, the executor as a name or an object (issue 7).

The old keywords still work for one release, with a DeprecationWarning naming the new one;
both at once is an error; and the run key of an audit is byte-identical whichever way the
same settings are given, so results saved before the change are reused after it.
"""

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import privaudit
from privaudit.attacks.membership import collect_reference_outputs
from privaudit.targets import CallableTarget, as_target
from privaudit.training import (
    CallableRecipe,
    LocalExecutor,
    ReferencePool,
    ReferenceSpec,
    get_executor,
)

# Run keys written down by running these audits with the code from before ReferenceSpec
# existed (commit 06de79c^: flat keywords only); the same settings must give them forever.
# The pinned audits name their target by a fixed fingerprint and their recipe by a function
# of this file, so that their keys depend on privaudit alone: a scikit-learn release that
# adds an estimator parameter or moves a fitted coefficient's last bit changes an estimator's
# fingerprint, not the rule being pinned.
PINNED_OFFLINE = {"loss": "1fbaf8819ae4757dc55a", "lira-offline": "c60a81706f1bf1dfa3ce"}
PINNED_ONLINE = {"lira-online": "c26a2bfc48646381ae99", "rmia": "2310be321109ea82467a"}


def fit_logistic(X, y, *, random_state):
    return LogisticRegression(max_iter=200, random_state=random_state).fit(X, y)


@pytest.fixture(scope="module")
def pinned_data():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    model = LogisticRegression(max_iter=500).fit(X[:60], y[:60])
    target = CallableTarget(model.predict_proba, classes=model.classes_, name="model",
                            fingerprint="breast-cancer-logistic-60")
    labels = np.r_[np.ones(60, dtype=np.int8), np.zeros(60, dtype=np.int8)]
    return target, X[:120], y[:120], labels, (X[120:240], y[120:240])


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    model = LogisticRegression(max_iter=500).fit(X[:60], y[:60])
    labels = np.r_[np.ones(60, dtype=np.int8), np.zeros(60, dtype=np.int8)]
    return model, X[:120], y[:120], labels, (X[120:240], y[120:240])


def _audit(data, attacks=("lira-offline",), **kwargs):
    model, X, y, labels, population = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privaudit.exceptions.PrivauditWarning)
        return privaudit.audit_model(model, X, y, labels, population=population,
                                     attacks=list(attacks), slices=False, **kwargs)


def _keys(results):
    return {r.attack: r.audit.key for r in results}


# --- the run key does not change -------------------------------------------------------------


def test_run_key_is_pinned_for_old_and_new_calls(pinned_data):
    data = pinned_data
    old_style = dict(recipe=CallableRecipe(fit_logistic), n_reference_models=2,
                     reference_mode="offline", reference_fraction=0.4)
    with pytest.warns(DeprecationWarning, match="reference=ReferenceSpec"):
        old = _audit(data, ("loss", "lira-offline"), random_state=3, **old_style)
    spec = ReferenceSpec(recipe=CallableRecipe(fit_logistic), n_models=2,
                         mode="offline", train_fraction=0.4)
    new = _audit(data, ("loss", "lira-offline"), random_state=3, reference=spec)
    assert _keys(old) == _keys(new) == PINNED_OFFLINE
    np.testing.assert_array_equal(old[1].scores, new[1].scores)


def test_run_key_is_pinned_for_defaults_and_the_online_pool(pinned_data):
    data, attacks = pinned_data, ("lira-online", "rmia")
    with pytest.warns(DeprecationWarning, match="n_models="):
        old = _audit(data, attacks, recipe=CallableRecipe(fit_logistic), n_reference_models=4)
    new = _audit(data, attacks, reference=ReferenceSpec(recipe=CallableRecipe(fit_logistic),
                                                        n_models=4),
                 executor=LocalExecutor(n_jobs=1))
    assert _keys(old) == _keys(new) == PINNED_ONLINE
    for a, b in zip(old, new, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)


# --- deprecated keywords: a warning naming the new one; both at once: an error ----------------


@pytest.mark.parametrize(("old", "value", "new"), [
    ("recipe", LogisticRegression(max_iter=200), "recipe="),
    ("n_reference_models", 2, "n_models="),
    ("reference_mode", "offline", "mode="),
    ("reference_fraction", 0.3, "train_fraction="),
    ("wrap", as_target, "to_target="),
])
def test_each_flat_keyword_warns_and_names_the_field(data, old, value, new):
    spec = ReferenceSpec(**{"n_models": 2, new.rstrip("="): value})
    with pytest.warns(DeprecationWarning, match=rf"'{old}'.* deprecated.*ReferenceSpec\("
                                                rf".*\b{new}\.\.\.") as record:
        flat = _audit(data, **{"n_reference_models": 2, old: value})
    assert all(w.filename == __file__ for w in record)  # points at the caller's line
    assert _keys(flat) == _keys(_audit(data, reference=spec))


def test_a_spec_alone_warns_nothing(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        _audit(data, reference=ReferenceSpec(n_models=2, train_fraction=0.3,
                                             to_target=as_target))


def test_a_spec_and_a_flat_keyword_are_refused_before_any_work(data):
    said = []
    with pytest.raises(ValueError, match=r"'n_reference_models' parameter of audit_model must "
                                         r"be left out when 'reference' is given \(set "
                                         r"ReferenceSpec\(n_models=\.\.\.\)\)"):
        _audit(data, reference=ReferenceSpec(), n_reference_models=4, progress=said.append)
    with pytest.raises(ValueError, match=r"'wrap' parameter.*ReferenceSpec\(to_target="):
        _audit(data, reference=ReferenceSpec(), wrap=as_target)
    with pytest.raises(TypeError, match=r"'reference' parameter of audit_model must be a "
                                        r"privaudit.training.ReferenceSpec\. Got <dict>"):
        _audit(data, reference={"n_models": 4})
    assert said == []


def test_reference_pool_sample_fraction(data):
    with pytest.warns(DeprecationWarning, match="'sample_fraction' is now called "
                                                "'train_fraction'"):
        pool = ReferencePool(LogisticRegression(), 2, sample_fraction=0.3)
    assert pool.train_fraction == 0.3
    with pytest.warns(DeprecationWarning, match="train_fraction"):
        assert pool.sample_fraction == 0.3
    with pytest.raises(ValueError, match=r"'sample_fraction' parameter of ReferencePool must "
                                         r"be left out when 'train_fraction' is given"):
        ReferencePool(LogisticRegression(), 2, sample_fraction=0.3, train_fraction=0.4)


def test_collect_reference_outputs_old_names(data):
    _, X, y, _, (X_pop, y_pop) = data
    common = dict(X_population=X_pop, y_population=y_pop, n_models=2, mode="offline",
                  random_state=0)
    new = collect_reference_outputs(LogisticRegression(max_iter=200), X, y,
                                    train_fraction=0.3, to_target=as_target, **common)
    with pytest.warns(DeprecationWarning) as record:
        old = collect_reference_outputs(LogisticRegression(max_iter=200), X, y,
                                        sample_fraction=0.3, wrap=as_target, **common)
    said = " ".join(str(w.message) for w in record)
    assert "'train_fraction'" in said and "'to_target'" in said
    np.testing.assert_array_equal(new.pool.in_mask_, old.pool.in_mask_)
    np.testing.assert_array_equal(new.signal("cross_entropy"), old.signal("cross_entropy"))
    with pytest.raises(ValueError, match=r"'sample_fraction' parameter of "
                                         r"collect_reference_outputs"):
        collect_reference_outputs(LogisticRegression(), X, y, sample_fraction=0.3,
                                  train_fraction=0.4, **common)
    with pytest.raises(ValueError, match=r"'wrap' parameter of collect_reference_outputs"):
        collect_reference_outputs(LogisticRegression(), X, y, wrap=as_target,
                                  to_target=lambda m: as_target(m), **common)


# --- ReferenceSpec itself -----------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"n_models": 0}, ValueError, r"'n_models' parameter of ReferenceSpec must be an "
                                  r"integer >= 1\. Got 0"),
    ({"n_models": 2.0}, TypeError, r"'n_models' parameter of ReferenceSpec"),
    ({"n_models": True}, TypeError, r"'n_models' parameter of ReferenceSpec"),
    ({"mode": "sideways"}, ValueError, r"'mode' parameter of ReferenceSpec must be 'auto', "
                                       r"'online' or 'offline'\. Got 'sideways'"),
    ({"train_fraction": 1.0}, ValueError, r"'train_fraction' parameter of ReferenceSpec must "
                                          r"be a real number in \(0, 1\)\. Got 1\.0"),
    ({"train_fraction": "half"}, TypeError, r"'train_fraction' parameter of ReferenceSpec"),
    ({"to_target": 3}, TypeError, r"'to_target' parameter of ReferenceSpec must be None or a "
                                  r"callable"),
    ({"recipe": 3}, TypeError, r"'recipe' parameter of ReferenceSpec must be a TrainingRecipe"),
])
def test_spec_checks_its_fields(kwargs, error, message):
    with pytest.raises(error, match=message):
        ReferenceSpec(**kwargs)


def test_spec_is_frozen_and_reads_well():
    spec = ReferenceSpec(n_models=8, mode="offline")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.n_models = 4  # type: ignore[misc]
    assert repr(ReferenceSpec()) == "ReferenceSpec()"
    assert repr(spec) == "ReferenceSpec(n_models=8, mode='offline')"
    full = ReferenceSpec(recipe=LogisticRegression(C=2.0), train_fraction=0.25,
                         to_target=as_target)
    assert repr(full) == ("ReferenceSpec(recipe=LogisticRegression(C=2.0), "
                          "train_fraction=0.25, to_target=privaudit.targets._dispatch."
                          "as_target)")
    assert dataclasses.replace(spec, n_models=4) == ReferenceSpec(n_models=4, mode="offline")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 10_000), mode=st.sampled_from(["auto", "online", "offline"]),
       fraction=st.none() | st.floats(0.0, 1.0, exclude_min=True, exclude_max=True))
def test_valid_specs_round_trip_through_their_repr(n, mode, fraction):
    spec = ReferenceSpec(n_models=n, mode=mode, train_fraction=fraction)
    assert eval(repr(spec), {"ReferenceSpec": ReferenceSpec}) == spec


@settings(max_examples=40, deadline=None)
@given(n=st.integers(-10_000, 0))
def test_too_few_models_are_always_refused(n):
    with pytest.raises(ValueError, match="'n_models' parameter of ReferenceSpec"):
        ReferenceSpec(n_models=n)


# --- the executor as a name or an object ---------------------------------------------------------


def test_executor_object_gives_the_numbers_of_its_name(data):
    by_name = _audit(data, reference=ReferenceSpec(n_models=2), executor="local", n_jobs=1)
    by_object = _audit(data, reference=ReferenceSpec(n_models=2),
                       executor=LocalExecutor(n_jobs=1))
    np.testing.assert_array_equal(by_name[0].scores, by_object[0].scores)


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"n_jobs": 2}, "n_jobs"), ({"address": "ray://head:10001"}, "address"),
])
def test_executor_object_with_name_conveniences_is_refused(data, kwargs, param):
    expected = (rf"'{param}' parameter of {{}} must be None when 'executor' is an Executor "
                r"object \(set it on LocalExecutor instead\)")
    ex = LocalExecutor(n_jobs=1)
    with pytest.raises(ValueError, match=expected.format("audit_model")):
        _audit(data, reference=ReferenceSpec(n_models=2), executor=ex, **kwargs)
    with pytest.raises(ValueError, match=expected.format("ReferencePool")):
        ReferencePool(LogisticRegression(), 2, executor=ex, **kwargs).fit(
            data[1], data[2])
    with pytest.raises(ValueError, match=expected.format("get_executor")):
        get_executor(ex, **kwargs)


def test_get_executor_resolves_both_forms():
    ex = LocalExecutor(n_jobs=2)
    assert get_executor(ex) is ex
    assert get_executor("local", n_jobs=2).n_workers == 2
    assert get_executor("local").n_workers == 1
    with pytest.raises(ValueError, match=r"'executor' parameter of audit_model must be "
                                         r"'local', 'ray' or an Executor\. Got 'dask'"):
        get_executor("dask", func="audit_model")
    with pytest.raises(TypeError, match=r"'executor' parameter of ReferencePool"):
        get_executor(3, func="ReferencePool")
