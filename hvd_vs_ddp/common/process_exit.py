"""`hard_exit`: leave a rank's process once its results are written, skipping C++ teardown.

torch 2.14's distributed libraries sometimes abort in their exit-time destructors
("terminate called without an active exception", seen here under torchrun with Gloo),
which would turn a finished, passing rank into a crash. Every process that ran a
process group ends through this: the collective pytest plugin, the recovery workers,
the selftest's rank script and the tests' rank scripts.

    from hvd_vs_ddp.common.process_exit import hard_exit
    hard_exit(main())
"""
from __future__ import annotations

import os
import sys


def hard_exit(code: int) -> None:
    """Leave without C++ static destructors, once every result is written and flushed.

    torch 2.14's distributed libraries sometimes abort in their exit-time destructors
    ("terminate called without an active exception", seen here under torchrun with
    Gloo), which would turn a finished, passing run into a crash of its rank.
    """
    import atexit

    atexit._run_exitfuncs()  # Horovod's shutdown, the mpi4py process group's clean-up
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()  # mpirun counts a rank that skips it as failed
    flush_streams()
    os._exit(code)


def flush_streams() -> None:
    """Push what this process printed to its pipes (a launcher may kill it any moment)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # a closed capture stream
            pass
