"""Strong membership inference on the audit template (issue 21).

Settings declared once and checked before any work (no neighbour drawn, no oracle called,
no query), the same numbers under the old and the new names, a typed AuditReport, and
each radius's result reused from ``results_dir`` (another list of radii reuses the radii
already done: a radius's result depends on its radius only).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier

from privaudit.audits._strong_membership import (
    StrongMembershipAudit,
    StrongMembershipSettings,
    audit_strong_membership,
    strong_membership_inference,
)
from privaudit.report import AuditReport
from privaudit.results import load_all_results
from privaudit.targets import as_target

# The pages are read as text, never as images: figures are counted but not drawn
# (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

N = 120
RADII = [0.5, 3.0, None]


@pytest.fixture(scope="module")
def data():
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(1).permutation(len(y))
    X, y = X[order], y[order]
    model = RandomForestClassifier(30, random_state=0).fit(X[:N], y[:N])
    return model, X[:N], y[:N], (X[N:600], y[N:600])


class Oracle:
    """A labelling oracle that counts its calls (neighbour_labels)."""

    def __init__(self, model):
        self.model, self.calls = model, 0

    def __call__(self, X_near, _):
        self.calls += 1
        return self.model.predict(X_near)


def _scores(report):
    return [r.scores for r in report]


# ---------------------------------------------------------------- checks before any work
@pytest.mark.parametrize(("kwargs", "param", "error"), [
    ({"radii": 1.0}, "radii", TypeError),
    ({"radii": "1"}, "radii", TypeError),
    ({"radii": ["1"]}, "radii", TypeError),
    ({"radii": [True]}, "radii", TypeError),
    ({"radii": [0.5, -1.0]}, "radii", ValueError),
    ({"radii": [math.nan]}, "radii", ValueError),
    ({"radii": [2.0, 2]}, "radii", ValueError),
    ({"radii": [None, math.inf]}, "radii", ValueError),  # the same radius twice
    ({"radii": ()}, "radii", ValueError),
    ({"n_neighbours": 0}, "n_neighbours", ValueError),
    ({"n_neighbours": 2.0}, "n_neighbours", TypeError),
    ({"n_neighbours": True}, "n_neighbours", TypeError),
    ({"attack": 3}, "attack", TypeError),
    ({"attack_params": [("threshold", 1)]}, "attack_params", TypeError),
    ({"metric": "cosine"}, "metric", ValueError),
    ({"metric": None}, "metric", TypeError),
    ({"radial": "shell"}, "radial", ValueError),
    ({"feature_scale": "ones"}, "feature_scale", TypeError),
    ({"neighbour_labels": "nearest"}, "neighbour_labels", TypeError),
    ({"random_state": "abc"}, "random_state", TypeError),
    ({"random_state": -1}, "random_state", ValueError),
    ({"random_state": 1.5}, "random_state", TypeError),
    ({"dataset": 3}, "dataset", TypeError),
    ({"progress": 3}, "progress", TypeError),
])
@pytest.mark.parametrize("func", [audit_strong_membership, strong_membership_inference])
def test_every_setting_is_checked_before_any_work(data, func, kwargs, param, error):
    model, X, y, population = data
    target, oracle = as_target(model), Oracle(model)
    args = {"radii": RADII, "population": population, "neighbour_labels": oracle, **kwargs}
    with pytest.raises(error, match=f"'{param}' parameter of {func.__name__} must be"):
        func(target, X, y, **args)
    assert target.n_queries == 0 and oracle.calls == 0


def test_data_checks_come_before_the_query(data, tmp_path):
    model, X, y, _ = data
    target = as_target(model)
    cases = [
        ({"radii": [1.0, None], "population": None}, "radii"),  # inf needs a population
        ({"feature_scale": np.ones(3)}, "feature_scale"),
        ({"attack": "lira-online"}, "attack"),
        ({"radii": [1e-20]}, "radii"),  # a neighbour equal to its member (X + 100)
        ({"radii": [1e300]}, "radii"),  # neighbours overflow to infinity
    ]
    for kwargs, param in cases:
        with pytest.raises((TypeError, ValueError), match=f"'{param}' parameter"):
            audit_strong_membership(target, X + 100.0, y, **{"radii": [1.0], **kwargs})
    assert target.n_queries == 0
    # A file where the results folder should be: refused by the options, by name.
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="'results_dir' parameter"):
        audit_strong_membership(target, X, y, radii=[1.0], results_dir=tmp_path / "file")
    # A generator cannot key a saved result: refused with results_dir, named.
    with pytest.raises(TypeError, match="'random_state' parameter"):
        audit_strong_membership(target, X, y, radii=[1.0], results_dir=tmp_path / "r",
                                random_state=np.random.default_rng(0))
    assert target.n_queries == 0


def test_smi_trains_nothing_so_it_takes_no_executor(data):
    model, X, y, _ = data
    target = as_target(model)
    for option in ({"executor": "bogus"}, {"n_jobs": 2}, {"cache_dir": "x"}):
        with pytest.raises(TypeError, match="unexpected keyword"):
            audit_strong_membership(target, X, y, radii=[1.0], **option)
    assert target.n_queries == 0


def test_settings_refuse_each_radius_by_its_own_rule():
    # The items' rule splits a wrong type (TypeError) from a value out of range.
    for radii, error in [(("a",), TypeError), ((None,), TypeError), ((0.0,), ValueError),
                         ((-math.inf,), ValueError), ((1.0, 1.0), ValueError)]:
        with pytest.raises(error, match="'radii' parameter of f"):
            StrongMembershipSettings(radii=radii).check("f")
    StrongMembershipSettings(radii=(0.1, math.inf, np.float64(2.0))).check("f")
    assert StrongMembershipSettings.NOT_IN_KEY == frozenset({"radii"})
    keys = dict(StrongMembershipSettings(radii=(1.0,), feature_scale=np.ones(3)).key_items())
    assert "radii" not in keys and isinstance(keys["feature_scale"], str)


# ---------------------------------------------------------------- names, numbers, report
def test_old_and_new_names_give_the_same_numbers(data):
    model, X, y, population = data
    kw = {"radii": RADII, "population": population, "n_neighbours": 2, "random_state": 3}
    new = audit_strong_membership(model, X, y, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the paper's name is kept without a warning
        paper = strong_membership_inference(model, X, y, **kw)
    with pytest.warns(FutureWarning, match="'model' is now called 'target'"):
        old = strong_membership_inference(model=model, X_members=X, y_members=y, **kw)
    for a, b, c in zip(_scores(new), _scores(paper), _scores(old), strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    with pytest.raises(ValueError, match=r"'model' parameter .* left out when 'target'"):
        audit_strong_membership(model, X, y, model=model, radii=[1.0])
    with pytest.raises(TypeError, match="'X_members' parameter of audit_strong_membership"):
        audit_strong_membership(model, radii=[1.0])


def test_a_numpy_generator_is_still_accepted_without_results_dir(data):
    model, X, y, population = data
    kw = {"radii": [1.0, None], "population": population}
    seeded = audit_strong_membership(model, X, y, random_state=5, **kw)
    for generator in (np.random.default_rng(5), np.random.SeedSequence(5)):
        drawn = audit_strong_membership(model, X, y, random_state=generator, **kw)
        for a, b in zip(_scores(seeded), _scores(drawn), strict=True):
            np.testing.assert_array_equal(a, b)
        assert drawn[0].parameters["random_state"] is None  # no seed to record
    assert seeded[0].parameters["random_state"] == 5
    fresh = audit_strong_membership(model, X, y, random_state=None, **kw)
    assert len(fresh) == 2


def test_the_return_is_a_typed_report(data, tmp_path):
    model, X, y, population = data
    report = audit_strong_membership(model, X, y, radii=RADII, population=population,
                                     dataset="digits")
    assert isinstance(report, AuditReport)
    assert report.kind == "strong-membership" and report.func == "audit_strong_membership"
    assert report.baselines == () and report.compared == () and len(report.results) == 3
    assert [r.attack for r in report] == ["strong-loss[r=0.5]", "strong-loss[r=3]",
                                          "strong-loss[r=inf]"]
    assert all(r.audit.kind == "strong-membership" and r.audit.key for r in report)
    assert all(r.audit.baseline is None for r in report)  # chance is the measurement
    frame = report.to_frame(n_bootstrap=0)
    assert list(frame["attack"]) == [r.attack for r in report]
    page = report.report(tmp_path / "page", n_bootstrap=20)
    assert 'id="strong"' in page.read_text()


# ---------------------------------------------------------------- reuse through results_dir
def test_each_radius_is_reused_from_results_dir(data, tmp_path):
    model, X, y, population = data
    kw = {"population": population, "n_neighbours": 2, "results_dir": tmp_path}
    first = as_target(model)
    done = audit_strong_membership(first, X, y, radii=RADII, **kw)
    assert first.n_queries == N + 2 * N * 2 + 2 * N  # one query for every radius
    assert len(load_all_results(tmp_path)) == 3
    again = as_target(model)
    reused = audit_strong_membership(again, X, y, radii=RADII, **kw)
    assert again.n_queries == 0  # every radius reused: the target is not asked
    for a, b in zip(_scores(done), _scores(reused), strict=True):
        np.testing.assert_array_equal(a, b)
    # Another list of radii: the radii done are reused, the new one computed.
    more = as_target(model)
    grown = audit_strong_membership(more, X, y, radii=[3.0, 1.0], **kw)
    np.testing.assert_array_equal(grown[0].scores, done[1].scores)
    alone = audit_strong_membership(model, X, y, radii=[1.0], population=population,
                                    n_neighbours=2)
    np.testing.assert_array_equal(grown[1].scores, alone[0].scores)
    assert len(load_all_results(tmp_path)) == 4


@pytest.mark.parametrize("change", [{"n_neighbours": 3}, {"random_state": 1},
                                    {"metric": "l1"}, {"attack": "confidence"},
                                    {"feature_scale": np.full(64, 2.0)}])
def test_a_setting_in_the_key_recomputes(data, tmp_path, change):
    model, X, y, population = data
    kw = {"radii": [1.0], "population": population, "results_dir": tmp_path}
    audit_strong_membership(model, X, y, **kw)
    target = as_target(model)
    audit_strong_membership(target, X, y, **{**kw, **change})
    assert target.n_queries > 0


def test_other_oracle_labels_recompute(data, tmp_path):
    model, X, y, population = data
    kw = {"radii": [1.0], "population": population, "results_dir": tmp_path}
    audit_strong_membership(model, X, y, neighbour_labels=Oracle(model), **kw)
    same = as_target(model)
    audit_strong_membership(same, X, y, neighbour_labels=Oracle(model), **kw)
    assert same.n_queries == 0  # the same labels: reused
    # Each radius is keyed by its own neighbours' labels: one more radius reuses it.
    grown = as_target(model)
    audit_strong_membership(grown, X, y, neighbour_labels=Oracle(model),
                            **{**kw, "radii": [1.0, 2.0]})
    assert len(load_all_results(tmp_path)) == 2 and grown.n_queries == N + 2 * N
    reused = as_target(model)
    audit_strong_membership(reused, X, y, neighbour_labels=Oracle(model),
                            **{**kw, "radii": [2.0]})
    assert reused.n_queries == 0
    other = as_target(model)
    audit_strong_membership(other, X, y, neighbour_labels=lambda X_near, y_m: y_m, **kw)
    assert other.n_queries > 0


def test_a_crash_keeps_the_radii_done(data, tmp_path, monkeypatch):
    model, X, y, population = data
    kw = {"radii": RADII, "population": population, "results_dir": tmp_path}
    run_job = StrongMembershipAudit.run_job

    def crash_at_inf(self, job, run):
        if job.params["radius"] == math.inf:
            raise RuntimeError("crash")
        return run_job(self, job, run)

    monkeypatch.setattr(StrongMembershipAudit, "run_job", crash_at_inf)
    with pytest.raises(RuntimeError, match="crash"):
        audit_strong_membership(model, X, y, **kw)
    assert sorted(r.attack for r in load_all_results(tmp_path)) == [
        "strong-loss[r=0.5]", "strong-loss[r=3]"]
    monkeypatch.setattr(StrongMembershipAudit, "run_job", run_job)
    resumed = audit_strong_membership(model, X, y, **kw)
    fresh = audit_strong_membership(model, X, y, radii=RADII, population=population)
    for a, b in zip(_scores(resumed), _scores(fresh), strict=True):
        np.testing.assert_array_equal(a, b)
