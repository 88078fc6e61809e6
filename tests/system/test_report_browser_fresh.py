"""A fresh run's report read in a real browser: `hvd-vs-ddp run` for real (DDP
over Gloo and Horovod at 2 ranks and the single-process reference, tiny rounds, one
repetition), its report built, then headless Chromium finds nothing a reader would trip
over (hvd_vs_ddp/reports/browser_check.py). A fresh run is what the recorded ones are not:
its cells' environment (Open MPI's session folders, HOROVOD_TIMELINE) carries absolute
paths of this machine, which the report must name relative to the run folder. Skips
without Chromium.

    python -m pytest tests/system/test_report_browser_fresh.py --system-tier extended
"""
from __future__ import annotations

import pytest

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.reports import browser_check, build_report
from tests.launch import TINY_RUN_SUITE_ARGS

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # about a minute of launches


def test_a_fresh_runs_report_reads_well_in_a_browser(tmp_path):
    if browser_check.chromium_path() is None:
        pytest.skip("no Chromium (scripts/test.sh installs it in CI or with "
                    "HVD_VS_DDP_TEST_BROWSER=1)")
    runs = tmp_path / "runs"
    assert cli(["run", "--backends", "single,ddp-gloo,horovod", "--world-sizes", "1,2",
                "--workloads", "mlp", "--repeat", "1", "--runs-dir", str(runs),
                "--name", "fresh", "--suite-args", TINY_RUN_SUITE_ARGS]) == 0
    html = build_report([runs / "fresh"], tmp_path / "out" / "report.html").html
    with browser_check.browser() as b:
        found = browser_check.check_report(b, html, browser_check.axe_path())
    assert not found, f"{len(found)} finding(s):\n" + "\n".join(found)
