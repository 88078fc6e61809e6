"""Constants, the CollectiveTimeout error and the lazy mpi4py import.

The bottom of the package: every other module may import it; it imports no module of
the package. Importing it does not initialise MPI (mpi() does).
"""
from __future__ import annotations

import functools

import torch

from hvd_vs_ddp.common.log import log as project_log

PROGRESS_MODES = ("inline", "thread", "nonblocking", "sync")
DEFAULT_PROGRESS = "inline"
PROGRESS_ENV = "HVD_VS_DDP_MPI_PG_PROGRESS"
ABORT_ENV = "HVD_VS_DDP_MPI_PG_ABORT_ON_TIMEOUT"
CUDA_AWARE_ENV = "HVD_VS_DDP_MPI_CUDA_AWARE"  # "0"/"1" overrides the query
INT_MAX = 2**31 - 1
RED_OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")
NATIVE = ("float32", "float64", "int8", "uint8", "int16", "int32", "int64")
VIA_FLOAT32 = (torch.float16, torch.bfloat16)
IMPLEMENTED = ("allreduce, allreduce_coalesced, broadcast, allgather, all_gather_single, "
               "reduce_scatter, reduce_scatter_single, barrier")


log = project_log.getChild("mpi_pg")  # the project logger (hvd_vs_ddp/common/log.py)


class CollectiveTimeout(RuntimeError):
    """A collective did not finish within its timeout."""


@functools.cache
def mpi():
    """The mpi4py.MPI module (cached); the first call initialises MPI (thread level: mpi4py.rc,
    default MPI_THREAD_MULTIPLE requested)."""
    from mpi4py import MPI
    return MPI
