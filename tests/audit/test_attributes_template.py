"""audit_attributes on the audit template: settings checked first, old names, reuse, cache."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

import privaudit
from privaudit.audits._attributes import AttributeAudit, AttributeSettings
from privaudit.audits._template import RunOptions, drive
from privaudit.exceptions import BaselineWarning
from privaudit.report import AuditReport
from privaudit.results import ResultsStore
from privaudit.targets import SklearnTarget
from privaudit.training import ReferenceSpec

PIXEL = 36


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(1).permutation(len(X))
    mem, non, pop = order[:150], order[150:300], order[300:600]
    model = _quiet(LogisticRegression(C=10.0, max_iter=300).fit, X[mem], y[mem])
    X_a, y_a = np.r_[X[mem], X[non]], np.r_[y[mem], y[non]]
    labels = np.r_[np.ones(150), np.zeros(150)].astype(int)
    return model, X_a, y_a, labels, (X[pop], y[pop])


def _numbers(report):
    return [(r.attack, r.guesses.tolist(), np.round(r.posteriors, 12).tolist(),
             r.sensitive_attribute) for r in report]


@pytest.mark.parametrize(("kwargs", "param", "error"), [
    ({"sensitive": 1.5}, "sensitive", TypeError),
    ({"sensitive": []}, "sensitive", TypeError),
    ({"candidates": "ab"}, "candidates", TypeError),
    ({"alpha": -1.0}, "alpha", ValueError),
    ({"alpha": float("inf")}, "alpha", ValueError),
    ({"alpha": True}, "alpha", TypeError),
    ({"alpha": 0.5, "n_grid": 1}, "n_grid", ValueError),
    ({"n_grid": 4}, "n_grid", ValueError),  # without alpha nothing reads it
    ({"sensitive_name": 3}, "sensitive_name", TypeError),
    ({"attacks": []}, "attacks", TypeError),
    ({"attacks": ["direct", 3]}, "attacks", TypeError),
    ({"attack_params": [("direct", {})]}, "attack_params", TypeError),
    ({"attacks": ["shadow-ai"], "reference": "spec"}, "reference", TypeError),
    ({"attacks": ["shadow-ai"], "reference": ReferenceSpec(n_models=2, mode="online")},
     "reference", TypeError),
    ({"random_state": "abc"}, "random_state", TypeError),
    ({"random_state": -1}, "random_state", ValueError),
    ({"random_state": 1.5}, "random_state", TypeError),
    ({"attacks": ["shadow-ai"], "executor": "bogus"}, "executor", ValueError),
    ({"attacks": ["shadow-ai"], "n_jobs": 0}, "n_jobs", ValueError),
    ({"attacks": ["shadow-ai"], "cache_dir": 5}, "cache_dir", TypeError),
    ({"results_dir": 5}, "results_dir", TypeError),
    ({"dataset": None}, "dataset", TypeError),
    ({"progress": "loud"}, "progress", TypeError),
])
def test_a_bad_setting_is_refused_naming_it_before_the_model_is_asked(
        digits, kwargs, param, error):
    model, X, y, labels, population = digits
    target = SklearnTarget(model, name="digits-logreg")
    kwargs = {"sensitive": PIXEL, "population": population, **kwargs}
    with pytest.raises(error, match=rf"'{param}' parameter of audit_attributes"):
        privaudit.audit_attributes(target, X, y, labels, **kwargs)
    assert target.n_queries == 0


@pytest.mark.parametrize("kwargs", [
    {"executor": "bogus"}, {"executor": "ray"}, {"n_jobs": 2}, {"address": "auto"},
    {"cache_dir": "cache"}, {"reference": ReferenceSpec(n_models=2)},
])
def test_shadow_options_without_shadow_ai_are_refused_naming_their_reader(digits, kwargs):
    """Options no attack reads: refused before the executor is resolved (no Ray started)."""
    model, X, y, labels, population = digits
    (param,) = kwargs
    with pytest.raises(ValueError, match=rf"'{param}' parameter.*unless 'shadow-ai' runs"):
        privaudit.audit_attributes(model, X, y, labels, sensitive=PIXEL,
                                   population=population, attacks=["direct"], **kwargs)


def test_old_names_warn_and_give_the_same_numbers(digits):
    model, X, y, labels, population = digits
    common = {"sensitive": PIXEL, "population": population,
              "attacks": ["model-inversion", "direct"]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("ignore", BaselineWarning)
        new = privaudit.audit_attributes(model, X, y, labels, sensitive_name="pixel",
                                         **common)
    with pytest.warns(FutureWarning) as caught:
        old = _quiet_baseline(privaudit.audit_attributes, model=model, X=X, y=y,
                              labels=labels, name="pixel", **common)
    said = " ".join(str(w.message) for w in caught)
    assert "'model' is now called 'target'" in said
    assert "'name' is now called 'sensitive_name'" in said
    assert _numbers(old) == _numbers(new)
    assert [r.sensitive_attribute for r in new] == ["pixel", "pixel"]
    with pytest.raises(ValueError, match=r"'name' parameter.*'sensitive_name'"):
        privaudit.audit_attributes(model, X, y, labels, name="a", sensitive_name="b",
                                   **common)


def _quiet_baseline(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BaselineWarning)
        return fn(*args, **kwargs)


def test_the_return_is_an_audit_report_reused_through_results_dir(digits, tmp_path):
    model, X, y, labels, population = digits
    first_target = SklearnTarget(model, name="digits-logreg")
    common = {"sensitive": PIXEL, "population": population, "results_dir": tmp_path,
              "attacks": ["model-inversion", "confidence-ai", "direct"]}
    report = _quiet(privaudit.audit_attributes, first_target, X, y, labels, **common)
    assert isinstance(report, AuditReport)
    # The model-free guesses live inside each result: no baseline or compared artefact.
    assert report.baselines == () and report.compared == ()
    assert [r.attack for r in report] == ["model-inversion", "confidence-ai", "direct"]
    assert list(report.results) == list(report) and report.kind == "attribute"
    assert {r.audit.kind for r in report} == {"attribute"}
    assert len(ResultsStore(tmp_path)) == 3
    # A rerun: every result reused, the model never asked.
    again = SklearnTarget(model, name="digits-logreg")
    reused = _quiet(privaudit.audit_attributes, again, X, y, labels, **common)
    assert again.n_queries == 0 and _numbers(reused) == _numbers(report)
    # Another parameter for one attack recomputes that one only (attacks and
    # attack_params are not in the audit's key; each result's key holds its own).
    written = _written(tmp_path)
    changed = _quiet(privaudit.audit_attributes, SklearnTarget(model, name="digits-logreg"),
                     X, y, labels, **{**common, "attack_params": {
                         "model-inversion": {"use_prior": False}}})
    rewritten = {p for p, t in _written(tmp_path).items() if written[p] != t}
    assert ["__model-inversion-" in p.parent.name for p in rewritten] == [True]
    assert len(_written(tmp_path)) == 3
    assert changed[0].parameters["use_prior"] is False
    assert _numbers(changed)[1:] == _numbers(report)[1:]
    # Another seed or dataset name is another audit: nothing reused.
    other = SklearnTarget(model, name="digits-logreg")
    _quiet(privaudit.audit_attributes, other, X, y, labels, **{**common, "random_state": 1})
    assert other.n_queries > 0


def _written(folder):
    return {p: p.stat().st_mtime_ns for p in folder.rglob("attribute.json")}


class _CountedFits(LogisticRegression):
    """A shadow recipe that counts its fits (shadows train inline: n_jobs=None)."""

    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight=sample_weight)


def test_shadow_models_are_cached_a_rerun_trains_nothing(digits, tmp_path):
    model, X, y, labels, population = digits
    spec = ReferenceSpec(recipe=_CountedFits(C=10.0, max_iter=300), n_models=2)

    def run():
        return _quiet(privaudit.audit_attributes, model, X, y, labels, sensitive=PIXEL,
                      population=population, attacks=["shadow-ai"], reference=spec,
                      cache_dir=tmp_path / "cache", executor="local", n_jobs=1)

    _CountedFits.fits = 0
    first = run()
    assert _CountedFits.fits == 2
    cached = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*")
              if p.is_file()}
    assert cached
    second = run()
    assert _CountedFits.fits == 2  # no shadow model trained again
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*")
            if p.is_file()} == cached
    assert _numbers(second) == _numbers(first)


def test_the_kind_runs_through_drive_with_checked_settings(digits):
    """The class the wrapper drives, used directly: same numbers as the wrapper."""
    model, X, y, labels, population = digits
    settings = AttributeSettings(sensitive=PIXEL, attacks=("direct",))
    audit = AttributeAudit(model, X, y, labels, population=population, settings=settings,
                           options=RunOptions.checked("audit_attributes"))
    assert [j.name for j in audit.plan()] == ["direct"]
    direct = _quiet(drive, audit)
    wrapped = _quiet(privaudit.audit_attributes, model, X, y, labels, sensitive=PIXEL,
                     population=population, attacks=["direct"])
    assert _numbers(direct) == _numbers(wrapped)
    with pytest.raises(TypeError, match="'alpha' parameter of audit_attributes"):
        AttributeAudit(model, X, y, labels, population=population,
                       settings=AttributeSettings(sensitive=PIXEL, alpha="wide"),
                       options=RunOptions.checked("audit_attributes"))


def test_shadow_options_with_a_given_membership_attack_are_refused(digits):
    """Shadow AI with its membership attack given trains nothing: nothing reads them."""
    from privaudit.attacks.membership import LossAttack

    model, X, y, labels, population = digits
    for kwargs in ({"cache_dir": "cache"}, {"n_jobs": 2}, {"executor": "ray"}):
        with pytest.raises(ValueError, match=rf"'{next(iter(kwargs))}' parameter.*trains "
                                             "its shadow models"):
            privaudit.audit_attributes(
                model, X, y, labels, sensitive=PIXEL, population=population,
                attacks=["shadow-ai"], **kwargs,
                attack_params={"shadow-ai": {"membership_attack": LossAttack()}})


def test_what_the_audit_sets_on_an_attack_follows_the_attack_not_how_it_was_asked(digits):
    """loss-ai's training loss: computed by the audit for a name or an object alike,
    kept when given (AUDIT_SET_PARAMS, not a check of names inside the audit)."""
    from privaudit.attacks.attribute import LossTargetAttributeAttack

    model, X, y, labels, population = digits
    common = {"sensitive": PIXEL, "population": population}
    by_name = _quiet(privaudit.audit_attributes, model, X, y, labels, attacks=["loss-ai"],
                     **common)
    as_object = _quiet(privaudit.audit_attributes, model, X, y, labels,
                       attacks=[LossTargetAttributeAttack()], **common)
    assert _numbers(by_name) == _numbers(as_object)
    loss = by_name[0].parameters["training_loss"]
    assert loss > 0
    given = _quiet(privaudit.audit_attributes, model, X, y, labels, attacks=["loss-ai"],
                   attack_params={"loss-ai": {"training_loss": 3 * loss}}, **common)
    assert given[0].parameters["training_loss"] == 3 * loss
