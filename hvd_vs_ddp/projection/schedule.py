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
from dataclasses import dataclass
from typing import Callable, Sequence

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


def _finish(compute: StepCompute, end_comm: float, comm: float, ops: int) -> Step:
    exposed = max(0.0, end_comm - compute.backward_s)
    return Step(compute.total_s + exposed, comm, exposed, ops)


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
             bucket_sizes: Sequence[int] | None = None) -> Step:
    end, comm = 0.0, 0.0
    groups = buckets(grads, bucket_cap_bytes, sizes=bucket_sizes)
    for bucket in groups:
        ready = max(g.ready for g in bucket) * compute.backward_s
        cost = allreduce(sum(g.bytes for g in bucket))
        end = max(end, ready) + cost
        comm += cost
    return _finish(compute, end, comm, len(groups))


def horovod_step(compute: StepCompute, grads: Sequence[Grad],
                 allreduce: Callable[[float], float], fusion_bytes: float = 128 * 2**20,
                 cycle_s: float = 1e-3, negotiation_s: float = 0.0,
                 memcpy_bytes_per_s: float = math.inf) -> Step:
    pending = sorted(grads, key=lambda g: g.ready)
    times = [g.ready * compute.backward_s for g in pending]
    t, i, end, comm, ops = 0.0, 0, 0.0, 0.0, 0
    while i < len(pending):
        if times[i] > t:  # nothing ready: the thread sleeps whole cycles until it is
            t += cycle_s * max(1, math.ceil((times[i] - t) / cycle_s)) if cycle_s > 0 \
                else times[i] - t
            continue
        j = i
        while j < len(pending) and times[j] <= t:
            j += 1
        cost = negotiation_s
        fused, filled = 0, 0
        for g in pending[i:j]:
            if filled and filled + g.bytes > fusion_bytes:
                cost += _fused(filled, fused, allreduce, memcpy_bytes_per_s)
                ops += 1
                fused, filled = 0, 0
            fused += 1
            filled += g.bytes
        cost += _fused(filled, fused, allreduce, memcpy_bytes_per_s)
        ops += 1
        end = t + cost
        comm += cost
        i = j
        t = max(end, t + cycle_s)  # the next cycle starts a cycle after this one began
    return _finish(compute, end, comm, ops)


def _fused(n: float, tensors: int, allreduce: Callable[[float], float],
           memcpy_bytes_per_s: float) -> float:
    copies = 2 * n / memcpy_bytes_per_s if tensors > 1 else 0.0  # in and out of the buffer
    return allreduce(n) + copies
