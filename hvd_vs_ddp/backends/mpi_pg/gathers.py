"""The gather and scatter collectives of MPIProcessGroup, as a mixin class.

allgather (list form; uneven sizes go through MPI_Allgatherv), all_gather_single
(also in place, FSDP-style), reduce_scatter (list form) and reduce_scatter_single.
They build an MPI call plus a finish() that copies results back, and hand both to
the group's _launch(); group.py defines MPIProcessGroup on top of this class.
"""
from __future__ import annotations

import itertools

import torch
from torch._C._distributed_c10d import AllgatherOptions, ReduceScatterOptions

from .common import mpi
from .staging import Staged, post_avg
from .typemap import check, move_type, msg, overlaps, red_plan


class GatherOps:
    """allgather, all_gather_single, reduce_scatter, reduce_scatter_single."""

    def allgather(self, output_tensors, input_tensors, opts=None):
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
        src = Staged(t, t.dtype, on_dev)
        counts = [o.numel() for o in outs]
        recv = torch.empty(sum(counts), dtype=t.dtype,
                           device=t.device if on_dev else torch.device("cpu"))
        mtype = move_type(t.element_size())
        if len(set(counts)) == 1:
            call = ("Allgather", (msg(src.buf, mtype), msg(recv, mtype)))
        else:
            displs = list(itertools.accumulate([0] + counts[:-1]))
            rmsg = msg(recv, mtype)
            call = ("Allgatherv", (msg(src.buf, mtype), [rmsg[0], (counts, displs), mtype]))

        def finish():
            for o, part in zip(outs, recv.split(counts), strict=True):
                o.detach().copy_(part.view(o.shape))
        return self._launch("allgather", t, None, opts, call, finish, [list(outs)],
                            (src.buf, recv, t, *outs))

    def all_gather_single(self, output, input, opts=None):
        opts = opts if opts is not None else AllgatherOptions()
        check(input, "all_gather_single")
        self._same([output], input, "all_gather_single")
        n = input.numel()
        if output.numel() != n * self._size:
            raise ValueError(f"mpi4py process group: all_gather_single output has "
                             f"{output.numel()} elements, expected {self._size} x {n}")
        on_dev = self._on_device(input)
        out = Staged(output, output.dtype, on_dev, copy_in=False)
        mtype = move_type(input.element_size())
        slot = out.buf.reshape(-1)[self._rank * n:(self._rank + 1) * n]
        if not out.copy and input.is_contiguous() and input.data_ptr() == slot.data_ptr() \
                and n > 0:
            send = mpi().IN_PLACE  # input is this rank's slot of the output (FSDP-style)
            keep = (out.buf, input, output)
        else:
            src = Staged(input, input.dtype, on_dev, force=overlaps(input, output))
            send, keep = msg(src.buf, mtype), (src.buf, out.buf, input, output)
        return self._launch("all_gather_single", input, None, opts,
                            ("Allgather", (send, msg(out.buf, mtype))),
                            out.back, [output], keep)

    _allgather_base = all_gather_single

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
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
        plan = red_plan(opts.reduceOp, t.dtype, "reduce_scatter")
        dev = t.device if self._on_device(t) else torch.device("cpu")
        send = torch.cat([x.detach().reshape(-1).to(dev, plan.work) for x in ins])
        out = Staged(t, plan.work, self._on_device(t), copy_in=False)

        def finish():
            post_avg(plan.name, out.buf, self._size)
            out.back()
        return self._launch("reduce_scatter", t, plan.name, opts,
                            ("Reduce_scatter", (msg(send, plan.mpi_type),
                                                msg(out.buf, plan.mpi_type), counts,
                                                plan.mpi_op)),
                            finish, [t], (send, out.buf, t))

    def reduce_scatter_single(self, output, input, opts=None):
        opts = opts if opts is not None else ReduceScatterOptions()
        check(output, "reduce_scatter_single")
        self._same([input], output, "reduce_scatter_single")
        if input.numel() != output.numel() * self._size:
            raise ValueError(f"mpi4py process group: reduce_scatter_single input has "
                             f"{input.numel()} elements, expected {self._size} x "
                             f"{output.numel()}")
        plan = red_plan(opts.reduceOp, output.dtype, "reduce_scatter_single")
        on_dev = self._on_device(output)
        src = Staged(input, plan.work, on_dev, force=overlaps(input, output))
        out = Staged(output, plan.work, on_dev, copy_in=False)

        def finish():
            post_avg(plan.name, out.buf, self._size)
            out.back()
        return self._launch("reduce_scatter_single", output, plan.name, opts,
                            ("Reduce_scatter_block", (msg(src.buf, plan.mpi_type),
                                                      msg(out.buf, plan.mpi_type),
                                                      plan.mpi_op)),
                            finish, [output], (src.buf, out.buf, input, output))

    _reduce_scatter_base = reduce_scatter_single
