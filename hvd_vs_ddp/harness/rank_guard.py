"""Runs one rank as its child and, when the rank dies, says so before the launcher knows.

MPICH's Hydra mpiexec reports a failed job with the lowest rank whose status is bad, and
by then it has SIGKILLed every other rank: when rank 1 of 2 was SIGKILLed, Hydra 5.0.2
named rank 0's PID with "EXIT CODE: 9" (3 of 3 trials here), and its output holds nothing
that tells the first death from the ones it caused. So the `mpiexec` row of
hvd_vs_ddp/backends/launchers.py starts every rank through this guard. The guard is what the
launcher started: it forks, the child execs the rank's command (same PID in its start
line, same environment and inherited file descriptors, so PMI works), and the guard waits.
When the rank ends with a signal or a non-zero exit code, the guard writes one line and
only then ends the same way, so the launcher learns of the death after the line is out
and before it kills anyone else. A rank the launcher kills afterwards gets no line (its
guard is killed with it), or a later one; hvd_vs_ddp/cli/cell_errors.py takes the first.

    mpiexec -n 2 python -m hvd_vs_ddp.harness.rank_guard python -m pytest suites/
    -> hvd-vs-ddp: rank 1 of 2 (pid 4243 on host node1) was killed by signal 9 (SIGKILL)

The child dies with its guard (PR_SET_PDEATHSIG), and SIGINT, SIGTERM, SIGHUP, SIGUSR1
and SIGUSR2 sent to the guard are passed on to it.
"""
from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
import sys

from hvd_vs_ddp.backends.env import detect

PATTERN = re.compile(r"hvd-vs-ddp: rank (\d+) of \d+ \(pid (\d+) on host (\S+)\) "
                     r"(?:was killed by signal (\d+)|exited with code (\d+))")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
_PR_SET_PDEATHSIG = 1


def line(rank: int, world_size: int, pid: int, host: str, status: int) -> str:
    """The guard's line for a wait status that is not a clean exit."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        how = f"was killed by signal {sig} ({signal.Signals(sig).name})"
    else:
        how = f"exited with code {os.WEXITSTATUS(status)}"
    return f"hvd-vs-ddp: rank {rank} of {world_size} (pid {pid} on host {host}) {how}"


def _child(argv: list[str]) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() == 1:  # the guard is already gone
            os._exit(137)
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"hvd-vs-ddp: error: rank_guard: cannot run {argv[0]}: {exc}\n".encode())
    os._exit(127)


def main(argv: list[str]) -> int:
    if not argv:
        print("hvd-vs-ddp: error: usage: python -m hvd_vs_ddp.harness.rank_guard COMMAND [ARG...]",
              file=sys.stderr)
        return 2
    env = detect()
    pid = os.fork()
    if pid == 0:
        _child(argv)
    for sig in FORWARDED:
        signal.signal(sig, lambda s, _frame: os.kill(pid, s))
    _, status = os.waitpid(pid, 0)  # retried after a forwarded signal (PEP 475)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return 0
    text = line(env.rank, env.world_size, pid, socket.gethostname(), status)
    os.write(2, (text + "\n").encode())
    if os.WIFSIGNALED(status):
        died = os.WTERMSIG(status)
        if died not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(died, signal.SIG_DFL)
        os.kill(os.getpid(), died)  # end as the rank did, so the launcher sees the same
        return 128 + died
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
