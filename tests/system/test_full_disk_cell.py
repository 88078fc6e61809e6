"""A cell whose results file cannot be written (a full disk) fails with the reason,
and no half-written results file replaces the previous one.

A copy of a recorded run (tests/fixtures/runs/cpu-small) whose `single` cell is
marked failed is resumed with its cells/ directory on a full tmpfs: the runner (its
manifest is elsewhere, on the ordinary disk) reruns that one cell, a real pytest run
of the suites on one process, whose rank 0 cannot write its pytest-benchmark JSON.
Needs root to mount the tmpfs (skipped otherwise; tests/unit/test_full_disk.py covers
the manifest and the report without root).

    python -m pytest tests/system/test_full_disk_cell.py -q
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.launch import ROOT
from tests.unit.test_full_disk import ENOSPC_TEXT, fill, snapshot, temp_files

SMALL = ROOT / "tests" / "fixtures" / "runs" / "cpu-small"
CELL = "single-single-np1"


@pytest.fixture
def full_cells_dir(tmp_path):
    run = tmp_path / "runs" / "x"
    shutil.copytree(SMALL, run)
    man = json.loads((run / "manifest.json").read_text())
    for c in man["cells"]:
        if c["id"] == CELL:
            c.update(status="failed", error="made failed by the test")
    (run / "manifest.json").write_text(json.dumps(man, indent=1))
    saved = tmp_path / "cells-saved"
    shutil.copytree(run / "cells", saved)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs",
                           str(run / "cells")], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()})")
    try:
        for f in saved.iterdir():
            shutil.copy2(f, run / "cells" / f.name)
        fill(run / "cells")
        yield run
    finally:
        subprocess.run(["umount", "-l", str(run / "cells")], check=False)


def test_a_cell_on_a_full_disk_fails_with_the_reason(full_cells_dir):
    from hvd_vs_ddp.cli import main as cli

    run = full_cells_dir
    before = snapshot(run / "cells")
    assert cli(["run", "--resume", str(run), "--cell-time-limit", "300"]) == 1
    man = json.loads((run / "manifest.json").read_text())
    cell = next(c for c in man["cells"] if c["id"] == CELL)
    log = (run / cell["log"]).read_text()
    assert cell["status"] == "failed" and ENOSPC_TEXT in log, (cell, log[-3000:])
    assert cell["error"], cell
    assert snapshot(run / "cells") == before  # the old file of the cell too: not replaced
    assert not temp_files(run)
    assert all(c["status"] == "passed" for c in man["cells"] if c["id"] != CELL)
