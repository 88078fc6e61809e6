"""Each rank's intra-op threads, decided by the suites themselves under every launcher.

Launchers disagree: torchrun sets OMP_NUM_THREADS=1, horovodrun and mpirun set nothing
(so every rank would run as many threads as the machine has cores: measured here, 4
Horovod ranks on 2 cores ran 11x slower that way). The suites therefore ignore
OMP_NUM_THREADS and give every rank its share of the node (`cores of the node // ranks on
the node`, or the cores it is bound to: srun -c N) less one core per DataLoader worker
and, on a GPU, one for the pin-memory thread and NCCL's / Horovod's own (at least 1), or
`--threads N` when given.
The plan is recorded in the results (machine_info.hvd_vs_ddp.threads) with every rank's
actual `torch.get_num_threads()`, and a warning is logged when ranks x threads exceed
the node's cores.

Core binding (`--bind-cores auto|off`, off by default: on this 2-core machine three
repetitions of the quick preset's gpt cells bound and unbound gave no narrower spread
between repetitions, and Horovod's MPI controller, whose thread spins on rank 0, read 154
against 191 samples/s bound; docs/methodology.md): where the launcher left a rank free to
run on every core (torchrun, horovodrun, mpirun --bind-to none; not srun -c N), `bind`
gives each rank of a node a disjoint share of the cores it may use (local rank r of L:
the r-th slice of cores // L), before any thread of the library starts, so the rank's
training thread, its intra-op threads and the library's own threads (Horovod's background
thread, Gloo's) stay on its cores instead of being moved between them from one process
to the next. The same for every backend; with more ranks than cores nothing is bound.
Each rank's cores are recorded beside its threads.

    python -m hvd_vs_ddp.harness.threads 4        # the plan for 4 ranks on this node
"""
from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass

from hvd_vs_ddp.common.cores import node_cores, usable_cores
from hvd_vs_ddp.common.log import log


@dataclass(frozen=True)
class ThreadPlan:
    per_rank: int       # intra-op threads of each rank
    node_cores: int     # physical cores of the node (torch's own default basis)
    usable_cores: int   # cores this process may run on (affinity, e.g. Slurm's cpus)
    local_ranks: int    # ranks on this node
    source: str         # "auto" or "--threads"
    reserved: int = 0   # cores of each rank's share left to its helpers (see decide)

    @property
    def oversubscribed(self) -> bool:
        return self.per_rank * self.local_ranks > self.node_cores

    def as_dict(self) -> dict:
        return asdict(self)


def bound_per_rank(local_ranks: int, usable: int, cores: int) -> bool:
    """Whether each rank runs on cores of its own (srun -c N, mpirun --bind-to): its
    affinity is a share of the node that the node's ranks together do not exceed."""
    return usable < cores and usable * max(local_ranks, 1) <= cores


def decide(local_ranks: int, requested: int = 0, loader_workers: int = 0,
           on_gpu: bool = False, cores: int | None = None,
           usable: int | None = None) -> ThreadPlan:
    """`requested` > 0 wins. Else each rank's share of the node (its own cores where it is
    bound to them, else cores // local ranks), less what its helpers need: one core per
    DataLoader worker process, and on a GPU one for the pin-memory thread and the
    library's own (NCCL's proxy, Horovod's background thread); at least 1 thread."""
    cores = node_cores() if cores is None else cores
    usable = usable_cores() if usable is None else usable
    if requested > 0:
        return ThreadPlan(requested, cores, usable, local_ranks, "--threads")
    share = usable if bound_per_rank(local_ranks, usable, cores) \
        else min(usable, cores // max(local_ranks, 1))
    reserved = max(0, loader_workers) + (1 if on_gpu else 0)
    per_rank = max(1, share - reserved)
    return ThreadPlan(per_rank, cores, usable, local_ranks, "auto", min(reserved, share))


def bind(local_rank: int, local_ranks: int) -> list[int] | None:
    """Bind this process (every thread it has, and so every thread it starts) to its
    share of the cores it may use: local rank r of L gets the r-th of L equal slices.
    None (nothing bound) where a launcher bound it already (bound_per_rank), or where
    ranks outnumber cores; else the cores it now runs on."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return None
    share = len(allowed) // max(local_ranks, 1)
    if share < 1 or bound_per_rank(local_ranks, len(allowed), node_cores()):
        return None
    mine = allowed[local_rank * share:(local_rank + 1) * share]
    if not mine:
        return None
    for task in os.listdir("/proc/self/task"):  # threads started before this call
        try:
            os.sched_setaffinity(int(task), mine)
        except OSError:  # a thread that just ended
            pass
    os.sched_setaffinity(0, mine)
    return mine


def loader_workers(knob_set: str) -> int:
    """DataLoader worker processes per rank of the knob set `knob_set` (0 if unknown)."""
    from hvd_vs_ddp.harness.knobs import by_name

    try:
        return by_name(knob_set).num_workers
    except Exception:  # a name the knob module does not know: no workers of its own
        return 0


def apply(plan: ThreadPlan) -> None:
    """Set torch's intra-op threads, and OMP_NUM_THREADS for processes this rank starts."""
    import torch

    torch.set_num_threads(plan.per_rank)
    os.environ["OMP_NUM_THREADS"] = str(plan.per_rank)
    if plan.oversubscribed:
        log.warning(f"{plan.local_ranks} ranks x {plan.per_rank} threads exceed the node's "
                    f"{plan.node_cores} cores: ranks compete for cores and measure slower")


if __name__ == "__main__":
    print(decide(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
