"""The real multi-process jobs several system tests read: each launched once per session.

A launch costs seconds to minutes (2-4 Python processes importing torch, a rendezvous,
Horovod's start); many tests need the same scenario and differ only in what they check.
So a job here is declared once, started the first time a test asks for it through the
session fixture `jobs` (tests/system/conftest.py), and kept for the rest of the session;
each test then asserts on its exit status, output and files. A job that cannot start
here (a missing launcher, no Horovod) is a skip for every test that reads it, and a job
that fails is a failure, with its output, of every test that reads it.

    def test_x(jobs):
        ran = jobs.get(SUITES["torchrun", 2])      # first use launches; later ones reuse
        assert ran.proc.returncode == 0, explain(ran.proc)
        data = ran.results()                         # the job's --benchmark-json

`python -m tests.system.jobs` lists the jobs and the tests that read each.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.launch import TINY_SIZES, TINY_SUITE_ARGS, explain, horovod_available, launched

EQUIVALENCE = "tests/ranks/train_equivalence.py"


@dataclass(frozen=True)
class Job:
    """One launch: `launcher` starts `ranks` processes of `python argv...`; "{out}" in argv
    becomes the job's folder. `needs_horovod`: a skip without a Horovod build."""

    name: str
    launcher: str
    ranks: int
    argv: tuple[str, ...]
    timeout: float = 600
    unset: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    needs_horovod: bool = False
    results: str = "results.json"  # the --benchmark-json file in the job's folder
    readers: tuple[str, ...] = ()  # the tests that read it (documentation, the listing)


@dataclass
class Ran:
    job: Job
    proc: subprocess.CompletedProcess
    folder: Path
    seconds: float
    _results: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def results_path(self) -> Path:
        return self.folder / self.job.results

    def results(self) -> dict[str, Any]:
        """The job's pytest-benchmark JSON (rank 0 wrote it)."""
        if self._results is None:
            self._results = json.loads(self.results_path.read_text())
        return self._results

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [b["extra_info"] for b in self.results()["benchmarks"]
                if kind is None or b["extra_info"]["kind"] == kind]


# gpt's convergence (a model with layer norm, attention and AdamW, beside mlp's SGD) in
# the jobs that start the most backends: every distributed one at 2 ranks (horovodrun
# --mpi) and DDP and Horovod at 4 (horovodrun --gloo, 4 ranks on 2 cores: the mission's
# `horovodrun -np 4 pytest suites/`). The other launchers train mlp only: what they add
# is the launch, not the model.
MISSION = ("horovodrun-gloo", 4)
WITH_GPT = {("horovodrun-mpi", 2), MISSION}


# More ranks than cores: with 4 ranks on 2 cores every rank gets the cores late, the more
# so the more Gloo process groups the same processes opened before (the DDP, FSDP and
# ZeRO tests run first; torch 2.14 keeps a group's Gloo threads, one waking every 10 ms,
# after destroy_process_group once DDP wrapped a model with it). Horovod's own wait spins
# (WaitAndClear yields in a loop) and took the cores from its background threads: this
# job took 241-1290 s; the Horovod backend now sleeps instead where ranks outnumber cores
# (backends/horovod.py settle(): 41-129 s in 25 of 27 runs, twice 537-548 s). The limits stay
# generous: the job checks that every test passes, not how fast.
OVERSUBSCRIBED_LIMITS = ("--test-time-limit", "900", "--collective-timeout", "900")


# Time to accuracy trains digits to 95% (180 steps) once per backend: 10-23 s each with
# two tests sharing the cores, about half of a job's time. Its correctness is the same
# code for every backend (and every backend's losses are checked by the convergence
# tests); what a launcher adds is the ranks agreeing on when the target was reached, so
# each job times it for the two libraries only (measured here: the single-process job
# 107 s -> about 50 s).
TTA_LIBRARIES = ("-k", "not time_to_accuracy or ddp-gloo or horovod")


def _suite_job(launcher: str, ranks: int) -> Job:
    gpt = ("--convergence-workloads", "mlp,gpt") if (launcher, ranks) in WITH_GPT else ()
    slow = OVERSUBSCRIBED_LIMITS if ranks > (os.cpu_count() or 1) else ()
    # The mission's `horovodrun -np 4 pytest suites/` as typed: with whatever pytest
    # plugins the environment installed; the other jobs load pytest-benchmark alone.
    args = TINY_SIZES if (launcher, ranks) == MISSION else TINY_SUITE_ARGS
    tier = "" if ranks <= 2 else "_extended"  # the 4-rank job: the extended tier's files
    return Job(f"suites-{launcher}-np{ranks}", launcher, ranks,
               ("-m", "pytest", "suites/", *args, *gpt, *slow, *TTA_LIBRARIES,
                "--benchmark-json", "{out}/results.json"),
               timeout=2400 if slow else 900, unset=("OMP_NUM_THREADS",),
               needs_horovod=launcher.startswith("horovodrun"),
               readers=(f"test_suites_launchers{tier}", f"test_threads{tier} (auto threads)",
                        "test_why_instrumentation (DDP statistics, torchrun)",
                        "test_horovod_multiproc (DDP inside horovodrun)"))


# `pytest suites/` at tiny sizes under every launcher, OMP_NUM_THREADS unset (the suites
# decide every rank's threads themselves: test_threads reads them from these).
SUITES = {(la, n): _suite_job(la, n) for la, n in (
    ("single", 1), ("torchrun", 2), ("mpirun", 2), ("horovodrun-gloo", 2),
    ("horovodrun-mpi", 2), ("horovodrun-gloo", 4))}

_THROUGHPUT = ("-m", "pytest", "suites/test_throughput.py::test_throughput",
               *TINY_SUITE_ARGS, "--rounds", "2", "--steps-per-round", "2")

# DDP's statistics switched off, with --threads 2 over torchrun's OMP_NUM_THREADS=1.
DDP_STATS_OFF = Job("ddp-stats-off-threads2", "torchrun", 2,
                    (*_THROUGHPUT, "--backends", "ddp-gloo", "--ddp-sample-rate", "0",
                     "--threads", "2", "--benchmark-json", "{out}/results.json"),
                    readers=("test_why_instrumentation", "test_threads (--threads wins)"))

# Horovod's timeline under both controllers; the Gloo one with --threads 2 as well.
TIMELINE = {
    "horovodrun-gloo": Job("timeline-horovodrun-gloo-threads2", "horovodrun-gloo", 2,
                           (*_THROUGHPUT, "--backends", "horovod", "--horovod-timeline",
                            "auto", "--threads", "2", "--benchmark-json", "{out}/hvd.json"),
                           needs_horovod=True, results="hvd.json", unset=("OMP_NUM_THREADS",),
                           readers=("test_why_instrumentation", "test_threads")),
    "horovodrun-mpi": Job("timeline-horovodrun-mpi", "horovodrun-mpi", 2,
                          (*_THROUGHPUT, "--backends", "horovod", "--horovod-timeline", "auto",
                           "--benchmark-json", "{out}/hvd.json"), needs_horovod=True,
                          results="hvd.json", readers=("test_why_instrumentation",)),
}


# The gradient accumulations each equivalence job trains, one after the other in the same
# ranks (a backend set up and closed per value, as the suites open one per test): one
# launch for both where test_ddp_multiproc and test_horovod_multiproc compare both.
ACCUMULATIONS = {("ddp-gloo", "torchrun"): (1, 3), ("ddp-gloo", "mpirun"): (1, 3),
                 ("horovod", "horovodrun-gloo"): (1, 3), ("horovod", "horovodrun-mpi"): (1, 3)}


def equivalence(backend: str, launcher: str, run: int = 1) -> Job:
    """tests/ranks/train_equivalence.py: 10 steps of mlp against `single` at each of the
    job's accumulations (ACCUMULATIONS, else 1), rank 0's weights saved to
    {out}/weights-accum{N}.pt, its losses to {out}/losses-accum{N}.json and each
    accumulation's verdict to {out}/accum{N}.json (read them with `trained`). `run` > 1:
    another run of the same job at accumulation 1 (for the same-seed, same-losses test)."""
    accumulations = ACCUMULATIONS.get((backend, launcher), (1,)) if run == 1 else (1,)
    return Job(f"equivalence-{backend}-{launcher}-run{run}", launcher,
               1 if launcher == "single" else 2,
               (EQUIVALENCE, backend, "--accumulation", ",".join(map(str, accumulations)),
                "--save", "{out}/weights-accum{accumulation}.pt",
                "--losses", "{out}/losses-accum{accumulation}.json", "--verdicts", "{out}"),
               timeout=300, needs_horovod=backend == "horovod" or launcher.startswith(
                   "horovodrun"),
               readers=("test_ddp_multiproc", "test_horovod_multiproc", "test_repeatable",
                        "test_two_hosts (the one-host weights)"))


def trained(ran: Ran, accumulation: int = 1) -> Path:
    """The equivalence job's training at `accumulation` passed its checks (else the test
    fails with them, or with the job's output where it never got that far): its folder,
    which holds weights-accum{N}.pt and losses-accum{N}.json."""
    verdicts = {p.name: json.loads(p.read_text())["failures"]
                for p in ran.folder.glob("accum*.json")}
    mine = verdicts.get(f"accum{accumulation}.json")
    assert mine is not None, f"no verdict for accumulation {accumulation}\n{explain(ran.proc)}"
    assert not mine, "\n".join(mine)
    # exit 1 only for a failed check (each test names its own); anything else is a crash
    expected = 1 if any(verdicts.values()) else 0
    assert ran.proc.returncode == expected, explain(ran.proc)
    return ran.folder


class SharedJobs:
    """Launches a Job on first use and keeps what it left for the session."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._done: dict[Job, Ran | BaseException] = {}

    def get(self, job: Job) -> Ran:
        if job not in self._done:
            self._done[job] = self._launch(job)
        done = self._done[job]
        if isinstance(done, BaseException):
            raise done
        return done

    def _launch(self, job: Job) -> Ran | BaseException:
        if job.needs_horovod:
            ok, why = horovod_available()
            if not ok:
                try:
                    pytest.skip(f"horovod: {why}")
                except pytest.skip.Exception as exc:
                    return exc
        folder = self.root / job.name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        argv = [a.replace("{out}", str(folder)) for a in job.argv]
        start = time.monotonic()
        try:
            proc = launched(job.launcher, job.ranks, argv, timeout=job.timeout,
                            extra_env=dict(job.env), unset=job.unset)
        except (pytest.skip.Exception, pytest.fail.Exception) as exc:
            return exc
        return Ran(job, proc, folder, time.monotonic() - start)


def all_jobs() -> list[Job]:
    eq = [equivalence(b, la) for b, la in ACCUMULATIONS]
    return [*SUITES.values(), DDP_STATS_OFF, *TIMELINE.values(), *eq]


if __name__ == "__main__":
    for j in all_jobs():
        print(f"{j.name:44s} {j.launcher:16s} np{j.ranks}  read by {', '.join(j.readers)}")
