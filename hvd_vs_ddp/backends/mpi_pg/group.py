"""MPIProcessGroup: the torch.distributed process group over one MPI communicator.

Each collective checks its arguments, stages buffers only where MPI cannot use the
tensor's own memory, and hands an Op to the engine, which runs it inline (the
caller waits at once) or on the communication thread; it returns an MPIWork.
The gather/scatter collectives come from gathers.GatherOps; operations MPI could do
but this group does not raise NotImplementedError naming themselves.
"""
from __future__ import annotations

import datetime
import itertools

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (
    AllreduceCoalescedOptions,
    AllreduceOptions,
    BarrierOptions,
    BroadcastOptions,
)

from .common import IMPLEMENTED, log, mpi
from .gathers import GatherOps
from .op import Op
from .staging import Staged, post_avg
from .state import STATE
from .typemap import check, move_type, msg, red_plan
from .work import MPIWork


class MPIProcessGroup(GatherOps, dist.ProcessGroup):  # type: ignore[misc]
    """torch.distributed process group whose collectives run on an MPI communicator."""

    def __init__(self, comm, rank: int, size: int, timeout: datetime.timedelta):
        super().__init__(rank, size)  # type: ignore[call-arg]  # the 2-argument binding
        self._comm = comm
        self._rank, self._size = rank, size
        self._timeout_s = timeout.total_seconds()
        self._cuda_aware = STATE.cuda_aware()[0]
        self._seq = itertools.count()
        self._broken: str | None = None
        self._closed = False
        self._group_name = self._group_desc = ""
        self._engine = STATE.engine()
        self._in_place = mpi().IN_PLACE

    # -- identity (torch's C++ side calls these through its Python trampoline) --
    def getBackendName(self) -> str:
        return "mpi4py"

    def setGroupName(self, name: str) -> None:
        self._group_name = name

    def getGroupName(self) -> str:
        return self._group_name

    def setGroupDesc(self, desc: str) -> None:
        self._group_desc = desc

    def getGroupDesc(self) -> str:
        return self._group_desc

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank

    def __repr__(self) -> str:
        return f"MPIProcessGroup(rank={self._rank}, size={self._size}, mode={self._engine.mode})"

    # -- plumbing --
    def _op_label(self, opname: str, seq: int, dtype, numel, red) -> str:
        """The name of one collective in errors: group, rank, op, dtype, size."""
        what = "" if dtype is None else f" ({dtype}, {numel} elements"
        what += "" if dtype is None else (f", ReduceOp.{red})" if red else ")")
        return (f"mpi4py process group '{self._group_name or '?'}' rank {self._rank}/"
                f"{self._size}: {opname} #{seq}{what}")

    def _timeout(self, opts) -> float:
        t = opts.timeout
        if isinstance(t, datetime.timedelta) and t.total_seconds() > 0:
            return t.total_seconds()
        return self._timeout_s

    def _on_device(self, t: torch.Tensor) -> bool:
        return t.is_cpu or self._cuda_aware

    def _launch(self, opname, t, red, opts, call, finish, result, keep) -> MPIWork:
        stream = None
        if t.is_cuda:
            stream = torch.cuda.current_stream(t.device)
            stream.synchronize()  # staged/device buffers must be ready before MPI reads
        op = Op(self, (opname, next(self._seq), t.dtype, t.numel(), red), self._timeout(opts),
                 call=call, finish=finish, result=result, keep=keep, stream=stream)
        # opts.asyncOp is False when the caller waits at once (dist.all_reduce(t)).
        self._engine.submit(op, waits=not getattr(opts, "asyncOp", True))
        return MPIWork(op, self._engine)

    @staticmethod
    def _one(tensors, opname: str) -> torch.Tensor:
        if len(tensors) != 1:
            raise ValueError(f"mpi4py process group: {opname} takes exactly one tensor per "
                             f"call, got {len(tensors)}")
        return check(tensors[0], opname)

    @staticmethod
    def _same(ts, ref: torch.Tensor, opname: str) -> None:
        for x in ts:
            check(x, opname)
            if x.dtype != ref.dtype or x.device != ref.device:
                raise TypeError(f"mpi4py process group: {opname} needs every tensor to be "
                                f"{ref.dtype} on {ref.device}; got {x.dtype} on {x.device}")

    # -- collectives --
    def allreduce(self, tensors, opts=None) -> MPIWork:  # type: ignore[override]
        opts = opts if opts is not None else AllreduceOptions()
        t = self._one(tensors, "allreduce")
        plan = red_plan(opts.reduceOp, t.dtype, "allreduce")
        if t.is_cpu and plan.work == t.dtype and plan.name != "AVG" and t.is_contiguous():
            # the fast path: MPI reduces the tensor's own memory, nothing to copy back
            return self._launch("allreduce", t, plan.name, opts,
                                ("Allreduce", (self._in_place, msg(t, plan.mpi_type),
                                               plan.mpi_op)), None, [t], (t,))
        st = Staged(t, plan.work, self._on_device(t))

        def finish():
            post_avg(plan.name, st.buf, self._size)
            st.back()
        return self._launch("allreduce", t, plan.name, opts,
                            ("Allreduce", (self._in_place, msg(st.buf, plan.mpi_type),
                                           plan.mpi_op)), finish, [t], (st.buf, t))

    def allreduce_coalesced(self, tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllreduceCoalescedOptions()
        if not tensors:
            raise ValueError("mpi4py process group: allreduce_coalesced got no tensors")
        t = check(tensors[0], "allreduce_coalesced")
        self._same(tensors, t, "allreduce_coalesced")
        plan = red_plan(opts.reduceOp, t.dtype, "allreduce_coalesced")
        dev = t.device if self._on_device(t) else torch.device("cpu")
        flat = torch.cat([x.detach().reshape(-1).to(dev, plan.work) for x in tensors])

        def finish():
            post_avg(plan.name, flat, self._size)
            for x, part in zip(tensors, flat.split([x.numel() for x in tensors]), strict=True):
                x.detach().copy_(part.view(x.shape))
        return self._launch("allreduce_coalesced", t, plan.name, opts,
                            ("Allreduce", (self._in_place, msg(flat, plan.mpi_type),
                                           plan.mpi_op)),
                            finish, list(tensors), (flat, *tensors))

    def broadcast(self, tensors, opts=None) -> MPIWork:  # type: ignore[override]
        opts = opts if opts is not None else BroadcastOptions()
        t = self._one(tensors, "broadcast")
        if opts.rootTensor != 0:
            raise ValueError("mpi4py process group: broadcast supports rootTensor=0 only")
        root = opts.rootRank
        st = Staged(t, t.dtype, self._on_device(t), copy_in=(root == self._rank))
        return self._launch("broadcast", t, None, opts,
                            ("Bcast", (msg(st.buf, move_type(t.element_size())), root)),
                            st.back if st.copy else None, [t], (st.buf, t))

    def barrier(self, opts=None) -> MPIWork:
        opts = opts if opts is not None else BarrierOptions()
        op = Op(self, ("barrier", next(self._seq), None, None, None), self._timeout(opts),
                 call=("Barrier", ()), result=[])
        self._engine.submit(op, waits=not getattr(opts, "asyncOp", True))
        return MPIWork(op, self._engine)

    # -- lifecycle --
    def shutdown(self) -> None:
        """Free the communicator once this group's queued work has run (bounded wait).
        New collectives on the group are refused from now on."""
        if self._comm is None or self._closed:
            return
        self._closed = True
        STATE.forget_default_comm(self._comm)
        if self._broken:  # something may still be inside MPI on it: leave it to Finalize
            return

        def free():  # queued behind this group's earlier collectives
            comm, self._comm = self._comm, None
            comm.Free()
        try:
            self._engine.call(free, f"free communicator of {self!r}", self._timeout_s)
        except RuntimeError as exc:  # e.g. the engine stopped at exit: Finalize frees it
            log.warning(f"shutdown of {self!r}: {exc}")

    def abort(self) -> None:
        self._broken = self._broken or "aborted by the user"


def _unsupported(opname: str):
    def method(self, *args, **kwargs):
        flat = list(args)
        while any(isinstance(a, (list, tuple)) for a in flat):
            flat = [b for a in flat for b in (a if isinstance(a, (list, tuple)) else [a])]
        dtypes = sorted({str(a.dtype) for a in flat if isinstance(a, torch.Tensor)})
        what = f" (dtype {', '.join(dtypes)})" if dtypes else ""
        raise NotImplementedError(
            f"mpi4py process group: {opname}{what} is not implemented; implemented: "
            f"{IMPLEMENTED}. Use the gloo backend for {opname}.")
    method.__name__ = opname
    return method


for _name in ("reduce", "gather", "gather_single", "scatter", "alltoall", "alltoall_base",
              "all_to_all_single", "send", "recv", "recv_anysource", "allgather_coalesced",
              "all_gather_single_coalesced", "allgather_into_tensor_coalesced",
              "reduce_scatter_single_coalesced", "reduce_scatter_tensor_coalesced",
              "allreduce_sparse", "monitored_barrier", "start_coalescing", "end_coalescing"):
    setattr(MPIProcessGroup, _name, _unsupported(_name))
