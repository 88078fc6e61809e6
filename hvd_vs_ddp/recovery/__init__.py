"""Failure and recovery: what each library's answer to a dead worker costs, measured.

One trial launches an elastic job of the same plan (workload, seed, global batch,
steps, a commit or checkpoint every k steps), SIGKILLs one worker when the event logs
show the chosen step, and measures from outside: seconds from the kill to the next
completed step, steps lost and redone, the world size after recovery, whether the plan
completes, its final loss and weights against an uninterrupted run of the same plan,
commit/save/restore times and the steady-state cost of committing.

Modules (each says how to run it):
- plan: the trial plan and the elastic paths (Horovod Elastic, torchrun's elastic
  agent, torchft), with the refusals (no elastic path, min above max, k of 0); torch-free;
- events: the per-process JSON-lines event logs the workers write; torch-free;
- metrics: a trial's figures from its event logs and the kill; torch-free;
- batches, training: the plan's step-indexed global batches through the project's
  Workload, Backend and Trainer (the one training loop);
- checkpoints: torch.save on rank 0, and torch.distributed.checkpoint;
- horovod_worker, torchrun_worker, torchft_worker: the elastic workers (Horovod Elastic,
  torchrun's elastic agent, torchft where it is installed);
- launch, driver: the commands, and a trial run end to end (kill, time limits,
  no leftover process);
- reference: the uninterrupted plan in this process (the reference for loss and weights).

    python -m hvd_vs_ddp.recovery.driver --path horovod-elastic --world-size 2
    python -m pytest suites/test_recovery.py --recovery-world-size 2
    hvd-vs-ddp run --preset recovery
"""
