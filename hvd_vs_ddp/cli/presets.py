"""The presets: which backends, world sizes, workloads, suites and options a run asks for.

A preset (`Preset`) is a named choice of backends, world sizes, workloads, suites, a knob
set and the suites' options (`hvd-vs-ddp run --preset NAME`); `PRESETS` is the table of
them, `preset(name)` looks one up (an unknown name: one line, exit 2). The matrix
(hvd_vs_ddp/cli/matrix.py) lays out the cells a preset gives on this machine; the
command line of each cell (hvd_vs_ddp/cli/cell_command.py) starts from its preset's
options.

    from hvd_vs_ddp.cli import presets
    presets.preset("quick").world_sizes          # (1, 2)
    python -m hvd_vs_ddp.cli.matrix quick        # the cells a preset gives here
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.common.errors import UnknownName
from hvd_vs_ddp.common.input_modes import DEFAULT_INPUT  # ready batches on the device
from hvd_vs_ddp.harness.options import SuiteOptions


def on_cpu(*libraries: str) -> tuple[str, ...]:
    """The backends of these libraries (catalog.py) that train without a GPU, in the
    catalog's order: a preset names its backends by what they are where it can."""
    return tuple(name for name, row in catalog.CATALOG.items()
                 if row.library in libraries and not row.needs_gpu)
TIMED_SUITES = ("throughput", "compute", "recovery")  # what repetitions 2..N of a cell run


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
    inputs: tuple[str, ...] = (DEFAULT_INPUT,)  # input modes of the timed cells (run --input)
    # the links between emulated hosts of its 2-rank cells (run --emulate-hosts 2
    # --link-rate; hvd_vs_ddp/links/): () or ("loopback",) only, today's one host
    links: tuple[str, ...] = ()


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
    # Across two emulated hosts over a link of each rate (docs/links.md; needs root): both
    # libraries at defaults, 2 ranks, one per host; loopback is today's one-host cell and
    # the compute-only reference says how much of each step the link exposes. resnet50's
    # ~95 MB of gradients: 0.76 s of wire a step at 1 Gbit/s, 0.19 s at 4 Gbit/s.
    "links": Preset("links", ("ddp-gloo", "horovod"), (2,), ("resnet50", "gpt"),
                    ("throughput", "compute"),
                    options=SuiteOptions(rounds=3, steps_per_round=2, warmup_steps=1,
                                         ddp_sample_rate=0),
                    repeat=2, all_at_one=False, timeline=False,
                    launchers=("torchrun", "horovodrun-gloo"),
                    links=("loopback", "500mbit", "1gbit", "4gbit")),
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
