"""The audit spine: AuditRun (key, reuse, finish), baselines, the plan from tags, progress."""

import ast
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import privaudit
import privaudit.audits
from privaudit._progress import Progress
from privaudit.audits import (
    AuditRun,
    Baseline,
    RandomGuessBaseline,
    SliceEnricher,
    plan_model_audit,
)
from privaudit.exceptions import BaselineWarning
from privaudit.results import AttackResult, BaselineCheck, DamagedResultWarning, ResultsStore
from privaudit.training import ReferenceSpec

LABELS = np.r_[np.ones(40, dtype=np.int8), np.zeros(40, dtype=np.int8)]


def _result(strong=True, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=80) + (3.0 * LABELS if strong else 0.0)
    return AttackResult(labels=LABELS, scores=scores, attack="loss", target="m")


def _run(tmp_path=None, **kwargs):
    settings = {"func": "test", "target_name": "m", "identity": ("m", 1),
                "random_state": 0, "store": None if tmp_path is None else ResultsStore(tmp_path)}
    return AuditRun(**{**settings, **kwargs})


class _Recorder:
    """A baseline and an enricher that write down the order they were called in."""

    name = "recorder"

    def __init__(self, calls):
        self.calls = calls

    def check(self, result, random_state):
        self.calls.append(("baseline", result.audit.key is not None))
        return BaselineCheck(self.name, True)

    def __call__(self, result):
        self.calls.append(("enricher", result.audit.baseline.passed))
        result.extra["enriched"] = True
        return True


def test_finish_stamps_then_checks_baseline_then_enriches_then_saves(tmp_path):
    calls = []
    recorder = _Recorder(calls)
    run = _run(tmp_path, baseline=recorder, enrichers=[recorder], dataset="toy")
    result = run.finish("loss", ({"k": 1},), _result())
    assert calls == [("baseline", True), ("enricher", True)]
    assert result.dataset == "toy" and result.audit.key == run.key("loss", {"k": 1})
    saved = ResultsStore(tmp_path).load("m", "loss")
    assert saved.extra["enriched"] is True and saved.audit.baseline.name == "recorder"


def test_key_depends_on_identity_attack_parts_and_answers(tmp_path):
    run = _run()
    assert run.key("loss") == _run().key("loss")
    assert run.key("loss") != run.key("rmia")
    assert run.key("loss", {"a": 1}) != run.key("loss", {"a": 2})
    assert run.key("loss") != _run(identity=("m", 2)).key("loss")
    answers = [np.zeros(3)]
    with_answers = _run(tmp_path, answers=lambda: answers[0])
    before = with_answers.key("loss")
    answers[0] = np.ones(3)
    assert with_answers.key("loss") != before  # a model without fingerprint: its answers
    # Without a store nothing is reused, and the answers are not asked for.
    assert _run(answers=lambda: pytest.fail("queried")).key("loss")


def test_reuse_only_the_same_audit_and_recompute_damaged(tmp_path):
    run = _run(tmp_path, enrichers=[])
    assert run.reuse("loss", (), LABELS) is None  # nothing saved yet
    run.finish("loss", (), _result())
    assert run.reuse("loss", (), LABELS) is not None
    assert run.reuse("loss", ({"other": 1},), LABELS) is None  # another audit's result
    with pytest.warns(DamagedResultWarning, match="labels are not those"):
        assert run.reuse("loss", (), 1 - LABELS) is None
    folder = ResultsStore(tmp_path).path_for("m", "loss")
    (folder / "scores.csv").write_text("record_id,label,score\n0,1,0.5\n")
    with pytest.warns(DamagedResultWarning, match="damaged"):
        assert run.reuse("loss", (), LABELS) is None


def test_enrich_saves_again_only_when_changed(tmp_path):
    run = _run(tmp_path)
    result = run.finish("loss", (), _result())
    outputs = []
    run.enrichers = [SliceEnricher(lambda: outputs[0] if outputs else None, LABELS, 0)]
    assert run.enrich("loss", result, save=True) is False  # no outputs at hand: no query
    assert ResultsStore(tmp_path).load("m", "loss").audit.slices is None


def test_seed_only_fills_a_missing_seed():
    class Attack:
        random_state = None

    run = _run(random_state=7)
    assert run.seed(Attack()).random_state == 7
    seeded = Attack()
    seeded.random_state = 3
    assert run.seed(seeded).random_state == 3
    assert run.seed(object()) is not None  # no random_state: left alone


def test_random_guess_baseline_flags_and_warns():
    baseline = RandomGuessBaseline()
    assert isinstance(baseline, Baseline)
    with pytest.warns(BaselineWarning, match="no better than random"):
        weak = baseline.check(_result(strong=False, seed=1), 0)
    assert weak.name == "random-guess" and weak.passed is False
    assert weak.details == {"n_bootstrap": 200, "confidence": 0.95}
    with warnings.catch_warnings():
        warnings.simplefilter("error", BaselineWarning)
        assert baseline.check(_result(), 0).passed is True
    one_class = AttackResult(labels=np.ones(5), scores=np.arange(5.0))
    assert baseline.check(one_class, 0) is None


def test_a_baseline_returning_something_else_is_refused(tmp_path):
    class Loose:
        name = "loose"

        def check(self, result, random_state):
            return {"baseline": "loose"}

    with pytest.raises(TypeError, match="BaselineCheck"):
        _run(tmp_path, baseline=Loose()).finish("loss", (), _result())


class _Target:
    name, task, reveals_probabilities = "t", "classification", True


def test_plan_reads_the_tags():
    params = {}
    names = ["loss", "trained-lr", "rmia", "lira-online", "lira-offline"]
    plan = plan_model_audit(names, params, tgt=_Target(), reference_mode="auto")
    assert plan.mode == "online"  # asked for by lira-online's tag
    assert plan.of_kind("direct") == ["loss"]
    assert plan.of_kind("cross-fitted") == ["trained-lr"]
    assert plan.of_kind("reference") == ["rmia", "lira-online", "lira-offline"]
    assert plan.needs_population == ["rmia"]
    assert plan.key_parts("loss", 4, None) == ({}, None)
    assert plan.key_parts("rmia", 4, 0.3) == ({}, (4, "online", 0.3))
    offline = plan_model_audit(["lira-offline"], params, tgt=_Target(), reference_mode="auto")
    assert offline.mode == "offline"
    with pytest.raises(ValueError, match="'online' or 'auto' for lira-online"):
        plan_model_audit(["lira-online"], params, tgt=_Target(), reference_mode="offline")


def test_plan_follows_a_changed_tag(monkeypatch):
    # No name list anywhere: an attack whose tags say "cross-fitted" is planned as one.
    import privaudit.attacks as attacks

    real = attacks.get_tags
    monkeypatch.setattr(attacks, "get_tags", lambda a: replace(real(a), cross_fitted=True))
    plan = plan_model_audit(["loss"], {}, tgt=_Target(), reference_mode="auto")
    assert plan.of_kind("cross-fitted") == ["loss"] and plan.of_kind("direct") == []


def test_label_only_target_refuses_probability_attacks_from_tags():
    target = _Target()
    target.reveals_probabilities = False
    with pytest.raises(ValueError, match="label-only target"):
        plan_model_audit(["confidence"], {}, tgt=target, reference_mode="auto")
    plan_model_audit(["loss"], {}, tgt=target, reference_mode="auto")


class _RecordingProgress(Progress):
    def __init__(self):
        self.messages, self.tasks = [], []

    def message(self, text):
        self.messages.append(text)

    def _started(self, task):
        self.tasks.append((task.description, task.total))


def test_audit_progress_reaches_the_reference_pool(digits_small):
    X, y, labels, X_pop, y_pop, model = digits_small
    progress = _RecordingProgress()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        privaudit.audit_model(model, X, y, labels, attacks=["rmia"], population=(X_pop, y_pop),
                              reference=ReferenceSpec(n_models=4), progress=progress,
                              n_jobs=1)
    assert any("reference models" in m for m in progress.messages)
    # The pool's own counted steps reached the same Progress (bars on a terminal).
    assert any(total == 4 for _, total in progress.tasks), progress.tasks


@pytest.fixture(scope="module")
def digits_small():
    from sklearn.datasets import load_digits
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_digits(return_X_y=True)
    model = DecisionTreeClassifier(random_state=0).fit(X[:100], y[:100])
    labels = np.r_[np.ones(100, dtype=np.int8), np.zeros(100, dtype=np.int8)]
    return X[:200], y[:200], labels, X[200:400], y[200:400], model


def test_overfitting_study_runs_on_the_spine(monkeypatch):
    import privaudit.studies._overfitting as overfitting

    small = tuple(
        replace(spec, params={**spec.params, "hidden_layer_sizes": (8,), "max_iter": 20})
        if spec.model.startswith("MLP") else spec
        for spec in overfitting.OVERFITTING_TARGETS
    )
    monkeypatch.setattr(overfitting, "OVERFITTING_TARGETS", small)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = overfitting.run_overfitting_study(
            random_state=0, n_regression_members=100, n_classification_members=100,
            digits=False, wages=False)
    from privaudit.results import AttributeResult

    for r in results:
        if isinstance(r, AttributeResult):  # audit_attributes: its own kind and baseline
            assert r.audit.key and r.audit.kind == "attribute"
            assert r.audit.baseline.name == "model-free"
            continue
        assert r.audit.key and r.audit.baseline.name == "random-guess" and r.audit.slices
    assert len({r.audit.key for r in results}) == len(results)


def test_no_loop_key_or_save_logic_outside_the_spine():
    src = Path(privaudit.__file__).parent
    assert not (src / "_audit.py").exists()
    for path in [*sorted((src / "studies").glob("*.py")), *sorted((src / "audits").glob("*.py"))]:
        text = path.read_text()
        if path.name != "_store.py":
            assert "result_folder_name(" not in text and '"result.json"' not in text, path
        if path.parent.name == "studies":
            assert "hashlib" not in text and ".save(" not in text, path


def test_audits_functions_fit_on_a_screen():
    # Aim of issue 7: nothing in privaudit/audits over ~60 lines of code (docstrings apart).
    for path in sorted((Path(privaudit.audits.__file__).parent).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
                lines = {n.lineno for b in body for n in ast.walk(b) if hasattr(n, "lineno")}
                assert len(lines) <= 60, f"{path.name}:{node.name} has {len(lines)} lines"


def test_label_only_noise_scale_comes_from_the_population():
    # The attack's tag says it reads population features: the audit fits it on them
    # (no query), so its per-feature scale is the population's, not the audited records'.
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    import privaudit

    X, y = load_breast_cancer(return_X_y=True)
    model = LogisticRegression(max_iter=500).fit(X[:100], y[:100])
    labels = np.r_[np.ones(100), np.zeros(100)].astype(int)
    X_pop, y_pop = X[300:], y[300:]
    with_pop, = privaudit.audit_model(model, X[:200], y[:200], labels,
                                      population=(X_pop, y_pop), attacks=["label-only"],
                                      slices=False, random_state=0)
    without, = privaudit.audit_model(model, X[:200], y[:200], labels,
                                     attacks=["label-only"], slices=False, random_state=0)
    assert not np.array_equal(with_pop.scores, without.scores)
    from privaudit.attacks import get_attack
    from privaudit.targets import as_target

    direct = get_attack("label-only", random_state=0).fit(X=X_pop)
    expected = direct.run(as_target(model), X[:200], y[:200], labels)
    np.testing.assert_array_equal(with_pop.scores, expected.scores)
