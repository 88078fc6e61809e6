"""One pytest-xdist scheduler for the test folders that keep some tests together on one
worker (tests/unit/conftest.py, tests/system/conftest.py): each names the files whose tests
go together in one unit and the files that are a unit each; every other test is a unit of
its own, and the units are handed out as xdist's `--dist loadscope` hands out files.
(pytest-xdist's own `--dist loadgroup` marks nothing under pytest 9: it renames
`item._nodeid`, which pytest 9 no longer reads; so the grouping is a scheduler here.)
"""
from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Mapping

import pytest


def unit_of(nodeid: str, together: Mapping[str, frozenset[str]],
            whole_file: frozenset[str]) -> str:
    """The unit of a test (by node id): the name of the group its file is in (`together`:
    unit name -> file names), else its file where that file is one unit (`whole_file`),
    else the test itself."""
    path = nodeid.split("::", 1)[0]
    name = PurePosixPath(path).name
    for unit, files in together.items():
        if name in files:
            return unit
    return path if name in whole_file else nodeid


def grouped(config: pytest.Config, log: Any, together: Mapping[str, frozenset[str]],
            whole_file: frozenset[str]) -> Any:
    """A LoadScopeScheduling whose scope of a test is its `unit_of`."""
    from xdist.scheduler import LoadScopeScheduling

    class Grouped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid, together, whole_file)

    return Grouped(config, log)
