"""Strong membership inference (Zhao et al. 2021) on real data: members against neighbours.

An overfit random forest on digits leaks membership against random population records
(ordinary MI AUC ~0.84) but not against neighbours closer than the typical distance
between a member and its nearest population record (~3.6 standard deviations in l2):
the SMI AUC starts at 0.5 and rises with the radius. Also: the vectorised neighbours
equal a one-at-a-time reference with the same seed, every neighbour lies in (0, r], the
target is queried once, and bad inputs are refused by name.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeRegressor

from privaudit.audits._strong_membership import strong_membership_inference
from privaudit.metrics import roc_auc
from privaudit.targets import LabelOnlyTarget, as_target

N_MEMBERS = 400
RADII = [0.01, 0.1, 0.3, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, math.inf]


class Recorder:
    """A target that keeps what it was asked (the model's answers are untouched)."""

    def __init__(self, model):
        self.inner = as_target(model)
        self.calls = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def query(self, X, y):
        self.calls.append((np.asarray(X, dtype=np.float64).copy(), np.asarray(y).copy()))
        return self.inner.query(X, y)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    # Fully grown trees: members sit in pure leaves, the forest overfits them.
    model = RandomForestClassifier(100, random_state=0).fit(X[:N_MEMBERS], y[:N_MEMBERS])
    return model, X[:N_MEMBERS], y[:N_MEMBERS], (X[N_MEMBERS:], y[N_MEMBERS:])


@pytest.fixture(scope="module")
def curve(digits):
    model, X, y, population = digits
    target = as_target(model)
    results = strong_membership_inference(target, X, y, radii=RADII, n_neighbours=2,
                                          population=population, dataset="digits")
    return target, results


def _auc(result):
    return roc_auc(result.labels, result.scores)


def _scaled(X, scale, active):
    return X[:, active] / scale[active]


def test_smi_auc_grows_from_chance_to_ordinary_mi(digits, curve):
    _, X, _, (X_pop, _) = digits
    _, results = curve
    aucs = [_auc(r) for r in results]
    smi, mi = aucs[:-1], aucs[-1]
    # The forest leaks membership against random non-members...
    assert mi > 0.75
    # ...but its members and their near twins get the same answers: chance.
    assert all(abs(a - 0.5) < 0.02 for a in smi[:3])  # r <= 0.3
    # The AUC grows with the radius (common random numbers: same rays at every radius).
    assert all(b >= a - 0.01 for a, b in itertools.pairwise(smi))
    assert smi[-1] - smi[0] > 0.3
    # Below the typical member-to-population distance, SMI is far weaker than MI
    # (Zhao et al.'s Theorem 1: MI vulnerability does not imply SMI vulnerability).
    scale = X_pop.std(axis=0)
    active = scale > 0
    gaps = np.linalg.norm(_scaled(X, scale, active)[:, None]
                          - _scaled(X_pop, scale, active)[None], axis=2)
    nearest = float(np.median(gaps.min(axis=1)))
    assert 3.0 < nearest < 4.5
    assert smi[RADII.index(1.0)] < mi - 0.15
    # Far neighbours are off the data manifold: at least as easy as real non-members.
    assert smi[RADII.index(20.0)] >= mi - 0.03


def test_results_layout(curve):
    target, results = curve
    assert [r.parameters["radius"] for r in results] == [*RADII[:-1], None]
    assert [r.attack for r in results][:2] == ["strong-loss[r=0.01]", "strong-loss[r=0.1]"]
    assert results[-1].attack == "strong-loss[r=inf]"
    n, k = N_MEMBERS, 2
    for r in results:
        assert r.target == target.name and r.dataset == "digits" and r.kind == "membership"
        assert r.n_members == n and r.n_non_members == n * k
        assert r.parameters["metric"] == "l2" and r.parameters["n_neighbours"] == k
        assert r.parameters["feature_scale"] == "population standard deviation"
        # Yeom et al.'s threshold: the mean training loss, hence hard predictions.
        assert r.predictions is not None and r.extra["threshold"] > 0
        assert r.raw_statistic_name == "cross_entropy"
    first = results[0]
    assert np.array_equal(first.record_ids, np.arange(n * (1 + k)))
    assert np.isclose(first.extra["threshold"], first.raw_statistic[:n].mean())
    assert "l2 norm" in first.extra["distance"]
    assert results[-1].extra["non_members"].startswith("random population")
    assert (results[-1].record_ids[n:] >= n * (1 + k)).all()


def test_one_query_for_every_radius(digits, curve):
    target, _ = curve
    # Members + 9 finite radii x 2 neighbours each + the population sample (800 of 1397).
    assert target.n_queries == N_MEMBERS + 9 * N_MEMBERS * 2 + N_MEMBERS * 2
    model, X, y, population = digits
    recorder = Recorder(model)
    strong_membership_inference(recorder, X[:50], y[:50], radii=[0.5, 2.0, None],
                                n_neighbours=3, population=population)
    assert len(recorder.calls) == 1
    assert recorder.n_queries == 50 + 2 * 50 * 3 + 50 * 3


def test_same_seed_same_numbers(digits):
    model, X, y, population = digits
    kw = {"radii": [0.5, 3.0, None], "population": population, "n_neighbours": 2}
    a = strong_membership_inference(model, X, y, random_state=7, **kw)
    b = strong_membership_inference(model, X, y, random_state=7, **kw)
    c = strong_membership_inference(model, X, y, random_state=8, **kw)
    for ra, rb in zip(a, b, strict=True):
        assert np.array_equal(ra.scores, rb.scores) and ra.extra == rb.extra
    assert not np.array_equal(a[1].scores, c[1].scores)
    # A radius's neighbours do not depend on the other radii asked for.
    alone = strong_membership_inference(model, X, y, radii=[3.0], random_state=7,
                                        population=population, n_neighbours=2)
    assert np.array_equal(alone[0].scores, a[1].scores)


def _reference_neighbours(X, scale, radii, k, metric, radial, seed, n_pop):
    """One neighbour at a time, the documented recipe, with math instead of numpy."""
    rng = np.random.default_rng(seed)
    active = [f for f in range(X.shape[1]) if scale[f] > 0]
    out = {r: [] for r in radii}
    for x in X:
        for _ in range(k):
            z = rng.standard_normal(len(active) + 1)
            g, h = z[:-1], float(z[-1])
            if metric == "l2":
                v = list(g)
                norm = math.sqrt(sum(c * c for c in v))
            elif metric == "l1":
                v = [math.copysign(-math.log(math.erfc(abs(c) / math.sqrt(2))), c) for c in g]
                norm = sum(abs(c) for c in v)
            else:
                v = [math.erf(c / math.sqrt(2)) for c in g]
                norm = max(abs(c) for c in v)
            f = 0.5 * math.erfc(-h / math.sqrt(2))
            if radial == "ball":
                f = f ** (1 / len(active))
            for r in radii:
                near = x.copy()
                for c, feature in zip(v, active, strict=True):
                    near[feature] += r * f * scale[feature] * c / norm
                out[r].append(near)
    sample = rng.choice(n_pop, size=min(len(X) * k, n_pop), replace=False)
    return {r: np.array(v) for r, v in out.items()}, sample


@pytest.mark.parametrize("metric,radial", [("l2", "uniform"), ("l1", "ball"),
                                           ("linf", "uniform")])
def test_vectorised_neighbours_equal_one_at_a_time(digits, metric, radial):
    model, X, y, (X_pop, y_pop) = digits
    X, y = X[:40], y[:40]
    pop = (X_pop[:60], y_pop[:60])
    recorder = Recorder(model)
    radii = [0.2, 1.5]
    strong_membership_inference(recorder, X, y, radii=[*radii, None], n_neighbours=2,
                                metric=metric, radial=radial, population=pop,
                                random_state=11)
    (batch, labels), = recorder.calls
    expected, sample = _reference_neighbours(X, pop[0].std(axis=0), radii, 2, metric,
                                             radial, 11, 60)
    np.testing.assert_array_equal(batch[:40], X)
    for i, r in enumerate(radii):
        rows = slice(40 + i * 80, 40 + (i + 1) * 80)
        np.testing.assert_allclose(batch[rows], expected[r], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(labels[rows], np.repeat(y, 2))
    np.testing.assert_array_equal(batch[200:], pop[0][sample])
    np.testing.assert_array_equal(labels[200:], pop[1][sample])


@pytest.mark.parametrize("metric", ["l2", "l1", "linf"])
@pytest.mark.parametrize("radial", ["uniform", "ball"])
def test_neighbours_lie_within_the_radius(digits, metric, radial):
    model, X, y, population = digits
    recorder = Recorder(model)
    radii = [0.05, 1.0, 7.0]
    results = strong_membership_inference(recorder, X, y, radii=radii, n_neighbours=3,
                                          metric=metric, radial=radial,
                                          population=population)
    (batch, _), = recorder.calls
    scale = population[0].std(axis=0)
    active = scale > 0
    order = {"l2": 2, "l1": 1, "linf": np.inf}[metric]
    n, k, d = len(X), 3, int(active.sum())
    for i, (r, result) in enumerate(zip(radii, results, strict=True)):
        near = batch[n + i * n * k: n + (i + 1) * n * k]
        # Features without spread are never touched.
        np.testing.assert_array_equal(near[:, ~active], np.repeat(X[:, ~active], k, axis=0))
        dist = np.linalg.norm((near - np.repeat(X, k, axis=0))[:, active] / scale[active],
                              ord=order, axis=1)
        assert (dist > 0).all() and (dist <= r * (1 + 1e-12)).all()
        assert np.isclose(result.extra["max_distance"], dist.max())
        assert result.extra["n_features_perturbed"] == d
        # "uniform": distances uniform on (0, r); "ball": uniform in the volume.
        mean = r / 2 if radial == "uniform" else r * d / (d + 1)
        assert abs(dist.mean() - mean) < 0.03 * r


@pytest.mark.parametrize("metric", ["l2", "l1", "linf"])
def test_directions_uniform_on_the_unit_sphere(metric):
    # Two real features: the unit circle / diamond / square must be covered evenly.
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :2]
    model = KNeighborsClassifier(5).fit(X, y)
    recorder = Recorder(model)
    strong_membership_inference(recorder, X, y, radii=[1.0], n_neighbours=20,
                                metric=metric, radial="ball", feature_scale=[1.0, 1.0])
    (batch, _), = recorder.calls
    step = batch[len(X):] - np.repeat(X, 20, axis=0)
    u = step / np.linalg.norm(step, ord={"l2": 2, "l1": 1, "linf": np.inf}[metric],
                              axis=1, keepdims=True)
    if metric == "l2":
        position = (np.arctan2(u[:, 1], u[:, 0]) + np.pi) / (2 * np.pi)
    elif metric == "l1":
        position = np.abs(u[:, 0])  # uniform along each edge of the diamond
    else:
        # Uniform on the square's perimeter: 1/4 per face, uniform along the face.
        face = np.abs(u[:, 0]) >= np.abs(u[:, 1])
        assert abs(face.mean() - 0.5) < 0.02
        position = (np.where(face, u[:, 1], u[:, 0]) + 1) / 2
    counts = np.histogram(position, bins=10, range=(0, 1))[0] / len(position)
    assert np.abs(counts - 0.1).max() < 0.015


def test_dataframes_labelling_oracle_and_regression():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = pd.DataFrame(StandardScaler().fit_transform(X), columns=X.columns)
    mem, pop = slice(0, 200), slice(200, None)
    model = RandomForestClassifier(50, random_state=0).fit(X[mem], y[mem])
    oracle = KNeighborsClassifier(15).fit(X[pop], y[pop])
    recorder = Recorder(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "X does not have valid feature names"
        results = strong_membership_inference(
            recorder, X[mem], y[mem], radii=[0.5, 4.0], attack="confidence",
            neighbour_labels=lambda X_near, _: oracle.predict(X_near),
            population=(X[pop], y[pop]))
    (batch, labels), = recorder.calls
    np.testing.assert_array_equal(labels[200:], oracle.predict(
        pd.DataFrame(batch[200:], columns=X.columns)))
    assert results[0].parameters["neighbour_labels"] == "<lambda>"
    assert results[0].predictions is None  # confidence: no threshold without calibration
    assert _auc(results[1]) > _auc(results[0])

    Xd, yd = load_diabetes(return_X_y=True)
    regressor = DecisionTreeRegressor(random_state=0).fit(Xd[:200], yd[:200])
    small, large = strong_membership_inference(regressor, Xd[:200], yd[:200],
                                               radii=[0.01, 5.0])
    assert small.raw_statistic_name == "squared_error"
    assert abs(_auc(small) - 0.5) < 0.05 < _auc(large) - 0.5
    assert small.parameters["feature_scale"] == "members' standard deviation"


def test_label_only_target_with_the_loss_attack(digits):
    model, X, y, _ = digits
    target = LabelOnlyTarget(model.predict, classes=model.classes_, name="labels")
    result, = strong_membership_inference(target, X, y, radii=[10.0])
    assert result.raw_statistic_name == "zero_one" and target.n_queries == 2 * N_MEMBERS


def test_neighbour_equal_to_a_member_is_refused(digits):
    model, X, y, _ = digits
    # Away from 0, a step of 1e-20 standard deviations vanishes in float64.
    target = as_target(model)
    with pytest.raises(ValueError, match=r"'radii'.*equals a training record"):
        strong_membership_inference(target, X + 100.0, y, radii=[1.0, 1e-20])
    assert target.n_queries == 0  # refused before the query


def _err(kind, param, digits, **kw):
    model, X, y, _ = digits
    args = {"model": model, "X_members": X, "y_members": y, "radii": [1.0], **kw}
    with pytest.raises(kind, match=f"'{param}' parameter of strong_membership_inference"):
        strong_membership_inference(**args)


@pytest.mark.parametrize("kind,param,kw", [
    (ValueError, "radii", {"radii": [-1.0]}),
    (ValueError, "radii", {"radii": [0.0]}),
    (ValueError, "radii", {"radii": [float("nan")]}),
    (ValueError, "radii", {"radii": [1.0, 1.0]}),
    (ValueError, "radii", {"radii": []}),
    (ValueError, "radii", {"radii": [1.0, None]}),  # inf without a population
    (TypeError, "radii", {"radii": 1.0}),
    (TypeError, "radii", {"radii": ["1"]}),
    (ValueError, "X_members", {"X_members": np.empty((0, 64)), "y_members": []}),
    (ValueError, "y_members", {"y_members": np.zeros(3)}),
    (TypeError, "X_members", {"X_members": np.full((400, 64), "a")}),
    (ValueError, "attack", {"attack": "no-such-attack"}),
    (TypeError, "attack", {"attack": "lira-online"}),
    (TypeError, "attack", {"attack": "rmia"}),
    (TypeError, "attack", {"attack": "label-only"}),
    (TypeError, "attack", {"attack": "trained-lr"}),
    (TypeError, "attack_params", {"attack_params": {"nope": 1}}),
    (ValueError, "metric", {"metric": "cosine"}),
    (ValueError, "radial", {"radial": "shell"}),
    (ValueError, "n_neighbours", {"n_neighbours": 0}),
    (TypeError, "n_neighbours", {"n_neighbours": 1.5}),
    (ValueError, "feature_scale", {"feature_scale": np.ones(3)}),
    (ValueError, "feature_scale", {"feature_scale": -np.ones(64)}),
    (ValueError, "feature_scale", {"feature_scale": np.zeros(64)}),
    (TypeError, "neighbour_labels", {"neighbour_labels": "nearest"}),
    (TypeError, "random_state", {"random_state": "seed"}),
])
def test_bad_inputs_are_named(digits, kind, param, kw):
    _err(kind, param, digits, **kw)


def test_bad_population_and_task(digits):
    model, X, y, (X_pop, y_pop) = digits
    # A member in the population would be a training record counted as a non-member.
    _err(ValueError, "population", digits, population=(np.r_[X_pop, X[:1]], np.r_[y_pop, y[:1]]))
    _err(ValueError, "population", digits, population=(X_pop[:, :10], y_pop))
    _err(TypeError, "population", digits, population=X_pop)
    Xd, yd = load_diabetes(return_X_y=True)
    regressor = DecisionTreeRegressor(random_state=0).fit(Xd[:50], yd[:50])
    with pytest.raises(ValueError, match="'attack' parameter"):
        strong_membership_inference(regressor, Xd[:50], yd[:50], radii=[1.0],
                                    attack="confidence")
    labels_only = LabelOnlyTarget(model.predict, classes=model.classes_)
    with pytest.raises(ValueError, match="'attack' parameter"):
        strong_membership_inference(labels_only, X, y, radii=[1.0], attack="entropy")
    assert labels_only.n_queries == 0


@pytest.mark.parametrize("attack", ["loss", "confidence", "entropy", "modified-entropy", "gap"])
def test_every_shared_output_attack_runs(digits, attack):
    model, X, y, population = digits
    target = as_target(model)
    small, large, mi = strong_membership_inference(
        target, X[:100], y[:100], radii=[0.01, 20.0, None], attack=attack,
        population=population)
    assert target.n_queries == 100 * 4 and mi.n_non_members == 100
    assert small.attack == f"strong-{attack}[r=0.01]" and small.parameters["attack"] == attack
    # The gap attack reads correctness only: every neighbour at r = 0.01 is classified
    # as its member, so the AUC is exactly 0.5 there.
    assert abs(_auc(small) - 0.5) < 0.03 and _auc(large) >= _auc(small)
