"""The comparison matrix: which cells a preset runs, each with its proper launcher.

A cell is one pytest run of the suites for one backend, under one launcher, at
one world size. Horovod runs under horovodrun (Gloo and MPI controllers are two
cells), ddp-gloo under torchrun, ddp-mpi under mpirun, baselines in one process.
The compute-only reference (for exposed communication) is its own cell per
world size above 1 (at one rank nothing is communicated, so nothing is exposed).
On a machine without GPUs a preset leaves out `dp` (DataParallel there is the
single process itself) and `ddp-nccl`; asked for by name, they run or fail clearly.
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
The input pipeline is an axis (`run --input memory,jpeg`, Preset.inputs): each throughput
and compute-only cell is run once per input mode; a cell of another mode than "memory"
runs the throughput (or compute) suite only, with `--input MODE`, and its id ends
"-MODE" (the memory cells keep their ids, their other suites and their timeline twins;
without "memory" those keep only the suites that do not time steps).

    python -m hvd_vs_ddp.cli.matrix quick      # lists the cells of a preset
"""
from __future__ import annotations

import glob
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.backends.launchers import ONE_HOST_LAUNCHERS, ONE_PROCESS, matrix_launchers
from hvd_vs_ddp.common.errors import InputError, UnknownName
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.harness import cell_plan, cell_verdict
from hvd_vs_ddp.harness.cell_plan import CellPlan
from hvd_vs_ddp.harness.cell_verdict import (  # noqa: F401 (gpu_refusal: the rule, re-exported)
    COMPUTE_ONLY,
    KNOB,
    MISSING,
    NO_GPUS,
    ORCHESTRATING,
    Verdict,
    gpu_refusal,
    launch_of,
    orchestrates,
    ranks_per_host,
)
from hvd_vs_ddp.harness.knobs import SETS, KnobSet, by_name
from hvd_vs_ddp.harness.options import SUITES, SuiteOptions, split_argv
from hvd_vs_ddp.harness.pytest_args import CELL_PLUGINS
from hvd_vs_ddp.results_schema.kinds.training import INPUT_MODES
from hvd_vs_ddp.workloads.external import slug as workload_slug

MEMORY = INPUT_MODES[0]  # tensors in memory: the suites' default input

BASELINES = tuple(catalog.names(distributed=False))  # one process: world size 1 only


def on_cpu(*libraries: str) -> tuple[str, ...]:
    """The backends of these libraries (catalog.py) that train without a GPU, in the
    catalog's order: a preset names its backends by what they are where it can."""
    return tuple(name for name, row in catalog.CATALOG.items()
                 if row.library in libraries and not row.needs_gpu)
TIMED_SUITES = ("throughput", "compute", "recovery")  # what repetitions 2..N of a cell run


class MatrixError(InputError):
    pass


@dataclass(frozen=True)
class Cell:
    backend: str          # a backend name, or "compute-only"
    launcher: str
    world_size: int
    suites: tuple[str, ...]
    pytest_args: tuple[str, ...] = ()
    knob_set: str = "default"
    workload: str | None = None  # one workload only (Horovod autotune: one per process)
    input: str = MEMORY  # the throughput suite's input pipeline (--input)

    @property
    def id(self) -> str:
        tail = "" if self.knob_set == "default" else f"-{self.knob_set}"
        tail += f"-{workload_slug(self.workload)}" if self.workload else ""
        tail += "" if self.input == MEMORY else f"-{self.input}"
        tail += "-timeline" if "timeline" in self.suites else ""
        tail += "-recovery" if "recovery" in self.suites else ""
        return f"{self.backend}-{self.launcher}-np{self.world_size}{tail}"

    def as_dict(self) -> dict:
        d = asdict(self)
        d["id"] = self.id
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Cell":
        """The cell a manifest entry (as_dict() plus status fields) describes."""
        return cls(d["backend"], d["launcher"], int(d["world_size"]), tuple(d["suites"]),
                   tuple(d.get("pytest_args", ())), d.get("knob_set", "default"),
                   d.get("workload"), d.get("input") or MEMORY)


@dataclass(frozen=True)
class Preset:
    name: str
    backends: tuple[str, ...]
    world_sizes: tuple[int, ...]
    workloads: tuple[str, ...]
    suites: tuple[str, ...]
    knob_set: str = "default"
    options: SuiteOptions = field(default_factory=SuiteOptions)  # the suites' options
    repeat: int = 1       # repetitions per cell (fresh processes), `run --repeat`
    all_at_one: bool = True  # every backend at world size 1, or only the baselines
    timeline: bool = True  # an instrumented Horovod timeline cell per Horovod cell (np >= 2)
    without_launchers: tuple[str, ...] = ()  # launcher rows this preset leaves out
    launchers: tuple[str, ...] = ()  # only these launchers (default: every fitting one)
    inputs: tuple[str, ...] = (MEMORY,)  # input pipelines of the timed cells (run --input)


TIMELINE_ROUNDS = 3  # rounds of an instrumented timeline cell (at most the preset's)
# Untimed steps of an autotune cell: Horovod scores one parameter sample per ~10 steps
# (hvd_vs_ddp/backends/horovod.py AUTOTUNE_BUDGET), so 60 give it its 4 fixed test points and the
# first Bayesian ones; the autotuned cell runs at the best of those (README).
AUTOTUNE_WARMUP_STEPS = 60


PRESETS = {
    # the references and both libraries' backends that run on a CPU (dp: left out there)
    "quick": Preset("quick", on_cpu(catalog.REFERENCE, catalog.DDP, catalog.HOROVOD_LIB),
                    (1, 2),
                    ("resnet50", "gpt"), ("throughput", "compute", "convergence", "collectives"),
                    options=SuiteOptions(rounds=5, steps_per_round=2, max_bytes=16 * 2**20,
                                         collective_ops=("allreduce",)),
                    repeat=3, all_at_one=False, without_launchers=("spawn",)),
    "full": Preset("full", catalog.NAMES,  # every backend (a GPU one left out without GPUs)
                   (1, 2, 4), ("resnet50", "deeplabv3", "gpt", "mlp"),
                   ("throughput", "compute", "convergence", "collectives", "gan"),
                   knob_set="full",
                   options=SuiteOptions(rounds=10, steps_per_round=3,
                                        max_bytes=256 * 2**20), repeat=5),
    # Each library at its best (README "Each at its best"; hvd_vs_ddp/harness/knobs.py TUNE).
    "tune": Preset("tune", ("ddp-gloo", "horovod"), (2,), ("resnet50", "gpt"),
                   ("throughput",), knob_set="tune",
                   options=SuiteOptions(rounds=3, steps_per_round=2, warmup_steps=1,
                                        ddp_sample_rate=0),
                   repeat=2, all_at_one=False, timeline=False,
                   launchers=("torchrun", "horovodrun-gloo")),
    # torch.compile: each library eager and compiled at 1 and 2 ranks (docs/compile.md,
    # where its time is measured); the quick preset's budget has no room for compiles.
    # Warm-up 3: DDP recompiles once at its second step. Profiled steps: overlap's ruler.
    "compile": Preset("compile", ("ddp-gloo", "horovod"), (1, 2), ("gpt", "mlp"),
                      ("throughput", "compute"), knob_set="compile",
                      options=SuiteOptions(rounds=5, steps_per_round=2, warmup_steps=3,
                                           profile_steps=3),
                      repeat=2, launchers=("torchrun", "horovodrun-gloo")),
    # The A/A check (hvd_vs_ddp/reports/aa.py): every CPU backend of both libraries at 1
    # and 2 ranks, three small workloads, 6 interleaved repetitions split into two arms.
    "aa": Preset("aa", on_cpu(catalog.DDP, catalog.HOROVOD_LIB), (1, 2),
                 ("mlp", "gpt", "digits"),
                 ("throughput",), options=SuiteOptions(rounds=5, steps_per_round=2,
                                                       warmup_steps=2, ddp_sample_rate=0),
                 repeat=6, timeline=False, without_launchers=("spawn",)),
    # A worker SIGKILLed mid-training under each elastic path (hvd_vs_ddp/recovery/):
    # Horovod Elastic against torchrun's elastic agent, at 2 and 3 ranks.
    "recovery": Preset("recovery", ("horovod", "ddp-gloo"), (2, 3), ("mlp",), ("recovery",),
                       repeat=3, all_at_one=False, timeline=False),
}


def preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownName("preset", name, PRESETS) from None


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
    where = cell_verdict.here(gpus, hosts, (k.compile for k in _knob_sets(preset, gpus)))
    for k in _knob_sets(preset, gpus):  # a compile mode this torch cannot run at all
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
        yield from ((c, per_library) for c in with_inputs([cell], preset.inputs))


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
    if tuple(inputs) == (MEMORY,):
        return cells
    out: list[Cell] = []
    for cell in cells:
        timed = [s for s in cell.suites if s in ("throughput", "compute")]
        if not timed or "timeline" in cell.suites:  # twins, convergence, collectives...
            if MEMORY in inputs or "timeline" not in cell.suites:
                out.append(cell)
            continue
        for mode in inputs:
            if mode == MEMORY:
                out.append(cell)
            else:
                out.append(Cell(cell.backend, cell.launcher, cell.world_size, tuple(timed),
                                cell.pytest_args, cell.knob_set, cell.workload, mode))
        rest = tuple(s for s in cell.suites if s not in timed)
        if MEMORY not in inputs and rest:  # what does not time steps still runs once
            out.append(Cell(cell.backend, cell.launcher, cell.world_size, rest,
                            cell.pytest_args, cell.knob_set, cell.workload))
    return out


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


def launch_as(cell: Cell) -> tuple[str, int]:
    """The launcher and process count the runner starts the cell's pytest with."""
    if orchestrates(cell):
        return ONE_PROCESS, 1
    return cell.launcher, cell.world_size


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


def cell_options(cell: Cell, preset: Preset, workloads: list[str] | None = None,
                 run_dir: str | None = None) -> SuiteOptions:
    """The suites' options of one cell, built in one step (so each workload spec is
    resolved once): the preset's, the cell's own choices (its backend, knob set,
    workloads, input; a timeline twin's rounds, a compiling set's cache, a recovery
    cell's world size), then the cell's own arguments (--suite-args, autotune), which
    win as they did when they came last on its command line. `run_dir`: the run
    directory the cell writes into (its outputs may go only there:
    hvd_vs_ddp/common/outputs.py; a compiling set's cache lies in it); the runner always
    gives it, and without it (a cell's options looked at, nothing launched) a compiling
    set keeps the preset's cache."""
    given, _rest = split_argv(cell.pytest_args)
    base = preset.options
    changes: dict = {
        "backends": (cell.backend if cell.backend != COMPUTE_ONLY else catalog.reference(),),
        "knob_set": cell.knob_set, "run_dir": run_dir, "input": (cell.input,),
        "workloads": ((cell.workload,) if cell.workload
                      else tuple(workloads or preset.workloads))}
    if "timeline" in cell.suites:
        changes.update(horovod_timeline="auto", rounds=min(TIMELINE_ROUNDS, base.rounds))
    if by_name(cell.knob_set).compile != "eager" and run_dir:  # cold in its first
        # repetition, then warm
        changes["compile_cache"] = str(RunFolder(Path(run_dir)).compile_cache(cell.id))
    if "recovery" in cell.suites:
        changes.update(recovery_world_size=cell.world_size,
                       recovery_workload=cell.workload or changes["workloads"][0])
    return base.replace(**{**changes, **given})


def plan(cell: Cell, opts: SuiteOptions, hosts: str | None = None,
         time_limit_s: float | None = None, verdict: Verdict | None = None) -> CellPlan:
    """The cell's plan (hvd_vs_ddp/harness/cell_plan.py) before its ranks start: its
    verdicts from `verdict` (the cell's one judgement, `judged`: what `hvd-vs-ddp run`
    gives), or judged here from `opts` (its backend under its launcher and world size, a
    cell that starts its own job judged installed only; each knob set's options and
    compile mode); and where each rank runs."""
    from hvd_vs_ddp.backends.launchers import parse_hosts

    spread = parse_hosts(hosts) if hosts and cell.launcher not in ONE_HOST_LAUNCHERS \
        else None
    return cell_plan.build(opts, launch_of(cell, hosts), cell=cell.id,
                           launcher=cell.launcher, world_size=cell.world_size,
                           suites=cell.suites, hosts=spread, gpus=_gpus(),
                           time_limit_s=time_limit_s,
                           judged=verdict.judged if verdict is not None else None)


def pytest_argv(cell: Cell, plan_file: str, json_path: str) -> list[str]:
    """Arguments after `python` for the cell's pytest run: its suites, its plan (which
    holds its options, hvd_vs_ddp/harness/cell_plan.py) and the pytest arguments of its
    own that are not the suites' options."""
    _given, rest = split_argv(cell.pytest_args)
    return ["-m", "pytest", *CELL_PLUGINS, *(SUITES[s] for s in cell.suites),
            "-p", "no:cacheprovider", "-q", cell_plan.OPTION, plan_file, *rest,
            "--benchmark-json", json_path]


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
