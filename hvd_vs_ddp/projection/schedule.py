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
    charged as named terms. Three steps: when each gradient is enqueued and exists
    (`_enqueued`), the cycles (`_Thread.run`), what follows backward (`_after`)."""
    order = sorted(grads, key=lambda g: g.ready)
    data, enq = _enqueued(compute, order, terms)
    loop = _Thread(order, data, enq, allreduce, fusion_bytes, cycle_s, negotiation_s,
                   terms.copy_bytes_per_s if terms is not None else memcpy_bytes_per_s,
                   terms)
    loop.run()
    backward, after = _after(compute, loop, terms)
    return _finish(compute, loop.stream, loop.comm, loop.ops, backward, after, loop.t)


def _enqueued(compute: StepCompute, order: Sequence[Grad], terms: "Drawn | None"
              ) -> tuple[list[float], list[float]]:
    """When each gradient's data exists on the device and when the CPU enqueues it.
    Without terms both are when backward makes it; with them the CPU enters backward
    ahead of the GPU by what it saved in forward, then paces itself, and where it is
    slower than the GPU, the GPU waits for it."""
    data = [g.ready * compute.backward_s for g in order]
    if terms is None:
        return data, data
    cpu = -max(0.0, compute.forward_s - len(order) * terms.cpu_fwd_per_grad_s)
    enq = []
    for _ in order:
        cpu += terms.cpu_per_grad_s
        enq.append(cpu)
    return [max(d, e) for d, e in zip(data, enq)], enq


def _fuse(order: Sequence[Grad], first: int, last: int, fusion_bytes: float
          ) -> list[list[int]]:
    """The responses of one cycle: the tensors negotiated (first..last-1), in order,
    packed into fusion buffers of at most `fusion_bytes` (a tensor larger alone)."""
    responses: list[list[int]] = [[]]
    filled = 0
    for k in range(first, last):
        if responses[-1] and filled + order[k].bytes > fusion_bytes:
            responses.append([])
            filled = 0
        responses[-1].append(k)
        filled += order[k].bytes
    return responses


@dataclass
class _Thread:
    """Horovod's background thread and its stream over one step's cycles."""
    order: Sequence[Grad]
    data: list[float]
    enq: list[float]
    allreduce: Callable[[float], float]
    fusion_bytes: float
    cycle_s: float
    negotiation_s: float
    copy_bps: float
    terms: "Drawn | None"
    thread: float = 0.0
    stream: float = 0.0
    comm: float = 0.0
    ops: int = 0
    done: list[float] = field(default_factory=list)
    spans: list[tuple[float, float]] = field(default_factory=list)
    t: dict[str, float] = field(default_factory=dict)

    def run(self) -> None:
        """Cycle after cycle until every tensor is launched: sleep to the cycle (empty
        cycles until a tensor is enqueued), negotiate, launch each fused response."""
        if self.terms is not None:
            self.t = {"negotiation": 0.0, "ready waits": 0.0, "launches": 0.0,
                      "fusion copies": 0.0}
        period = max(self.cycle_s, self.negotiation_s, 1e-9)
        cycle = self.thread = min(0.0, self.enq[0]) if self.enq else 0.0
        i = 0
        while i < len(self.order):
            cycle = max(self.thread, cycle)
            if self.enq[i] > cycle:  # nothing enqueued: empty cycles until the next is
                cycle = self.enq[i] if period <= 1e-9 else \
                    cycle + period * math.ceil((self.enq[i] - cycle) / period)
            j = i
            while j < len(self.order) and self.enq[j] <= cycle:
                j += 1
            self.thread = cycle + self.negotiation_s
            if self.terms is not None:
                self.t["negotiation"] += self.negotiation_s
            for resp in _fuse(self.order, i, j, self.fusion_bytes):
                self._launch(resp)
            i = j
            cycle += period

    def _launch(self, resp: list[int]) -> None:
        """One fused response: wait for its data (on the CPU, or on the stream), the
        launch, the copies in and out (or the postscale), the allreduce on the stream."""
        terms = self.terms
        ready = max(self.data[k] for k in resp)
        gpu_wait = terms is not None and terms.gpu_ready_wait
        if ready > self.thread and not gpu_wait:  # WaitForData on the CPU: the thread
            self.thread = ready + (terms.ready_wait_s if terms is not None else 0.0)
            if terms is not None:                 # sleeps until the last of them exists
                self.t["ready waits"] += terms.ready_wait_s
        launch = terms.horovod_launch_s if terms is not None else 0.0
        self.thread += launch
        n = sum(self.order[k].bytes for k in resp)
        copies = 2 * n / self.copy_bps if len(resp) > 1 else 0.0
        if terms is not None and not terms.nccl_avg and len(resp) == 1:
            copies += n / self.copy_bps  # postscale: ScaleBuffer on a single tensor
        cost = self.allreduce(n) + copies
        # Horovod >= 0.23 without its timeline: the stream waits for the ready
        # events (gpuStreamWaitEvent) and the thread goes on to the next cycle
        start = max(self.thread, self.stream, ready if gpu_wait else 0.0)
        self.stream = start + cost
        if terms is None:  # CPU tensors (Gloo, MPI): the thread runs the allreduce
            self.thread = self.stream
        self.spans.append((start, self.stream))
        self.done += [self.stream] * len(resp)
        self.comm += cost
        self.ops += 1
        if terms is not None:
            self.t["launches"] += launch
            self.t["fusion copies"] += copies


def _after(compute: StepCompute, loop: _Thread, terms: "Drawn | None"
           ) -> tuple[float, float]:
    """Backward lengthened by contention, and what follows it: Python's synchronize
    over every handle and the host tail it exposes (with terms; none without)."""
    backward = compute.backward_s
    if terms is None:
        return backward, 0.0
    t = loop.t
    t["contention"] = terms.contention * _overlap(loop.spans, backward)
    backward += t["contention"]
    # optimizer.synchronize(): every handle in hook order, in Python, from when the CPU
    # reaches it (its last hook: ahead of the GPU by its lead), each handle once its
    # response is done: only the walk over the handles done last outlasts the GPU
    sync = min(backward, loop.enq[-1]) if loop.enq else backward
    for d in loop.done:
        sync = max(sync, d) + terms.sync_per_tensor_s
    after = max(0.0, sync - max(loop.stream, backward))
    t["synchronize"] = after
    # the CPU's lead is gone (completion waited on the CPU): the host tail is exposed
    t["host tail"] = len(loop.order) * terms.host_tail_per_grad_s + terms.host_tail_fixed_s
    return backward, after + t["host tail"]
