"""Rank script: does DDP over the mpi4py process group overlap allreduce with backward?

Trains an MLP (--layers x Linear(--width), batch --batch per rank) with DDP over
"mpi4py" and several gradient buckets (--bucket-mb), and prints DDP's own runtime
statistics (model._set_ddp_runtime_logging_sample_rate(1), then
model._get_ddp_logging_data(): backward compute, backward communication and their
overlap, averaged by DDP over sampled steps) plus the median step time (slowest rank,
after --warmup steps). Not a test: no pass/fail; compare progress modes, or the
package before and after a change, in the same minutes (the machine is shared).

Run (from the repo root; as root also export OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    mpirun -np 2 --bind-to none python tests/ranks/mpi_pg_overlap.py
    HVD_VS_DDP_MPI_PG_PROGRESS=thread mpirun -np 2 --bind-to none \\
        python tests/ranks/mpi_pg_overlap.py --steps 30
It imports `backends` from PYTHONPATH when set (to time another checkout), else from
this repository.
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import time

import torch
import torch.distributed as dist
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel as DDP

from hvd_vs_ddp.backends import mpi_pg
from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.backends.rendezvous import store_for

FIELDS = ("avg_forward_compute_time", "avg_backward_compute_time",
          "avg_backward_comm_time", "avg_backward_compute_comm_overlap_time")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bucket-mb", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    # the project's own rendezvous: rank 0 opens a store, MPI shares its address
    store = store_for(detect(), datetime.timedelta(seconds=120))
    dist.init_process_group(mpi_pg.register(), rank=rank, world_size=size, store=store,
                            timeout=datetime.timedelta(seconds=300))
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers), bucket_cap_mb=args.bucket_mb)
    model._set_ddp_runtime_logging_sample_rate(1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, args.width)
    times = []
    for step in range(args.warmup + args.steps):
        world.Barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        dt = world.allreduce(time.perf_counter() - t0, op=MPI.MAX)
        if step >= args.warmup:
            times.append(dt)
    data = model._get_ddp_logging_data()
    stats = world.gather({k: data.get(k, -1) / 1e6 for k in FIELDS}, root=0)
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"progress mode {mpi_pg.describe()['async_mode']}: {args.layers}x{args.width} MLP "
              f"({params * 4 / 2**20:.1f} MiB of gradients), bucket_cap_mb={args.bucket_mb}, "
              f"batch {args.batch}/rank, {size} ranks")
        print(f"  step time median {statistics.median(times) * 1e3:.2f} ms "
              f"(min {min(times) * 1e3:.2f}, max {max(times) * 1e3:.2f}, {len(times)} steps)")
        for k in FIELDS:
            vals = ", ".join(f"{s[k]:.2f}" for s in stats)
            print(f"  {k:40s} ms per rank: {vals}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
