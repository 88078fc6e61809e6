"""Can this cell run here, and if not, why: a cell's one judgement in the parent.

`judge_cell(cell, here)` is asked once per cell, when `hvd-vs-ddp run` lays out its
matrix (hvd_vs_ddp/cli/matrix.py `judged`, called by the run request), and nowhere else:
the matrix, the run request and the runner read its `Verdict` afterwards, and the cell's
plan (hvd_vs_ddp/harness/cell_plan.py) is built from it without judging again. It asks,
in this order, each part once:

1. `not_for_preset`: does a preset run this backend here? (a GPU backend needs a GPU,
   and DataParallel without GPUs is the single process itself); asked for by name it
   runs, so the other parts are asked all the same;
2. `NO_GPUS`: the one-GPU-per-rank rule (backends/placement.py), every host taken to have
   this host's GPU count; a recovery trial's two "hosts" are this machine
   (hvd_vs_ddp/recovery/plan.py `gpu_refusal`);
3. `KNOB`: the backend honours the knob set's options and compile mode (Backend.judge,
   installed or not);
4. `MISSING`: the backend is installed here (Backend.judge) and its launcher can be
   started here (backends/launchers.py);

and, for a cell that may run, the plan's verdicts (`cell_plan.judge_backends`: the backend under
its launch, each knob set, the recovery suite's elastic paths). What a refusal means is
the caller's rule: a preset leaves out a cell `not_for_preset` or NO_GPUS without a
word, and a MISSING one with a note; asked for by name, each is refused in one line.

    python -m hvd_vs_ddp.harness.cell_verdict ddp-gloo torchrun 2     # one cell's verdict
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Protocol

from hvd_vs_ddp.backends import catalog, compile_support, launchers, registry
from hvd_vs_ddp.backends.env import LauncherEnv
from hvd_vs_ddp.backends.launchers import ONE_HOST_LAUNCHERS
from hvd_vs_ddp.harness import cell_plan
from hvd_vs_ddp.harness.knobs import by_name

COMPUTE_ONLY = "compute-only"  # the pseudo-backend of the compute-only reference cell
# Suites that start their own job: the runner runs them in one process ("single"), while
# the cell names the job they start (hvd_vs_ddp/recovery/: an elastic job, killed).
ORCHESTRATING = ("recovery",)

RUNS = ""
NO_GPUS = "no-gpus"
KNOB = "knob"
MISSING = "missing"


class CellLike(Protocol):  # hvd_vs_ddp/cli/cell.py's Cell (frozen: read-only here)
    @property
    def backend(self) -> str: ...
    @property
    def launcher(self) -> str: ...
    @property
    def world_size(self) -> int: ...
    @property
    def suites(self) -> tuple[str, ...]: ...
    @property
    def knob_set(self) -> str: ...
    @property
    def id(self) -> str: ...


@dataclass(frozen=True)
class Here:
    """The machine a run is laid out on: GPUs per host, --hosts, and why this torch
    cannot compile in each compile mode it cannot (`uncompilable`, see `here`)."""

    gpus: int = 0
    hosts: str | None = None
    uncompilable: Mapping[str, str] = field(default_factory=dict)


def here(gpus: int, hosts: str | None, modes: Iterable[str]) -> Here:
    """This machine, with whether this torch compiles in each of `modes` (the knob sets'
    compile modes), asked once per run: a compile mode it cannot run at all refuses the
    whole preset (the matrix says so before any cell), whichever cells would use it."""
    unable: dict[str, str] = {}
    for mode in dict.fromkeys(modes):
        why = compile_support.torch_refusal(mode, bool(gpus))
        if why:
            unable[mode] = why
    return Here(gpus, hosts, unable)


@dataclass(frozen=True)
class Verdict:
    """One cell, judged: `kind` (RUNS, or what stops it) and `why` (one line); `judged`:
    its plan's verdicts (cell_plan.Judged); `not_for_preset`: why a preset leaves it out
    here although it could run (None: a preset runs it)."""

    kind: str = RUNS
    why: str | None = None
    judged: cell_plan.Judged = field(default_factory=cell_plan.Judged)
    not_for_preset: str | None = None

    def __bool__(self) -> bool:
        return self.kind == RUNS


def orchestrates(cell: CellLike) -> bool:
    """The cell's suites start their own job (the runner starts one process)."""
    return any(s in ORCHESTRATING for s in cell.suites)


# -- the rules the verdict is made of ---------------------------------------
def _not_for_preset(backend: str, gpus: int) -> str | None:
    """Why a preset does not run this backend on this machine: a GPU backend needs a GPU,
    and DataParallel without two GPUs is the single process itself."""
    caps = catalog.get(backend)
    if gpus > 0:
        return None
    if caps.needs_gpu:
        return f"{backend} needs a GPU; none visible"
    if caps.single_without_gpus:
        return f"{backend} without GPUs is the single process itself"
    return None


def _gpus_short(backend: str, n: int, gpus: int) -> str | None:
    """NCCL underneath needs a GPU per rank: on a machine without GPUs, a backend that
    needs them cannot start more than one rank."""
    if gpus == 0 and catalog.get(backend).needs_gpu and n > 1:
        return (f"{backend} at world size {n} needs {n} GPUs on this host; {gpus} visible "
                "(use --hosts for more machines)")
    return None


def ranks_per_host(launcher: str, n: int, hosts: str | None) -> int:
    """The most ranks one host gets when `launcher` starts `n` over `hosts` (filled in
    order, as backends/placement.py plans it); all `n` on this host without --hosts."""
    if not hosts or launcher in ONE_HOST_LAUNCHERS:
        return n
    from hvd_vs_ddp.backends import placement

    try:
        return max(p.local_size for p in placement.plan(launchers.parse_hosts(hosts), n, 0,
                                                        on_gpu=False))
    except placement.PlacementError:
        return n  # fewer slots than ranks: the run request refuses that (its --hosts check)


def gpu_refusal(backend: str, launcher: str, n: int, gpus: int,
                hosts: str | None = None) -> str | None:
    """Why a cell would put two ranks on one GPU (every host taken to have this host's
    GPU count): on a GPU machine every rank trains on a GPU of its own, whatever the
    transport (NCCL refuses a shared GPU; Gloo and MPI would share its time and energy);
    None where it fits, or where it runs on the CPU (no GPU here)."""
    caps = catalog.get(backend) if backend != COMPUTE_ONLY else None
    if gpus < 1 or n < 2 or (caps is not None and not caps.distributed):
        return None
    per_host = ranks_per_host(launcher, n, hosts)
    if per_host <= gpus:
        return None
    where = "on this host" if per_host == n else f"on one of {hosts}"
    more = "" if hosts and launcher not in ONE_HOST_LAUNCHERS else \
        " (use --hosts for more machines)" if launcher not in ONE_HOST_LAUNCHERS else \
        f" ({launcher} starts every rank on this host)"
    return (f"{backend} at world size {n} needs {per_host} GPUs {where}; {gpus} visible: "
            f"one GPU per rank{more}")


def _recovery_gpus(cell: CellLike, gpus: int) -> str | None:
    """A recovery trial's workers on this machine's GPUs (torchft trains on the CPU)."""
    from hvd_vs_ddp.recovery.plan import gpu_refusal as trial_refusal
    from hvd_vs_ddp.recovery.plan import path_for

    if path_for(cell.backend).per_step:
        return None
    why = trial_refusal(cell.world_size, gpus)
    return f"{cell.backend}: {why}" if why else None


def launch_of(cell: CellLike, hosts: str | None) -> LauncherEnv | None:
    """How the cell's backend is started: its launcher at its world size (the ranks one
    host gets, as placed over `hosts`); None for a cell that starts its own job."""
    if orchestrates(cell):
        return None
    per_host = ranks_per_host(cell.launcher, cell.world_size, hosts)
    return LauncherEnv(cell.launcher, 0, cell.world_size, 0, per_host, 0)


# -- the one judgement ------------------------------------------------------
def judge_cell(cell: CellLike, here: Here) -> Verdict:
    """Whether `cell` can run on `here`, and if not, what stops it, with its plan's
    verdicts (judged whatever the rest says: a resumed run keeps its cells as they were
    laid out): see the module docstring (each part asked once, in its order)."""
    real = cell.backend != COMPUTE_ONLY
    kind, why = _stops(cell, here, real)
    judged = cell_plan.judge_backends((cell.backend if real else catalog.reference(),),
                                      launch_of(cell, here.hosts), (by_name(cell.knob_set),),
                                      recovers="recovery" in cell.suites)
    return Verdict(kind, why, judged,
                   _not_for_preset(cell.backend, here.gpus) if real else None)


def _stops(cell: CellLike, here: Here, real: bool) -> tuple[str, str | None]:
    backend, n = cell.backend, cell.world_size
    knob = by_name(cell.knob_set)
    if orchestrates(cell):
        why = _recovery_gpus(cell, here.gpus)
    else:
        why = (_gpus_short(backend, n, here.gpus) if real else None) or gpu_refusal(
            backend, cell.launcher, n, here.gpus, here.hosts)
    if why:
        return NO_GPUS, why
    if real and not orchestrates(cell):
        said = registry.judge(backend, None, knob.backend_options(), knob.compile,
                              installed=False)
        if not said:
            return KNOB, said.reason
    if real:
        avail = registry.judge(backend)
        if not avail:
            return MISSING, f"{backend}: {avail.reason}"
    avail = launchers.available(cell.launcher)
    if not avail:
        return MISSING, f"{cell.id}: {avail.reason}"
    return RUNS, None


if __name__ == "__main__":
    from types import SimpleNamespace

    b, la, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print(judge_cell(SimpleNamespace(backend=b, launcher=la, world_size=size,
                                     suites=("throughput",), knob_set="default",
                                     id=f"{b}-{la}-np{size}"), Here()))
