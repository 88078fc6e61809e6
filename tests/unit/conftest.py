"""How the unit tests share the cores when scripts/test.sh runs them on pytest-xdist workers
(`-n auto`): what is expensive is computed once, not once per worker.

- The published rows' projection (`against_published.project_all`, kept on disk by
  hvd_vs_ddp/projection/row_cache.py) costs ~30 CPU-s when nothing is kept yet (any change
  to the package's files is a new key, so after every merge and in CI). Both workers used
  to compute it at the same time; here the workers take turns (a file lock per value, in
  the session's shared temporary folder), so the second one reads what the first kept. The
  value, the key and the file are row_cache's own: only the waiting is added.
- The files whose tests share an expensive module-scoped fixture (a report with its
  figures, a projection) run on one worker (WHOLE_FILE), so that fixture is built once;
  every other test may go to either worker (as with `--dist load`).

    python -m pytest tests/unit -n auto -q          # what scripts/test.sh runs
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
from pathlib import PurePosixPath
from typing import Any

import pytest

# Each file's tests share a module-scoped fixture that builds a report or a projection.
WHOLE_FILE = frozenset({"test_output_gate.py", "test_reports.py", "test_report_fixtures.py",
                        "test_verdicts.py", "test_verdict_sim.py", "test_recovery_report.py",
                        "test_input_report.py", "test_compiled_report.py",
                        "test_tuning_report.py", "test_why_report.py", "test_cost.py"})


def _under_unit(config: pytest.Config) -> bool:
    """Only the unit tests are asked for (tests/system has a scheduler of its own)."""
    args = [a.split("::")[0] for a in config.args] or ["."]
    return all("tests/unit" in os.path.abspath(a) for a in args)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's, where it is loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Each test is a unit of its own, except the files of WHOLE_FILE (a unit each; the
    larger units are handed out first: xdist's --loadscope-reorder)."""
    if not _under_unit(config) or config.getoption("dist") not in ("load", "loadscope"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerPerSharedFixture(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if PurePosixPath(path).name in WHOLE_FILE else nodeid

    return OneWorkerPerSharedFixture(config, log)


@pytest.fixture(scope="session", autouse=True)
def _projection_computed_once(tmp_path_factory):
    """Under xdist, row_cache.cached holds a lock shared by the workers (one per name and
    arguments) while it reads or computes, so a value the other worker is computing is
    waited for and then read."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    from hvd_vs_ddp.projection import row_cache

    shared = tmp_path_factory.getbasetemp().parent
    original = row_cache.cached

    @functools.wraps(original)
    def cached(name, args, compute):
        # one lock per value: another key (e.g. `project`'s 100 draws) is not held up
        digest = hashlib.sha256(f"{name}\0{args!r}".encode()).hexdigest()[:16]
        with open(shared / f"row_cache-{digest}.lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                return original(name, args, compute)
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    row_cache.cached = cached
    yield
    row_cache.cached = original
