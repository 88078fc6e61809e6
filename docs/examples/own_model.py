"""Bring your own model: a workload factory hvd-vs-ddp runs through every backend.

A function with keyword parameters (each with a default; declared with their types and
ranges so that bad values are refused before any rank starts) that returns a Workload:
how to build the model, how to build the data set, the loss, the per-rank batch and the
optimizer's hyperparameters. Both sides of every comparison call it with the same
parameters and seed; nothing in it may depend on the backend.

    hvd-vs-ddp run --workloads docs/examples/own_model.py:make_workload \
        --backends ddp-gloo,horovod --world-sizes 2 --suite-args \
        "--workload-param docs/examples/own_model.py:make_workload:width=128"
    python -m hvd_vs_ddp.workloads.check docs/examples/own_model.py:make_workload
"""
from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

from hvd_vs_ddp.workloads import Param, Workload, declare


class SmallConvNet(nn.Module):
    """Your model: any nn.Module whose forward takes one batch and returns the output."""

    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def synthetic_images(samples: int, size: int, classes: int, seed: int) -> TensorDataset:
    """Your data: a map-style Dataset of (input, target), the same on every rank for a
    seed (hvd-vs-ddp shards it: rank r of W takes every W-th sample)."""
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(samples, 3, size, size, generator=g),
                         torch.randint(0, classes, (samples,), generator=g))


@declare(Param("batch_size", int, 1, 1024, "samples per rank per step"),
         Param("image_size", int, 8, 512, "square input, pixels"),
         Param("width", int, 1, 1024, "channels of the first convolution"),
         Param("classes", int, 2, 1000, "output classes"),
         Param("samples", int, 1, 100_000, "synthetic samples"),
         Param("lr", float, 0, 10, "SGD learning rate", above_minimum=True))
def make_workload(batch_size: int = 8, image_size: int = 32, width: int = 32,
                  classes: int = 10, samples: int = 256, lr: float = 0.01) -> Workload:
    """A small ConvNet on synthetic images (docs/own-model.md)."""
    return Workload(
        name="small-convnet",  # hvd-vs-ddp names it by its spec in results and reports
        build_model=lambda checkpointing: SmallConvNet(width, classes),
        build_dataset=lambda seed: synthetic_images(samples, image_size, classes, seed),
        loss=nn.CrossEntropyLoss(), batch_size=batch_size, optimizer="sgd", lr=lr,
        momentum=0.9, params={"image_size": image_size, "width": width, "classes": classes})
