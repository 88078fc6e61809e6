"""The input modes (hvd_vs_ddp/workloads/feed.py): what each feeds, and that it is the same
for every backend.

    pytest tests/unit/test_input_feed.py
"""
from __future__ import annotations

import pytest
import torch

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.common.input_modes import DEFAULT_INPUT, INPUT_MODES
from hvd_vs_ddp.workloads import feed
from hvd_vs_ddp.workloads import registry as workloads
from hvd_vs_ddp.workloads.data import ShardedBatches, synthetic_images
from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer

CPU = torch.device("cpu")


def _batches(rank: int = 0, world: int = 1) -> ShardedBatches:
    return ShardedBatches(synthetic_images(64, 3, 8, 10, seed=1), 4, rank, world, seed=1)


def test_device_mode_rotates_the_first_ready_batches_of_the_shard():
    ready = feed.make(feed.DEVICE, _batches(rank=1, world=2), CPU, channels_last=False)
    plain = _batches(rank=1, world=2)
    first = [next(plain) for _ in range(feed.READY_BATCHES)]
    got = [next(ready) for _ in range(2 * feed.READY_BATCHES)]
    for i, (x, y) in enumerate(got):
        want_x, want_y = first[i % feed.READY_BATCHES]
        assert torch.equal(x, want_x) and torch.equal(y, want_y)
    # the same tensors come round again: nothing is built per step
    assert got[0][0] is got[feed.READY_BATCHES][0]


def test_device_mode_places_channels_last_once():
    ready = feed.make(feed.DEVICE, _batches(), CPU, channels_last=True)
    x, _ = next(ready)
    assert x.is_contiguous(memory_format=torch.channels_last)


def test_memory_mode_takes_each_batch_from_the_loader_on_the_cpu():
    mem = feed.make(feed.MEMORY, _batches(), CPU, channels_last=False)
    plain = _batches()
    for _ in range(6):
        (x, y), (px, py) = next(mem), next(plain)
        assert torch.equal(x, px) and torch.equal(y, py)


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="input mode must be one of"):
        feed.make("disk", _batches(), CPU, channels_last=False)


def test_the_default_is_device_and_every_mode_says_what_it_meant():
    assert DEFAULT_INPUT == feed.DEVICE and set(INPUT_MODES) == {"memory", "jpeg", "device"}
    for mode in INPUT_MODES:
        for cuda in (False, True):
            assert feed.meaning(mode, cuda) and feed.meaning(mode, cuda) != mode


def test_device_mode_trains_without_a_loader_and_like_every_backend():
    """In device mode no DataLoader work is left per step (no workers either), and two
    fresh trainers see the same batches and losses: the mode is part of the workload."""
    wl = workloads.get("mlp", batch_size=8, samples=64)
    losses = []
    for _ in range(2):
        backend = registry.create("single")
        try:
            t = Trainer(wl, backend, TrainConfig(steps=6, input_mode="device", num_workers=2))
            assert t.batches.workers == 0 and t.pin_memory is False
            t.run(6)
            losses.append(t.global_losses())
        finally:
            backend.close()
    assert losses[0] == losses[1] and len(losses[0]) == 6


@pytest.mark.parametrize("mode", ["memory", "device"])
def test_a_stream_put_in_its_place_is_what_the_trainer_reads(mode):
    """The recovery trials position a trainer's stream at a step by replacing
    `trainer.batches`; the feed must read the new stream (it once kept the old one)."""
    backend = registry.create("single")
    try:
        t = Trainer(workloads.get("mlp", batch_size=8, samples=64), backend,
                    TrainConfig(steps=1, input_mode=mode))
        other = ShardedBatches(torch.utils.data.TensorDataset(
            torch.full((16, 32), 7.0), torch.zeros(16, dtype=torch.long)), 8, 0, 1, seed=3)
        t.batches = other
        x, _ = next(t.feed)
        assert t.batches is other and bool((x == 7.0).all())
    finally:
        backend.close()
