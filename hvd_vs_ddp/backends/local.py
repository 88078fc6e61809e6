"""Baselines in one process: `single` (one device) and `dp` (nn.DataParallel).

`single` is world size 1 of the same training loop, not a separate code path;
it is the reference every distributed backend is checked against. `dp` wraps the
model in torch.nn.DataParallel over every visible GPU; on a machine without GPUs
it runs exactly as `single` and says so in its metadata.

    python -m pytest suites/ -k "single or dp"
"""
from __future__ import annotations

import contextlib
import copy
from typing import Any, Iterator

import torch

from hvd_vs_ddp.backends.base import Availability, Backend, check_op


class SingleBackend(Backend):
    name = "single"

    @classmethod
    def availability(cls) -> Availability:
        return Availability(True)

    def _pick_device(self) -> torch.device:
        if self.options.device == "cpu" or not torch.cuda.is_available():
            return torch.device("cpu")
        return torch.device("cuda", 0)

    def _setup(self) -> None:
        pass

    def prepare(self, model, optimizer):
        return model.to(self.device), optimizer

    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        check_op(op)
        return tensor  # one rank: every reduction is the identity

    def broadcast(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        return tensor

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.clone()

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        if src != 0:
            raise ValueError(f"{self.name}: src={src} but there is only rank 0")
        return copy.deepcopy(obj)

    def barrier(self) -> None:
        pass


@contextlib.contextmanager
def replicas_keep_autocast_dtype(replicas, device_type: str = "cuda") -> Iterator[None]:
    """Run `replicas` under the caller's autocast dtype. torch's parallel_apply re-enters
    autocast in each replica's thread without a dtype (torch/nn/parallel/parallel_apply.py:
    `autocast(device_type, enabled=...)`), and a thread's default is fp16: with the bf16
    knob set, dp's replicas ran fp16. A pre-hook sets the caller's dtype in the thread."""
    if not torch.is_autocast_enabled(device_type):
        yield
        return
    dtype = torch.get_autocast_dtype(device_type)

    def same_dtype(module, args) -> None:
        torch.set_autocast_dtype(device_type, dtype)

    handles = [r.register_forward_pre_hook(same_dtype) for r in replicas]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


class _DataParallel(torch.nn.DataParallel):
    """nn.DataParallel whose replicas compute in the caller's autocast dtype (bf16 too)."""

    def parallel_apply(self, replicas, inputs, kwargs):
        with replicas_keep_autocast_dtype(replicas, "cuda"):
            return super().parallel_apply(replicas, inputs, kwargs)


class DataParallelBackend(SingleBackend):
    name = "dp"

    @classmethod
    def compile_conflict(cls, mode, options) -> str | None:
        if torch.cuda.is_available() and torch.cuda.device_count() > 1:
            return ("DataParallel replicates the module on every forward; torch.compile of "
                    "it runs at eager speed on more than one GPU (pytorch/pytorch#94636); "
                    "use ddp-nccl")
        return None  # fewer than 2 GPUs: it is the single process

    def prepare(self, model, optimizer):
        model = model.to(self.device)
        if self.device.type == "cuda" and torch.cuda.device_count() > 1:
            model = _DataParallel(model)
        return model, optimizer

    def devices_in_use(self) -> list[int]:
        """DataParallel over >= 2 GPUs: the devices whose peak memory shows its imbalance
        (the first GPU gathers outputs and holds the master copy); else none."""
        if self.device.type != "cuda" or torch.cuda.device_count() < 2:
            return []
        return list(range(torch.cuda.device_count()))

    def synchronize(self) -> None:
        """DataParallel runs replicas on every GPU: wait for all of them, not only the first."""
        if self.device.type == "cuda":
            for index in range(torch.cuda.device_count()):
                torch.cuda.synchronize(index)

    def metadata(self):
        meta = super().metadata()
        gpus = torch.cuda.device_count() if self.device.type == "cuda" else 0
        meta["dp_devices"] = gpus
        if gpus < 2:
            meta["note"] = "fewer than 2 GPUs: DataParallel runs as single"
        return meta
