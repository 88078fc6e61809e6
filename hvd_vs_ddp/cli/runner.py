"""Runs a comparison matrix cell by cell into a fresh run directory.

Each cell is a pytest run of the suites under its launcher, with a time limit;
before it starts, the runner writes the cell's plan (hvd_vs_ddp/harness/cell_plan.py:
options, verdicts, placement), judged once by the run request
(hvd_vs_ddp/cli/run_request.py) and never again here, beside its results; its ranks read
it instead of judging again (a launcher gone since the request is the launch's failure,
recorded as the cell's error); rank 0 writes the cell's
pytest-benchmark JSON to cells/<id>.json and the combined output goes to logs/<id>.log.
The manifest (command, versions, hardware, git commit, start and end, every cell's
status) is rewritten atomically after every cell, so an interrupted run leaves every
finished cell readable and the manifest marked incomplete. A failed cell is recorded with its
error and the next cell runs. `--resume RUN_DIR` reruns only unfinished or
failed cells (repetitions), and first re-checks every passed one against the sizes and
sha256 digests the run recorded for its files (hvd_vs_ddp/cli/resume_check.py): a
repetition whose files are missing, truncated, corrupt or different runs again, with one
line saying which file and why. After every repetition the runner records the files it
wrote (results, timeline, traces, log) with their digests in the manifest.

Interruption: SIGINT (Ctrl-C), SIGTERM (Slurm at a job's time limit) and SIGHUP end the
running cell's whole process tree (every local process carrying the cell's
HVD_VS_DDP_CELL marker), record that repetition as "interrupted", keep the manifest
valid with `complete: false` and `interrupted` set, and end `hvd-vs-ddp run` with
128 + the signal (130, 143, 129); `--resume` finishes the run.

One runner per run directory (hvd_vs_ddp/cli/run_lock.py): a second `run --resume` of a
run in progress is refused with one line, and a runner ends what a killed runner of the
same run left behind before it starts a cell.

Repetitions (`--repeat N`): every cell runs N times, each time as a fresh process
with its own results file and log (cells/<id>.r<k>.json, logs/<id>.r<k>.log; with
N = 1 the names stay cells/<id>.json). The first repetition runs all of the cell's
suites; the others only its timing suites (throughput, compute): repetitions exist
to measure run-to-run variation of step times, while convergence and the collective
sweep run once. Repetitions are interleaved: round k runs repetition k of every cell,
in an order shuffled per round with a recorded seed (`order_seed`, `order` in the
manifest), so that drift of the machine hits every backend alike.

    hvd-vs-ddp run --preset quick                 # runs/<time>-quick/
    hvd-vs-ddp run --preset quick --repeat 3 --order-seed 7
    hvd-vs-ddp run --resume runs/2026...-quick

Emulated hosts (`--emulate-hosts 2 --link-rate ...`, docs/links.md): a cell whose link
is a rate runs across two network namespaces made for it (hvd_vs_ddp/links/hosts.py)
and removed when it ends, times out or is interrupted; its command comes from
hvd_vs_ddp/cli/link_launch.py. Every run's start removes the emulated hosts a killed run
left (their owner, named in them, is dead), never a live run's.

Budget (`--budget MINUTES`, hvd_vs_ddp/cli/budget.py): after the planned repetitions,
interleaved repetitions are added to the pairs whose verdicts are still inconclusive
until every pair is settled or the budget (wall clock, the whole run) is spent.
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Mapping

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.cli import budget, resume_check
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.cli.cell_command import launch_as, pytest_argv
from hvd_vs_ddp.cli.cell_errors import error_line
from hvd_vs_ddp.cli.presets import TIMED_SUITES, Preset
from hvd_vs_ddp.cli.run_lock import CELL_MARKER, RunLock, marker_root
from hvd_vs_ddp.common import cpu_load, interrupt, output_formats, processes
from hvd_vs_ddp.common.checkout import ROOT, suites_root
from hvd_vs_ddp.common.errors import WriteError
from hvd_vs_ddp.common.log import log
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.harness import cell_plan, versions
from hvd_vs_ddp.harness.cell_plan import CellPlan
from hvd_vs_ddp.links import hosts as emulated_hosts
from hvd_vs_ddp.links.rates import emulated
from hvd_vs_ddp.results_schema import FORMAT as RUN_MANIFEST
from hvd_vs_ddp.results_schema import (
    CellEntry,
    Manifest,
    Repetition,
    integrity,
    load_manifest,
)


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


def repetitions(cell: Cell, repeat: int) -> int:
    """How often a cell runs: `repeat` times if it times steps, else once (so is Horovod's
    autotune: its steps are timed while it tries parameters, never compared)."""
    if cell.knob_set == "hvd-autotune":
        return 1
    return repeat if any(s in TIMED_SUITES for s in cell.suites) else 1


def schedule(cells: list[Cell], repeat: int, seed: int) -> list[str]:
    """Round-robin over repetitions, each round's cells shuffled: ["<id>.r<k>", ...]."""
    rng = random.Random(seed)
    order = []
    for k in range(1, repeat + 1):
        ids = [c.id for c in cells if repetitions(c, repeat) >= k]
        rng.shuffle(ids)
        first = {c.id for c in cells if c.knob_set == "hvd-autotune"}  # autotuned reads them
        ids.sort(key=lambda i: i not in first)
        order += [f"{i}.r{k}" for i in ids]
    return order


def _aggregate(entry: CellEntry) -> None:
    """The cell's own fields from its repetitions: passed only when every one passed."""
    reps = entry.repeats or []
    bad = [r for r in reps if r.status in ("failed", "timeout", "interrupted")]
    entry.status = ("passed" if all(r.status == "passed" for r in reps) else
                    bad[0].status if bad else
                    "running" if any(r.status == "running" for r in reps) else "pending")
    entry.error = bad[0].error if bad else None
    done = [r.seconds for r in reps if r.seconds is not None]
    entry.seconds = round(sum(done), 1) if done else None
    entry.results, entry.log = reps[0].results, reps[0].log
    entry.started = reps[0].started
    codes = [r.returncode for r in (bad or reps) if r.returncode is not None]
    entry.returncode = codes[0] if codes else None


class Runner:
    def __init__(self, run_dir: Path, preset: Preset, cells: list[Cell], command: list[str],
                 cell_time_limit: float, workloads: list[str] | None = None,
                 hosts: str | None = None, repeat: int | None = None,
                 order_seed: int | None = None, pythonpath: tuple[str, ...] = (),
                 budget_minutes: float | None = None,
                 plans: Mapping[str, CellPlan] | None = None) -> None:
        self.run_dir, self.preset, self.cells = run_dir, preset, cells
        self.plans = dict(plans or {})  # cell id -> its plan, judged by the run request
        self.pythonpath = pythonpath  # folders of external workload modules (run_request)
        self.limit, self.workloads, self.hosts = cell_time_limit, workloads, hosts
        self.repeat = repeat if repeat is not None else preset.repeat
        self.order_seed = (order_seed if order_seed is not None
                           else random.SystemRandom().randrange(2**31))
        self.folder = RunFolder(run_dir)  # every path in the run (common/run_folder.py)
        self.manifest_path = self.folder.manifest
        self.current: subprocess.Popen | None = None
        self.marker: str | None = None  # HVD_VS_DDP_CELL of the cell in flight
        self.link_hosts: emulated_hosts.EmulatedHosts | None = None  # the cell's, if any
        self.lock = RunLock(run_dir)  # one runner per run (hvd_vs_ddp/cli/run_lock.py)
        self.resuming = self.manifest_path.exists()
        self.notes: list[str] = []  # what loading the manifest noted (e.g. edited)
        self.budget_minutes = budget_minutes  # run --budget (hvd_vs_ddp/cli/budget.py)
        self._t0: float | None = None         # this session's start; budget time spent
        self.manifest = self._load_or_new(command)
        if budget_minutes is not None:  # a new run's plan, or a resumed run's new total
            if self.manifest.budget is None:
                self.manifest.budget = budget.new_plan(budget_minutes,
                                                       self.manifest.repeat or self.repeat)
            self.manifest.budget["minutes"] = float(budget_minutes)
        self._carried = float((self.manifest.budget or {}).get("spent_s") or 0.0)

    aggregate = staticmethod(_aggregate)  # for the budget's added repetitions

    def elapsed(self) -> float:
        """Seconds this run has spent, earlier sessions (a resumed run) included."""
        now_ = time.monotonic()
        return self._carried + (now_ - self._t0 if self._t0 is not None else 0.0)

    # -- manifest --------------------------------------------------------
    def _load_or_new(self, command: list[str]) -> Manifest:
        if self.manifest_path.exists():
            manifest, self.notes = load_manifest(self.run_dir)  # checked, upgraded
            manifest.resumed = [*(manifest.resumed or []), now()]
            manifest.complete = False
            if manifest.order is None:  # written before repetitions: one per cell
                manifest.repeat, manifest.order = 1, [f"{c.id}.r1" for c in manifest.cells]
            for c in manifest.cells:
                if c.repeats is None:
                    c.repeats = [Repetition(rep=1, status=c.status, error=c.error,
                                            seconds=c.seconds, results=c.results, log=c.log,
                                            started=c.started, returncode=c.returncode)]
            return manifest
        entries = [CellEntry.pending(**c.as_dict()) for c in self.cells]
        for cell, e in zip(self.cells, entries):
            e.repeats = [Repetition(rep=k) for k in range(1, repetitions(cell, self.repeat) + 1)]
        return Manifest(command=list(command), preset=self.preset.name,
                        git_commit=git_commit(), started=now(), finished=None, complete=False,
                        versions=versions.versions(), hardware=versions.hardware(),
                        env=versions.knob_env(),
                        workloads=list(self.workloads or self.preset.workloads),
                        knob_set=self.preset.knob_set, hosts=self.hosts, cells=entries,
                        repeat=self.repeat, order_seed=self.order_seed,
                        order=schedule(self.cells, self.repeat, self.order_seed))

    def save(self) -> None:
        if self.manifest.budget is not None and self._t0 is not None:
            self.manifest.budget["spent_s"] = round(self.elapsed(), 1)
        self.manifest.check(where=str(self.manifest_path))  # a writer's bug fails here
        self.manifest.digest = self.manifest.content_digest()  # an edit shows later
        self.folder.write_json(self.manifest_path, RUN_MANIFEST,
                               self.manifest.to_dict())  # the output gate: its own manifest

    # -- running ---------------------------------------------------------
    def run(self, progress=None) -> Manifest:
        try:
            return self._run(progress)
        finally:
            self.lock.release()

    def _run(self, progress) -> Manifest:
        fresh = self.folder.make()  # the folder, cells/ and logs/
        self.lock.claim()
        for name in emulated_hosts.sweep_if_possible():  # a killed run's hosts (links/)
            log.info(f"removed emulated host {name} (its run is gone)")
        if self.resuming:  # no status trusted: damaged files are re-run (resume_check)
            for line in [*self.notes, *resume_check.repair(self.run_dir, self.manifest)]:
                log.info(f"resume: {line}")
        try:
            self.save()
        except OSError:  # a full disk: leave no empty run directory behind a fresh run
            if fresh:
                self.folder.unmake()
            raise
        try:
            with interrupt.raising():
                self._run_all(progress)
        except KeyboardInterrupt as exc:  # SIGINT, SIGTERM, SIGHUP
            stop = interrupt.as_interrupted(exc)
            with interrupt.deferred(drop=True):  # bounded clean-up; more signals dropped
                self._stop_current()
                self._mark_interrupted(stop)
                self.manifest.interrupted = now()
                self.manifest.complete = False
                self.save()
            raise stop from None
        self.save()
        return self.manifest

    def _run_all(self, progress) -> None:
        self._t0 = time.monotonic()
        todo = []
        for task in self.manifest.order or []:
            cell_id, k = task.rsplit(".r", 1)
            entry = self.manifest.cell(cell_id)
            rep = (entry.repeats or [])[int(k) - 1]
            if rep.status != "passed":
                todo.append((next(c for c in self.cells if c.id == cell_id), entry, rep))
        for i, (cell, entry, rep) in enumerate(todo):
            label = cell.id if len(entry.repeats or []) == 1 else f"{cell.id}.r{rep.rep}"
            if progress:
                progress.start(i, len(todo), label)
            self._run_cell(cell, entry, rep)
            _aggregate(entry)
            self.save()
            if progress:
                progress.done(label, rep)
        if self.manifest.budget is not None:  # run --budget: settle the open pairs
            budget.settle(self, progress)
        self.manifest.finished = now()
        self.manifest.complete = True

    def _mark_interrupted(self, stop: interrupt.Interrupted) -> None:
        """Every repetition caught running becomes "interrupted" (resume reruns it)."""
        for entry in self.manifest.cells:
            reps = entry.repeats or []
            for rep in reps:
                if rep.status == "running":
                    rep.status = "interrupted"
                    rep.error = f"{entry.id}: interrupted by {stop.name}; rerun with --resume"
                    if rep.started and rep.seconds is None:
                        began = datetime.datetime.fromisoformat(rep.started)
                        rep.seconds = round(max(0.0, (datetime.datetime.now(
                            datetime.timezone.utc) - began).total_seconds()), 1)
            if any(r.status == "interrupted" for r in reps):
                _aggregate(entry)

    def _stop_current(self) -> None:
        """End the cell in flight: its process group, then every process left with its
        marker (ranks a launcher put in sessions of their own)."""
        proc = self.current
        if proc is not None and proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._end_leftovers()
        self._close_hosts()

    def _close_hosts(self) -> None:
        """Remove the cell's emulated hosts, with every process left inside them."""
        made, self.link_hosts = self.link_hosts, None
        if made is not None:
            made.close()

    def _end_leftovers(self) -> None:
        if self.marker is None:
            return
        left = processes.end_marked(CELL_MARKER, self.marker)
        if left:
            log.info(f"ended {len(left)} process(es) left by the cell: {left}")

    def _run_cell(self, cell: Cell, entry: CellEntry, rep: Repetition) -> None:
        """Run one repetition of a cell as a fresh launch; record it in `rep`."""
        single = len(entry.repeats or []) == 1
        stem = cell.id if single else f"{cell.id}.r{rep.rep}"
        results = self.folder.results(stem)
        log_path = self.folder.log(stem)
        rep.status, rep.error, rep.started = "running", None, now()
        try:
            planned = self.plans[cell.id]
        except KeyError:
            raise RunError(f"{cell.id}: no plan; a Runner runs the plans its run request "
                           "judged (run_request.build)") from None
        if rep.rep > 1:  # later repetitions: the timing suites only (see the docstring)
            cell = dataclasses.replace(
                cell, suites=tuple(s for s in cell.suites if s in TIMED_SUITES))
            planned = dataclasses.replace(planned, suites=cell.suites)
        # the cell runs in the suites' folder: every path it gets is absolute (a run
        # started elsewhere with a relative --runs-dir writes where the runner reads).
        # Its plan, judged once by the run request, is written beside its results; its
        # ranks read it and judge nothing again (hvd_vs_ddp/harness/cell_plan.py).
        plan_file = self.folder.plan(stem).resolve()
        self.folder.check((log_path, output_formats.CELL_LOG))
        try:
            cell_plan.write(planned, plan_file, owner=self.run_dir)
        except OSError as exc:  # a full disk (the gate's WriteError): this cell fails
            why = str(exc) if isinstance(exc, WriteError) else f"writing {plan_file}: {exc}"
            log_path.write_text(f"hvd-vs-ddp: the cell's plan was not written: {why}\n")
            rep.status, rep.error, rep.seconds = "failed", f"{stem}: {why}", 0.0
            rep.log = str(log_path.relative_to(self.run_dir))
            return
        argv = pytest_argv(cell, str(plan_file), str(results.resolve()))
        launcher, nprocs = launch_as(cell)  # a recovery cell starts its own elastic job
        env = launchers.env(launcher=launcher)
        if self.pythonpath:  # the ranks import external workloads as the parent did
            env["PYTHONPATH"] = os.pathsep.join(
                [*self.pythonpath, *filter(None, [env.get("PYTHONPATH")])])
        self.marker = f"{marker_root(self.run_dir)}{stem}/{uuid.uuid4().hex}"
        env[CELL_MARKER] = self.marker
        # mpirun across --hosts exports the cell's variables to remote ranks (-x)
        try:
            if emulated(cell.link):  # one rank per emulated host (hvd_vs_ddp/links/)
                cmd = self._across_hosts(cell, launcher, nprocs, argv, env)
            else:
                cmd = launchers.command(launcher, nprocs, argv, hosts=self.hosts, environ=env)
        except (launchers.LauncherUnavailable, RuntimeError) as exc:  # gone since judged,
            rep.status, rep.error, rep.seconds = "failed", f"{stem}: {exc}", 0.0  # or no
            self.marker = None  # namespaces could be made
            self._close_hosts()
            return
        start = time.monotonic()
        meter = cpu_load.Meter(irq=not emulated(cell.link))  # its link: not foreign
        meter.start()
        timed_out = False
        with open(log_path, "w") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            self.current = subprocess.Popen(cmd, cwd=suites_root(), env=env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
            try:
                self.current.wait(timeout=self.limit)
            except subprocess.TimeoutExpired:
                timed_out = True
                self._stop_current()
            returncode = self.current.returncode
            self.current = None
        self._end_leftovers()
        self._close_hosts()
        self.marker = None
        rep.foreign_load = meter.stop()
        seconds = round(time.monotonic() - start, 1)
        text = log_path.read_text(errors="replace")
        status = "timeout" if timed_out else "passed" if returncode == 0 else "failed"
        rep.status, rep.seconds, rep.returncode = status, seconds, returncode
        rep.log = str(log_path.relative_to(self.run_dir))
        rep.results = str(results.relative_to(self.run_dir)) if results.exists() else None
        rep.error = None if status == "passed" else f"{stem}: " + error_line(
            text, returncode, timed_out, self.limit, cell.launcher)
        # what this repetition wrote, as it lies now that its processes have ended
        rep.files = integrity.record(self.run_dir, stem, integrity.stems(self.manifest))

    def _across_hosts(self, cell: Cell, launcher: str, nprocs: int, argv: list[str],
                      env: dict[str, str]) -> list[str]:
        """Make the cell's emulated hosts (removed when it ends, is timed out or
        interrupted: _close_hosts) and its command across them."""
        from hvd_vs_ddp.cli import link_launch

        assert cell.link is not None
        self.link_hosts = emulated_hosts.EmulatedHosts(cell.link).create()
        return link_launch.command(launcher, nprocs, argv, self.link_hosts, env)


class Progress:
    """One line per event on stderr: the cell in flight, elapsed time and an estimate."""

    def __init__(self, stream=None) -> None:
        # sys.stderr as it is now, not as it was when this module was imported (a caller
        # that swapped it since, as pytest's capture does per test, had closed that one)
        self.stream, self.t0 = stream if stream is not None else sys.stderr, time.monotonic()
        self.durations: list[float] = []

    def start(self, i: int, n: int, label: str) -> None:
        self.i, self.n = i, n
        left = n - i
        if self.durations:
            eta = sum(self.durations) / len(self.durations) * left
            eta_s = f", about {eta / 60:.1f} min left"
        else:
            eta_s = ""
        elapsed = time.monotonic() - self.t0
        bar = "#" * int(20 * i / max(n, 1))
        print(f"[{bar:<20s}] {i + 1}/{n} {label} (elapsed {elapsed / 60:.1f} min{eta_s})",
              file=self.stream, flush=True)

    def done(self, label: str, rep: Repetition) -> None:
        self.durations.append(rep.seconds or 0.0)
        extra = f": {rep.error}" if rep.error else ""
        print(f"    {label}: {rep.status} in {rep.seconds}s{extra}",
              file=self.stream, flush=True)
