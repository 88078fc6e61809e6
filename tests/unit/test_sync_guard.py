"""The sync guard (hvd_vs_ddp/workloads/sync_guard.py) and the loop's use of it.

On a GPU a `.item()` or a copy from pageable memory made by the harness inside a timed step
drains the device's queue every step (the suite then reads half a minimal loop's
speed). The guard's Python side works without a GPU, so these tests put each such call
back into a real Trainer's step on the CPU and watch the step fail, naming the call and
where it was made; a host-to-device copy is refused before CUDA is touched, so it is
tested here too. (The GPU side, torch's own detector, is proven by scripts/gpu_check.py.)

    pytest tests/unit/test_sync_guard.py
"""
from __future__ import annotations

import pytest
import torch

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.workloads import feed, sync_guard
from hvd_vs_ddp.workloads import registry as workloads
from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer
from hvd_vs_ddp.workloads.sync_guard import HarnessSync

CPU = torch.device("cpu")


@pytest.mark.parametrize("call", [
    lambda t: t.sum().item(), lambda t: t.tolist(), lambda t: bool(t.sum() > 0),
    lambda t: float(t.sum()), lambda t: t.nonzero(), lambda t: t.numpy()],
    ids=["item", "tolist", "bool", "float", "nonzero", "numpy"])
def test_reading_a_value_on_the_host_is_refused_with_where_it_was_made(call):
    t = torch.ones(3)
    with pytest.raises(HarnessSync) as err:
        with sync_guard.harness(CPU):
            call(t)
    assert "test_sync_guard.py" in str(err.value)  # the stack names the caller
    call(t)  # outside the guard nothing is refused


@pytest.mark.parametrize("copy", [
    lambda t: t.to("cuda", non_blocking=True), lambda t: t.to(torch.device("cuda:0")),
    lambda t: t.cuda(), lambda t: t.cuda(0, non_blocking=True),
    lambda t: t.to(device="cuda", dtype=torch.float16)],
    ids=["to-str", "to-device", "cuda", "cuda-index", "to-kwargs"])
def test_a_copy_from_pageable_memory_to_a_gpu_is_refused_before_cuda_is_touched(copy):
    with pytest.raises(HarnessSync, match="pageable memory"):
        with sync_guard.harness(CPU):
            copy(torch.ones(3))


def test_work_that_does_not_wait_passes_and_a_disabled_guard_checks_nothing():
    with sync_guard.harness(CPU):
        a = torch.ones(4, 4)
        b = (a @ a).to(CPU, non_blocking=True).to(torch.float64)
        b.add_(1)
    with sync_guard.harness(CPU, enabled=False):
        assert b.sum().item() == 5 * 16


def _trainer(mode: str) -> Trainer:
    backend = registry.create("single")
    return Trainer(workloads.get("mlp", batch_size=8, samples=64), backend,
                   TrainConfig(steps=3, input_mode=mode))


@pytest.mark.parametrize("mode", ["device", "memory"])
def test_the_loops_own_step_passes_the_guard_in_every_mode(mode):
    trainer = _trainer(mode)
    try:
        assert trainer.guarded
        assert len(trainer.run(3)) == 3 and len(trainer.local_losses) == 3
    finally:
        trainer.backend.close()


def test_an_item_put_back_into_the_step_fails_it(monkeypatch):
    """The mutation: the batch's loss read on the host in the harness's part of the step
    (a per-step log line, as the field writes it) fails the step, naming the call."""
    real = feed.ReadyFeed.__next__

    def logging_next(self):
        x, y = real(self)
        print(f"batch mean {x.mean().item():.3f}")
        return x, y
    monkeypatch.setattr(feed.ReadyFeed, "__next__", logging_next)
    trainer = _trainer("device")
    try:
        with pytest.raises(HarnessSync, match=r"Tensor\.item") as err:
            trainer.run(2)
        assert "logging_next" in str(err.value)
    finally:
        trainer.backend.close()


def test_a_pageable_copy_put_back_into_the_step_fails_it(monkeypatch):
    """The mutation: the loader's batch copied from pageable memory to the GPU in the step,
    caught on the CPU before CUDA is asked."""
    def pageable(self):
        x, y = next(self.batches)
        return x.to(torch.device("cuda"), non_blocking=True), y
    monkeypatch.setattr(feed.LoaderFeed, "__next__", pageable)
    trainer = _trainer("memory")
    try:
        with pytest.raises(HarnessSync, match="pageable memory"):
            trainer.run(1)
    finally:
        trainer.backend.close()
