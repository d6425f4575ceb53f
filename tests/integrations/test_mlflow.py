"""log_mlflow against a real MLflow file store, read back with MlflowClient.

MLflow 3 opens a file store only with MLFLOW_ALLOW_FILE_STORE=true (its database backends
need SQLAlchemy, which mlflow-skinny does not install): the tests opt in as a user must,
and check the error a user gets without it.
"""

from __future__ import annotations

import importlib.util

import pytest
from integration_data import N_BOOTSTRAP, same_number

mlflow = pytest.importorskip("mlflow")

from privaudit.integrations import log_mlflow, read_audit, tracking_items  # noqa: E402
from privaudit.integrations._mlflow import batches, log_items  # noqa: E402


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return f"file:{tmp_path / 'mlruns'}"


def test_every_value_reads_back_from_the_store(store, report_dir):
    run_id = log_mlflow(report_dir, tracking_uri=store, run_name="audit")
    run = mlflow.MlflowClient(store).get_run(run_id)
    expected = tracking_items(read_audit(report_dir))
    assert set(run.data.metrics) == set(expected.metrics)
    assert all(same_number(run.data.metrics[k], v) for k, v in expected.metrics.items())
    assert run.data.params == expected.params
    assert {k: run.data.tags[k] for k in expected.tags} == expected.tags
    assert run.data.tags["privaudit.verdict"] == read_audit(report_dir).verdict.label
    assert run.info.status == "FINISHED" and run.info.run_name == "audit"
    artefacts = mlflow.MlflowClient(store).list_artifacts(run_id, "privaudit")
    assert [a.path for a in artefacts] == ["privaudit/index.html"]


def test_an_active_run_is_logged_into_and_left_open(store, results, monkeypatch):
    mlflow.set_tracking_uri(store)
    try:
        with mlflow.start_run() as active:
            assert log_mlflow(results, n_bootstrap=N_BOOTSTRAP) == active.info.run_id
            given = mlflow.MlflowClient(store).get_run(active.info.run_id)
            assert given.info.status == "RUNNING"
            assert given.data.tags["privaudit.n_results"] == str(len(results))
            # an in-memory audit's page is rendered and attached too
            artefacts = mlflow.MlflowClient(store).list_artifacts(active.info.run_id,
                                                                  "privaudit")
            assert [a.path for a in artefacts] == ["privaudit/index.html"]
    finally:
        mlflow.set_tracking_uri(None)


def test_batches_stay_within_mlflow_limits(store, results):
    """A thousand values per call at most, a hundred parameters or tags: the fewest calls."""
    calls: list[tuple[int, int, int]] = []

    class Counting:
        def log_batch(self, run_id, metrics=(), params=(), tags=()):
            calls.append((len(metrics), len(params), len(tags)))

    items = tracking_items(read_audit(results, n_bootstrap=N_BOOTSTRAP))
    many = items._replace(metrics={f"m{i}": 0.5 for i in range(2500)},
                          params={f"p{i}": "x" for i in range(250)})
    few_metrics = items._replace(params={f"p{i}": "x" for i in range(350)})
    for logged in (items, many, few_metrics):
        calls.clear()
        log_items(Counting(), "run", logged)
        assert [sum(c[i] for c in calls) for i in range(3)] == [
            len(logged.metrics), len(logged.params), len(logged.tags)]
        assert all(m + p + t <= 1000 and p <= 100 and t <= 100 for m, p, t in calls)
        n = [len(part) for part in logged]
        assert len(calls) == max(-(-sum(n) // 1000), -(-n[1] // 100), -(-n[2] // 100))
    # Long parameters: a request stays under MLflow's 1 MB (its REST API's limit).
    long = items._replace(params={f"p{i}": "x" * 6000 for i in range(300)},
                          tags={f"t{i}": "y" * 8000 for i in range(200)})
    packed = list(batches(long))
    sizes = [sum(len(k) + len(str(v)) for k, v in (*b["metrics"], *b["params"], *b["tags"]))
             for b in packed]
    assert max(sizes) < 1_000_000 < sum(sizes) / 3   # the size, not the count, binds
    assert [sum(len(b[part]) for b in packed) for part in ("params", "tags")] == [300, 200]


@pytest.mark.parametrize("where", ["under a file", "refused file store"])
def test_a_store_that_cannot_be_written_names_tracking_uri(tmp_path, monkeypatch, results,
                                                           where):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    if where == "under a file":
        monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        uri, reason = f"file:{blocker / 'mlruns'}", "Not a directory"
    else:
        monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
        uri, reason = f"file:{tmp_path / 'mlruns'}", "MLFLOW_ALLOW_FILE_STORE=true"
    with pytest.raises(ValueError, match="'tracking_uri' parameter of log_mlflow") as info:
        log_mlflow(results, tracking_uri=uri, n_bootstrap=0)
    assert reason in str(info.value) and uri in str(info.value)


def test_a_run_that_is_not_one_is_refused(store, results):
    with pytest.raises(TypeError, match="'run' parameter of log_mlflow"):
        log_mlflow(results, run=3.5, tracking_uri=store, n_bootstrap=0)


def test_a_run_that_refuses_the_values_names_run(store, results):
    """MLflow parameters cannot change: a second audit with other settings is refused."""
    run_id = log_mlflow(results, tracking_uri=store, n_bootstrap=N_BOOTSTRAP)
    with pytest.raises(ValueError, match=r"'run' parameter of log_mlflow.*new run"):
        log_mlflow(results, run=run_id, tracking_uri=store, n_bootstrap=N_BOOTSTRAP + 1)
    # the same values again are accepted (MLflow allows an identical parameter)
    assert log_mlflow(results, run=run_id, tracking_uri=store,
                      n_bootstrap=N_BOOTSTRAP) == run_id


def test_an_in_memory_audit_attaches_the_page_of_its_numbers(store, results, tmp_path):
    """The page rendered with the settings of the values logged: the same numbers."""
    client = mlflow.MlflowClient(store)
    run_id = log_mlflow(results, tracking_uri=store, n_bootstrap=N_BOOTSTRAP)
    page = client.download_artifacts(run_id, "privaudit/index.html", str(tmp_path))
    text = open(page, encoding="utf-8").read()
    auc = client.get_run(run_id).data.metrics["model_v2/loss/auc"]
    assert f"({N_BOOTSTRAP} bootstrap resamples" in text and f"AUC {auc:.3f}" in text
    # html=False: the values alone
    bare = log_mlflow(results, tracking_uri=store, n_bootstrap=N_BOOTSTRAP, html=False)
    assert client.list_artifacts(bare) == []


def test_a_page_without_the_report_extra_says_how_to_log_without_it(store, results,
                                                                    monkeypatch):
    import privaudit.report._html as html

    def missing() -> None:
        raise ImportError("The HTML report needs jinja2: pip install 'privaudit[report]'")

    monkeypatch.setattr(html, "_environment", missing)
    with pytest.raises(ImportError, match=r"privaudit\[report\].*html=False"):
        log_mlflow(results, tracking_uri=store, n_bootstrap=0)
    # nothing was started: the page is rendered before the run
    assert mlflow.MlflowClient(store).search_runs(
        [e.experiment_id for e in mlflow.MlflowClient(store).search_experiments()]) == []


@pytest.mark.parametrize("experiment", ["", "x" * 600, "deleted"])
def test_an_experiment_mlflow_refuses_names_experiment(store, results, experiment):
    client = mlflow.MlflowClient(store)
    if experiment == "deleted":
        client.delete_experiment(client.create_experiment("deleted"))
    with pytest.raises(ValueError, match="'experiment' parameter of log_mlflow") as info:
        log_mlflow(results, tracking_uri=store, experiment=experiment, n_bootstrap=0,
                   html=False)
    assert "tracking_uri" not in str(info.value)
    assert ("deleted" in str(info.value)) == (experiment == "deleted")


def test_without_sqlalchemy_no_store_error_points_to_sqlite(tmp_path, monkeypatch, results):
    """mlflow-skinny has no SQLAlchemy: a database URI is no way out, and is named so."""
    from privaudit.integrations import _mlflow

    monkeypatch.setattr(_mlflow, "_has_sqlalchemy", lambda: False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with pytest.raises(ValueError, match="'tracking_uri' parameter") as refused:
        log_mlflow(results, tracking_uri=f"file:{tmp_path / 'mlruns'}", n_bootstrap=0)
    assert "MLFLOW_ALLOW_FILE_STORE=true" in str(refused.value)
    assert "SQLAlchemy" in str(refused.value) and "pip install mlflow" in str(refused.value)
    if importlib.util.find_spec("sqlalchemy") is None:  # MLflow itself refuses a database
        with pytest.raises(ValueError, match="'tracking_uri' parameter") as database:
            log_mlflow(results, tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", n_bootstrap=0)
        assert "SQLAlchemy" in str(database.value) and "registry" not in str(database.value)
