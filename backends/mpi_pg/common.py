"""Shared pieces of the mpi4py process group: constants, CollectiveTimeout, _mpi().

Part of the backends/mpi_pg package (its __init__ describes the design).
Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/test_mpi_pg.py -q
"""
from __future__ import annotations

import torch

PROGRESS_MODES = ("thread", "nonblocking", "sync")
_PROGRESS_ENV = "HVD_VS_DDP_MPI_PG_PROGRESS"
_ABORT_ENV = "HVD_VS_DDP_MPI_PG_ABORT_ON_TIMEOUT"
_CUDA_AWARE_ENV = "HVD_VS_DDP_MPI_CUDA_AWARE"  # "0"/"1" overrides the query
_INT_MAX = 2**31 - 1
_RED_OPS = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"}
_NATIVE = ("float32", "float64", "int8", "uint8", "int16", "int32", "int64")
_VIA_FLOAT32 = (torch.float16, torch.bfloat16)
_IMPLEMENTED = ("allreduce, allreduce_coalesced, broadcast, allgather, all_gather_single, "
                "reduce_scatter, reduce_scatter_single, barrier")


class CollectiveTimeout(RuntimeError):
    """A collective did not finish within its timeout."""


def _mpi():
    from mpi4py import MPI  # initialises MPI (thread level: mpi4py.rc, default multiple)
    return MPI
