"""The suites under horovodrun --gloo at 4 ranks (oversubscribing 2 cores, about a minute):
the extended tier (tests/system/conftest.py: the tiers) of
tests/system/test_suites_launchers.py, which says what is checked (the job is shared:
tests/system/jobs.py SUITES, with test_threads_extended).

    python -m pytest tests/system/test_suites_launchers_extended.py -q
"""
from __future__ import annotations

import pytest

from tests.system.test_suites_launchers import cases, suites_pass_under_launcher

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


@pytest.mark.parametrize("launcher, ranks, expected", cases(extended=True))
def test_suites_under_launcher(jobs, launcher, ranks, expected):
    suites_pass_under_launcher(jobs, launcher, ranks, expected)
