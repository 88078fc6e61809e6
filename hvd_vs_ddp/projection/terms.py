"""The GPU-side costs the schedule charges beside the allreduces, each a named term.

Every term is a mechanism read in the libraries' code, with a default range (the band
draws it uniformly over the range) and where it comes from. `python -m
hvd_vs_ddp.projection.terms` prints the table docs/projection.md carries.

Both libraries
- contention: while communication kernels run beside backward (NCCL runs one thread
  block per channel, each on its own SM, and shares the device's memory bandwidth),
  backward computes more slowly; each second of communication overlapped with backward
  costs backward `contention` seconds.
DDP (torch/csrc/distributed/c10d/reducer.cpp)
- bucket copies: with gradient_as_bucket_view=False (the default) each gradient is
  copied into its bucket while backward runs (mark_variable_ready_dense: mul_out, the
  division by the world size fused with the copy) and the reduced bucket is copied back
  after the last allreduce (finalize_bucket_dense): each a read and a write of the
  gradient bytes at device memory bandwidth.
- launch: one allreduce per bucket, launched from C++ on the autograd thread.
Horovod (horovod/common/operations.cc RunLoopOnce, ops/nccl_operations.cc,
horovod/torch/optimizer.py)
- negotiation: every cycle the background thread agrees with every rank on the tensors
  ready (CacheCoordinator::sync, a bitwise allreduce of the response cache bits) over
  its CPU controller, never over NCCL: MPI_Allreduce (recursive doubling for small
  messages: ceil(log2 local) hops inside a node, ceil(log2 nodes) between nodes) or
  Gloo's ring (gloo/allreduce.cc: 2(p-1) hops around all p ranks, `nodes` of every p
  hops cross the host network). It grows with the number of nodes.
- ready wait: before launching, each response waits for its tensors' ready events.
  Horovod >= 0.23 without its timeline makes its stream wait for them
  (NCCLAllreduce::WaitForData: gpuStreamWaitEvent) and the thread goes on; older
  Horovod, or any with HOROVOD_TIMELINE set, waits on the CPU (HorovodOp::WaitForData;
  torch's TorchReadyEvent::Ready is a cudaEventSynchronize with cudaEventBlockingSync,
  so the thread sleeps, negotiates nothing meanwhile, and is woken by the driver).
- fusion copies: a fused response is copied into the fusion buffer and back out
  (ScaleMemcpyInFusionBuffer / ScaleMemcpyOutFusionBuffer, batched device-to-device
  copies) on Horovod's stream, in series with its allreduce.
- averaging: NCCL >= 2.10 averages inside the allreduce (ncclAvg); older NCCL
  divides afterwards (postscale: fused into the copy out for fused responses, a
  ScaleBuffer kernel, one more pass, for a single tensor).
- synchronize: after backward, optimizer.synchronize() walks every gradient's handle in
  Python (wait_and_clear, grad.set_), in the order the hooks fired.
- host tail: with HOROVOD_ENABLE_ASYNC_COMPLETION off (the default) a finalizer thread
  waits on the CPU for each response's completion event before its handles are done
  (ops/gpu_operations.cc FinalizeGPUQueue), so synchronize() returns only once the GPU
  has finished communicating: the CPU's lead over the GPU is gone, and the host work
  of the step's tail (launching the optimizer's kernels, zero_grad, the next batch, the
  first kernels of the next forward) runs while the GPU waits. DDP waits for its
  buckets on the GPU (the work's stream sync), its CPU stays ahead and hides this work.
- optimizer launches: the host tail's per-gradient part depends on the optimizer's
  implementation: a loop over parameters (one to three kernel launches each: torch < 2.0,
  or foreach=False) or torch's multi-tensor `_foreach_*` kernels (a handful of launches
  for all of them, plus a Python walk over the parameters; the default on CUDA since
  torch 2.0, torch/optim/optimizer.py `_default_to_fused_or_foreach`), with
  zero_grad(set_to_none=True) launching nothing (its default since torch 2.0,
  pytorch/pytorch#92731).
- pageable input: a batch copied to the device from pageable host memory
  (DataLoader(pin_memory=False), then .cuda()) goes through a staging buffer, and the
  CUDA runtime synchronises the stream before such a copy starts ("API synchronization
  behavior": pageable host-to-device transfers): the CPU waits for the previous step's
  GPU work, the GPU waits for the copy, at the pageable rate. A script's choice, not a
  library's; charged to the side whose script does it (published rows' `unpinned`).
- unpinned hand-off: without pinning, the main thread itself receives each batch from
  the loader's worker processes (the result queue, unpickling, and for every tensor of
  the batch its shared-memory file descriptor fetched from the worker's resource
  sharer over an authenticated connection, then mapped); with `pin_memory=True` the
  DataLoader's pinning thread does all of it beside the main thread. Charged where the
  GPU waits for the CPU at that moment: Horovod's, whose `synchronize()` returned only
  once the GPU was done; DDP's CPU is ahead of its GPU then and hides it.
- host jitter: the host work exposed each step (Horovod's host tail and the walk of its
  last handles; a pageable copy) is done by each rank's CPU while the GPU waits, and a
  synchronous step waits for the slowest rank's: it is stretched to the expected
  maximum over N of its distribution (stragglers.py), the OS noise amplification of
  bulk-synchronous programs (Petrini et al., SC'03; Hoefler et al., SC'10). Work the
  CPU does ahead of the GPU (DDP's, or Horovod's before synchronize) is absorbed by
  that lead and is not stretched.
- CPU lead: a gradient's hook fires when the CPU's autograd engine reaches it, which on
  a GPU is ahead of the GPU computing it (kernel launches return at once). Horovod
  negotiates what the CPU enqueued during a cycle and fuses it into one response, then
  waits for every one of its tensors' ready events before launching it: the further
  the CPU runs ahead, the more of backward one response waits for. DDP launches a
  bucket on its communication stream behind an event, so the GPU starts it when its
  data exists, whatever the CPU's lead. `cpu_us_per_grad` is the CPU's time per
  gradient in backward (autograd, kernel launches, Horovod's hook).

    from hvd_vs_ddp.projection.terms import draw
    t = draw(rng, "nvlink3")       # one draw of every term's value (ranges: term_table.py)
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace

import numpy as np

from hvd_vs_ddp.projection.term_table import (
    CONTROLLERS,
    GPU_MEMORY_BW,
    HOST_JITTER_SIGMA,
    HOST_JITTER_TAIL,
    OPTIMIZERS,
    PAGEABLE_H2D,
    TERMS,
    Term,
    table,
)

# the table's names, read here by the schedule, the CLI and the tests as they always were
__all__ = ["CONTROLLERS", "GPU_MEMORY_BW", "OPTIMIZERS", "PAGEABLE_H2D", "SETTABLE", "TERMS",
           "Drawn", "Term", "core_wait", "draw", "harmonic", "set_range", "table"]




@dataclass(frozen=True)
class Drawn:
    """One draw of every term (seconds, fractions, bytes/s)."""
    contention: float
    ddp_launch_s: float
    horovod_launch_s: float
    ready_wait_s: float
    hop_intra_s: float
    hop_inter_s: float
    sync_per_tensor_s: float
    copy_bytes_per_s: float
    cpu_per_grad_s: float = 0.0
    cpu_fwd_per_grad_s: float = 0.0
    host_tail_per_grad_s: float = 0.0
    host_tail_fixed_s: float = 0.0
    controller: str = "mpi"
    nccl_avg: bool = True
    bucket_view: bool = False
    gpu_ready_wait: bool = True    # Horovod >= 0.23 without timeline (see above)
    wake_s: float = 0.0            # mean wake-up delay of the background thread
    pageable_bytes_per_s: float = 0.0  # an input copy from pageable memory
    unpinned_handoff_s: float = 0.0  # the main thread receives an unpinned batch
    host_sigma: float = 0.0        # exposed host work's spread (host_jitter)
    host_tail: float = 0.0         # its tail's mean excess, relative

    def negotiation_s(self, devices: int, per_node: int) -> float:
        """One cycle's agreement over the CPU controller among all ranks: the bitwise
        allreduce's hops, after the last rank's thread has woken (the expected maximum
        of `devices` exponential wake-up delays beyond one's own: mean x (H_N - 1))."""
        if devices <= 1:
            return 0.0
        local = min(devices, per_node)
        nodes = -(-devices // per_node)
        late = self.wake_s * (harmonic(devices) - 1.0)
        if self.controller == "gloo":  # ring: 2(p-1) hops, `nodes` of every p cross nodes
            hops = 2 * (devices - 1)
            inter = hops * (nodes / devices if nodes > 1 else 0.0)
            return (hops - inter) * self.hop_intra_s + inter * self.hop_inter_s + late
        return (int(np.ceil(np.log2(local))) * self.hop_intra_s
                + int(np.ceil(np.log2(nodes))) * self.hop_inter_s + late)


def harmonic(n: int) -> float:
    """H_n = 1 + 1/2 + ... + 1/n: E[max of n exponential(1)]."""
    n = int(n)
    if n <= 1000:
        return float(np.sum(1.0 / np.arange(1, n + 1))) if n >= 1 else 0.0
    return float(np.log(n) + 0.5772156649 + 1 / (2 * n))


def _u(rng: np.random.Generator, term: str, lo: float | None = None,
       hi: float | None = None) -> float:
    t = TERMS[term]
    return float(rng.uniform(t.low if lo is None else lo, t.high if hi is None else hi))


def draw(rng: np.random.Generator, intra: str = "nvlink4", controller: str = "mpi",
         nccl_avg: bool = True, inter: str = "", bucket_view: bool = False,
         contention_scale: float = 1.0, middle: bool = False,
         gpu_ready_wait: bool = True, optimizer: str = "loop") -> Drawn:
    """One draw of every term. Always the same number of calls to `rng`, whatever the
    library, so two libraries drawn with the same seed see the same machine (their
    ratio's band then carries only what differs between them). `middle`: every range's
    midpoint instead of a draw. `optimizer`: "loop" (one kernel launch or more per
    parameter) or "foreach" (torch's multi-tensor kernels) sets the host tail's
    per-gradient range."""
    if middle:
        rng = _Middle()  # type: ignore[assignment]
    lo_bw, hi_bw, _ = GPU_MEMORY_BW.get(intra, (300e9, 3350e9, ""))
    fast, tcp = _u(rng, "host_hop_fast_us") * 1e-6, _u(rng, "host_hop_tcp_us") * 1e-6
    rdma = inter.startswith(("ib-", "roce-"))
    d = Drawn(
        contention=_u(rng, "contention") * contention_scale,
        ddp_launch_s=_u(rng, "ddp_launch_us") * 1e-6,
        horovod_launch_s=_u(rng, "horovod_launch_us") * 1e-6,
        ready_wait_s=_u(rng, "ready_wait_us") * 1e-6,
        hop_intra_s=fast if controller == "mpi" else tcp,
        hop_inter_s=fast if controller == "mpi" and rdma else tcp,
        sync_per_tensor_s=_u(rng, "sync_us_per_tensor") * 1e-6,
        copy_bytes_per_s=float(rng.uniform(lo_bw, hi_bw)) * _u(rng, "copy_efficiency"),
        cpu_per_grad_s=_u(rng, "cpu_us_per_grad") * 1e-6,
        cpu_fwd_per_grad_s=_u(rng, "cpu_fwd_us_per_grad") * 1e-6,
        host_tail_per_grad_s=_u(rng, "host_tail_us_per_grad") * 1e-6,  # loop; foreach below
        host_tail_fixed_s=_u(rng, "host_tail_fixed_us") * 1e-6,
        controller=controller, nccl_avg=nccl_avg, bucket_view=bucket_view,
        gpu_ready_wait=gpu_ready_wait,
        wake_s=_u(rng, "cycle_wake_us") * 1e-6)  # last: earlier draws stay as they were
    # drawn after every term above, so that those terms' draws stay as they are
    foreach = _u(rng, "host_tail_us_per_grad_foreach") * 1e-6
    lo_p, hi_p = PAGEABLE_H2D.get(intra, (4e9, 12e9))
    return replace(
        d, host_tail_per_grad_s=foreach if optimizer == "foreach" else d.host_tail_per_grad_s,
        pageable_bytes_per_s=float(rng.uniform(lo_p, hi_p)),
        host_sigma=float(rng.uniform(*HOST_JITTER_SIGMA)),
        host_tail=float(rng.uniform(*HOST_JITTER_TAIL)),
        # drawn last (every earlier draw unchanged)
        unpinned_handoff_s=_u(rng, "unpinned_handoff_us") * 1e-6)


# The terms `draw` and `core_wait` take from their table range (the others' ranges
# come from the link, the PCIe generation or the fixtures: see each term's how_set).
SETTABLE = ("contention", "ddp_launch_us", "horovod_launch_us", "ready_wait_us",
            "host_hop_fast_us", "host_hop_tcp_us", "sync_us_per_tensor",
            "host_tail_us_per_grad", "host_tail_us_per_grad_foreach",
            "unpinned_handoff_us", "host_tail_fixed_us", "cpu_fwd_us_per_grad",
            "cpu_us_per_grad", "cycle_wake_us", "core_wait_us", "copy_efficiency")


def set_range(spec: str) -> Term:
    """Replace one term's range for this process, from "NAME=LOW:HIGH" in the term's
    own unit (`python -m hvd_vs_ddp.projection.validation --term`: how the goals move
    with a range). ValueError with one line where the name or the numbers are wrong."""
    name, _, rng = spec.partition("=")
    if name not in TERMS:
        raise ValueError(f"unknown term {name!r}; the terms: {', '.join(SETTABLE)}")
    if name not in SETTABLE:
        raise ValueError(f"{name}'s range is set elsewhere ({TERMS[name].how_set}), not "
                         f"drawn from the table; the terms: {', '.join(SETTABLE)}")
    try:
        low, high = (float(x) for x in rng.split(":"))
    except ValueError:
        raise ValueError(f"{spec!r}: expected NAME=LOW:HIGH, e.g. "
                         f"{name}={TERMS[name].low:g}:{TERMS[name].high:g}") from None
    if not (np.isfinite(low) and np.isfinite(high) and 0 <= low <= high):
        raise ValueError(f"{spec!r}: expected 0 <= LOW <= HIGH")
    TERMS[name] = replace(TERMS[name], low=low, high=high)
    return TERMS[name]


def core_wait(seed: int, idx: int) -> float:
    """Draw number `idx` of term core_wait_us (seconds), from a stream of its own: only
    projections with a host pipeline draw it, and every other term's draws (the
    published rows', which have none) stay as they were."""
    return _u(np.random.default_rng([seed, idx, 51]), "core_wait_us") * 1e-6


class _Middle:
    @staticmethod
    def uniform(lo: float, hi: float) -> float:
        return (lo + hi) / 2


if __name__ == "__main__":
    print(table())
    sys.exit(0)
