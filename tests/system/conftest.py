"""Fixtures of the system tests: the session's shared real jobs (tests/system/jobs.py).

    python -m pytest tests/system -q
"""
from __future__ import annotations

import pytest

from tests.system.jobs import SharedJobs


@pytest.fixture(scope="session")
def jobs(tmp_path_factory) -> SharedJobs:
    """jobs.get(JOB): the job's launch, run once per session on first use."""
    return SharedJobs(tmp_path_factory.mktemp("shared-jobs"))
