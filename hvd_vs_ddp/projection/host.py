"""The input pipeline's host cost and its contention with each library's host threads.

With a host pipeline (JPEG files decoded and augmented by DataLoader workers), every
rank's batches come from CPU work on its node: `cpu_s_per_batch` CPU-seconds a batch,
spread over `workers` processes. A node has `node_cores` cores for its `local` ranks,
and each rank's own process takes some of them first:
- DDP: the rank's main thread (it launches the kernels and waits for the GPU);
- Horovod: the same, plus its background thread (negotiation every cycle) and its
  GPU finalizer, which waits for each response's completion event on the CPU
  (horovod/common/ops/cuda_operations.cc: events made with cudaEventDisableTiming
  alone, no cudaEventBlockingSync, so the wait polls): a core busy for as long as the
  response communicates, a share of the step that grows with N.
What is left feeds the loader workers; a rank's loader delivers at most
min(workers, cores left) / cpu_s_per_batch batches a second, and where that is slower
than the GPU's step the step waits for its batch (`data wait`). Both libraries load
the same batches; what differs is what their own threads take from the cores.

The figures come from a run with the host pipeline (the throughput record's optional
fields, read with getattr so that runs without them work: input_mode, loader_workers,
host_cpu_cores, loader_cpu_cores, data_wait_s), or from `hvd-vs-ddp project`'s flags
(--loader-cpu-ms, --loader-workers, --host-cores) for a pipeline measured elsewhere.

What grows with N when the loader shares the cores: Horovod's step ends with two
hand-offs between threads, each a thread that spins for its event and must be on a core
to see it (read in horovod/horovod at 2626dc87):
- the finalizer waits for the last response's completion in cudaEventSynchronize
  (horovod/common/ops/cuda_operations.cc WaitForEvents) on an event made with
  cudaEventDisableTiming alone: under the CUDA runtime's default schedule
  (cudaDeviceScheduleAuto: spin while the process's contexts are fewer than the
  logical CPUs) the thread spins;
- then the main thread, in optimizer.synchronize(), sees the handle done:
  horovod/torch/mpi_ops_v2.cc WaitAndClear polls PollHandle in a loop that calls
  std::this_thread::yield() between polls.
A spinning or yielding thread has used its share of the core, so when every core of
the node is busy (loader workers decoding) it sees its event only once the scheduler
gives it a core again: a wait of up to a time slice (Linux CFS/EEVDF: a base slice of
0.75 ms scaled by 1 + log2(min(CPUs, 8)), 3 ms on 8 or more CPUs; kernel/sched/fair.c
sysctl_sched_base_slice / sched_min_granularity, get_update_sysctl_factor); term
`core_wait_us`. The probability that every core is busy when the event fires is
`busy_probability`: the node's loader workers each busy the share of the time the
loader must work to keep pace (a binomial count), beside the ranks' own threads. The
step waits for the slowest of N ranks: `slowest_handoffs` is the expected maximum over
N of each rank's delay (two hand-offs, each late with that probability), so a delay
that one node sees one step in a hundred is paid nearly every step at 512 ranks.
DDP has none on its critical path: its collectives wait on the GPU (the work's stream
sync) and its CPU runs ahead, absorbing a late core in its lead.

    p = HostPipeline(cpu_s_per_batch=0.25, workers=8, node_cores=64)
    data_wait(p, "horovod", local=4, step_s=0.1, comm_s=0.03)   # seconds per step
    q = busy_probability(p, "horovod", local=4, step_s=0.1, comm_share=0.3)
    slowest_handoffs(0.002, 512, q)        # seconds a step waits for cores, 512 ranks
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from hvd_vs_ddp.backends.catalog import HOROVOD_LIB

MAIN_CORES = 1.0          # a rank's main thread where the run did not measure it
HOROVOD_THREAD_CORES = 0.05  # its background thread between cycles (sleeps the rest)
MIN_SHARE = 0.05          # a starved loader still gets a sliver of a core
HOROVOD_HANDOFFS = 2      # finalizer's event spin, then the main thread's yield loop


@dataclass(frozen=True)
class HostPipeline:
    cpu_s_per_batch: float           # loader CPU-seconds per batch per rank, all workers
    workers: int                     # DataLoader num_workers per rank
    node_cores: float                # the target node's cores
    main_cores: dict[str, float] = field(default_factory=dict)  # measured, per kind
    measured: bool = False           # from a run's host pipeline (else given by flags)
    source: str = ""

    def main(self, kind: str, comm_share: float) -> float:
        """Cores a rank's own process takes before its loader: measured where the run
        measured it (it already holds Horovod's threads at the run's size: only the
        spin beyond it is added), else the main thread and Horovod's threads."""
        if kind in self.main_cores:
            base = self.main_cores[kind]
            return base + (max(0.0, comm_share - self.main_cores.get(f"{kind}:comm", 0.0))
                           if kind == HOROVOD_LIB else 0.0)
        if kind == HOROVOD_LIB:
            return MAIN_CORES + HOROVOD_THREAD_CORES + comm_share
        return MAIN_CORES


def loader_rate(p: HostPipeline, kind: str, local: int, comm_share: float) -> float:
    """Batches per second one rank's loader delivers."""
    left = p.node_cores / max(1, local) - p.main(kind, comm_share)
    return min(float(p.workers), max(MIN_SHARE, left)) / p.cpu_s_per_batch


def data_wait(p: HostPipeline, kind: str, local: int, step_s: float,
              comm_s: float) -> float:
    """Seconds a step waits for its batch: the loader's batch time past the step."""
    share = min(1.0, comm_s / step_s) if step_s > 0 else 0.0
    return max(0.0, 1.0 / loader_rate(p, kind, local, share) - step_s)


def busy_probability(p: HostPipeline, kind: str, local: int, step_s: float,
                     comm_share: float) -> float:
    """Probability that a thread of a rank finds every core of its node taken by the
    others when its event fires: the loader workers of the node's `local` ranks, each
    busy the share of the time its rank's loader must work to keep pace with the step
    (cpu_s_per_batch / step_s cores over `workers`, at most all of them), a binomial
    count, beside the ranks' own threads (host.py `main`, less the thread itself)."""
    if step_s <= 0 or p.workers <= 0:
        return 0.0
    demand = min(float(p.workers), p.cpu_s_per_batch / step_s)  # cores a rank's loader
    u = min(1.0, demand / p.workers)
    own = max(0.0, local * p.main(kind, comm_share) - 1.0)      # the others' threads
    free = p.node_cores - own          # cores the workers may take before none is left
    n = max(1, local) * p.workers
    k = int(np.ceil(free - 1e-9))
    if k <= 0:
        return 1.0
    return float(stats.binom.sf(k - 1, n, u))  # P(workers busy >= free cores)


def slowest_handoffs(wait_s: float, n: int, prob: float,
                     handoffs: int = HOROVOD_HANDOFFS) -> float:
    """Expected maximum over `n` ranks of a rank's delay: `handoffs` hand-offs, each
    late with probability `prob` by an exponential wait of mean `wait_s` (how long the
    running task keeps the core; exponential: the maximum of many such waits grows as
    log N, the tail that sets it). One rank's delay is a Gamma(k, wait_s) with k
    Binomial(handoffs, prob); E[max] = integral of 1 - F(x)^n (quadrature)."""
    if wait_s <= 0 or prob <= 0 or n <= 0:
        return 0.0
    prob = min(1.0, prob)
    x = np.linspace(0.0, wait_s * (handoffs * 4 + 3 * np.log(n) + 10), 4097)
    cdf = np.full_like(x, (1 - prob) ** handoffs)
    for k in range(1, handoffs + 1):
        weight = stats.binom.pmf(k, handoffs, prob)
        cdf += weight * stats.gamma.cdf(x, k, scale=wait_s)
    return float(np.trapezoid(1.0 - cdf ** n, x))
