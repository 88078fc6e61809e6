"""The plan of a recovery trial, the elastic paths, and the refusals. Torch-free.

A `Plan` is everything both libraries share in a trial: the workload and its seed, the
global batch (held constant when the world shrinks: per-rank batch = global batch /
world, so the same step trains on the same samples at any world size), the planned
steps, a commit (Horovod: TorchState.commit, in memory) or a checkpoint (torchrun:
torch.save on rank 0, or torch.distributed.checkpoint) every k steps, and the step at
which one worker is SIGKILLed. Two "hosts" are two names of this machine, localhost
and 127.0.0.1 (as Horovod's own elastic tests do); the victim is a worker on the
second, so Horovod Elastic, which blacklists a failed host, drops that host's workers.
Both number their local ranks from 0, so on a GPU machine each "host" gets its own GPUs
(`Plan.gpu_split`: HVD_VS_DDP_HOST_GPUS, read by hvd_vs_ddp/backends/placement.py), and
a plan with more ranks than GPUs is refused (`gpu_refusal`).

`ElasticPath` rows say which launcher each library's recovery runs under and what it
needs; which backends train under which path is each backend's catalog row
(hvd_vs_ddp/backends/catalog.py: `elastic`, or `no_elastic` saying why none).
`path_for` refuses, in one line naming why, a backend or launcher that has no elastic
path. `Plan.check` refuses min above max, k of 0, a kill step outside the plan,
and a global batch that a possible world size does not divide.

    python -m hvd_vs_ddp.recovery.plan            # the elastic paths, and what has none
    Plan(path="horovod-elastic", checkpoint="memory", backend="horovod", world_size=2,
         global_batch=64).check()
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hvd_vs_ddp.backends import catalog, placement
from hvd_vs_ddp.common.errors import InputError

PLAN_ENV = "HVD_VS_DDP_RECOVERY_PLAN"    # the plan.json a worker reads
HOST_ENV = placement.HOST_NAME_ENV       # which "host" a torchrun agent's workers are on
HOSTS = ("localhost", "127.0.0.1")       # two names of this machine: two hosts
NO_COMMIT = "none"                       # a plan without commits: the steady-state baseline


@dataclass(frozen=True)
class ElasticPath:
    """One library's answer to a dead worker."""

    name: str
    library: str                 # "horovod", "torch" or "torchft" (recorded as such)
    launcher: str                # the launcher table's row that starts it
    checkpoints: tuple[str, ...]  # commit / checkpoint patterns it offers
    worker: str                  # the worker module
    how: str                     # what it does, for messages and the report
    after: str = "restart-group"  # drop-host, restart-group or drop-replica (world_after)
    package: str = ""            # a Python package it needs beyond its backend (torchft)
    tools: tuple[str, ...] = ()  # executables it needs beside the interpreter
    install: str = ""            # how to get them, for the skip reason

    @property
    def backends(self) -> tuple[str, ...]:
        """The project's backends that train under it (their catalog rows say so)."""
        return tuple(n for n in catalog.NAMES if self.name in catalog.get(n).elastic)

    @property
    def per_step(self) -> bool:
        """Fault tolerance per step (torchft): no commit to roll back to, no step lost."""
        return self.checkpoints == ("live",)

    def available(self):
        """Can this path run here beyond its backend and launcher (its package and tools
        installed: torchft and its lighthouse)?"""
        import importlib.util
        import shutil
        import sys

        from hvd_vs_ddp.common.availability import Availability

        missing = [self.package] if self.package and \
            importlib.util.find_spec(self.package) is None else []
        missing += [t for t in self.tools if not (Path(sys.executable).parent / t).exists()
                    and not shutil.which(t)]
        if not missing:
            return Availability(True)
        return Availability(False, f"{', '.join(missing)} not installed ({self.install})")

    def world_after(self, world: int, victim_slots: int, min_world: int = 1) -> int:
        """The fewest workers that go on after the victim's worker dies: Horovod Elastic
        blacklists the victim's host (its every worker leaves); torchft goes on without
        the dead replica (one worker) until its agent has restarted it and it has healed
        from a live peer; torchrun restarts the whole group with the agents that join
        the next rendezvous round: usually all, but where `--nnodes MIN:MAX` lets the
        survivors go on alone (min_world fits on them), a victim's agent that joins late
        is left out (measured: its restarted worker aborted while the survivor's agent
        had already re-formed the group without it, which finished at 1 of 2 ranks)."""
        survivors = world - victim_slots
        if self.after == "drop-host":
            return survivors
        if self.after == "drop-replica":
            return world - 1
        return survivors if survivors >= min_world else world


PATHS: dict[str, ElasticPath] = {p.name: p for p in (
    ElasticPath("horovod-elastic", catalog.HOROVOD_LIB, "horovodrun-gloo", ("memory",),
                "hvd_vs_ddp.recovery.horovod_worker",
                "horovodrun --min-np/--max-np --host-discovery-script; hvd.elastic.run "
                "rolls the survivors back to the last TorchState.commit (in memory)",
                after="drop-host"),
    ElasticPath("torchrun-elastic", "torch", "torchrun", ("torch-save", "dcp"),
                "hvd_vs_ddp.recovery.torchrun_worker",
                "torchrun --nnodes MIN:MAX --max-restarts with c10d rendezvous restarts the "
                "whole worker group, which resumes from the last checkpoint"),
    ElasticPath("torchft", "torchft", "torchrun", ("live",),
                "hvd_vs_ddp.recovery.torchft_worker",
                "torchft 0.2: one replica group per worker (its own torchrun agent, "
                "--max-restarts) under a lighthouse quorum; the others go on at the next "
                "step, the restarted replica heals from a live peer (no checkpoint)",
                after="drop-replica", package="torchft", tools=("torchft_lighthouse",),
                install="pip install torchft==0.2.0; scripts/setup.sh installs it"),
)}

# Launchers without an elastic path, and why (the refusals name the paths that exist;
# why a backend has none is its catalog row's `no_elastic`).
NO_PATH_LAUNCHERS = {
    "horovodrun-mpi": "Horovod Elastic needs the Gloo controller (horovodrun --gloo); "
                      "under MPI a dead rank ends the job",
    "mpirun": "an MPI job ends when one of its ranks dies",
    "mpiexec": "an MPI job ends when one of its ranks dies",
    "srun": "Slurm ends the step when a task dies (no elastic restart here)",
    "spawn": "torch.multiprocessing.spawn restarts nothing: the parent ends every rank",
    "single": "one process: there is no other worker to go on",
}


def _paths_text() -> str:
    return "; ".join(f"{', '.join(p.backends)} under {p.launcher} ({p.name})"
                     for p in PATHS.values())


def paths_for(backend: str) -> list[ElasticPath]:
    """Every elastic path this backend trains under (the first is path_for's); an
    unknown name is an InputError listing the known backends."""
    return [PATHS[name] for name in catalog.get(backend).elastic]


def path_for(backend: str, launcher: str | None = None) -> ElasticPath:
    """The elastic path of this backend (under this launcher), or one InputError."""
    if launcher is not None and launcher in NO_PATH_LAUNCHERS:
        raise InputError(f"recovery: launcher {launcher} has no elastic path "
                         f"({NO_PATH_LAUNCHERS[launcher]}); elastic paths: {_paths_text()}")
    for p in paths_for(backend):
        if launcher is not None and launcher != p.launcher:
            raise InputError(f"recovery: {backend} recovers under {p.launcher} "
                             f"({p.name}), not {launcher}")
        return p
    raise InputError(f"recovery: backend {backend} has no elastic path "
                     f"({catalog.get(backend).no_elastic}); elastic paths: {_paths_text()}")


def hosts_for(world: int) -> list[tuple[str, int]]:
    """The two hosts and their slots: localhost gets the larger half."""
    first = (world + 1) // 2
    return [(HOSTS[0], first), (HOSTS[1], world - first)]


def gpu_refusal(world: int, gpus: int) -> str | None:
    """Why a trial of `world` ranks cannot train on this machine's `gpus` GPUs (its two
    "hosts" are this machine: one GPU per rank, none shared), or None."""
    if gpus < 1 or world <= gpus:
        return None
    return (f"recovery at world size {world}: its two hosts ({', '.join(HOSTS)}) are this "
            f"machine, with {gpus} GPU(s); one GPU per rank needs {world} "
            "(CUDA_VISIBLE_DEVICES= trains on the CPU)")


def default_kill_step(steps: int, every: int) -> int:
    """The middle of the plan, half-way between two commits (never on one)."""
    base = every * max(0, (steps // 2) // every)
    return min(steps - 1, max(1, base + max(1, every // 2)))


@dataclass(frozen=True)
class Plan:
    """One trial's plan; `check()` refuses what cannot run, in one line."""

    path: str
    checkpoint: str              # one of the path's patterns, or "none" (no commits)
    backend: str
    world_size: int              # ranks at the start (the maximum)
    global_batch: int            # samples per step, all ranks; constant when the world shrinks
    min_world: int = 1           # fewest ranks the job may go on with
    steps: int = 40
    commit_every: int = 10       # k: a commit or checkpoint every k steps
    kill_step: int | None = None  # SIGKILL a worker once it completed this step; None: no kill
    workload: str = "mlp"
    workload_params: dict[str, Any] = field(default_factory=dict)
    event_dir: str = ""
    timeout_s: float = 30.0      # bound on every collective (Horovod: its Gloo timeout)

    @property
    def elastic(self) -> ElasticPath:
        return PATHS[self.path]

    @property
    def commits(self) -> bool:
        return self.checkpoint != NO_COMMIT

    def hosts(self) -> list[tuple[str, int]]:
        return hosts_for(self.world_size)

    @property
    def victim_host(self) -> str:
        return HOSTS[1]

    def gpu_split(self, gpus: int) -> dict[str, str]:
        """The environment that gives each "host" its own of this machine's `gpus` GPUs
        (every launcher of the trial gets it); {} without GPUs. InputError: too few."""
        if gpus < 1:
            return {}
        why = gpu_refusal(self.world_size, gpus)
        if why:
            raise InputError(why)
        return {placement.HOST_GPUS_ENV: placement.split_hosts(self.hosts(), gpus)}

    def world_after(self) -> int:
        return self.elastic.world_after(self.world_size, dict(self.hosts())[self.victim_host],
                                        self.min_world)

    def check(self) -> "Plan":
        if self.path not in PATHS:
            raise InputError(f"recovery: unknown elastic path {self.path!r}; known: "
                             f"{', '.join(PATHS)}")
        p = self.elastic
        if self.backend not in p.backends:
            path_for(self.backend, p.launcher)  # no path at all, or another launcher's
            raise InputError(f"recovery: {self.path} trains {', '.join(p.backends)}, not "
                             f"{self.backend}")
        if self.checkpoint not in (*p.checkpoints, NO_COMMIT):
            raise InputError(f"recovery: {self.path} has no checkpoint pattern "
                             f"{self.checkpoint!r}; it has {', '.join(p.checkpoints)}")
        if self.commit_every < 1:
            raise InputError(f"recovery: a commit every {self.commit_every} steps; k must be "
                             ">= 1 (--recovery-commit-every)")
        if self.world_size < 2:
            raise InputError(f"recovery: world size {self.world_size}; a recovery trial needs "
                             "at least 2 ranks (one to kill, one to go on)")
        if not 1 <= self.min_world <= self.world_size:
            raise InputError(f"recovery: min world {self.min_world} must lie in 1..max "
                             f"{self.world_size} (--recovery-min-world above "
                             "--recovery-world-size)")
        if self.steps < 2:
            raise InputError(f"recovery: {self.steps} steps; a plan needs at least 2")
        if self.kill_step is not None and not 1 <= self.kill_step < self.steps:
            raise InputError(f"recovery: kill step {self.kill_step} lies outside "
                             f"1..{self.steps - 1} (the plan's steps, the last excluded)")
        self._check_measurable(p)
        after = self.world_after()
        if after < self.min_world:
            raise InputError(f"recovery: losing host {self.victim_host} leaves {after} of "
                             f"{self.world_size} ranks under {self.path}, below min world "
                             f"{self.min_world}; lower --recovery-min-world")
        for w in {self.world_size, after}:
            if self.global_batch % w:
                raise InputError(f"recovery: global batch {self.global_batch} does not split "
                                 f"evenly over {w} ranks; choose a batch divisible by "
                                 f"{self.world_size} and {after}")
        return self

    def _check_measurable(self, p: ElasticPath) -> None:
        """A plan that commits and kills must commit before the kill: else its trial
        measures a recovery from no commit at all (the checkpoint pattern named, never
        used). A worker commits after step s when s % k == 0 and s < steps, and the kill
        comes right after its step, before that step's commit."""
        if not self.commits or p.per_step or self.kill_step is None:
            return
        k, steps, kill = self.commit_every, self.steps, self.kill_step
        if k >= steps:
            raise InputError(f"recovery: a commit every {k} steps never comes within the "
                             f"plan's {steps} steps (commits fall on steps below {steps}), so "
                             f"the kill at step {kill} would recover from no commit at all; "
                             f"choose --recovery-commit-every below {kill} (e.g. "
                             f"{max(1, kill // 2)}) or --recovery-steps above {k + 1}")
        if kill <= k:
            raise InputError(f"recovery: the kill at step {kill} comes before the first "
                             f"commit (after step {k}), so the trial would recover from no "
                             f"commit at all; choose --recovery-kill-step above {k} (below "
                             f"{steps}) or --recovery-commit-every below {kill}")

    def replace(self, **changes: Any) -> "Plan":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: Path, owner: Path | None = None) -> Path:
        """plan.json through the output gate (hvd_vs_ddp/common/outputs.py), marked as a
        recovery plan: it may replace only an earlier trial's (inside a run directory
        only for that run, `owner`)."""
        from hvd_vs_ddp.common import output_formats
        from hvd_vs_ddp.common.run_folder import write_output

        write_output(path, output_formats.RECOVERY_PLAN,
                     {"format": output_formats.RECOVERY_PLAN, **self.to_dict()}, owner)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Plan":
        doc = json.loads(Path(path).read_text())
        doc.pop("format", None)  # the output gate's marker (absent before it)
        return cls(**doc)


if __name__ == "__main__":
    for p in PATHS.values():
        print(f"{p.name:17s} {'/'.join(p.backends):18s} {p.launcher:16s} "
              f"{','.join(p.checkpoints):15s} {p.how}")
    for name in catalog.NAMES:
        if catalog.get(name).no_elastic:
            print(f"{'no elastic path':17s} {name:18s} {catalog.get(name).no_elastic}")
    for name, why in NO_PATH_LAUNCHERS.items():
        print(f"{'no elastic path':17s} {name:18s} {why}")
