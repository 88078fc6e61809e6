"""An MPI process group for torch.distributed, written in Python on mpi4py.

pip's torch wheels have no MPI backend (`torch.distributed.is_mpi_available()` is
False). This module fills the gap so that DDP can be measured over MPI too:

    from hvd_vs_ddp.backends import mpi_pg
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

How it is asynchronous: every MPI call the package makes goes through one engine
(engine.py), which never lets two of them be inside MPI at once, so
MPI_THREAD_SERIALIZED suffices. Progress modes, chosen by HVD_VS_DDP_MPI_PG_PROGRESS
(or register(progress=...)):

- "inline" (default): blocking MPI collectives (MPI_Allreduce ...). A collective the
  caller waits for at once (torch passes opts.asyncOp=False: dist.all_reduce(t),
  barrier, all_gather_object ...) runs on the calling thread when nothing of ours is
  queued or inside MPI: no thread hop, no queue, no Event, and a contiguous CPU
  tensor in a native dtype is reduced in its own memory (no staging copy). Async
  collectives (async_op=True; DDP's gradient buckets) are queued for one
  communication thread, which runs them in order and completes their Work and torch
  Future, so DDP overlaps gradient allreduce with the rest of backward as before.
  Only the thread that runs a collective differs between the two paths, never the MPI
  call: a blocking collective never matches a nonblocking one (MPI-3), so every rank
  must pick the same kind whatever its own async_op; Open MPI 4's nonblocking ones
  (libnbc) were also 1.5-2.5x slower than blocking ones from 4 B to 64 MiB here.
  Collectives suite, 2 ranks on the shared 2-core machine, medians of 11 interleaved
  runs per side (benchmarks/mpi_pg_ratios.py): a 4 B dist.all_reduce took 123 us in
  "thread" mode and 32 us inline (raw mpi4py Allreduce: 1.4 us; torch's dist.all_reduce
  around a Python process group that does nothing costs ~5-8 us of it); 256 KiB busbw
  went from 0.75 to 1.6x the raw bar, 64 MiB stayed ~0.7x. At 4 MiB the "thread"
  path measured 3-4 GB/s on the loaded machine, inline ~0.1-0.2 GB/s like raw
  mpi4py itself (timings there are bimodal, 0.6 ms or 30+ ms): choose "thread" if
  that size matters to you.
- "thread": every collective through the communication thread, like torch's own
  ProcessGroupMPI (the default before "inline"; a thread hop per collective).
  Open MPI 4 runs its tuned algorithms for blocking collectives; its nonblocking ones
  (libnbc) were 1.5-2.5x slower from 4 B to 64 MiB on the 2-core machine.
  In "inline" and "thread" modes, collectives of ALL groups run one at a time in the
  order they were issued, so ranks must issue them in the same order across groups
  (as with torch's ProcessGroupMPI); "nonblocking" lifts that.
- "nonblocking": MPI_Iallreduce & co. started in order and progressed with
  MPI_Test by the communication thread, so collectives on different groups can be
  in flight at once.
- "sync": no thread; every collective runs on the caller and finishes before the
  call returns (chosen automatically when MPI gives less than MPI_THREAD_SERIALIZED).

Timeouts: a watchdog thread fails every operation still unfinished after the group
timeout (or opts.timeout): its Future gets a CollectiveTimeout naming the operation,
dtype, size, group and rank (so DDP's backward raises instead of hanging), and the
group refuses new work. Work.wait() waits at most until that deadline;
Work.wait(timeout) raises CollectiveTimeout when its own timeout passes but leaves
the operation running. A collective running inline holds its caller inside MPI,
where no error can reach it: at its deadline the message is printed and the group
marked unusable, and the caller raises it if the peers ever arrive (as in "sync"
mode; a dead rank ends an mpirun job anyway). HVD_VS_DDP_MPI_PG_ABORT_ON_TIMEOUT=1
calls MPI_Abort on any timeout instead, ending the whole job.
Future.then() callbacks run on the communication thread: they must not wait for
other collectives.

Package layout, bottom to top (each module imports only modules above it in this
list, never the other way; tests/unit/test_mpi_pg_layout.py checks it):
common.py (constants, CollectiveTimeout, mpi()), typemap.py (dtype/ReduceOp
mapping, checks), probe.py (CUDA-awareness query), staging.py (staging buffers), op.py (Op,
the record of one collective), engine.py (the engine: inline runs, communication
thread, watchdog), state.py
(STATE: mode, engine, default communicator, CUDA-awareness), work.py (MPIWork),
gathers.py (gather/scatter collectives), group.py (MPIProcessGroup), create.py
(register, is_available), describe.py (describe). This file only re-exports.

Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/system/test_mpi_pg.py -q
"""
from __future__ import annotations

from .common import PROGRESS_MODES, CollectiveTimeout
from .create import is_available, register
from .describe import describe
from .group import MPIProcessGroup
from .work import MPIWork

__all__ = ["PROGRESS_MODES", "CollectiveTimeout", "MPIProcessGroup", "MPIWork", "describe",
           "is_available", "register"]
