"""Horovod's suite tests come last in a job that runs both sides.

Horovod's background thread outlives its tests (it cannot be shut down and started
again in one process) and, with the MPI controller, spins a core on rank 0; a DDP
test after it would be measured on a busier machine. suites/conftest.py orders the
collection so that every Horovod test follows every other test.

    python -m pytest tests/system/test_suites_order.py
"""
from __future__ import annotations

import subprocess
import sys

from tests.launch import ROOT


def test_horovod_tests_follow_all_others():
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "suites/", "--knob-set", "full",
                           "--workloads", "mlp,gpt"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = [ln for ln in proc.stdout.splitlines() if "::" in ln]
    is_hvd = ["[horovod" in i for i in ids]
    first = is_hvd.index(True)
    assert first > 0 and all(is_hvd[first:]), ids
    assert sum(is_hvd) >= 4 + 2 + 1 + 3  # throughput cells, convergence, tta, collectives
