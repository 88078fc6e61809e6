"""Fault cases run by tests/system/test_faults.py under a launcher (not collected on their own).

HVD_FAULT lists the faults, comma-separated, one test each, in that order:
  assert:   rank HVD_FAULT_RANK fails an assertion, the others pass.
  skip-one: only rank HVD_FAULT_RANK skips (ranks must not disagree silently).
  sleep:    rank HVD_FAULT_RANK sleeps far past --test-time-limit (the job ends there).
A test passes before them and one after.
"""
import os
import time

import pytest

from hvd_vs_ddp.backends.env import detect

FAULTS = [f for f in os.environ.get("HVD_FAULT", "").split(",") if f]
RANK = int(os.environ.get("HVD_FAULT_RANK", "1"))


def test_before():
    assert True


@pytest.mark.parametrize("fault", FAULTS)
def test_fault(fault):
    me = detect().rank
    if fault == "assert" and me == RANK:
        assert 1 + 1 == 3, f"injected failure on rank {me}"
    if fault == "sleep" and me == RANK:
        time.sleep(3600)
    if fault == "skip-one" and me == RANK:
        pytest.skip("injected skip on one rank")


def test_after():
    assert True
