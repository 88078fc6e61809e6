"""The Horovod Elastic worker: hvd.elastic.run + TorchState, a commit every k steps.

Started by horovodrun in elastic mode (hvd_vs_ddp/recovery/launch.py writes the
command). It sets up the project's `horovod` backend (hvd.init), builds the plan's
model, optimizer and data through `PlanRun` (the one training loop), and wraps the
steps in `hvd.elastic.run`: when a peer dies, the survivors' collective raises
HorovodInternalError, Horovod restores the last `TorchState.commit()` (held in
memory), re-initialises over the hosts that are left (the failed host is
blacklisted), broadcasts rank 0's state (`sync`) and calls the training function
again, which resumes at the committed step with this rank's shard of the same global
batches. Commits, restores, syncs and resets are timed and logged (events.py).

    horovodrun -np 2 --min-np 1 --max-np 2 --host-discovery-script hosts.sh \
        python -m hvd_vs_ddp.recovery.horovod_worker      # with HVD_VS_DDP_RECOVERY_PLAN set
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.backends.base import BackendOptions
from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.recovery.events import EventLog, answer_stack_requests
from hvd_vs_ddp.recovery.plan import PLAN_ENV, Plan
from hvd_vs_ddp.recovery.training import PlanRun


def main() -> int:
    import horovod.torch as hvd
    from horovod.torch.elastic import TorchState

    answer_stack_requests()
    plan = Plan.load(os.environ[PLAN_ENV])
    log = EventLog(plan.event_dir, host=os.environ.get("HOROVOD_HOSTNAME"))
    log.write("start")
    backend = registry.create(plan.backend, BackendOptions(timeout_s=plan.timeout_s),
                              env=detect()).setup()
    run = PlanRun(plan, backend, log)

    def follow_horovod() -> None:
        """After a reset the ranks are Horovod's, not the launch variables'."""
        backend.env = dataclasses.replace(backend.env, rank=hvd.rank(), world_size=hvd.size(),
                                          local_rank=hvd.local_rank(),
                                          local_size=hvd.local_size())
        run.sync_identity()

    class TimedState(TorchState):
        """TorchState whose save, restore and sync are timed into the event log."""

        def save(self):
            t = time.perf_counter()
            super().save()
            self._save_s = time.perf_counter() - t
            # commit() is save() then a host check (a broadcast): a peer that dies during
            # the check leaves this save as the state Horovod restores, with no `commit`
            log.write("saved", step=self.step, seconds=self._save_s)

        def restore(self):
            t = time.perf_counter()
            super().restore()
            log.write("restore", step=self.step, seconds=time.perf_counter() - t)

        def sync(self):
            t = time.perf_counter()
            super().sync()
            log.write("sync", step=self.step, seconds=time.perf_counter() - t)

    state = TimedState(model=run.model, optimizer=run.optimizer, step=0)

    def on_reset() -> None:
        follow_horovod()
        log.write("reset")

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state) -> None:
        follow_horovod()
        log.write("segment", resume=state.step)
        run.position(state.step)
        while state.step < plan.steps:
            run.step(state.step + 1)
            state.step += 1
            if plan.commits and state.step % plan.commit_every == 0 \
                    and state.step < plan.steps:
                t = time.perf_counter()
                state.commit()  # save in memory, then check for host changes (a broadcast)
                log.write("commit", step=state.step, seconds=time.perf_counter() - t,
                          save_s=state._save_s)

    train(state)
    follow_horovod()
    log.write("done", step=state.step)
    if hvd.rank() == 0:
        run.save_final(Path(plan.event_dir).parent)
    backend.close()
    return 0


if __name__ == "__main__":
    # torch 2.14's distributed libraries sometimes abort in their exit-time destructors
    # ("terminate called without an active exception"): a worker that finished would
    # crash and its agent restart the group (seen in a torchrun trial, 2026-11-29); every
    # worker leaves as every rank does (hvd_vs_ddp/common/process_exit.py)
    from hvd_vs_ddp.common.process_exit import hard_exit

    hard_exit(main())
