"""The cores of this machine: the node's physical cores and those this process may use.

The suites' thread plan (hvd_vs_ddp/harness/threads.py) and the Horovod backend's wait
(hvd_vs_ddp/backends/horovod.py: it sleeps instead of spinning where ranks outnumber
cores) read the same counts from here.

    python -m hvd_vs_ddp.common.cores
"""
from __future__ import annotations

import os

import psutil


def node_cores() -> int:
    """Physical cores of the node (torch's own default basis for its threads)."""
    return psutil.cpu_count(logical=False) or os.cpu_count() or 1


def usable_cores() -> int:
    """Cores this process may run on (its affinity, e.g. Slurm's cpus)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


if __name__ == "__main__":
    print(f"node cores {node_cores()}, usable by this process {usable_cores()}")
