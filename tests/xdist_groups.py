"""One pytest-xdist scheduler for the test folders that keep some tests together on one
worker (tests/unit/conftest.py, tests/system/conftest.py): each says which unit a test
belongs to, and the units are handed out as xdist's `--dist loadscope` hands out files.
(pytest-xdist's own `--dist loadgroup` marks nothing under pytest 9: it renames
`item._nodeid`, which pytest 9 no longer reads; so the grouping is a scheduler here.)
"""
from __future__ import annotations

from typing import Any, Callable

import pytest


def grouped(config: pytest.Config, log: Any, unit_of: Callable[[str], str]) -> Any:
    """A LoadScopeScheduling whose scope of a test (by node id) is `unit_of(nodeid)`."""
    from xdist.scheduler import LoadScopeScheduling

    class Grouped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return Grouped(config, log)
