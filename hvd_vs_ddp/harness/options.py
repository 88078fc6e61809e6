"""The suites' options, declared once: the typed `SuiteOptions`, each field with its check.

`SuiteOptions` is the one typed contract between `hvd-vs-ddp run` and the suites. Each
field is one pytest option (`rounds` -> `--rounds`), with its help text and check;
hvd_vs_ddp/harness/option_parsing.py turns the fields into pytest's and argparse's
declarations and parses command lines back (the suites' conftest: `add_to_pytest`,
`from_pytest`; a user's `--suite-args`: `parse_argv`), and `hvd-vs-ddp run` writes a
cell's command line with `to_argv`. The suites' test ids (`SUITES`) live here too, so
the runner never spells a node id. The declarations own their values' checks, in the
parent and in every rank alike: a workload (a name or spec,
hvd_vs_ddp/workloads/external.py), its parameters (`--workload-param`, by the workload's
own declarations, hvd_vs_ddp/harness/workload_param.py), a folder to read (`--data-dir`)
and a file to write (`--horovod-timeline`: its folder must exist and be writable, and it
may replace only a Horovod timeline, by the output gate hvd_vs_ddp/common/outputs.py).
Paths are made absolute in the parent, so the ranks (which start in the checkout) see
the same files.

    from hvd_vs_ddp.harness.options import SuiteOptions
    SuiteOptions(rounds=3).to_argv()                  # ['--rounds', '3']
    python -m hvd_vs_ddp.harness.option_parsing       # the options, their defaults and help
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.input_modes import DEFAULT_INPUT, INPUT_MODES
from hvd_vs_ddp.harness.workload_param import canonical_param, workload_param

# The suites' pytest node ids, by the names presets and cells use.
SUITES = {
    "throughput": "suites/test_throughput.py::test_throughput",
    "compute": "suites/test_throughput.py::test_compute_only",
    "convergence": "suites/test_convergence.py",
    "collectives": "suites/test_collectives.py",
    "gan": "suites/test_gan.py",  # two optimizers, toggled accumulation
    # the throughput test again, run with --horovod-timeline (an instrumented cell)
    "timeline": "suites/test_throughput.py::test_throughput",
    # a worker SIGKILLed under each elastic path (one process: it launches the job itself)
    "recovery": "suites/test_recovery.py",
}
# The plugins a cell's pytest loads (CELL_PLUGINS): hvd_vs_ddp/harness/pytest_args.py.
DEFAULT_WORKLOADS = ("resnet50", "gpt")
CONVERGENCE_WORKLOADS = ("mlp", "gpt")  # the convergence suite's, unless given
COLLECTIVE_OPS = ("allreduce", "broadcast", "allgather")  # the collectives suite's ops
# The DataLoader's pin_memory settings (auto: on where the device is a GPU); the input
# pipelines (INPUT_MODES) are the results format's (hvd_vs_ddp/workloads/jpeg_set.py).
PIN_MEMORY = ("auto", "on", "off")
BIND_CORES = ("auto", "off")  # each rank on its own share of the cores (harness/threads.py)


def _opt(default: Any, help: str, **extra: Any) -> Any:
    return field(default=default, metadata={"help": help, **extra})


def _names(kind: str) -> list[str]:
    if kind == "backend":
        from hvd_vs_ddp.backends import registry
        return registry.names()
    if kind == "workload":
        from hvd_vs_ddp.workloads import registry as workloads
        return workloads.names()
    if kind == "collective":
        return list(COLLECTIVE_OPS)
    if kind == "input":
        return list(INPUT_MODES)
    if kind == "pin memory":
        return list(PIN_MEMORY)
    if kind == "core binding":
        return list(BIND_CORES)
    from hvd_vs_ddp.harness.knobs import ALL, SETS
    return list(dict.fromkeys([*SETS, *(k.name for k in ALL)]))


@dataclass(frozen=True)
class SuiteOptions:
    """Every option of the suites; defaults are the suites' own (also `pytest suites/`)."""

    backends: tuple[str, ...] = _opt((), "comma-separated backends to run (default: all)",
                                     csv="backend", per_cell="run --backends")
    workloads: tuple[str, ...] = _opt(DEFAULT_WORKLOADS, "comma-separated workloads for "
                                      "throughput", csv="workload")
    workload_param: tuple[str, ...] = _opt((), "NAME:KEY=VALUE, e.g. "
                                           "resnet50:image_size=224 (repeatable)", append=True)
    knob_set: str = _opt("default", "knob sets for the throughput suite: 'default', "
                         "'full', 'tune', 'tune-all', or one set's name", names="knob set",
                         per_cell="run --preset (its knob sets)")
    rounds: int = _opt(5, "timed rounds per throughput cell", minimum=1,
                       maximum=100_000)
    steps_per_round: int = _opt(2, "optimizer steps per round", minimum=1,
                                 maximum=100_000)
    warmup_steps: int = _opt(2, "untimed steps before the rounds", minimum=0,
                              maximum=1_000_000)
    convergence_steps: int = _opt(30, "steps of each convergence cell", minimum=2,
                                   maximum=1_000_000)
    convergence_workloads: tuple[str, ...] = _opt(
        CONVERGENCE_WORKLOADS, "comma-separated workloads of the convergence suite "
        "(resnet50 joins them with --data-dir)", csv="workload")
    data_dir: str | None = _opt(None, "a local ImageFolder, or a folder holding CIFAR-10's "
                                "cifar-10-batches-py: resnet50 trains on it (throughput, "
                                "and a convergence cell); nothing is downloaded", path=True)
    input: tuple[str, ...] = _opt((DEFAULT_INPUT,), "comma-separated input modes of the "
                                  "throughput suite (hvd_vs_ddp/workloads/feed.py): device "
                                  "(a few ready batches on the device, rotated: no input "
                                  "work in the step), memory (tensors through a DataLoader; "
                                  "on a GPU pinned, copied on a side stream), jpeg (JPEG "
                                  "files decoded and augmented on the host by DataLoader "
                                  "workers)", csv="input", per_cell="run --input")
    loader_workers: int = _opt(2, "DataLoader worker processes per rank with --input jpeg "
                               "(0: decode in the training process); memory input keeps "
                               "its knob set's num_workers", minimum=0, maximum=256)
    jpeg_size: int = _opt(0, "side in pixels of the synthetic JPEGs of --input jpeg (the "
                          "decoding work per image); 0: twice the workload's image size",
                          minimum=0, maximum=4096)
    pin_memory: str = _opt("auto", "the DataLoader's pin_memory: auto (on with a GPU), on, "
                           "off", names="pin memory")
    max_bytes: int = _opt(64 * 2**20, "largest collective message in bytes", minimum=4,
                         maximum=2**34)
    collective_ops: tuple[str, ...] = _opt(COLLECTIVE_OPS, "comma-separated collectives "
                                           "to sweep", csv="collective")
    collective_iters: int = _opt(0, "timed calls per message size of the collectives "
                                 "suite (a tenth of them, at least one, warm up first); 0: "
                                 "the suite's own, 50 up to 64 KiB, 10 up to 4 MiB, 5 above",
                                 minimum=0, maximum=1_000_000)
    collective_timeout: float = _opt(300.0, "process-group / Horovod timeout in seconds",
                                     minimum=1.0, maximum=7 * 86400.0)
    ddp_sample_rate: int = _opt(1, "DDP's own runtime statistics (compute, communication, "
                                "overlap) on every Nth step of the throughput suite; 0: off",
                                minimum=0, maximum=1_000_000)
    horovod_timeline: str | None = _opt(None, "write Horovod's timeline (HOROVOD_TIMELINE, "
                                        "cycles marked) to this file; 'auto': beside "
                                        "--benchmark-json, as <stem>.horovod-timeline.json",
                                        output="horovod-timeline")
    profile_steps: int = _opt(0, "after the timed rounds of each throughput test, this many "
                              "more steps under torch.profiler, one Chrome trace per rank "
                              "beside --benchmark-json (hvd_vs_ddp/harness/profiling.py); 0: off",
                              minimum=0, maximum=10_000)
    horovod_autotuned_from: str | None = _opt(
        None, "the results-file stem (beside --benchmark-json) of the Horovod autotune "
        "cell whose log the 'hvd-autotuned' knob set reads its parameters from")
    threads: int = _opt(0, "intra-op threads per rank; 0: cores of the node / ranks on "
                        "it, at least 1, the same under every launcher", minimum=0,
                        maximum=4096)
    bind_cores: str = _opt("off", "auto: each rank on a disjoint share of the node's "
                           "cores where its launcher left it free; off (the default: on "
                           "2 cores it did not narrow the repetitions' spread); "
                           "hvd_vs_ddp/harness/threads.py", names="core binding")
    run_dir: str | None = _opt(None, "set by `hvd-vs-ddp run` for its cells: the run "
                               "directory they write into (outputs may go inside a run "
                               "directory only for that run)", internal=True)
    compile_cache: str | None = _opt(None, "inductor's cache folder for knob sets that "
                                     "compile (TORCHINDUCTOR_CACHE_DIR), kept, so a later "
                                     "job compiles warm; default: a fresh folder per process, "
                                     "removed at its end (a cold compile)")
    # The recovery suite (suites/test_recovery.py, hvd_vs_ddp/recovery/plan.py).
    recovery_world_size: int = _opt(2, "recovery: ranks the elastic job starts with (its "
                                    "maximum)", minimum=2, maximum=4096)
    recovery_min_world: int = _opt(1, "recovery: fewest ranks the job may go on with",
                                   minimum=1, maximum=4096)
    recovery_steps: int = _opt(60, "recovery: the plan's steps", minimum=2,
                               maximum=1_000_000)
    recovery_commit_every: int = _opt(10, "recovery: a commit (Horovod) or checkpoint "
                                      "(torchrun) every k steps", minimum=1,
                                      maximum=1_000_000)
    recovery_kill_step: int = _opt(0, "recovery: SIGKILL a worker once it completed this "
                                   "step; 0: the middle of the plan, between two commits",
                                   minimum=0, maximum=1_000_000)
    recovery_global_batch: int = _opt(384, "recovery: samples per step over all ranks, held "
                                      "when the world shrinks", minimum=1,
                                      maximum=1_000_000)
    recovery_workload: str = _opt("mlp", "recovery: the workload trained",
                                  names="workload")
    recovery_collective_timeout: float = _opt(30.0, "recovery: seconds before a collective "
                                              "with a dead peer fails (DDP's process group, "
                                              "Horovod's Gloo)", minimum=1.0,
                                              maximum=7 * 86400.0)
    recovery_time_limit: float = _opt(300.0, "recovery: seconds per elastic job before it "
                                      "counts as a hang and is killed", minimum=10.0,
                                      maximum=7 * 86400.0)

    def __post_init__(self) -> None:
        # Workloads and their parameters in canonical form (a spec file's path absolute,
        # a value as its declaration parses it), however the options were made.
        from hvd_vs_ddp.workloads import registry as workloads

        object.__setattr__(self, "workloads", tuple(dict.fromkeys(
            workloads.canonical(w) for w in self.workloads)))
        object.__setattr__(self, "recovery_workload",
                           workloads.canonical(self.recovery_workload))
        object.__setattr__(self, "workload_param", tuple(
            canonical_param(p) for p in self.workload_param))
        for f in dataclasses.fields(self):
            value, meta = getattr(self, f.name), f.metadata
            flag = flag_of(f.name)
            if "minimum" in meta and not value >= meta["minimum"]:
                raise InputError(f"{flag} {value}: must be >= {meta['minimum']}")
            if "maximum" in meta and not value <= meta["maximum"]:  # a typo, not a run:
                top = meta["maximum"]
                shown = f"{top:g}" if isinstance(top, float) else str(top)
                raise InputError(f"{flag} {value}: must be <= {shown} (a larger value would "
                                 "fail or never end in every cell)")
            kind = meta.get("csv") or meta.get("names")
            if kind == "workload":
                if f.name in ("workloads", "recovery_workload"):
                    continue  # resolved above, once, into their canonical form
                for name in (value if isinstance(value, tuple) else (value,)):
                    # a name or a spec: it must resolve (import) here
                    workloads.resolve(name)
            elif kind:
                items = value if isinstance(value, tuple) else (value,)
                known = _names(meta.get("csv") or meta["names"])
                unknown = [x for x in items if x not in known]
                if unknown:
                    raise InputError(f"{flag}: unknown {kind} {', '.join(map(repr, unknown))}"
                                     f"; known: {', '.join(known)}")
        if self.recovery_min_world > self.recovery_world_size:
            raise InputError(f"--recovery-min-world {self.recovery_min_world} is above "
                             f"--recovery-world-size {self.recovery_world_size} (the maximum)")
        if "jpeg" in self.input:
            _check_jpeg_workloads(self)
        if self.data_dir is not None:
            from hvd_vs_ddp.workloads.data import check_data_dir

            check_data_dir(self.data_dir)  # exists, and holds images the loaders can read
        if self.horovod_timeline not in (None, "auto"):
            _check_output(self.horovod_timeline, "horovod_timeline", self.run_dir)

    # -- the runner's side ------------------------------------------------
    def to_argv(self, base: "SuiteOptions | None" = None) -> list[str]:
        """Command-line options for the values that differ from `base` (default: the
        suites' defaults)."""
        base = base or SuiteOptions()
        argv: list[str] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == getattr(base, f.name) or value is None:
                continue
            if f.metadata.get("append"):
                for v in value:
                    argv += [flag_of(f.name), str(v)]
            else:
                argv += [flag_of(f.name), ",".join(value) if isinstance(value, tuple)
                         else str(value)]
        return argv

    def replace(self, **changes: Any) -> "SuiteOptions":
        return dataclasses.replace(self, **changes)

    @property
    def workload_params(self) -> dict[str, dict[str, object]]:
        out: dict[str, dict[str, object]] = {}
        for spec in self.workload_param:
            name, key, value = workload_param(spec)
            out.setdefault(name, {})[key] = value
        if self.data_dir:
            params = out.setdefault("resnet50", {})
            params.setdefault("data_dir", str(Path(self.data_dir).expanduser().resolve()))
        return out


def _check_jpeg_workloads(opts: "SuiteOptions") -> None:
    """--input jpeg feeds image classifiers only: at least one of the throughput
    workloads must be one (the others are skipped with the reason in that pipeline)."""
    from hvd_vs_ddp.workloads import jpeg_set
    from hvd_vs_ddp.workloads import registry as workloads

    params = opts.workload_params
    for name in opts.workloads:
        try:
            workload = workloads.get(name, **params.get(name, {}))
            jpeg_set.image_shape(workload)
        except InputError:
            continue
        if workload.params.get("data_dir"):  # the user's folder: JPEGs in every class
            jpeg_set.list_files(Path(workload.params["data_dir"]))
        return
    raise InputError(f"--input jpeg: none of the throughput workloads "
                     f"({', '.join(opts.workloads)}) trains on labelled images; the host "
                     "pipeline feeds image classifiers, e.g. --workloads resnet50")


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")




def _check_output(path: str, field_name: str, run_dir: str | None) -> None:
    """A file an option names to write: its folder exists and is writable, and it may
    replace only a file of its own kind (hvd_vs_ddp/common/outputs.py)."""
    from hvd_vs_ddp.common import outputs
    from hvd_vs_ddp.common.run_folder import check_output

    kind = SuiteOptions.__dataclass_fields__[field_name].metadata["output"]
    try:
        folder = Path(path).expanduser().resolve().parent
        if not folder.is_dir():
            raise InputError(f"{flag_of(field_name)} {path}: folder {folder} does not exist")
        check_output(Path(path), kind, run_dir)
    except outputs.OutputRefused as exc:
        raise InputError(f"{flag_of(field_name)} {exc}") from None
