"""How a Horovod rank waits for its handles where its ranks outnumber the host's cores.

Horovod's own wait spins; with more ranks than cores the spinning main threads starve
the background threads that do the work. hvd_vs_ddp/backends/horovod.py asks
`oversubscribed()` once at set-up and then waits with `settle()` (sleeps) instead.
Imported by the Horovod backend only; nothing here runs on its own.
"""
from __future__ import annotations

import time

from hvd_vs_ddp.common.cores import node_cores, usable_cores


def oversubscribed(local_size: int, usable: int | None = None,
                   cores: int | None = None) -> bool:
    """More ranks on this host than cores they share. Ranks bound to cores of their own
    (srun -c 4: each sees 4 of the node's cores) do not compete with each other: there
    Horovod waits its own way, as DDP does (they were sent to sleep-polling before,
    a penalty DDP does not pay)."""
    usable = usable_cores() if usable is None else usable
    cores = node_cores() if cores is None else cores
    if usable < cores and usable * max(local_size, 1) <= cores:
        return False  # bound per rank: each on its own cores
    return local_size > usable


def settle(handles) -> None:
    """Wait for Horovod's handles by polling and sleeping, not spinning.

    Horovod's own wait (horovod/torch/mpi_ops_v2.cc WaitAndClear) loops on
    std::this_thread::yield() until the background thread marks the handle done. With
    more ranks on a host than cores, the ranks' spinning main threads take the cores
    from the background threads that do the work (measured here: 4 ranks on 2 cores, a
    suites job of 241 s took 1290 s once, 75% of it in the kernel). This waits the same
    handles out with sleeps from 50 µs up to 2 ms, after which synchronize() finds them
    done. Used only where the ranks outnumber the cores (HorovodBackend._polite), where
    a timing says little anyway; elsewhere Horovod waits its own way."""
    import horovod.torch as hvd

    pending = [h for h in handles if isinstance(h, int)]
    pause = 50e-6
    while pending:
        pending = [h for h in pending if not hvd.poll(h)]
        if pending:
            time.sleep(pause)
            pause = min(2 * pause, 2e-3)
