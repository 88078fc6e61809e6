"""Fault cases run by tests/system/test_faults.py under a launcher (not collected on their own).

HVD_FAULT=assert: rank HVD_FAULT_RANK fails an assertion, the others pass.
HVD_FAULT=sleep:  rank HVD_FAULT_RANK sleeps far past --test-time-limit.
HVD_FAULT=skip-one: only one rank skips (ranks must not disagree silently).
"""
import os
import time

import pytest

from hvd_vs_ddp.backends.env import detect

FAULT = os.environ.get("HVD_FAULT", "")
RANK = int(os.environ.get("HVD_FAULT_RANK", "1"))


def test_before():
    assert True


def test_fault():
    me = detect().rank
    if FAULT == "assert" and me == RANK:
        assert 1 + 1 == 3, f"injected failure on rank {me}"
    if FAULT == "sleep" and me == RANK:
        time.sleep(3600)
    if FAULT == "skip-one" and me == RANK:
        pytest.skip("injected skip on one rank")


def test_after():
    assert True
