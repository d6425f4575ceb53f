"""Fixtures of the integration tests: a small audit in memory and as a written report."""

from __future__ import annotations

import pytest
from integration_data import N_BOOTSTRAP, audit_results


@pytest.fixture(scope="session")
def results() -> list:
    return audit_results()


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory, results):
    """The report privaudit writes for ``results`` (HTML, JSON, CSV, result folders)."""
    from privaudit.report import build_report

    out = tmp_path_factory.mktemp("report")
    build_report(results, out, n_bootstrap=N_BOOTSTRAP, title="toy <audit>")
    return out
