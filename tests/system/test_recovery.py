"""A worker SIGKILLed under each elastic path: the job recovers, completes its plan, loses
exactly the steps since the last commit, and ends where the uninterrupted run ends.

Short plans (mlp, 24 steps, a commit or checkpoint every 4, the kill after step 10, 2
ranks on the host names localhost and 127.0.0.1), each through the real launcher:
horovodrun in elastic mode (hvd.elastic.run + TorchState), torchrun's elastic agents
with torch.save on rank 0 and with torch.distributed.checkpoint, and torchft (one
torchrun agent per replica, a lighthouse; skipped where torchft is not installed). Checked from the
workers' own event logs (hvd_vs_ddp/recovery/metrics.py): the kill happened, no hang,
no process outlived the job, the plan completed, the job resumed at the last commit
rank 0 completed and redid the steps since, the world after is what the library does
(Horovod Elastic drops the failed host: 1 rank; torchrun restarts the group, pinned at
both agents: 2), and the final loss and weights equal the in-process reference of the
plan bitwise where the steps were replayed at the same world size (torchrun) and within
the stated tolerance where the world shrank (Horovod) or the quorum changed (torchft,
which loses no committed step: it drops the step in flight). Every bound is the plan's
own (steps, commits), never a measured speed. torchrun with torch.distributed.checkpoint
and torchft are in the extended tier: test_recovery_extended.py.

    python -m pytest tests/system/test_recovery.py -q
"""
from __future__ import annotations

import time

import pytest
import torch

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.recovery import driver
from hvd_vs_ddp.recovery.driver import run_trial
from hvd_vs_ddp.recovery.events import Tail
from hvd_vs_ddp.recovery.plan import PATHS, Plan
from hvd_vs_ddp.recovery.reference import (
    TOLERANCE,
    loss_rel_diff,
    reference_run,
    weights_rel_diff,
)
from hvd_vs_ddp.recovery.training import FINAL
from tests.launch import horovod_available

pytestmark = pytest.mark.multiproc
# The kill lands right after kill_step however slow the driver: the victim host's workers
# hold there until it (hvd_vs_ddp/recovery/events.py hold_for_the_kill).
SHORT = dict(world_size=2, global_batch=384, steps=24, commit_every=4, kill_step=10,
             timeout_s=30.0)
# The fewest ranks each path may go on with. torchrun's group is pinned at both agents
# (`--nnodes 2:2`): with 1:2 the survivor's agent closes the next rendezvous round alone
# when the victim's agent is late to it (a loaded host: its agent stopped for 45 s after
# the kill, the job finished at 1 rank and the late agent failed on the gone store; a
# fresh-clone run once hung there), which is torchrun's documented elastic behaviour
# (docs/recovery.md), not the restart of the whole group this test is about. With 2:2 the
# round waits for the late agent (the same 45 s stop: both restarted, done at 2 ranks).
MIN_WORLD = {"torchrun-elastic": 2}


def short(path: str, checkpoint: str, backend: str) -> Plan:
    return Plan(path=path, checkpoint=checkpoint, backend=backend,
                min_world=MIN_WORLD.get(path, 1), **SHORT).check()


@pytest.fixture(scope="module")
def reference():
    plan = Plan(path="torchrun-elastic", checkpoint="none", backend="ddp-gloo", **SHORT)
    return reference_run(plan)


class LateTail(Tail):
    """The driver's log reader, made slower than the training: it reads once a second."""

    def poll(self):
        time.sleep(1.0)
        return super().poll()


# One path per library in the README's test command (Horovod Elastic; torchrun's elastic
# agents with torch.save, read late); torchrun with torch.distributed.checkpoint and
# torchft (20-35 s each) run with the `extended` tests: test_recovery_extended.py
# (tests/system/conftest.py: the tiers).
@pytest.mark.parametrize("path, checkpoint, backend, driver_reads", [
    ("horovod-elastic", "memory", "horovod", "promptly"),
    ("torchrun-elastic", "torch-save", "ddp-gloo", "late"),
])
def test_killed_worker_recovers(tmp_path, monkeypatch, reference, path, checkpoint, backend,
                                driver_reads):
    """`late`: the driver reads the logs once a second, far slower than the steps, and
    the kill still lands right after the kill step (a fresh clone's run beside a busy
    process once failed: Horovod's trial finished all 24 steps before the driver read
    step 10's line): the victim host's workers hold there until the kill
    (hvd_vs_ddp/recovery/events.py hold_for_the_kill); without the hold it fails, no
    worker killed."""
    killed_worker_recovers(tmp_path, monkeypatch, reference, path, checkpoint, backend,
                           driver_reads)


def killed_worker_recovers(tmp_path, monkeypatch, reference, path: str, checkpoint: str,
                           backend: str, driver_reads: str) -> None:
    """A trial of `path` with a worker killed after the kill step, judged against the
    uninterrupted run (`reference`): what the module's docstring says."""
    for avail in (launchers.available(PATHS[path].launcher), PATHS[path].available()):
        if not avail:
            pytest.skip(f"{path}: {avail.reason}")
    if backend == "horovod" and not horovod_available()[0]:
        pytest.skip(f"Horovod: {horovod_available()[1]}")
    if driver_reads == "late":
        monkeypatch.setattr(driver, "Tail", LateTail)
    plan = short(path, checkpoint, backend)
    trial = run_trial(plan, tmp_path / "trial", time_limit=240)
    f = trial.figures()
    where = f"{path} ({checkpoint})\n{trial.log_tail()}"
    assert trial.kill is not None and trial.kill["host"] == "127.0.0.1", where
    assert trial.kill["step"] == plan.kill_step == f["killed_after_step"], where
    assert not trial.hang and not trial.leftovers, where
    assert f["completed"] and f["final_step"] == plan.steps, where
    if PATHS[path].per_step:  # torchft: the in-flight step is dropped, no committed one
        assert f["resume_step"] == f["killed_after_step"] and f["steps_lost"] == 0, where
    else:
        # The last commit rank 0 completed. A kill that lands inside the commit after a
        # commit step may cut it short (the one before stands: torchrun's checkpoint of
        # step 12 unwritten, resumed at 8 with k = 4) or not (rank 0's part is local:
        # Horovod saved step 12 in memory, then its host check failed; resumed at 12).
        k, killed = plan.commit_every, f["killed_after_step"]
        allowed = {k * (killed // k)} | ({killed - k} if killed % k == 0 else set())
        assert f["last_commit_step"] in allowed, (allowed, where)
        assert f["resume_step"] == f["last_commit_step"], where
        assert f["steps_lost"] == f["killed_after_step"] - f["last_commit_step"], where
    assert f["world_before"] == 2, where
    assert plan.world_after() <= f["world_after"] <= plan.world_size, where
    assert f["recovery_s"] >= f["rendezvous_s"] > 0, where
    ref_losses, ref_weights = reference
    weights = torch.load(trial.directory / FINAL, weights_only=True)
    wdiff = weights_rel_diff(weights, ref_weights)
    ldiff = loss_rel_diff(f["final_loss"], ref_losses[-1])
    if f["world_after"] == plan.world_size and not PATHS[path].per_step:
        # replayed exactly at the same world: bitwise at 2 ranks
        assert wdiff == 0.0 and ldiff == 0.0, (wdiff, ldiff, where)
    assert wdiff <= TOLERANCE and ldiff <= TOLERANCE, (wdiff, ldiff, where)
    print(f"\n{path} ({checkpoint}): recovered in {f['recovery_s']:.2f}s, "
          f"{f['steps_lost']} steps lost, world {f['world_before']} -> {f['world_after']}, "
          f"loss diff {ldiff:.1e}, weights diff {wdiff:.1e}")
