"""MPIProcessGroup: the torch.distributed process group over an MPI communicator.

Stages buffers, queues each collective on the engine and returns an MPIWork;
unsupported operations raise NotImplementedError naming themselves. _DEFAULT_COMM
lives here (create.py sets it through this module).
Part of the backends/mpi_pg package (its __init__ describes the design).
Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/test_mpi_pg.py -q
"""
from __future__ import annotations

import datetime
import itertools
import sys

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (
    AllgatherOptions,
    AllreduceCoalescedOptions,
    AllreduceOptions,
    BarrierOptions,
    BroadcastOptions,
    ReduceScatterOptions,
)

from .common import _IMPLEMENTED, _mpi
from .describe import _cuda_aware
from .engine import _engine, _Op
from .typemap import _check, _move_type, _msg, _overlaps, _red_dtype, _red_op
from .work import MPIWork

_DEFAULT_COMM = None  # communicator of the default group (torch rank == MPI rank)

# ----------------------------------------------------------- process group

class _Staged:
    """A contiguous buffer in the working dtype/device, copied back on finish."""

    def __init__(self, t: torch.Tensor, dtype: torch.dtype, on_device: bool,
                 copy_in: bool = True, force: bool = False):
        self.orig = t
        device = t.device if on_device else torch.device("cpu")
        self.copy = force or t.dtype != dtype or t.device != device or not t.is_contiguous()
        if self.copy:
            self.buf = torch.empty(t.shape, dtype=dtype, device=device)
            if copy_in:
                self.buf.copy_(t.detach())
        else:
            self.buf = t.detach()

    def back(self) -> None:
        if self.copy:
            self.orig.detach().copy_(self.buf)


class MPIProcessGroup(dist.ProcessGroup):
    """torch.distributed process group whose collectives run on an MPI communicator."""

    def __init__(self, comm, rank: int, size: int, timeout: datetime.timedelta):
        super().__init__(rank, size)
        self._comm = comm
        self._rank, self._size = rank, size
        self._timeout_s = timeout.total_seconds()
        self._cuda_aware = _cuda_aware()[0]
        self._seq = itertools.count()
        self._broken: str | None = None
        self._closed = False
        self._group_name = self._group_desc = ""
        self._engine = _engine()

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
    def _label(self, opname: str, t: torch.Tensor | None, red: str | None = None) -> str:
        gname = self._group_name or "?"
        what = "" if t is None else f" ({t.dtype}, {t.numel()} elements"
        what += "" if t is None else (f", ReduceOp.{red})" if red else ")")
        return (f"mpi4py process group '{gname}' rank {self._rank}/{self._size}: "
                f"{opname} #{next(self._seq)}{what}")

    def _timeout(self, opts) -> float:
        t = getattr(opts, "timeout", None)
        if isinstance(t, datetime.timedelta) and t.total_seconds() > 0:
            return t.total_seconds()
        return self._timeout_s

    def _on_device(self, t: torch.Tensor) -> bool:
        return t.device.type == "cpu" or self._cuda_aware

    def _launch(self, opname, t, red, opts, call, finish, result, keep) -> MPIWork:
        stream = None
        if any(x.is_cuda for x in keep if isinstance(x, torch.Tensor)):
            stream = torch.cuda.current_stream(t.device)
            stream.synchronize()  # staged/device buffers must be ready before MPI reads
        op = _Op(self._label(opname, t, red), self, self._timeout(opts), call=call,
                 finish=finish, result=result, keep=keep, stream=stream)
        return MPIWork(self._engine.submit(op))

    @staticmethod
    def _one(tensors, opname: str) -> torch.Tensor:
        if len(tensors) != 1:
            raise ValueError(f"mpi4py process group: {opname} takes exactly one tensor per "
                             f"call, got {len(tensors)}")
        return _check(tensors[0], opname)

    def _post_avg(self, name: str, buf: torch.Tensor) -> None:
        if name == "AVG":
            if buf.is_floating_point():
                buf.div_(self._size)
            else:
                buf.copy_(torch.div(buf, self._size, rounding_mode="trunc"))

    @staticmethod
    def _same(ts, ref: torch.Tensor, opname: str) -> None:
        for x in ts:
            _check(x, opname)
            if x.dtype != ref.dtype or x.device != ref.device:
                raise TypeError(f"mpi4py process group: {opname} needs every tensor to be "
                                f"{ref.dtype} on {ref.device}; got {x.dtype} on {x.device}")

    # -- collectives --
    def allreduce(self, tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllreduceOptions()
        t = self._one(tensors, "allreduce")
        name, mpi_op = _red_op(opts.reduceOp, "allreduce", t.dtype)
        work, mtype = _red_dtype(t.dtype, "allreduce", name)
        st = _Staged(t, work, self._on_device(t))
        MPI = _mpi()

        def finish():
            self._post_avg(name, st.buf)
            st.back()
        return self._launch("allreduce", t, name, opts,
                            ("Allreduce", (MPI.IN_PLACE, _msg(st.buf, mtype), mpi_op)),
                            finish, [t], (st.buf, t))

    def allreduce_coalesced(self, tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllreduceCoalescedOptions()
        if not tensors:
            raise ValueError("mpi4py process group: allreduce_coalesced got no tensors")
        t = _check(tensors[0], "allreduce_coalesced")
        self._same(tensors, t, "allreduce_coalesced")
        name, mpi_op = _red_op(opts.reduceOp, "allreduce_coalesced", t.dtype)
        work, mtype = _red_dtype(t.dtype, "allreduce_coalesced", name)
        dev = t.device if self._on_device(t) else torch.device("cpu")
        flat = torch.cat([x.detach().reshape(-1).to(dev, work) for x in tensors])
        MPI = _mpi()

        def finish():
            self._post_avg(name, flat)
            for x, part in zip(tensors, flat.split([x.numel() for x in tensors]), strict=True):
                x.detach().copy_(part.view(x.shape))
        return self._launch("allreduce_coalesced", t, name, opts,
                            ("Allreduce", (MPI.IN_PLACE, _msg(flat, mtype), mpi_op)),
                            finish, list(tensors), (flat, *tensors))

    def broadcast(self, tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else BroadcastOptions()
        t = self._one(tensors, "broadcast")
        if opts.rootTensor != 0:
            raise ValueError("mpi4py process group: broadcast supports rootTensor=0 only")
        root = opts.rootRank
        st = _Staged(t, t.dtype, self._on_device(t), copy_in=(root == self._rank))
        return self._launch("broadcast", t, None, opts,
                            ("Bcast", (_msg(st.buf, _move_type(t.element_size())), root)),
                            st.back, [t], (st.buf, t))

    def allgather(self, output_tensors, input_tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllgatherOptions()
        t = self._one(input_tensors, "allgather")
        if len(output_tensors) != 1 or len(output_tensors[0]) != self._size:
            raise ValueError(f"mpi4py process group: allgather needs one output list of "
                             f"{self._size} tensors")
        outs = output_tensors[0]
        self._same(outs, t, "allgather")
        if outs[self._rank].numel() != t.numel():
            raise ValueError(f"mpi4py process group: allgather output[{self._rank}] has "
                             f"{outs[self._rank].numel()} elements, input has {t.numel()}")
        on_dev = self._on_device(t)
        src = _Staged(t, t.dtype, on_dev)
        counts = [o.numel() for o in outs]
        recv = torch.empty(sum(counts), dtype=t.dtype,
                           device=t.device if on_dev else torch.device("cpu"))
        mtype = _move_type(t.element_size())
        if len(set(counts)) == 1:
            call = ("Allgather", (_msg(src.buf, mtype), _msg(recv, mtype)))
        else:
            displs = list(itertools.accumulate([0] + counts[:-1]))
            rmsg = _msg(recv, mtype)
            call = ("Allgatherv", (_msg(src.buf, mtype), [rmsg[0], (counts, displs), mtype]))

        def finish():
            for o, part in zip(outs, recv.split(counts), strict=True):
                o.detach().copy_(part.view(o.shape))
        return self._launch("allgather", t, None, opts, call, finish, [list(outs)],
                            (src.buf, recv, t, *outs))

    def all_gather_single(self, output, input, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllgatherOptions()
        _check(input, "all_gather_single")
        self._same([output], input, "all_gather_single")
        n = input.numel()
        if output.numel() != n * self._size:
            raise ValueError(f"mpi4py process group: all_gather_single output has "
                             f"{output.numel()} elements, expected {self._size} x {n}")
        on_dev = self._on_device(input)
        out = _Staged(output, output.dtype, on_dev, copy_in=False)
        mtype = _move_type(input.element_size())
        MPI = _mpi()
        slot = out.buf.reshape(-1)[self._rank * n:(self._rank + 1) * n]
        if not out.copy and input.is_contiguous() and input.data_ptr() == slot.data_ptr() \
                and n > 0:
            send = MPI.IN_PLACE  # input is this rank's slot of the output (FSDP-style)
            keep = (out.buf, input, output)
        else:
            src = _Staged(input, input.dtype, on_dev, force=_overlaps(input, output))
            send, keep = _msg(src.buf, mtype), (src.buf, out.buf, input, output)
        return self._launch("all_gather_single", input, None, opts,
                            ("Allgather", (send, _msg(out.buf, mtype))),
                            out.back, [output], keep)

    _allgather_base = all_gather_single

    def reduce_scatter(self, output_tensors, input_tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else ReduceScatterOptions()
        t = self._one(output_tensors, "reduce_scatter")
        if len(input_tensors) != 1 or len(input_tensors[0]) != self._size:
            raise ValueError(f"mpi4py process group: reduce_scatter needs one input list of "
                             f"{self._size} tensors")
        ins = input_tensors[0]
        self._same(ins, t, "reduce_scatter")
        counts = [x.numel() for x in ins]
        if counts[self._rank] != t.numel():
            raise ValueError(f"mpi4py process group: reduce_scatter input[{self._rank}] has "
                             f"{counts[self._rank]} elements, output has {t.numel()}")
        name, mpi_op = _red_op(opts.reduceOp, "reduce_scatter", t.dtype)
        work, mtype = _red_dtype(t.dtype, "reduce_scatter", name)
        dev = t.device if self._on_device(t) else torch.device("cpu")
        send = torch.cat([x.detach().reshape(-1).to(dev, work) for x in ins])
        out = _Staged(t, work, self._on_device(t), copy_in=False)

        def finish():
            self._post_avg(name, out.buf)
            out.back()
        return self._launch("reduce_scatter", t, name, opts,
                            ("Reduce_scatter", (_msg(send, mtype), _msg(out.buf, mtype),
                                                counts, mpi_op)),
                            finish, [t], (send, out.buf, t))

    def reduce_scatter_single(self, output, input, opts=None) -> MPIWork:
        opts = opts if opts is not None else ReduceScatterOptions()
        _check(output, "reduce_scatter_single")
        self._same([input], output, "reduce_scatter_single")
        if input.numel() != output.numel() * self._size:
            raise ValueError(f"mpi4py process group: reduce_scatter_single input has "
                             f"{input.numel()} elements, expected {self._size} x "
                             f"{output.numel()}")
        name, mpi_op = _red_op(opts.reduceOp, "reduce_scatter_single", output.dtype)
        work, mtype = _red_dtype(output.dtype, "reduce_scatter_single", name)
        on_dev = self._on_device(output)
        src = _Staged(input, work, on_dev, force=_overlaps(input, output))
        out = _Staged(output, work, on_dev, copy_in=False)

        def finish():
            self._post_avg(name, out.buf)
            out.back()
        return self._launch("reduce_scatter_single", output, name, opts,
                            ("Reduce_scatter_block", (_msg(src.buf, mtype),
                                                      _msg(out.buf, mtype), mpi_op)),
                            finish, [output], (src.buf, out.buf, input, output))

    _reduce_scatter_base = reduce_scatter_single

    def barrier(self, opts=None) -> MPIWork:
        opts = opts if opts is not None else BarrierOptions()
        op = _Op(self._label("barrier", None), self, self._timeout(opts),
                 call=("Barrier", ()), result=[])
        return MPIWork(self._engine.submit(op))

    # -- lifecycle --
    def shutdown(self) -> None:
        """Free the communicator once this group's queued work has run (bounded wait).
        New collectives on the group are refused from now on."""
        global _DEFAULT_COMM
        if self._comm is None or self._closed:
            return
        self._closed = True
        if self._comm is _DEFAULT_COMM:
            _DEFAULT_COMM = None
        if self._broken:  # something may still be inside MPI on it: leave it to Finalize
            return

        def free():  # queued behind this group's earlier collectives
            comm, self._comm = self._comm, None
            comm.Free()
        if self._engine.mode == "sync":
            free()
            return
        try:
            self._engine.call(free, f"free communicator of {self!r}", self._timeout_s)
        except RuntimeError as exc:  # e.g. the engine stopped at exit: Finalize frees it
            print(f"[mpi4py-pg] shutdown of {self!r}: {exc}", file=sys.stderr, flush=True)

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
            f"{_IMPLEMENTED}. Use the gloo backend for {opname}.")
    method.__name__ = opname
    return method


for _name in ("reduce", "gather", "gather_single", "scatter", "alltoall", "alltoall_base",
              "all_to_all_single", "send", "recv", "recv_anysource", "allgather_coalesced",
              "all_gather_single_coalesced", "allgather_into_tensor_coalesced",
              "reduce_scatter_single_coalesced", "reduce_scatter_tensor_coalesced",
              "allreduce_sparse", "monitored_barrier", "start_coalescing", "end_coalescing"):
    setattr(MPIProcessGroup, _name, _unsupported(_name))
