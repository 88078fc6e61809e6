"""Real-process tests of hvd_vs_ddp/backends/mpi_pg/ (the mpi4py torch.distributed backend).

Each test launches `mpirun` on a rank script in tests/ranks/ and asserts its exit
status (the scripts compare against numpy / a single-process model and exit 1 on
any mismatch, printing the failed case); the output is shown on failure. Skipped
when mpirun or mpi4py is missing. Every progress mode runs (default "inline",
"thread", "nonblocking", "sync"). About 2-3 minutes in all on 2 busy cores.

Run from the repo root:
    python -m pytest tests/system/test_mpi_pg.py -v
Layout (static, < 1 s): python -m pytest tests/unit/test_mpi_pg_layout.py
Bandwidth (not a test): mpirun -np 2 python tests/ranks/mpi_pg_bandwidth.py
DDP overlap (not a test): mpirun -np 2 python tests/ranks/mpi_pg_overlap.py
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
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


def _mpirun(np_: int, script: str, *args: str, progress: str | None = None) -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    cmd = ["mpirun", "-np", str(np_), "--bind-to", "none"]
    if np_ > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    cmd += [sys.executable, str(RANKS / script), *args]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                          if p))
    env.pop("HVD_VS_DDP_MPI_PG_PROGRESS", None)
    if progress:
        env["HVD_VS_DDP_MPI_PG_PROGRESS"] = progress
    try:
        proc = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) \
            else (exc.stdout or "")
        pytest.fail(f"{' '.join(cmd)} did not finish in {TIMEOUT_S} s\n{out[-6000:]}")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, (f"{' '.join(cmd)} exited {proc.returncode}"
                                  f" (progress={progress or 'default'})\n{output[-8000:]}")


@pytest.mark.parametrize("np_,args,progress", [
    (2, (), None),
    (3, ("--reverse-ranks",), None),
    (2, (), "thread"),
    (2, (), "nonblocking"),
    (2, (), "sync"),
], ids=["np2-inline", "np3-reversed-ranks-inline", "np2-thread", "np2-nonblocking",
        "np2-sync"])
def test_collectives_match_numpy(np_, args, progress):
    _mpirun(np_, "mpi_pg_collectives.py", *args, progress=progress)


@pytest.mark.parametrize("np_,progress", [(2, None), (3, None), (2, "thread"),
                                          (2, "nonblocking")],
                         ids=["np2-inline", "np3-inline", "np2-thread", "np2-nonblocking"])
def test_ddp_matches_single_process(np_, progress):
    _mpirun(np_, "mpi_pg_ddp.py", progress=progress)
