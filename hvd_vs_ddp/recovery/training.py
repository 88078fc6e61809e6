"""A recovery plan's steps through the project's Workload, Backend and Trainer.

`PlanRun` builds the workload (per-rank batch = global batch / world) and the one
training loop (`hvd_vs_ddp.workloads.loop.Trainer`: the same model build, seeding,
backend wrapping and step as every suite), then swaps its data stream for the plan's
step-indexed one (hvd_vs_ddp/recovery/batches.py), so that after a rollback or restart
`position(done)` resumes at the right global batch for the world that is left. Each
completed step is logged with this rank's loss (hvd_vs_ddp/recovery/events.py).

    run = PlanRun(plan, backend, log)      # backend set up by the worker
    run.position(done=0); run.step(1); run.step(2)
    run.save_final(path)                   # rank 0: the final weights, for the comparison
"""
from __future__ import annotations

from pathlib import Path

import torch

from hvd_vs_ddp.backends.base import Backend
from hvd_vs_ddp.recovery.batches import PlanBatches
from hvd_vs_ddp.recovery.events import EventLog, hold_for_the_kill
from hvd_vs_ddp.recovery.plan import Plan
from hvd_vs_ddp.workloads import registry
from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer

FINAL = "final.pt"  # in the trial directory: rank 0's final weights


def plan_workload(plan: Plan, world: int):
    """The plan's workload with the per-rank batch for `world` ranks."""
    workload = registry.get(plan.workload, **plan.workload_params)
    return workload.with_(batch_size=plan.global_batch // world)


def bare(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DDP wrapper (Horovod's is the model itself)."""
    return getattr(model, "module", model)


def final_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in bare(model).state_dict().items()}


class PlanRun:
    def __init__(self, plan: Plan, backend: Backend, log: EventLog) -> None:
        self.plan, self.backend, self.log = plan, backend, log
        self.workload = plan_workload(plan, backend.world_size)
        self.trainer = Trainer(self.workload, backend, TrainConfig(steps=plan.steps))
        self.dataset = self.trainer.batches.loader.dataset
        self.sync_identity()

    @property
    def model(self) -> torch.nn.Module:
        return self.trainer.model

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.trainer.optimizer

    def sync_identity(self) -> None:
        self.log.rank, self.log.world = self.backend.rank, self.backend.world_size

    def position(self, done: int) -> None:
        """The next step is done + 1, for this rank of this world."""
        self.sync_identity()
        self.trainer.batches = PlanBatches(  # any iterator
            self.dataset, self.plan.global_batch, self.backend.rank, self.backend.world_size,
            self.workload.seed, next_step=done + 1)

    def step(self, step: int) -> float:
        self.trainer.step()
        loss = float(self.trainer.local_losses[-1])
        self.log.write("step", step=step, loss=loss)
        hold_for_the_kill(self.log, step, self.plan.kill_step, self.plan.victim_host)
        return loss

    def save_final(self, trial_dir: Path) -> None:
        tmp = trial_dir / f".{FINAL}.{self.log.pid}"
        torch.save(final_state(self.model), tmp)
        tmp.replace(trial_dir / FINAL)
