"""A real SIGKILL of rank 1 under every launcher, and the cell's error line names it.

Two ranks start, rank 1 kills itself with SIGKILL, the launcher ends the job, and
hvd_vs_ddp.cell_errors.error_line() must read "rank 1 ... was killed by signal 9
(SIGKILL)" from the launcher's combined output, not a collateral rank, not a banner:

- Open MPI 4's mpirun, torchrun, horovodrun --gloo and horovodrun --mpi run the real
  suites (one small collectives test of DDP over Gloo, through
  hvd_vs_ddp.backends.launchers.command)
  with tests/plugins/kill_rank.py, which kills rank 1 as its first test starts;
- Open MPI 5's mpirun and MPICH's mpiexec (from scripts/install_mpis.sh; skipped, saying
  so, where it could not install them) and Slurm's srun (the private cluster of
  tests/system/test_slurm.py) run tests/ranks/die_rank.py, which needs no MPI library:
  this project's mpi4py and Horovod are built against Open MPI 4.

No process of a job may outlive it (an environment marker, tests/launch.py leftovers()).
HVD_VS_DDP_RECORD_DEAD_RANK=DIR writes each launcher's output to DIR/<launcher>.log: that
is how tests/fixtures/dead_rank/ (read by tests/unit/test_cell_errors.py) was recorded.

    python -m pytest tests/system/test_dead_rank.py -q
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.cli.cell_errors import error_line
from hvd_vs_ddp.common.cache import cache_root
from tests.launch import LEAN_PLUGINS, ROOT, horovod_available, leftovers
from tests.system.test_slurm import slurm  # noqa: F401 - the fixture: a private Slurm node

pytestmark = pytest.mark.multiproc
# where scripts/install_mpis.sh puts them: $HVD_VS_DDP_MPIS, else the project's cache + /mpi
_CACHE = cache_root()
MPIS = (Path(os.environ["HVD_VS_DDP_MPIS"]) if os.environ.get("HVD_VS_DDP_MPIS")
        else _CACHE / "mpi" if _CACHE is not None else None)
SUITE = ["-m", "pytest", *LEAN_PLUGINS, "suites/test_collectives.py", "--backends", "ddp-gloo",
         "--max-bytes", "4096", "--collective-iters", "5", "--test-time-limit", "120", "-q",
         "-p", "no:cacheprovider"]
KILL_RANK_1 = {"PYTEST_PLUGINS": "tests.plugins.kill_rank", "HVD_VS_DDP_TEST_KILL_RANK": "1"}
DIE = [sys.executable, "tests/ranks/die_rank.py"]
WANT = "was killed by signal 9 (SIGKILL"  # horovodrun adds "; horovodrun status 137)"


def _killed_job(name: str, cmd: list[str], env: dict[str, str], timeout: float = 120) -> str:
    """Run the job to its end: no leftover process, and the error line a cell would get
    names rank 1 and SIGKILL."""
    marker = f"hvd-dead-rank-{uuid.uuid4().hex}"
    env = dict(env, HVD_TEST_MARKER=marker, PYTHONPATH=str(ROOT))
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout,
                              start_new_session=True)
        out, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:  # its output comes as bytes even so
        raw = exc.stdout or b""
        out, rc = raw.decode(errors="replace") if isinstance(raw, bytes) else raw, None
    deadline, left = time.monotonic() + 5, leftovers(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftovers(marker)
    for pid in left:  # never leave them to the next test
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    record = os.environ.get("HVD_VS_DDP_RECORD_DEAD_RANK")
    if record:
        Path(record).mkdir(parents=True, exist_ok=True)
        (Path(record) / f"{name}.log").write_text(out)
    assert rc is not None, f"{name}: still running after {timeout}s\n{out[-4000:]}"
    assert not left, f"{name}: processes outlived the job: {left}\n{out[-3000:]}"
    assert rc != 0, f"{name}: a job whose rank 1 was killed exited 0\n{out[-4000:]}"
    line = error_line(out, rc, False, 0)
    print(f"\n{name}: {line}")
    assert line.startswith("rank 1 ") and WANT in line, f"{name}: {line!r}\n{out[-4000:]}"
    return line


@pytest.mark.parametrize("launcher", ["mpirun", "torchrun", "horovodrun-gloo",
                                      "horovodrun-mpi"])
def test_suites_rank_killed(launcher):
    avail = launchers.available(launcher)
    if not avail:
        pytest.skip(f"{launcher}: {avail.reason}")
    if launcher.startswith("horovodrun") and not horovod_available()[0]:
        pytest.skip(f"{launcher}: Horovod: {horovod_available()[1]}")
    env = dict(launchers.env(launcher=launcher), **KILL_RANK_1)
    _killed_job(launcher, launchers.command(launcher, 2, SUITE), env)


@pytest.mark.parametrize("name, tool", [("openmpi5", "mpirun"), ("mpich", "mpiexec")])
def test_installed_mpi_rank_killed(name, tool):
    if MPIS is None:
        pytest.skip(f"{name}: HVD_VS_DDP_CACHE=off keeps no launchers; set HVD_VS_DDP_MPIS "
                    "to a folder and run bash scripts/install_mpis.sh")
    exe = MPIS / name / "bin" / tool
    if not os.access(exe, os.X_OK):
        pytest.skip(f"{name}: {exe} missing; bash scripts/install_mpis.sh installs it "
                    "(from PyPI)")
    if name == "mpich":  # the launcher table's row, with each rank's guard (rank_guard.py)
        cmd = [str(exe), *launchers.command("mpiexec", 2, DIE[1:])[1:]]
    else:
        cmd = [str(exe), "-n", "2", *DIE]
    _killed_job(name, cmd, launchers.env())


def test_srun_rank_killed(slurm):  # noqa: F811 - the imported fixture
    env, _ = slurm
    _killed_job("srun", ["srun", "-n", "2", "--kill-on-bad-exit=1", *DIE], env)


@pytest.mark.parametrize("code, want_rc, want", [
    ("import sys; sys.exit(3)", 3, "exited with code 3"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -9,
     "was killed by signal 9 (SIGKILL)"),
    ("print('fine')", 0, None)])
def test_rank_guard_ends_as_its_rank_did(code, want_rc, want):
    """harness/rank_guard.py: its status is the rank's, its one line says how it ended."""
    env = dict(os.environ, PMI_RANK="1", PMI_SIZE="2", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.harness.rank_guard",
                           sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == want_rc, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("hvd-vs-ddp: rank 1 of 2")]
    if want is None:
        assert not lines, proc.stderr
    else:
        assert len(lines) == 1 and lines[0].endswith(want), proc.stderr
