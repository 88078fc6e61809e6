"""A failing or stuck rank ends the whole job, names the rank, and leaves no process.

Runs tests/faults/fault_cases.py under torchrun and mpirun with 2 real ranks, with the
collective plugin loaded by name (tests/plugins/collective.py: nothing in tests/faults is
collected or loaded by `pytest tests/`). Under each launcher one job holds a failed
assertion and a skip on one rank (each test below reads its own part of the job's
output); a stuck rank ends its job, so it has a job of its own.
"""
from __future__ import annotations

import re
import time
import uuid

import pytest

from tests.launch import LEAN_PLUGINS, explain, launched, leftovers

pytestmark = pytest.mark.multiproc
CASES = ["-m", "pytest", *LEAN_PLUGINS, "-p", "no:cacheprovider", "-p", "tests.plugins.collective",
         "tests/faults/fault_cases.py", "-q", "--rootdir", "tests/faults",
         "--color=no"]  # plain text to read (mpirun gives its ranks a terminal)


def run_fault(launcher: str, fault: str, limit: float = 20):
    """`fault` (fault_cases.py's HVD_FAULT: one fault or several, comma-separated) on rank
    1 under `launcher`: (the finished job, its seconds, its processes left behind)."""
    marker = f"hvd-fault-{uuid.uuid4().hex}"
    start = time.monotonic()
    proc = launched(launcher, 2, [*CASES, "--test-time-limit", str(limit)], timeout=180,
                    extra_env={"HVD_FAULT": fault, "HVD_FAULT_RANK": "1",
                               "HVD_TEST_MARKER": marker})
    elapsed = time.monotonic() - start
    time.sleep(1)
    return proc, elapsed, leftovers(marker)


@pytest.fixture(scope="module")
def failing_jobs():
    """launcher -> one job of rank 1 failing an assertion, then skipping alone."""
    done: dict[str, tuple] = {}

    def get(launcher: str):
        if launcher not in done:
            done[launcher] = run_fault(launcher, "assert,skip-one")
        return done[launcher]
    return get


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
def test_one_rank_failing_an_assert_fails_the_test_on_all_ranks(failing_jobs, launcher):
    proc, elapsed, left = failing_jobs(launcher)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, explain(proc)
    assert "rank 1 failed" in out and "injected failure on rank 1" in out, explain(proc)
    # the tests around it still ran on all ranks (the skip-one case fails too)
    assert re.search(r"\b2 failed, 2 passed\b", out), explain(proc)
    assert left == [], f"processes left behind: {left}"


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
def test_ranks_disagreeing_on_a_skip_fail_together(failing_jobs, launcher):
    proc, _, left = failing_jobs(launcher)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, explain(proc)
    assert re.search(r"test_fault\[skip-one\].*ranks disagree on the outcome", out, re.S), \
        explain(proc)
    assert left == []


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
