"""Degenerate inputs of the DP-training audit: few or imbalanced classes, diverged runs.

Fast fakes stand in for DP training: :class:`_LogReg` fits a logistic regression on the
data and the included canaries (refusing canary labels outside the training classes, as
:class:`~privaudit.dp.OpacusRecipe` does); :class:`_Dirac` moves Dirac coordinates, and
diverges (NaN parameters) on the seeds it is told to.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from privaudit.audits import audit_dp_training
from privaudit.dp import DPTrainingRun, make_canaries, score_canaries
from privaudit.exceptions import DegenerateInputWarning
from privaudit.metrics import CanaryBound
from privaudit.report._sections_dp import DPTrainingSection
from privaudit.results import AuditInfo, DPAuditResult

X = np.random.default_rng(0).normal(size=(200, 4))


class _LogReg:
    """Logistic regression on data + canaries; records what it was trained on."""

    name = "logreg"

    def __init__(self) -> None:
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, dataset, canaries, *, random_state):
        y = np.asarray(dataset[1])
        if len(canaries) and not np.isin(canaries.labels, np.unique(y)).all():
            raise AssertionError("canary labels outside the training classes")
        self.seen.append((y, np.asarray(canaries.labels)))
        Xd = np.vstack([dataset[0], canaries.features]) if len(canaries) else dataset[0]
        yd = np.concatenate([y, canaries.labels]) if len(canaries) else y
        model = LogisticRegression(max_iter=200).fit(Xd, yd)
        return DPTrainingRun(model=model, canary_ids=canaries.ids)


class _Dirac:
    """Dirac canaries move their coordinate by -1; seeds in ``diverge`` give NaN."""

    name = "dirac"

    def __init__(self, diverge: str = "none") -> None:
        self.diverge = diverge

    def n_parameters(self, dataset) -> int:
        return 500

    def __call__(self, dataset, canaries, *, random_state):
        final = -np.random.default_rng(random_state).normal(size=500)
        final[np.asarray(canaries.coordinates, dtype=int)] -= 1.0
        if self.diverge == "all" or (self.diverge == "even" and random_state % 2 == 0):
            final[:] = np.nan
        return DPTrainingRun(model=None, canary_ids=canaries.ids,
                             initial_parameters=np.zeros(500), final_parameters=final,
                             learning_rate=1.0)

    def fingerprint(self):
        return ("dirac", self.diverge)


def _audit(train, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)
        return audit_dp_training(train, dataset=(X[:len(y)], y), claimed_epsilon=8.0,
                                 delta=1e-5, **kw)[0]


# ----------------------------------------------------------- finding 2: the classes
@pytest.mark.parametrize("kind", ["flipped-label", "random-label"])
@pytest.mark.parametrize(("y", "n_canaries", "seed"), [
    (np.array([0, 1, 0, 1]), 2, 0),                       # the smallest balanced data
    (np.isin(np.arange(200), [5, 50, 150]).astype(int), 20, 0),   # 3 of 200 in class 1
    (np.isin(np.arange(200), [5]).astype(int), 150, 1),   # 1 of 200: never held out
    (np.isin(np.arange(200), [5]).astype(int), 150, 2),
])
def test_canary_labels_are_drawn_among_the_dataset_classes(y, n_canaries, seed,
                                                           kind) -> None:
    train = _LogReg()
    result = _audit(train, y, n_canaries=n_canaries, canaries=kind, random_state=seed)
    assert result.verdict in ("consistent with the claim", "claim refuted")
    [(trained_on, labels)] = train.seen
    assert set(np.unique(trained_on)) == {0, 1}  # training kept every class
    assert set(labels) <= {0, 1}


def test_a_one_class_dataset_is_refused_naming_dataset() -> None:
    with pytest.raises(ValueError, match=r"'dataset' parameter of audit_dp_training.*"
                                         "2 classes"):
        _audit(_LogReg(), np.zeros(200, int), n_canaries=10)
    with pytest.raises(ValueError, match=r"'dataset' parameter.*more records than classes"):
        _audit(_LogReg(), np.array([0, 1]), n_canaries=2)


def test_make_canaries_takes_the_classes_to_draw_from() -> None:
    c = make_canaries("flipped-label", 6, features=X[:6], labels=np.zeros(6, int),
                      classes=[0, 1, 2], random_state=0)
    assert set(c.labels) <= {1, 2}
    with pytest.raises(ValueError, match="'labels' parameter of make_canaries"):
        make_canaries("flipped-label", 2, features=X[:2], labels=[0, 5], classes=[0, 1])


# ----------------------------------------------------------- finding 3: diverged runs
def test_a_diverged_run_leaves_the_gdp_estimate_of_the_others() -> None:
    with pytest.warns(DegenerateInputWarning, match="its bounds are NaN"):
        result = audit_dp_training(_Dirac("even"), dataset=(X, np.arange(200) % 2),
                                   claimed_epsilon=1.0, delta=1e-5, n_canaries=20,
                                   canaries="dirac-gradient", n_runs=4, n_jobs=1)[0]
    finite = np.isfinite(result.scores).all(axis=1)
    assert 0 < finite.sum() < 4
    assert all(math.isnan(b["steinke"].epsilon) for b in np.array(result.bounds)[~finite])
    assert all(b["steinke"].epsilon >= 0 for b in np.array(result.bounds)[finite])
    assert math.isfinite(result.gdp.epsilon)


def test_no_finite_run_gives_a_nan_gdp_estimate_with_a_warning() -> None:
    with pytest.warns(DegenerateInputWarning, match="Gaussian-DP estimate is NaN"):
        result = audit_dp_training(_Dirac("all"), dataset=(X, np.arange(200) % 2),
                                   claimed_epsilon=1.0, delta=1e-5, n_canaries=20,
                                   canaries="dirac-gradient", n_runs=2, n_jobs=1)[0]
    assert math.isnan(result.gdp.epsilon) and result.verdict == "undefined"


# ----------------------------------------------------------- finding 4: input canaries
def test_a_model_with_non_finite_outputs_scores_its_canaries_nan() -> None:
    model = torch.nn.Linear(4, 2).eval()
    with torch.no_grad():
        model.weight.fill_(float("nan"))
    c = make_canaries("flipped-label", 4, features=X[:6], labels=np.arange(6) % 2,
                      random_state=0)
    with pytest.warns(DegenerateInputWarning, match="did the training diverge"):
        scores = score_canaries(DPTrainingRun(model=model, canary_ids=c.ids), c)
    assert scores.shape == (4,) and np.isnan(scores).all()


# ----------------------------------------------------------- finding 10: the verdict
def _bound(epsilon: float, method: str) -> CanaryBound:
    return CanaryBound(epsilon, method, "bonferroni", 4, 2, 1, 2, 0, 2, 0.0, math.nan,
                       0.975, 0.0)


def _two_method_result(cp: float, steinke: float) -> DPAuditResult:
    return DPAuditResult(
        canary_ids=["a", "b", "c", "d"], scores=[[1.0, 2.0, 3.0, 4.0]],
        included=[[True] * 4], claimed_epsilon={"claimed": 1.0}, delta=0.0,
        bounds=[{"clopper-pearson": _bound(cp, "clopper-pearson"),
                 "steinke": _bound(steinke, "steinke")}],
        canaries="dirac-gradient", target="t", audit=AuditInfo(kind="dp"))


def test_a_nan_method_beside_a_defined_one_reads_the_defined_bound() -> None:
    result = _two_method_result(math.nan, 0.0)
    assert result.epsilon_lower_bound == 0.0
    assert result.verdict == "consistent with the claim"
    assert result.undefined_methods == ["clopper-pearson"]
    [finding] = DPTrainingSection().findings(_page(result))
    assert "(steinke)" in finding.attack and "0.00" in finding.metric
    assert "clopper-pearson bound is undefined" in finding.text


def test_a_diverged_run_is_still_undefined_and_named() -> None:
    result = _two_method_result(math.nan, math.nan)
    assert result.verdict == "undefined"
    [finding] = DPTrainingSection().findings(_page(result))
    assert "clopper-pearson, steinke undefined" in finding.attack


def _page(result: DPAuditResult):
    from types import SimpleNamespace

    return SimpleNamespace(all_results=[result])
