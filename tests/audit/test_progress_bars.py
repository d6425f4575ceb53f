"""Progress of the long steps: the attack loop (fresh and reused) and the report bootstrap."""

import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import privaudit
from privaudit._progress import Progress, console_progress
from privaudit.report import build_report


class Recorder(Progress):
    """Keeps every step's description, total and final count."""

    def __init__(self):
        self.steps = []

    def _closed(self, task):
        self.steps.append((task.description, task.total, task.completed))


def _audit(tmp_path, progress):
    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(random_state=0).fit(X[:100], y[:100])
    labels = np.r_[np.ones(100, dtype=np.int8), np.zeros(100, dtype=np.int8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return privaudit.audit_model(model, X[:200], y[:200], labels,
                                     attacks=["loss", "confidence", "gap"],
                                     results_dir=tmp_path, slices=False, progress=progress)


def test_attack_bar_reaches_its_total_fresh_and_reused(tmp_path):
    first, again = Recorder(), Recorder()
    results = _audit(tmp_path, first)
    _audit(tmp_path, again)  # every result reused from the store
    for recorder in (first, again):
        (step,) = [s for s in recorder.steps if s[0].startswith("Attacks on")]
        assert step[1:] == (3, 3)
    recorder = Recorder()
    build_report(results, tmp_path / "report", n_bootstrap=20, progress=recorder)
    assert ("Bootstrap of 3 results", 3, 3) in recorder.steps


def test_console_progress_is_silent_off_a_terminal(tmp_path, capsys):
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=False)
    progress = console_progress(console)
    with progress:
        _audit(tmp_path, progress)
    assert capsys.readouterr().out == ""
    text = console.file.getvalue()
    assert "\x1b[" not in text  # no control characters in a log or a pipe
