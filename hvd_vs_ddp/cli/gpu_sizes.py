"""Sizes that fill a modern GPU: the presets' workloads as a GPU user trains them.

The presets' workload sizes are chosen for a 2-core CPU machine (ResNet-50 at 64 px,
batch 8; a 4-layer GPT of width 128). On a GPU such a step takes a few milliseconds, so
what is timed is mostly the host: launch overheads, the library's Python. Where the
run's machine has GPUs, `apply` gives the preset the sizes its users run, chosen by the
smallest visible GPU's memory, for both libraries alike:

| GPU memory | resnet50 (fp32) | gpt (12 layers of 768, 12 heads, vocab 32768) |
| --- | --- | --- |
| >= 60 GiB (A100/H100 80 GB, H200) | 224 px, batch 64 | seq 1024, batch 16 |
| >= 24 GiB | 224 px, batch 64 | seq 1024, batch 8 |
| smaller | 224 px, batch 32 | seq 512, batch 8 |

Each is tens of milliseconds a step on an H100. How an H100/H200 user trains an image
model, bf16 autocast in NHWC at batch 256, is the knob set `bf16-channels-last` with
`--workload-param resnet50:batch_size=256` (scripts/gpu_check.py measures it). The
sizes land in the preset's `--workload-param`s, so every result records them
(workload_params) and the report names them; a user's own `--workload-param`s (run
--suite-args) replace them.

    python -m hvd_vs_ddp.cli.gpu_sizes 80     # the parameters for an 80 GiB GPU
"""
from __future__ import annotations

import dataclasses
import sys

from hvd_vs_ddp.cli.presets import Preset

READY = 4  # the input mode `device` keeps this many batches (workloads/feed.py)


def params_for(memory_gib: float, max_world: int) -> dict[str, dict[str, int]]:
    """Per workload, its parameters on GPUs of `memory_gib` (the smallest visible), with
    enough samples for every rank of `max_world` to take its ready batches."""
    big = memory_gib >= 60
    resnet_batch = 64 if memory_gib >= 24 else 32
    gpt_batch = 16 if big else 8
    seq = 1024 if memory_gib >= 24 else 512
    return {
        "resnet50": {"image_size": 224, "batch_size": resnet_batch,
                     "samples": resnet_batch * max(max_world, 1) * READY},
        "gpt": {"seq_len": seq, "dim": 768, "layers": 12, "heads": 12, "vocab": 32768,
                "batch_size": gpt_batch,
                "samples": max(2048, gpt_batch * max(max_world, 1) * READY)},
    }


def apply(preset: Preset, gpus: int, memory_gib: float, world_sizes=()) -> Preset:
    """The preset with GPU sizes for those of its workloads that have them (unchanged
    without GPUs, or where the preset's options already size that workload)."""
    if gpus <= 0:
        return preset
    sized = {p.split(":", 1)[0] for p in preset.options.workload_param}
    table = params_for(memory_gib, max(world_sizes or preset.world_sizes or (1,)))
    extra = tuple(f"{w}:{k}={v}" for w in preset.workloads if w in table and w not in sized
                  for k, v in table[w].items())
    if not extra:
        return preset
    options = preset.options.replace(workload_param=(*preset.options.workload_param, *extra))
    return dataclasses.replace(preset, options=options)


def smallest_gpu_gib() -> float:
    """The memory of the smallest visible GPU in GiB (0 without one)."""
    import torch

    if not torch.cuda.is_available():
        return 0.0
    return min(torch.cuda.get_device_properties(i).total_memory
               for i in range(torch.cuda.device_count())) / 2**30


if __name__ == "__main__":
    gib = float(sys.argv[1]) if len(sys.argv) > 1 else smallest_gpu_gib()
    for workload, params in params_for(gib, 8).items():
        print(f"{workload}: " + ", ".join(f"{k}={v}" for k, v in params.items()))
