"""Staging buffers: a tensor's memory as MPI can use it, copied back after the call.

MPI needs one contiguous buffer in the dtype it reduces in, in memory it can reach.
Staged hands out the tensor itself when it already is that (the common case: a
contiguous float32 CPU tensor costs no copy), else a scratch copy that back() writes
into the original once MPI is done.
"""
from __future__ import annotations

import torch


class Staged:
    """A contiguous buffer in the working dtype/device, copied back on back()."""

    __slots__ = ("buf", "copy", "orig")

    def __init__(self, t: torch.Tensor, dtype: torch.dtype, on_device: bool,
                 copy_in: bool = True, force: bool = False):
        self.orig = t
        device = t.device if on_device else torch.device("cpu")
        self.copy = force or t.dtype != dtype or t.device != device or not t.is_contiguous()
        if self.copy:
            self.buf = torch.empty(t.shape, dtype=dtype, device=device)
            if copy_in:
                self.buf.copy_(t.detach())
        else:
            self.buf = t.detach()

    def back(self) -> None:
        if self.copy:
            self.orig.detach().copy_(self.buf)


def post_avg(name: str, buf: torch.Tensor, size: int) -> None:
    """AVG runs as SUM: divide by the group size (integers truncate toward zero)."""
    if name == "AVG":
        if buf.is_floating_point():
            buf.div_(size)
        else:
            buf.copy_(torch.div(buf, size, rounding_mode="trunc"))
