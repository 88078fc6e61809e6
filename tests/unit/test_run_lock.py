"""One runner per run directory (hvd_vs_ddp/cli/run_lock.py): a real flock on the
run directory, refused for a second runner until the first releases it; a file system
without locks runs on with a note. (tests/system/test_interrupt.py refuses a second
`--resume` of a real run in progress.)

    python -m pytest tests/unit/test_run_lock.py -q
"""
from __future__ import annotations

import errno
import fcntl
import shutil
from pathlib import Path

import pytest

from hvd_vs_ddp.cli.run_lock import RunBusy, RunLock

SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-small"


def test_a_second_runner_is_refused_until_the_first_lets_go(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)
    first, second = RunLock(run), RunLock(run)
    first.claim()
    first.claim()  # idempotent
    with pytest.raises(RunBusy, match="being run by another"):
        second.claim()
    first.release()
    second.claim()
    second.release()


def test_a_file_system_without_locks_runs_on_with_a_note(tmp_path, monkeypatch, caplog):
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    r = RunLock(run)
    with caplog.at_level("INFO", logger="hvd_vs_ddp"):
        r.claim()
    assert "cannot be locked (No locks available)" in caplog.text
    r.release()
