"""What each backend is and what it honours, declared once: the catalog.

One `Capabilities` row per backend says which library it belongs to, what it needs
(launcher, devices), which communication options it honours, how it is instrumented and
how it lives in a process. Everything else derives from these rows instead of comparing
name strings: the option conflicts (`conflict`, checked before a cell starts and again
in the rank), the matrix (hvd_vs_ddp/cli/matrix.py), the knob sets' sides
(hvd_vs_ddp/harness/knobs.py), the suites, the projection, the report's pairing of
Horovod against DDP and the elastic paths a backend recovers under when a worker dies
(hvd_vs_ddp/recovery/). A new backend is one row here (naming its class, `impl`, and the
launchers the matrix runs it under, `launchers`) and one class (its behaviour, and its one
judgement of whether it can run: Backend.judge); the registry and the launcher table
derive from the rows.

Torch-free, so the report and the command line can read it on any machine.

    python -m hvd_vs_ddp.backends.catalog       # one line per backend: what it honours
    from hvd_vs_ddp.backends import catalog
    catalog.get("horovod").library              # "horovod"
    catalog.conflict("fsdp", BackendOptions(bucket_mb=4))   # why it cannot, or None
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from hvd_vs_ddp.backends.compile_modes import COMPILED_AUTOGRAD, EAGER, INDUCTOR
from hvd_vs_ddp.backends.launchers import HOROVOD, MPI, RANKS
from hvd_vs_ddp.common.errors import UnknownName

# The libraries a backend belongs to: the two compared, torch's sharded strategies, and
# the one-process references.
DDP, HOROVOD_LIB, SHARDED, REFERENCE = "ddp", "horovod", "sharded", "reference"
LIBRARIES = (DDP, HOROVOD_LIB, SHARDED, REFERENCE)
COMPARED = (HOROVOD_LIB, DDP)  # the question: Horovod (first) against DDP

# Options every backend honours (the training loop's or the process group's own).
COMMON_OPTIONS = frozenset({"accumulation_steps", "timeout_s", "device"})
# DDP's constructor and hooks, the same on every transport (zero wraps DDP).
_DDP_OPTIONS = frozenset({"bucket_mb", "gradient_as_bucket_view", "static_graph",
                          "compression", "powersgd_rank"})
_HOROVOD_OPTIONS = frozenset({"bucket_mb", "compression", "cycle_time_ms", "adasum",
                              "hierarchical", "autotune_log"})
# PowerSGD's hook waits for its next allreduce inside the completion callback of the
# previous one; on Gloo's worker threads that aborts the process now and then (SIGABRT;
# torch 2.14.1: 3 of 5 gpt runs here). It runs over NCCL and MPI.
_POWERSGD_OVER_GLOO = ("PowerSGD over Gloo aborts intermittently (torch's hook waits "
                       "inside Gloo's completion callbacks); it runs over NCCL (ddp-nccl)")


@dataclass(frozen=True)
class Capabilities:
    """One backend's declaration.

    library: DDP, HOROVOD_LIB, SHARDED or REFERENCE.
    summary: one line for `doctor` and the README's table.
    distributed: runs on many ranks (False: one process, a reference).
    requires: what its ranks need from the launcher (backends/launchers.py: RANKS, MPI,
        HOROVOD); empty for one-process backends.
    needs_gpu: runs only on CUDA devices (NCCL).
    gpu_per_rank: on a GPU machine each rank needs a GPU of its own (NCCL underneath).
    single_without_gpus: without 2 GPUs it is the single process itself (DataParallel):
        presets leave it out there.
    options: the BackendOptions fields it honours besides COMMON_OPTIONS.
    compressions: the `compression` values it has.
    transport: "gloo", "nccl", "mpi", "horovod", "gloo-or-nccl" (NCCL on GPUs), "none".
    refusals: option -> why it cannot honour it (said instead of the generic line).
    reuses_collectives: its collectives are another backend's process group (fsdp, zero):
        the collectives suite does not measure them twice.
    fixed_at_init: its communication settings are read once per process (Horovod): each
        knob set is its own job, and its tests run after every other backend's.
    instruments: its own instrumentation: "ddp_stats" (DDP's runtime statistics),
        "timeline" (Horovod's timeline, an instrumented twin cell per timed cell).
    several_models: trains two models with toggled accumulation (the GAN suite).
    compile_modes: the torch.compile modes it honours (compile_support.py: eager,
        inductor, compiled-autograd); compile_refusals: why it refuses the others, one
        line each (conflicts with its options are the class's compile_conflict).
    elastic: the elastic paths it trains under when a worker dies (the recovery suite,
        hvd_vs_ddp/recovery/plan.py PATHS), its default first; no_elastic: why it has
        none (the recovery preset's refusal). A row declares one or the other.
    launchers: the launchers the comparison matrix runs it under above one rank
        (backends/launchers.py rows); empty: the first launcher that can start it.
    impl: "module:Class", the class that holds its behaviour (backends/registry.py
        imports it when asked for, so a missing Horovod matters only to Horovod).
    colour: its colour in every figure (hvd_vs_ddp/reports/theme.py; Okabe-Ito, Horovod
        warm, DDP cool); empty: a stable spare colour. controller_colours: the colours of
        its labels per controller ("horovod (gloo)"), where the report tells them apart.
    """

    name: str
    library: str
    summary: str
    distributed: bool = True
    requires: frozenset[str] = frozenset({RANKS})
    needs_gpu: bool = False
    gpu_per_rank: bool = False
    single_without_gpus: bool = False
    options: frozenset[str] = frozenset()
    compressions: tuple[str, ...] = ("none",)
    transport: str = "none"
    refusals: Mapping[str, str] = field(default_factory=dict)
    reuses_collectives: bool = False
    fixed_at_init: bool = False
    instruments: frozenset[str] = frozenset()
    several_models: bool = False
    compile_modes: frozenset[str] = frozenset({EAGER, INDUCTOR, COMPILED_AUTOGRAD})
    compile_refusals: Mapping[str, str] = field(default_factory=dict)
    elastic: tuple[str, ...] = ()
    no_elastic: str = ""
    launchers: tuple[str, ...] = ()
    impl: str = ""
    colour: str = ""
    controller_colours: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.library not in LIBRARIES:
            raise ValueError(f"{self.name}: library must be one of {LIBRARIES}")
        if bool(self.elastic) == bool(self.no_elastic):
            raise ValueError(f"{self.name}: declare its elastic paths or why it has none")
        if self.distributed != bool(self.requires):
            raise ValueError(f"{self.name}: a distributed backend requires ranks, a "
                             "one-process one requires nothing")

    @property
    def compared(self) -> bool:
        """One side of the question (Horovod or DDP), not a baseline."""
        return self.library in COMPARED

    def honours(self, option: str) -> bool:
        return option in COMMON_OPTIONS or option in self.options


_ROWS = (
    Capabilities("single", REFERENCE, "one process, one device: the reference",
                 distributed=False, requires=frozenset(),
                 no_elastic="one process: there is no other worker to go on",
                 impl="hvd_vs_ddp.backends.local:SingleBackend", colour="#000000"),
    Capabilities("dp", REFERENCE, "torch.nn.DataParallel over the visible GPUs",
                 distributed=False, requires=frozenset(), single_without_gpus=True,
                 no_elastic="one process (DataParallel): there is no other worker to go on",
                 impl="hvd_vs_ddp.backends.local:DataParallelBackend", colour="#CC79A7"),
    Capabilities("ddp-gloo", DDP, "DDP over Gloo", options=_DDP_OPTIONS,
                 compressions=("none", "fp16", "bf16", "powersgd"), transport="gloo",
                 instruments=frozenset({"ddp_stats"}), several_models=True,
                 elastic=("torchrun-elastic", "torchft"),
                 impl="hvd_vs_ddp.backends.ddp:DDPGlooBackend", launchers=("torchrun", "spawn"),
                 colour="#0072B2"),
    Capabilities("ddp-nccl", DDP, "DDP over NCCL (one GPU per rank)", needs_gpu=True,
                 gpu_per_rank=True, options=_DDP_OPTIONS,
                 compressions=("none", "fp16", "bf16", "powersgd"), transport="nccl",
                 instruments=frozenset({"ddp_stats"}), several_models=True,
                 elastic=("torchrun-elastic",),
                 impl="hvd_vs_ddp.backends.ddp:DDPNCCLBackend", launchers=("torchrun", "spawn"),
                 colour="#009E73"),
    Capabilities("ddp-mpi", DDP, "DDP over MPI (torch's own, else an mpi4py process group)",
                 requires=frozenset({RANKS, MPI}), options=_DDP_OPTIONS,
                 compressions=("none", "fp16", "bf16", "powersgd"), transport="mpi",
                 instruments=frozenset({"ddp_stats"}), several_models=True,
                 no_elastic="an MPI job ends when one of its ranks dies; MPI has no "
                            "elastic restart",
                 impl="hvd_vs_ddp.backends.ddp:DDPMPIBackend", launchers=("mpirun",),
                 colour="#56B4E9"),
    Capabilities("horovod", HOROVOD_LIB, "Horovod's DistributedOptimizer (Gloo or MPI "
                 "controller; NCCL on GPUs)", requires=frozenset({RANKS, HOROVOD}),
                 gpu_per_rank=True, options=_HOROVOD_OPTIONS, compressions=("none", "fp16"),
                 transport="horovod", fixed_at_init=True,
                 instruments=frozenset({"timeline"}), several_models=True,
                 elastic=("horovod-elastic",),
                 # torch.compile of the model: its hooks still fire, after the backward
                 compile_modes=frozenset({EAGER, INDUCTOR}),
                 compile_refusals={COMPILED_AUTOGRAD: (
                     "compiled autograd traces Horovod's gradient hooks and starts each "
                     "allreduce twice under one name (Horovod 0.28.1 aborts: 'a tensor with "
                     "the same name as another tensor that is currently being processed'); "
                     "Horovod has no compiled-autograd path")},
                 impl="hvd_vs_ddp.backends.horovod:HorovodBackend",
                 launchers=("horovodrun-gloo", "horovodrun-mpi"), colour="#D55E00",
                 controller_colours={"gloo": "#D55E00", "mpi": "#E69F00"}),
    Capabilities("fsdp", SHARDED, "FSDP2 fully_shard: parameters, gradients and optimizer "
                 "state sharded", gpu_per_rank=True, transport="gloo-or-nccl",
                 refusals={"bucket_mb": "bucket_mb is DDP's bucket size; FSDP communicates "
                                        "per module",
                           "compression": "gradient compression is a DDP comm hook; FSDP "
                                          "has none"},
                 reuses_collectives=True,
                 # compiled per block (FSDPBackend.compile_targets): its hooks run eagerly
                 compile_modes=frozenset({EAGER, INDUCTOR}),
                 compile_refusals={COMPILED_AUTOGRAD: (
                     "FSDP2 is compiled per block here, its hooks running eagerly between "
                     "compiled blocks; compiled autograd over FSDP2 is not verified on this "
                     "torch")},
                 no_elastic="not wired here: its sharded state needs resharding on restore",
                 impl="hvd_vs_ddp.backends.sharded:FSDPBackend"),
    Capabilities("zero", SHARDED, "DDP + ZeroRedundancyOptimizer: optimizer state sharded",
                 gpu_per_rank=True, options=_DDP_OPTIONS,
                 compressions=("none", "fp16", "bf16", "powersgd"), transport="gloo-or-nccl",
                 reuses_collectives=True,
                 instruments=frozenset({"ddp_stats"}), several_models=True,
                 no_elastic="not wired here: its sharded optimizer state needs resharding on "
                            "restore",
                 impl="hvd_vs_ddp.backends.sharded:ZeroBackend"),
)
CATALOG: dict[str, Capabilities] = {row.name: row for row in _ROWS}
NAMES = tuple(CATALOG)


def get(name: str) -> Capabilities:
    try:
        return CATALOG[name]
    except KeyError:
        raise UnknownName("backend", name, CATALOG) from None


def library(name: str) -> str | None:
    """The library of a backend name found in results; None for a name not in the catalog
    (a pseudo-backend such as the raw mpi4py sweep)."""
    row = CATALOG.get(name)
    return row.library if row else None


def names(**having: Any) -> list[str]:
    """Backends whose declaration has these values, e.g. names(distributed=True)."""
    return [n for n, row in CATALOG.items()
            if all(getattr(row, k) == v for k, v in having.items())]


def reference() -> str:
    """The one-process reference every distributed backend is checked against."""
    return next(n for n, row in CATALOG.items()
                if row.library == REFERENCE and not row.single_without_gpus)


def _transport_now(row: Capabilities, on_gpu: bool) -> str:
    if row.transport == "gloo-or-nccl":
        return "nccl" if on_gpu else "gloo"
    return row.transport


def _owners(option: str) -> str:
    libs = sorted({row.library for row in CATALOG.values() if option in row.options})
    return " and ".join(f"{lib.upper() if lib == DDP else lib.capitalize()}'s"
                        for lib in libs) or "no backend's"


def conflict(name: str, options: Any, on_gpu: bool = False) -> str | None:
    """Why backend `name` cannot honour `options` (a BackendOptions), or None.

    Judged from the declaration alone, so the command line, the matrix and the rank ask
    the same question and get the same line."""
    row = get(name)
    changed: dict[str, Any] = options.changed()
    for option in sorted(changed):
        if row.honours(option):
            continue
        if option in row.refusals:
            return row.refusals[option]
        return (f"{option} is {_owners(option)} option; {name} has no such setting")
    compression = getattr(options, "compression", "none")
    if compression == "powersgd" and _transport_now(row, on_gpu) == "gloo":
        return _POWERSGD_OVER_GLOO
    if compression not in row.compressions:
        return (f"compression {compression!r} is not one of {name}'s "
                f"({', '.join(row.compressions)})")
    return None


def describe(row: Capabilities) -> str:
    honours = ", ".join(sorted(row.options)) or "only the common options"
    return (f"{row.name:10s} {row.library:9s} requires {'+'.join(sorted(row.requires)) or '-'};"
            f" honours {honours}; compressions {', '.join(row.compressions)}")


if __name__ == "__main__":
    for r in _ROWS:
        print(describe(r))
