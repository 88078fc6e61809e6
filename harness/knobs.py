"""Knob sets: named combinations of the settings the field argues about.

A knob set fixes precision, gradient accumulation (DDP no_sync vs Horovod
backward_passes_per_step), fp16 gradient compression (fp16_compress_hook vs
hvd.Compression.fp16), bucket vs fusion size, DataLoader workers, activation
checkpointing and zero_grad(set_to_none). Both sides of a comparison get the same
set; nothing is tuned per backend.

    python -m harness.knobs        # lists the sets
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from backends.base import BackendOptions
from common.errors import UnknownName
from workloads.loop import TrainConfig


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
    gpu_only: bool = False

    def backend_options(self, timeout_s: float = 300.0) -> BackendOptions:
        return BackendOptions(accumulation_steps=self.accumulation_steps,
                              compression=self.compression, bucket_mb=self.bucket_mb,
                              timeout_s=timeout_s)

    def train_config(self, steps: int, deterministic: bool = False) -> TrainConfig:
        return TrainConfig(steps=steps, precision=self.precision,
                           num_workers=self.num_workers, set_to_none=self.set_to_none,
                           checkpointing=self.checkpointing,
                           channels_last=self.channels_last, deterministic=deterministic)

    @property
    def communicates(self) -> bool:
        """Whether the set only changes communication (meaningless for one process)."""
        return self.compression != "none" or self.bucket_mb is not None

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("gpu_only")
        return d


DEFAULT = KnobSet("default")

FULL = (
    DEFAULT,
    KnobSet("bf16", precision="bf16"),
    KnobSet("fp16-amp", precision="fp16", gpu_only=True),
    KnobSet("accum4", accumulation_steps=4),
    KnobSet("fp16-compress", compression="fp16"),
    KnobSet("bucket1mb", bucket_mb=1.0),
    KnobSet("bucket64mb", bucket_mb=64.0),
    KnobSet("workers2", num_workers=2),
    KnobSet("checkpointing", checkpointing=True),
    KnobSet("keep-grads", set_to_none=False),
    KnobSet("channels-last", channels_last=True, gpu_only=True),
)

SETS = {"default": (DEFAULT,), "full": FULL}


def by_name(name: str) -> KnobSet:
    for k in FULL:
        if k.name == name:
            return k
    raise UnknownName("knob set", name, (k.name for k in FULL))


if __name__ == "__main__":
    for k in FULL:
        print(f"{k.name:14s} {k.as_dict()}")
