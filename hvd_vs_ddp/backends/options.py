"""The communication options every backend receives: one frozen, checked dataclass.

Torch-free, so that the catalog of what each backend honours
(hvd_vs_ddp/backends/catalog.py) and the command line can judge options before any
process starts. Which backend honours which option is declared in the catalog, never
here.

    from hvd_vs_ddp.backends.options import BackendOptions
    BackendOptions(bucket_mb=64, compression="fp16").changed()   # {'bucket_mb': 64.0, ...}
"""
from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Any

COMPRESSIONS = ("none", "fp16", "bf16", "powersgd")


@dataclass(frozen=True)
class BackendOptions:
    """Knobs of the communication layer. Each one is recorded in the results.

    accumulation_steps: backward passes per optimizer step (DDP: no_sync on all
        but the last; Horovod: backward_passes_per_step).
    compression: "none" or "fp16" (DDP: fp16_compress_hook; Horovod:
        hvd.Compression.fp16); DDP only: "bf16" (bf16_compress_hook) and
        "powersgd" (PowerSGD hook, rank `powersgd_rank`, warm start and error feedback).
    bucket_mb: DDP bucket_cap_mb and Horovod HOROVOD_FUSION_THRESHOLD (MiB);
        None keeps each library's default (DDP 25 MiB, Horovod 128 MiB).
    gradient_as_bucket_view, static_graph: DDP's constructor flags of those names.
    cycle_time_ms: Horovod HOROVOD_CYCLE_TIME; None keeps its default.
    adasum: Horovod reduces with op=hvd.Adasum instead of Average (other maths).
    hierarchical: Horovod HOROVOD_HIERARCHICAL_ALLREDUCE (meaningful with > 1 host).
    autotune_log: Horovod HOROVOD_AUTOTUNE=1, its log written to this path.
    timeout_s: bound on every collective; a dead peer becomes an error.
    device: "auto" (GPU per local rank when the backend uses GPUs) or "cpu".
    """

    accumulation_steps: int = 1
    compression: str = "none"
    bucket_mb: float | None = None
    timeout_s: float = 300.0
    device: str = "auto"
    powersgd_rank: int = 1
    gradient_as_bucket_view: bool = False
    static_graph: bool = False
    cycle_time_ms: float | None = None
    adasum: bool = False
    hierarchical: bool = False
    autotune_log: str | None = None

    def __post_init__(self) -> None:
        if self.accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {self.accumulation_steps}")
        if self.compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {COMPRESSIONS}, "
                             f"got {self.compression!r}")
        if self.powersgd_rank < 1:
            raise ValueError(f"powersgd_rank must be >= 1, got {self.powersgd_rank}")
        if self.cycle_time_ms is not None and self.cycle_time_ms <= 0:
            raise ValueError(f"cycle_time_ms must be > 0, got {self.cycle_time_ms}")
        if self.bucket_mb is not None and self.bucket_mb <= 0:
            raise ValueError(f"bucket_mb must be > 0, got {self.bucket_mb}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.device not in ("auto", "cpu"):
            raise ValueError(f"device must be 'auto' or 'cpu', got {self.device!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def changed(self) -> dict[str, Any]:
        """The options set away from their defaults (what a backend must honour)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != f.default}
