"""A real Slurm cluster of one node, made by this test: srun and sbatch run the suites.

The fixture writes a slurm.conf into a temporary folder and starts Debian's
slurmctld and slurmd (Slurm 22.05) in the foreground on free ports, with their
own state and spool folders, AuthType=auth/none (no munge daemon) and
proctrack/pgid (no cgroups). It stops them again at the end. Nothing else of the
machine is touched: every Slurm command gets SLURM_CONF pointing at that file.

- `srun --mpi=pmix -n 2 python -m pytest suites/`: DDP over Gloo, DDP over MPI and
  Horovod (MPI controller over PMIx) all run, and the launcher is recorded as srun.
- `srun --mpi=pmi2` and `--mpi=pmix`: Slurm's own PMI plugins' variables are read as
  srun's (not PMI-2 read as MPICH's mpiexec on one node).
- `sbatch --wait deploy/slurm/compare.sbatch`: the real batch script, shrunk to one
  node and two tasks, writes its three result files (DDP through srun, ddp-mpi and
  Horovod through mpirun inside the allocation).

Needs root and Slurm's daemons; scripts/test.sh installs them (Debian's slurmctld,
slurmd, slurm-client) when CI is set or HVD_VS_DDP_TEST_SLURM=1, and this file
skips with that advice otherwise:

    HVD_VS_DDP_TEST_SLURM=1 bash scripts/test.sh -k slurm
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hvd_vs_ddp.backends import launchers
from tests.launch import ROOT, horovod_available
from tests.launch import TINY_SUITE_ARGS as TINY

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers
DAEMONS = ("slurmctld", "slurmd", "srun", "sbatch", "sinfo")
# `sbatch --wait` sleeps 2 s between its looks at the job, times 4 while that stays below
# half of MinJobAge (integer division; up to 32 s): at Slurm's default of 300 s it looks
# after 2, 10 and 42 s, so a 15-second job returned at 42. At 5 s it looks every 2 s,
# and a finished job's record (kept MinJobAge seconds at least) outlives two looks.
MIN_JOB_AGE = 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf(folder: Path, host: str, cpus: int) -> str:
    return f"""ClusterName=hvdtest
SlurmctldHost={host}(127.0.0.1)
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
MinJobAge={MIN_JOB_AGE}
AccountingStorageType=accounting_storage/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
"""


def _logs(folder: Path) -> str:
    return "\n".join(f"--- {p.name} ---\n{p.read_text(errors='replace')[-3000:]}"
                     for p in sorted(folder.glob("*.log")))


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        pytest.skip(f"Slurm: {', '.join(missing)} not installed (HVD_VS_DDP_TEST_SLURM=1 bash "
                    "scripts/test.sh installs Debian's slurmctld, slurmd and slurm-client)")
    if os.geteuid() != 0:
        pytest.skip("Slurm: the private slurmd of this test needs root")
    folder = tmp_path_factory.mktemp("slurm")
    (folder / "state").mkdir()
    (folder / "spool").mkdir()
    host = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    conf.write_text(_conf(folder, host, os.cpu_count() or 1))
    env = launchers.env()
    env.update(SLURM_CONF=str(conf), PYTHONPATH=str(ROOT))
    for var in [v for v in env if v.startswith(("SLURM_", "SBATCH_", "SRUN_"))]:
        if var != "SLURM_CONF":
            env.pop(var)
    daemons = []
    try:
        for daemon in ("slurmctld", "slurmd"):
            daemons.append(subprocess.Popen([daemon, "-D", "-f", str(conf)], env=env,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                            start_new_session=True))
            time.sleep(1.0)
        deadline = time.monotonic() + 60
        state = ""
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True,
                                   text=True, timeout=30).stdout.strip()
            if state == "idle":
                break
            time.sleep(0.5)
        assert state == "idle", f"the test's Slurm node is {state!r}, not idle\n{_logs(folder)}"
        yield env, folder
    finally:
        for proc in reversed(daemons):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)


def _ran(path: Path) -> tuple[set[str], str]:
    data = json.loads(path.read_text())
    kinds = {"throughput", "convergence", "collective"}
    backends = {b["extra_info"]["backend"] for b in data["benchmarks"]
                if b["extra_info"]["kind"] in kinds}
    # mpi4py's raw Allreduce (the bar for the MPI backends) runs under any MPI launcher.
    return backends - {"mpi4py-raw"}, data["machine_info"]["hvd_vs_ddp"]["launcher"]


def test_srun_runs_ddp_and_horovod(slurm, tmp_path):
    env, folder = slurm
    listed = subprocess.run(["srun", "--mpi=list"], env=env, capture_output=True, text=True,
                            timeout=60)
    pmix = "pmix" in listed.stdout + listed.stderr
    out = tmp_path / "srun.json"
    cmd = ["srun", *(["--mpi=pmix"] if pmix else []), "-n", "2", "--kill-on-bad-exit=1",
           sys.executable, "-m", "pytest", "suites/", *TINY,
           "--benchmark-json", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}\n{_logs(folder)}"
    ran, launcher = _ran(out)
    assert launcher == "srun"
    want = {"ddp-gloo"} | ({"ddp-mpi", "horovod"} if pmix and horovod_available()[0] else set())
    assert want <= ran, f"expected {want} under srun, ran {ran}"


def test_sbatch_compare_script(slurm, tmp_path):
    env, folder = slurm
    # The throughput suite only: the script's three launches are what is tested here
    # (every suite runs under srun in test_srun_runs_ddp_and_horovod and under mpirun in
    # tests/system/test_suites_launchers.py).
    env = dict(env, HVD_VS_DDP_OUT=str(tmp_path), SUITE_ARGS=" ".join([*TINY, "-k",
                                                                       "test_throughput"]))
    job_log = tmp_path / "job.out"
    proc = subprocess.run(
        ["sbatch", "--wait", "--nodes", "1", "--ntasks-per-node", "2", "--cpus-per-task", "1",
         "--gpus-per-node", "0", "--output", str(job_log), "deploy/slurm/compare.sbatch"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    log = job_log.read_text(errors="replace") if job_log.exists() else ""
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{log[-6000:]}\n{_logs(folder)}"
    expected = {"ddp-srun.json": ("ddp-gloo", "srun"), "ddp-mpi-mpirun.json": ("ddp-mpi", "mpirun")}
    if horovod_available()[0]:
        expected["horovod-mpirun.json"] = ("horovod", "mpirun")
    for name, (backend, launcher) in expected.items():
        assert (tmp_path / name).is_file(), f"{name} missing\n{log[-6000:]}"
        ran, got_launcher = _ran(tmp_path / name)
        assert ran == {backend} and got_launcher == launcher, (name, ran, got_launcher)


PLACE = ("import os; from hvd_vs_ddp.backends.env import detect; "
         "print(detect().describe(), 'PMI_RANK' in os.environ, 'PMIX_RANK' in os.environ)")


@pytest.mark.parametrize("mpi, pmi", [("pmi2", "True False"), ("pmix", "False True")])
def test_srun_with_a_pmi_plugin_is_read_as_srun(slurm, mpi, pmi):
    """Under `srun --mpi=pmi2` Slurm's PMI-2 plugin sets PMI_RANK and PMI_SIZE but no
    local rank; MPICH's detector must not read it (it would say launcher mpiexec, and on
    several nodes one node: local rank = rank). Here Slurm's own plugins set the real
    variables (the table in tests/unit/topology.py takes them across nodes)."""
    env, folder = slurm
    proc = subprocess.run(["srun", f"--mpi={mpi}", "-n", "2", sys.executable, "-c", PLACE],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\n{_logs(folder)}"
    assert sorted(proc.stdout.splitlines()) == [
        f"launcher=srun rank={r}/2 local={r}/2 node=0 {pmi}" for r in (0, 1)], proc.stdout
