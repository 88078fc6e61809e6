"""How the unit tests share the cores when scripts/test.sh runs them on pytest-xdist workers
(`-n auto`): what is expensive is computed once, not once per worker.

- The published rows' projection (`published_rows.project_all`, ~30 CPU-s when nothing
  is kept yet: after every change to the package, so in CI) is computed once:
  hvd_vs_ddp/projection/row_cache.py locks each value it computes, and the files that ask
  for it (PROJECTION_ROWS) run on one worker, one after the other, so that the other
  worker goes on with other tests instead of waiting on the lock (in a fresh clone two
  of them waited 24 s each for the one that computed it).
- The report of each recorded run (tests/fixtures/runs/NAME, with the default options) is
  built once, by the session fixture `recorded_report`, and only read by the tests that
  ask for it; the files that ask (RECORDED_REPORTS) run on one worker, so each report is
  built once in the whole tier (about 8 CPU-s each; eight builds were repeated before).
- The files whose tests share an expensive module-scoped fixture (a report with its
  figures, a projection) run on one worker (WHOLE_FILE), so that fixture is built once;
  every other test may go to either worker (as with `--dist load`).

    python -m pytest tests/unit -n auto -q          # what scripts/test.sh runs
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.xdist_groups import grouped

RECORDED_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
# The files whose tests read the reports of recorded runs (`recorded_report`).
RECORDED_REPORTS = frozenset({"test_report_browser.py", "test_report_fixtures.py",
                              "test_verdicts.py", "test_input_report.py",
                              "test_compiled_report.py", "test_recovery_report.py",
                              "test_why_report.py"})

# Each file's tests share a module-scoped fixture that builds a report or a projection.
WHOLE_FILE = frozenset({"test_output_gate.py", "test_reports.py", "test_verdict_sim.py",
                        "test_tuning_report.py", "test_cost.py"})

# The files whose tests ask for the published rows' projection (row_cache's one value).
PROJECTION_ROWS = frozenset({"test_projection.py", "test_projection_at_scale_sources.py",
                             "test_projection_published_inputs.py",
                             "test_projection_scale.py", "test_output_gate.py"})


def _under_unit(config: pytest.Config) -> bool:
    """Only the unit tests are asked for (tests/system has a scheduler of its own)."""
    args = [a.split("::")[0] for a in config.args] or ["."]
    return all("tests/unit" in os.path.abspath(a) for a in args)


@pytest.fixture(scope="session")
def recorded_report(tmp_path_factory):
    """recorded_report(NAME) -> the ReportPaths of tests/fixtures/runs/NAME's report with
    the default options, built on this worker's first use; read it, never change it."""
    from hvd_vs_ddp.reports import build_report

    built: dict[str, Any] = {}

    def get(name: str):
        if name not in built:
            out = tmp_path_factory.mktemp(f"recorded-{name}") / "out" / "report.html"
            built[name] = build_report([RECORDED_RUNS / name], out)
        return built[name]
    return get


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's, where it is loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Each test is a unit of its own, except the files of PROJECTION_ROWS and of
    RECORDED_REPORTS (each set together one unit) and of WHOLE_FILE (a unit each; the
    larger units are handed out first: xdist's --loadscope-reorder)."""
    if not _under_unit(config) or config.getoption("dist") not in ("load", "loadscope"):
        return None
    return grouped(config, log, {"projection-rows": PROJECTION_ROWS,
                                 "recorded-reports": RECORDED_REPORTS}, WHOLE_FILE)
