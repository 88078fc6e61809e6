"""The suites' run, typed: what pytest_configure decides once and every test reads.

suites/conftest.py builds one `SuiteRun` per pytest session (the typed SuiteOptions of
hvd_vs_ddp/harness/options.py, the cell's plan with its verdicts, judged once
(hvd_vs_ddp/harness/cell_plan.py), the collective plugin, where results, Horovod's timeline
and profiler traces go, the threads each rank uses) and keeps it in pytest's typed
stash; a suite reads it through the `suite` fixture or `of(config)`, never through
`config.getoption("...")` or attributes hung on pytest's config.

    def test_x(suite):           # in suites/
        suite.options.rounds, suite.plugin.coord, suite.timeline
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hvd_vs_ddp.harness.options import SuiteOptions

if TYPE_CHECKING:
    from hvd_vs_ddp.harness.cell_plan import CellPlan
    from hvd_vs_ddp.harness.collective_pytest import CollectivePlugin
    from hvd_vs_ddp.harness.pace import PaceLog


@dataclass(frozen=True)
class SuiteRun:
    options: SuiteOptions
    plugin: "CollectivePlugin"
    results_json: str | None = None        # --benchmark-json (rank 0 writes it)
    timeline: str | None = None            # the Horovod timeline file this job writes
    timeline_ref: str | None = None        # ... as the results name it (beside them)
    profile_at: tuple[Path, str] | None = None  # folder and stem of profiler traces
    threads: dict[str, Any] = field(default_factory=dict)
    plan: "CellPlan | None" = None         # the cell's plan: its verdicts (cell_plan.py)
    pace: "PaceLog | None" = None          # this process's pace probes (harness/pace.py)

    @property
    def backends(self) -> tuple[str, ...]:
        return self.options.backends

    @property
    def workloads(self) -> tuple[str, ...]:
        return self.options.workloads


KEY = pytest.StashKey[SuiteRun]()


def of(config: pytest.Config) -> SuiteRun:
    """The run of this pytest session (set by suites/conftest.py's pytest_configure)."""
    return config.stash[KEY]


def store(config: pytest.Config, run: SuiteRun) -> SuiteRun:
    config.stash[KEY] = run
    return run


def find(config: pytest.Config) -> SuiteRun | None:
    return config.stash.get(KEY, None)
