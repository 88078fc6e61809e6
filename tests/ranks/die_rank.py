"""Rank script that needs no MPI library: every rank says which process it is, then the
victim rank (1 unless HVD_VS_DDP_TEST_KILL_RANK says otherwise) SIGKILLs itself and the
others wait for the launcher to end them.

For launchers whose ranks cannot load this project's mpi4py or Horovod (both built
against the machine's Open MPI 4): Open MPI 5's mpirun and MPICH's mpiexec from
scripts/install_mpis.sh, and srun. tests/system/test_dead_rank.py runs it:

    PYTHONPATH=. ~/.cache/hvd-vs-ddp/mpi/mpich/bin/mpiexec -n 2 python tests/ranks/die_rank.py
"""
from __future__ import annotations

import os
import signal
import sys
import time

from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.harness import rank_started

WAIT_S = 60.0  # the others' wait: far longer than any launcher takes to end them

if __name__ == "__main__":
    env = detect()
    rank_started.announce(env)
    if env.rank == int(os.environ.get("HVD_VS_DDP_TEST_KILL_RANK", "1")):
        time.sleep(1.0)  # every rank has announced itself by then
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(WAIT_S)
    sys.exit(3)  # not ended by the launcher: the test sees exit code 3, not the kill
