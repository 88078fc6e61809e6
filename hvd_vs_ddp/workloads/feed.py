"""How a training step gets its batch: the input modes, the same for every backend.

Three named modes (`TrainConfig.input_mode`, the suites' `--input`, recorded in every
throughput and compute-only result as `input_mode`):

- `device` (the throughput suite's default): READY_BATCHES batches of this rank's shard,
  taken once from the seeded sampler, placed on the device (and in channels_last where
  asked) before the first step and rotated, as Horovod's own synthetic benchmark keeps
  one batch on the GPU. No loader, no copy, no host work in the step: what is timed is the
  model and the library. On the CPU the same: a few ready batches, no loader.
- `memory`: the workload's tensors through a DataLoader (its knob set's workers). On a
  GPU from pinned memory, with the next batch copied on a side stream while this step
  computes (NVIDIA's DeepLearningExamples' "data prefetcher"), so the copy overlaps
  compute and never waits for the device's queue. On the CPU the loader's batch as is.
- `jpeg`: JPEG files decoded and augmented by DataLoader workers on the host
  (hvd_vs_ddp/workloads/jpeg_set.py), then fed as `memory` is.

The loader's own fetch (torch's DataLoader, the dataset's decoding) is the input
pipeline's work, which `memory` and `jpeg` measure on purpose; what the harness adds around
it (placing the batch) is checked by the sync guard (hvd_vs_ddp/workloads/sync_guard.py).

Every mode gives every backend the same batches: rank r of W takes the same shard of the
same seeded permutation (hvd_vs_ddp/workloads/data.py), so a comparison's sides differ only
in the library.

    python -m hvd_vs_ddp.workloads.feed      # what each mode means on this machine
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch

from hvd_vs_ddp.common.input_modes import DEVICE, INPUT_MODES, JPEG, MEMORY, check_input_mode
from hvd_vs_ddp.workloads import sync_guard
from hvd_vs_ddp.workloads.data import ShardedBatches

READY_BATCHES = 4  # `device` mode: batches kept on the device and rotated

Batch = tuple[torch.Tensor, torch.Tensor]


def _place(batch: Batch, device: torch.device, channels_last: bool) -> Batch:
    x, y = batch
    x = x.to(device, non_blocking=True)
    y = y.to(device, non_blocking=True)
    if channels_last and x.dim() == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    return x, y


class ReadyFeed:
    """`device`: a few batches placed once, rotated (no host work per step)."""

    def __init__(self, batches: ShardedBatches, device: torch.device,
                 channels_last: bool, count: int = READY_BATCHES) -> None:
        self.ready = [_place(next(batches), device, channels_last) for _ in range(count)]
        self.index = 0

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        batch = self.ready[self.index]
        self.index = (self.index + 1) % len(self.ready)
        return batch


def _unpinned(pinned: bool):
    """Where the loader does not pin (`--pin-memory off`, asked for to measure what
    pinning saves), the copy from pageable memory is the input pipeline's cost, asked for:
    not the harness's, so not refused by the sync guard."""
    return contextlib.nullcontext() if pinned else sync_guard.loader()


class LoaderFeed:
    """`memory` / `jpeg` where nothing runs ahead (the CPU): the loader's next batch,
    placed on the device."""

    def __init__(self, batches: ShardedBatches, device: torch.device,
                 channels_last: bool, pinned: bool = False) -> None:
        self.batches, self.device, self.channels_last = batches, device, channels_last
        self.pinned = pinned

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        with sync_guard.loader():
            host = next(self.batches)
        with _unpinned(self.pinned):
            return _place(host, self.device, self.channels_last)


class PrefetchFeed:
    """`memory` / `jpeg` on a GPU: the loader's pinned batch copied on a side stream one
    step ahead; the step's stream waits for that copy only (no host wait), and the batch's
    memory is marked as used by the step's stream so the allocator does not reuse it early."""

    def __init__(self, batches: ShardedBatches, device: torch.device,
                 channels_last: bool, pinned: bool = True) -> None:
        self.batches, self.device, self.channels_last = batches, device, channels_last
        self.pinned = pinned
        self.stream = torch.cuda.Stream(device=device)
        self.next: Batch | None = None
        self._preload()

    def _preload(self) -> None:
        with sync_guard.loader():
            host = next(self.batches)
        with torch.cuda.stream(self.stream), _unpinned(self.pinned):
            self.next = _place(host, self.device, self.channels_last)

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        current = torch.cuda.current_stream(self.device)
        current.wait_stream(self.stream)
        batch = self.next
        assert batch is not None  # _preload always sets it
        for t in batch:
            t.record_stream(current)
        self._preload()
        return batch


def make(mode: str, batches: ShardedBatches, device: torch.device, channels_last: bool,
         pinned: bool = False):
    """The feed of `mode` over this rank's sharded batches (`pinned`: the loader pins)."""
    if check_input_mode(mode) == DEVICE:
        return ReadyFeed(batches, device, channels_last)
    if device.type == "cuda":
        return PrefetchFeed(batches, device, channels_last, pinned)
    return LoaderFeed(batches, device, channels_last, pinned)


def meaning(mode: str, cuda: bool) -> str:
    """What `mode` meant where a run ran: the report's conditions say it."""
    if mode == DEVICE:
        where = "on the GPU" if cuda else "in memory, no loader"
        return f"{READY_BATCHES} ready batches {where}, rotated (no input work in the step)"
    pipe = ("the workload's tensors through a DataLoader" if mode == MEMORY else
            "JPEG files decoded and augmented by DataLoader workers")
    if mode == JPEG or mode == MEMORY:
        return pipe + (", pinned, the next batch copied on a side stream during the step"
                       if cuda else ", each batch taken in the step")
    return mode


if __name__ == "__main__":
    cuda = torch.cuda.is_available()
    print(f"input modes on this machine ({'GPU' if cuda else 'CPU'}):")
    for m in INPUT_MODES:
        print(f"  {m:7s} {meaning(m, cuda)}")
