"""The input modes of a timed cell: the one definition every layer reads.

How a throughput cell feeds its batches (hvd_vs_ddp/workloads/feed.py builds each):

- "memory": the workload's tensors in memory, through a DataLoader;
- "jpeg": JPEG files decoded and augmented by DataLoader workers on the host
  (hvd_vs_ddp/workloads/jpeg_set.py);
- "device": a few ready batches on the device, rotated (no input work in the step), the
  throughput suite's default.

A record without the field is from before input modes, when every cell read "memory".
Torch-free and in the bottom layer, so the results format, the workloads, the harness
and the CLI all read the same tuple.

    from hvd_vs_ddp.common.input_modes import INPUT_MODES, DEFAULT_INPUT, check_input_mode
    check_input_mode("disk")   # ValueError: input mode must be one of ('memory', ...)
"""
from __future__ import annotations

INPUT_MODES = ("memory", "jpeg", "device")
MEMORY, JPEG, DEVICE = INPUT_MODES
DEFAULT_INPUT = DEVICE


def check_input_mode(mode: str) -> str:
    """`mode` if it is an input mode; a ValueError naming the modes otherwise."""
    if mode not in INPUT_MODES:
        raise ValueError(f"input mode must be one of {INPUT_MODES}, got {mode!r}")
    return mode
