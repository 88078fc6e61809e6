"""The two checkpoint patterns of a torchrun elastic job, each timed.

- `torch-save` (the seeds' pattern, "save on rank 0"): rank 0 writes model and
  optimizer state with torch.save to a temporary file and renames it into place (a kill
  mid-save leaves the previous checkpoint whole); the other ranks do not wait. On
  restart every rank loads that file.
- `dcp` (torch.distributed.checkpoint): every rank takes part in dcp.save of the
  state from get_state_dict into a directory per step; when it returns, rank 0 points
  `latest` at it (written atomically). On restart every rank loads the directory
  `latest` names with dcp.load and set_state_dict.

Both store the number of steps done with the state.

    ckpt = make("torch-save", Path("trial/ckpt"), rank=0)
    seconds = ckpt.save(model, optimizer, step=10)
    done, seconds = ckpt.restore(model, optimizer)     # (0, 0.0) when there is none
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from hvd_vs_ddp.recovery.training import bare


class TorchSave:
    name = "torch-save"

    def __init__(self, folder: Path, rank: int) -> None:
        self.file, self.rank = folder / "checkpoint.pt", rank
        folder.mkdir(parents=True, exist_ok=True)

    def save(self, model, optimizer, step: int) -> float:
        if self.rank != 0:
            return 0.0
        t = time.perf_counter()
        tmp = self.file.with_name(f".{self.file.name}.{os.getpid()}")
        torch.save({"step": step, "model": bare(model).state_dict(),
                    "optimizer": optimizer.state_dict()}, tmp)
        tmp.replace(self.file)
        return time.perf_counter() - t

    def restore(self, model, optimizer) -> tuple[int, float]:
        if not self.file.exists():
            return 0, 0.0
        t = time.perf_counter()
        state = torch.load(self.file, map_location="cpu", weights_only=True)
        bare(model).load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        return int(state["step"]), time.perf_counter() - t


class Distributed:
    name = "dcp"

    def __init__(self, folder: Path, rank: int) -> None:
        self.folder, self.rank = folder, rank
        self.latest = folder / "latest"
        folder.mkdir(parents=True, exist_ok=True)

    def save(self, model, optimizer, step: int) -> float:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict

        t = time.perf_counter()
        model_sd, optim_sd = get_state_dict(model, optimizer)
        where = self.folder / f"step-{step}"
        dcp.save({"model": model_sd, "optimizer": optim_sd, "step": torch.tensor(step)},
                 checkpoint_id=str(where))
        if self.rank == 0:  # every rank has written its part once dcp.save returns
            tmp = self.latest.with_name(f".latest.{os.getpid()}")
            tmp.write_text(where.name)
            tmp.replace(self.latest)
        return time.perf_counter() - t

    def restore(self, model, optimizer) -> tuple[int, float]:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

        if not self.latest.exists():
            return 0, 0.0
        t = time.perf_counter()
        model_sd, optim_sd = get_state_dict(model, optimizer)
        state: dict[str, Any] = {"model": model_sd, "optimizer": optim_sd,
                                 "step": torch.tensor(0)}
        dcp.load(state, checkpoint_id=str(self.folder / self.latest.read_text().strip()))
        set_state_dict(model, optimizer, model_state_dict=state["model"],
                       optim_state_dict=state["optimizer"])
        return int(state["step"]), time.perf_counter() - t


PATTERNS = {c.name: c for c in (TorchSave, Distributed)}


def make(pattern: str, folder: Path, rank: int):
    return PATTERNS[pattern](folder, rank)
