"""pytest fixtures shared by tests/unit and tests/system; helpers live in tests/launch.py.

`pytest tests/` runs the unit tests first (a broken build fails before any real launch),
then the system tests in their files' order.

    python -m pytest tests/            # everything; tests/system launches real ranks
    python -m pytest tests/unit        # no rank is launched
    python -m pytest tests/system -m quick   # one real launch per launcher
"""
from __future__ import annotations

import pytest

from tests.launch import launched


@pytest.fixture
def run_ranks():
    return launched


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Unit tests before system tests (a stable sort: the order inside each is kept)."""
    items.sort(key=lambda item: 0 if "/tests/unit/" in f"/{item.nodeid}" else 1)
