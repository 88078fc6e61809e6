"""pytest fixtures shared by tests/unit and tests/system; helpers live in tests/launch.py.

    python -m pytest tests/            # everything; tests/system launches real ranks
    python -m pytest tests/unit        # seconds: no process is launched
"""
from __future__ import annotations

import pytest

from tests.launch import launched


@pytest.fixture
def run_ranks():
    return launched
