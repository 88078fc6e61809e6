"""One recovery trial end to end: launch the elastic job, SIGKILL a worker, bound it, clean up.

`run_trial(plan, trial_dir)` writes the plan, starts the job's processes
(hvd_vs_ddp/recovery/launch.py) each in a session of its own and all carrying one
marker variable, tails the workers' event logs (events.py), and when a worker on the
victim host (127.0.0.1) has completed the plan's kill step, SIGKILLs that host's
highest-ranked worker, recording when, which process and which rank (the victim host's
workers hold after the kill step until then: events.py `hold_for_the_kill`). The job then
recovers or fails on its own; past the time limit the trial is a hang: each worker
still running is asked for its Python stacks (events.py STACKS_SIGNAL; they go to the
launchers' logs), the processes still running are recorded (`stuck`: pid, state,
command), and then every process is killed. When the launchers have exited, any
process still carrying the marker 5 s later is a leftover: counted, then ended. The
figures are computed from the event logs by hvd_vs_ddp/recovery/metrics.py;
`trial.json` in the trial directory keeps the kill and the outcome, so
`load_trial(dir)` computes them again later.

The trial directory is an output: before anything starts it passes the output gate
(hvd_vs_ddp/common/outputs.py; `claim`), so a trial never writes into a folder that is
not a recovery trial's, nor inside a run directory unless it is that run's cell
(`owner`); plan.json and trial.json carry their kind's marker. An earlier trial's folder
(its plan.json says so) is emptied first: its event logs would be read as this trial's
and a torchrun worker would restore its stale checkpoint at the start.

    python -m hvd_vs_ddp.recovery.driver --path horovod-elastic --world-size 2
    python -m hvd_vs_ddp.recovery.driver --path torchrun-elastic --checkpoint dcp \
        --world-size 3 --min-world 1 --steps 40 --commit-every 10 --out /tmp/trial
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hvd_vs_ddp.common import output_formats, outputs
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.processes import described, end_marked, marked, signal_groups
from hvd_vs_ddp.common.run_folder import check_output, write_output
from hvd_vs_ddp.recovery import launch, metrics
from hvd_vs_ddp.recovery.events import (
    KILLED,
    STACKS_SIGNAL,
    Tail,
    last_events,
    read_events,
)
from hvd_vs_ddp.recovery.plan import PATHS, Plan, default_kill_step

MARKER = "HVD_VS_DDP_RECOVERY_TRIAL"
PLAN_FILE = "plan.json"    # the plan the workers read (its marker: a trial's folder)
TRIAL_FILE = "trial.json"  # t0, the kill, exit statuses, hang, leftovers
POLL_S = 0.005      # how often the event logs are read while waiting for the kill step
LEFTOVER_GRACE_S = 5.0
STACKS_WAIT_S = 1.0  # for the stuck workers' stack dumps to reach the launchers' logs


@dataclass
class Trial:
    plan: Plan
    directory: Path
    t0: float                                   # wall clock when the job was started
    events: list[dict[str, Any]]
    kill: dict[str, Any] | None                 # t, pid, rank, host, step (last it logged)
    returncodes: list[int | None]
    hang: bool
    leftovers: list[int] = field(default_factory=list)
    seconds: float = 0.0
    stuck: list[dict[str, Any]] = field(default_factory=list)  # at a hang: pid, state, cmd

    def figures(self) -> dict[str, Any]:
        return metrics.compute(self.events, self.kill, self.plan, self.t0)

    def log_tail(self, chars: int = 3000) -> str:
        """The launchers' logs' ends, each process's last event and, after a hang, the
        processes that were still running: what a failure message needs."""
        parts = [p.read_text(errors="replace")[-chars:]
                 for p in sorted(self.directory.glob("launcher-*.log"))]
        parts.append("last event of each process:\n" + last_events(self.events, self.t0))
        if self.stuck:
            parts.append("still running at the time limit:\n" + "\n".join(
                f"pid {s['pid']} ({s['state']}): {s['cmd']}" for s in self.stuck))
        return "\n".join(parts)


def _victim(events: list[dict[str, Any]], plan: Plan, dead: set[int]) -> dict | None:
    """The victim host's highest-ranked worker, once one there completed the kill step."""
    latest: dict[int, dict[str, Any]] = {}
    for e in events:
        latest[e["pid"]] = e
    ready = [e for e in latest.values() if e["host"] == plan.victim_host and e["ev"] == "step"
             and e["pid"] not in dead and e["step"] >= (plan.kill_step or 0)]
    return max(ready, key=lambda e: e["rank"]) if ready else None


def _stuck(tag: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At a hang: every process of the job still running (pid, state, command), after
    asking each worker among them (a process that logged events) for its stacks."""
    pids = marked(MARKER, tag)
    workers = {e["pid"] for e in events}
    for pid in pids:
        if pid in workers:
            try:
                os.kill(pid, STACKS_SIGNAL)
            except ProcessLookupError:
                pass
    if workers & set(pids):
        time.sleep(STACKS_WAIT_S)
    return [{**p, "worker": p["pid"] in workers} for p in described(pids)]


def _end(procs: list[subprocess.Popen]) -> None:
    signal_groups(procs, signal.SIGKILL)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def claim(trial_dir: Path, owner: Path | None = None) -> None:
    """OutputRefused (one line, exit 2) unless `trial_dir` may hold this trial: its
    plan.json and trial.json pass the output gate, and an existing folder with anything
    in it is an earlier trial's, which is then emptied (see the module's docstring)."""
    trial_dir = Path(trial_dir)
    check_output(trial_dir / PLAN_FILE, output_formats.RECOVERY_PLAN, owner)
    check_output(trial_dir / TRIAL_FILE, output_formats.RECOVERY_TRIAL, owner)
    if not trial_dir.is_dir() or not any(trial_dir.iterdir()):
        return
    mark = output_formats.identify(trial_dir / PLAN_FILE)
    if mark is None or mark.kind != output_formats.RECOVERY_PLAN:
        raise outputs.OutputRefused(
            f"{trial_dir}: exists and is not a recovery trial's folder (no plan.json of "
            "one); a trial writes its event logs and checkpoints there: choose another "
            "path or move it away")
    shutil.rmtree(trial_dir)


def run_trial(plan: Plan, trial_dir: Path, time_limit: float = 300.0,
              owner: Path | None = None) -> Trial:
    """One trial in `trial_dir` (claimed first: `claim`); `owner`: the run directory
    this trial's cell writes into, if any."""
    plan = plan.replace(event_dir=str(trial_dir / "events")).check()
    claim(trial_dir, owner)
    trial_dir.mkdir(parents=True, exist_ok=True)
    plan_file = plan.save(trial_dir / PLAN_FILE, owner)
    tag = uuid.uuid4().hex
    procs: list[subprocess.Popen] = []
    services: list[subprocess.Popen] = []  # ended once the job's other processes exited
    t0 = time.time()
    start = time.monotonic()
    tail = Tail(plan.event_dir)
    kill: dict[str, Any] | None = None
    hang = False
    stuck: list[dict[str, Any]] = []
    try:
        for i, (cmd, extra, service) in enumerate(launch.commands(plan, trial_dir)):
            env = launch.environment(plan_file, PATHS[plan.path].launcher,
                                     {**extra, MARKER: tag})
            with open(trial_dir / f"launcher-{i}.log", "w") as out:
                out.write(f"$ {' '.join(cmd)}\n")
                out.flush()
                (services if service else procs).append(subprocess.Popen(
                    cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True))
        Path(plan.event_dir).mkdir(parents=True, exist_ok=True)
        while any(p.poll() is None for p in procs):
            if time.monotonic() - start > time_limit:
                hang = True
                tail.poll()
                stuck = _stuck(tag, tail.events)
                break
            tail.poll()
            if plan.kill_step is not None and kill is None:
                victim = _victim(tail.events, plan, set())
                if victim is not None:
                    os.kill(victim["pid"], signal.SIGKILL)
                    kill = {"t": time.time(), "pid": victim["pid"], "rank": victim["rank"],
                            "host": victim["host"], "step": victim["step"],
                            "world": victim["world"]}
                    # the victim host's other workers hold until this note (events.py)
                    (Path(plan.event_dir) / KILLED).touch()
            time.sleep(POLL_S if kill is None and plan.kill_step is not None else 0.05)
    finally:
        _end(procs + services)
        deadline = time.monotonic() + LEFTOVER_GRACE_S
        left = marked(MARKER, tag)
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = marked(MARKER, tag)
        if left:
            end_marked(MARKER, tag, grace=2.0)
    tail.poll()
    trial = Trial(plan, trial_dir, t0, sorted(tail.events, key=lambda e: e["t"]), kill,
                  [p.returncode for p in procs], hang, left, time.monotonic() - start, stuck)
    write_output(trial_dir / TRIAL_FILE, output_formats.RECOVERY_TRIAL,
                 {"format": output_formats.RECOVERY_TRIAL, "t0": t0, "kill": kill,
                  "returncodes": trial.returncodes, "hang": hang, "leftovers": left,
                  "seconds": trial.seconds, "stuck": stuck}, owner)
    return trial


def load_trial(trial_dir: Path) -> Trial:
    """A finished trial read back from its directory (plan.json, trial.json, events/)."""
    plan = Plan.load(trial_dir / PLAN_FILE)
    info = json.loads((trial_dir / TRIAL_FILE).read_text())
    return Trial(plan, trial_dir, info["t0"], read_events(trial_dir / "events"), info["kill"],
                 info["returncodes"], info["hang"], info["leftovers"], info["seconds"],
                 info.get("stuck", []))


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.recovery.driver",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", choices=list(PATHS), required=True)
    ap.add_argument("--checkpoint", help="memory (Horovod), torch-save or dcp (torchrun), "
                    "live (torchft), none (no commits); default: the path's first")
    ap.add_argument("--backend", help="default: the path's first (horovod, ddp-gloo)")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--min-world", type=int, default=1)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--commit-every", type=int, default=10)
    ap.add_argument("--kill-step", type=int, help="default: the middle, between commits")
    ap.add_argument("--no-kill", action="store_true", help="the uninterrupted run")
    ap.add_argument("--workload", default="mlp")
    ap.add_argument("--workload-param", action="append", default=[], metavar="KEY=VALUE",
                    help="a parameter of the workload, e.g. hidden=1024 (repeatable)")
    ap.add_argument("--global-batch", type=int, default=384,
                    help="samples per step over all ranks (the suite's default)")
    ap.add_argument("--collective-timeout", type=float, default=30.0,
                    help="seconds: DDP's process-group timeout and Horovod's Gloo timeout")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--out", help="trial directory (default: a new temporary one)")
    return ap.parse_args(argv)


def _params(specs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in specs:
        key, _, raw = spec.partition("=")
        out[key] = _number(raw)
    return out


def _number(raw: str) -> Any:
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            continue
    return raw


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    path = PATHS[a.path]
    try:
        plan = Plan(path=a.path, checkpoint=a.checkpoint or path.checkpoints[0],
                    backend=a.backend or path.backends[0], world_size=a.world_size,
                    min_world=a.min_world, steps=a.steps, commit_every=a.commit_every,
                    kill_step=None if a.no_kill else (a.kill_step or default_kill_step(
                        a.steps, max(a.commit_every, 1))),
                    workload=a.workload, workload_params=_params(a.workload_param),
                    global_batch=a.global_batch,
                    timeout_s=a.collective_timeout
                    ).check()
        out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="recovery-"))
        claim(out)  # before anything starts; run_trial claims it again
    except InputError as exc:
        print(f"hvd-vs-ddp: error: {exc}", file=sys.stderr)
        return 2
    trial = run_trial(plan, out, a.time_limit)
    figures = trial.figures()
    print(json.dumps({"dir": str(out), "returncodes": trial.returncodes, "hang": trial.hang,
                      "leftovers": trial.leftovers, "kill": trial.kill,
                      **{k: v for k, v in figures.items() if k != "timeline"}}, indent=1))
    return 0 if figures["completed"] and not trial.hang and not trial.leftovers else 1


if __name__ == "__main__":
    sys.exit(main())
