"""Knob sets: named combinations of the settings the field argues about.

A knob set fixes precision, gradient accumulation (DDP no_sync vs Horovod
backward_passes_per_step), fp16 gradient compression (fp16_compress_hook vs
hvd.Compression.fp16), bucket vs fusion size, DataLoader workers, activation
checkpointing and zero_grad(set_to_none). Both sides of a comparison get the same
set (side "both"); hyperparameters are never part of a knob set.

The `compile` sets (docs/compile.md) add torch.compile on both sides alike: `inductor`
(the default mode; DDP through Dynamo's DDP optimizer) and `compiled-autograd` (DDP's
python reducer under compiled autograd; refused by backends that cannot honour it,
hvd_vs_ddp/backends/compile_support.py).

The `tune` sets add each library's own tuning knobs (side "ddp" or "horovod": a set
runs only for that library's backends): DDP bucket_cap_mb, gradient_as_bucket_view,
static_graph and its communication hooks (fp16, bf16, PowerSGD); Horovod's fusion
threshold, cycle time, fp16 compression, Adasum, hierarchical allreduce (> 1 host
only) and autotune (plus a set that runs at the parameters autotune chose, read
from the autotune log of the same run). Host habits measured as knobs on both sides:
loss.item() every step, torch.cuda.empty_cache() every step (GPU only).

    python -m hvd_vs_ddp.harness.knobs        # lists every knob set and what it changes
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.backends.compile_support import COMPILED_AUTOGRAD, INDUCTOR
from hvd_vs_ddp.backends.compile_support import check_mode as check_compile_mode
from hvd_vs_ddp.backends.options import BackendOptions
from hvd_vs_ddp.common.errors import UnknownName

if TYPE_CHECKING:  # the loop imports torch; the CLI's checks of a knob set need none
    from hvd_vs_ddp.workloads.loop import TrainConfig

SIDES = ("both", *catalog.COMPARED)  # a set for both libraries, or one library's own


def side_of(backend: str) -> str:
    """The library a backend belongs to (its catalog row): "ddp", "horovod", "sharded"
    or "reference"."""
    return catalog.get(backend).library


@dataclass(frozen=True)
class Autotuned:
    """The parameters Horovod's autotune chose (common/horovod_autotune.py reads its log)."""

    fusion_mb: float
    cycle_time_ms: float


@dataclass(frozen=True)
class KnobSet:
    name: str
    precision: str = "fp32"
    accumulation_steps: int = 1
    compression: str = "none"
    bucket_mb: float | None = None
    num_workers: int = 0
    checkpointing: bool = False
    set_to_none: bool = True
    channels_last: bool = False
    host_sync: bool = False       # loss.item() every step
    empty_cache: bool = False     # torch.cuda.empty_cache() every step
    side: str = "both"            # "both", or the one library it tunes: "ddp", "horovod"
    gradient_as_bucket_view: bool = False  # DDP
    static_graph: bool = False             # DDP
    powersgd_rank: int = 1                 # DDP, compression "powersgd"
    cycle_time_ms: float | None = None     # Horovod
    adasum: bool = False                   # Horovod
    hierarchical: bool = False             # Horovod; needs > 1 host
    autotune: bool = False                 # Horovod: HOROVOD_AUTOTUNE=1
    autotuned: bool = False                # Horovod: at the parameters autotune chose
    gpu_only: bool = False
    compile: str = "eager"                 # hvd_vs_ddp/backends/compile_support.py MODES
    # A set that changes the maths (changes_maths) states the floor of how far its
    # training may move from the exact average: the relative deviation of its mean loss
    # over the last half of the steps from that of `single` on the same global batches
    # (fp32, exact average). The bound the throughput suite checks is derived from the
    # workload and run, never below this floor (hvd_vs_ddp/harness/loss_bound.py).
    loss_bound: float | None = None

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {self.side!r}")
        check_compile_mode(self.compile)
        if self.changes_maths != (self.loss_bound is not None):
            raise ValueError(f"knob set {self.name}: a set that changes the maths states a "
                             "loss_bound, and only such a set")

    def backend_options(self, timeout_s: float = 300.0, autotune_log: str | None = None,
                        autotuned: "Autotuned | None" = None) -> BackendOptions:
        """The communication options; `autotune_log` is where Horovod's autotune writes
        (sets with autotune only), `autotuned` the parameters it chose (autotuned sets)."""
        bucket, cycle = self.bucket_mb, self.cycle_time_ms
        if self.autotuned and autotuned is not None:
            bucket, cycle = autotuned.fusion_mb, autotuned.cycle_time_ms
        return BackendOptions(accumulation_steps=self.accumulation_steps,
                              compression=self.compression, bucket_mb=bucket,
                              timeout_s=timeout_s, powersgd_rank=self.powersgd_rank,
                              gradient_as_bucket_view=self.gradient_as_bucket_view,
                              static_graph=self.static_graph, cycle_time_ms=cycle,
                              adasum=self.adasum, hierarchical=self.hierarchical,
                              autotune_log=autotune_log if self.autotune else None)

    def applies_to(self, backend: str) -> bool:
        """Whether this set is meant for `backend` (a library's own knobs only for it)."""
        return self.side == "both" or side_of(backend) == self.side

    @property
    def changes_maths(self) -> bool:
        """Compression, PowerSGD and Adasum change the numbers that are averaged."""
        return self.compression != "none" or self.adasum

    def train_config(self, steps: int, deterministic: bool = False) -> TrainConfig:
        from hvd_vs_ddp.workloads.loop import TrainConfig

        return TrainConfig(steps=steps, precision=self.precision,
                           num_workers=self.num_workers, set_to_none=self.set_to_none,
                           checkpointing=self.checkpointing,
                           channels_last=self.channels_last, deterministic=deterministic,
                           host_sync=self.host_sync, empty_cache=self.empty_cache,
                           compile=self.compile)

    @property
    def probe(self) -> str | None:
        """The dtype whose one rounding of the averaged gradients per step measures the
        workload's sensitivity (hvd_vs_ddp/harness/loss_bound.py): the set's own for fp16
        and bf16 compression, bf16 (the coarser benign rounding) for PowerSGD and
        Adasum, whose error is no rounding; None for a set that keeps the maths."""
        if not self.changes_maths:
            return None
        return "fp16" if self.compression == "fp16" else "bf16"

    @property
    def communicates(self) -> bool:
        """Whether the set only changes communication (meaningless for one process)."""
        return (self.compression != "none" or self.bucket_mb is not None
                or self.side != "both")

    def changed(self) -> dict:
        """Only the fields that differ from the defaults (what the set tunes)."""
        base = asdict(KnobSet(self.name))
        return {k: v for k, v in asdict(self).items() if k != "name" and v != base[k]}

    def as_dict(self) -> dict:
        """What the results record: `compile` only when it compiles (eager records stay
        as they were before the compile axis, so runs from before still match); the loss
        bound goes with the loss check."""
        d = asdict(self)
        d.pop("gpu_only")
        d.pop("loss_bound")
        if d["compile"] == "eager":
            d.pop("compile")
        return d


def loss_deviation(losses: list[float], reference: list[float]) -> float:
    """|mean of the last half of `losses` - the same of `reference`| / |the latter|: how
    far a set that changes the maths trained from the exact average (KnobSet.loss_bound)."""
    if not losses or len(losses) != len(reference):
        raise ValueError(f"{len(losses)} losses against {len(reference)} reference losses")
    half = len(losses) // 2
    mine = sum(losses[half:]) / (len(losses) - half)
    ref = sum(reference[half:]) / (len(reference) - half)
    return abs(mine - ref) / max(abs(ref), 1e-12)


def loss_sensitivity(perturbed: list[float], reference: list[float]) -> float:
    """The largest |perturbed - reference| over the last half of the steps, relative to
    the reference's mean there: how far the workload carries a benign perturbation of its
    gradients into the loss (hvd_vs_ddp/harness/loss_bound.py). Never below the
    difference of the two means (loss_deviation), so a probe run is within its own bound."""
    if not perturbed or len(perturbed) != len(reference):
        raise ValueError(f"{len(perturbed)} losses against {len(reference)} reference losses")
    half = len(reference) // 2
    ref = sum(reference[half:]) / (len(reference) - half)
    return max(abs(a - b) for a, b in zip(perturbed[half:], reference[half:])) \
        / max(abs(ref), 1e-12)


# The derived bound (docs/methodology.md, "Loss bounds of the sets that change the
# maths"): max(floor, SENSITIVITY_FACTOR x the reference's own sensitivity: the largest
# per-step loss change one rounding of its averaged gradients per step makes over the
# last half). Measured at the tune preset's sizes (2 ranks, 7 steps), a compressing
# library's deviation was 0.1-0.75x that sensitivity on resnet50 and resnet18, 1.3-1.6x on
# gpt and 0.6-2.4x on mlp (it rounds two or three times per step where the probe rounds
# once); 3 covers that, while a sum for the average (72x), an average divided twice
# (7.7x) or a dropped bucket (9.9x the sensitivity on resnet50) stay beyond it. Beyond
# the bound a cell is a marked measurement; it fails only past the fault line, the larger
# of the floor and FAULT_FACTOR x the derived part (9x the sensitivity): a broken
# reduction, no rounding. Where the floor rules (mlp, gpt) the fault line is the floor,
# as strict as the fixed bounds were.
SENSITIVITY_FACTOR = 3.0
FAULT_FACTOR = 3.0

# Floors of the bounds of the sets that change the maths (KnobSet.loss_bound): the relative
# deviation of the mean loss over the last half of the steps from `single`'s. Measured on
# this 2-core machine at 2 ranks, mlp and gpt, 12 and 30 steps (the quick preset's and
# the convergence suite's counts): fp16 gradients at most 1.1e-6 (DDP's hook and
# Horovod's compression alike), bf16 6.6e-6, Adasum (horovodrun --mpi) 3.7e-3 / 1.4e-2
# on mlp and 3.4e-2 / 4.0e-2 on gpt. PowerSGD runs on no CPU transport here (Gloo is
# refused, hvd_vs_ddp/backends/ddp.py; over the mpi4py group the first PowerSGD cell
# hung), so its bound rests on the earlier measurement against the default cell (3e-3
# for rank 1 over 24 steps on mlp). Each bound leaves a wide margin for longer runs and
# other models, and sits far below what a broken reduction does to the same mean.
FP16_BOUND = 1e-4      # fp16 gradients: about 90x the largest deviation measured
BF16_BOUND = 5e-4      # bf16 gradients (8 bits of mantissa): about 75x
POWERSGD_BOUND = 0.05  # a rank-1/rank-4 approximation of each gradient matrix
ADASUM_BOUND = 0.15    # a different combination (between the average and the sum)

DEFAULT = KnobSet("default")

FULL = (
    DEFAULT,
    KnobSet("bf16", precision="bf16"),
    KnobSet("fp16-amp", precision="fp16", gpu_only=True),
    KnobSet("accum4", accumulation_steps=4),
    KnobSet("fp16-compress", compression="fp16", loss_bound=FP16_BOUND),
    KnobSet("bucket1mb", bucket_mb=1.0),
    KnobSet("bucket64mb", bucket_mb=64.0),
    KnobSet("workers2", num_workers=2),
    KnobSet("checkpointing", checkpointing=True),
    KnobSet("keep-grads", set_to_none=False),
    KnobSet("channels-last", channels_last=True, gpu_only=True),
    # how an H100/H200 user trains an image model: bf16 autocast in NHWC (the
    # presets' GPU sizes, hvd_vs_ddp/cli/gpu_sizes.py)
    KnobSet("bf16-channels-last", precision="bf16", channels_last=True, gpu_only=True),
)

# Each library's own tuning knobs, one at a time from its defaults (DDP: 25 MiB buckets;
# Horovod: 128 MiB fusion, 1 ms cycle), and the host habits on both sides.
TUNE_ALL = (
    DEFAULT,
    KnobSet("ddp-bucket1mb", side="ddp", bucket_mb=1.0),
    KnobSet("ddp-bucket5mb", side="ddp", bucket_mb=5.0),
    KnobSet("ddp-bucket100mb", side="ddp", bucket_mb=100.0),
    KnobSet("ddp-bucket-view", side="ddp", gradient_as_bucket_view=True),
    KnobSet("ddp-static-graph", side="ddp", static_graph=True),
    KnobSet("ddp-fp16-hook", side="ddp", compression="fp16", loss_bound=FP16_BOUND),
    KnobSet("ddp-bf16-hook", side="ddp", compression="bf16", loss_bound=BF16_BOUND),
    KnobSet("ddp-powersgd1", side="ddp", compression="powersgd", powersgd_rank=1,
            loss_bound=POWERSGD_BOUND),
    KnobSet("ddp-powersgd4", side="ddp", compression="powersgd", powersgd_rank=4,
            loss_bound=POWERSGD_BOUND),
    KnobSet("hvd-autotune", side="horovod", autotune=True),
    KnobSet("hvd-autotuned", side="horovod", autotuned=True),
    KnobSet("hvd-fusion1mb", side="horovod", bucket_mb=1.0),
    KnobSet("hvd-fusion32mb", side="horovod", bucket_mb=32.0),
    KnobSet("hvd-cycle5ms", side="horovod", cycle_time_ms=5.0),
    KnobSet("hvd-fp16", side="horovod", compression="fp16", loss_bound=FP16_BOUND),
    KnobSet("hvd-adasum", side="horovod", adasum=True, loss_bound=ADASUM_BOUND),
    KnobSet("hvd-hierarchical", side="horovod", hierarchical=True),
    KnobSet("host-sync", host_sync=True),
    KnobSet("empty-cache", empty_cache=True, gpu_only=True),
)

# What the tune preset runs within its budget (README, "Each at its best", says how
# these points were chosen).
TUNE = tuple(k for k in TUNE_ALL if k.name in (
    "default", "ddp-bucket1mb", "ddp-bucket100mb", "ddp-static-graph", "ddp-fp16-hook",
    "ddp-powersgd1", "hvd-autotune", "hvd-autotuned", "hvd-fusion1mb", "hvd-cycle5ms",
    "hvd-fp16", "host-sync", "empty-cache"))

# torch.compile on both sides (docs/compile.md): `compile` is what the compile preset
# runs within its budget; `compile-all` adds compiled autograd (DDP's python reducer).
INDUCTOR_SET = KnobSet("inductor", compile=INDUCTOR)
COMPILE = (DEFAULT, INDUCTOR_SET)
COMPILE_ALL = (*COMPILE, KnobSet("compiled-autograd", compile=COMPILED_AUTOGRAD))

SETS = {"default": (DEFAULT,), "full": FULL, "tune": TUNE, "tune-all": TUNE_ALL,
        "compile": COMPILE, "compile-all": COMPILE_ALL}

ALL = tuple({k.name: k for s in SETS.values() for k in s}.values())


def by_name(name: str) -> KnobSet:
    for k in ALL:
        if k.name == name:
            return k
    raise UnknownName("knob set", name, (k.name for k in ALL))


if __name__ == "__main__":
    for group, sets in SETS.items():
        print(f"[{group}]")
        for k in sets:
            print(f"  {k.name:18s} side={k.side:8s} {k.changed() or '(library defaults)'}")
