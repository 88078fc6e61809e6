"""Every host-side wait in the suite's timed step, with its cost and whose it is.

On a GPU: which calls in a timed round make the CPU wait for the device
(stream, event and device synchronizations, blocking or pageable copies, a value read on
the host), how often per step, how long, and whether the harness, the library or the
model made them (the innermost frame of the call's Python stack that is ours, the
library's, or torch's own). The round is the suite's own (hvd_vs_ddp/workloads/loop.py
Trainer.run, the throughput suite's settings: cuDNN's autotuner on, the input mode given),
profiled with torch.profiler (CPU activities, with Python stacks). Run it at one rank
under the backend's launcher; rank 0 prints the table:

    python benchmarks/host_waits.py --backend single --input device
    torchrun --standalone --nproc-per-node 1 benchmarks/host_waits.py --backend ddp-nccl
    horovodrun -np 1 -H localhost:1 --gloo python benchmarks/host_waits.py --backend horovod \
        --input memory --pin-memory off        # pageable copies

`--guard off` times the step without the sync guard (to show what it would refuse). On a
machine without a GPU the table lists what torch's CPU side sees (no device waits).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hvd_vs_ddp.common.input_modes import DEFAULT_INPUT, INPUT_MODES  # noqa: E402

WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
         "cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaHostAlloc",
         "aten::_local_scalar_dense", "aten::item", "aten::nonzero")
LIBRARIES = (f"{os.sep}horovod{os.sep}", f"{os.sep}torch{os.sep}nn{os.sep}parallel",
             f"{os.sep}torch{os.sep}distributed{os.sep}")


def _whose(stack: list[str]) -> str:
    """harness | library | model | torch: the innermost frame that decides it."""
    for frame in stack:
        if any(lib in frame for lib in LIBRARIES):
            return "library"
        if f"{os.sep}hvd_vs_ddp{os.sep}workloads{os.sep}models" in frame:
            return "model"
        if f"{os.sep}hvd_vs_ddp{os.sep}" in frame or f"{os.sep}suites{os.sep}" in frame:
            return "harness"
    return "torch"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="single")
    ap.add_argument("--workload", default="resnet50")
    ap.add_argument("--param", action="append", default=[], help="KEY=VALUE (repeatable)")
    ap.add_argument("--input", default=DEFAULT_INPUT, choices=INPUT_MODES)
    ap.add_argument("--pin-memory", default="auto", choices=("auto", "on", "off"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--guard", default="on", choices=("on", "off"))
    args = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    from hvd_vs_ddp.backends import registry as backends
    from hvd_vs_ddp.workloads import registry as workloads
    from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer

    params = dict(p.split("=", 1) for p in args.param)
    spec = workloads.get(args.workload, **{k: int(v) if v.isdigit() else v
                                           for k, v in params.items()})
    pin = {"auto": None, "on": True, "off": False}[args.pin_memory]
    config = TrainConfig(steps=args.steps, input_mode=args.input, pin_memory=pin,
                         cudnn_benchmark=True)
    with backends.create(args.backend) as backend:
        trainer = Trainer(spec, backend, config)
        trainer.guarded = args.guard == "on"
        trainer.run(args.warmup)
        with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
            times = trainer.run(args.steps)
        if backend.rank != 0:
            return 0
        found: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
        for ev in prof.events():
            if ev.name in WAITS:
                found[ev.name, _whose(list(ev.stack or []))].append(ev.cpu_time_total / 1e3)
        step_ms = 1e3 * sum(times) / len(times)
        print(f"{args.backend} {args.workload} input {args.input} (pin {args.pin_memory}), "
              f"guard {args.guard}, {args.steps} steps of {step_ms:.2f} ms, device "
              f"{backend.device} ({'GPU' if torch.cuda.is_available() else 'no GPU'})")
        print("| wait | whose | per step | ms per step |\n| --- | --- | ---: | ---: |")
        for (name, whose), ms in sorted(found.items(), key=lambda kv: -sum(kv[1])):
            print(f"| {name} | {whose} | {len(ms) / args.steps:.2f} | "
                  f"{sum(ms) / args.steps:.3f} |")
        if not found:
            print("| (none) | | 0 | 0 |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
