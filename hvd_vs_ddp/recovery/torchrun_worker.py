"""The torchrun elastic worker: DDP through the project's backend, a checkpoint every k steps.

Started by torchrun's elastic agent (one agent per "host", c10d rendezvous,
`--nnodes MIN:MAX --max-restarts N`; hvd_vs_ddp/recovery/launch.py writes the
commands). When a worker dies, the agents stop every worker and start the whole group
again; each new process sets up the `ddp-gloo` (or `ddp-nccl`) backend, builds the
plan's model, optimizer and data through `PlanRun` (the one training loop), restores
the last checkpoint of the plan's pattern (hvd_vs_ddp/recovery/checkpoints.py:
torch.save on rank 0, or torch.distributed.checkpoint), and resumes at that step.
Start, restore, checkpoint and step events go to the trial's event logs (events.py).

    torchrun --nnodes 1:2 --nproc-per-node 1 --max-restarts 3 --rdzv-backend c10d \
        --rdzv-endpoint 127.0.0.1:PORT -m hvd_vs_ddp.recovery.torchrun_worker
"""
from __future__ import annotations

import os
from pathlib import Path

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.backends.base import BackendOptions
from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.recovery import checkpoints
from hvd_vs_ddp.recovery.events import EventLog, answer_stack_requests
from hvd_vs_ddp.recovery.plan import HOST_ENV, PLAN_ENV, Plan
from hvd_vs_ddp.recovery.training import PlanRun


def main() -> int:
    answer_stack_requests()
    plan = Plan.load(os.environ[PLAN_ENV])
    log = EventLog(plan.event_dir, host=os.environ.get(HOST_ENV))
    env = detect()
    log.rank, log.world = env.rank, env.world_size
    log.write("start", restart=int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")))
    backend = registry.create(plan.backend, BackendOptions(timeout_s=plan.timeout_s),
                              env=env).setup()
    run = PlanRun(plan, backend, log)
    trial = Path(plan.event_dir).parent
    ckpt = checkpoints.make(plan.checkpoint, trial / "checkpoint", backend.rank) \
        if plan.commits else None
    done = 0
    if ckpt is not None:
        done, seconds = ckpt.restore(run.model, run.optimizer)
        if done:
            log.write("restore", step=done, seconds=seconds)
    log.write("segment", resume=done)
    run.position(done)
    for step in range(done + 1, plan.steps + 1):
        run.step(step)
        if ckpt is not None and step % plan.commit_every == 0 and step < plan.steps:
            seconds = ckpt.save(run.model, run.optimizer, step)
            log.write("commit", step=step, seconds=seconds, save_s=seconds)
    log.write("done", step=plan.steps)
    if backend.rank == 0:
        run.save_final(trial)
    backend.close()
    return 0


if __name__ == "__main__":
    # torch 2.14's distributed libraries sometimes abort in their exit-time destructors
    # ("terminate called without an active exception"): a worker that finished would
    # crash and its agent restart the group (seen in a torchrun trial, 2026-11-29); every
    # worker leaves as every rank does (hvd_vs_ddp/common/process_exit.py)
    from hvd_vs_ddp.common.process_exit import hard_exit

    hard_exit(main())
