"""Sharded data parallelism: `fsdp` (FSDP2 fully_shard) and `zero` (DDP + ZeRO-1).

`fsdp` shards parameters, gradients and optimizer state across ranks with
torch.distributed.fsdp.fully_shard (each top-level child module, then the root),
over Gloo on CPU and NCCL on GPUs. `zero` is DDP whose optimizer is a
torch.distributed.optim.ZeroRedundancyOptimizer: every rank holds the whole model
and gradients but the optimizer state of its own partition only (what FairScale's
OSS did behind Lightning's ddp_sharded). Both rebuild the optimizer they are given
with the SAME class, parameter groups and hyperparameters over the parameters they
train (FSDP2 replaces parameters with DTensors; ZeRO wraps the class), so nothing
changes behind the user's back. Horovod has no sharding.

    torchrun --standalone --nproc-per-node 2 -m pytest suites/ --backends fsdp,zero \
        --workloads gpt-wide
"""
from __future__ import annotations

import contextlib
import inspect
import os
from typing import Any, Iterator

import torch
import torch.distributed as dist

from hvd_vs_ddp.backends.base import Availability
from hvd_vs_ddp.backends.ddp import _DDPBackend, gpus_fit


def _transport() -> str:
    return "nccl" if torch.cuda.is_available() else "gloo"


class _ShardedBase(_DDPBackend):
    """NCCL where this rank trains on a GPU, Gloo on CPU; one GPU per rank like ddp-nccl."""

    @property
    def pg_backend(self) -> str:  # type: ignore[override]
        return "nccl" if self.device.type == "cuda" else "gloo"

    @classmethod
    def launch_fit(cls, env) -> Availability:
        if torch.cuda.is_available():
            fit = gpus_fit(env.local_size, torch.cuda.device_count(),
                           os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ)
            if not fit:
                return fit
        return super().launch_fit(env)


def _available(need: str) -> Availability:
    if not dist.is_available():
        return Availability(False, "this torch build has no torch.distributed")
    if _transport() == "gloo" and not dist.is_gloo_available():
        return Availability(False, "this torch build has no Gloo backend")
    try:
        __import__(need)
    except ImportError as exc:
        return Availability(False, f"this torch has no {need}: {exc}")
    return Availability(True, f"over {_transport()}")


def rebuilt(optimizer: torch.optim.Optimizer, old: list[torch.nn.Parameter],
            new: list[torch.nn.Parameter], make=None) -> torch.optim.Optimizer:
    """`optimizer`'s class, groups and hyperparameters over `new` (same order as `old`)."""
    if len(old) != len(new):
        raise RuntimeError(f"wrapping changed the parameter count ({len(old)} -> {len(new)})")
    index = {id(p): i for i, p in enumerate(old)}
    groups = [{**{k: v for k, v in g.items() if k != "params"},
               "params": [new[index[id(p)]] for p in g["params"]]}
              for g in optimizer.param_groups]
    if make is not None:
        return make(groups)
    return type(optimizer)(groups, **constructor_kwargs(optimizer))


def constructor_kwargs(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The hyperparameters of `optimizer` its class's constructor accepts."""
    accepted = inspect.signature(type(optimizer).__init__).parameters
    return {k: v for k, v in optimizer.defaults.items() if k in accepted}


def _units(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """The modules sharded (and gathered) one at a time: the root's children with
    parameters, looking inside containers that have no forward of their own."""
    for child in model.children():
        if isinstance(child, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            yield from _units(child)
        elif any(True for _ in child.parameters()):
            yield child


class FSDPBackend(_ShardedBase):
    """FSDP2: parameters, gradients and optimizer state sharded (ZeRO-3)."""

    name = "fsdp"

    @classmethod
    def availability(cls) -> Availability:
        return _available("torch.distributed.fsdp")

    def prepare(self, model, optimizer):
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        model = model.to(self.device)
        self._broadcast_initial(model)
        self._broadcast_optimizer_state(optimizer)
        old = list(model.parameters())
        mesh = init_device_mesh(self.device.type, (self.world_size,))
        for unit in _units(model):
            fully_shard(unit, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model, rebuilt(optimizer, old, list(model.parameters()))

    def compile_targets(self, model):
        """Each sharded block (torchtitan's way): the blocks' forwards are compiled, and
        FSDP2's all-gather and reduce-scatter hooks around them stay outside."""
        return list(_units(model))

    def _broadcast_initial(self, model) -> None:
        """Every rank starts from rank 0's state, as under DDP (ranks build their models
        from different seeds: workloads/loop.py init_seed; tests/plugins/mutations.py
        removes this to prove the suites notice)."""
        with torch.no_grad():
            for t in [*model.parameters(), *model.buffers()]:
                self.broadcast(t.data, src=0)

    @contextlib.contextmanager
    def accumulate(self, model, last: bool) -> Iterator[None]:
        setter = getattr(model, "set_requires_gradient_sync", None)
        if setter is None:
            yield
            return
        setter(last)
        try:
            yield
        finally:
            setter(True)


class ZeroBackend(_ShardedBase):
    """DDP with ZeroRedundancyOptimizer: optimizer state sharded (ZeRO-1)."""

    name = "zero"

    @classmethod
    def availability(cls) -> Availability:
        return _available("torch.distributed.optim")

    def prepare(self, model, optimizer):
        from torch.distributed.optim import ZeroRedundancyOptimizer

        ddp, _ = super().prepare(model, optimizer)
        params = list(ddp.module.parameters())

        def make(groups: list[dict[str, Any]]) -> torch.optim.Optimizer:
            zero = ZeroRedundancyOptimizer(groups[0]["params"],
                                           optimizer_class=type(optimizer),
                                           **constructor_kwargs(optimizer))
            for group in groups[1:]:
                zero.add_param_group(group)
            return zero

        return ddp, rebuilt(optimizer, params, params, make)

    def metadata(self):
        meta = super().metadata()
        meta["sharding"] = "optimizer state (ZeroRedundancyOptimizer)"
        return meta
