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

    p = HostPipeline(cpu_s_per_batch=0.25, workers=8, node_cores=64)
    data_wait(p, "horovod", local=4, step_s=0.1, comm_s=0.03)   # seconds per step
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hvd_vs_ddp.backends.catalog import HOROVOD_LIB

MAIN_CORES = 1.0          # a rank's main thread where the run did not measure it
HOROVOD_THREAD_CORES = 0.05  # its background thread between cycles (sleeps the rest)
MIN_SHARE = 0.05          # a starved loader still gets a sliver of a core


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
