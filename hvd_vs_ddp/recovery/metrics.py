"""A recovery trial's figures, from its event logs and its kill. Torch-free.

Definitions (events: hvd_vs_ddp/recovery/events.py; the kill: the driver's record):
- an event is *after recovery* when its process logged a `segment` after the kill and
  before the event (Horovod: a survivor re-entered training; torchrun: a restarted
  worker began); every other event belongs to the job as it was before the kill;
- killed after step: the last step completed before recovery (a step completes on all
  ranks or none: its gradients are averaged over all of them);
- last commit: the last step rank 0 committed or checkpointed before recovery (Horovod:
  its in-memory save, which precedes commit's host check). A commit in flight at the
  kill may still complete on a survivor (rank 0's save is local): the job then resumes
  from it, so it counts;
- resume step: where the recovered job went on (the steps done at its restored state);
- steps lost: killed after step - resume step (the steps redone);
- recovery seconds: from the kill to the first step completed after recovery;
  rendezvous seconds: from the kill to the first post-kill `segment` (detection,
  re-rendezvous, restore: everything but the first step itself);
- world before / after: ranks at the start, and in the last segment;
- completed: every planned step done, and a `done` event at the last one;
- losses: per step the mean of the ranks' shard losses (equal shards: the global mean
  loss), the recovered run's where a step was redone; final loss: the last step's;
- step intervals: rank 0's seconds from step s-1 to step s before the kill (commits
  included), for the steady-state cost of committing against a run without commits.

    figures = compute(read_events("trial/events"), kill, plan, t0)
    figures["recovery_s"], figures["steps_lost"], figures["world_after"]
"""
from __future__ import annotations

from typing import Any, Callable

from hvd_vs_ddp.recovery.plan import Plan

Event = dict[str, Any]


def _after_recovery(events: list[Event], tk: float | None) -> Callable[[Event], bool]:
    if tk is None:
        return lambda e: False
    seg: dict[int, float] = {}
    for e in events:
        if e["ev"] == "segment" and e["t"] > tk:
            seg.setdefault(e["pid"], e["t"])
    return lambda e: e["pid"] in seg and e["t"] >= seg[e["pid"]]


def _losses(steps: list[Event], post: Callable[[Event], bool], n: int) -> list[float | None]:
    by_step: dict[int, list[Event]] = {}
    for e in steps:
        by_step.setdefault(e["step"], []).append(e)
    out: list[float | None] = []
    for s in range(1, n + 1):
        evs = by_step.get(s, [])
        late = [e for e in evs if post(e)] or evs
        out.append(sum(e["loss"] for e in late) / len(late) if late else None)
    return out


def _intervals(steps: list[Event], until: float | None) -> list[list[float]]:
    """[step, seconds since the previous step] of rank 0 in the first process that was
    rank 0, before `until`."""
    first = [e for e in steps if e["rank"] == 0]
    if not first:
        return []
    pid = first[0]["pid"]
    mine = [e for e in first if e["pid"] == pid and (until is None or e["t"] <= until)]
    return [[b["step"], b["t"] - a["t"]] for a, b in zip(mine, mine[1:])
            if b["step"] == a["step"] + 1]


def compute(events: list[Event], kill: dict[str, Any] | None, plan: Plan,
            t0: float) -> dict[str, Any]:
    """The trial's figures (module docstring); None where an event never came."""
    events = sorted(events, key=lambda e: e["t"])
    tk = kill["t"] if kill else None
    post = _after_recovery(events, tk)
    steps = [e for e in events if e["ev"] == "step"]
    segments = [e for e in events if e["ev"] == "segment"]
    done = [e for e in events if e["ev"] == "done"]
    rank0_commits = [e for e in events if e["ev"] == "commit" and e["rank"] == 0]
    rank0_saved = [e for e in events if e["ev"] in ("commit", "saved") and e["rank"] == 0]
    commits_by_step: dict[int, float] = {}
    for e in events:
        if e["ev"] == "commit":
            commits_by_step[e["step"]] = max(commits_by_step.get(e["step"], 0.0), e["seconds"])
    losses = _losses(steps, post, plan.steps)
    last_step = max((e["step"] for e in steps), default=0)
    out: dict[str, Any] = {
        "completed": last_step >= plan.steps and any(d["step"] >= plan.steps for d in done),
        "final_step": last_step,
        "world_before": segments[0]["world"] if segments else None,
        "world_after": segments[-1]["world"] if segments else None,
        "losses": losses, "final_loss": losses[-1] if losses else None,
        "commit_s": [commits_by_step[s] for s in sorted(commits_by_step)],
        "save_s": [e["save_s"] for e in rank0_commits if "save_s" in e],
        "timeline": [[e["t"] - t0, e["step"], e["world"]] for e in steps if e["rank"] == 0],
        "segments": [[e["t"] - t0, e["resume"], e["world"]] for e in segments
                     if e["rank"] == 0],
        "step_intervals": _intervals(steps, tk),
        "killed_after_step": None, "last_commit_step": None, "resume_step": None,
        "steps_lost": None, "recovery_s": None, "rendezvous_s": None, "restore_s": None,
        "sync_s": None, "kill_t": None, "recovered_t": None,
    }
    if tk is None:
        return out
    out["kill_t"] = tk - t0
    out["killed_after_step"] = max((e["step"] for e in steps if not post(e)), default=0)
    out["last_commit_step"] = max((e["step"] for e in rank0_saved if not post(e)), default=0)
    later = [e for e in segments if e["t"] > tk]
    if not later:
        return out
    first = later[0]
    resume = first["resume"]
    out["resume_step"] = resume
    out["steps_lost"] = out["killed_after_step"] - resume
    out["rendezvous_s"] = first["t"] - tk
    nxt = [e for e in steps if post(e) and e["step"] == resume + 1]
    if nxt:
        out["recovery_s"] = nxt[0]["t"] - tk
        out["recovered_t"] = nxt[0]["t"] - t0
    for kind in ("restore", "sync"):
        secs = [e["seconds"] for e in events if e["ev"] == kind and e["t"] > tk]
        out[f"{kind}_s"] = max(secs) if secs else None
    return out
