"""Producers set the results' typed details themselves (issue 21), family by family.

Each producer of a number the report reads (membership attacks, Apollo, the synthetic
checks, the studies) sets it as a typed attribute of its result, not as a loose
``extra`` key: the attribute holds it, ``to_dict()["details"]`` saves it, the free-form
``extra`` no longer carries it, and a save and load gives it back. The readers
(:class:`~privaudit.PrivacyEvaluator`) read the attributes.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LinearRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier

from privaudit.attacks import get_attack
from privaudit.attacks.membership import GaussianThresholdAttack, gaussian_advantage
from privaudit.attacks.membership._colluding import ColludingAttack
from privaudit.results import AttackResult, AttributeResult, ResultFamily, load_result
from privaudit.targets import SklearnTarget
from privaudit.training._colluding import ColludingRecipe


@contextlib.contextmanager
def typed_only() -> Iterator[None]:
    """Fail when a result receives a typed detail through ``extra`` (the older route).

    Results built or changed inside the block must get their typed details as constructor
    arguments or attributes: a key of ``DETAIL_FIELDS`` in ``extra`` at construction, or
    written through ``result.extra[...]``, is an error naming the result and the keys.
    """
    adopt, write = ResultFamily._adopt_details, ResultFamily._write_extra

    def adopt_typed_only(self: ResultFamily) -> None:
        free = self.__dict__["_free_extra"]
        legacy = sorted(set(self.DETAIL_FIELDS) & set(free if isinstance(free, dict) else ()))
        assert not legacy, f"{type(self).__name__} got {legacy} through extra"
        adopt(self)

    def write_typed_only(self: ResultFamily, key: str, value: Any) -> None:
        assert key not in self.DETAIL_FIELDS, f"{type(self).__name__}.extra[{key!r}] set"
        write(self, key, value)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ResultFamily, "_adopt_details", adopt_typed_only)
        patch.setattr(ResultFamily, "_write_extra", write_typed_only)
        yield


def test_typed_only_catches_the_older_route():
    with typed_only():
        AttackResult(labels=[1, 0], scores=[0.9, 0.1], study="overfitting")
        with pytest.raises(AssertionError, match=r"\['study'\] through extra"):
            AttackResult(labels=[1, 0], scores=[0.9, 0.1], extra={"study": "overfitting"})
        result = AttackResult(labels=[1, 0], scores=[0.9, 0.1], extra={"threshold": 0.5})
        result.extra["n_keys"] = 2  # a free-form key: still fine
        with pytest.raises(AssertionError, match="heatmap"):
            result.extra["heatmap"] = {}
        with pytest.raises(AssertionError, match="train_r2"):
            result.extra = {"train_r2": 0.5}


def assert_typed(result: Any, expected: dict[str, Any], tmp_path: Path) -> None:
    """``expected`` (attribute: value) set on ``result``, saved as details, not in ``extra``.

    Each attribute's saved key is its ``DETAIL_FIELDS`` key (``search_kind`` is saved as
    ``"kind"``); a value of ``...`` only asks for the attribute to be set.
    """
    keys = {attribute: key for key, attribute in type(result).DETAIL_FIELDS.items()}
    saved = result.to_dict()["details"]
    loaded = load_result(Path(result.save(tmp_path / "saved")).parent)
    for attribute, value in expected.items():
        got = getattr(result, attribute)
        assert got is not None, attribute
        if value is not ...:
            assert got == (pytest.approx(value) if isinstance(value, float) else value), \
                attribute
        assert saved[keys[attribute]] == got, attribute
        assert keys[attribute] not in result.free_extra(), attribute
        assert getattr(loaded, attribute) == got, attribute
        # Old code reading the key from ``extra`` still gets it (through the view).
        assert result.extra[keys[attribute]] == got, attribute


# --------------------------------------------------------------- membership attacks
def _gaussian() -> tuple[AttackResult, dict[str, Any]]:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = X @ np.array([1.0, 2.0, -1.0]) + rng.normal(size=200)
    model = LinearRegression().fit(X[:100], y[:100])
    labels = np.r_[np.ones(100, dtype=int), np.zeros(100, dtype=int)]
    attack = GaussianThresholdAttack().fit(model, X, y, labels)
    expected = gaussian_advantage(attack.sigma_member_, attack.sigma_non_member_)
    return attack.run(model, X, y, labels), {"theoretical_advantage": expected}


def _gap() -> tuple[AttackResult, dict[str, Any]]:
    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X[:100], y[:100])
    labels = np.r_[np.ones(100, dtype=int), np.zeros(100, dtype=int)]
    correct = model.predict(X[:200]) == y[:200]
    return get_attack("gap").run(model, X[:200], y[:200], labels), {
        "train_accuracy": float(correct[:100].mean()),
        "test_accuracy": float(correct[100:].mean())}


def _colluding() -> tuple[AttackResult, dict[str, Any]]:
    X, y = load_digits(return_X_y=True)
    recipe = ColludingRecipe(KNeighborsClassifier(n_neighbors=1), n_keys=2, key=7)
    model = recipe.train(X[:100], y[:100], random_state=0)
    labels = np.r_[np.ones(100, dtype=int), np.zeros(100, dtype=int)]
    result = ColludingAttack(recipe).run(SklearnTarget(model), X[:200], y[:200], labels)
    return result, {"chance_match_rate": 10.0 ** -2}


@pytest.mark.parametrize("producer", [_gaussian, _gap, _colluding],
                         ids=["gaussian-threshold", "gap", "colluding"])
def test_membership_attacks_set_their_typed_details(producer, tmp_path):
    with typed_only():
        result, expected = producer()
    assert_typed(result, expected, tmp_path)


@pytest.mark.filterwarnings("ignore::privaudit.exceptions.DegenerateInputWarning")
def test_gap_leaves_the_accuracies_unset_without_both_sides():
    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X[:50], y[:50])
    result = get_attack("gap").run(model, X[:50], y[:50], np.ones(50, dtype=int))
    assert result.train_accuracy is None and result.test_accuracy is None
    assert "train_accuracy" not in result.to_dict()["details"]


# --------------------------------------------------------------- synthetic checks
@pytest.fixture(scope="module")
def tables():
    from privaudit.studies._synthetic_study import load_tv16
    from privaudit.synthetic import copying_generator

    original, holdout = load_tv16(150, random_state=3)
    synthetic = copying_generator(original, 150, copy_fraction=0.3, random_state=11)
    return synthetic, original, holdout


def test_exact_matches_sets_the_duplication_rate(tables, tmp_path):
    from privaudit.synthetic import exact_matches

    synthetic, original, holdout = tables
    dup = float(original.duplicated(keep=False).mean())
    for i, held in enumerate((holdout, None)):
        with typed_only():
            result = exact_matches(synthetic, original, held)
        assert_typed(result, {"original_duplication_rate": dup}, tmp_path / str(i))


def test_closeness_sets_the_closer_to_train_share_with_a_holdout_only(tables, tmp_path):
    from privaudit.synthetic import closeness_checks

    synthetic, original, holdout = tables
    with typed_only():
        dcr, nndr = closeness_checks(synthetic, original, holdout)
    assert_typed(dcr, {"closer_to_train_share": ...}, tmp_path)
    share = dcr.closer_to_train_share
    assert share["low"] <= share["value"] <= share["high"] and share["n_per_set"] == 150
    assert "train_train_quantile" in dcr.free_extra()  # informational: stays free-form
    assert nndr.closer_to_train_share is None
    alone, _ = closeness_checks(synthetic, original)
    assert alone.closer_to_train_share is None
    assert "closer_to_train_share" not in alone.to_dict()["details"]


def test_distinguisher_sets_the_confidences(tables, tmp_path):
    from privaudit.synthetic import Distinguisher

    synthetic, original, _ = tables
    with typed_only():
        result = Distinguisher(n_estimators=10, random_state=0).fit_score(synthetic,
                                                                          original)
    on_synthetic = result.scores[result.labels == 1].mean()
    on_original = result.scores[result.labels == 0].mean()
    assert_typed(result, {"synthetic_confidence": on_synthetic,
                          "original_confidence": on_original}, tmp_path)
    assert set(result.free_extra()) == {"positive_class", "fidelity_score"}


@pytest.mark.filterwarnings("ignore::privaudit.exceptions.BaselineWarning")
def test_privacy_evaluator_reads_the_typed_details(tables):
    from privaudit import PrivacyEvaluator

    synthetic, original, holdout = tables
    evaluator = PrivacyEvaluator(
        synthetic, original, None, ["exact_matches", "membership_inference",
                                    "tabular_privacy"], holdout_data=holdout,
        check_params={"distinguishability": {"n_estimators": 10}})
    with typed_only():
        out = evaluator.evaluate()
    by = {r.attack: r for r in evaluator.results_}
    assert out["exact_matches"]["original_duplication_percentage"] == pytest.approx(
        100 * by["exact-matches"].original_duplication_rate)
    mia = out["membership_inference"]
    assert mia["synthetic_confidence"] == by["distinguishability"].synthetic_confidence
    assert mia["original_confidence"] == by["distinguishability"].original_confidence
    dcr = out["tabular_privacy"]["structured_privacy_metrics"]["DCR"]
    assert dcr["closer_to_train_share"] == by["dcr"].closer_to_train_share
    nndr = out["tabular_privacy"]["structured_privacy_metrics"]["NNDR"]
    assert "closer_to_train_share" not in nndr


# --------------------------------------------------------------- studies
def _details_of(task: str):
    from privaudit.data import membership_split
    from privaudit.studies._overfitting import OVERFITTING_TARGETS, _study_details

    spec = next(s for s in OVERFITTING_TARGETS if s.task == task)
    quality = ({"train_r2": 0.9, "train_mse": 1.5, "test_r2": 0.2, "test_mse": 7.0}
               if task == "regression" else {"train_accuracy": 1.0, "test_accuracy": 0.4})
    split = membership_split(40, 10, 10, random_state=0)
    return _study_details(quality, spec, split, model_seed=3), quality


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_overfitting_study_sets_the_study_and_the_targets_quality(task, tmp_path):
    details, quality = _details_of(task)
    attack = AttackResult(labels=[1, 1, 0, 0], scores=[0.9, 0.4, 0.5, 0.1], attack="loss",
                          extra={"threshold": 0.3})
    attribute = AttributeResult(candidates=["a", "b"], guesses=[0, 1, 1, 0],
                                truth=[0, 1, 0, 0], members=[1, 1, 0, 0], attack="direct")
    typed = {k: v for k, v in quality.items() if not k.endswith("mse")}
    for i, result in enumerate((attack, attribute)):
        with typed_only():
            details.annotate(result)
        assert result.study == "overfitting"
        assert_typed(result, {"study": "overfitting", **typed}, tmp_path / str(i))
        free = result.free_extra()
        assert {k for k in quality if k.endswith("mse")} <= set(free)
        assert free["n_members"] == 10 and free["target_model"]
    # The attack's own numbers stay, after the study's.
    assert list(attack.free_extra())[-1] == "threshold"


def test_overfitting_study_keeps_what_the_attack_set():
    details, _ = _details_of("classification")
    result = AttackResult(labels=[1, 1, 0, 0], scores=[0.9, 0.4, 0.5, 0.1], attack="gap",
                          train_accuracy=0.75, test_accuracy=0.5)
    details.annotate(result)
    assert (result.train_accuracy, result.test_accuracy) == (0.75, 0.5)
    assert result.study == "overfitting"


def test_reference_study_sets_the_targets_accuracy(tmp_path):
    from privaudit.studies import run_reference_study

    with warnings.catch_warnings(), typed_only():
        warnings.simplefilter("ignore")
        results = run_reference_study(0, n_reference_models=2, attacks=("loss", "confidence"),
                                      n_members=60, hidden_layer_sizes=(8,), max_iter=5)
    assert len(results) == 2
    for i, result in enumerate(results):
        # The target's accuracy on its members and its held-out records: one pair.
        assert_typed(result, {"train_accuracy": results[0].train_accuracy,
                              "test_accuracy": results[0].test_accuracy}, tmp_path / str(i))
        assert 0 <= result.test_accuracy <= 1 and 0 <= result.train_accuracy <= 1
        assert result.free_extra()["target_model"] == "MLPClassifier(8,)"


@pytest.mark.slow
def test_unlearning_study_and_apollo_set_their_typed_details(tmp_path):
    pytest.importorskip("torch")
    from privaudit.studies import run_unlearning_study
    from privaudit.studies._unlearning_study import UnlearningSetting

    setting = UnlearningSetting(n_rows=1500, n_train=300, n_forget=30, n_heldout=30,
                                n_population=400, hidden=(16,), epochs=5, n_shadows=6)
    with warnings.catch_warnings(), typed_only():
        warnings.simplefilter("ignore")
        [result] = run_unlearning_study(setting=setting, algorithms=("GA",),
                                        attacks=("apollo",))
    assert_typed(result, {"study": "unlearning", "queries_per_record": ...,
                          "heatmap": ..., "search_kind": ...}, tmp_path)
    assert result.search_kind in ("under", "over", "both")
    assert result.queries_per_record > 0
    assert set(result.free_extra()) >= {"eps", "tau_roc", "accuracy", "seconds"}
