"""The comparison matrix: which cells a preset runs, each with its proper launcher.

A cell (cli/cell.py) is one pytest run of the suites for one backend, under one launcher,
at one world size (the presets: cli/presets.py; a cell's command line:
cli/cell_command.py). Horovod runs under horovodrun (Gloo and MPI controllers are two
cells), ddp-gloo under torchrun, ddp-mpi under mpirun, baselines in one process. The
compute-only reference (for exposed communication) is its own cell per world size above 1
(at one rank nothing is communicated, so nothing is exposed). On a machine without GPUs a
preset leaves out `dp` (DataParallel there is the single process itself) and `ddp-nccl`;
asked for by name, they run or fail clearly.
The quick preset runs only `single` at one rank (the reference for scaling and
convergence); the full preset runs every backend there too (framework overhead
without communication).
Each Horovod cell at 2 or more ranks (of the first knob set) gets an
instrumented twin (`<cell>-timeline`, suite `timeline`): the throughput test once
more, a few rounds, with Horovod's timeline on (hvd_vs_ddp/harness/horovod_timeline.py says why
never in the timed cell); a preset with `timeline=False` leaves them out. So does each
Horovod cell of a knob set that compiles (the compile preset: overlap under compile).
A knob set whose compile mode a backend cannot honour gets no cell for it
(hvd_vs_ddp/backends/compile_support.py); where this torch cannot compile at all, or a
backend asked for by name is left with no cell by it, the preset is refused with the
reason (one line). Every cell is judged once, as it is laid out (`judged`: each cell's
verdict, hvd_vs_ddp/harness/cell_verdict.py); what is left out or refused follows from
the verdicts, and the run request and the runner only read them.
The input mode is an axis (`run --input device,memory,jpeg`, Preset.inputs;
hvd_vs_ddp/workloads/feed.py): each throughput and compute-only cell is run once per input
mode; a cell of another mode than the default ("device") runs the throughput (or compute)
suite only, with `--input MODE`, and its id ends "-MODE" (the default's cells keep their
ids, their other suites and their timeline twins; without the default those keep only the
suites that do not time steps).

The link is an axis too (`run --emulate-hosts 2 --link-rate loopback,1gbit`,
Preset.links; hvd_vs_ddp/links/): each throughput cell of a distributed backend at 2
ranks under a launcher that crosses hosts (LINK_LAUNCHERS) is run once per link, loopback
being the cell as it is and a rate the same cell across two emulated hosts, throughput
only, its id ending "-link<rate>" (`with_links`).

    python -m hvd_vs_ddp.cli.matrix quick      # lists the cells of a preset
"""
from __future__ import annotations

import dataclasses
import glob
import re
import sys
from typing import Iterable

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.backends.launchers import ONE_PROCESS, matrix_launchers
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.cli.presets import AUTOTUNE_WARMUP_STEPS, DEFAULT_INPUT, Preset, preset
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.harness import cell_verdict
from hvd_vs_ddp.harness.cell_verdict import (  # noqa: F401 (gpu_refusal: the rule, re-exported)
    COMPUTE_ONLY,
    KNOB,
    MISSING,
    NO_GPUS,
    Verdict,
    gpu_refusal,
    orchestrates,
)
from hvd_vs_ddp.harness.knobs import SETS, KnobSet, by_name
from hvd_vs_ddp.harness.options import SuiteOptions
from hvd_vs_ddp.links.rates import LOOPBACK, emulated

BASELINES = tuple(catalog.names(distributed=False))  # one process: world size 1 only


class MatrixError(InputError):
    pass


# A Linux machine with none of these device nodes has no GPU torch can see (NVIDIA, ROCm's
# /dev/kfd, WSL's /dev/dxg): there the cells are planned, and bad input refused, without
# importing torch (~2.5 CPU-s).
GPU_DEVICE_NODES = ("/dev/nvidia[0-9]*", "/dev/kfd", "/dev/dxg")


def _gpus() -> int:
    if sys.platform.startswith("linux") and not any(glob.glob(g) for g in GPU_DEVICE_NODES):
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _knob_sets(preset: Preset, gpus: int) -> list[KnobSet]:
    return [k for k in SETS[preset.knob_set] if gpus or not k.gpu_only]


def cells(preset: Preset, backends: list[str] | None = None,
          world_sizes: list[int] | None = None, hosts: str | None = None) -> list[Cell]:
    """The preset's cells; `hosts` (--hosts): where launchers that take hosts place their
    ranks, so that a GPU cell is judged by the ranks each host gets (see `judged`)."""
    return [cell for cell, _ in judged(preset, backends, world_sizes, hosts)]


def judged(preset: Preset, backends: list[str] | None = None,
           world_sizes: list[int] | None = None, hosts: str | None = None
           ) -> list[tuple[Cell, Verdict]]:
    """The preset's cells, each with its one verdict (hvd_vs_ddp/harness/cell_verdict.py,
    asked once per cell here and nowhere else). A cell whose verdict refuses it is left
    out (a preset goes as far as this machine: no GPU, GPUs shared, a knob set the backend
    cannot honour), or, for a backend asked for by name, refused in one line; a cell whose
    backend or launcher is missing here is kept with its verdict (the run request leaves
    it out with a note, or refuses it)."""
    gpus = _gpus()
    sets = _knob_sets(preset, gpus)
    where = cell_verdict.here(gpus, hosts, (k.compile for k in sets))
    for k in sets:  # a compile mode this torch cannot run at all
        if k.compile in where.uncompilable:
            raise MatrixError(f"knob set {k.name}: compile mode {k.compile} refused: "
                              f"{where.uncompilable[k.compile]}")
    out: list[tuple[Cell, Verdict]] = []
    refused: dict[str, str] = {}  # backend -> why it refused a knob set (options, compile)
    for cell, per_library in _layout(preset, backends, world_sizes, where.gpus):
        verdict = cell_verdict.judge_cell(cell, where)
        if verdict.not_for_preset and not backends:
            continue  # a preset goes as far as this machine (asked for by name: it runs)
        named = cell.backend in (backends or ())
        if verdict.kind == NO_GPUS and (named or orchestrates(cell)):
            raise MatrixError(verdict.why)  # asked for by name: never left out silently
        if verdict.kind == KNOB and not per_library:
            refused.setdefault(cell.backend, f"knob set {cell.knob_set}: {verdict.why}")
        if verdict or verdict.kind == MISSING:
            out.append((cell, verdict))
    for b in backends or ():
        if refused.get(b) and not any(c.backend == b for c, _ in out):
            raise MatrixError(f"--backends {b}: {refused[b]}")
    return out


def judge_again(cells: Iterable[Cell], preset: Preset, hosts: str | None = None
                ) -> dict[str, Verdict]:
    """A resumed run's cells, as its manifest keeps them, each judged once on this machine
    as it is now: their plans' verdicts (the cells run whatever the rest says, as they
    were laid out)."""
    where = cell_verdict.here(_gpus(), hosts, ())
    return {c.id: cell_verdict.judge_cell(c, where) for c in cells}


def laid_out(preset: Preset, backends: list[str] | None = None,
             world_sizes: list[int] | None = None) -> list[Cell]:
    """The cells the preset and the choices give, none judged yet (whether a backend asked
    for by name gets a cell at all is known before any backend is imported)."""
    return [c for c, _ in _layout(preset, backends, world_sizes, _gpus())]


def _layout(preset: Preset, backends: list[str] | None, world_sizes: list[int] | None,
            gpus: int) -> Iterable[tuple[Cell, bool]]:
    """Every cell the preset and the choices give, before any is judged, in the matrix's
    order, each once per input mode (`with_inputs`), each with whether its knob set is
    one library's own (a refusal of those is not a reason to refuse a backend asked for
    by name)."""
    for cell, per_library in _structure(preset, backends, world_sizes, gpus):
        yield from ((c, per_library) for c in with_links(with_inputs([cell], preset.inputs),
                                                         preset.links))


def _structure(preset: Preset, backends: list[str] | None, world_sizes: list[int] | None,
               gpus: int) -> Iterable[tuple[Cell, bool]]:
    chosen = tuple(backends or preset.backends)
    sizes = tuple(world_sizes or preset.world_sizes)
    train_suites = tuple(s for s in preset.suites if s != "compute")
    # Horovod fixes its fusion threshold at init, so each knob set of a multi-set
    # preset is its own process (cell); convergence and collectives run once.
    knob_sets = _knob_sets(preset, gpus)
    knob_names = [k.name for k in knob_sets]
    comm_only = {k.name for k in knob_sets if k.communicates}
    per_library = {k.name for k in knob_sets if k.side != "both"}
    workloads = preset.workloads
    if len(knob_names) > 1 and "throughput" in train_suites:
        rest = tuple(s for s in train_suites if s != "throughput")
        groups = [(("throughput",) + (rest if k == "default" else ()), k) for k in knob_names]
    else:
        groups = [(train_suites, knob_names[0])]
    if "recovery" in preset.suites:
        yield from ((c, False) for c in recovery_cells(preset, chosen, sizes))
        return
    for n in sizes:
        if n < 1:
            raise MatrixError(f"world size must be >= 1, got {n}")
        for backend in chosen:
            caps = catalog.get(backend)
            if n == 1 and not (preset.all_at_one or backends or backend in BASELINES):
                continue  # the quick preset: only the reference at one rank
            launchers_ = (ONE_PROCESS,) if n == 1 else () if backend in BASELINES \
                else matrix_launchers(backend, caps.requires, caps.launchers)
            if backends and preset.launchers and n > 1 and launchers_ \
                    and not set(launchers_) & set(preset.launchers):
                raise MatrixError(  # asked for by name: never left out without a word
                    f"--backends {backend}: no cell at world size {n} under --launchers "
                    f"{','.join(preset.launchers)} ({backend} runs under "
                    f"{', '.join(launchers_)})")
            for launcher in (la for la in launchers_ if la not in preset.without_launchers):
                if preset.launchers and n > 1 and launcher not in preset.launchers:
                    continue
                for suites, knob in groups:
                    if backend in BASELINES and knob in comm_only:
                        continue  # one process: nothing to compress or bucket
                    if knob in per_library:
                        yield from ((c, True) for c in tuning_cells(
                            backend, launcher, n, suites, by_name(knob), workloads))
                        continue
                    yield Cell(backend, launcher, n, suites, knob_set=knob), False
                    if "timeline" in caps.instruments and n > 1 and preset.timeline \
                            and "throughput" in suites and (
                                knob == knob_names[0] or by_name(knob).compile != "eager"):
                        yield Cell(backend, launcher, n, ("timeline",), knob_set=knob), False
        if "compute" in preset.suites and n > 1:  # its ranks share no GPU either
            for knob in (k for k in knob_names if k not in comm_only):
                yield Cell(COMPUTE_ONLY, "torchrun", n, ("compute",), knob_set=knob), False


def with_inputs(cells: list[Cell], inputs: tuple[str, ...]) -> list[Cell]:
    """Each timed cell (throughput, compute-only) once per input mode; see the module
    docstring. Cells of one mode follow each other in the order of `inputs`."""
    if tuple(inputs) == (DEFAULT_INPUT,):
        return cells
    out: list[Cell] = []
    for cell in cells:
        timed = [s for s in cell.suites if s in ("throughput", "compute")]
        if not timed or "timeline" in cell.suites:  # twins, convergence, collectives...
            if DEFAULT_INPUT in inputs or "timeline" not in cell.suites:
                out.append(cell)
            continue
        for mode in inputs:
            if mode == DEFAULT_INPUT:
                out.append(cell)
            else:
                out.append(Cell(cell.backend, cell.launcher, cell.world_size, tuple(timed),
                                cell.pytest_args, cell.knob_set, cell.workload, mode))
        rest = tuple(s for s in cell.suites if s not in timed)
        if DEFAULT_INPUT not in inputs and rest:  # what does not time steps still runs once
            out.append(Cell(cell.backend, cell.launcher, cell.world_size, rest,
                            cell.pytest_args, cell.knob_set, cell.workload))
    return out


# Launchers whose cells cross emulated hosts (hvd_vs_ddp/cli/link_launch.py starts them):
# one torchrun per host; horovodrun and mpirun on the first host, reaching the other
# through an ssh stand-in.
LINK_LAUNCHERS = ("torchrun", "horovodrun-gloo", "horovodrun-mpi", "mpirun")
EMULATED_HOSTS = 2  # one rank per host; one veth pair joins two


def with_links(cells: list[Cell], links: tuple[str, ...]) -> list[Cell]:
    """Each timed cell of a distributed backend at 2 ranks once per link:
    loopback is the cell as it is; a rate is the same cell, its throughput suite only,
    across two emulated hosts joined by a link of that rate (`-link<rate>` ends its id).
    Its compute-only reference, timeline twin and untimed suites stay on one host (the
    compute of a step does not depend on the link)."""
    if not [k for k in links if emulated(k)]:
        return cells
    out: list[Cell] = []
    for cell in cells:
        spread = (cell.world_size == EMULATED_HOSTS and "throughput" in cell.suites
                  and "timeline" not in cell.suites and cell.launcher in LINK_LAUNCHERS
                  and cell.backend not in (COMPUTE_ONLY, *BASELINES)
                  and catalog.get(cell.backend).distributed)
        if not spread:
            out.append(cell)
            continue
        for link in links:
            if not emulated(link):
                out.append(cell)
            else:
                out.append(dataclasses.replace(cell, suites=("throughput",), link=link,
                                               pytest_args=_linked_args(cell, link)))
        if LOOPBACK not in links and [s for s in cell.suites if s != "throughput"]:
            out.append(dataclasses.replace(  # what does not time steps still runs once
                cell, suites=tuple(s for s in cell.suites if s != "throughput")))
    return out


def _linked_args(cell: Cell, link: str) -> tuple[str, ...]:
    """The cell's own arguments across `link`: an autotuned cell reads the autotune cell
    of the same link (Horovod tunes for the wire it runs over)."""
    args = list(cell.pytest_args)
    if "--horovod-autotuned-from" in args:
        i = args.index("--horovod-autotuned-from") + 1
        args[i] = f"{args[i]}-link{link}"
    return tuple(args)


def recovery_cells(preset: Preset, backends: tuple[str, ...],
                   sizes: tuple[int, ...]) -> list[Cell]:
    """One cell per backend with an elastic path and world size >= 2, under that path's
    launcher; a backend or launcher without one is refused (hvd_vs_ddp/recovery/plan.py)."""
    from hvd_vs_ddp.recovery.plan import path_for

    if not any(n >= 2 for n in sizes):
        raise MatrixError(f"recovery at world size {','.join(map(str, sizes))}: a recovery "
                          "needs at least 2 ranks (one to kill, one to go on)")
    out = []
    for backend in backends:
        path = path_for(backend)  # InputError: no elastic path, and which exist
        if preset.launchers and path.launcher not in preset.launchers:
            path_for(backend, next(iter(preset.launchers)))  # says why not there
        for n in (n for n in sizes if n >= 2):  # workers sharing GPUs: its verdict
            out.append(Cell(backend, path.launcher, n, preset.suites))
    return out


def check_recovery(cells: Iterable[Cell], opts: SuiteOptions) -> None:
    """Refuse up front (InputError) a recovery plan that some cell could not run: the
    options checked against each cell's world size and each of its elastic paths."""
    from hvd_vs_ddp.recovery.plan import Plan, default_kill_step, paths_for

    for cell in (c for c in cells if "recovery" in c.suites):
        for path in paths_for(cell.backend):
            Plan(path=path.name, checkpoint=path.checkpoints[0], backend=cell.backend,
                 world_size=cell.world_size, min_world=opts.recovery_min_world,
                 steps=opts.recovery_steps, commit_every=opts.recovery_commit_every,
                 kill_step=opts.recovery_kill_step or default_kill_step(
                     opts.recovery_steps, opts.recovery_commit_every),
                 global_batch=opts.recovery_global_batch).check()


def tuning_cells(backend: str, launcher: str, n: int, suites: tuple[str, ...],
                 knob: KnobSet, workloads: tuple[str, ...]) -> list[Cell]:
    """A library's own knob set: only for that library's backends; Horovod autotune is
    one cell per workload (Horovod reads it once per process), each followed by the
    autotuned cell that reads what it chose, and the hierarchical set needs > 1 host.
    (A set the backend cannot honour, PowerSGD over Gloo, gets no cell: its verdict.)"""
    if not knob.applies_to(backend) or knob.hierarchical:
        return []
    if not (knob.autotune or knob.autotuned):
        return [Cell(backend, launcher, n, suites, knob_set=knob.name)]
    out = []
    for w in workloads:
        source = Cell(backend, launcher, n, suites, knob_set="hvd-autotune", workload=w)
        args = ("--horovod-autotuned-from", source.id) if knob.autotuned \
            else ("--warmup-steps", str(AUTOTUNE_WARMUP_STEPS))
        out.append(Cell(backend, launcher, n, suites, args, knob.name, w))
    return out


_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # judged whole: fullmatch


MAX_NAME = 200  # a folder name; file systems allow 255 bytes (NAME_MAX), with room left


def check_name(name: str) -> str:
    if not _SAFE.fullmatch(name) or name in (".", ".."):
        raise MatrixError(f"run name {name!r} must be letters, digits, '.', '_' or '-' "
                          "(no path separators)")
    if len(name) > MAX_NAME:
        raise MatrixError(f"run name {name[:20]}... is {len(name)} characters long; at most "
                          f"{MAX_NAME} (it names a folder)")
    return name


if __name__ == "__main__":
    for c in cells(preset(sys.argv[1] if len(sys.argv) > 1 else "quick")):
        print(f"{c.id:32s} suites={','.join(c.suites)}")
