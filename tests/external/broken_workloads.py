"""External workloads that are wrong in each way a team's first try can be: each must be
refused by `hvd-vs-ddp run` with one line and exit 2 before any rank starts
(hvd_vs_ddp/workloads/check.py, external.py; tests/bad_inputs.py names them)."""
from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

from hvd_vs_ddp.workloads import Workload


def _data(seed: int) -> TensorDataset:
    return TensorDataset(torch.randn(64, 8), torch.zeros(64, dtype=torch.long))


def _workload(build_model, build_dataset=_data, loss=None) -> Workload:
    return Workload(name="broken", build_model=build_model, build_dataset=build_dataset,
                    loss=loss or nn.CrossEntropyLoss(), batch_size=4)


def returns_a_number() -> int:
    """Returns the wrong thing."""
    return 42


def raises() -> Workload:
    raise RuntimeError("the data bucket is not mounted")


def frozen_model() -> Workload:
    """A model with no trainable parameters: nothing to synchronise."""
    def build(checkpointing: bool) -> nn.Module:
        model = nn.Linear(8, 2)
        model.requires_grad_(False)
        return model
    return _workload(build)


def unbuildable_model() -> Workload:
    """A model whose builder fails (a typo in a layer's arguments)."""
    return _workload(lambda ckpt: nn.Sequential(nn.Linear(8, 16), nn.Conv2d(16, 2, -1)))


def wrong_input_size() -> Workload:
    """The model expects 10 features, the data has 8."""
    return _workload(lambda ckpt: nn.Linear(10, 2))


def not_a_module() -> Workload:
    return _workload(lambda ckpt: "a model")


def tiny_data() -> Workload:
    """3 samples: less than one batch of 4 per rank."""
    return _workload(lambda ckpt: nn.Linear(8, 2), lambda seed: TensorDataset(
        torch.randn(3, 8), torch.zeros(3, dtype=torch.long)))


def required_parameter(hidden) -> Workload:  # noqa: ANN001 - no default: refused
    return _workload(lambda ckpt: nn.Linear(8, hidden))


NOT_CALLABLE = 3


def negative_batch() -> Workload:
    """A Workload built with a batch size its own check refuses."""
    return _workload(lambda c: nn.Linear(4, 2)).with_(batch_size=-4)


def negative_batch_after_build() -> Workload:
    """A Workload changed after it was built: registry.get checks it again."""
    wl = _workload(lambda c: nn.Linear(4, 2))
    object.__setattr__(wl, "batch_size", -4)
    return wl
