"""How the ONE training loop times its steps (hvd_vs_ddp/workloads/loop.py Trainer.run).

On a GPU a round of steps runs back to back, the device drained only at the round's
ends, so the CPU keeps its lead as in training; on the CPU each step is timed alone.
CI has no GPU: the pipelined path is taken here by setting `pipelined` on a CPU trainer,
which runs the same code (the synchronize calls are counted on the real backend).

    pytest tests/unit/test_loop_timing.py
"""
from __future__ import annotations

import math

import pytest

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.workloads import registry as workloads
from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer


@pytest.fixture
def trainer():
    backend = registry.create("single")
    calls: list[int] = []
    real = backend.synchronize

    def counted() -> None:
        calls.append(1)
        real()

    backend.synchronize = counted
    seen: list[int] = []
    t = Trainer(workloads.get("mlp", batch_size=8, samples=64), backend, TrainConfig(steps=4),
                on_grads=lambda index, model: seen.append(index))
    t.calls, t.seen = calls, seen
    yield t
    backend.close()


def test_a_cpu_trainer_times_each_step_alone(trainer):
    assert trainer.pipelined is False  # nothing runs ahead of the CPU
    times = trainer.run(3)
    assert len(times) == 3 and len(trainer.calls) == 6  # drained around every step
    assert trainer.seen == [0, 1, 2] and len(trainer.local_losses) == 3


def test_a_pipelined_round_drains_the_device_only_at_its_ends(trainer):
    trainer.pipelined = True  # what a GPU trainer does
    times = trainer.run(4)
    assert len(trainer.calls) == 2
    assert len(times) == 4 and len(set(times)) == 1  # each step charged the round's mean
    assert trainer.step_times == times and all(t > 0 for t in times)
    assert trainer.seen == [0, 1, 2, 3] and len(trainer.local_losses) == 4
    losses = trainer.global_losses()
    assert len(losses) == 4 and all(math.isfinite(v) for v in losses)
    trainer.run(1)  # a round of one step is that step, drained around it
    assert len(trainer.calls) == 4 and trainer.seen[-1] == 4 and len(trainer.step_times) == 5
