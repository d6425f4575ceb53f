"""Crafted skops files: loading a model never runs code the file names.

Every payload is built here, in tmp_path: a harmless model is dumped with skops and its
schema.json rewritten, as an attacker would. Each test checks that the payload is refused
with a clear error and that its marker file was never created.
"""

from __future__ import annotations

import json
import pickle
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression
from skops_payloads import call_node, empty_dict_node, hide_in_param, ref_node, tuple_node

from privaudit.exceptions import PrivauditWarning
from privaudit.targets import UntrustedTypesError, load_sklearn_model, save_sklearn_model

X = np.random.default_rng(0).normal(size=(30, 3))
Y = (X[:, 0] > 0).astype(int)


# ------------------------------------------------------------------ building payloads

def craft(tmp_path: Path, payload: dict[str, Any], name: str = "evil.skops") -> Path:
    """Dump a real LogisticRegression, then hide ``payload`` in its ``C`` parameter."""
    path = tmp_path / name
    save_sklearn_model(LogisticRegression().fit(X, Y), path)
    hide_in_param(path, payload)
    return path


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "PWNED"


def _touch_script(tmp_path: Path, marker: Path) -> Path:
    script = tmp_path / "payload.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    return script


def _payloads(tmp_path: Path, marker: Path) -> dict[str, dict[str, Any]]:
    shell = f"touch {marker}"
    write = f"open({str(marker)!r}, 'w').write('ran')"
    return {
        "check_output": call_node("sklearn.utils._testing.check_output", ["sh", "-c", shell]),
        "check_output-ctor": call_node("sklearn.utils._testing.check_output",
                                       ["sh", "-c", shell], loader="ConstructorFromReduceNode"),
        "exec": call_node("builtins.exec", write, loader="ConstructorFromReduceNode"),
        "eval": call_node("builtins.eval", write),
        "os.system": call_node("os.system", shell),
        "posix.system": call_node("posix.system", shell),
        "subprocess.Popen": call_node("subprocess.Popen", ["sh", "-c", shell]),
        "subprocess.call": call_node("subprocess.call", "true"),
        "operator.attrgetter": {"__class__": "attrgetter", "__module__": "operator",
                                "__loader__": "OperatorFuncNode", "attrs": tuple_node("system")},
        "functools.partial": {
            "__class__": "partial", "__module__": "functools", "__loader__": "PartialNode",
            "content": {"func": ref_node("os.system"), "args": tuple_node(shell),
                        "kwds": empty_dict_node(), "namespace": empty_dict_node()}},
        "importlib.import_module": call_node("importlib.import_module", "this_is_not_real"),
        "runpy.run_path": call_node("runpy.run_path", str(tmp_path / "payload.py")),
        "numpy.testing.runstring": call_node("numpy.testing.runstring", write, {}),
        "ndarray-call": {"__class__": "system", "__module__": "os", "__loader__": "NdArrayNode",
                         "type": "json", "content": [], "shape": tuple_node(0)},
        "function-ref-os.system": ref_node("os.system"),
        "type-ref-exec": ref_node("builtins.exec", loader="TypeNode"),
        # A function privaudit admits as a *reference* (SelectKBest's score_func), made to
        # be called while loading: refused.
        "f_classif-called": call_node(
            "sklearn.feature_selection._univariate_selection.f_classif", [[1.0]], [0]),
        # An estimator class is trusted, but a method of it is not.
        "method": {"__class__": "LogisticRegression", "__loader__": "MethodNode",
                   "__module__": "sklearn.linear_model._logistic",
                   "content": {"func": "fit", "obj": ref_node(
                       "sklearn.linear_model._logistic.LogisticRegression", "ObjectNode")}},
    }


PAYLOAD_NAMES = sorted(_payloads(Path("/nonexistent"), Path("/nonexistent/m")))


# ---------------------------------------------------------------------------- tests

def test_the_check_output_payload_is_live(tmp_path, marker):
    # The file of the issue: plain skops.io.load, once told to trust the type, runs the
    # shell command. privaudit refuses it with its default settings and with trusted=[].
    path = craft(tmp_path, _payloads(tmp_path, marker)["check_output"])
    assert sio.get_untrusted_types(file=str(path)) == ["sklearn.utils._testing.check_output"]
    for trusted in (None, []):
        with pytest.raises(UntrustedTypesError, match="check_output") as info:
            load_sklearn_model(path, trusted=trusted)
        assert info.value.types == ["sklearn.utils._testing.check_output"]
        assert "Nothing was executed" in str(info.value)
        assert not marker.exists()
    sio.load(str(path), trusted=["sklearn.utils._testing.check_output"])
    assert marker.exists()  # the payload works: the refusal above is what stopped it


@pytest.mark.parametrize("name", PAYLOAD_NAMES)
def test_crafted_payload_is_refused(tmp_path, marker, name):
    _touch_script(tmp_path, marker)  # what runpy.run_path would run
    path = craft(tmp_path, _payloads(tmp_path, marker)[name])
    with pytest.raises(UntrustedTypesError) as info:
        load_sklearn_model(path)
    assert info.value.types
    assert not marker.exists()


@pytest.mark.parametrize("name", ["builtins.exec", "os.system", "subprocess.Popen",
                                  "sklearn.utils._testing.check_output", "runpy.run_path",
                                  "functools.partial", "operator.attrgetter",
                                  "importlib.import_module", "numpy.testing.runstring"])
def test_forbidden_names_are_refused_even_when_the_user_trusts_them(tmp_path, marker, name):
    path = craft(tmp_path, call_node(name, f"touch {marker}"))
    with pytest.raises(ValueError, match="'trusted' parameter of load_sklearn_model"):
        load_sklearn_model(path, trusted=[name])
    assert not marker.exists()


def touch(path: str) -> None:
    """A user's function that has a side effect when called."""
    Path(path).write_text("ran")


def test_a_trusted_user_function_is_never_called_while_loading(tmp_path, marker):
    name = f"{__name__}.touch"
    path = craft(tmp_path, call_node(name, str(marker)))
    with pytest.raises(UntrustedTypesError, match="touch"):
        load_sklearn_model(path, trusted=[name])
    assert not marker.exists()
    # As a mere reference (e.g. FunctionTransformer's func) it loads, with a warning.
    path = craft(tmp_path, ref_node(name), name="ref.skops")
    with pytest.warns(PrivauditWarning, match="Trusting the function"):
        model = load_sklearn_model(path, trusted=[name])
    assert model.C is touch and not marker.exists()


def test_a_trusted_name_that_does_not_import_is_refused(tmp_path):
    path = craft(tmp_path, call_node("no_such_module_xyz.Thing", 1))
    with pytest.raises(UntrustedTypesError, match="no_such_module_xyz"):
        load_sklearn_model(path, trusted=["no_such_module_xyz.Thing"])
    assert "no_such_module_xyz" not in sys.modules


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (Path(self.marker), "ran"))


def test_a_pickle_renamed_skops_is_not_unpickled(tmp_path, marker):
    path = tmp_path / "model.skops"
    path.write_bytes(pickle.dumps(_Evil(marker)))
    with pytest.raises(ValueError, match="not a readable skops file"):
        load_sklearn_model(path)
    assert not marker.exists()


@pytest.mark.parametrize("content", ["empty", "no-schema", "bad-json", "deep", "no-loader"])
def test_damaged_files_give_one_clear_error(tmp_path, content):
    path = tmp_path / "model.skops"
    if content == "empty":
        path.write_bytes(b"")
    else:
        schema = {"no-schema": None, "bad-json": "{not json",
                  "deep": "[" * 100_000 + "]" * 100_000,
                  "no-loader": json.dumps({"__class__": "x", "__module__": "y",
                                           "protocol": 2})}[content]
        with zipfile.ZipFile(path, "w") as zf:
            if schema is not None:
                zf.writestr("schema.json", schema)
    with pytest.raises(ValueError, match="not a readable skops file") as info:
        load_sklearn_model(path)
    assert str(path) in str(info.value)


def test_a_user_class_trusted_by_name_loads(tmp_path):
    # The supported extension: a user's own estimator class, named in trusted.
    model = _MyClassifier().fit(X, Y)
    path = tmp_path / "mine.skops"
    save_sklearn_model(model, path)
    with pytest.raises(UntrustedTypesError, match="_MyClassifier"):
        load_sklearn_model(path)
    loaded = load_sklearn_model(path, trusted=[f"{__name__}._MyClassifier"])
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


class _MyClassifier(LogisticRegression):
    pass


@pytest.mark.parametrize("name", ["check_output-ctor", "exec", "eval", "os.system",
                                  "runpy.run_path", "numpy.testing.runstring"])
def test_the_payloads_are_live_under_blind_trust(tmp_path, marker, name):
    # Proof that the refusals above stop real payloads: skops told to trust every type
    # the file names runs them.
    _touch_script(tmp_path, marker)
    path = craft(tmp_path, _payloads(tmp_path, marker)[name])
    try:
        sio.load(str(path), trusted=sio.get_untrusted_types(file=str(path)))
    except Exception:  # the payload ran; what it returned need not make a model
        pass
    assert marker.exists()


# ------------------------------------------- trusted types with crafted content (trees)

def _edit_nodes(path: Path, class_name: str, edit: Any) -> None:
    """Apply ``edit`` to the node array of the first ``class_name`` object in the file."""
    with zipfile.ZipFile(path) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    stack: list[Any] = [json.loads(files["schema.json"])]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("__class__") == class_name:
                break
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    content = item["content"]["content"]
    name = content["nodes"]["file"]
    import io

    nodes = np.load(io.BytesIO(files[name]), allow_pickle=False)
    edit(nodes)
    buf = io.BytesIO()
    np.save(buf, nodes, allow_pickle=False)
    files[name] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as zf:
        for n, data in files.items():
            zf.writestr(n, data)


def _set(field: str, index: int, value: int) -> Any:
    def edit(nodes: np.ndarray) -> None:
        nodes[field][index] = value
    return edit


@pytest.mark.parametrize("edit", [
    _set("left_child", 0, 10**6), _set("right_child", 0, -5), _set("left_child", 0, 0),
    _set("feature", 0, 99),
])
def test_a_tree_with_crafted_node_indices_is_refused(tmp_path, edit):
    from sklearn.tree import DecisionTreeClassifier

    path = tmp_path / "tree.skops"
    save_sklearn_model(DecisionTreeClassifier(random_state=0).fit(X, Y), path)
    assert load_sklearn_model(path).tree_.node_count > 1
    _edit_nodes(path, "Tree", edit)
    with pytest.raises(ValueError, match="index outside its memory"):
        load_sklearn_model(path)


@pytest.mark.parametrize("edit", [
    _set("left", 0, 10**6), _set("right", 0, 0), _set("feature_idx", 0, 50),
])
def test_a_hist_gradient_boosting_tree_with_crafted_nodes_is_refused(tmp_path, edit):
    from sklearn.ensemble import HistGradientBoostingClassifier

    path = tmp_path / "hgb.skops"
    save_sklearn_model(HistGradientBoostingClassifier(max_iter=2, min_samples_leaf=2).fit(X, Y),
                       path)
    load_sklearn_model(path)
    _edit_nodes(path, "TreePredictor", edit)
    with pytest.raises(ValueError, match="index outside its memory"):
        load_sklearn_model(path)
