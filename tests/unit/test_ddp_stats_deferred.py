"""DDP's statistics deferred past the timed rounds (hvd_vs_ddp/harness/ddp_stats.py): the
throughput suite's mode on a GPU, where reading them every step would make the host wait
for the device. Real DDP over a one-rank Gloo group in this process.

    pytest tests/unit/test_ddp_stats_deferred.py
"""
from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from hvd_vs_ddp.harness.ddp_stats import DDPStats


class _Steps:
    """What DDPStats.sample needs of a trainer: run(n) steps, its losses, accumulation."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model, self.accum, self.local_losses = model, 1, []
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01)
        self.x, self.y = torch.randn(8, 4), torch.randn(8, 2)

    def run(self, n: int) -> None:
        for _ in range(n):
            self.opt.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(self.x), self.y)
            loss.backward()
            self.opt.step()
            self.local_losses.append(loss.detach())


@pytest.fixture
def ddp(tmp_path):
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        yield torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    finally:
        dist.destroy_process_group()


def test_deferred_statistics_touch_nothing_in_the_timed_steps_then_sample_after(ddp):
    stats = DDPStats(ddp, sample_rate=1, deferred=True)
    steps = _Steps(ddp)
    steps.run(12)  # the timed rounds: no hook, DDP's own default sampling
    assert stats.active and stats.deferred and stats._handle is None and not stats.steps
    start, end = stats.sample(steps, 3)
    assert end - start == 3 and len(steps.local_losses) == 16  # 3 sampled + 1 to read
    row = stats.rank_summary(start, end, 0)
    assert row is not None and row["iterations"] == [13, 14, 15]
    assert all(t > 0 for t in row["forward_compute_s"])
    stats.close()


def test_statistics_not_deferred_are_read_during_the_steps(ddp):
    stats = DDPStats(ddp, sample_rate=1)
    steps = _Steps(ddp)
    start = stats.mark()
    steps.run(4)
    assert len(stats.rank_summary(start, stats.mark(), 0)["iterations"]) == 3
    with pytest.raises(RuntimeError, match="deferred"):
        stats.sample(steps, 1)
    stats.close()
