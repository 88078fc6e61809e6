"""Processes found by a marker in their environment: the whole process tree of a job,
wherever its launcher put it (a new session, a daemon's child, a re-parented orphan).

`hvd-vs-ddp run` starts every cell with a unique marker variable; when the cell ends
(or is timed out or interrupted) every local process still carrying it is ended, so no
rank outlives its cell. Linux only (reads /proc/<pid>/environ of the same user).

    from hvd_vs_ddp.common.processes import marked, end_marked, described
    pids = marked("HVD_VS_DDP_CELL", "run-x/cell-1/3f2a")
    described(pids)         # [{"pid": ..., "state": "sleeping", "cmd": "python -m ..."}]
    end_marked("HVD_VS_DDP_CELL", "run-x/cell-1/3f2a", grace=5.0)
    signal_groups(procs, signal.SIGTERM)   # each still-running Popen's process group
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil


def signal_groups(procs, sig: int) -> None:
    """Send `sig` to the process group of each of `procs` (subprocess.Popen objects
    started in a session of their own) that is still running; a group already gone is
    no error."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass


def marked(name: str, value: str, prefix: bool = False) -> list[int]:
    """PIDs (not this process) whose environment holds name=value (`prefix`: a value
    that starts with `value`)."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if (any(v.startswith(needle) for v in env) if prefix else needle in env):
            found.append(int(entry))
    return found


def end_marked(name: str, value: str, grace: float = 5.0, prefix: bool = False) -> list[int]:
    """SIGTERM every marked process, SIGKILL those alive after `grace` seconds; returns
    the PIDs found at first."""
    pids = marked(name, value, prefix)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
                if sig == signal.SIGTERM:  # a stopped process acts on it once continued
                    os.kill(pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and marked(name, value, prefix):
            time.sleep(0.1)
        if not marked(name, value, prefix):
            break
    return pids


def described(pids: list[int], cmd_chars: int = 200) -> list[dict[str, Any]]:
    """For each of `pids` still present: its pid, state (psutil's: sleeping, running,
    stopped, zombie, ...) and command line (cut to `cmd_chars`; empty for a zombie)."""
    out = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            state = proc.status()
            cmd = " ".join(proc.cmdline())
        except psutil.ZombieProcess:
            state, cmd = psutil.STATUS_ZOMBIE, ""
        except psutil.Error:  # gone, or not ours to read
            continue
        out.append({"pid": pid, "state": state, "cmd": cmd[:cmd_chars]})
    return out
