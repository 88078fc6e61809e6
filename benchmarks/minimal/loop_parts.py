"""What the minimal loops share: the workload's model, one batch kept on the device, the clock.

The minimal loops (single_loop.py, ddp_loop.py, horovod_loop.py beside this file; not
horovod.py, which would shadow the horovod package) are the ruler the suite is held
against (benchmarks/fidelity.py, scripts/gpu_check.py), and the one loop per library that
every other benchmark here builds on (gpu_step_costs.py launches them; gpu_step_jitter.py
and step_overhead.py import `setup`, `train_step` and `timed`). Each trains the same model
the suite trains (hvd_vs_ddp/workloads/registry.py, the workload's own optimizer and loss),
on one batch placed on the device once, with nothing but zero_grad / forward / backward /
step in its loop, cuDNN's autotuner on (as Horovod's own benchmark sets it).
Timing: W warm-up steps, then N steps; on a GPU one synchronize before and after the N
(the CPU keeps whatever lead it has), samples/s = global batch x N / elapsed; on the CPU
each step timed alone, the slowest rank's per step, samples/s = global batch / median.
Rank 0 prints one line: MINIMAL {"samples_per_s": ..., "step_s": ..., ...}.

    python benchmarks/minimal/single_loop.py --workload resnet50 --param image_size=64 --batch 8
    torchrun --nproc-per-node 2 benchmarks/minimal/ddp_loop.py --workload gpt
    horovodrun -np 1 python benchmarks/minimal/horovod_loop.py --batch 64 --precision bf16
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

import torch

# the checkout, after PYTHONPATH (where another checkout may be named first)
sys.path.append(str(Path(__file__).resolve().parents[2]))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="resnet50")
    ap.add_argument("--param", action="append", default=[], help="KEY=VALUE (repeatable)")
    ap.add_argument("--batch", type=int, default=0, help="per-rank batch (0: the workload's)")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=0, help="CPU intra-op threads (0: auto)")
    ap.add_argument("--bind-cores", choices=("auto", "off"), default="off",
                    help="as the suites' option of that name (default off, as theirs)")
    ap.add_argument("--hooks-at-one-rank", action="store_true",
                    help="horovod_loop.py only: register Horovod's gradient hooks at one "
                    "rank too, so every gradient takes the path it takes at size > 1")
    return ap.parse_args(argv)


def setup(args: argparse.Namespace, device: torch.device, local_ranks: int,
          local_rank: int = 0):
    """(model, optimizer, loss function, x, y) on `device`, as the suite builds them: the
    rank's cores (--bind-cores) and its intra-op threads as the suites give them."""
    from hvd_vs_ddp.harness.threads import bind, decide
    from hvd_vs_ddp.workloads import registry

    if args.bind_cores == "auto":
        bind(local_rank, local_ranks)
    if device.type == "cpu":
        torch.set_num_threads(args.threads or decide(local_ranks).per_rank)
    torch.backends.cudnn.benchmark = True
    params = dict(p.split("=", 1) for p in args.param)
    params = {k: int(v) if v.isdigit() else v for k, v in params.items()}
    if args.batch:
        params["batch_size"] = args.batch
    spec = registry.get(args.workload, **params)
    torch.manual_seed(spec.seed)
    model = spec.build_model(False).to(device)
    x, y = next(iter(torch.utils.data.DataLoader(spec.build_dataset(spec.seed),
                                                 batch_size=spec.batch_size)))
    x, y = x.to(device), y.to(device)
    if args.channels_last and spec.supports_channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return model, spec.make_optimizer(model.parameters()), spec.loss, x, y


def train_step(model, optimizer, loss_fn, x, y, precision: str = "fp32"):
    """The loop's step: zero_grad (torch's default, gradients set to None; Horovod's
    optimizer takes no argument there) / forward / loss / backward / step."""
    autocast = (torch.autocast(device_type=x.device.type, dtype=torch.bfloat16)
                if precision == "bf16" else contextlib.nullcontext())

    def step() -> None:
        optimizer.zero_grad()
        with autocast:
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    return step


def timed(step, device: torch.device, warmup: int, steps: int, each: bool) -> list[float]:
    """Seconds: `each` every step alone (on a GPU a synchronize before and after each, so
    a step is the host's and the device's together), else one figure per step of a round
    of `steps` back to back (one synchronize before and after the round)."""
    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(warmup):
        step()
    sync()
    if not each:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        return [(time.perf_counter() - start) / steps]
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    return times


def report(step, args, device, batch: int, rank: int, world: int, gather) -> None:
    """Warm up, time, and print rank 0's line (`gather(list)`: every rank's list)."""
    cuda = device.type == "cuda"
    times = timed(step, device, args.warmup, args.steps, each=not cuda)
    slowest = [max(s) for s in zip(*gather(times))]
    if rank == 0:
        print("MINIMAL " + json.dumps({
            "samples_per_s": batch * world / statistics.median(slowest),
            "step_s": statistics.median(slowest), "world_size": world,
            "device": str(device), "timer": "round" if cuda else "per-step"}), flush=True)
