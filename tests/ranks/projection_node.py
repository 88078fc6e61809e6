"""Worker: the measurements one 'node' gives the projection, and what two of them measure.

Run under torchrun (one host: --standalone --nproc-per-node 2; two hosts: --nnodes 2
--nproc-per-node 1), Gloo over whatever joins the ranks:
    torchrun --standalone --nproc-per-node 2 tests/ranks/projection_node.py --out one.json
Times, per step the slowest rank's: the gpt workload's training step with DDP, the same
step without communication (each rank alone, all at once), and an allreduce sweep.
Rank 0 writes them as JSON to --out (benchmarks/projection_nodes.py reads it).
"""
from __future__ import annotations

import argparse
import json
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from hvd_vs_ddp.workloads import registry

BATCH, SIZES = 8, (4096, 65536, 1 << 20, 4 << 20)


def _slowest(times: list[float]) -> list[float]:
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def _steps(model, opt, batch, loss_fn, n: int, warmup: int = 3) -> list[float]:
    x, y = batch
    out = []
    for i in range(warmup + n):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        if i >= warmup:
            out.append(time.perf_counter() - t0)
    return _slowest(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    wl = registry.get("gpt", batch_size=BATCH)
    torch.manual_seed(wl.seed)
    data = wl.build_dataset(wl.seed)
    samples = [data[i] for i in range(BATCH)]
    batch = (torch.stack([torch.as_tensor(s[0]) for s in samples]),
             torch.stack([torch.as_tensor(s[1]) for s in samples]))
    alone = wl.build_model(False)
    compute = _steps(alone, torch.optim.AdamW(alone.parameters(), lr=wl.lr), batch, wl.loss,
                     args.steps)
    ddp = DistributedDataParallel(wl.build_model(False))
    steps = _steps(ddp, torch.optim.AdamW(ddp.parameters(), lr=wl.lr), batch, wl.loss,
                   args.steps)
    sweep = []
    for size in SIZES:
        buf = torch.zeros(size // 4)
        times = []
        for i in range(12):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            if i >= 2:
                times.append(time.perf_counter() - t0)
        sweep.append([dist.get_world_size(), size, _slowest(times)])
    if dist.get_rank() == 0:
        with open(args.out, "w") as f:
            json.dump({"world_size": dist.get_world_size(), "batch": BATCH,
                       "params": dict(wl.params), "compute_s": compute, "ddp_s": steps,
                       "sweep": sweep}, f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    # torch 2.14: once DDP has wrapped a model over Gloo, the interpreter's teardown aborts
    # ("terminate called without an active exception", SIGABRT) in most runs, after the
    # results are written: leave as every rank script does (common/process_exit.py)
    from hvd_vs_ddp.common.process_exit import hard_exit

    hard_exit(main())
