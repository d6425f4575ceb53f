"""log_wandb in W&B offline mode (no server), read back from the run's own file."""

from __future__ import annotations

import pytest
from _wandb_file import read_offline_run
from integration_data import N_BOOTSTRAP, same_number

wandb = pytest.importorskip("wandb")

from privaudit.integrations import log_wandb, read_audit, tracking_items  # noqa: E402


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """W&B offline, every file it writes (settings, cache, runs) inside ``tmp_path``."""
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    return tmp_path / "runs"


def _check_run(logged: dict, report) -> None:
    """The first history row holds every metric; the config and summary the rest."""
    expected = tracking_items(read_audit(report, n_bootstrap=N_BOOTSTRAP))
    row = logged["history"][0]  # one wandb.log call: one history row
    assert set(row) - {"_step", "_runtime", "_timestamp"} == set(expected.metrics)
    assert all(same_number(row[k], v) for k, v in expected.metrics.items())
    assert {k: logged["config"][k] for k in expected.params} == expected.params
    assert {k: logged["summary"][k] for k in expected.tags} == expected.tags


def test_a_new_offline_run_holds_every_value(offline, report_dir):
    run_id = log_wandb(report_dir, project="audit", dir=offline)
    (run_dir,) = (offline / "wandb").glob(f"offline-run-*-{run_id}")
    logged = read_offline_run(run_dir)
    assert len(logged["history"]) == 1
    _check_run(logged, report_dir)
    assert logged["artifacts"] == [("privaudit-report", "privacy-report")]


def test_a_given_run_is_logged_into_and_left_open(offline, results):
    offline.mkdir()
    run = wandb.init(project="audit", dir=str(offline))
    try:
        assert log_wandb(results, run=run, n_bootstrap=N_BOOTSTRAP) == run.id
        run.log({"after": 1.0})  # still open: the caller's to finish
    finally:
        run.finish()
    (run_dir,) = (offline / "wandb").glob(f"offline-run-*-{run.id}")
    logged = read_offline_run(run_dir)
    assert [row.get("after") for row in logged["history"]] == [None, 1.0]
    _check_run(logged, results)
    # an in-memory audit's page is rendered and attached too
    assert logged["artifacts"] == [("privaudit-report", "privacy-report")]


def test_a_run_that_is_not_one_is_refused(results):
    with pytest.raises(TypeError, match="'run' parameter of log_wandb"):
        log_wandb(results, run="not a run", n_bootstrap=0)


def test_a_run_wandb_refuses_to_start_is_one_error_naming_mode(offline, results,
                                                              monkeypatch):
    """Online without an API key: W&B's refusal, with the way out (offline mode)."""
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setenv("HOME", str(offline.parent))  # no ~/.netrc login either
    with pytest.raises(ValueError, match=r"'mode' parameter of log_wandb.*WANDB_MODE=offline"):
        log_wandb(results, mode="online", dir=offline, n_bootstrap=0)


@pytest.mark.parametrize("project", ["proj/with:bad?chars", "p" * 200])
def test_a_project_wandb_refuses_names_project(offline, results, project):
    """W&B's own rule for project names; offline, nobody is told to log in."""
    with pytest.raises(ValueError, match="'project' parameter of log_wandb") as info:
        log_wandb(results, project=project, dir=offline, n_bootstrap=0, html=False)
    assert "log in" not in str(info.value) and "'mode'" not in str(info.value)
    with pytest.raises(ValueError, match="'mode' parameter of log_wandb must be a mode W&B"):
        log_wandb(results, mode="bogus", dir=offline, n_bootstrap=0, html=False)


def test_an_offline_run_that_fails_does_not_ask_for_a_login(offline, results, monkeypatch):
    def refuse(**_: object) -> None:
        raise wandb.errors.Error("the run folder cannot be written")

    monkeypatch.setattr(wandb, "init", refuse)
    with pytest.raises(ValueError, match="offline run for log_wandb") as info:
        log_wandb(results, dir=offline, n_bootstrap=0, html=False)
    assert "cannot be written" in str(info.value) and "log in" not in str(info.value)
