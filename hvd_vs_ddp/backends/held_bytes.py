"""Bytes of parameters, gradients and optimizer state one rank holds.

Sharded backends keep a slice of each: FSDP2 parameters and gradients are DTensors
whose local shard is what this rank stores; ZeroRedundancyOptimizer keeps the
optimizer state of its own partition only. Counting the local data of every
tensor (each tensor once) makes those savings measurable beside DDP and Horovod,
which hold everything on every rank.

    from hvd_vs_ddp.backends.held_bytes import held_bytes
    held_bytes(model, optimizer)  # {"param_bytes", "grad_bytes", "optim_state_bytes"}
"""
from __future__ import annotations

from typing import Any, Iterable

import torch


def _local(t: Any) -> torch.Tensor | None:
    if not isinstance(t, torch.Tensor):
        return None
    to_local = getattr(t, "to_local", None)  # DTensor: this rank's shard
    return to_local() if callable(to_local) else t


def tensor_bytes(tensors: Iterable[Any]) -> int:
    """Bytes of the local data of `tensors`, each tensor counted once. (Keyed by the
    tensor's own address, not its storage's: FSDP2's gradient shards of one module are
    views into one reduce-scatter buffer, and each view is held.)"""
    seen: set[tuple[int, int]] = set()
    total = 0
    for t in tensors:
        local = _local(t)
        if local is None or local.numel() == 0:
            continue
        key = (local.data_ptr(), local.numel())
        if key in seen:
            continue
        seen.add(key)
        total += local.numel() * local.element_size()
    return total


def _state_tensors(optimizer: torch.optim.Optimizer) -> Iterable[Any]:
    inner = getattr(optimizer, "optim", None)  # ZeroRedundancyOptimizer: the local shard's
    state = inner.state if isinstance(inner, torch.optim.Optimizer) else optimizer.state
    for per_param in state.values():
        yield from per_param.values()


def held_bytes(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    params = list(model.parameters())
    return {"param_bytes": tensor_bytes(params),
            "grad_bytes": tensor_bytes(p.grad for p in params),
            "optim_state_bytes": tensor_bytes(_state_tensors(optimizer))}
