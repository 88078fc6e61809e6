"""channels_last tensors through Horovod's collectives, which need contiguous memory.

A channels_last model's conv weights (and their gradients) are not contiguous in
PyTorch's default sense; Horovod refuses them ("Tensor is required to be contiguous").
Their NHWC view is contiguous and shares their memory, so Horovod reduces that view in
place. Used by hvd_vs_ddp/backends/horovod.py (the initial broadcast, the
DistributedOptimizer's compression); tests/system/test_selftest.py trains such a model.
"""
from __future__ import annotations

import torch


def nhwc(t: torch.Tensor) -> bool:
    return (t.dim() == 4 and not t.is_contiguous()
            and t.is_contiguous(memory_format=torch.channels_last))


def dense_view(t: torch.Tensor) -> torch.Tensor:
    """A channels_last tensor as the contiguous NHWC view of its own memory (no copy):
    Horovod's collectives work in place on it and so on the tensor itself."""
    return t.permute(0, 2, 3, 1) if nhwc(t) else t


class ChannelsLastSafe:
    """Wraps a Horovod compressor: channels_last gradients (a channels_last model's conv
    weights get them) are reduced through their NHWC view instead of failing with
    'Tensor is required to be contiguous'; the result keeps the channels_last layout."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def compress(self, tensor):
        is_nhwc = nhwc(tensor)
        out, ctx = self.inner.compress(tensor.permute(0, 2, 3, 1) if is_nhwc else tensor)
        return out, (is_nhwc, ctx)

    def decompress(self, tensor, ctx):
        is_nhwc, inner_ctx = ctx
        out = self.inner.decompress(tensor, inner_ctx)
        return out.permute(0, 3, 1, 2) if is_nhwc else out
