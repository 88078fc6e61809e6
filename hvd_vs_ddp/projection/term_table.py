"""Every GPU-side term's range, mechanism and source: the table the projection draws from.

The mechanisms themselves, and how each is charged, are hvd_vs_ddp/projection/terms.py's
(its docstring reads them in the libraries' code); this module holds their data: each
term's default range and unit, what it models, where the range comes from and how a run or
a published row sets it, and the per-link tables (device memory bandwidth, the pageable
copy's rate by PCIe generation). `python -m hvd_vs_ddp.projection.terms` prints it as
docs/projection.md carries it.

    from hvd_vs_ddp.projection.term_table import TERMS
    TERMS["unpinned_handoff_us"].low, TERMS["unpinned_handoff_us"].high
"""
from __future__ import annotations

from dataclasses import dataclass


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
         "0.05-0.3 s between batches (benchmarks/measure_loader_handoff.py); the range is "
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
