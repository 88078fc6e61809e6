"""Runs a comparison matrix cell by cell into a fresh run directory.

Each cell is a pytest run of the suites under its launcher, with a time limit;
rank 0 writes the cell's pytest-benchmark JSON to cells/<id>.json and the
combined output goes to logs/<id>.log. The manifest (command, versions,
hardware, git commit, start and end, every cell's status) is rewritten
atomically after every cell, so an interrupted run leaves every finished cell
readable and the manifest marked incomplete. A failed cell is recorded with its
error and the next cell runs. `--resume RUN_DIR` reruns only unfinished or
failed cells.

    hvd-vs-ddp run --preset quick                 # runs/<time>-quick/
    hvd-vs-ddp run --resume runs/2026...-quick
"""
from __future__ import annotations

import datetime
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from backends import launchers
from harness import versions
from hvd_vs_ddp.matrix import Cell, Preset, pytest_argv
from results import CellEntry, Manifest, load_manifest, write_json_atomic

ROOT = Path(__file__).resolve().parents[1]


class RunError(RuntimeError):
    pass


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], text=True,
                              capture_output=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


_DEAD_RANK = (
    # torchrun's "Root Cause" block
    re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)[^\n]*", re.S),
    # mpirun: "Process name: [[31639,1],1]" ... "Exit code: 1" / "on signal 9"
    re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\].*?(?:Exit code|signal)[: ]*(\d+)", re.S),
    # horovodrun: "Process 1 exit with status code 137."
    re.compile(r"Process (\d+) exit with status code (-?\d+)"),
)


def _dead_rank(log: str) -> str | None:
    for pattern in _DEAD_RANK:
        m = pattern.search(log)
        if m:
            return f"rank {m.group(1)} ended with exit code/signal {m.group(2)}"
    return None


def _error_line(log: str, returncode: int, timed_out: bool, limit: float) -> str:
    if timed_out:
        return f"cell exceeded its time limit of {limit:.0f}s and was killed"
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    ours = [ln for ln in lines if "hvd-vs-ddp:" in ln]
    if ours:
        return ours[-1][:400]
    dead = _dead_rank(log)
    if dead:
        return dead
    for key in ("rank(s) ", "Error:", "FAILED ", "E  "):
        hits = [ln for ln in lines if key in ln]
        if hits:
            return hits[-1][:400]
    if returncode == 5:
        return "pytest collected or ran no test"
    return (lines[-1][:400] if lines else f"exit code {returncode}")


class Runner:
    def __init__(self, run_dir: Path, preset: Preset, cells: list[Cell], command: list[str],
                 cell_time_limit: float, workloads: list[str] | None = None,
                 hosts: str | None = None) -> None:
        self.run_dir, self.preset, self.cells = run_dir, preset, cells
        self.limit, self.workloads, self.hosts = cell_time_limit, workloads, hosts
        self.manifest_path = run_dir / "manifest.json"
        self.current: subprocess.Popen | None = None
        self.manifest = self._load_or_new(command)

    # -- manifest --------------------------------------------------------
    def _load_or_new(self, command: list[str]) -> Manifest:
        if self.manifest_path.exists():
            manifest, _ = load_manifest(self.run_dir)  # checked and upgraded to this version
            manifest.resumed = [*(manifest.resumed or []), now()]
            manifest.complete = False
            return manifest
        return Manifest(command=list(command), preset=self.preset.name,
                        git_commit=git_commit(), started=now(), finished=None, complete=False,
                        versions=versions.versions(), hardware=versions.hardware(),
                        env=versions.knob_env(),
                        workloads=list(self.workloads or self.preset.workloads),
                        knob_set=self.preset.knob_set, hosts=self.hosts,
                        cells=[CellEntry.pending(**c.as_dict()) for c in self.cells])

    def save(self) -> None:
        self.manifest.check(where=str(self.manifest_path))  # a writer's bug fails here
        write_json_atomic(self.manifest_path, self.manifest.to_dict())

    # -- running ---------------------------------------------------------
    def run(self, progress=None) -> Manifest:
        (self.run_dir / "cells").mkdir(parents=True, exist_ok=True)
        (self.run_dir / "logs").mkdir(exist_ok=True)
        self.save()
        previous = {signal.SIGTERM: signal.getsignal(signal.SIGTERM)}
        signal.signal(signal.SIGTERM, self._on_sigterm)
        try:
            todo = [e for e in self.manifest.cells if e.status != "passed"]
            for i, entry in enumerate(todo):
                cell = next(c for c in self.cells if c.id == entry.id)
                if progress:
                    progress.start(i, len(todo), cell)
                self._run_cell(cell, entry)
                self.save()
                if progress:
                    progress.done(entry)
            self.manifest.finished = now()
            self.manifest.complete = True
        except KeyboardInterrupt:
            self._stop_current()
            self.manifest.interrupted = now()
            raise
        finally:
            self.save()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.manifest

    def _on_sigterm(self, signum, frame) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    def _stop_current(self) -> None:
        proc = self.current
        if proc is not None and proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    return
                try:
                    proc.wait(timeout=10)
                    return
                except subprocess.TimeoutExpired:
                    continue

    def _run_cell(self, cell: Cell, entry: CellEntry) -> None:
        results = self.run_dir / "cells" / f"{cell.id}.json"
        log_path = self.run_dir / "logs" / f"{cell.id}.log"
        avail = launchers.available(cell.launcher)
        entry.status, entry.error, entry.started = "running", None, now()
        if not avail:
            entry.status, entry.error, entry.seconds = "failed", avail.reason, 0.0
            return
        argv = pytest_argv(cell, self.preset, str(results), self.workloads)
        cmd = launchers.command(cell.launcher, cell.world_size, argv, hosts=self.hosts)
        env = launchers.env(launcher=cell.launcher)
        env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
        start = time.monotonic()
        timed_out = False
        with open(log_path, "w") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            self.current = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
            try:
                self.current.wait(timeout=self.limit)
            except subprocess.TimeoutExpired:
                timed_out = True
                self._stop_current()
            returncode = self.current.returncode
            self.current = None
        seconds = round(time.monotonic() - start, 1)
        text = log_path.read_text(errors="replace")
        status = "timeout" if timed_out else "passed" if returncode == 0 else "failed"
        entry.status, entry.seconds, entry.returncode = status, seconds, returncode
        entry.log = str(log_path.relative_to(self.run_dir))
        entry.results = str(results.relative_to(self.run_dir)) if results.exists() else None
        entry.error = (None if status == "passed" else
                       f"{cell.id}: {_error_line(text, returncode, timed_out, self.limit)}")


class Progress:
    """One line per event on stderr: the cell in flight, elapsed time and an estimate."""

    def __init__(self, stream=sys.stderr) -> None:
        self.stream, self.t0 = stream, time.monotonic()
        self.durations: list[float] = []

    def start(self, i: int, n: int, cell: Cell) -> None:
        self.i, self.n = i, n
        left = n - i
        if self.durations:
            eta = sum(self.durations) / len(self.durations) * left
            eta_s = f", about {eta / 60:.1f} min left"
        else:
            eta_s = ""
        elapsed = time.monotonic() - self.t0
        bar = "#" * int(20 * i / max(n, 1))
        print(f"[{bar:<20s}] {i + 1}/{n} {cell.id} (elapsed {elapsed / 60:.1f} min{eta_s})",
              file=self.stream, flush=True)

    def done(self, entry: CellEntry) -> None:
        self.durations.append(entry.seconds or 0.0)
        extra = f": {entry.error}" if entry.error else ""
        print(f"    {entry.id}: {entry.status} in {entry.seconds}s{extra}",
              file=self.stream, flush=True)
