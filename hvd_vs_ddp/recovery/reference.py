"""The uninterrupted run of a recovery plan, in this process: the reference.

One process trains the plan's steps on its global batches with `Trainer(emulate_ranks=W)`
(hvd_vs_ddp/workloads/loop.py): each global batch cut into the W shards that W ranks
see, each shard's loss divided by W, so its gradient is the average allreduce makes.
That is the plan's synchronous data-parallel run at W ranks without a kill; at 2 ranks
it is bitwise the distributed one (halving is exact and a two-term sum commutes), at 3
or 4 within float32 rounding of the reduction order. A recovered run that replays the
same steps at the same world size (torchrun) must match it; one that goes on with
fewer ranks (Horovod Elastic) computes the same means over other shard sizes, so it
matches within a stated tolerance (TOLERANCE, as the convergence suite's).
"Bitwise" needs the same float32 summation order, so the reference computes with the
workers' intra-op threads (the launcher table's OMP_NUM_THREADS): torch's CPU matmul
splits its sums by thread, and 1 against 2 threads differ by about 1e-7 here.

    losses, weights = reference_run(plan)
    compare(weights, torch.load("trial/final.pt"))     # largest relative weight difference
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

import torch

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.backends.base import BackendOptions
from hvd_vs_ddp.backends.env import SINGLE
from hvd_vs_ddp.backends.local import SingleBackend
from hvd_vs_ddp.recovery.batches import PlanBatches
from hvd_vs_ddp.recovery.plan import Plan
from hvd_vs_ddp.recovery.training import final_state, plan_workload
from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer

# Relative tolerance on the final loss and weights of a run that changed world size:
# the same as suites/test_convergence.py's (rounding of a different reduction order
# stays orders below it; a lost or doubled step, a wrong shard or an unrestored state
# lies orders above it).
TOLERANCE = 1e-4


def worker_threads() -> int:
    """The intra-op threads a trial's worker gets: OMP_NUM_THREADS of the launcher table's
    environment (this process's own where set, else the table's 1)."""
    value = launchers.env(dict(os.environ)).get("OMP_NUM_THREADS", "1")
    return max(1, int(value)) if value.isdigit() else 1


@contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def reference_run(plan: Plan) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Per-step global losses and final weights of the plan, uninterrupted, at W ranks,
    computed with the workers' threads (worker_threads())."""
    workload = plan_workload(plan, 1)  # one process holds the whole global batch
    with _threads(worker_threads()), \
            SingleBackend(BackendOptions(device="cpu"), env=SINGLE) as backend:
        trainer = Trainer(workload, backend, TrainConfig(steps=plan.steps),
                          emulate_ranks=plan.world_size)
        trainer.batches = PlanBatches(  # any iterator will do
            trainer.batches.loader.dataset, plan.global_batch, 0, 1, workload.seed)
        trainer.run(plan.steps)
        return trainer.global_losses(), final_state(trainer.model)


def weights_rel_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """max |a - b| / max |b| over every tensor (inf when the keys differ)."""
    if a.keys() != b.keys():
        return float("inf")
    diff = max(float((a[k].double() - b[k].double()).abs().max()) for k in b)
    scale = max(float(b[k].double().abs().max()) for k in b)
    return diff / max(scale, 1e-30)


def loss_rel_diff(loss: float | None, reference: float) -> float:
    if loss is None:
        return float("inf")
    return abs(loss - reference) / max(abs(reference), 1e-30)
