"""The runner's progress lines go to sys.stderr as it is when the run starts, not as it was
when hvd_vs_ddp/cli/runner.py was imported (pytest's capture swaps sys.stderr per test and
closes the old one: a second in-process `run` in one session then failed with "I/O
operation on closed file", tests/system/test_full_disk_cell.py after another test).

    python -m pytest tests/unit/test_progress_stream.py -q
"""
from __future__ import annotations

import io
import sys

from hvd_vs_ddp.cli.runner import Progress


def test_progress_writes_to_the_current_stderr(monkeypatch):
    now = io.StringIO()
    monkeypatch.setattr(sys, "stderr", now)
    Progress().start(0, 2, "cell-a")
    assert "1/2 cell-a" in now.getvalue()
