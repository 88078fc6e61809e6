"""Real-process tests of hvd_vs_ddp/backends/mpi_pg/ (the mpi4py torch.distributed backend).

The rank scripts in tests/ranks/ compare against numpy / a single-process model and
exit 1 on any mismatch, printing the failed case. One `mpirun` per world size and
progress mode runs both scripts one after the other (tests/ranks/mpi_pg_parts.py, each
with a process group of its own); each test judges its own script's `PART` line, and
the output is shown on failure. Skipped when mpirun or mpi4py is missing. Here the
default progress mode ("inline") at 2 ranks; 3 ranks and the other progress modes
("thread", "nonblocking", "sync") are in the extended tier, test_mpi_pg_extended.py.
About 40 s in all on 2 cores.

Run from the repo root:
    python -m pytest tests/system/test_mpi_pg.py tests/system/test_mpi_pg_extended.py -v
Layout (static, < 1 s): python -m pytest tests/unit/test_mpi_pg_layout.py
Bandwidth (not a test): mpirun -np 2 python tests/ranks/mpi_pg_bandwidth.py
DDP overlap (not a test): mpirun -np 2 python tests/ranks/mpi_pg_overlap.py
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RANKS = ROOT / "tests" / "ranks"
TIMEOUT_S = 300

pytestmark = [pytest.mark.mpi, pytest.mark.multiproc]


def _skip_reason() -> str | None:
    if shutil.which("mpirun") is None:
        return "mpirun not on PATH (install Open MPI or MPICH)"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    return None


@dataclass
class Launch:
    """One mpirun of tests/ranks/mpi_pg_parts.py: its command, exit status and output."""
    cmd: str
    returncode: int | None  # None: it did not finish in TIMEOUT_S
    output: str

    def part(self, part: str) -> None:
        """Fail unless `part` ran and passed every check (its `PART ...: exit 0` line)."""
        where = f"{self.cmd}\n{self.output[-8000:]}"
        if self.returncode is None:
            pytest.fail(f"did not finish in {TIMEOUT_S} s: {where}")
        # not anchored at a line's start: another write of the job may precede it
        status = {m[0]: int(m[1]) for m in re.findall(r"PART (\S+): exit (\d+)(?=\s|$)",
                                                       self.output)}
        assert part in status, f"part {part} never finished: exit {self.returncode}, {where}"
        assert status[part] == 0, f"part {part} failed (exit {status[part]}): {where}"
        # exit with the worst part's status, or the processes crashed after the parts
        assert self.returncode == max(status.values()), f"exit {self.returncode}: {where}"


def _mpirun(np_: int, parts: tuple[str, ...], progress: str | None) -> Launch:
    cmd = ["mpirun", "-np", str(np_), "--bind-to", "none"]
    if np_ > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    cmd += [sys.executable, str(RANKS / "mpi_pg_parts.py"), *parts]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                          if p))
    env.pop("HVD_VS_DDP_MPI_PG_PROGRESS", None)
    if progress:
        env["HVD_VS_DDP_MPI_PG_PROGRESS"] = progress
    shown = f"{'HVD_VS_DDP_MPI_PG_PROGRESS=' + progress + ' ' if progress else ''}{' '.join(cmd)}"
    try:
        proc = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) \
            else (exc.stdout or "")
        return Launch(shown, None, out)
    return Launch(shown, proc.returncode, proc.stdout + proc.stderr)


# One launch per world size and progress mode runs every part that needs it (default
# "inline" progress is None here).
PARTS = {
    (2, None): ("collectives", "ddp"),
    (3, None): ("collectives:--reverse-ranks", "ddp"),
    (2, "thread"): ("collectives", "ddp"),
    (2, "nonblocking"): ("collectives", "ddp"),
    (2, "sync"): ("collectives",),
}


@pytest.fixture(scope="module")
def launches():
    """launches(ranks, progress): that launch of PARTS, run once for the module."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    done: dict[tuple[int, str | None], Launch] = {}

    def get(np_: int, progress: str | None) -> Launch:
        if (np_, progress) not in done:
            done[np_, progress] = _mpirun(np_, PARTS[np_, progress], progress)
        return done[np_, progress]
    return get


# The default progress mode at 2 ranks runs in the README's test command; 3 ranks (on 2
# cores, reversed) and the other three progress modes (a launch each, ~15 s) run with the
# `extended` tests: test_mpi_pg_extended.py (tests/system/conftest.py: the tiers).
@pytest.mark.parametrize("np_,part,progress", [(2, "collectives", None)], ids=["np2-inline"])
def test_collectives_match_numpy(launches, np_, part, progress):
    launches(np_, progress).part(part)


@pytest.mark.parametrize("np_,progress", [(2, None)], ids=["np2-inline"])
def test_ddp_matches_single_process(launches, np_, progress):
    launches(np_, progress).part("ddp")
