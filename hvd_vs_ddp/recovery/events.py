"""Per-process JSON-lines event logs of a recovery trial. Torch-free.

Every worker process appends one JSON object per line to `<event_dir>/<pid>.jsonl`,
flushed at once, so the trial's driver can read from outside where each process is
(and which one to kill) and a SIGKILL loses at most the line being written. Every
event has `ev` (its kind), `t` (wall-clock seconds, time.time(): comparable across
processes), `pid`, `host`, `rank` and `world` (as the worker saw them then). Kinds:

- start:   the process began (torchrun: also `restart`, its agent's restart count);
- segment: training (re)starts at `resume` (steps already done); after a rollback or
           a restart this is the recovery's rendezvous done;
- step:    step `step` completed, with this rank's `loss` on its shard;
- commit:  the state after step `step` is committed (`seconds`; `save_s`: the save part);
- saved:   Horovod Elastic only: its in-memory save of step `step` is done (`seconds`),
           before commit's host check, which a dying peer can cut short;
- restore: state restored from the last commit (`seconds`, `step`);
- reset:   Horovod Elastic's reset callback ran (a rendezvous of the new world);
- done:    the plan finished at `step`.

Every worker also answers SIGUSR1 (`answer_stack_requests`) with every thread's Python
stack on its stderr (the launcher's log; faulthandler), so a trial that hangs shows
where each worker was stuck: the driver asks before it ends them.

The driver's kill must land after the kill step however slow it is to read the logs (a
loaded host, tiny steps: a trial once finished all its steps before the driver read the
kill step's line): each worker on the victim host holds after logging the kill step
(`hold_for_the_kill`) until it is killed or the driver's `killed` file is in the event
folder (then it goes on: it was not the one killed, or it is the restarted group
redoing the step).

    log = EventLog("trial/events"); log.write("step", step=3, loss=0.9)
    events = read_events("trial/events")      # every process's events, by time
    python -m hvd_vs_ddp.recovery.events DIR  # prints them
"""
from __future__ import annotations

import faulthandler
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

STACKS_SIGNAL = signal.SIGUSR1  # asks a worker for its threads' stacks (on its stderr)


def answer_stack_requests() -> None:
    """From now on this process writes every thread's Python stack to its stderr on
    STACKS_SIGNAL (faulthandler), and goes on running. Each worker calls it at start."""
    faulthandler.register(STACKS_SIGNAL, all_threads=True, chain=False)


class EventLog:
    """Appends this process's events; `rank`, `world` and `host` are set by the worker."""

    def __init__(self, event_dir: str | Path, host: str | None = None) -> None:
        self.dir = Path(event_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.pid = os.getpid()
        self.host = host or socket.gethostname()
        self.rank, self.world = -1, -1
        self.held = False  # hold_for_the_kill held this process once
        self._f = open(self.dir / f"{self.pid}.jsonl", "a", buffering=1)

    def write(self, ev: str, **fields: Any) -> dict[str, Any]:
        rec = {"ev": ev, "t": time.time(), "pid": self.pid, "host": self.host,
               "rank": self.rank, "world": self.world, **fields}
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()
        return rec

    def close(self) -> None:
        self._f.close()


KILLED = "killed"  # in the event folder: the driver's note that its kill is done
HOLD_S = 120.0     # the longest a victim host's worker waits for the kill


def hold_for_the_kill(log: EventLog, step: int, kill_step: int | None, victim_host: str,
                      limit_s: float = HOLD_S) -> None:
    """After `log` wrote step `step`: on the victim host, at the first step >= kill_step
    before the kill, wait until SIGKILL ends this process or the driver's KILLED note
    appears (or limit_s passes). Returns at once everywhere else."""
    if kill_step is None or step < kill_step or log.host != victim_host:
        return
    note, deadline = log.dir / KILLED, time.monotonic() + limit_s
    if note.exists() or log.held:
        return
    log.held = True
    while not note.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


class Tail:
    """Reads new complete lines of every log in a directory, incrementally (the driver)."""

    def __init__(self, event_dir: str | Path) -> None:
        self.dir = Path(event_dir)
        self._pos: dict[Path, int] = {}
        self.events: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        new: list[dict[str, Any]] = []
        for path in sorted(self.dir.glob("*.jsonl")):
            with open(path, "rb") as f:
                f.seek(self._pos.get(path, 0))
                data = f.read()
            end = data.rfind(b"\n") + 1  # a line being written is read next time
            self._pos[path] = self._pos.get(path, 0) + end
            for line in data[:end].splitlines():
                try:
                    new.append(json.loads(line))
                except ValueError:  # a line cut by SIGKILL
                    continue
        self.events.extend(new)
        return new


def last_events(events: list[dict[str, Any]], t0: float) -> str:
    """One line per process: its last event (seconds after t0), for a failure message."""
    latest: dict[int, dict[str, Any]] = {}
    for e in sorted(events, key=lambda e: e["t"]):
        latest[e["pid"]] = e
    return "\n".join(
        f"pid {e['pid']} {e['host']} r{e['rank']}/{e['world']}: {e['ev']}"
        f"{' ' + str(e['step']) if 'step' in e else ''} at {e['t'] - t0:.1f} s"
        for e in sorted(latest.values(), key=lambda e: e["t"]))


def read_events(event_dir: str | Path) -> list[dict[str, Any]]:
    """Every complete event of every process, ordered by time."""
    tail = Tail(event_dir)
    tail.poll()
    return sorted(tail.events, key=lambda e: e["t"])


if __name__ == "__main__":
    evs = read_events(sys.argv[1])
    t0 = evs[0]["t"] if evs else 0.0
    for e in evs:
        rest = {k: v for k, v in e.items() if k not in ("ev", "t", "pid", "host", "rank",
                                                         "world")}
        print(f"{e['t'] - t0:8.3f} {e['pid']:>7} {e['host']:>10} r{e['rank']}/{e['world']} "
              f"{e['ev']:8s} {rest}")
