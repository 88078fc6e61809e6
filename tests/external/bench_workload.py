"""An external workload, as a team would write one: its own model, data and loss.

A small residual MLP on synthetic data (not one of the project's models), small
enough that a 2-rank run takes seconds on 2 cores. The tests run it through
`hvd-vs-ddp run` by file (`tests/external/bench_workload.py:make_workload`) and by module
(`tests.external.bench_workload:make_workload`).

    hvd-vs-ddp run --workloads tests/external/bench_workload.py:make_workload \
        --backends ddp-gloo,horovod --world-sizes 2 --repeat 1
"""
from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

from hvd_vs_ddp.workloads import Param, Workload, declare


class ResidualMLP(nn.Module):
    def __init__(self, features: int, hidden: int, blocks: int, classes: int) -> None:
        super().__init__()
        self.inp = nn.Linear(features, hidden)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.Tanh())
            for _ in range(blocks))
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


def teacher_data(samples: int, features: int, classes: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=g)
    y = (x @ torch.randn(features, classes, generator=g)).argmax(dim=1)
    return TensorDataset(x, y)


@declare(Param("batch_size", int, 1, 4096, "samples per rank per step"),
         Param("features", int, 1, 4096, "input features"),
         Param("hidden", int, 1, 4096, "residual width"),
         Param("blocks", int, 1, 64, "residual blocks"),
         Param("classes", int, 2, 1000, "output classes"),
         Param("samples", int, 1, 1_000_000, "synthetic samples"),
         Param("lr", float, 0, 10, "SGD learning rate", above_minimum=True))
def make_workload(batch_size: int = 16, features: int = 16, hidden: int = 32,
                  blocks: int = 2, classes: int = 4, samples: int = 1024,
                  lr: float = 0.05) -> Workload:
    """A residual MLP on a linear teacher's labels (tests/external/bench_workload.py)."""
    return Workload(
        name="residual-mlp",
        build_model=lambda checkpointing: ResidualMLP(features, hidden, blocks, classes),
        build_dataset=lambda seed: teacher_data(samples, features, classes, seed),
        loss=nn.CrossEntropyLoss(), batch_size=batch_size, optimizer="sgd", lr=lr,
        params={"features": features, "hidden": hidden, "blocks": blocks,
                "classes": classes, "samples": samples})
