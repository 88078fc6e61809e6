"""tox's environments run the suites with the project's one heavy virtualenv.

`tox -e ddp` is how users run the DDP side; it once failed on the spot (the launchers
were not allow-listed, and tox's own empty environment shadowed `python` under
mpirun). This runs it for real, shrunk to tiny sizes: torchrun (ddp-gloo) and
mpirun (ddp-mpi) must both pass.

    python -m pytest tests/system/test_tox.py
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launch import ROOT
from tests.launch import TINY_SUITE_ARGS as TINY

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


def test_tox_ddp_env_runs_both_ddp_transports(tmp_path):
    tox = Path(sys.executable).parent / "tox"
    if not tox.exists() and shutil.which("tox") is None:
        pytest.skip("tox is not installed in this environment")
    if Path(sys.executable).parent != ROOT / ".venv" / "bin":
        pytest.skip("tox.ini drives the project's .venv; these tests run from another one")
    env = dict(os.environ, TOX_WORK_DIR=str(tmp_path / "tox"))
    # The throughput suite only: what is tested here is tox's wiring of both launchers;
    # every suite runs under torchrun and mpirun in tests/system/test_suites_launchers.py.
    proc = subprocess.run([str(tox if tox.exists() else "tox"), "-e", "ddp", "--", *TINY,
                           "-k", "test_throughput"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "ddp: OK" in out and out.count("passed") >= 2, out[-6000:]
