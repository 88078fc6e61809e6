"""The torchft worker: one replica group of one process, per-step fault tolerance.

Started by its own torchrun agent (`--standalone --nproc-per-node 1 --max-restarts N`;
hvd_vs_ddp/recovery/launch.py), beside a `torchft_lighthouse` that forms the quorum of
replica groups. The model, optimizer and data come from `PlanRun` on the project's
`single` backend (the one training loop, seeded alike everywhere); torchft then wraps
them: the Manager averages the gradients over the replicas of the step's quorum (its
reconfigurable Gloo process group; one flat allreduce when the gradients are final, the
loop's `on_grads` hook), and its OptimizerWrapper starts the quorum in zero_grad and
steps only if every replica of the quorum succeeded (should_commit). Not torchft's
DistributedDataParallel: in torchft 0.2.0 its communication hook fails an assertion
(`assert fut._fut`, torchft/ddp.py) when a peer dies during the allreduce, which
crashes the survivors instead of skipping the step (seen here with a SIGKILL mid-step).
Each step trains on this replica's shard of the plan's global batch for the step's
participants (participating rank r of n takes rows r::n), so the global batch
holds whatever the quorum. When a replica dies, the others' step fails and is not
committed, the lighthouse drops the replica after its heartbeat timeout and they go on
at the next step; the restarted replica joins a later quorum and heals from a live peer
(torchft's checkpoint transport), with no checkpoint on disk.

Events (events.py): `segment` at the first committed step of every new quorum (resume =
the steps committed before it; a healed replica's count from its peer), `step` for
every committed step, `restore` for a heal, `late` when a restarted replica found the
plan already finished by the others (it then leaves instead of training it again alone).

    torchrun --standalone --nproc-per-node 1 --max-restarts 3 \
        -m hvd_vs_ddp.recovery.torchft_worker     # with the plan, host, replica, lighthouse
"""
from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

from hvd_vs_ddp.backends.base import BackendOptions
from hvd_vs_ddp.backends.env import SINGLE
from hvd_vs_ddp.backends.local import SingleBackend
from hvd_vs_ddp.recovery.batches import PlanBatches
from hvd_vs_ddp.recovery.events import (
    EventLog,
    answer_stack_requests,
    hold_for_the_kill,
    read_events,
)
from hvd_vs_ddp.recovery.plan import HOST_ENV, PLAN_ENV, Plan
from hvd_vs_ddp.recovery.training import PlanRun

REPLICA_ENV = "HVD_VS_DDP_RECOVERY_REPLICA"   # this replica group's index, 0..W-1
LIGHTHOUSE_ENV = "TORCHFT_LIGHTHOUSE"          # torchft's own variable


class QuorumBatches(PlanBatches):
    """The plan's global batch of the next step, cut for this step's quorum."""

    def __init__(self, manager, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.manager = manager

    def __next__(self):
        n = max(self.manager.num_participants(), 1)
        r = self.manager.participating_rank()
        self.rank, self.world = (r if r is not None else 0), n  # a healer's shard is unused
        return self.shard(self.manager.current_step() + 1)


def _wait_for_all(plan: Plan, log: EventLog, limit_s: float = 300.0) -> None:
    """At the job's start only, every replica's Manager is up (heartbeating) before the
    first quorum (as horovodrun -np W and torchrun --nnodes wait for theirs), so the
    lighthouse waits for them all and training starts at W."""
    log.write("ready")
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        ready = {e["pid"] for e in read_events(log.dir) if e["ev"] == "ready"}
        if len(ready) >= plan.world_size:
            return
        time.sleep(0.05)


def _plan_done(log: EventLog, plan: Plan) -> bool:
    """Did other replicas finish the plan? A replica restarted after that would only
    train it again alone from step 0 (it has no live peer to heal from)."""
    return any(e["ev"] == "done" and e["step"] >= plan.steps and e["pid"] != log.pid
               for e in read_events(log.dir))


def _averager(manager, model):
    """Average the final gradients over the quorum with one flat allreduce; on a failed
    peer the Manager records the error and should_commit() then refuses the step."""
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

    def average(_index: int, _model) -> None:
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        flat = _flatten_dense_tensors(grads)
        manager.allreduce(flat).wait()
        for g, avg in zip(grads, _unflatten_dense_tensors(flat, grads)):
            g.copy_(avg)
    return average


def main() -> int:
    answer_stack_requests()  # first, as every worker: a hang in torchft's import says where
    from torchft import Manager, ProcessGroupGloo
    from torchft.optim import OptimizerWrapper

    plan = Plan.load(os.environ[PLAN_ENV])
    log = EventLog(plan.event_dir, host=os.environ.get(HOST_ENV))
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    log.write("start", restart=restart)
    backend = SingleBackend(BackendOptions(device="cpu"), env=SINGLE).setup()
    run = PlanRun(plan, backend, log)
    model, optimizer = run.model, run.optimizer

    def load(state) -> None:
        t = time.perf_counter()
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        log.write("restore", step=manager.current_step(), seconds=time.perf_counter() - t)

    def save():
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict()}

    timeout = timedelta(seconds=plan.timeout_s)
    manager = Manager(pg=ProcessGroupGloo(timeout=timeout), load_state_dict=load,
                      state_dict=save, min_replica_size=plan.min_world,
                      use_async_quorum=False, rank=0, world_size=1,
                      replica_id=f"replica_{os.environ[REPLICA_ENV]}",
                      lighthouse_addr=os.environ[LIGHTHOUSE_ENV], hostname="127.0.0.1",
                      timeout=timeout, quorum_timeout=timeout * 2)
    if restart == 0:
        _wait_for_all(plan, log)
    run.trainer.on_grads = _averager(manager, model)
    run.trainer.optimizer = OptimizerWrapper(manager, optimizer)
    run.trainer.batches = QuorumBatches(  # any iterator
        manager, run.dataset, plan.global_batch, 0, 1, run.workload.seed)
    quorum = None
    while manager.current_step() < plan.steps:
        if restart and _plan_done(log, plan):
            log.write("late", step=manager.current_step())
            manager.shutdown(wait=False)
            return 0  # restarted after the others finished: nothing left to join
        before = manager.current_step()
        run.trainer.step()  # zero_grad starts the quorum; step commits or not
        done = manager.current_step()
        if restart and done < plan.steps and _plan_done(log, plan):
            continue  # that quorum formed only because the others had left: not logged
        now = (getattr(manager, "_quorum_id", None), manager.num_participants())
        if done > before and now != quorum:  # a new quorum's first committed step
            log.rank, log.world = manager.participating_rank() or 0, now[1]
            log.write("segment", resume=done - 1, quorum=now[0])
            quorum = now
        if done > before:
            log.write("step", step=manager.current_step(),
                      loss=float(run.trainer.local_losses[-1]))
            hold_for_the_kill(log, manager.current_step(), plan.kill_step, plan.victim_host)
    log.write("done", step=manager.current_step())
    if manager.participating_rank() == 0:
        run.save_final(Path(plan.event_dir).parent)
    manager.shutdown(wait=False)
    return 0


if __name__ == "__main__":
    # torch 2.14's distributed libraries sometimes abort in their exit-time destructors
    # ("terminate called without an active exception"): a worker that finished would
    # crash and its agent restart the group (seen in a torchrun trial, 2026-11-29); every
    # worker leaves as every rank does (hvd_vs_ddp/common/process_exit.py)
    from hvd_vs_ddp.common.process_exit import hard_exit

    hard_exit(main())
