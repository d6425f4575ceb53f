"""Code a configuration names (``module:function``) runs; nothing else in its folder does.

A ``sklearn.py``, ``torch.py`` or ``ctgan.py`` planted beside the configuration used to run
instead of the real library when the named module imported it (the folder was put first
on ``sys.path``). Every key that names code (``generators[i].callable``,
``target.factory``, ``reference.recipe.train``) now imports the named module from its own
file only; the module's imports come from the installed packages. The audits run in
fresh processes so that the libraries are not imported yet when the named module is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.cli._imports import import_named
from privaudit.exceptions import OutsideFolderError

runner = CliRunner()


def plant(folder: Path, *names: str) -> Path:
    """Files beside the configuration that leave a marker if they are ever imported."""
    marker = folder / "PLANTED-CODE-RAN"
    for name in names:
        (folder / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
    return marker


#: What the command's process runs first: the report's figures are not drawn, one
#: placeholder PNG stands for each (as with the figures_not_drawn fixture of
#: tests/conftest.py). These tests are about imports; drawing was a fifth of their CPU
#: time. The module patched imports none of the planted names: the process checks it.
NOT_DRAWN = """
import sys
import privaudit.report._common
planted = {{"sklearn", "torch", "safetensors", "colorsys", "ctgan"}} & set(sys.modules)
assert not planted, planted
for name, module in list(sys.modules.items()):
    if name.startswith("privaudit.report") and hasattr(module, "figure_png"):
        module.figure_png = lambda fig, **kwargs: {png!r}
"""


def run_cli(*args: str, cwd: Path, placeholder: bytes) -> subprocess.CompletedProcess:
    """The privaudit command in a fresh process, started from another folder."""
    cwd.mkdir(exist_ok=True)
    code = NOT_DRAWN.format(png=placeholder) + "from privaudit.cli import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code, *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600, check=False)


def table(folder: Path, n: int = 120) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(18, 80, n), "income": rng.lognormal(10, 1, n),
                          "city": rng.choice(["a", "b", "c"], n)})
    frame.to_csv(folder / "population.csv", index=False)
    return folder / "population.csv"


GENERATOR = """
import sklearn.utils  # the real library: the planted sklearn.py has no utils

def copier(train, n_rows, *, random_state):
    rng = sklearn.utils.check_random_state(random_state % 2**32)
    return train.iloc[rng.randint(0, len(train), n_rows)].reset_index(drop=True)
"""


def test_audit_generator_with_a_callable_never_runs_files_beside_it(tmp_path, placeholder_png):
    marker = plant(tmp_path, "sklearn", "ctgan")
    table(tmp_path)
    (tmp_path / "my_generators.py").write_text(GENERATOR)
    (tmp_path / "audit.yaml").write_text(
        "data: {path: population.csv}\n"
        "n_targets: 1\n"
        "generators: [{name: mine, callable: 'my_generators:copier'}]\n"
        "game: {n_train_rows: 40, n_shadow_runs: 4, n_test_runs: 4}\n"
        "attacks: [closest-distance]\n"
        "executor: {name: local, n_jobs: 2}\n"  # workers get the function by value
        "report: {out: rep, n_bootstrap: 10}\n")
    done = run_cli("audit", "generator", "--config", str(tmp_path / "audit.yaml"),
                   cwd=tmp_path / "elsewhere", placeholder=placeholder_png)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert (tmp_path / "rep" / "index.html").exists()


def test_a_module_importing_a_planted_library_fails_and_says_why(tmp_path):
    marker = plant(tmp_path, "ctgan")
    table(tmp_path)
    (tmp_path / "uses_ctgan.py").write_text("import ctgan\n\ndef gen(train, n, *, random_state):"
                                            "\n    return ctgan.sample(n)\n")
    (tmp_path / "audit.yaml").write_text(
        "data: {path: population.csv}\n"
        "generators: [{name: x, callable: 'uses_ctgan:gen'}]\n")
    result = runner.invoke(app, ["audit", "generator", "--config",
                                 str(tmp_path / "audit.yaml")])
    assert result.exit_code == 2
    assert not marker.exists()
    assert "generators[0].callable" in result.output
    assert "'ctgan' is a file in the configuration's folder" in result.output
    assert "Traceback" not in result.output


FACTORY = """
import torch  # the real library: the planted torch.py has no nn

def build():
    return torch.nn.Linear(4, 2)
"""


def test_audit_model_with_a_torch_factory_never_runs_files_beside_it(tmp_path, placeholder_png):
    torch = pytest.importorskip("torch")
    from privaudit.targets import save_torch_model

    marker = plant(tmp_path, "torch", "safetensors")
    (tmp_path / "nets.py").write_text(FACTORY)
    torch.manual_seed(0)
    save_torch_model(torch.nn.Linear(4, 2), tmp_path / "net.safetensors")
    rng = np.random.default_rng(0)
    data = pd.DataFrame(rng.normal(size=(60, 4)), columns=list("abcd"))
    data["y"], data["m"] = rng.integers(0, 2, 60), np.r_[np.ones(30, int), np.zeros(30, int)]
    data.to_csv(tmp_path / "audited.csv", index=False)
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump({
        "target": {"type": "torch", "path": "net.safetensors", "factory": "nets:build"},
        "data": {"path": "audited.csv", "label_column": "y", "membership_column": "m"},
        "attacks": ["loss"], "report": {"out": "rep", "n_bootstrap": 10}}))
    done = run_cli("audit", "model", "--config", str(tmp_path / "audit.yaml"),
                   cwd=tmp_path / "elsewhere", placeholder=placeholder_png)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


RECIPE = """
import colorsys  # a standard module not imported before this one: the planted one has no hls
from sklearn.tree import DecisionTreeClassifier

SCALE = colorsys.rgb_to_hls(1.0, 1.0, 1.0)[1]  # 1.0 from the real colorsys

def train(X, y, *, random_state):
    return DecisionTreeClassifier(max_depth=int(3 * SCALE), random_state=random_state).fit(X, y)
"""


def test_audit_model_with_a_callable_recipe_in_workers_never_runs_files_beside_it(
        tmp_path, placeholder_png):
    from sklearn.tree import DecisionTreeClassifier

    from privaudit.targets import save_sklearn_model

    marker = plant(tmp_path, "sklearn", "colorsys")
    (tmp_path / "recipes.py").write_text(RECIPE)
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(160, 3)), columns=list("abc"))
    y = (X["a"] + rng.normal(size=160) > 0).astype(int)
    save_sklearn_model(DecisionTreeClassifier(random_state=0).fit(X[:40], y[:40]),
                       tmp_path / "tree.skops")
    audited = X[:80].assign(y=y[:80], m=np.r_[np.ones(40, int), np.zeros(40, int)])
    audited.to_csv(tmp_path / "audited.csv", index=False)
    X[80:].assign(y=y[80:]).to_csv(tmp_path / "population.csv", index=False)
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump({
        "target": {"path": "tree.skops"},
        "data": {"path": "audited.csv", "label_column": "y", "membership_column": "m"},
        "population": {"path": "population.csv"},
        "attacks": ["lira-offline"],
        "reference": {"n_models": 2, "recipe": {"type": "callable", "train": "recipes:train"}},
        "executor": {"name": "local", "n_jobs": 2},
        "report": {"out": "rep", "n_bootstrap": 10}}))
    done = run_cli("audit", "model", "--config", str(tmp_path / "audit.yaml"),
                   cwd=tmp_path / "elsewhere", placeholder=placeholder_png)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


# ------------------------------------------------------------------ import_named itself


def test_the_folder_is_never_on_sys_path_so_no_sibling_is_imported(tmp_path):
    sibling = f"planted_{uuid.uuid4().hex}"  # a name no process has imported
    marker = plant(tmp_path, sibling)
    (tmp_path / "mine.py").write_text(f"import {sibling}\n")
    path_before = list(sys.path)
    with pytest.raises(ImportError, match=f"{sibling!r} is a file in the configuration"):
        import_named("mine:f", tmp_path, key="target.factory")
    assert sys.path == path_before and not marker.exists()
    assert sibling not in sys.modules


def test_a_file_shadowing_an_installed_module_is_refused(tmp_path):
    marker = plant(tmp_path, "yaml")
    with pytest.raises(ImportError, match="shadow a library"):
        import_named("yaml:safe_load", tmp_path, key="k")
    assert not marker.exists()


def test_installed_modules_and_dotted_files_resolve(tmp_path):
    assert import_named("os.path:join", tmp_path, key="k") is os.path.join
    (tmp_path / "pkg_x").mkdir()
    (tmp_path / "pkg_x" / "mod.py").write_text("class Net:\n    def build(self):\n"
                                               "        return 3\n")
    build = import_named("pkg_x.mod:Net.build", tmp_path, key="k")
    assert build(None) == 3


@pytest.mark.parametrize("spec, message", [
    ("nowhere:f", "no file"),
    ("a-b:f", "'module:function'"),
    ("../up:f", "'module:function'"),
    ("mine", "'module:function'"),
    ("mine:missing", "has no 'missing'"),
])
def test_bad_names_are_named(tmp_path, spec, message):
    (tmp_path / "mine.py").write_text("x = 1\n")
    with pytest.raises((ImportError, AttributeError), match=message):
        import_named(spec, tmp_path, key="k")


def test_a_module_file_linked_outside_the_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("raise SystemExit('ran')\n")
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "mine.py").symlink_to(outside / "evil.py")
    with pytest.raises(OutsideFolderError):
        import_named("mine:f", folder, key="target.factory")


def test_functions_and_classes_of_a_loaded_module_reach_workers_by_value(tmp_path):
    from privaudit.training import LocalExecutor

    (tmp_path / "shapes.py").write_text(
        "from dataclasses import dataclass\n\n@dataclass\nclass Box:\n    v: int\n\n"
        "def boxed(x, *, k):\n    return Box(x * k)\n")
    boxed = import_named("shapes:boxed", tmp_path, key="k")
    with LocalExecutor(2) as ex:
        got = sorted((i, r.v) for i, r in ex.map_unordered(boxed, [(1,), (2,)],
                                                           shared={"k": 3}))
    assert got == [(0, 3), (1, 6)]


def test_functions_of_a_loaded_module_reach_ray_workers(tmp_path, ray_executor):
    # ray_executor: the session's local Ray instance (skips when Ray is not installed).
    (tmp_path / "double.py").write_text("def twice(x):\n    return 2 * x\n")
    twice = import_named("double:twice", tmp_path, key="k")
    assert sorted(ray_executor.map_unordered(twice, [(1,), (5,)])) == [(0, 2), (1, 10)]
