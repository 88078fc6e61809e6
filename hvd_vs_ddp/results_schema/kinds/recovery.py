"""Record of suites/test_recovery.py: recovery, one killed worker under one elastic path.

One record is one trial (a repetition of a recovery cell runs one per checkpoint
pattern): the plan (path, checkpoint pattern, k, kill step, hosts, global batch), what
the kill cost (recovery and rendezvous seconds, steps lost, world size after, whether
the plan completed, no hang, no leftover process), the final loss and weights against
the uninterrupted reference of the same plan, the commit/save/restore times, the
pre-kill step intervals with commits against a run without commits (the steady-state
cost, `commit_overhead`; `commit_share`: the commits' own seconds per k steps of the
same run), and the timeline (rank 0's completed steps against seconds since the launch).
Figures that never came (no recovery) are null.

    rec = RecoveryRecord(backend="horovod", world_size=2, launcher="horovodrun-gloo", ...)
    benchmark.extra_info.update(rec.to_dict())
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hvd_vs_ddp.results_schema.fields import (
    Invalid,
    flag,
    integer,
    listof,
    mapping,
    nullable,
    number,
    opt,
    req,
    strings,
    text,
)
from hvd_vs_ddp.results_schema.kinds.base import BenchmarkRecord, array, as_json

_opt_s = nullable(number(0))
_opt_step = nullable(integer(0))
_point = listof(number(), length=3)
_intervals = listof(listof(number(0), length=2))  # [step, seconds since the previous step]


def _timeline(v: Any, name: str, finite: bool) -> None:
    listof(_point)(v, name, finite)


@dataclass(kw_only=True)
class RecoveryRecord(BenchmarkRecord):
    KIND, SUITE, FRAME = "recovery", "recovery", "recovery"

    path: str = req(text)                      # horovod-elastic, torchrun-elastic
    library: str = req(text)                   # horovod, torch
    checkpoint: str = req(text)                # memory, torch-save, dcp
    workload: str = req(text)
    global_batch: int = req(integer(1))
    steps: int = req(integer(2))
    commit_every: int = req(integer(1))
    min_world: int = req(integer(1))
    hosts: list[str] = req(strings)
    kill_step: int = req(integer(1))
    completed: bool = req(flag)
    hang: bool = req(flag)
    leftovers: int = req(integer(0))
    world_before: int | None = req(nullable(integer(1)))
    world_after: int | None = req(nullable(integer(1)))
    killed_after_step: int | None = req(_opt_step)
    last_commit_step: int | None = req(_opt_step)
    resume_step: int | None = req(_opt_step)
    steps_lost: int | None = req(_opt_step)
    recovery_s: float | None = req(_opt_s)
    rendezvous_s: float | None = req(_opt_s)
    restore_s: float | None = req(_opt_s)
    final_loss: float | None = req(nullable(number()))
    reference_final_loss: float = req(number())
    final_loss_rel_diff: float | None = req(_opt_s)
    weights_rel_diff: float | None = req(_opt_s)
    tolerance: float = req(number(0))
    exact_replay: bool = req(flag)
    within_tolerance: bool = req(flag)
    commit_s: list[float] = req(listof(number(0)))
    save_s: list[float] = req(listof(number(0)))
    step_intervals: list[list[float]] = req(_intervals)
    baseline_step_intervals: list[list[float]] = req(_intervals)
    commit_overhead: float | None = req(nullable(number()))
    commit_share: float | None = req(nullable(number(0)))
    timeline: list[list[float]] = req(_timeline)
    kill_t: float | None = req(_opt_s)
    recovered_t: float | None = req(_opt_s)
    collective_timeout_s: float = req(number(0))
    victim: dict[str, Any] | None = opt(mapping)
    workload_params: dict[str, Any] | None = opt(mapping)
    segments: list[list[float]] | None = opt(_timeline)
    sync_s: float | None = opt(number(0))
    trial_seconds: float | None = opt(number(0))
    returncodes: list[int | None] | None = opt(listof(nullable(integer())))

    def consistency(self) -> None:
        if self.steps_lost is not None and self.resume_step is None:
            raise Invalid("steps_lost", "is set while resume_step is null; expected null")
        if self.kill_step >= self.steps:
            raise Invalid("kill_step", f"is {self.kill_step}; expected < steps ({self.steps})")
        if self.completed and self.final_loss is None:
            raise Invalid("final_loss", "is null while completed is true; expected a number")

    def rows(self) -> list[dict[str, Any]]:
        return [{**self.common_row(), "path": self.path, "library": self.library,
                 "checkpoint": self.checkpoint, "workload": self.workload,
                 "workload_params": as_json(self.workload_params or {}),
                 "global_batch": int(self.global_batch), "steps": int(self.steps),
                 "commit_every": int(self.commit_every), "min_world": int(self.min_world),
                 "kill_step": int(self.kill_step), "completed": bool(self.completed),
                 "hang": bool(self.hang), "leftovers": int(self.leftovers),
                 "world_before": self.world_before, "world_after": self.world_after,
                 "killed_after_step": self.killed_after_step,
                 "resume_step": self.resume_step, "steps_lost": self.steps_lost,
                 "recovery_s": self.recovery_s, "rendezvous_s": self.rendezvous_s,
                 "restore_s": self.restore_s, "final_loss": self.final_loss,
                 "reference_final_loss": float(self.reference_final_loss),
                 "final_loss_rel_diff": self.final_loss_rel_diff,
                 "weights_rel_diff": self.weights_rel_diff,
                 "tolerance": float(self.tolerance), "exact_replay": bool(self.exact_replay),
                 "within": bool(self.within_tolerance),
                 "commit_s": array(self.commit_s), "save_s": array(self.save_s),
                 "commit_median_s": float(np.median(self.commit_s)) if self.commit_s
                 else np.nan,
                 "step_intervals": array([dt for _s, dt in self.step_intervals]),
                 "baseline_step_intervals": array([dt for _s, dt in
                                                   self.baseline_step_intervals]),
                 "commit_overhead": self.commit_overhead, "commit_share": self.commit_share,
                 "timeline": [list(p) for p in self.timeline],
                 "kill_t": self.kill_t, "recovered_t": self.recovered_t,
                 "collective_timeout_s": float(self.collective_timeout_s)}]
