"""Start one command per emulated host and wait for them as one job.

A cell across emulated hosts under torchrun is one torchrun per host (`--nnodes 2
--node-rank R`), as on a cluster; the runner starts and stops one process per cell,
so this is that process: it starts every command (each already prefixed to run inside
its host's namespace, hvd_vs_ddp/links/hosts.py `Host.prefix`), waits for all, and ends
the rest as soon as one fails (a rank that died leaves its peer waiting for a
rendezvous timeout otherwise). Its exit status is the first failure's, else 0; SIGTERM
or SIGINT ends every command it started.

    python -m hvd_vs_ddp.links.fanout '[["ip", "netns", "exec", "ns1", "torchrun", ...],
                                         ["ip", "netns", "exec", "ns2", "torchrun", ...]]'
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from hvd_vs_ddp.common.processes import signal_groups


def run(commands: list[list[str]], poll_s: float = 0.2) -> int:
    procs: list[subprocess.Popen] = []

    def end_all(*_args) -> None:
        signal_groups(procs, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(0.1)
        signal_groups(procs, signal.SIGKILL)

    def stop(signum, _frame) -> None:
        end_all()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for argv in commands:  # each in its own group, so that its whole tree can be ended
        procs.append(subprocess.Popen(argv, start_new_session=True))
    while True:
        codes = [p.poll() for p in procs]
        failed = [c for c in codes if c not in (None, 0)]
        if failed:
            end_all()
            return failed[0]
        if None not in codes:
            return 0
        time.sleep(poll_s)


if __name__ == "__main__":
    sys.exit(run(json.loads(sys.argv[1])))
