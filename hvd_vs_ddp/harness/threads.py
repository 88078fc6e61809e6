"""Each rank's intra-op threads, decided by the suites themselves under every launcher.

Launchers disagree: torchrun sets OMP_NUM_THREADS=1, horovodrun and mpirun set nothing
(so every rank would run as many threads as the machine has cores: measured here, 4
Horovod ranks on 2 cores ran 11x slower that way). The suites therefore ignore
OMP_NUM_THREADS and give every rank `cores of the node // ranks on the node` threads
(at least 1, at most the cores this process may run on), or `--threads N` when given.
The plan is recorded in the results (machine_info.hvd_vs_ddp.threads) with every rank's
actual `torch.get_num_threads()`, and a warning is logged when ranks x threads exceed
the node's cores.

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

    @property
    def oversubscribed(self) -> bool:
        return self.per_rank * self.local_ranks > self.node_cores

    def as_dict(self) -> dict:
        return asdict(self)


def decide(local_ranks: int, requested: int = 0) -> ThreadPlan:
    """`requested` > 0 wins; else cores of the node // local ranks, within 1..usable."""
    cores, usable = node_cores(), usable_cores()
    if requested > 0:
        return ThreadPlan(requested, cores, usable, local_ranks, "--threads")
    per_rank = max(1, min(usable, cores // max(local_ranks, 1)))
    return ThreadPlan(per_rank, cores, usable, local_ranks, "auto")


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
