"""The example notebook, docs/notebook.ipynb, runs end to end in a kernel of this venv.

It audits the demo's digits MLP (small: 300 members, 4 reference models), shows a result
and the report, and saves the HTML report. Executed with nbclient in a kernel whose spec,
runtime files and IPython profile live in a temporary folder (nothing is written to the
home folder). The test appends one cell, :data:`PROBE`: reference models trained with
``progress=True``, whose bar must be drawn as HTML in the kernel. Every display the kernel
sent is recorded, updates included (nbclient keeps only each output's last state), so that
the bar drawn while the models trained is seen, not only the final counts.
"""

from __future__ import annotations

import base64
import json
import re
import resource
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebook.ipynb"
KERNEL = "privaudit-test"
IMAGE = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')
#: CPU seconds the notebook may take, kernel included (about 15 on an idle core).
CPU_BUDGET = 40.0
#: The cell the test adds: a public API that takes progress=True, in the real kernel.
PROBE = """from sklearn.linear_model import LogisticRegression
from privaudit.training import ReferencePool

ReferencePool(LogisticRegression(max_iter=50), 3, random_state=0).fit(
    X[:200], y[:200], progress=True)"""


class RecordingClient(NotebookClient):
    """A notebook client that keeps every HTML display of each cell, updates included."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.displays: dict[int, list[str]] = defaultdict(list)

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        if msg.get("msg_type") in ("display_data", "update_display_data"):
            self.displays[cell_index].append(msg["content"]["data"].get("text/html", ""))
        return super().process_message(msg, cell, cell_index)


def _kernel_home(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel spec of this venv's Python, and every Jupyter/IPython folder, under root."""
    spec = root / "data" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "privaudit test", "language": "python"}))
    for name, folder in (("JUPYTER_PATH", "data"), ("JUPYTER_DATA_DIR", "data"),
                         ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_CONFIG_DIR", "config"),
                         ("IPYTHONDIR", "ipython")):
        monkeypatch.setenv(name, str(root / folder))
    # One BLAS thread: on a shared machine, idle BLAS threads spin and burn CPU.
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")


def _cpu() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                   resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def _cell(nb: Any, source_start: str, *, whole: bool = False) -> tuple[int, Any]:
    """The code cell whose source starts with ``source_start`` (or is it), and its index."""
    return next((i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and (
        c.source.strip() == source_start if whole else c.source.startswith(source_start)))


def _html(cell: Any) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)


def _assert_a_view(view: str) -> None:
    """A result's or a report's view: the verdict, a metrics table, a real ROC figure."""
    assert "Verdict:" in view and "<table>" in view and "<td>AUC</td>" in view
    images = IMAGE.findall(view)
    assert images and all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert all(len(base64.b64decode(i)) > 5_000 for i in images)  # drawn, not a placeholder


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, RecordingClient, Path,
                                                                 float]:
    root = tmp_path_factory.mktemp("notebook")
    work = root / "work"
    work.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        _kernel_home(root, monkeypatch)
        nb = nbformat.read(NOTEBOOK, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(PROBE))
        client = RecordingClient(nb, timeout=600, kernel_name=KERNEL,
                                 resources={"metadata": {"path": str(work)}})
        before = _cpu()
        client.execute()
        cpu = _cpu() - before
    return nb, client, work, cpu


def test_the_stored_notebook_is_clean_and_valid() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(not c.outputs and c.execution_count is None
               for c in nb.cells if c.cell_type == "code")


def test_it_runs_without_error_or_warning(executed: tuple[Any, ...]) -> None:
    nb, _, _, cpu = executed
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert cpu < CPU_BUDGET, f"the notebook took {cpu:.1f} CPU-s"


def test_progress_true_draws_a_bar_that_ends_with_the_counts(executed: tuple[Any, ...]
                                                             ) -> None:
    nb, client, _, _ = executed
    index, cell = _cell(nb, PROBE)
    drawn = client.displays[index]
    assert any(re.search(r'<progress value="\d" max="3"></progress> \d/3', d) for d in drawn)
    final = _html(cell)
    assert 'class="privaudit-progress"' in final and "<progress" not in final
    assert re.search(r"training reference models: 3/3 \(\d+\.\d s\)", final), final


def test_a_result_and_the_report_show_themselves(executed: tuple[Any, ...]) -> None:
    nb, _, _, _ = executed
    result = _html(_cell(nb, "lira = report[1]")[1])
    _assert_a_view(result)
    assert "AttackResult: lira-offline on digits-mlp (sklearn::digits)" in result
    report = _html(_cell(nb, "report", whole=True)[1])
    _assert_a_view(report)
    assert "<details><summary>All metrics" in report and "<td>digits-mlp" in report


def test_the_html_report_is_saved(executed: tuple[Any, ...]) -> None:
    nb, _, work, _ = executed
    cell = _cell(nb, "index = report.report(")[1]
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    assert text.startswith("index.html") and "'metrics.csv'" in text
    page = (work / "digits-report" / "index.html").read_text(encoding="utf-8")
    assert "Digits MLP audit" in page and "lira-offline" in page
