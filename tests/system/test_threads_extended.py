"""Every rank's intra-op threads in the suites' 4-rank job (horovodrun --gloo, 4 ranks on 2
cores): the extended tier (tests/system/conftest.py: the tiers) of
tests/system/test_threads.py, which says what is checked, as test_suites_launchers' 4-rank
job is (the job is shared: tests/system/jobs.py).

    python -m pytest tests/system/test_threads_extended.py -q
"""
from __future__ import annotations

import pytest

from tests.system.test_threads import auto_threads_are_cores_over_local_ranks, cases

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


@pytest.mark.parametrize("launcher,n", cases(extended=True))
def test_auto_threads_are_cores_over_local_ranks(jobs, launcher, n):
    auto_threads_are_cores_over_local_ranks(jobs, launcher, n)
