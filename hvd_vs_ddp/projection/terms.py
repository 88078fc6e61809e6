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

    from hvd_vs_ddp.projection.terms import TERMS, draw
    t = draw(rng, gpu="a100")      # one draw of every term's value
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Term:
    name: str
    library: str            # "both", "ddp" or "horovod"
    low: float
    high: float
    unit: str
    mechanism: str
    source: str
    how_set: str


_ASSUMED = "assumed range (no datasheet gives it); the band spans it"
TERMS = {t.name: t for t in (
    Term("contention", "both", 0.05, 0.30, "s of backward per s of overlapped communication",
         "communication kernels (and Horovod's copies) share SMs and memory bandwidth with "
         "backward",
         "NCCL docs (NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS: one CTA per channel, 2-32 "
         "channels on GPUs of 56-132 SMs) and memory bandwidth sharing; " + _ASSUMED,
         "default range; a one-node run of the target machines calibrates it (docs/"
         "projection.md, 'Measure one node, project many')"),
    Term("ddp_launch_us", "ddp", 5, 20, "µs per bucket",
         "DDP launches a bucket's allreduce from C++ when its last gradient is ready",
         "torch/csrc/distributed/c10d/reducer.cpp (mark_bucket_ready); " + _ASSUMED,
         "default range"),
    Term("horovod_launch_us", "horovod", 10, 40, "µs per fused response",
         "Horovod's op setup and NCCL launch per response (PerformOperation)",
         "horovod/common/operations.cc PerformOperation, ops/nccl_operations.cc; "
         + _ASSUMED, "default range"),
    Term("ready_wait_us", "horovod", 5, 50, "µs per cycle with work",
         "the background thread sleeps in cudaEventSynchronize (blocking sync) until the "
         "gradients exist, then is woken by the driver",
         "horovod/common/ops/collective_operations.cc WaitForData; horovod/torch/"
         "ready_event.cc (cudaEventBlockingSync); OS wake-up latency, " + _ASSUMED,
         "default range"),
    Term("host_hop_fast_us", "horovod", 1, 10, "µs per controller message",
         "one message of MPI's controller between two ranks over shared memory (inside a "
         "node) or RDMA (between nodes on InfiniBand or RoCE)",
         "typical MPI small-message latencies (shared memory about 1 µs, InfiniBand verbs "
         "a few µs); " + _ASSUMED, "default range"),
    Term("host_hop_tcp_us", "horovod", 15, 60, "µs per controller message",
         "one message over TCP: Gloo's controller always (loopback inside a node), MPI's "
         "between nodes joined by Ethernet",
         "typical TCP round trips of tens of µs; " + _ASSUMED, "default range"),
    Term("sync_us_per_tensor", "horovod", 3, 15, "µs per gradient",
         "optimizer.synchronize(): wait_and_clear and grad.set_ per gradient in Python",
         "horovod/torch/optimizer.py synchronize, horovod/torch/mpi_ops_v2.cc WaitAndClear;"
         " measured here: 3-6 µs per tensor for allreduce_async_ + synchronize on a CPU "
         "tensor at one rank (Horovod 0.28.1; GPU tensors add an event record)",
         "default range"),
    Term("host_tail_us_per_grad", "horovod", 5, 30, "µs of CPU per gradient",
         "after synchronize() the GPU waits while the CPU launches the optimizer's "
         "kernels (one or three per parameter without foreach) and zero_grad",
         "horovod/common/ops/gpu_operations.cc FinalizeGPUQueue (async completion off by "
         "default), horovod/torch/optimizer.py step; torch.optim per-parameter kernels; "
         + _ASSUMED, "default range"),
    Term("host_tail_us_per_grad_foreach", "horovod", 0.5, 3, "µs of CPU per gradient",
         "with torch's foreach optimizer (the default on CUDA since torch 2.0) the step "
         "launches a few multi-tensor kernels for all parameters and zero_grad launches "
         "none: what is left per gradient is the Python walk over the parameters "
         "(grouping by device and dtype, the handles' grad.set_, p.grad = None)",
         "torch/optim/optimizer.py _default_to_fused_or_foreach, torch/utils/"
         "_foreach_utils.py _group_tensors_by_device_and_dtype (torch 2.0); zero_grad "
         "set_to_none default: pytorch/pytorch#92731; " + _ASSUMED,
         "default range; --optimizer (project), the `optimizer` column (published rows)"),
    Term("pageable_h2d_gbps", "both", 4, 12, "GB/s",
         "an input batch copied from pageable host memory: a host memcpy into a pinned "
         "staging buffer pipelined with its DMA, after a stream synchronisation",
         "CUDA runtime API, 'API synchronization behavior' (pageable host-to-device "
         "copies synchronise the stream); NVIDIA bandwidthTest's pageable figures are "
         "below the pinned PCIe rate (about 12 GB/s PCIe 3, 25 GB/s PCIe 4) and bounded "
         "by one thread's memcpy; per PCIe generation below; " + _ASSUMED,
         "from --intra-node (the GPU's PCIe generation)"),
    Term("unpinned_handoff_us", "horovod", 1100, 2200, "µs of the main thread per batch",
         "a batch received unpinned: the main thread takes it from the loader's result "
         "queue, unpickles it and, for each of its tensors, fetches the worker's "
         "shared-memory descriptor over an authenticated connection and maps it; with "
         "pinning the DataLoader's own thread does this off the GPU's path",
         "torch/utils/data/dataloader.py (_MultiProcessingDataLoaderIter: the pin_memory "
         "thread, else the main thread, calls _get_data), torch/multiprocessing/"
         "reductions.py rebuild_storage_fd, multiprocessing/resource_sharer.py "
         "DupFd.detach; measured here, idle: `next(loader)` for 32 fp32 images and "
         "their labels took 1.45-1.50 ms of the main thread's CPU (1.1-1.3 the least) and "
         "2.0-2.2 ms of wall time in the median, the same with 1, 2 and 4 workers and "
         "0.05-0.3 s between batches (scripts/measure_loader_handoff.py); the range is "
         "the least CPU time to the median wall time. The freshly mapped pages' first "
         "read and the previous batch's release are not charged: their cost is the "
         "kernel's page work, set by the host (docs/projection.md)",
         "the `unpinned` column (published rows)"),
    Term("host_jitter", "horovod", 0.04, 0.28, "lognormal sigma of exposed host work "
         "(and a tail of mean excess 0.06-0.23 of its median)",
         "the host work a rank does while its GPU waits varies from step to step; the "
         "step waits for the slowest of N ranks (stragglers.py)",
         "measured: one-thread CPU work of about 1 ms per step in lock step on the "
         "H200 device machine's quiet 16-core host (tests/fixtures/stragglers/"
         "h200_lockstep.json: body sigma 0.04-0.28, tail mean excess 0.06-0.23 of the "
         "median at 1-12 ranks)", "default range"),
    Term("host_tail_fixed_us", "horovod", 200, 1000, "µs of CPU per step",
         "the rest of the step's host tail: the loop, the next batch to the device, the "
         "first forward launches before the GPU has work again",
         "as host_tail_us_per_grad; " + _ASSUMED, "default range"),
    Term("cpu_fwd_us_per_grad", "horovod", 10, 25, "µs of CPU per gradient in forward",
         "the CPU issues forward's kernels (about one or two launches per parameter) "
         "ahead of the GPU computing them, so it enters backward early by what it saved",
         "CUDA programming guide (kernel launches are asynchronous); eager PyTorch's "
         "per-operator host overhead of about 10 µs; " + _ASSUMED, "default range"),
    Term("cpu_us_per_grad", "horovod", 30, 80, "µs of CPU per gradient in backward",
         "the CPU issues backward's kernels (two or three per parameter) and runs "
         "Horovod's hook for each gradient ahead of the GPU computing them",
         "CUDA programming guide (asynchronous kernel launches); horovod/torch/"
         "optimizer.py _make_hook -> allreduce_async_ (horovod/torch/mpi_ops_v2.cc "
         "DoAllreduce: a ready event recorded, the tensor enqueued); measured here: 3-4 µs "
         "per allreduce_async_ call on a CPU tensor, plus the Python hook and kernel "
         "launches; " + _ASSUMED,
         "default range; where the GPU computes a gradient faster than this the CPU sets "
         "the pace and there is no lead"),
    Term("cycle_wake_us", "horovod", 5, 50, "µs mean wake-up delay per cycle",
         "each rank's background thread sleeps to its next cycle and is woken by the OS "
         "a random delay late; the cycle's negotiation (CacheCoordinator::sync: a bitwise "
         "AND allreduce of the response cache bits over the controller) ends only when "
         "the last rank's thread joins it, so every cycle waits the expected maximum of N "
         "delays (exponential: mean x H_N, the N-th harmonic number, ln N + 0.58): the "
         "part of Horovod's coordination that grows with N",
         "horovod/common/operations.cc RunLoopOnce (sleep to the cycle), "
         "response_cache.cc CacheCoordinator::sync, mpi_controller.cc CrossRankBitwiseAnd "
         "(MPI_Allreduce, MPI_BAND); OS timer-wakeup latency, " + _ASSUMED,
         "default range"),
    Term("core_wait_us", "horovod", 500, 3000, "µs mean wait for a core per hand-off "
         "when every core of the node is busy",
         "with a host pipeline, the loader workers can take every core of a node; "
         "Horovod's step ends with two threads that spin for their event (the finalizer "
         "in cudaEventSynchronize, the main thread in synchronize()'s yield loop), and a "
         "spinning thread that has used its share sees its event only when the scheduler "
         "gives it a core again; each rank's delay is late with the probability that every "
         "core is busy (host.py busy_probability), and the step waits for the slowest of "
         "N ranks' (host.py slowest_handoffs): what grows with N while cores are contended",
         "horovod/common/ops/cuda_operations.cc WaitForEvents (cudaEventSynchronize; "
         "events made with cudaEventDisableTiming alone) and CUDA's default "
         "cudaDeviceScheduleAuto (spin while contexts are fewer than the logical CPUs); "
         "horovod/torch/mpi_ops_v2.cc WaitAndClear (PollHandle, std::this_thread::yield); "
         "Linux kernel/sched/fair.c: a base slice of 0.75 ms scaled by "
         "1 + log2(min(CPUs, 8)), 3 ms on 8 CPUs or more, the most a running task keeps "
         "the core before the scheduler picks again; the mean between a sixth and all of "
         "that slice, assumed; the band spans it",
         "default range; applies only with a host pipeline (a run's, or --loader-cpu-ms)"),
    Term("rank_jitter", "both", 0.3, 2.0, "% (lognormal sigma of a rank's step / its "
         "median)",
         "a synchronous step waits for the slowest rank: each rank's compute is stretched "
         "to the expected maximum over N of its step distribution "
         "(hvd_vs_ddp/projection/stragglers.py)",
         "lower end measured on one H200 (ResNet-50 steps, docs/projection.md "
         "'Stragglers'); the upper end an assumed allowance for a busier cluster host; "
         "the band spans it",
         "from a run: fitted to its per-rank steps (compute-only cells, or each library's "
         "one-rank steps on GPUs)"),
    Term("copy_efficiency", "both", 0.70, 0.90, "of the device's memory bandwidth",
         "device-to-device copies (DDP's bucket copies, Horovod's fusion buffer)",
         "NVIDIA datasheets for the peak (below); " + _ASSUMED, "default range"),
)}

# Device memory bandwidth (bytes/s, peak) of the GPU that comes with each intra-node
# link (NVIDIA datasheets); PCIe says nothing of the GPU: the range spans P100-H100 PCIe.
GPU_MEMORY_BW = {
    "nvlink1": (732e9, 732e9, "Tesla P100 SXM2: 732 GB/s HBM2"),
    "nvlink2": (900e9, 900e9, "Tesla V100 SXM2: 900 GB/s HBM2"),
    "nvlink3": (1555e9, 2039e9, "A100 SXM4: 1555 GB/s (40 GB) to 2039 GB/s (80 GB) HBM2e"),
    "nvlink4": (3350e9, 3350e9, "H100 SXM5: 3.35 TB/s HBM3"),
    "nvlink5": (8000e9, 8000e9, "B200: 8 TB/s HBM3e"),
    "pcie3": (732e9, 900e9, "PCIe 3 nodes: P100 (732 GB/s) to V100 PCIe (900 GB/s)"),
    "pcie4": (900e9, 2039e9, "PCIe 4 nodes: V100 to A100 PCIe (1.9-2 TB/s)"),
    "pcie5": (2000e9, 3350e9, "PCIe 5 nodes: A100 to H100 (2-3.35 TB/s)"),
}
# Pageable host-to-device copy rate (bytes/s) by the node's PCIe generation, read from
# the intra-node link (V100 nodes PCIe 3, A100 PCIe 4, H100 PCIe 5): term
# pageable_h2d_gbps's range split by generation (assumed, see the term).
PAGEABLE_H2D = {"nvlink1": (4e9, 8e9), "nvlink2": (4e9, 8e9), "pcie3": (4e9, 8e9),
                "nvlink3": (6e9, 12e9), "pcie4": (6e9, 12e9),
                "nvlink4": (8e9, 16e9), "nvlink5": (8e9, 16e9), "pcie5": (8e9, 16e9)}
HOST_JITTER_SIGMA = (0.04, 0.28)   # h200_lockstep.json, 1-12 ranks (term host_jitter)
HOST_JITTER_TAIL = (0.06, 0.23)    # mean excess over q90, relative to the median
OPTIMIZERS = ("foreach", "loop")
CONTROLLERS = ("mpi", "gloo")


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
    wake_s: float = 0.0            # mean wake-up delay of the background thread (issue 51)
    pageable_bytes_per_s: float = 0.0  # an input copy from pageable memory (issue 51)
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
    # issue 51's second round, drawn after every earlier term (their draws unchanged)
    foreach = _u(rng, "host_tail_us_per_grad_foreach") * 1e-6
    lo_p, hi_p = PAGEABLE_H2D.get(intra, (4e9, 12e9))
    return replace(
        d, host_tail_per_grad_s=foreach if optimizer == "foreach" else d.host_tail_per_grad_s,
        pageable_bytes_per_s=float(rng.uniform(lo_p, hi_p)),
        host_sigma=float(rng.uniform(*HOST_JITTER_SIGMA)),
        host_tail=float(rng.uniform(*HOST_JITTER_TAIL)),
        # issue 51's fifth round, drawn last (every earlier draw unchanged)
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


def table() -> str:
    lines = ["| term | library | default range | mechanism | source | how it is set |",
             "| --- | --- | --- | --- | --- | --- |"]
    for t in TERMS.values():
        lines.append(f"| {t.name} | {t.library} | {t.low:g}-{t.high:g} {t.unit} | "
                     f"{t.mechanism} | {t.source} | {t.how_set} |")
    lines.append("| device memory bandwidth | both | " + "; ".join(
        f"{k}: {v[2]}" for k, v in GPU_MEMORY_BW.items()) + " | copies run at it | NVIDIA "
        "datasheets | from --intra-node |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
    sys.exit(0)
