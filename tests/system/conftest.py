"""Fixtures of the system tests: the session's shared real jobs (tests/system/jobs.py),
and how the tests share the cores when scripts/test.sh runs them on two pytest-xdist
workers.

The shared jobs launch once per worker, so every file reading one (its readers, listed
in jobs.py) runs on the same worker; the two-host tests (network namespaces of fixed
names) run there too. The tests of one file that share a module-scoped fixture also run
on one worker, each such file on either (WHOLE_FILE, checked at collection). Every other
test may go to either worker.
(The scheduler: tests/xdist_groups.py, shared with tests/unit.)

    python -m pytest tests/system -q                                  # one process
    python -m pytest tests/system -n 2                                # what test.sh runs
    python -m pytest tests/system --system-tier core                  # the README's command
    python -m pytest tests/system --system-tier extended              # .ci/run, after it

The `extended` tests are the integrations with tools outside the project (a Slurm
cluster, tox, two hosts in network namespaces and shaped links between them) and the long
end-to-end flows (two runs at once, interrupt and resume, an external workload, the whole
self-test, the launches of more ranks than cores, the slower recovery paths and
process-group modes): scripts/test.sh leaves them out to stay within its 9 minutes;
`scripts/test.sh --extended` runs them and .ci/run runs both. Everything else is the core
tier, the README's test command (the installed wheel, test_install.py, among them).
A test is `extended` by its module's `pytestmark` only: where only some of a file's tests
are, they move to a module of their own, `<file>_extended.py`, which imports what it
shares from the file; a mark on a function or a parametrised case is refused at
collection (a UsageError naming the test), so a file's first lines say its tier.
"""
from __future__ import annotations

import os
from typing import Any

import pytest

from hvd_vs_ddp.backends import launchers
from tests.system.jobs import SharedJobs, all_jobs
from tests.xdist_groups import grouped

# The processes these tests start are not pytest-xdist workers (launchers.env() forgets
# the worker for the ranks the project starts; tox's, Slurm's and the tests' own commands
# inherit this process's environment).
launchers.forget_xdist_worker(os.environ)
# Open MPI's ranks busy-poll while they wait for a peer, unless told to yield the core:
# with two tests at a time on two cores a waiting rank took the core from the other
# test's ranks (test_mpi_pg on two workers: 41 s and 73 CPU-s busy-polling, 37 s and 70
# yielding). What these tests check does not depend on how MPI waits; the suites' timings
# on a user's machine are taken without it (the runner records every OMPI_MCA_ variable
# with a cell's results, this one included).
os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
# The pace probe (hvd_vs_ddp/harness/pace.py: a second per rank process, half a second per
# timed test) measures each process for the verdicts; these tests check other things, so
# their ranks leave it out, all but test_repeat_run.py, which checks it is recorded.
os.environ.setdefault("HVD_VS_DDP_PACE_PROBE", "off")

# The files run on one worker: the shared jobs' readers, and what shares their hosts.
ONE_WORKER = frozenset({*(r.split()[0] + ".py" for j in all_jobs() for r in j.readers),
                        "test_two_hosts.py"})
# The files whose tests share a module-scoped fixture that launches or builds something
# (a mutation job, a reference run, a wheel, a Slurm cluster, mpirun launches, a fault
# job): each file's tests go to one worker, or the fixture runs once on each (the
# mutation job ran twice). The shared jobs' readers are on one worker anyway.
WHOLE_FILE = frozenset({"test_faults.py", "test_install.py", "test_mpi_pg.py",
                        "test_mpi_pg_extended.py", "test_mutations.py", "test_recovery.py",
                        "test_recovery_extended.py", "test_slurm.py"})


@pytest.fixture(scope="session")
def jobs(tmp_path_factory) -> SharedJobs:
    """jobs.get(JOB): the job's launch, run once per session (per worker) on first use."""
    return SharedJobs(tmp_path_factory.mktemp("shared-jobs"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--system-tier", choices=("all", "core", "extended"), default="all",
                     help="all, the core ones (the README's test command: every launcher's, "
                          "backend's and library's real ranks) or the `extended` ones "
                          "(Slurm, tox, two hosts, long end-to-end flows: "
                          "scripts/test.sh --extended, which .ci/run runs after it)")


def _module_fixtures(item: pytest.Item) -> list[str]:
    """The module-scoped fixtures of item's own file that item uses."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs if info is not None else {}
    return [name for name, fds in defs.items() for fd in fds
            if fd.scope == "module" and fd.baseid.split("::")[0] == item.nodeid.split("::")[0]]


def _tier_from_module(item: pytest.Item) -> bool:
    """Every `extended` mark item carries is its module's (pytestmark), none its own,
    its class's or its parametrised case's."""
    marks = getattr(getattr(item, "module", None), "pytestmark", [])
    marks = marks if isinstance(marks, list) else [marks]
    module = sum(getattr(m, "name", None) == "extended" for m in marks)
    return len(list(item.iter_markers("extended"))) == module


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    users: dict[tuple[str, str], int] = {}
    for item in items:
        if not _tier_from_module(item):
            raise pytest.UsageError(f"{item.nodeid} is marked `extended` outside its module's "
                                    f"pytestmark: move it to {item.path.stem}_extended.py, "
                                    "whose pytestmark says so (tests/system/conftest.py: the "
                                    "tiers)")
        if "jobs" in getattr(item, "fixturenames", ()) and item.path.name not in ONE_WORKER:
            raise pytest.UsageError(f"{item.nodeid} reads a shared job: name its module in "
                                    "the job's readers (tests/system/jobs.py)")
        for name in _module_fixtures(item):
            users[item.path.name, name] = users.get((item.path.name, name), 0) + 1
    for (file, name), n in sorted(users.items()):
        if n > 1 and file not in WHOLE_FILE | ONE_WORKER:
            raise pytest.UsageError(f"{n} tests of {file} share the module-scoped fixture "
                                    f"{name}: add {file} to WHOLE_FILE (tests/system/conftest.py)")
    tier = config.getoption("--system-tier")
    if tier != "all":
        _keep(config, items, "extended", tier == "extended")


def _keep(config: pytest.Config, items: list[pytest.Item], marker: str, marked: bool) -> None:
    """Deselect the items that carry `marker` (marked=False) or that do not (marked=True)."""
    keep = [i for i in items if (i.get_closest_marker(marker) is not None) == marked]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's, where it is loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Each test is a unit of its own, except the files of ONE_WORKER (together one
    unit) and of WHOLE_FILE (a unit each)."""
    return grouped(config, log, {"shared-jobs": ONE_WORKER}, WHOLE_FILE)
