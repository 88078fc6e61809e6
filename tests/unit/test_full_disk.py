"""A full disk while results are written: the old files stay, no temporary file is
left, and the error is one line that says what happened.

Two real sources of ENOSPC, no mock:
- a small tmpfs (`mount -t tmpfs -o size=...`), filled to the last block; needs root
  (CAP_SYS_ADMIN): skipped with the reason where mounting is not permitted;
- /dev/full, whose every write fails with ENOSPC: the writers' temporary file is a
  fixed sibling name (`.NAME.tmp-PID`), so a symlink planted there sends the write to
  /dev/full; this works without root.

What is written and where: the run's manifest (runner save(), through
hvd_vs_ddp.results_schema.io.write_json_atomic), a report's HTML, Markdown, figures and
verdicts.json (hvd_vs_ddp/reports/build.py, through write_files_atomic: all temporary files
first, then the renames). A cell's own results file is written by rank 0 of the
suites (hvd_vs_ddp/harness/collective_pytest.py: a partial file renamed at the end) inside the
cell's process, so a full disk there fails that cell like any other failure.

    python -m pytest tests/unit/test_full_disk.py -q
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.common import output_formats
from hvd_vs_ddp.common.log import log
from hvd_vs_ddp.common.outputs import Output
from hvd_vs_ddp.results_schema import FORMAT, WriteError, write_files_atomic, write_json_atomic
from tests.launch import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "runs"
SMALL, FAILED = FIXTURES / "cpu-small", FIXTURES / "cpu-failed-cell"
ENOSPC_TEXT = os.strerror(errno.ENOSPC)  # "No space left on device"


def snapshot(path: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def temp_files(path: Path) -> list[Path]:
    return [p for p in path.rglob(".*") if ".tmp" in p.name or ".partial" in p.name]


def fill(disk: Path) -> None:
    """Write a filler file until the file system has no block left."""
    with open(disk / "filler", "ab", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC, err
    st = os.statvfs(disk)
    assert st.f_bavail == 0, "the tmpfs still has room"


@pytest.fixture(autouse=True)
def fresh_log_handler(monkeypatch):
    """The project logger binds sys.stderr once: let it bind this test's captured one."""
    monkeypatch.setattr(log, "handlers", [h for h in log.handlers
                                          if not getattr(h, "_hvd_vs_ddp", False)])


@pytest.fixture
def tmpfs(tmp_path):
    """A mount point; mount(size) mounts a fresh tmpfs of that size there."""
    point = tmp_path / "disk"
    point.mkdir()
    mounted = []

    def mount(size: str) -> Path:
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                               str(point)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode}); "
                        "the /dev/full tests cover the same code without root")
        mounted.append(point)
        return point

    yield mount
    for p in mounted:
        subprocess.run(["umount", "-l", str(p)], check=False)


def plant_dev_full(target: Path) -> Path:
    """Make the writers' temporary file of `target` a symlink to /dev/full."""
    if not Path("/dev/full").is_char_device():
        pytest.skip("no /dev/full on this machine")
    link = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    link.symlink_to("/dev/full")
    return link


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


# ---------------------------------------------------------------- hvd_vs_ddp/results_schema/io.py
def test_json_write_into_dev_full_keeps_the_old_file(tmp_path):
    path = tmp_path / "manifest.json"
    write_json_atomic(path, {"format": FORMAT, "old": True}, kind=FORMAT, owner=path.parent)
    link = plant_dev_full(path)
    with pytest.raises(WriteError) as e:
        write_json_atomic(path, {"format": FORMAT, "new": True}, kind=FORMAT, owner=path.parent)
    assert e.value.errno == errno.ENOSPC and isinstance(e.value, OSError)
    assert str(e.value) == f"writing {path}: {ENOSPC_TEXT}"
    assert json.loads(path.read_text()) == {"format": FORMAT, "old": True}
    assert not link.is_symlink() and sorted(tmp_path.iterdir()) == [path]


def _marked(out: Output, text: str) -> bytes:
    return (output_formats.text_marker(out.kind, out.inputs) + text).encode()


def test_a_set_of_files_is_written_all_or_nothing(tmp_path):
    a, b, c = (Output(tmp_path / n, output_formats.REPORT_HTML)
               for n in ("a.html", "b.md", "c.html"))
    write_files_atomic({o: _marked(o, f"old {o.path.name}") for o in (a, b, c)})
    old = [o.path.read_bytes() for o in (a, b, c)]
    plant_dev_full(c.path)  # the last of the three fails
    with pytest.raises(WriteError, match=f"writing {c.path}: {ENOSPC_TEXT}"):
        write_files_atomic({o: _marked(o, f"new {o.path.name}") for o in (a, b, c)})
    assert [o.path.read_bytes() for o in (a, b, c)] == old
    a, b, c = (o.path for o in (a, b, c))
    assert sorted(tmp_path.iterdir()) == [a, b, c]


def test_json_write_onto_a_full_tmpfs_keeps_the_old_file(tmpfs):
    disk = tmpfs("256k")
    path = disk / "manifest.json"
    write_json_atomic(path, {"format": FORMAT, "cells": ["x" * 1000]}, kind=FORMAT,
                      owner=path.parent)
    before = path.read_bytes()
    fill(disk)
    with pytest.raises(WriteError) as e:
        write_json_atomic(path, {"format": FORMAT, "cells": ["y" * 20000]}, kind=FORMAT,
                          owner=path.parent)
    assert e.value.errno == errno.ENOSPC
    assert str(e.value) == f"writing {path}: {ENOSPC_TEXT}"
    assert path.read_bytes() == before and not temp_files(disk)


# ---------------------------------------------------------------- the runner's manifest
def test_resume_on_a_full_disk_keeps_the_manifest_and_says_so(tmpfs, capsys):
    """`run --resume` writes the manifest (resumed: now) before any cell starts; on a
    full disk that write fails: one line, exit 74, the manifest and cells as they were,
    and no cell was started (the disk is verified full first, and a cell could not
    pass in 1 s anyway)."""
    disk = tmpfs("1m")
    run = disk / "run"
    shutil.copytree(FAILED, run)
    fill(disk)
    before = snapshot(run)
    code = cli(["run", "--resume", str(run), "--cell-time-limit", "1"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert err == [f"hvd-vs-ddp: error: writing {run / 'manifest.json'}: {ENOSPC_TEXT}"]
    assert code == 74
    assert snapshot(run) == before
    assert not temp_files(run)
    assert not list((run / "logs").glob("*.r*.log"))  # no cell ran


def test_report_onto_a_full_disk_keeps_the_previous_report(tmpfs, capsys):
    disk = tmpfs("4m")
    run = disk / "run"
    shutil.copytree(SMALL, run)
    small = json.loads((run / "manifest.json").read_text())
    keep = ("ddp-gloo-single-np1", "horovod-single-np1")
    small["cells"] = [c for c in small["cells"] if c["id"] in keep]
    (run / "manifest.json").write_text(json.dumps(small))
    out = disk / "out" / "report.html"
    assert cli(["report", str(run), "-o", str(out)]) == 0
    capsys.readouterr()
    before, runs_before = snapshot(disk / "out"), snapshot(run)
    fill(disk)
    assert cli(["report", str(run), "-o", str(out), "--margin", "0.1"]) == 74
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("hvd-vs-ddp: error: writing ") and lines[0].endswith(ENOSPC_TEXT)
    assert snapshot(disk / "out") == before and snapshot(run) == runs_before
    assert not temp_files(disk)


def test_report_into_dev_full_keeps_the_previous_report(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)
    small = json.loads((run / "manifest.json").read_text())
    small["cells"] = [c for c in small["cells"] if c["id"] == "ddp-gloo-single-np1"]
    (run / "manifest.json").write_text(json.dumps(small))
    out = tmp_path / "out" / "report.html"
    assert cli(["report", str(run), "-o", str(out)]) == 0
    capsys.readouterr()
    before = snapshot(tmp_path / "out")
    link = plant_dev_full(out.with_suffix(".md"))
    assert cli(["report", str(run), "-o", str(out), "--margin", "0.1"]) == 74
    line = one_error_line(capsys.readouterr().err)
    assert line == f"hvd-vs-ddp: error: writing {out.with_suffix('.md')}: {ENOSPC_TEXT}"
    assert not link.is_symlink()
    assert snapshot(tmp_path / "out") == before and not temp_files(tmp_path)


def test_report_subprocess_onto_a_full_disk(tmpfs):
    """The same through the real command: one line on stderr, exit 74, no traceback."""
    disk = tmpfs("2m")
    run = disk / "run"
    shutil.copytree(SMALL, run)
    fill(disk)
    proc = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "report", str(run), "-o",
                           str(disk / "out" / "report.html")], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT, timeout=300)
    assert proc.returncode == 74, proc.stderr[-2000:]
    line = one_error_line(proc.stderr)
    assert line.startswith("hvd-vs-ddp: error: ") and ENOSPC_TEXT in line
    assert "Traceback" not in proc.stderr and not temp_files(disk)
    assert not (disk / "out").exists()  # the directories it made for the report: removed


def test_fresh_run_on_a_full_disk_starts_nothing(tmpfs, capsys):
    """A new run's first write is its manifest, before any cell: on a full disk, one
    line, exit 74, no manifest and no temporary file (the empty cells/ and logs/
    directories the runner made before it are left; see the lead's note)."""
    disk = tmpfs("256k")
    fill(disk)
    code = cli(["run", "--runs-dir", str(disk / "runs"), "--name", "fresh", "--backends",
                "single", "--world-sizes", "1", "--workloads", "mlp", "--cell-time-limit", "1"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    manifest = disk / "runs" / "fresh" / "manifest.json"
    assert err == [f"hvd-vs-ddp: error: writing {manifest}: {ENOSPC_TEXT}"] and code == 74
    assert not manifest.exists() and not temp_files(disk)
    assert not [p for p in (disk / "runs").rglob("*") if p.is_file()]  # no log: no cell ran
