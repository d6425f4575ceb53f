"""The target protocols and the shape of the targets package.

- ``privaudit.targets`` modules import each other without a cycle (read from the source:
  a lazy import inside a function is still an edge);
- other packages reach targets through public names only;
- the audit-facing base protocol (:class:`AuditedArtifact`) admits text and table
  artefacts; :class:`Target` adds the model ``query``;
- ``as_target`` dispatches from its own module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

import privaudit
import privaudit.targets as targets_pkg
from privaudit.targets import (
    AuditedArtifact,
    CallableTarget,
    LabelOnlyTarget,
    ModelOutputs,
    SklearnTarget,
    Target,
    TorchTarget,
    as_target,
    target_fingerprint,
)

SRC = Path(privaudit.__file__).parent
TARGETS = SRC / "targets"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _imported(path: Path) -> set[str]:
    """Every privaudit module ``path`` imports, at the top or inside a function."""
    package = _module_name(path) if path.name == "__init__.py" \
        else _module_name(path).rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                root = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{root}.{base}" if base else root
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in out if name.startswith("privaudit")}


def _targets_graph() -> dict[str, set[str]]:
    nodes = {_module_name(p): p for p in TARGETS.glob("*.py")}
    return {name: _imported(path) & set(nodes) - {name} for name, path in nodes.items()}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [])):
            return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_targets_import_graph_is_acyclic():
    graph = _targets_graph()
    assert "privaudit.targets._dispatch" in graph and "privaudit.targets._torch" in graph
    assert _find_cycle(graph) is None, f"import cycle: {' -> '.join(_find_cycle(graph))}"
    # The sklearn and torch adapters do not know each other.
    assert "privaudit.targets._torch" not in graph["privaudit.targets._sklearn"]
    assert "privaudit.targets._sklearn" not in graph["privaudit.targets._torch"]


def test_other_packages_use_public_target_names():
    offenders = []
    for path in SRC.rglob("*.py"):
        if TARGETS in path.parents:
            continue
        private = [m for m in _imported(path) if m.startswith("privaudit.targets._")]
        if private:
            offenders.append((_module_name(path), private))
    # Only training/_torch_recipes.py is in this part's hands; it must be clean.
    assert not [o for o in offenders if o[0] == "privaudit.training._torch_recipes"]
    from privaudit.targets import import_torch

    assert import_torch() is torch


class _TextArtefact:
    """A causal LM seen by an audit: no query(X, y), texts are scored elsewhere."""

    name = "tiny-gpt"
    task = "causal-lm"
    n_queries = 0
    reveals_probabilities = True

    def fingerprint(self) -> str | None:
        return "tiny-gpt@3f2a"

    def score_texts(self, texts: list[str]) -> list[float]:
        self.n_queries += len(texts)
        return [0.0] * len(texts)


class _SyntheticTable:
    name, task, n_queries, reveals_probabilities = "synth", "synthetic-table", 0, False

    def fingerprint(self) -> None:
        return None


def test_duck_typed_artefacts_satisfy_the_base_protocol():
    text, table = _TextArtefact(), _SyntheticTable()
    assert isinstance(text, AuditedArtifact) and isinstance(table, AuditedArtifact)
    assert not isinstance(text, Target) and not isinstance(table, Target)
    # Accepted where an audited artefact is expected: the result-key fingerprint.
    assert target_fingerprint(text) == "tiny-gpt@3f2a"
    assert target_fingerprint(table) is None
    # Refused, with a reason, where a model queried record by record is expected.
    with pytest.raises(TypeError, match="has no query"):
        as_target(text)


def test_missing_fingerprint_is_not_an_audited_artefact():
    class NoFingerprint:
        name, task, n_queries, reveals_probabilities = "x", "causal-lm", 0, True

    assert not isinstance(NoFingerprint(), AuditedArtifact)


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    return LogisticRegression().fit(X, y), X, y


def test_every_adapter_is_a_target_and_an_audited_artefact(model):
    est, X, y = model
    adapters = [
        SklearnTarget(est),
        CallableTarget(est.predict_proba, classes=est.classes_),
        LabelOnlyTarget(est.predict, classes=est.classes_),
        TorchTarget(torch.nn.Linear(4, 2).eval()),
    ]
    for adapter in adapters:
        assert isinstance(adapter, Target) and isinstance(adapter, AuditedArtifact)
        fp = adapter.fingerprint()
        assert fp is None or isinstance(fp, str)
        assert isinstance(adapter.reveals_probabilities, bool)
        assert isinstance(adapter.query(X[:5], y[:5]), ModelOutputs)
        assert adapter.n_queries == 5
    assert [a.reveals_probabilities for a in adapters] == [True, True, False, True]


def test_as_target_dispatches_from_its_own_module(model):
    est, _, _ = model
    assert as_target.__module__ == "privaudit.targets._dispatch"
    assert type(as_target(est)) is SklearnTarget
    assert type(as_target(torch.nn.Linear(4, 2).eval())) is TorchTarget
    wrapped = as_target(est, name="lr")
    assert as_target(wrapped) is wrapped and wrapped.name == "lr"
    with pytest.raises(ValueError, match="empty when obj is already a Target"):
        as_target(wrapped, name="again")
    with pytest.raises(TypeError, match="'obj' parameter of as_target"):
        as_target(object())


def test_as_target_keeps_duck_typed_model_targets(model):
    est, X, y = model

    class Wrapped:  # written before fingerprint() and reveals_probabilities existed
        name, task, classes_, n_classes, n_queries = "w", "classification", est.classes_, 2, 0

        def query(self, X, y):
            return ModelOutputs.from_probabilities(y, est.predict_proba(X), est.classes_)

    obj = Wrapped()
    assert as_target(obj) is obj
    assert target_fingerprint(obj) is None
    assert len(as_target(obj).query(X[:3], y[:3])) == 3


def test_public_names():
    for name in ("AuditedArtifact", "as_target", "estimator_fingerprint", "import_torch",
                 "module_fingerprint", "target_fingerprint"):
        assert name in targets_pkg.__all__ and hasattr(targets_pkg, name)


def test_a_classifier_fitted_on_one_class_is_refused_naming_it():
    """scikit-learn fits it (one probability column, always 1): nothing to audit, said once.

    Before, every attack failed on an internal function's 'probabilities' parameter.
    """
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    one_class = DecisionTreeClassifier().fit(X[:20], np.zeros(20, int))
    labels = np.r_[np.ones(10), np.zeros(10)].astype(int)
    with pytest.raises(ValueError, match=r"'estimator' parameter of SklearnTarget must be a "
                                         r"classifier fitted on at least two classes.*\[0\]"):
        privaudit.audit_model(one_class, X[:20], np.zeros(20, int), labels)
