"""A failing or stuck rank ends the whole job, names the rank, and leaves no process.

Runs tests/faults/fault_cases.py under torchrun and mpirun with 2 real ranks, with the
collective plugin loaded by name (tests/plugins/collective.py: nothing in tests/faults is
collected or loaded by `pytest tests/`).
"""
from __future__ import annotations

import re
import time
import uuid

import pytest

from tests.launch import LEAN_PLUGINS, explain, launched, leftovers

pytestmark = pytest.mark.multiproc
CASES = ["-m", "pytest", *LEAN_PLUGINS, "-p", "no:cacheprovider", "-p", "tests.plugins.collective",
         "tests/faults/fault_cases.py", "-q", "--rootdir", "tests/faults"]


def run_fault(launcher: str, fault: str, limit: float = 20):
    marker = f"hvd-fault-{uuid.uuid4().hex}"
    start = time.monotonic()
    proc = launched(launcher, 2, [*CASES, "--test-time-limit", str(limit)], timeout=180,
                    extra_env={"HVD_FAULT": fault, "HVD_FAULT_RANK": "1",
                               "HVD_TEST_MARKER": marker})
    elapsed = time.monotonic() - start
    time.sleep(1)
    return proc, elapsed, leftovers(marker)


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
def test_one_rank_failing_an_assert_fails_the_test_on_all_ranks(launcher):
    proc, elapsed, left = run_fault(launcher, "assert")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, explain(proc)
    assert "rank 1 failed" in out and "injected failure on rank 1" in out, explain(proc)
    assert "2 passed" in out, explain(proc)  # the tests around it still ran on all ranks
    assert left == [], f"processes left behind: {left}"


# mpirun's stuck rank is in the extended tier, test_faults_extended.py (its killed ranks are
# named in the core tier by tests/system/test_dead_rank.py under horovodrun's MPI path)
@pytest.mark.parametrize("launcher", ["torchrun"])
def test_a_stuck_rank_aborts_the_job_naming_it(launcher):
    stuck_rank_aborts_the_job_naming_it(launcher)


def stuck_rank_aborts_the_job_naming_it(launcher: str) -> None:
    """Rank 1 sleeps in a test: the watchdog ends the job at its limit, naming the rank."""
    proc, elapsed, left = run_fault(launcher, "sleep", limit=10)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, explain(proc)
    # (every rank's start line holds "rank 1 of 2" too: the stuck rank's own line counts)
    assert re.search(r"rank 1 of 2 \([^)]*\) is stuck in \S*test_fault", out), explain(proc)
    # the watchdog ended it at its limit (not our 180 s launch timeout): what the job
    # says, not a wall-clock bound that a busy machine could break
    assert "time limit 10s exceeded" in out, explain(proc)
    print(f"{launcher}: the stuck job ended after {elapsed:.0f}s (limit 10 s + start-up)")
    assert left == [], f"processes left behind: {left}"


def test_ranks_disagreeing_on_a_skip_fail_together():
    proc, _, left = run_fault("torchrun", "skip-one")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, explain(proc)
    assert "ranks disagree on the outcome" in out, explain(proc)
    assert left == []
