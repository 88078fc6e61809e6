"""When each library's allreduces run during backward, and the step time that results.

Both libraries start communicating while backward is still computing; they differ in
how they group gradients and when they launch:

- DDP (torch/csrc/distributed/c10d/reducer.cpp): gradients are packed, in the order
  backward makes them ready, into buckets of `bucket_cap_mb` (the first one of 1 MiB);
  a bucket's allreduce is launched as soon as its last gradient is ready, one after
  another on one communication stream.
- Horovod (horovod/common/operations.cc): each gradient is enqueued when ready; a
  background thread wakes every `cycle_time`, negotiates which tensors every rank has
  ready (one small collective), packs them into a fusion buffer of up to
  `fusion_threshold` bytes (a memory copy in and out) and allreduces each buffer.

A step is forward + max(end of backward compute, end of the last allreduce) + the rest
(optimizer): communication that outlasts backward is exposed.

    grads = [Grad(bytes=4 * 2**20, ready=0.1), ...]   # ready: fraction of backward
    ddp_step(StepCompute(0.03, 0.06, 0.005), grads, fabric.allreduce)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from hvd_vs_ddp.projection.terms import Drawn

FIRST_BUCKET_BYTES = 1 * 2**20  # torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES


@dataclass(frozen=True)
class Grad:
    bytes: int
    ready: float  # when backward has made it ready, as a fraction of backward compute


@dataclass(frozen=True)
class StepCompute:
    forward_s: float
    backward_s: float
    other_s: float = 0.0  # optimizer step and the rest of a step without communication

    @property
    def total_s(self) -> float:
        return self.forward_s + self.backward_s + self.other_s


@dataclass(frozen=True)
class Step:
    step_s: float
    comm_s: float       # time spent in allreduces (and Horovod's negotiation, copies)
    exposed_s: float    # communication past the end of backward compute
    ops: int            # allreduces launched
    terms: dict[str, float] = field(default_factory=dict)  # seconds each term adds


def _finish(compute: StepCompute, end_comm: float, comm: float, ops: int,
            backward_s: float | None = None, after_s: float = 0.0,
            terms: dict[str, float] | None = None) -> Step:
    """forward + backward (lengthened by the terms) + what outlasts it + the rest."""
    backward = compute.backward_s if backward_s is None else backward_s
    exposed = max(0.0, end_comm - backward)
    t = dict(terms or {})
    t["exposed communication"] = exposed
    return Step(compute.forward_s + backward + exposed + after_s + compute.other_s, comm,
                exposed + after_s, ops, t)


def _overlap(intervals: list[tuple[float, float]], until: float) -> float:
    """Seconds of communication kernels running before `until` (backward's end)."""
    return sum(max(0.0, min(b, until) - a) for a, b in intervals)


def buckets(grads: Sequence[Grad], cap_bytes: float,
            first_bytes: float = FIRST_BUCKET_BYTES,
            sizes: Sequence[int] | None = None) -> list[list[Grad]]:
    """DDP's buckets: gradients in ready order, a bucket closed when the next gradient
    would pass its cap. `sizes` (DDP's own bucket sizes, recorded in the run) close
    them where DDP did instead."""
    ordered = sorted(grads, key=lambda g: g.ready)
    out: list[list[Grad]] = [[]]
    filled = 0
    for g in ordered:
        k = len(out) - 1
        cap = (sizes[k] if sizes is not None and k < len(sizes)
               else (first_bytes if k == 0 else cap_bytes))
        if out[-1] and filled + g.bytes > cap:
            out.append([])
            filled = 0
        out[-1].append(g)
        filled += g.bytes
    return [b for b in out if b]


def ddp_step(compute: StepCompute, grads: Sequence[Grad],
             allreduce: Callable[[float], float], bucket_cap_bytes: float = 25 * 2**20,
             bucket_sizes: Sequence[int] | None = None,
             terms: "Drawn | None" = None) -> Step:
    """DDP: a bucket's allreduce starts on the communication stream when its last
    gradient exists on the device, one bucket after another. With `terms`
    (hvd_vs_ddp/projection/terms.py): the copies into buckets lengthen backward, the
    launches, the contention of overlapped allreduces with backward, and the copies
    back out after the last allreduce."""
    total = sum(g.bytes for g in grads)
    t: dict[str, float] = {}
    backward = compute.backward_s
    launch = 0.0
    if terms is not None:
        launch = terms.ddp_launch_s
        if not terms.bucket_view:
            t["bucket copies in"] = 2 * total / terms.copy_bytes_per_s
            backward += t["bucket copies in"]
    end, comm = 0.0, 0.0
    spans: list[tuple[float, float]] = []
    groups = buckets(grads, bucket_cap_bytes, sizes=bucket_sizes)
    for bucket in groups:
        ready = max(g.ready for g in bucket) * backward
        cost = allreduce(sum(g.bytes for g in bucket))
        start = max(end, ready + launch)
        end = start + cost
        spans.append((start, end))
        comm += cost
    after = 0.0
    if terms is not None:
        t["launches"] = launch * len(groups)
        t["contention"] = terms.contention * _overlap(spans, backward)
        backward += t["contention"]
        if not terms.bucket_view:
            t["bucket copies out"] = after = 2 * total / terms.copy_bytes_per_s
    return _finish(compute, end, comm, len(groups), backward, after, t)


def horovod_step(compute: StepCompute, grads: Sequence[Grad],
                 allreduce: Callable[[float], float], fusion_bytes: float = 128 * 2**20,
                 cycle_s: float = 1e-3, negotiation_s: float = 0.0,
                 memcpy_bytes_per_s: float = math.inf,
                 terms: "Drawn | None" = None) -> Step:
    """Horovod's background thread, cycle by cycle (operations.cc RunLoopOnce): it sleeps
    to the next cycle, negotiates the tensors enqueued so far, and for each fused
    response waits for its tensors' data, then launches the copy in, the allreduce
    and the copy out on its stream (ops/nccl_operations.cc), and goes on to the next
    cycle without waiting for them. Without `terms` (CPU tensors: Gloo's or MPI's
    allreduce runs on the thread itself) the thread is busy until each allreduce
    ends, and a tensor is enqueued when its data exists; with them, when the CPU
    reaches its hook (the CPU's lead, terms.py), and the negotiation, ready waits,
    launches, contention, Python's synchronize and the host tail it exposes are
    charged as named terms."""
    order = sorted(grads, key=lambda g: g.ready)
    data = [g.ready * compute.backward_s for g in order]
    copy_bps = memcpy_bytes_per_s
    t: dict[str, float] = {"negotiation": 0.0, "ready waits": 0.0, "launches": 0.0,
                           "fusion copies": 0.0} if terms is not None else {}
    if terms is not None:
        copy_bps = terms.copy_bytes_per_s
        # the CPU enters backward ahead of the GPU by what it saved in forward, then
        # paces itself; where it is slower than the GPU, the GPU waits for it
        cpu = -max(0.0, compute.forward_s - len(order) * terms.cpu_fwd_per_grad_s)
        enq = []
        for _ in order:
            cpu += terms.cpu_per_grad_s
            enq.append(cpu)
        data = [max(d, e) for d, e in zip(data, enq)]
    else:
        enq = data
    wake = terms.ready_wait_s if terms is not None else 0.0
    launch = terms.horovod_launch_s if terms is not None else 0.0
    period = max(cycle_s, negotiation_s, 1e-9)
    cycle = thread = min(0.0, enq[0]) if enq else 0.0
    stream, comm, ops, i = 0.0, 0.0, 0, 0
    done: list[float] = []
    spans: list[tuple[float, float]] = []
    while i < len(order):
        cycle = max(thread, cycle)
        if enq[i] > cycle:  # nothing enqueued: empty cycles until the next tensor is
            cycle = enq[i] if period <= 1e-9 else \
                cycle + period * math.ceil((enq[i] - cycle) / period)
        j = i
        while j < len(order) and enq[j] <= cycle:
            j += 1
        thread = cycle + negotiation_s
        if terms is not None:
            t["negotiation"] += negotiation_s
        responses: list[list[int]] = [[]]
        filled = 0
        for k in range(i, j):
            if responses[-1] and filled + order[k].bytes > fusion_bytes:
                responses.append([])
                filled = 0
            responses[-1].append(k)
            filled += order[k].bytes
        for resp in responses:
            ready = max(data[k] for k in resp)
            gpu_wait = terms is not None and terms.gpu_ready_wait
            if ready > thread and not gpu_wait:  # WaitForData on the CPU: the thread
                thread = ready + wake              # sleeps until the last of them exists
                if terms is not None:
                    t["ready waits"] += wake
            thread += launch
            n = sum(order[k].bytes for k in resp)
            copies = 2 * n / copy_bps if len(resp) > 1 else 0.0
            if terms is not None and not terms.nccl_avg and len(resp) == 1:
                copies += n / copy_bps  # postscale: ScaleBuffer on a single tensor
            cost = allreduce(n) + copies
            # Horovod >= 0.23 without its timeline: the stream waits for the ready
            # events (gpuStreamWaitEvent) and the thread goes on to the next cycle
            start = max(thread, stream, ready if gpu_wait else 0.0)
            stream = start + cost
            if terms is None:  # CPU tensors (Gloo, MPI): the thread runs the allreduce
                thread = stream
            spans.append((start, stream))
            done += [stream] * len(resp)
            comm += cost
            ops += 1
            if terms is not None:
                t["launches"] += launch
                t["fusion copies"] += copies
        i = j
        cycle += period
    end = stream
    backward = compute.backward_s
    after = 0.0
    if terms is not None:
        t["contention"] = terms.contention * _overlap(spans, backward)
        backward += t["contention"]
        sync = backward  # optimizer.synchronize(): every handle in hook order, in Python
        for d in done:
            sync = max(sync, d) + terms.sync_per_tensor_s
        after = max(0.0, sync - max(end, backward))
        t["synchronize"] = after
        # the CPU's lead is gone (completion waited on the CPU): the host tail is exposed
        t["host tail"] = len(order) * terms.host_tail_per_grad_s + terms.host_tail_fixed_s
        after += t["host tail"]
    return _finish(compute, end, comm, ops, backward, after, t)
