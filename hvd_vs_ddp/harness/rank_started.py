"""Every rank's first line: which rank of the job is which process on which host.

Some launchers name a dead process only by its PID and host: MPICH's Hydra says
"PID 4242 RUNNING AT node1 ... KILLED BY SIGNAL: 9" when the rank died before MPI_Init,
or for programs that never call it. A log that holds this line for every rank lets
hvd_vs_ddp/cli/cell_errors.py turn that PID back into a rank, under any launcher. Each rank
of a job of 2 or more ranks writes it once to stderr when it starts: the collective
pytest plugin (hvd_vs_ddp/harness/collective_pytest.py) for the suites, rank programs of the tests
by calling `announce` themselves. One process (world size 1) writes nothing.

    hvd-vs-ddp: rank 1 of 2 started: pid 4242 on host node1

    python -m hvd_vs_ddp.harness.rank_started        # this process's line, whatever its world size
"""
from __future__ import annotations

import os
import re
import socket

from hvd_vs_ddp.backends.env import LauncherEnv, detect

# The line's one definition; cell_errors reads it with PATTERN.
PATTERN = re.compile(r"hvd-vs-ddp: rank (\d+) of (\d+) started: pid (\d+) on host (\S+)")


def line(rank: int, world_size: int, pid: int | None = None, host: str | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    host = socket.gethostname() if host is None else host
    return f"hvd-vs-ddp: rank {rank} of {world_size} started: pid {pid} on host {host}"


def announce(env: LauncherEnv | None = None) -> None:
    """Write this rank's line to stderr (fd 2, unbuffered: pytest's capture and Python's
    buffers cannot hold it back), if the job has more than one rank."""
    env = env or detect()
    if env.world_size > 1:
        os.write(2, (line(env.rank, env.world_size) + "\n").encode())


if __name__ == "__main__":
    env = detect()
    print(line(env.rank, env.world_size))
