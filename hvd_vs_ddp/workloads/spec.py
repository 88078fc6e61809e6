"""What we train: a small declarative spec every backend receives unchanged.

A Workload names a model builder, a data set builder, a loss, the per-rank batch
size and explicit optimizer hyperparameters. Backends never change them: the
global batch is per-rank batch x world size, and that is recorded.

    from hvd_vs_ddp.workloads import registry
    wl = registry.get("mlp", batch_size=32)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn
from torch.utils.data import Dataset

from hvd_vs_ddp.common.errors import InputError

OPTIMIZERS = ("sgd", "adamw")


class WorkloadSpecError(InputError):
    """A workload name or spec that cannot be resolved or built (one line, exit 2)."""


@dataclass(frozen=True)
class Workload:
    """One training job, identical for every backend.

    name: registry name (for ids and reports).
    build_model: (checkpointing: bool) -> nn.Module, built after seeding.
    build_dataset: (seed: int) -> Dataset of (input, target); same on all ranks.
    loss: (output, target) -> scalar mean loss over the batch.
    batch_size: samples per rank per micro-step.
    optimizer / lr / momentum / weight_decay: explicit, never scaled by world size.
    seed: model init, data generation and shuffling.
    params: the sizes it was built with (image size, width...), for the record.
    eval_dataset: optional held-out data for accuracy (time-to-accuracy).
    """

    name: str
    build_model: Callable[[bool], nn.Module]
    build_dataset: Callable[[int], Dataset]
    loss: Callable[[Any, torch.Tensor], torch.Tensor]
    batch_size: int
    optimizer: str = "sgd"
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 0.0
    seed: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    build_eval_dataset: Callable[[int], Dataset] | None = None
    supports_channels_last: bool = False

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"{self.name}: batch_size must be >= 1, got {self.batch_size}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"{self.name}: optimizer must be one of {OPTIMIZERS}, "
                             f"got {self.optimizer!r}")
        if not self.lr > 0:
            raise ValueError(f"{self.name}: lr must be > 0, got {self.lr}")

    def make_optimizer(self, parameters) -> torch.optim.Optimizer:
        if self.optimizer == "sgd":
            return torch.optim.SGD(parameters, lr=self.lr, momentum=self.momentum,
                                   weight_decay=self.weight_decay)
        return torch.optim.AdamW(parameters, lr=self.lr, weight_decay=self.weight_decay)

    def with_(self, **changes: Any) -> "Workload":
        return dataclasses.replace(self, **changes)

    def hyperparameters(self) -> dict[str, Any]:
        return {"per_rank_batch": self.batch_size, "optimizer": self.optimizer,
                "lr": self.lr, "momentum": self.momentum,
                "weight_decay": self.weight_decay, "seed": self.seed, **self.params}
