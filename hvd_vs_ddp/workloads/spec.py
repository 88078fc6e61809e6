"""What we train: a small declarative spec every backend receives unchanged.

A Workload names a model builder, a data set builder, a loss, the per-rank batch
size and explicit optimizer hyperparameters. Backends never change them: the
global batch is per-rank batch x world size, and that is recorded.

    from hvd_vs_ddp.workloads import registry
    wl = registry.get("mlp", batch_size=32)
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # torch is imported where a model or optimizer is built
    import torch
    from torch import nn
    from torch.utils.data import Dataset

from hvd_vs_ddp.common.errors import InputError, InvalidValue

OPTIMIZERS = ("sgd", "adamw")


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


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
        self.validate()

    def validate(self) -> "Workload":
        """Refuse (InvalidValue: one line, exit 2, and a ValueError) what no backend can
        train; registry.get calls it again on whatever a factory returns."""
        def bad(why: str) -> InvalidValue:
            return InvalidValue(f"workload {self.name!r}: {why}")

        if not _is_int(self.batch_size) or self.batch_size < 1:
            raise bad(f"batch_size must be an integer >= 1, got {self.batch_size!r}")
        if self.optimizer not in OPTIMIZERS:
            raise bad(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        for key in ("lr", "momentum", "weight_decay"):
            value = getattr(self, key)
            if not _is_real(value) or not math.isfinite(value) or value < 0 or \
                    (key == "lr" and not value > 0):
                raise bad(f"{key} must be a finite number "
                          f"{'> 0' if key == 'lr' else '>= 0'}, got {value!r}")
        if not _is_int(self.seed):
            raise bad(f"seed must be an integer, got {self.seed!r}")
        for key in ("build_model", "build_dataset", "loss"):
            if not callable(getattr(self, key)):
                raise bad(f"{key} must be callable, got {type(getattr(self, key)).__name__}")
        if not isinstance(self.params, dict):
            raise bad(f"params must be a dict, got {type(self.params).__name__}")
        return self

    def make_optimizer(self, parameters) -> torch.optim.Optimizer:
        import torch

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
