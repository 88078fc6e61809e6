"""An MPI process group for torch.distributed, written in Python on mpi4py.

pip's torch wheels have no MPI backend (`torch.distributed.is_mpi_available()` is
False). This module fills the gap so that DDP can be measured over MPI too:

    from backends import mpi_pg
    name = mpi_pg.register()                    # "mpi4py"; safe to call twice
    dist.init_process_group(name, rank=r, world_size=n, store=store, timeout=t)
    model = torch.nn.parallel.DistributedDataParallel(model)

    mpirun -np 2 python train.py                # as root: OMPI_ALLOW_RUN_AS_ROOT=1
                                                # and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

The rank given to init_process_group may differ from the MPI rank: the group's
communicator is COMM_WORLD split with key=rank, so MPI rank == torch rank in it.
Each process group owns its communicator (subgroups: MPI_Comm_create_group over
the default group's communicator), so groups never see each other's messages.

Implemented: allreduce (SUM, AVG, MIN, MAX, PRODUCT; BAND/BOR/BXOR on integers),
allreduce_coalesced, broadcast, allgather (list form, uneven sizes allowed),
all_gather_single (all_gather_into_tensor / _allgather_base), reduce_scatter (list
form), reduce_scatter_single (reduce_scatter_tensor / _reduce_scatter_base) and
barrier. Everything else raises NotImplementedError naming the operation.
Reductions take float32, float64, int8, uint8, int16, int32, int64 as they are;
float16 and bfloat16 are reduced in float32 (a staging copy) and rounded back once:
the result is the float32 result rounded to the dtype, never an accumulation of
half-precision roundings. AVG on integers truncates toward zero (like NCCL).
Data movement (broadcast, allgather) takes any dtype.
Non-contiguous tensors go through a contiguous copy; CUDA tensors go through host
memory unless the MPI library says it is CUDA-aware.

How it is asynchronous: every MPI call of the process runs on ONE communication
thread (so MPI_THREAD_SERIALIZED suffices and Open MPI 4 is never entered from two
of our threads). A collective stages its buffers on the caller's thread, queues the
operation and returns a Work at once; the communication thread runs it, copies
results back, completes the Work's torch Future and wakes waiters. DDP therefore
overlaps gradient allreduce with the rest of backward. Two progress modes, chosen by
HVD_VS_DDP_MPI_PG_PROGRESS (or register(progress=...)):

- "thread" (default): blocking MPI collectives (MPI_Allreduce ...) on the
  communication thread, like torch's own ProcessGroupMPI. Open MPI 4 runs its tuned
  algorithms for these; its non-blocking ones (libnbc) were about 1.3-2x slower for
  a 64 MiB allreduce on the 2-core machine (tests/ranks/mpi_pg_bandwidth.py).
  Collectives of ALL groups then run one at a time in the order they were issued,
  so ranks must issue them in the same order across groups (as with torch's
  ProcessGroupMPI); "nonblocking" lifts that.
- "nonblocking": MPI_Iallreduce & co. started in order and progressed with
  MPI_Test by the communication thread, so collectives on different groups can be
  in flight at once.
- "sync": no thread; every collective finishes before the call returns (chosen
  automatically when MPI gives less than MPI_THREAD_SERIALIZED).

Timeouts: a watchdog thread fails every operation still unfinished after the group
timeout (or opts.timeout): its Future gets a CollectiveTimeout naming the operation,
dtype, size, group and rank (so DDP's backward raises instead of hanging), and the
group refuses new work. Work.wait() waits at most until that deadline;
Work.wait(timeout) raises CollectiveTimeout when its own timeout passes but leaves
the operation running. HVD_VS_DDP_MPI_PG_ABORT_ON_TIMEOUT=1 calls MPI_Abort on a
timeout instead, ending the whole job. Future.then() callbacks run on the
communication thread: they must not wait for other collectives.

Package layout (backends/mpi_pg/): common.py (constants, CollectiveTimeout),
typemap.py (dtype/ReduceOp mapping), engine.py (communication thread, watchdog),
work.py (MPIWork), group.py (MPIProcessGroup), create.py (register, is_available),
describe.py (describe). This file only re-exports the public API.

Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/test_mpi_pg.py -q
"""
from __future__ import annotations

from .common import PROGRESS_MODES, CollectiveTimeout
from .create import is_available, register
from .describe import describe
from .group import MPIProcessGroup
from .work import MPIWork

__all__ = ["register", "is_available", "describe", "MPIProcessGroup", "MPIWork",
           "CollectiveTimeout", "PROGRESS_MODES"]
